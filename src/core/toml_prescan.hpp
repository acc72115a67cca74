// A linear pass over a TOML text before toml++ parses it, bounding the depth
// of what toml++ would build: toml++ recurses once per level (a dotted key of
// 300,000 parts overflowed its stack) and asserts on a header such as [.a].
#pragma once

#include <string>
#include <string_view>

namespace attn {

// Far above any file attn-trace reads (its deepest value is 4 levels down:
// a table, a key, an array of rows, a row), far below what toml++ survives.
inline constexpr int kMaxTomlKeyParts = 64;  // parts of one dotted key or table header
inline constexpr int kMaxTomlNesting = 64;   // arrays and inline tables one inside another
inline constexpr int kMaxTomlDepth = 128;    // levels from the top of the file to any value

// Throws InputError naming origin:line (and the column of a missing key) and
// the fix when `text` has a key or table header of more than kMaxTomlKeyParts
// parts, arrays or inline tables nested more than kMaxTomlNesting deep, a
// value more than kMaxTomlDepth levels down (header, keys and nesting
// together), or a key part missing ([.a], [a..b], a. = 1, [=]). Strings,
// comments and quoted keys are read as TOML reads them. Anything else that is
// not TOML is left for toml++ to report: the pass stops where valid TOML could
// not go on, and toml++ stops there too.
void prescan_toml(std::string_view text, const std::string& origin);

}  // namespace attn
