// The CPU backend: the reference computation (core/reference_backend.hpp:
// Armadillo over OpenBLAS, the step functions in IEEE double), which every
// other backend is tested against, plus the fast forward pass `bench` times.
#pragma once

#include "core/reference_backend.hpp"

namespace attn {

class CpuBackend final : public ReferenceBackend {
 public:
  std::unique_ptr<ForwardPlan> plan_forward(const ForwardShape& shape, const arma::mat& W_QKV,
                                            const arma::mat& W_O) override;
};

}  // namespace attn
