// The arithmetic the attention steps are computed with on the host: IEEE
// double here, a narrower format emulated exactly in format_arithmetic.hpp.
// The step-by-step composition (core/attention.hpp) is written over it.
#pragma once

#include <armadillo>

namespace attn {

class Arithmetic {
 public:
  virtual ~Arithmetic() = default;
  // A:(n,k) B:(k,p) -> A·B:(n,p)
  virtual arma::mat matmul(const arma::mat& A, const arma::mat& B) const = 0;
  // A:(n,k) B:(m,k) -> A·Bᵀ:(n,m)
  virtual arma::mat matmul_transposed(const arma::mat& A, const arma::mat& B) const = 0;
  // S:(n,m) -> softmax of each row, stably (row max subtracted). A row that
  // is entirely -inf comes out NaN (0/0); the caller applies the policy.
  // Written once per arithmetic: F64Arithmetic (the reference), FormatArithmetic
  // (emulated formats), backend/attention_rows.hpp (the per-row device code) and
  // backend/column_softmax (the vectorised kernel); tests/backend/
  // test_softmax_agree.cpp checks that they agree. Code that needs a softmax
  // calls one of them (a column softmax is the row softmax of the transpose).
  virtual arma::mat row_softmax(const arma::mat& S) const = 0;
  // S:(n,m) -> (n,1): each row's sum.
  virtual arma::mat row_sum(const arma::mat& S) const = 0;
};

// IEEE double through Armadillo and the BLAS: the reference arithmetic.
class F64Arithmetic final : public Arithmetic {
 public:
  arma::mat matmul(const arma::mat& A, const arma::mat& B) const override;
  arma::mat matmul_transposed(const arma::mat& A, const arma::mat& B) const override;
  arma::mat row_softmax(const arma::mat& S) const override;
  arma::mat row_sum(const arma::mat& S) const override;
};

const F64Arithmetic& f64_arithmetic();

}  // namespace attn
