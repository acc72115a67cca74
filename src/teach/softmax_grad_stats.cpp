// Sampling the softmax's largest gradient entry (teach/softmax_grad_stats.hpp).
#include "teach/softmax_grad_stats.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "core/error.hpp"
#include "core/i18n.hpp"

namespace attn {

namespace {

// One query's row: scores s_j = q·k_j (÷ √d_k), a = softmax(s) computed with
// the row max subtracted, then max_i a_i(1 − a_i).
double row_max_gradient(NormalStream& normals, const SoftmaxGradSpec& spec, std::vector<double>& q,
                        std::vector<double>& k, std::vector<double>& scores) {
  const auto draw = [&](std::vector<double>& v) {
    double length2 = 0.0;
    for (double& x : v) {
      x = normals.next();
      length2 += x * x;
    }
    if (spec.draws.vectors == QkVectors::unit_length)
      for (double& x : v) x /= std::sqrt(length2);
  };
  draw(q);
  const double divisor = spec.scaled ? std::sqrt(static_cast<double>(spec.draws.d_k)) : 1.0;
  double top = -std::numeric_limits<double>::infinity();
  for (double& s : scores) {
    draw(k);
    double dot = 0.0;
    for (std::size_t i = 0; i < q.size(); ++i) dot += q[i] * k[i];
    s = dot / divisor;
    top = std::max(top, s);
  }
  double sum = 0.0;
  for (double& s : scores) {
    s = std::exp(s - top);
    sum += s;
  }
  double largest = 0.0;
  for (double s : scores) largest = std::max(largest, (s / sum) * (1.0 - s / sum));
  return largest;
}

// The value at rank r (0-based, clamped) of the sorted `xs`.
double at_rank(const std::vector<double>& xs, double r) {
  const double last = static_cast<double>(xs.size() - 1);
  return xs[static_cast<std::size_t>(std::clamp(std::round(r), 0.0, last))];
}

}  // namespace

void validate(const SoftmaxGradSpec& spec) {
  validate(spec.draws);
  const std::uint64_t per_row = (spec.keys + 1) * spec.draws.d_k;
  if (spec.keys < 1 || spec.draws.samples * per_row > kMaxQkNumbers)
    throw InputError(tr_format(
        "samples {} × (keys {} + 1) × d_k {} = {} components in all is more than {} (kept under "
        "a second); give at most {} samples",
        spec.draws.samples, spec.keys, spec.draws.d_k, spec.draws.samples * per_row, kMaxQkNumbers,
        kMaxQkNumbers / per_row));
}

SoftmaxGradStats sample_softmax_grad(const SoftmaxGradSpec& spec) {
  validate(spec);
  NormalStream normals(spec.draws.seed);
  std::vector<double> q(spec.draws.d_k), k(spec.draws.d_k), scores(spec.keys);
  std::vector<double> largest(spec.draws.samples);
  std::size_t vanished = 0;
  for (double& x : largest) {
    x = row_max_gradient(normals, spec, q, k, scores);
    vanished += x < kVanishedGrad;
  }
  std::sort(largest.begin(), largest.end());
  const double S = static_cast<double>(largest.size());
  const double middle = (S - 1.0) / 2.0, spread = std::sqrt(S) / 2.0;
  SoftmaxGradStats out;
  out.median = largest.size() % 2
                   ? at_rank(largest, middle)
                   : 0.5 * (largest[largest.size() / 2 - 1] + largest[largest.size() / 2]);
  out.median_error = 0.5 * (at_rank(largest, middle + spread) - at_rank(largest, middle - spread));
  out.vanished = static_cast<double>(vanished) / S;
  out.vanished_error = std::sqrt(out.vanished * (1.0 - out.vanished) / S);
  return out;
}

}  // namespace attn
