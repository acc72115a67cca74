// f32, f16 and bf16 arithmetic emulated exactly on the CPU (docs/numerics.md).
#include "core/format_arithmetic.hpp"

#include <algorithm>
#include <cmath>

namespace attn {

namespace {

double f32(double x) {
  return round_to(Dtype::f32, x);
}

// A:(n,k) and B's row/column access -> (n,p): Σ_t A[i,t]·b(t, j) in f32, in order.
template <typename Operand>
arma::mat sum_of_products(Dtype dtype, const arma::mat& A, std::size_t columns, Operand b) {
  arma::mat out(A.n_rows, columns);
  for (std::size_t i = 0; i < A.n_rows; ++i)
    for (std::size_t j = 0; j < columns; ++j) {
      double sum = 0.0;
      for (std::size_t t = 0; t < A.n_cols; ++t) sum = f32(sum + f32(A(i, t) * b(t, j)));
      out(i, j) = round_to(dtype, sum);
    }
  return out;
}

}  // namespace

double store_in(Dtype dtype, double x) {
  return dtype == Dtype::f64 ? x : round_to(dtype, f32(x));
}

arma::mat store_in(Dtype dtype, const arma::mat& M) {
  if (dtype == Dtype::f64) return M;
  arma::mat out = M;
  out.transform([dtype](double x) { return store_in(dtype, x); });
  return out;
}

// A:(n,k) B:(k,p) -> (n,p)
arma::mat FormatArithmetic::matmul(const arma::mat& A, const arma::mat& B) const {
  return sum_of_products(dtype_, A, B.n_cols,
                         [&B](std::size_t t, std::size_t j) { return B(t, j); });
}

// A:(n,k) B:(m,k) -> (n,m)
arma::mat FormatArithmetic::matmul_transposed(const arma::mat& A, const arma::mat& B) const {
  return sum_of_products(dtype_, A, B.n_rows,
                         [&B](std::size_t t, std::size_t j) { return B(j, t); });
}

// S:(n,m) -> (n,m)
arma::mat FormatArithmetic::row_softmax(const arma::mat& S) const {
  arma::mat W(S.n_rows, S.n_cols);
  for (std::size_t i = 0; i < S.n_rows; ++i) {
    double row_max = -HUGE_VAL;  // a running max starts at -inf
    for (std::size_t j = 0; j < S.n_cols; ++j) row_max = std::max(row_max, S(i, j));
    double sum = 0.0;
    for (std::size_t j = 0; j < S.n_cols; ++j) {
      W(i, j) = f32(std::exp(f32(S(i, j) - row_max)));
      sum = f32(sum + W(i, j));
    }
    for (std::size_t j = 0; j < S.n_cols; ++j) W(i, j) = store_in(dtype_, W(i, j) / sum);
  }
  return W;
}

// S:(n,m) -> (n,1)
arma::mat FormatArithmetic::row_sum(const arma::mat& S) const {
  arma::mat out(S.n_rows, 1);
  for (std::size_t i = 0; i < S.n_rows; ++i) {
    double sum = 0.0;
    for (std::size_t j = 0; j < S.n_cols; ++j) sum = f32(sum + S(i, j));
    out(i, 0) = round_to(dtype_, sum);
  }
  return out;
}

}  // namespace attn
