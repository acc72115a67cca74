// What a forward pass costs: each step's shape (also at a sequence length the
// lesson does not have), the FLOPs that made it and the bytes that hold it
// (docs/lesson-format.md, "Shapes and costs"). Read from the trace's graph.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/dtype.hpp"
#include "core/trace.hpp"

namespace attn {

// The sizes to cost a trace at: the lesson's own (nullopt fields), or other
// numbers of queries and keys, as "the same model at seq 512" says. Columns
// (d_model, d_k, ...) stay the lesson's.
struct CostSizes {
  std::optional<std::size_t> queries;  // n
  std::optional<std::size_t> keys;     // m
};

// (rows, cols) of `step` at `sizes`: a dimension labelled by the query tokens
// becomes `queries`, one labelled by the key tokens `keys`, others stay.
std::pair<std::size_t, std::size_t> step_shape(const Trace& trace, const Step& step,
                                               const CostSizes& sizes = {});

// FLOPs of one step at `sizes`, counted as on paper: a matmul (n×k)·(k×m) is
// 2·n·k·m (+ n·m for a bias), divide, exp and softmax one per cell, a row sum
// m−1 additions per row, a mean over h heads h per cell; slicing, masking,
// concatenating, max and the lesson's own inputs cost nothing.
std::uint64_t step_flops(const Trace& trace, const Step& step, const CostSizes& sizes = {});
// The formula of step_flops for people: "2·n·k·m = 2·5·64·7".
std::string flops_formula(const Trace& trace, const Step& step, const CostSizes& sizes = {});

// Bytes of `step` at `sizes`: rows × cols × batch × dtype_bytes.
std::uint64_t step_bytes(const Trace& trace, const Step& step, Dtype dtype, std::uint64_t batch,
                         const CostSizes& sizes = {});

// Whether `step` is one of the KV cache's decoding steps (decode.*).
bool is_decode_step(const Step& step);

// FLOPs of each decoding step t of a KV cache trace (lesson [decode]), all
// heads together: q·K_cacheᵀ, the scaling, the softmax and weights·V_cache.
// They grow with t, the cache's length. Empty without decoding steps.
std::vector<std::uint64_t> decoding_flops(const Trace& trace, const CostSizes& sizes = {});

// Whether `step` computes what the pass already has a second way, to compare:
// the tiles of the tiled softmax (head{h}.tile*, tiled_context, tiled_check),
// linear attention's n × m order (similarity, linear_weights,
// quadratic_numerator, linear_check) and the softmax steps a linear-attention
// head records beside its own (scores ... weights).
bool is_second_computation(const Trace& trace, const Step& step);

// Whether a step belongs to the forward pass's totals: not a weight or bias of
// the lesson (they are parameters, not activations), not a teaching summary
// over heads (heads.mean, heads.max), not a decoding step (the KV cache
// computes the attention a second way; decoding_flops counts it) and not
// another second computation (is_second_computation), not the backward pass.
bool counts_in_pass(const Trace& trace, const Step& step);

// A step of the backward pass (lesson [backward]): grad.*, and the loss's target.
bool is_backward_step(const Step& step);
// The FLOPs of the backward pass's steps (0 without [backward]).
std::uint64_t backward_pass_flops(const Trace& trace);

// The whole pass: the sums over the steps counts_in_pass() keeps.
std::uint64_t pass_flops(const Trace& trace, const CostSizes& sizes = {});
std::uint64_t pass_bytes(const Trace& trace, Dtype dtype, std::uint64_t batch,
                         const CostSizes& sizes = {});

// FLOPs of the forward pass `bench` times (docs/bench.md): self-attention of n
// tokens of width d with h heads of d/h, W_O, no mask, no biases. Each term is
// the sum of step_flops over that part's steps of such a lesson's trace, so
// total() is its pass_flops.
struct ForwardFlops {
  std::uint64_t qkv = 0;      // Q, K, V: 3 · 2·n·d·d
  std::uint64_t scores = 0;   // h · 2·n·(d/h)·n = 2·n²·d
  std::uint64_t softmax = 0;  // h · (n² scaled + n² exp + n·(n−1) row_sum + n² weights)
  std::uint64_t context = 0;  // h · 2·n·n·(d/h) = 2·n²·d
  std::uint64_t output = 0;   // 2·n·d·d
  std::uint64_t total() const { return qkv + scores + softmax + context + output; }
};
// Requires heads to divide d_model.
ForwardFlops forward_flops(std::uint64_t n, std::uint64_t d_model, std::uint64_t heads);

}  // namespace attn
