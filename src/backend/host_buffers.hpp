// The Armadillo side of the backends that run kernels over flat buffers (the
// CUDA backend, and the test-only host-kernels backend): attention's steps in
// host buffers, every head's block stacked, as the kernels read and write them
// (backend/attention_rows.hpp), and back into the per-head matrices of
// core/attention.hpp; and the checks of a forward plan's inputs.
//
// Shape key: n queries, m keys, h heads, d_k per-head query/key width, d_v
// per-head value width.
#pragma once

#include <vector>

#include "backend/attention_layout.hpp"
#include "core/attention.hpp"
#include "core/backend.hpp"

namespace attn {

class StackedAttention {
 public:
  // Sizes the buffers for `in` (which must outlive this) and turns its mask into
  // bytes. A Q, K, V or mask whose shape disagrees with heads, d_k, d_v is an
  // InputError naming both shapes.
  explicit StackedAttention(const AttentionInput& in);

  const AttentionShape& shape() const { return shape_; }
  // Pointers into in.Q, in.K, in.V, the mask and this object's step buffers.
  AttentionBuffers buffers();
  // The steps per head: Q_h, K_h, V_h sliced from the input, the others cut
  // from the buffers.
  std::vector<HeadAttention> heads() const;

 private:
  const AttentionInput& in_;
  AttentionShape shape_;
  std::vector<unsigned char> mask_;                               // (n,m)
  std::vector<double> scores_, scaled_, masked_, exp_, weights_;  // h × (n,m)
  std::vector<double> row_sum_;                                   // h × (n,1)
  std::vector<double> context_;                                   // (n,h·d_v)
};

// A:(n,k) B:(k,p); else an InputError naming both shapes.
void check_product(const arma::mat& A, const arma::mat& B);

// W_QKV:(d,3d) W_O:(d,d), d = shape.d_model a multiple of shape.heads; else an
// InputError naming the shapes.
void check_forward_inputs(const ForwardShape& shape, const arma::mat& W_QKV, const arma::mat& W_O);

}  // namespace attn
