// CPU backend: the trace's attention composed of the step functions, in double.
#include "backend/cpu_backend.hpp"

#include "core/error.hpp"

namespace attn {

// A:(n,k) B:(k,p) -> (n,p)
arma::mat CpuBackend::matmul(const arma::mat& A, const arma::mat& B) {
  return f64_arithmetic().matmul(A, B);
}

std::vector<HeadAttention> CpuBackend::attend(const AttentionInput& in) {
  return attend_steps(in, f64_arithmetic());
}

std::unique_ptr<ForwardPlan> CpuBackend::plan_forward(const ForwardShape&, const arma::mat&,
                                                      const arma::mat&) {
  throw BackendUnavailable("the CPU forward plan is not built yet");  // TODO(bench): cpu_forward
}

}  // namespace attn
