// UAX #14 line breaking through libunibreak (Debian's libunibreak-dev).
#include "render/line_break.hpp"

#include <linebreak.h>

#include <mutex>

namespace attn {

namespace {

// A code point of three or more bytes from U+1100 up, as display_width counts
// wide characters (render/numbers.cpp).
bool wide_at(std::string_view s, std::size_t start) {
  const unsigned char c = static_cast<unsigned char>(s[start]);
  return c >= 0xE1 && c != 0xE2 && c < 0xF8;
}

// The byte where the code point that ends at `last` (inclusive) starts.
std::size_t code_point_start(std::string_view s, std::size_t last) {
  while (last > 0 && (static_cast<unsigned char>(s[last]) & 0xC0) == 0x80) --last;
  return last;
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
    if (breaks[i] != LINEBREAK_ALLOWBREAK) continue;
    const bool narrow_before = !wide_at(line, code_point_start(line, i));
    const bool narrow_after = !wide_at(line, i + 1);
    if (narrow_before && narrow_after && line[i] != ' ') continue;
    offsets.push_back(i + 1);
  }
  return offsets;
}

}  // namespace attn
