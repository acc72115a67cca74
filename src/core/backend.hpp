// The seam every compute backend implements (CPU reference, optional CUDA).
// The pipeline decides what to compute and sees only this interface; the
// implementations and the choice by name live in src/backend/, a layer above.
#pragma once

#include <armadillo>
#include <string_view>

namespace attn {

class Backend {
 public:
  virtual ~Backend() = default;
  virtual std::string_view name() const = 0;

  // A:(n,k) B:(k,p) -> A·B:(n,p)
  virtual arma::mat matmul(const arma::mat& A, const arma::mat& B) = 0;
  // A:(n,k) B:(m,k) -> A·Bᵀ:(n,m)
  virtual arma::mat matmul_transposed(const arma::mat& A, const arma::mat& B) = 0;
  // S:(n,m) -> softmax of each row, stably (row max subtracted). A row that
  // is entirely -inf comes out NaN (0/0); the pipeline applies the policy.
  virtual arma::mat row_softmax(const arma::mat& S) = 0;
};

}  // namespace attn
