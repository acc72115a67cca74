// The arithmetic of attention's cells and rows, written once for the host and
// the device: the CUDA kernels (cuda_device.cu) call these functions, one
// thread per cell or per row, and the test-only host-kernels backend calls
// them in plain loops, so that their arithmetic is tested where there is no
// GPU. Each does the operations of core/attention.cpp in the same order
// (divide, replace, running max from -inf, subtract, exp, sum left to right,
// divide), so a result equals the CPU backend's bit for bit wherever the two
// exp functions agree (the device's is within 1 ulp). No Armadillo, and
// nothing CUDA-only but the ATTN_HD qualifiers.
//
// Shape key: n queries, m keys, h heads. Every matrix is column-major: row i
// of an (n,m) block is m values `stride` = n apart, starting at i.
#pragma once

#include <cmath>
#include <cstddef>

#include "core/masked_row.hpp"

#if defined(__CUDACC__)
#define ATTN_HD __host__ __device__
#else
#define ATTN_HD
#endif

namespace attn::rows {

// score / divisor: a division, as scale_scores does, not a product with 1/divisor
ATTN_HD inline double scale_score(double score, double divisor) {
  return score / divisor;
}

// The scaled score, or the fill where the cell is masked: replaced, not added to.
ATTN_HD inline double mask_cell(double scaled, bool masked, double fill) {
  return masked ? fill : scaled;
}

// row:(1,m) -> its largest value; a running max started at -inf
ATTN_HD inline double row_max(const double* row, std::size_t stride, std::size_t m) {
  double best = -INFINITY;
  for (std::size_t j = 0; j < m; ++j)
    if (row[j * stride] > best) best = row[j * stride];
  return best;
}

// row:(1,m) -> Σ_j row[j], from the first value on, left to right (as arma::sum
// over a row adds column after column to a copy of the first)
ATTN_HD inline double row_sum(const double* row, std::size_t stride, std::size_t m) {
  if (m == 0) return 0.0;
  double sum = row[0];
  for (std::size_t j = 1; j < m; ++j) sum += row[j * stride];
  return sum;
}

// masked:(1,m) -> weights:(1,m): exp(x_j − max) / Σ exp(x_k − max), or `policy`
// when every key is -inf (max = -inf: 0/0). May run in place (weights == masked).
ATTN_HD inline void row_softmax(const double* masked, double* weights, std::size_t stride,
                                std::size_t m, MaskedRowPolicy policy) {
  const double top = row_max(masked, stride, m);
  if (top == -INFINITY) {
    const double value = policy == MaskedRowPolicy::nan    ? NAN
                         : policy == MaskedRowPolicy::zero ? 0.0
                                                           : 1.0 / static_cast<double>(m);
    for (std::size_t j = 0; j < m; ++j) weights[j * stride] = value;
    return;
  }
  for (std::size_t j = 0; j < m; ++j) weights[j * stride] = std::exp(masked[j * stride] - top);
  const double total = row_sum(weights, stride, m);
  for (std::size_t j = 0; j < m; ++j) weights[j * stride] = weights[j * stride] / total;
}

// Every step of attention after the scores, h heads stacked: each pointer but
// mask is h blocks of (n,m) (row_sum: h blocks of (n,1)), head b's at b·n·m
// (b·n). The same struct holds host pointers (host-kernels) or device ones.
struct AttentionSteps {
  std::size_t n = 0;
  std::size_t m = 0;
  std::size_t heads = 1;
  double divisor = 1.0;
  double fill = 0.0;
  MaskedRowPolicy policy = MaskedRowPolicy::nan;
  const unsigned char* mask = nullptr;  // (n,m), shared by the heads: nonzero = masked
  double* scores = nullptr;             // read here: the scores product writes it
  double* scaled = nullptr;
  double* masked = nullptr;
  double* exp = nullptr;
  double* row_sum = nullptr;
  double* weights = nullptr;
};

// Cell c of the h·n·m stacked cells: scaled, masked and exp (exp(masked), as on
// paper: no shift) from scores. One thread's work.
ATTN_HD inline void scale_mask_exp_cell(const AttentionSteps& a, std::size_t c) {
  const double scaled = scale_score(a.scores[c], a.divisor);
  const double masked = mask_cell(scaled, a.mask[c % (a.n * a.m)] != 0, a.fill);
  a.scaled[c] = scaled;
  a.masked[c] = masked;
  a.exp[c] = std::exp(masked);
}

// Row r of the h·n stacked rows (head r / n, query r % n): row_sum of exp, and
// the weights, the stable softmax of masked with the policy. One thread's work.
ATTN_HD inline void weights_row(const AttentionSteps& a, std::size_t r) {
  const std::size_t start = (r / a.n) * a.n * a.m + r % a.n;
  a.row_sum[r] = row_sum(a.exp + start, a.n, a.m);
  row_softmax(a.masked + start, a.weights + start, a.n, a.m, a.policy);
}

// Row r of h stacked (n,m) blocks of scores, in place: softmax(scores / divisor)
// (the forward plan: no mask, so no row is entirely -inf). One thread's work.
ATTN_HD inline void scaled_softmax_row(double* scores, std::size_t n, std::size_t m, double divisor,
                                       std::size_t r) {
  double* row = scores + (r / n) * n * m + r % n;
  for (std::size_t j = 0; j < m; ++j) row[j * n] = scale_score(row[j * n], divisor);
  row_softmax(row, row, n, m, MaskedRowPolicy::nan);
}

}  // namespace attn::rows
