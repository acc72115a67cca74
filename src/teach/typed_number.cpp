// Reading a number as a person typed it: NFKC (full-width digits, signs and
// points), dashes as minus, a decimal comma; anything else is unreadable.
#include "teach/typed_number.hpp"

#include <charconv>
#include <cmath>
#include <cstdlib>
#include <memory>

#if __has_include(<utf8proc.h>)
#include <utf8proc.h>
#endif

#include "core/toml_read.hpp"
#include "render/escape.hpp"

namespace attn {

namespace {

#if __has_include(<utf8proc.h>)
// NFKC of `text`; false when it is not UTF-8.
bool nfkc(std::string_view text, std::string& out) {
  if (text.empty()) return out.clear(), true;
  utf8proc_uint8_t* mapped = nullptr;
  const utf8proc_ssize_t length = utf8proc_map(
      reinterpret_cast<const utf8proc_uint8_t*>(text.data()),
      static_cast<utf8proc_ssize_t>(text.size()), &mapped,
      static_cast<utf8proc_option_t>(UTF8PROC_STABLE | UTF8PROC_COMPOSE | UTF8PROC_COMPAT));
  const std::unique_ptr<utf8proc_uint8_t, decltype(&std::free)> owned(mapped, &std::free);
  if (length < 0) return false;
  out.assign(reinterpret_cast<const char*>(mapped), static_cast<std::size_t>(length));
  return true;
}
#else
// The WebAssembly engine has no utf8proc: what NFKC does to the characters
// of a typed number (full-width forms U+FF01–U+FF5E, the ideographic space,
// the small forms of , . + -, no-break spaces), the rest kept as it is.
bool nfkc(std::string_view text, std::string& out) {
  out.clear();
  for (std::size_t i = 0; i < text.size(); ++i) {
    const auto b = [&](std::size_t k) { return static_cast<unsigned char>(text[i + k]); };
    const bool three = i + 2 < text.size();
    if (three && b(0) == 0xEF && (b(1) == 0xBC || b(1) == 0xBD)) {
      const unsigned cp = 0xF000u | ((b(1) & 0x3Fu) << 6) | (b(2) & 0x3Fu);
      if (cp >= 0xFF01 && cp <= 0xFF5E) {
        out += static_cast<char>(cp - 0xFEE0), i += 2;
        continue;
      }
    }
    if (three && b(0) == 0xEF && b(1) == 0xB9 && b(2) >= 0x90 && b(2) <= 0xA3) {
      const char small[] = ",\x01.\x01;:?!\x01()\x01\x01\x01\x01#&*+-";  // U+FE50..U+FE63
      if (const char c = small[b(2) - 0x90]; c != '\x01') {
        out += c, i += 2;
        continue;
      }
    }
    if ((three && b(0) == 0xE3 && b(1) == 0x80 && b(2) == 0x80) ||
        (i + 1 < text.size() && b(0) == 0xC2 && b(1) == 0xA0)) {
      out += ' ', i += b(0) == 0xC2 ? 1 : 2;
      continue;
    }
    out += text[i];
  }
  return true;
}
#endif

// What was mended, for the note.
struct Mended {
  bool compat = false, dash = false, comma = false, ideographic_point = false;
};

// Dashes (U+2010–U+2015, U+2212 minus) as '-', U+3002 (。) as '.'.
std::string ascii_signs(std::string_view text, Mended& mended) {
  std::string out;
  for (std::size_t i = 0; i < text.size();) {
    const auto b = [&](std::size_t k) { return static_cast<unsigned char>(text[i + k]); };
    if (i + 2 < text.size() && b(0) == 0xE2 && b(1) == 0x80 && b(2) >= 0x90 && b(2) <= 0x95) {
      out += '-', i += 3, mended.dash = true;
    } else if (i + 2 < text.size() && b(0) == 0xE2 && b(1) == 0x88 && b(2) == 0x92) {
      out += '-', i += 3, mended.dash = true;
    } else if (i + 2 < text.size() && b(0) == 0xE3 && b(1) == 0x80 && b(2) == 0x82) {
      out += '.', i += 3, mended.ideographic_point = true;
    } else {
      out += text[i++];
    }
  }
  return out;
}

std::string_view trimmed(std::string_view s) {
  const auto space = [](char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n'; };
  while (!s.empty() && space(s.front())) s.remove_prefix(1);
  while (!s.empty() && space(s.back())) s.remove_suffix(1);
  return s;
}

bool digit(char c) {
  return c >= '0' && c <= '9';
}

// The length of the longest prefix of `s` that is a number:
// [+-]? (digits [. digits?] | . digits) ([eE] [+-]? digits)?
std::size_t number_prefix(std::string_view s) {
  std::size_t i = 0;
  if (i < s.size() && (s[i] == '+' || s[i] == '-')) ++i;
  std::size_t digits = 0;
  while (i < s.size() && digit(s[i])) ++i, ++digits;
  if (i < s.size() && s[i] == '.') {
    ++i;
    while (i < s.size() && digit(s[i])) ++i, ++digits;
  }
  if (digits == 0) return 0;
  if (i < s.size() && (s[i] == 'e' || s[i] == 'E')) {
    std::size_t j = i + 1;
    if (j < s.size() && (s[j] == '+' || s[j] == '-')) ++j;
    const std::size_t start = j;
    while (j < s.size() && digit(s[j])) ++j;
    if (j > start) i = j;
  }
  return i;
}

Message unreadable_reason(std::string_view original, std::string_view text) {
  const std::size_t prefix = number_prefix(text);
  const std::string shown = shown_cell(original);
  if (prefix > 0) {
    const std::string_view rest = trimmed(text.substr(prefix));
    if (number_prefix(rest) > 0 ||
        (rest.size() > 1 && rest[0] == ',' && number_prefix(rest.substr(1))))
      return Message(N_("\"{}\" holds two numbers; write one number per cell"), {shown});
    return Message(N_("\"{}\" has \"{}\" after the number; write the number alone, such as {}"),
                   {shown, shown_cell(rest), std::string(text.substr(0, prefix))});
  }
  return Message(N_("\"{}\" is not a number; write a number such as 0.250"), {shown});
}

Message mended_note(std::string_view original, const std::string& text, const Mended& m) {
  std::vector<Message> why;
  if (m.dash) why.emplace_back(N_("a dash read as the minus sign"));
  if (m.compat) why.emplace_back(N_("full-width characters read as ASCII"));
  if (m.comma) why.emplace_back(N_("a decimal comma read as a point"));
  if (m.ideographic_point) why.emplace_back(N_("an ideographic full stop read as a point"));
  static const char* const formats[] = {
      N_("read \"{}\" as {}: {}"), N_("read \"{}\" as {}: {}; {}"),
      N_("read \"{}\" as {}: {}; {}; {}"), N_("read \"{}\" as {}: {}; {}; {}; {}")};
  const char* format = formats[why.size() - 1];  // before `why` is moved
  return Message(format, {shown_cell(original), text}, std::move(why));
}

// One comma between digits, and no point: a decimal comma ("0,042").
bool decimal_comma(std::string& text) {
  const std::size_t at = text.find(',');
  if (at == std::string::npos || text.find(',', at + 1) != std::string::npos ||
      text.find('.') != std::string::npos || at == 0 || at + 1 >= text.size() ||
      !digit(text[at - 1]) || !digit(text[at + 1]))
    return false;
  text[at] = '.';
  return true;
}

}  // namespace

std::string shown_cell(std::string_view cell) {
  std::string out;
  std::size_t count = 0;
  for (std::size_t i = 0; i < cell.size() && count < 40; ++count) {
    std::size_t next = i + 1;
    while (next < cell.size() && (static_cast<unsigned char>(cell[next]) & 0xC0) == 0x80) ++next;
    out.append(cell.substr(i, next - i));
    i = next;
    if (count + 1 == 40 && i < cell.size()) out += "…";
  }
  return show_controls(out);
}

Message decimal_comma_note(const std::string& cell) {
  std::string pointed = cell;
  pointed[pointed.find(',')] = '.';
  return Message(N_("read {} as {}: a decimal comma outside quotes; quote it (\"{}\") or write a "
                    "decimal point ({})"),
                 {cell, pointed, cell, pointed});
}

TypedNumber read_typed_number(std::string_view cell) {
  TypedNumber out;
  Mended mended;
  std::string text;
  if (!nfkc(cell, text)) {
    out.kind = TypedNumber::Kind::unreadable;
    out.note = Message(N_("the cell is not UTF-8 text; type the number again"));
    return out;
  }
  mended.compat = trimmed(text) != trimmed(cell);
  text = std::string(trimmed(ascii_signs(text, mended)));
  if (text.empty()) return out;
  if (text == "-inf" || text == "inf" || text == "nan") {
    out.kind = TypedNumber::Kind::special;
    out.text = text;
    return out;
  }
  mended.comma = decimal_comma(text);
  if (number_prefix(text) != text.size()) {
    out.kind = TypedNumber::Kind::unreadable;
    out.note = unreadable_reason(cell, text);
    return out;
  }
  // strtod, as the strict reader (core/toml_read.cpp): the WebAssembly build's
  // C++ library has no std::from_chars for double. The text is all number here.
  const std::string digits(text);
  char* end = nullptr;
  const double value = std::strtod(digits.c_str(), &end);
  if (end != digits.c_str() + digits.size() || !std::isfinite(value)) {
    out.kind = TypedNumber::Kind::unreadable;
    out.note = Message(N_("\"{}\" is too large a number; check the cell"), {shown_cell(cell)});
    return out;
  }
  out.number = {value, decimals_written(text)};
  out.text = text;
  const bool mends = mended.compat || mended.dash || mended.comma || mended.ideographic_point;
  out.kind = mends ? TypedNumber::Kind::normalised : TypedNumber::Kind::plain;
  if (mends) out.note = mended_note(cell, text, mended);
  return out;
}

namespace {

// The top-level pieces of `s` between commas outside quotes and brackets, as
// written (spaces kept: a piece that ends and the next that starts with a
// digit were joined by a digit,digit comma).
std::vector<std::string> split_commas(std::string_view s) {
  std::vector<std::string> out;
  std::string piece;
  char quote = 0;
  int depth = 0;
  for (char c : s) {
    if (quote) {
      if (c == quote) quote = 0;
    } else if (c == '"' || c == '\'') {
      quote = c;
    } else if (c == '[') {
      ++depth;
    } else if (c == ']') {
      --depth;
    } else if (c == ',' && depth == 0) {
      out.push_back(piece);
      piece.clear();
      continue;
    }
    piece += c;
  }
  out.push_back(piece);
  if (out.size() > 1 && trimmed(out.back()).empty()) out.pop_back();  // a trailing comma
  return out;
}

// The text inside the outer brackets of `s` ("[1, 2]" -> "1, 2"); `s` itself without them.
std::string_view inside_brackets(std::string_view s) {
  s = trimmed(s);
  if (s.size() >= 2 && s.front() == '[' && s.back() == ']') return s.substr(1, s.size() - 2);
  return s;
}

// A token as its cell text: the quotes of "0,5" or '0,5' taken off.
std::string_view unquoted(std::string_view token) {
  if (token.size() >= 2 && (token.front() == '"' || token.front() == '\'') &&
      token.back() == token.front())
    return token.substr(1, token.size() - 2);
  return token;
}

}  // namespace

// The cell's number, its reading recorded when it is not plain.
WrittenNumber read_typed_cell(std::string_view token, std::size_t r, std::size_t c,
                              std::vector<CellReading>& readings) {
  const TypedNumber t = read_typed_number(unquoted(token));
  switch (t.kind) {
    case TypedNumber::Kind::blank:
      return {std::nan(""), 0, true};
    case TypedNumber::Kind::plain:
      return t.number;
    case TypedNumber::Kind::normalised:
      readings.push_back({r, c, false, t.note, {}});
      return t.number;
    case TypedNumber::Kind::special:
      return {t.text == "-inf" ? -HUGE_VAL : t.text == "inf" ? HUGE_VAL : std::nan(""), 0};
    case TypedNumber::Kind::unreadable:
      break;
  }
  readings.push_back({r, c, true, t.note, std::string(token)});
  WrittenNumber out{std::nan(""), 0};
  out.unreadable = true;
  return out;
}

RawRows split_raw_rows(std::string_view raw) {
  RawRows out;
  const std::string_view body = inside_brackets(raw);
  const std::string_view first = trimmed(body);
  out.nested = !first.empty() && first.front() == '[';
  const bool bare = trimmed(raw).empty() || trimmed(raw).front() != '[';
  if (out.nested) {
    for (const std::string& row : split_commas(body)) {
      out.row_text.emplace_back(trimmed(row));
      out.rows.push_back(split_commas(inside_brackets(row)));
    }
  } else {
    out.row_text.emplace_back(trimmed(raw));
    out.rows.push_back(split_commas(bare ? trimmed(raw) : body));
  }
  return out;
}

std::vector<WrittenNumber> read_raw_row(const std::vector<std::string>& tokens,
                                        const std::string& row_text, std::size_t cols,
                                        std::size_t r, std::vector<CellReading>& readings) {
  // Trimmed; with too many, each digit,digit pair joined ("0", "042" -> "0,042"):
  // the piece before ends, as written, with a digit and this one starts with one.
  std::vector<std::string> cells;
  for (std::size_t k = 0; k < tokens.size(); ++k) {
    const bool tight = tokens.size() > cols && k > 0 && !cells.empty() && !tokens[k].empty() &&
                       digit(tokens[k].front()) && !tokens[k - 1].empty() &&
                       digit(tokens[k - 1].back());
    if (tight)
      cells.back() += "," + std::string(trimmed(tokens[k]));
    else
      cells.emplace_back(trimmed(tokens[k]));
  }
  std::vector<WrittenNumber> out;
  if (cells.size() != cols) {
    const Message why(N_("{} values in \"{}\" for {} cells: a decimal comma outside quotes "
                         "splits a number in two; quote each number (\"0,042\") or write a "
                         "decimal point (0.042)"),
                      {std::to_string(tokens.size()), shown_cell(row_text), std::to_string(cols)});
    for (std::size_t c = 0; c < cols; ++c) {
      readings.push_back({r, c, true, why, std::string(row_text)});
      out.push_back({std::nan(""), 0});
      out.back().unreadable = true;
    }
    return out;
  }
  for (std::size_t c = 0; c < cols; ++c) {
    out.push_back(read_typed_cell(cells[c], r, c, readings));
    const bool joined = tokens.size() > cols && cells[c].find(',') != std::string::npos &&
                        cells[c].front() != '"' && cells[c].front() != '\'';
    if (joined && !readings.empty() && readings.back().r == r && readings.back().c == c &&
        !readings.back().unreadable) {
      readings.back().note = decimal_comma_note(cells[c]);
    }
  }
  return out;
}

namespace {

// Where the value ends on a line: before a comment outside quotes (and a CR).
std::size_t value_end(std::string_view line) {
  char quote = 0;
  for (std::size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    if (quote) {
      if (c == quote) quote = 0;
    } else if (c == '"' || c == '\'') {
      quote = c;
    } else if (c == '#') {
      return i;
    }
  }
  return line.ends_with('\r') ? line.size() - 1 : line.size();
}

// Bracket depth of `s` outside quotes, and whether it has digit,digit outside quotes.
std::pair<int, bool> scan_value(std::string_view s) {
  char quote = 0;
  int depth = 0;
  bool tight = false;
  for (std::size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    if (quote) {
      if (c == quote) quote = 0;
    } else if (c == '"' || c == '\'') {
      quote = c;
    } else {
      depth += c == '[' ? 1 : c == ']' ? -1 : 0;
      tight =
          tight || (c == ',' && i > 0 && i + 1 < s.size() && digit(s[i - 1]) && digit(s[i + 1]));
    }
  }
  return {depth, tight};
}

// The byte after `value =` / `values =` at the start of `line`, or npos.
std::size_t value_start(std::string_view line) {
  const std::size_t i = line.find_first_not_of(" \t");
  if (i == std::string_view::npos) return i;
  for (std::string_view key : {"values", "value"})
    if (line.substr(i, key.size()) == key) {
      const std::size_t j = line.find_first_not_of(" \t", i + key.size());
      if (j != std::string_view::npos && line[j] == '=') return j + 1;
      return std::string_view::npos;
    }
  return std::string_view::npos;
}

std::vector<std::string_view> physical_lines(std::string_view text) {
  std::vector<std::string_view> out;
  while (true) {
    const std::size_t end = text.find('\n');
    out.push_back(text.substr(0, end));
    if (end == std::string_view::npos) return out;
    text.remove_prefix(end + 1);
  }
}

}  // namespace

std::string quote_decimal_comma_values(std::string_view text, std::vector<int>& raw_lines) {
  if (text.find("\"\"\"") != std::string_view::npos || text.find("'''") != std::string_view::npos)
    return std::string(text);  // multi-line strings: left to TOML
  const std::vector<std::string_view> lines = physical_lines(text);
  std::vector<std::string> out(lines.begin(), lines.end());
  constexpr std::size_t kMaxValueLines = 1000;
  for (std::size_t i = 0; i < lines.size(); ++i) {
    const std::size_t start = value_start(lines[i]);
    if (start == std::string_view::npos || start > value_end(lines[i])) continue;
    std::vector<std::string> parts{
        std::string(lines[i].substr(start, value_end(lines[i]) - start))};
    // Line by line (a TOML string does not span lines, nor does digit,digit):
    // each line scanned once, whatever the file.
    auto [depth, tight] = scan_value(parts[0]);
    std::size_t last = i;
    while (depth > 0 && last + 1 < lines.size() && last - i < kMaxValueLines) {
      ++last;
      parts.emplace_back(lines[last].substr(0, value_end(lines[last])));
      const auto [more, tight_here] = scan_value(parts.back());
      depth += more, tight = tight || tight_here;
    }
    if (!tight) {
      i = last;
      continue;
    }
    for (std::size_t k = 0; k < parts.size(); ++k) {
      const bool cr = lines[i + k].ends_with('\r');
      out[i + k] = (k == 0 ? std::string(lines[i].substr(0, start)) + " '''" : "") + parts[k] +
                   (i + k == last ? "'''" : "") + (cr ? "\r" : "");
    }
    raw_lines.push_back(static_cast<int>(i + 1));
    i = last;
  }
  std::string result;
  for (std::size_t i = 0; i < out.size(); ++i) result += (i ? "\n" : "") + out[i];
  return result;
}

}  // namespace attn
