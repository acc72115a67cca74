// Attention of every head at once: the coarse operation a backend computes
// (core/backend.hpp), and its step-by-step composition on the host, which the
// CPU backend runs and which the trace runs itself when a step's cells are
// replaced (verify's carried credit) or a narrower format is emulated.
//
// Shape key: n queries, m keys, h heads, d_k per-head query/key width, d_v
// per-head value width. Every matrix is column-major (Armadillo's layout).
#pragma once

#include <armadillo>
#include <array>
#include <cstddef>
#include <functional>
#include <vector>

#include "core/arithmetic.hpp"
#include "core/lesson.hpp"
#include "core/trace.hpp"

namespace attn {

inline constexpr std::size_t kHeadSteps = static_cast<std::size_t>(HeadStep::context) + 1;

// What attention of every head reads.
struct AttentionInput {
  const arma::mat& Q;      // (n, h·d_k)
  const arma::mat& K;      // (m, h·d_k)
  const arma::mat& V;      // (m, h·d_v)
  const arma::umat& mask;  // (n,m): nonzero = masked (MaskReason bits)
  std::size_t heads = 1;
  std::size_t d_k = 0;
  std::size_t d_v = 0;
  double divisor = 1.0;                           // scaled = scores / divisor
  double fill = 0.0;                              // what a masked cell of `masked` holds
  MaskedRowPolicy policy = MaskedRowPolicy::nan;  // a row whose every key is -inf
};

// Every step of one head: Q:(n,d_k) K:(m,d_k) V:(m,d_v) scores, scaled,
// masked, exp:(n,m) row_sum:(n,1) weights:(n,m) context:(n,d_v), indexed by
// HeadStep. exp is exp(masked) as on paper (no shift); weights are the stable
// softmax of masked, with `policy` on rows that are entirely -inf.
struct HeadAttention {
  std::array<arma::mat, kHeadSteps> steps;
  arma::mat& operator[](HeadStep s) { return steps[static_cast<std::size_t>(s)]; }
  const arma::mat& operator[](HeadStep s) const { return steps[static_cast<std::size_t>(s)]; }
};

// What the trace does to a step of head h right after it is computed and
// before any later step reads it (replace cells, round to the format), and
// whether it replaced cells of it.
struct StepHook {
  std::function<void(std::size_t head, HeadStep step, arma::mat& value)> computed;
  std::function<bool(std::size_t head, HeadStep step)> replaced;
};

// The composition of the step functions, head by head (the heads side by side
// on the machine's cores): Q_h, K_h, V_h sliced, scores = Q_h·K_hᵀ, scaled,
// masked, exp, row_sum, weights, context = weights·V_h. Given exponentials or
// row sums (hook.replaced) make the weights exp / row_sum, as on paper.
std::vector<HeadAttention> attend_steps(const AttentionInput& in, const Arithmetic& arithmetic,
                                        const StepHook* hook = nullptr);

// The steps after the masked scores, each handed to `set` (which stores it
// in `out` and returns it) before the next reads it: exp, row_sum, weights
// (exp / row_sum when `replaced` says either was given) and context =
// weights·V. attend_steps ends every head with it, and the pipeline after
// ALiBi's bias.
using SetHeadStep = std::function<const arma::mat&(HeadStep step, arma::mat value)>;
void finish_head(const arma::mat& masked, const arma::mat& V, MaskedRowPolicy policy,
                 const Arithmetic& arithmetic, const SetHeadStep& set,
                 const std::function<bool(HeadStep)>& replaced);

// M:(m, g·w) -> (m, h·w): each of the g blocks of w columns repeated h/g
// times in place (PyTorch's repeat_interleave(h/g) of the heads), so that
// query head k reads block k ÷ (h/g).
arma::mat repeat_heads(const arma::mat& M, std::size_t width, std::size_t heads);

// -> (n,m): `scores` divided by `divisor`
arma::mat scale_scores(const arma::mat& scores, double divisor);

// scaled:(n,m) mask:(n,m) -> masked:(n,m); masked cells replaced by `fill`.
arma::mat apply_mask(const arma::mat& scaled, const arma::umat& mask, double fill);

// masked:(n,m) -> weights:(n,m): the softmax of each row, and `policy` on the
// rows that are entirely -inf (NaN, 0, or 1/m).
arma::mat attention_weights(const Arithmetic& arithmetic, const arma::mat& masked,
                            MaskedRowPolicy policy);

// M:(n,h·w) -> head `head`'s columns [head·w, (head+1)·w):(n,w)
arma::mat split_head(const arma::mat& M, std::size_t head, std::size_t width);

}  // namespace attn
