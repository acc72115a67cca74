// The host-kernels backend (tests only; users cannot pick it): the CUDA
// backend's algorithm on the host, so that its arithmetic and its layout are
// tested where there is no GPU. The same flat buffers (backend/host_buffers),
// the same products' arguments (backend/attention_layout.hpp), run by naive
// loops instead of cuBLAS, and the same row functions (attention_rows.hpp) the
// CUDA kernels call, run by loops over the cells and rows instead of threads.
#pragma once

#include "core/backend.hpp"

namespace attn::testing {

class HostKernelsBackend final : public Backend {
 public:
  std::string_view name() const override { return "host-kernels"; }
  // A:(n,k) B:(k,p) -> (n,p)
  arma::mat matmul(const arma::mat& A, const arma::mat& B) override;
  std::vector<HeadAttention> attend(const AttentionInput& in) override;
  // W_QKV:(d,3d) W_O:(d,d): a plan in host buffers, run as the CUDA plan runs.
  std::unique_ptr<ForwardPlan> plan_forward(const ForwardShape& shape, const arma::mat& W_QKV,
                                            const arma::mat& W_O) override;
};

}  // namespace attn::testing
