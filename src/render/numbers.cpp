// Number formatting and matrix summaries shared by every renderer.
#include "render/numbers.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cmath>

#include "render/render.hpp"

namespace attn {

std::string format_fixed(double value, int precision) {
  if (std::isnan(value)) return "nan";
  if (std::isinf(value)) return value < 0 ? "-inf" : "inf";
  // Huge values (a -1e9 fill, an overflowing score) in scientific notation,
  // so a table column is not hundreds of digits wide.
  if (std::abs(value) >= 1e9) return fmt::format("{:.{}e}", value, std::min(precision, 4));
  std::string s = fmt::format("{:.{}f}", value, precision);
  if (s.starts_with('-') && s.find_first_not_of("-0.") == std::string::npos) s.erase(0, 1);
  return s;
}

bool should_summarise(const arma::mat& M, Summary mode) {
  if (mode != Summary::automatic) return mode == Summary::on;
  return M.n_rows > kSummaryThreshold || M.n_cols > kSummaryThreshold;
}

std::vector<std::optional<std::size_t>> visible_indices(std::size_t count, bool summarised) {
  constexpr std::size_t kEdge = 3;
  std::vector<std::optional<std::size_t>> out;
  if (!summarised || count <= 2 * kEdge + 1) {
    for (std::size_t i = 0; i < count; ++i) out.push_back(i);
    return out;
  }
  for (std::size_t i = 0; i < kEdge; ++i) out.push_back(i);
  out.push_back(std::nullopt);
  for (std::size_t i = count - kEdge; i < count; ++i) out.push_back(i);
  return out;
}

MatrixStats matrix_stats(const arma::mat& M) {
  MatrixStats s;
  double sum = 0, sum_sq = 0;
  bool first = true;
  for (double v : M) {
    if (std::isnan(v)) {
      ++s.nan;
      continue;
    }
    if (std::isinf(v)) {
      ++(v < 0 ? s.neg_inf : s.pos_inf);
      continue;
    }
    if (first) s.min = s.max = v, first = false;
    s.min = std::min(s.min, v);
    s.max = std::max(s.max, v);
    sum += v;
    ++s.finite;
  }
  if (s.finite == 0) return s;
  s.mean = sum / static_cast<double>(s.finite);
  for (double v : M)
    if (std::isfinite(v)) sum_sq += (v - s.mean) * (v - s.mean);
  s.std = std::sqrt(sum_sq / static_cast<double>(s.finite));
  return s;
}

std::string format_stats(const MatrixStats& s, int precision) {
  std::string out =
      s.finite ? fmt::format("min {} · max {} · mean {} · std {}", format_fixed(s.min, precision),
                             format_fixed(s.max, precision), format_fixed(s.mean, precision),
                             format_fixed(s.std, precision))
               : std::string("no finite cells");
  if (s.neg_inf) out += fmt::format(" · {} cells -inf", s.neg_inf);
  if (s.pos_inf) out += fmt::format(" · {} cells inf", s.pos_inf);
  if (s.nan) out += fmt::format(" · {} cells nan", s.nan);
  return out;
}

namespace {

// The code point starting at text[i]: its length in bytes and its columns.
std::pair<std::size_t, std::size_t> code_point_at(const std::string& text, std::size_t i) {
  const unsigned char c = static_cast<unsigned char>(text[i]);
  const std::size_t len = c < 0x80 ? 1 : c < 0xE0 ? 2 : c < 0xF0 ? 3 : 4;
  // Three-byte sequences from U+1100 up are mostly wide (CJK, Hangul).
  return {len, (len >= 3 && c >= 0xE1 && c != 0xE2) ? 2 : 1};
}

}  // namespace

std::size_t display_width(const std::string& text) {
  std::size_t width = 0;
  for (std::size_t i = 0; i < text.size();) {
    const auto [len, columns] = code_point_at(text, i);
    width += columns;
    i += len;
  }
  return width;
}

std::string pad_left(const std::string& s, std::size_t width) {
  const std::size_t w = display_width(s);
  return w >= width ? s : std::string(width - w, ' ') + s;
}

std::string pad_right(const std::string& s, std::size_t width) {
  const std::size_t w = display_width(s);
  return w >= width ? s : s + std::string(width - w, ' ');
}

std::string clip_to_width(const std::string& text, std::size_t width) {
  if (display_width(text) <= width) return text;
  if (width == 0) return "";
  std::size_t used = 0, end = 0;
  while (end < text.size()) {
    const auto [len, columns] = code_point_at(text, end);
    if (used + columns > width - 1) break;  // one column for the ellipsis
    used += columns;
    end += len;
  }
  return text.substr(0, end) + "…";
}

namespace {

// The pieces of a word a line may end between. A word without wide
// characters is one piece. In Chinese a line may end after any character,
// but not before closing punctuation (，。）…) nor after opening (（“…), and
// a run of ASCII inside it (a number, a name) stays whole.
std::vector<std::string> break_pieces(const std::string& word) {
  static const std::string_view kClosing[] = {"，", "。", "、", "；", "：", "！", "？", "）",
                                              "」", "』", "】", "》", "”",  "’",  "…"};
  static const std::string_view kOpening[] = {"（", "「", "『", "【", "《", "“", "‘"};
  const auto is_one_of = [](std::string_view cp, const auto& set) {
    return std::find(std::begin(set), std::end(set), cp) != std::end(set);
  };
  std::vector<std::string> pieces;
  bool prev_wide = false, prev_opening = false;
  for (std::size_t at = 0; at < word.size();) {
    const auto [len, columns] = code_point_at(word, at);
    const std::string_view cp = std::string_view(word).substr(at, len);
    const bool wide = columns == 2;
    const bool closing = is_one_of(cp, kClosing) ||
                         (!wide && prev_wide && std::ispunct(static_cast<unsigned char>(cp[0])));
    const bool joins = !pieces.empty() && (closing || prev_opening || (!wide && !prev_wide));
    if (joins)
      pieces.back() += cp;
    else
      pieces.emplace_back(cp);
    prev_wide = wide;
    prev_opening = is_one_of(cp, kOpening);
    at += len;
  }
  return pieces;
}

// One line of text (no newline in it) wrapped onto `out`.
void wrap_line(std::string_view line, std::size_t width, std::string_view first,
               std::string_view rest, std::string& out) {
  std::string current(first);
  std::size_t start = display_width(current);  // where the current line's text begins
  std::size_t column = start;
  bool has_word = false;
  const auto finish = [&] {
    while (!current.empty() && current.back() == ' ') current.pop_back();
    out += current + "\n";
    current = std::string(rest);
    column = start = display_width(current);
    has_word = false;
  };
  std::size_t i = 0;
  for (; i < line.size() && line[i] == ' '; ++i, ++column) current += ' ';  // its own indent
  while (i < line.size()) {
    std::size_t spaces = 0;
    while (i + spaces < line.size() && line[i + spaces] == ' ') ++spaces;
    if (i + spaces == line.size()) break;  // trailing spaces
    const std::size_t end = std::min(line.find(' ', i + spaces), line.size());
    const std::vector<std::string> pieces =
        break_pieces(std::string(line.substr(i + spaces, end - i - spaces)));
    for (std::size_t k = 0; k < pieces.size(); ++k) {
      const std::size_t gap = k == 0 && has_word ? spaces : 0;
      if (has_word && column + gap + display_width(pieces[k]) > width)
        finish();
      else {
        current.append(gap, ' ');
        column += gap;
      }
      // A piece longer than the line is cut where the line ends.
      for (std::size_t at = 0; at < pieces[k].size();) {
        const auto [len, columns] = code_point_at(pieces[k], at);
        if (column + columns > width && column > start) finish();
        current.append(pieces[k], at, len);
        column += columns;
        at += len;
      }
      has_word = true;
    }
    i = end;
  }
  finish();
}

}  // namespace

std::string wrap_text(std::string_view text, std::size_t width, std::string_view first,
                      std::string_view rest) {
  std::string out;
  bool first_line = true;
  for (std::size_t start = 0;;) {
    const std::size_t end = text.find('\n', start);
    const std::string_view line =
        text.substr(start, end == std::string_view::npos ? std::string_view::npos : end - start);
    wrap_line(line, width, first_line ? first : rest, rest, out);
    first_line = false;
    if (end == std::string_view::npos) break;
    start = end + 1;
  }
  return out;
}

}  // namespace attn
