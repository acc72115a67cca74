// Number formatting and matrix summaries shared by every renderer.
#include "render/numbers.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cmath>

#include "core/i18n.hpp"
#include "render/line_break.hpp"
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
               : std::string(tr(N_("no finite cells")));
  if (s.neg_inf) out += tr_format(N_(" · {} cells -inf"), s.neg_inf);
  if (s.pos_inf) out += tr_format(N_(" · {} cells inf"), s.pos_inf);
  if (s.nan) out += tr_format(N_(" · {} cells nan"), s.nan);
  return out;
}

namespace {

// The code point starting at text[i]: its length in bytes and its columns.
std::pair<std::size_t, std::size_t> code_point_at(const std::string& text, std::size_t i) {
  const unsigned char c = static_cast<unsigned char>(text[i]);
  const std::size_t len = c < 0x80 ? 1 : c < 0xE0 ? 2 : c < 0xF0 ? 3 : 4;
  return {len, wide_lead_byte(c) ? 2 : 1};
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

// The text between two places a line may end (line_break_offsets): its own
// spaces at its end are kept apart, since a line ending after it drops them.
struct Piece {
  std::string_view text;   // without its trailing spaces
  std::size_t columns = 0;  // display width of `text`
  std::size_t spaces = 0;   // the spaces after it
  bool good_end = false;    // a line ending after it ends at a space or punctuation
};

// Within the last quarter of a full line, the line prefers to end after a
// space or punctuation, or between Chinese and Latin, to ending between two
// Chinese characters, which may be inside a word such as 宽度 (Chinese print
// allows that break; the terminal avoids it where it cheaply can).
constexpr std::size_t kPreferredSlackDivisor = 4;

bool wide_code_point(std::string_view s, std::size_t at) {
  return wide_lead_byte(static_cast<unsigned char>(s[at]));
}

std::vector<Piece> line_pieces(std::string_view line) {
  std::vector<Piece> pieces;
  std::size_t begin = 0;
  std::vector<std::size_t> ends = line_break_offsets(line);
  ends.push_back(line.size());
  for (const std::size_t end : ends) {
    std::size_t text_end = end;
    while (text_end > begin && line[text_end - 1] == ' ') --text_end;
    Piece p{line.substr(begin, text_end - begin), 0, end - text_end, false};
    p.columns = display_width(std::string(p.text));
    if (!p.text.empty()) {
      std::size_t last = p.text.size() - 1;
      while (last > 0 && (static_cast<unsigned char>(p.text[last]) & 0xC0) == 0x80) --last;
      const bool wide_last = wide_code_point(p.text, last);
      const bool punctuation_last =
          std::ispunct(static_cast<unsigned char>(p.text[last])) ||
          p.text.substr(last).starts_with("\xef\xbc") || p.text.substr(last).starts_with("\xe3\x80");
      const bool wide_next = end < line.size() && wide_code_point(line, end);
      p.good_end = p.spaces > 0 || punctuation_last || !wide_last || !wide_next;
    }
    pieces.push_back(p);
    begin = end;
  }
  return pieces;
}

// The piece after which a full line ends, when pieces[line_begin, next) are on
// it and pieces[next] does not fit: the last one, unless one a little before
// it ends at a space or punctuation (kPreferredSlackDivisor).
std::size_t line_end_piece(const std::vector<Piece>& pieces, std::size_t line_begin,
                           std::size_t next, std::size_t column, std::size_t start,
                           std::size_t width) {
  const std::size_t slack = (width > start ? width - start : 0) / kPreferredSlackDivisor;
  for (std::size_t k = next; k-- > line_begin;) {
    column -= pieces[k].spaces;
    if (column + slack < width) break;
    if (pieces[k].good_end) return k;
    column -= pieces[k].columns;
  }
  return next - 1;
}

// One line of text (no newline in it) wrapped onto `out`.
void wrap_line(std::string_view line, std::size_t width, std::string_view first,
               std::string_view rest, std::string& out) {
  std::size_t indent = 0;
  while (indent < line.size() && line[indent] == ' ') ++indent;  // its own indent
  std::string current = std::string(first) + std::string(line.substr(0, indent));
  const std::vector<Piece> pieces = line_pieces(line.substr(indent));
  std::size_t start = display_width(current), column = start, line_begin = 0;
  bool cut_text = false;  // `current` holds the end of a piece cut at a line's end
  const auto finish = [&](std::size_t end) {  // the line ends before pieces[end]
    for (std::size_t k = line_begin; k < end; ++k)
      current += std::string(pieces[k].text) + std::string(pieces[k].spaces, ' ');
    while (!current.empty() && current.back() == ' ') current.pop_back();
    out += current + "\n";
    current = std::string(rest);
    column = start = display_width(current);
    line_begin = end;
    cut_text = false;
  };
  for (std::size_t i = 0; i < pieces.size();) {
    const Piece& p = pieces[i];
    if (column + p.columns <= width) {
      column += p.columns + p.spaces;
      ++i;
    } else if (i > line_begin) {
      finish(line_end_piece(pieces, line_begin, i, column, start, width) + 1);
      for (std::size_t k = line_begin; k < i; ++k) column += pieces[k].columns + pieces[k].spaces;
    } else if (cut_text) {
      finish(i);
    } else {  // longer than a whole line: cut where each line ends
      for (std::size_t at = 0; at < p.text.size();) {
        const auto [len, columns] = code_point_at(std::string(p.text.substr(at, 4)), 0);
        if (column + columns > width && column > start) finish(i);
        current.append(p.text.substr(at, len));
        column += columns;
        at += len;
      }
      current.append(p.spaces, ' ');
      column += p.spaces;
      line_begin = ++i;
      cut_text = true;
    }
  }
  finish(pieces.size());
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
