// The CPU's forward plan (core/backend.hpp's ForwardPlan, what `bench` times):
// the attention forward pass with no trace, every buffer allocated when the
// plan is made, BLAS called on raw column-major buffers, the work shared among
// the cores (docs/bench.md).
//
// Shape key: n tokens (queries, and keys: m = n), d model width, h heads,
// d_k = d/h, b queries per block of attention work, T threads.
#pragma once

#include <armadillo>
#include <cstddef>
#include <memory>

#include "core/backend.hpp"

namespace attn {

// b = min(n, 256): how many queries one piece of attention work takes (one
// head's scores for them are (n,b)). Larger blocks repack K_h and V_h for
// BLAS fewer times; smaller ones keep the scores in cache. On a 2-core
// AVX-512 machine, 256 was fastest at n = 1024 to 4096 (64: 3-9% slower).
std::size_t attention_block(std::size_t n);

// What a plan of `shape` on T threads holds, in bytes: 8 × (W_QKV 3d² + W_O d²
// + X n·d + [Q|K|V] 3n·d + concat n·d + output n·d + T scores blocks n·b).
std::size_t cpu_forward_bytes(const ForwardShape& shape, std::size_t threads);

// W_QKV:(d,3d) W_O:(d,d) -> a plan of `shape`, copying the weights. Throws
// InputError for an empty shape, heads that do not divide d, or weights of
// another shape.
std::unique_ptr<ForwardPlan> plan_cpu_forward(const ForwardShape& shape, const arma::mat& W_QKV,
                                              const arma::mat& W_O);

}  // namespace attn
