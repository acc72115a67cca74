// IEEE double arithmetic with Armadillo over the BLAS.
#include "core/arithmetic.hpp"

#include <cmath>

namespace attn {

// A:(n,k) B:(k,p) -> (n,p)
arma::mat F64Arithmetic::matmul(const arma::mat& A, const arma::mat& B) const {
  return A * B;
}

// A:(n,k) B:(m,k) -> (n,m)
arma::mat F64Arithmetic::matmul_transposed(const arma::mat& A, const arma::mat& B) const {
  return A * B.t();
}

// S:(n,m) -> (n,m), each row summing to 1 (NaN where the row is all -inf)
arma::mat F64Arithmetic::row_softmax(const arma::mat& S) const {
  arma::mat E = S;
  E.each_col() -= arma::max(S, 1);
  E.transform([](double x) { return std::exp(x); });
  E.each_col() /= arma::sum(E, 1);
  return E;
}

// S:(n,m) -> (n,1)
arma::mat F64Arithmetic::row_sum(const arma::mat& S) const {
  return arma::sum(S, 1);
}

const F64Arithmetic& f64_arithmetic() {
  static const F64Arithmetic arithmetic;
  return arithmetic;
}

}  // namespace attn
