// Where every head's blocks lie in the flat column-major buffers of attention,
// written once as the arguments of strided-batched products (cuBLAS's
// cublasDgemmStridedBatched) so that the CUDA backend and the test-only
// host-kernels backend run the same layout. No Armadillo, no CUDA.
//
// Shape key: n queries, m keys, h heads, d_k per-head query/key width, d_v
// per-head value width, d model width (the forward plan: d = h·d_k = h·d_v).
// A "stack" of h (r,c) blocks is h·r·c values, head b's block starting at b·r·c.
#pragma once

#include <cmath>
#include <cstddef>

#include "backend/attention_rows.hpp"

namespace attn {

struct AttentionShape {
  std::size_t n = 0;
  std::size_t m = 0;
  std::size_t heads = 1;
  std::size_t d_k = 0;
  std::size_t d_v = 0;
};

// Pointers to everything attention reads and writes, all on the host or all
// on the device.
struct AttentionBuffers {
  const double* Q = nullptr;   // (n,h·d_k)
  const double* K = nullptr;   // (m,h·d_k)
  const double* V = nullptr;   // (m,h·d_v)
  rows::AttentionSteps steps;  // the mask in; scores .. weights out
  double* context = nullptr;   // (n,h·d_v), the heads side by side
};

// C_b = A_b·op(B_b) for b < batch, every matrix column-major: A_b:(rows,inner)
// at A + b·stride_a with leading dimension lda; B_b at B + b·stride_b, stored
// (inner,cols) with ldb, or (cols,inner) when transpose_b (op(B) = Bᵀ);
// C_b:(rows,cols) at C + b·stride_c with ldc. cuBLAS's arguments, in its order.
struct BatchedProduct {
  std::size_t rows = 0;
  std::size_t cols = 0;
  std::size_t inner = 0;
  bool transpose_b = false;
  std::size_t lda = 0;
  std::size_t ldb = 0;
  std::size_t ldc = 0;
  std::size_t stride_a = 0;
  std::size_t stride_b = 0;
  std::size_t stride_c = 0;
  std::size_t batch = 1;
};

// A:(n,k) B:(k,p) -> C:(n,p), one product
inline BatchedProduct plain_product(std::size_t n, std::size_t k, std::size_t p) {
  return {n, p, k, false, n, k, n, n * k, k * p, n * p, 1};
}

// Q:(n,h·d_k) K:(m,h·d_k) -> scores: h × (n,m), head b = Q_b·K_bᵀ. Head b's
// columns of Q start b·d_k columns = b·n·d_k values in; of K, b·m·d_k.
inline BatchedProduct scores_product(const AttentionShape& s) {
  return {s.n, s.m, s.d_k, true, s.n, s.m, s.n, s.n * s.d_k, s.m * s.d_k, s.n * s.m, s.heads};
}

// weights: h × (n,m) V:(m,h·d_v) -> context:(n,h·d_v), head b = weights_b·V_b
// written into columns [b·d_v, (b+1)·d_v): the heads side by side (concat).
inline BatchedProduct context_product(const AttentionShape& s) {
  return {s.n, s.d_v, s.m, false, s.n, s.m, s.n, s.n * s.m, s.m * s.d_v, s.n * s.d_v, s.heads};
}

// The forward pass of a plan (core/backend.hpp's ForwardShape) as buffers and
// products: X:(n,d) W_QKV:(d,3d) -> QKV:(n,3d), Q, K, V its column blocks
// (K at k_offset, V at v_offset); scores: h × (n,n); softmax(scores / divisor)
// by rows in place; context -> concat:(n,d); concat·W_O:(d,d) -> output:(n,d).
struct ForwardLayout {
  ForwardLayout(std::size_t n, std::size_t d, std::size_t heads)
      : attention{n, n, heads, d / heads, d / heads},
        qkv(plain_product(n, d, 3 * d)),
        scores(scores_product(attention)),
        context(context_product(attention)),
        output(plain_product(n, d, d)),
        k_offset(n * d),
        v_offset(2 * n * d),
        divisor(std::sqrt(static_cast<double>(d / heads))) {}

  AttentionShape attention;
  BatchedProduct qkv, scores, context, output;
  std::size_t k_offset, v_offset;
  double divisor;  // √(d/h)
};

}  // namespace attn
