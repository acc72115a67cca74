// Where a line of text may end: Unicode's line-breaking algorithm (UAX #14,
// through libunibreak), used by wrap_text (render/numbers.hpp) for the
// terminal, verify's report and the sheets.
#pragma once

#include <string_view>
#include <vector>

namespace attn {

// The lead byte of a code point a terminal shows two columns wide: a three- or
// four-byte sequence from U+1100 up (CJK, Hangul, full-width forms), but not
// the E2 block (U+2000 to U+2FFF: dashes, arrows, math symbols). display_width
// (render/numbers.hpp) counts with it, and line breaking tells Chinese by it.
constexpr bool wide_lead_byte(unsigned char c) {
  return c >= 0xE1 && c != 0xE2;
}

// The byte offsets in `line` (one line, no '\n') after which it may be broken,
// in increasing order; the end of the line is not among them. They are UAX #14's
// break opportunities for Chinese ("zh": never before ，。）nor after （“, never
// inside a number), less those between two narrow characters that do not
// follow a space: a step id, an option or a path (`head0.scores[river,bank]`,
// `--expand`, `lessons/a-b.toml`) stays whole, and Latin text breaks at spaces;
// nor the space between a number and the Chinese word it counts (4 个值).
#ifndef ATTN_NO_LIBUNIBREAK
std::vector<std::size_t> line_break_offsets(std::string_view line);
#else
// The WebAssembly engine has no libunibreak (cmake/sources.cmake): the page
// lets the browser break its lines, and nothing the engine returns is wrapped
// to a width or set in LaTeX, so no offsets are needed there.
inline std::vector<std::size_t> line_break_offsets(std::string_view) { return {}; }
#endif

}  // namespace attn
