// The small interface every compute backend implements (CPU reference,
// optional CUDA). The pipeline decides what to compute; a backend only does
// the heavy matrix work, in IEEE double.
#pragma once

#include <armadillo>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

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

// "cpu" or "cuda". Throws BackendUnavailable (exit 3) saying why a backend
// cannot be used, InputError for an unknown name.
std::unique_ptr<Backend> make_backend(std::string_view name);

}  // namespace attn
