// CPU backend: the reference trace, and the forward plan of cpu_forward.cpp.
#include "backend/cpu_backend.hpp"

#include "backend/cpu_forward.hpp"

namespace attn {

std::unique_ptr<ForwardPlan> CpuBackend::plan_forward(const ForwardShape& shape,
                                                      const arma::mat& W_QKV,
                                                      const arma::mat& W_O) {
  return plan_cpu_forward(shape, W_QKV, W_O);
}

}  // namespace attn
