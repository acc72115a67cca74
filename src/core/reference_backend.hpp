// The reference computation behind every trace: the step functions
// (core/attention.hpp) composed on the host in IEEE double, with no forward
// plan. The CPU backend (backend/cpu_backend.hpp) is this plus the fast
// forward pass `bench` times; the practice page's WebAssembly engine
// (src/web/) uses it as it is, where there is neither BLAS nor threads.
#pragma once

#include "core/backend.hpp"

namespace attn {

class ReferenceBackend : public Backend {
 public:
  // "cpu": the same arithmetic as the CPU backend's trace (dtype emulation included).
  std::string_view name() const override { return "cpu"; }
  // A:(n,k) B:(k,p) -> (n,p), through f64_arithmetic().
  arma::mat matmul(const arma::mat& A, const arma::mat& B) override;
  std::vector<HeadAttention> attend(const AttentionInput& in) override;
  // No plan: throws InputError (only `bench` asks for one).
  std::unique_ptr<ForwardPlan> plan_forward(const ForwardShape& shape, const arma::mat& W_QKV,
                                            const arma::mat& W_O) override;
};

}  // namespace attn
