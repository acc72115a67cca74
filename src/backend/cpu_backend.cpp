// CPU backend: the trace's attention composed of the step functions, in double.
#include "backend/cpu_backend.hpp"

#include "backend/cpu_forward.hpp"

namespace attn {

// A:(n,k) B:(k,p) -> (n,p)
arma::mat CpuBackend::matmul(const arma::mat& A, const arma::mat& B) {
  return f64_arithmetic().matmul(A, B);
}

std::vector<HeadAttention> CpuBackend::attend(const AttentionInput& in) {
  return attend_steps(in, f64_arithmetic());
}

std::unique_ptr<ForwardPlan> CpuBackend::plan_forward(const ForwardShape& shape,
                                                      const arma::mat& W_QKV,
                                                      const arma::mat& W_O) {
  return plan_cpu_forward(shape, W_QKV, W_O);
}

}  // namespace attn
