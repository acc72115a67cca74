// What the attention weights of a row are when every key of it is masked with
// -inf (softmax is 0/0 there). A header of its own, without Armadillo, so that
// the row functions the CUDA kernels share (backend/attention_rows.hpp) can
// name it.
#pragma once

namespace attn {

// nan: what a plain softmax gives (PyTorch); zero: the row attends to nothing;
// uniform: 1/m for each of the m keys.
enum class MaskedRowPolicy { nan, zero, uniform };

}  // namespace attn
