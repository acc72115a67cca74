// Where a line of text may end: Unicode's line-breaking algorithm (UAX #14,
// through libunibreak), used by wrap_text (render/numbers.hpp) for the
// terminal, verify's report and the sheets.
#pragma once

#include <string_view>
#include <vector>

namespace attn {

// The byte offsets in `line` (one line, no '\n') after which it may be broken,
// in increasing order; the end of the line is not among them. They are UAX #14's
// break opportunities for Chinese ("zh": never before ，。）nor after （“, never
// inside a number), less those between two narrow characters that do not
// follow a space: a step id, an option or a path (`head0.scores[river,bank]`,
// `--expand`, `lessons/a-b.toml`) stays whole, and Latin text breaks at spaces.
std::vector<std::size_t> line_break_offsets(std::string_view line);

}  // namespace attn
