// The CPU backend: Armadillo over OpenBLAS. It is the reference every other
// backend is tested against: its attention is the host composition of the
// step functions (core/attention.hpp) in IEEE double.
#pragma once

#include "core/backend.hpp"

namespace attn {

class CpuBackend final : public Backend {
 public:
  std::string_view name() const override { return "cpu"; }
  arma::mat matmul(const arma::mat& A, const arma::mat& B) override;
  std::vector<HeadAttention> attend(const AttentionInput& in) override;
  std::unique_ptr<ForwardPlan> plan_forward(const ForwardShape& shape, const arma::mat& W_QKV,
                                            const arma::mat& W_O) override;
};

}  // namespace attn
