// The gradient through a stack of encoder layers (the stack_grad_norm claim
// of docs/lesson-format.md, 000 section 6.1): k layers shaped like a lesson's
// own, with seeded weights, run one after the other; the gradient of a seeded
// random upstream at the top is carried down, and its Frobenius norm at each
// layer's input is what the claim reads.
#pragma once

#include <cstdint>
#include <vector>

#include "core/lesson.hpp"

namespace attn {

// The most layers a stack_grad_norm claim builds (BERT-base has 12).
inline constexpr std::uint64_t kMaxStackLayers = 12;

struct StackGradSpec {
  std::size_t layers = 12;  // k
  std::uint64_t seed = 1;
  bool residual = true;  // each layer's residual sums ([layer] residual)
};

// ‖dL/d(input of layer l)‖_F for l = 1..k (index l − 1), L = Σ U ⊙ (top
// layer's output). Each layer is `lesson`'s layer (heads, d_k, d_v, kv_heads,
// d_ff, norm, activation, eps, scale, masks) with W_Q, W_K, W_V, W_O, W_1, W_2
// drawn from one NormalStream(seed), standard deviation d_model^(−1/2), layer
// by layer in that order (each row-major); no biases, γ = 1, β = 0. Layer 1
// reads the lesson's X (its positional encoding, if any, is added there
// only); layer l + 1 reads layer l's layer.output. U (n × d_model) is drawn
// after every weight, components N(0, 1). Throws InputError when the lesson
// has no [layer] or uses linear attention.
std::vector<double> stack_input_grad_norms(const Lesson& lesson, const StackGradSpec& spec);

}  // namespace attn
