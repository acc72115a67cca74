// Mask patterns: the rule for one cell and the counts, row by row.
#include "core/mask_pattern.hpp"

#include <algorithm>

#include "core/trace.hpp"

namespace attn {

namespace {

bool is_global(const MaskPattern& p, std::uint64_t token) {
  return std::binary_search(p.global.begin(), p.global.end(), token);
}

bool on_stride(const MaskPattern& p, std::uint64_t key) {
  return p.stride && key % *p.stride == *p.stride - 1;
}

// Stride keys among keys 0..last: (last + 1) ÷ stride.
std::uint64_t stride_keys_through(std::uint64_t stride, std::uint64_t last) {
  return (last + 1) / stride;
}

// Entries of a sorted list among 0..last, and among first..last.
std::uint64_t through(const std::vector<std::uint64_t>& sorted, std::uint64_t last) {
  return static_cast<std::uint64_t>(std::upper_bound(sorted.begin(), sorted.end(), last) -
                                    sorted.begin());
}
std::uint64_t between(const std::vector<std::uint64_t>& sorted, std::uint64_t first,
                      std::uint64_t last) {
  return through(sorted, last) - (first ? through(sorted, first - 1) : 0);
}

}  // namespace

unsigned pattern_reasons(const MaskPattern& p, std::uint64_t i, std::uint64_t j) {
  unsigned reasons = 0;
  if (p.causal && j > i) reasons |= mask_causal;
  if (!p.sparse() || is_global(p, i) || is_global(p, j)) return reasons;
  const std::uint64_t distance = i > j ? i - j : j - i;
  if (distance <= p.local_width() || on_stride(p, j)) return reasons;
  if (p.window) reasons |= mask_window;
  if (p.stride) reasons |= mask_stride;
  return reasons;
}

std::uint64_t attended_cells(const MaskPattern& p, std::uint64_t n) {
  // Global keys that the stride does not keep anyway: each adds one key to a
  // row that sees it outside its window.
  std::vector<std::uint64_t> extra;
  for (const std::uint64_t g : p.global)
    if (!on_stride(p, g)) extra.push_back(g);
  std::uint64_t total = 0;
  for (std::uint64_t i = 0; i < n; ++i) {
    const std::uint64_t last = p.causal ? i : n - 1;  // the last key the row may see
    if (!p.sparse() || is_global(p, i)) {
      total += last + 1;
      continue;
    }
    const std::uint64_t w = p.local_width();
    const std::uint64_t a = i > w ? i - w : 0, b = std::min(last, i + w);
    std::uint64_t row = b - a + 1;
    if (p.stride) {
      const std::uint64_t inside =
          stride_keys_through(*p.stride, b) - (a ? stride_keys_through(*p.stride, a - 1) : 0);
      row += stride_keys_through(*p.stride, last) - inside;
    }
    row += through(extra, last) - between(extra, a, b);
    total += row;
  }
  return total;
}

ChunkCount chunk_cells(std::uint64_t n, std::uint64_t chunk, std::uint64_t overlap) {
  ChunkCount out;
  const std::uint64_t step = chunk - overlap;
  for (std::uint64_t start = 0;; start += step) {
    out.last = std::min(chunk, n - start);
    ++out.chunks;
    out.cells += out.last * out.last;
    if (start + chunk >= n) break;
  }
  return out;
}

}  // namespace attn
