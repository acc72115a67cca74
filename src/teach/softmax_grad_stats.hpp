// How saturated a softmax is, by sampling (the softmax-gradient claims of
// docs/lesson-format.md): one query q against m keys, the row of weights
// a = softmax(q·k_j [/ √d_k]), and its largest gradient entry
// max_ij |∂a_i/∂s_j| = max_i a_i(1 − a_i), which is 0.25 at most (two keys
// sharing the row equally) and falls toward 0 as one key takes every weight.
#pragma once

#include <cstdint>

#include "teach/qk_stats.hpp"

namespace attn {

// A row's softmax gradient counts as vanished below 1% of its largest
// possible value, 0.25: max |∂a_i/∂s_j| < 0.0025.
inline constexpr double kVanishedGrad = 0.0025;

struct SoftmaxGradSpec {
  QkSampleSpec draws;      // d_k, samples (rows), seed, vectors
  std::uint64_t keys = 9;  // keys per row (m)
  bool scaled = false;     // divide each score by √d_k
};

struct SoftmaxGradStats {
  // The median of the rows' max |∂a_i/∂s_j|, its standard error from the
  // order statistics (half the distance between the ranks S/2 ± √S/2), and
  // the share of rows under kVanishedGrad with its binomial standard error.
  double median = 0.0, median_error = 0.0;
  double vanished = 0.0, vanished_error = 0.0;
};

// Throws InputError naming the key and its range when the spec draws too
// many numbers (samples × (keys + 1) × d_k over kMaxQkNumbers) or too few rows.
void validate(const SoftmaxGradSpec& spec);

// Draws spec.draws.samples rows from one NormalStream(seed): for each, q's
// d_k components, then each key's. Same spec, same numbers.
SoftmaxGradStats sample_softmax_grad(const SoftmaxGradSpec& spec);

}  // namespace attn
