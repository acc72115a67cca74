// The CPU backend's arithmetic (IEEE double, Armadillo and the BLAS) against
// plain loops, within what two correct results may differ by in any summation
// order (support/fp_bounds.hpp), whichever OpenBLAS kernel runs.
#include <doctest/doctest.h>

#include <cmath>

#include "core/arithmetic.hpp"
#include "support/fp_bounds.hpp"

namespace {

using attn::testing::beyond_bound;

arma::mat counting(std::size_t rows, std::size_t cols, double start) {
  arma::mat M(rows, cols);
  for (std::size_t r = 0; r < rows; ++r)
    for (std::size_t c = 0; c < cols; ++c) M(r, c) = start + 0.1 * r - 0.07 * c + 0.013 * r * c;
  return M;
}

}  // namespace

TEST_CASE("f64 arithmetic: A·B and A·Bᵀ equal the sums of products done by loops") {
  const attn::Arithmetic& cpu = attn::f64_arithmetic();
  const arma::mat A = counting(3, 4, 0.2);
  const arma::mat B = counting(4, 2, -0.5);
  const arma::mat K = counting(5, 4, 0.3);
  const arma::mat AB = cpu.matmul(A, B);
  const arma::mat AKt = cpu.matmul_transposed(A, K);
  REQUIRE(AB.n_rows == 3);
  REQUIRE(AB.n_cols == 2);
  REQUIRE(AKt.n_cols == 5);
  arma::mat loops_AB(3, 2), loops_AKt(3, 5);
  for (std::size_t i = 0; i < 3; ++i) {
    for (std::size_t j = 0; j < 2; ++j) {
      double sum = 0;
      for (std::size_t k = 0; k < 4; ++k) sum += A(i, k) * B(k, j);
      loops_AB(i, j) = sum;
    }
    for (std::size_t j = 0; j < 5; ++j) {
      double sum = 0;
      for (std::size_t k = 0; k < 4; ++k) sum += A(i, k) * K(j, k);
      loops_AKt(i, j) = sum;
    }
  }
  CHECK(beyond_bound(AB, loops_AB, attn::testing::product_bound(A, B)).first == "");
  CHECK(beyond_bound(AKt, loops_AKt, attn::testing::product_bound(A, K.t())).first == "");
  // The comparison notices a product off by more than its bound.
  arma::mat off = AB;
  off(2, 1) += 3.0 * attn::testing::product_bound(A, B).absolute(2, 1) + 1e-300;
  CHECK(beyond_bound(off, loops_AB, attn::testing::product_bound(A, B)).cells == 1);
}

TEST_CASE("f64 arithmetic: row softmax is exp over the row sum — huge scores do not overflow") {
  const attn::Arithmetic& cpu = attn::f64_arithmetic();
  const double inf = arma::datum::inf;
  const arma::mat S = {{1.0, 2.0, 3.0}, {800.0, 801.0, -inf}, {-inf, -inf, -inf}};
  const arma::mat A = cpu.row_softmax(S);
  const double z = std::exp(1.0) + std::exp(2.0) + std::exp(3.0);
  // exp(800) overflows; with the row max subtracted: 1 / (1 + e) and e / (1 + e).
  const arma::mat by_hand = {
      {std::exp(1.0) / z, std::exp(2.0) / z, std::exp(3.0) / z},
      {1.0 / (1.0 + std::exp(1.0)), std::exp(1.0) / (1.0 + std::exp(1.0)), 0.0},
      {std::nan(""), std::nan(""), std::nan("")}};
  CHECK(beyond_bound(A, by_hand, attn::testing::softmax_bound(S)).first == "");
  CHECK(A(1, 2) == 0.0);
  // Every key masked: 0/0, left to the pipeline's policy.
  CHECK(std::isnan(A(2, 0)));
  CHECK(std::isnan(A(2, 2)));
}
