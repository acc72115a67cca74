// CPU backend: the three matrix operations of attention with Armadillo.
#include "backend/cpu_backend.hpp"

#include <cmath>

namespace attn {

// A:(n,k) B:(k,p) -> (n,p)
arma::mat CpuBackend::matmul(const arma::mat& A, const arma::mat& B) {
  return A * B;
}

// A:(n,k) B:(m,k) -> (n,m)
arma::mat CpuBackend::matmul_transposed(const arma::mat& A, const arma::mat& B) {
  return A * B.t();
}

// S:(n,m) -> (n,m), each row summing to 1 (NaN where the row is all -inf)
arma::mat CpuBackend::row_softmax(const arma::mat& S) {
  arma::mat E = S;
  E.each_col() -= arma::max(S, 1);
  E.transform([](double x) { return std::exp(x); });
  E.each_col() /= arma::sum(E, 1);
  return E;
}

}  // namespace attn
