// The CPU backend's arithmetic (IEEE double, Armadillo) against plain loops.
#include <doctest/doctest.h>

#include <cmath>

#include "core/arithmetic.hpp"

namespace {

constexpr double kTol = 1e-14;

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
  for (std::size_t i = 0; i < 3; ++i) {
    for (std::size_t j = 0; j < 2; ++j) {
      double sum = 0;
      for (std::size_t k = 0; k < 4; ++k) sum += A(i, k) * B(k, j);
      CHECK(AB(i, j) == doctest::Approx(sum).epsilon(kTol));
    }
    for (std::size_t j = 0; j < 5; ++j) {
      double sum = 0;
      for (std::size_t k = 0; k < 4; ++k) sum += A(i, k) * K(j, k);
      CHECK(AKt(i, j) == doctest::Approx(sum).epsilon(kTol));
    }
  }
}

TEST_CASE("f64 arithmetic: row softmax is exp over the row sum — huge scores do not overflow") {
  const attn::Arithmetic& cpu = attn::f64_arithmetic();
  const double inf = arma::datum::inf;
  const arma::mat S = {{1.0, 2.0, 3.0}, {800.0, 801.0, -inf}, {-inf, -inf, -inf}};
  const arma::mat A = cpu.row_softmax(S);
  const double z = std::exp(1.0) + std::exp(2.0) + std::exp(3.0);
  CHECK(A(0, 0) == doctest::Approx(std::exp(1.0) / z).epsilon(kTol));
  CHECK(A(0, 2) == doctest::Approx(std::exp(3.0) / z).epsilon(kTol));
  // exp(800) overflows; with the row max subtracted: 1 / (1 + e) and e / (1 + e).
  CHECK(A(1, 0) == doctest::Approx(1.0 / (1.0 + std::exp(1.0))).epsilon(kTol));
  CHECK(A(1, 1) == doctest::Approx(std::exp(1.0) / (1.0 + std::exp(1.0))).epsilon(kTol));
  CHECK(A(1, 2) == 0.0);
  // Every key masked: 0/0, left to the pipeline's policy.
  CHECK(std::isnan(A(2, 0)));
  CHECK(std::isnan(A(2, 2)));
}
