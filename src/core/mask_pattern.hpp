// Mask patterns (docs/lesson-format.md, "Mask patterns"; SPEC section 11): a
// sliding window, global tokens and a fixed stride, as a rule on a (query,
// key) pair and as counts of the cells a pattern lets attend.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

namespace attn {

// A pattern over one sequence (self-attention: query i and key j are both
// positions 0..n-1). Every part combines with the others and with padding
// and keep by AND; global tokens are exempt from the window and the stride only.
struct MaskPattern {
  bool causal = false;
  std::optional<std::uint64_t> window;  // |i − j| ≤ window (causal: 0 ≤ i − j ≤ window)
  std::vector<std::uint64_t> global;    // sorted: attend and are attended everywhere
  std::optional<std::uint64_t> stride;  // key j kept when j mod stride = stride − 1
  // A stride without a window keeps the diagonal (window 0): every query keeps itself.
  std::uint64_t local_width() const { return window.value_or(0); }
  bool sparse() const { return window.has_value() || stride.has_value(); }
};

// The MaskReason bits (core/trace.hpp) the pattern sets on cell (i, j): causal,
// window (outside the window), stride (not a stride key); 0 = kept.
unsigned pattern_reasons(const MaskPattern& pattern, std::uint64_t i, std::uint64_t j);

// The (query, key) cells of an n × n score matrix the pattern lets attend,
// counted row by row without building the matrix (n up to 10⁷).
std::uint64_t attended_cells(const MaskPattern& pattern, std::uint64_t n);

// 003's chunking: a sequence of n tokens cut into chunks of `chunk` tokens,
// each starting chunk − overlap after the last, until the end is covered; each
// chunk runs full self-attention on its own.
struct ChunkCount {
  std::uint64_t chunks = 0;
  std::uint64_t last = 0;   // the last chunk's length (≤ chunk)
  std::uint64_t cells = 0;  // Σ length²: the score cells the chunks compute
};
ChunkCount chunk_cells(std::uint64_t n, std::uint64_t chunk, std::uint64_t overlap);

}  // namespace attn
