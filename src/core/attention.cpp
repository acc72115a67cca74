// Attention of every head, composed step by step on the host.
#include "core/attention.hpp"

#include "core/parallel.hpp"

namespace attn {

// M:(n,h·w) -> (n,w)
arma::mat split_head(const arma::mat& M, std::size_t head, std::size_t width) {
  return M.cols(head * width, (head + 1) * width - 1);
}

// (n,m) -> (n,m)
arma::mat scale_scores(const arma::mat& scores, double divisor) {
  return scores / divisor;
}

// scaled:(n,m) mask:(n,m) -> (n,m)
arma::mat apply_mask(const arma::mat& scaled, const arma::umat& mask, double fill) {
  arma::mat masked = scaled;
  masked.elem(arma::find(mask)).fill(fill);
  return masked;
}

// masked:(n,m) -> (n,m)
arma::mat attention_weights(const Arithmetic& arithmetic, const arma::mat& masked,
                            MaskedRowPolicy policy) {
  arma::mat weights = arithmetic.row_softmax(masked);
  const arma::vec row_max = arma::max(masked, 1);
  for (std::size_t i = 0; i < masked.n_rows; ++i) {
    if (row_max(i) != -arma::datum::inf) continue;  // at least one key is open
    switch (policy) {
      case MaskedRowPolicy::nan:
        weights.row(i).fill(arma::datum::nan);
        break;
      case MaskedRowPolicy::zero:
        weights.row(i).zeros();
        break;
      case MaskedRowPolicy::uniform:
        weights.row(i).fill(1.0 / static_cast<double>(masked.n_cols));
        break;
    }
  }
  return weights;
}

namespace {

// One head's steps in order, each handed to the hook before the next reads it.
HeadAttention attend_head(const AttentionInput& in, const Arithmetic& arithmetic,
                          const StepHook* hook, std::size_t h) {
  HeadAttention out;
  const auto set = [&](HeadStep step, arma::mat value) -> const arma::mat& {
    arma::mat& slot = out[step];
    slot = std::move(value);
    if (hook && hook->computed) hook->computed(h, step, slot);
    return slot;
  };
  const auto replaced = [&](HeadStep step) {
    return hook && hook->replaced && hook->replaced(h, step);
  };
  const arma::mat& Q = set(HeadStep::Q, split_head(in.Q, h, in.d_k));  // (n,d_k)
  const arma::mat& K = set(HeadStep::K, split_head(in.K, h, in.d_k));  // (m,d_k)
  const arma::mat& V = set(HeadStep::V, split_head(in.V, h, in.d_v));  // (m,d_v)
  const arma::mat& scores = set(HeadStep::scores, arithmetic.matmul_transposed(Q, K));
  const arma::mat& scaled = set(HeadStep::scaled, scale_scores(scores, in.divisor));
  const arma::mat& masked = set(HeadStep::masked, apply_mask(scaled, in.mask, in.fill));
  finish_head(masked, V, in.policy, arithmetic, set, replaced);
  return out;
}

}  // namespace

void finish_head(const arma::mat& masked, const arma::mat& V, MaskedRowPolicy policy,
                 const Arithmetic& arithmetic, const SetHeadStep& set,
                 const std::function<bool(HeadStep)>& replaced) {
  const arma::mat& exp = set(HeadStep::exp, arma::exp(masked));
  const arma::mat& row_sum = set(HeadStep::row_sum, arithmetic.row_sum(exp));
  arma::mat weights = attention_weights(arithmetic, masked, policy);
  if (replaced(HeadStep::exp) || replaced(HeadStep::row_sum)) {
    weights = exp;
    weights.each_col() /= row_sum.col(0);
  }
  const arma::mat& A = set(HeadStep::weights, std::move(weights));
  set(HeadStep::context, arithmetic.matmul(A, V));  // (n,d_v)
}

// (m, g·w) -> (m, h·w)
arma::mat repeat_heads(const arma::mat& M, std::size_t width, std::size_t heads) {
  const std::size_t g = M.n_cols / width, group = heads / g;
  if (group == 1) return M;
  arma::mat out(M.n_rows, heads * width);
  for (std::size_t h = 0; h < heads; ++h)
    out.cols(h * width, (h + 1) * width - 1) = split_head(M, h / group, width);
  return out;
}

std::vector<HeadAttention> attend_steps(const AttentionInput& in, const Arithmetic& arithmetic,
                                        const StepHook* hook) {
  std::vector<HeadAttention> heads(in.heads);
  parallel_for(in.heads, [&](std::size_t h) { heads[h] = attend_head(in, arithmetic, hook, h); });
  return heads;
}

}  // namespace attn
