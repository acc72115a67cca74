// UAX #14 line breaking through libunibreak (Debian's libunibreak-dev).
#include "render/line_break.hpp"

#include <linebreak.h>

#include <cctype>
#include <mutex>

namespace attn {

namespace {

bool wide_at(std::string_view s, std::size_t start) {
  return wide_lead_byte(static_cast<unsigned char>(s[start]));
}

// The byte where the code point that ends at `last` (inclusive) starts.
std::size_t code_point_start(std::string_view s, std::size_t last) {
  while (last > 0 && (static_cast<unsigned char>(s[last]) & 0xC0) == 0x80) --last;
  return last;
}

// The space at `space` separates a number from the Chinese word it counts or
// orders (4 个值, 第 1 行, 提示 3 次), or 第 from its number (第 2.3 节): the
// two stay on one line.
bool counts_something(std::string_view s, std::size_t space) {
  if (s[space] != ' ' || space == 0 || space + 1 >= s.size()) return false;
  const bool digit_before = std::isdigit(static_cast<unsigned char>(s[space - 1]));
  const bool digit_after = std::isdigit(static_cast<unsigned char>(s[space + 1]));
  return (digit_before && wide_at(s, space + 1)) ||
         (digit_after && space >= 3 && s.substr(space - 3, 3) == "第");
}

}  // namespace

std::vector<std::size_t> line_break_offsets(std::string_view line) {
  static std::once_flag ready;
  std::call_once(ready, init_linebreak);
  std::vector<char> breaks(line.size());
  set_linebreaks_utf8(reinterpret_cast<const utf8_t*>(line.data()), line.size(), "zh",
                      breaks.data());
  std::vector<std::size_t> offsets;
  for (std::size_t i = 0; i + 1 < line.size(); ++i) {
    // UAX #14 keeps a space with a '/' or ')' after it (LB13, LB16); in the
    // tool's text a space before a path (`保存在 /tmp/a.toml`) may end a line.
    const bool after_space = line[i] == ' ' && line[i + 1] != ' ';
    if (breaks[i] != LINEBREAK_ALLOWBREAK && !after_space) continue;
    const bool narrow_before = !wide_at(line, code_point_start(line, i));
    const bool narrow_after = !wide_at(line, i + 1);
    if (narrow_before && narrow_after && line[i] != ' ') continue;
    if (counts_something(line, i)) continue;
    offsets.push_back(i + 1);
  }
  return offsets;
}

}  // namespace attn
