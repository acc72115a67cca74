// Escaping text for LaTeX, Markdown, XML and CSV, and control characters made visible.
#include "render/escape.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include "render/line_break.hpp"

namespace attn {

namespace {

// The code point of the UTF-8 sequence at s[i] (advancing i); 0xFFFD when malformed.
char32_t next_code_point(std::string_view s, std::size_t& i) {
  const unsigned char lead = static_cast<unsigned char>(s[i]);
  const std::size_t length = lead < 0x80 ? 1 : lead < 0xE0 ? 2 : lead < 0xF0 ? 3 : 4;
  if (i + length > s.size()) {
    i = s.size();
    return 0xFFFD;
  }
  char32_t cp = length == 1 ? lead : lead & (0x7F >> length);
  for (std::size_t k = 1; k < length; ++k)
    cp = (cp << 6) | (static_cast<unsigned char>(s[i + k]) & 0x3F);
  i += length;
  return cp;
}

bool is_control(char32_t c) {
  return c < 0x20 || c == 0x7F;
}

// The Unicode control picture of a C0 control character or DEL: U+2400 + c
// (␀ … ␟, ␊ for a newline, ␉ for a tab), U+2421 (␡) for DEL; three bytes of UTF-8.
std::string control_picture(unsigned char c) {
  const unsigned char last = c == 0x7F ? 0xA1 : static_cast<unsigned char>(0x80 + c);
  return std::string{'\xE2', '\x90', static_cast<char>(last)};
}

// The trace's symbols in LaTeX math, or nullptr.
const char* tex_symbol(char32_t cp) {
  switch (cp) {
    case U'√':
      return "$\\surd$";
    case U'·':
      return "$\\cdot$";
    case U'×':
      return "$\\times$";
    case U'→':
      return "$\\to$";
    case U'≈':
      return "$\\approx$";
    case U'ᵀ':
      return "$^\\top$";
    case U'−':
      return "$-$";
    case U'…':
      return "\\ldots{}";
    case U'⋮':
      return "$\\vdots$";
    case U'Σ':
      return "$\\Sigma$";
    case U'α':
      return "$\\alpha$";
    case U'β':
      return "$\\beta$";
    case U'γ':
      return "$\\gamma$";
    case U'ε':
      return "$\\varepsilon$";
    case U'μ':
      return "$\\mu$";
    case U'Φ':
      return "$\\Phi$";
    case U'⊙':
      return "$\\odot$";
    case U'π':
      return "$\\pi$";
    case U'σ':
      return "$\\sigma$";
    case U'—':
      return "---";
    case U'–':
      return "--";
    case U'“':
      return "``";
    case U'”':
      return "''";
    case U'’':
      return "'";
    default:
      return nullptr;
  }
}

// A Greek letter: tex_symbol writes it as math; in a name it stays a letter.
bool is_greek(char32_t cp) {
  return cp >= 0x0370 && cp <= 0x03FF;
}

// One character `cp` (its UTF-8 `bytes`) in LaTeX's text mode onto `out`:
// `keep_unicode` keeps a character without a LaTeX spelling as UTF-8 instead
// of naming it [U+XXXX].
void append_tex(std::string& out, char32_t cp, std::string_view bytes, bool keep_unicode) {
  switch (cp) {
    case '\\':
      out += "\\textbackslash{}";
      break;
    case '{':
    case '}':
    case '$':
    case '&':
    case '#':
    case '_':
    case '%':
      out += '\\';
      out += static_cast<char>(cp);
      break;
    case '^':
      out += "\\^{}";
      break;
    case '~':
      out += "\\~{}";
      break;
    case '<':
      out += "\\textless{}";
      break;
    case '>':
      out += "\\textgreater{}";
      break;
    case '|':
      out += "\\textbar{}";
      break;
    case '"':  // LuaLaTeX's TeX ligatures would print ” for both: keep the typed quotes
    case '\'':
      if (keep_unicode)
        out += cp == '"' ? "\\textquotedbl{}" : "\\textquotesingle{}";
      else
        out += static_cast<char>(cp);
      break;
    default:
      if (is_control(cp))  // no font has the control pictures: named by code point
        out += fmt::format("[U+{:04X}]", static_cast<std::uint32_t>(cp));
      else if (const char* symbol = tex_symbol(cp); symbol && !(keep_unicode && is_greek(cp)))
        out += symbol;
      else if (cp >= U'₀' && cp <= U'₉')
        out += fmt::format("$_{}$", static_cast<char>('0' + (cp - U'₀')));
      else if (keep_unicode || cp < 0x80 ||
               (cp >= 0xC0 && cp <= 0xFF && cp != 0xD7 && cp != 0xF7))
        out += bytes;
      else
        out += fmt::format("[U+{:04X}]", static_cast<std::uint32_t>(cp));
  }
}

// Shared by tex_text, tex_text_unicode and the tex_*_in pair: `break_glue` marks
// where Chinese may break (text mode only).
std::string escape_tex(std::string_view s, bool keep_unicode, bool break_glue) {
  std::string out;
  // TeX breaks a line only at glue: between two Chinese characters there is
  // none, so a Chinese sentence would run past the margin. Where Unicode's
  // line breaking allows a break next to a wide character (line_break_offsets),
  // a glue of no width that may stretch a little marks it.
  const bool chinese = break_glue && std::any_of(s.begin(), s.end(), [](char c) {
                         return wide_lead_byte(static_cast<unsigned char>(c));
                       });
  const std::vector<std::size_t> breaks = chinese ? line_break_offsets(s) : std::vector<std::size_t>{};
  std::size_t next_break = 0;
  for (std::size_t i = 0; i < s.size();) {
    const std::size_t start = i;
    const char32_t cp = next_code_point(s, i);
    while (next_break < breaks.size() && breaks[next_break] < start) ++next_break;
    if (next_break < breaks.size() && breaks[next_break] == start && start > 0 &&
        s[start - 1] != ' ' && cp != ' ')
      out += "\\hspace{0pt plus 0.1em}";
    append_tex(out, cp, s.substr(start, i - start), keep_unicode);
  }
  return out;
}

}  // namespace

std::string tex_text(std::string_view s) {
  return escape_tex(s, false, false);
}

std::string tex_text_unicode(std::string_view s) {
  return escape_tex(s, true, true);
}

std::string tex_text_in(Language lang, std::string_view s) {
  return escape_tex(s, lang == Language::zh, lang == Language::zh);
}

std::string tex_math_text_in(Language lang, std::string_view s) {
  return escape_tex(s, lang == Language::zh, false);
}

namespace {

// The length of the well-formed UTF-8 sequence at s[i] and its code point, or
// 0 when the bytes there are not one (a stray continuation byte, a truncated
// or overlong sequence, a surrogate, above U+10FFFF).
std::size_t utf8_sequence(std::string_view s, std::size_t i, char32_t& cp) {
  const unsigned char lead = static_cast<unsigned char>(s[i]);
  const std::size_t length = lead < 0x80   ? 1
                             : lead < 0xC2 ? 0
                             : lead < 0xE0 ? 2
                             : lead < 0xF0 ? 3
                             : lead < 0xF5 ? 4
                                           : 0;
  if (length == 0 || i + length > s.size()) return 0;
  cp = length == 1 ? lead : lead & (0x7F >> length);
  for (std::size_t k = 1; k < length; ++k) {
    const unsigned char next = static_cast<unsigned char>(s[i + k]);
    if ((next & 0xC0) != 0x80) return 0;
    cp = (cp << 6) | (next & 0x3F);
  }
  constexpr char32_t kSmallest[] = {0, 0, 0x80, 0x800, 0x10000};
  if (cp < kSmallest[length] || (cp >= 0xD800 && cp <= 0xDFFF) || cp > 0x10FFFF) return 0;
  return length;
}

// Code points a terminal acts on or shows as nothing: the C1 controls (U+009B
// starts an escape sequence on some terminals), the bidirectional controls
// (U+202E turns the rest of a line around), and the invisible separators and
// marks (U+200B, U+2060, U+FEFF) that make two different texts look equal.
// Joiners (U+200C, U+200D) are left alone: scripts and emoji need them.
bool is_hidden_format(char32_t cp) {
  return (cp >= 0x80 && cp <= 0x9F) || cp == 0x061C || cp == 0x200B || cp == 0x200E ||
         cp == 0x200F || (cp >= 0x202A && cp <= 0x202E) || cp == 0x2060 ||
         (cp >= 0x2066 && cp <= 0x2069) || cp == 0xFEFF;
}

}  // namespace

std::string show_controls(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (std::size_t i = 0; i < s.size();) {
    char32_t cp = 0;
    const std::size_t length = utf8_sequence(s, i, cp);
    if (length == 0)
      out += fmt::format("<0x{:02X}>", static_cast<unsigned char>(s[i]));
    else if (is_control(cp))
      out += control_picture(static_cast<unsigned char>(cp));
    else if (is_hidden_format(cp))
      out += fmt::format("<U+{:04X}>", static_cast<std::uint32_t>(cp));
    else
      out += s.substr(i, length);
    i += length == 0 ? 1 : length;
  }
  return out;
}

std::string show_controls_by_line(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (std::size_t start = 0; start < s.size();) {
    const std::size_t end = std::min(s.find('\n', start), s.size());
    out += show_controls(s.substr(start, end - start));
    if (end < s.size()) out += '\n';
    start = end + 1;
  }
  return out;
}

std::vector<std::string_view> text_lines(std::string_view s) {
  std::vector<std::string_view> lines;
  for (std::size_t end = s.find('\n'); !s.empty(); end = s.find('\n')) {
    std::string_view line = s.substr(0, end);
    if (line.ends_with('\r')) line.remove_suffix(1);
    lines.push_back(line);
    s.remove_prefix(end == std::string_view::npos ? s.size() : end + 1);
  }
  return lines;
}

std::string md_text(std::string_view s) {
  std::string out;
  for (char c : s) {
    if (const auto byte = static_cast<unsigned char>(c); is_control(byte)) {
      out += control_picture(byte);
      continue;
    }
    if (std::string_view("\\`*_{}[]<>#|!$&~").find(c) != std::string_view::npos) out += '\\';
    out += c;
  }
  return out;
}

std::string md_code(std::string_view s) {
  const std::string text = show_controls(s);
  std::size_t longest = 0;  // the longest run of backticks inside
  for (std::size_t i = 0, run = 0; i < text.size(); ++i) {
    run = text[i] == '`' ? run + 1 : 0;
    longest = std::max(longest, run);
  }
  const std::string fence(longest + 1, '`');
  const bool pad = !text.empty() && (text.front() == '`' || text.back() == '`' ||
                                     (text.front() == ' ' && text.back() == ' '));
  const char* space = pad ? " " : "";
  return fence + space + text + space + fence;
}

std::string xml_text(std::string_view s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        if (const auto byte = static_cast<unsigned char>(c); is_control(byte))
          out += control_picture(byte);
        else
          out += c;
    }
  }
  return out;
}

std::string xml_cdata(std::string_view text) {
  // XML 1.0 has no control characters but tab, line feed and carriage return.
  std::string shown;
  for (char c : text)
    if (const auto byte = static_cast<unsigned char>(c);
        is_control(byte) && c != '\t' && c != '\n' && c != '\r')
      shown += control_picture(byte);
    else
      shown += c;
  std::string_view s = shown;
  constexpr std::string_view kEnd = "]]>";
  std::string out = "<![CDATA[";
  for (std::size_t pos = s.find(kEnd); pos != std::string_view::npos; pos = s.find(kEnd)) {
    out += s.substr(0, pos + 2);  // "...]]" stays in this section,
    out += "]]><![CDATA[";        // ">" opens the next one
    s.remove_prefix(pos + 2);
  }
  out += s;
  return out + "]]>";
}

namespace {

// Whether all of `s` is one double as std::from_chars reads it (the general
// format: an optional '-', then digits with an optional point and exponent, or
// inf, infinity, nan, nan(...)), within range: neither infinity nor zero from
// a number that is neither. Read with strtod, because emscripten's libc++ has
// no floating-point from_chars (the page's engine, cmake/wasm.cmake); the
// program never calls setlocale, so strtod's point is the "C" locale's "."
// as from_chars's. What strtod reads and from_chars does not (leading spaces,
// a '+', hexadecimal) is refused first; tests/render/test_escape.cpp compares
// the two on the cases where they could differ.
bool is_whole_number(std::string_view s) {
  const std::string_view body = s.substr(!s.empty() && s.front() == '-' ? 1 : 0);
  const auto digit = [](char c) { return c >= '0' && c <= '9'; };
  if (body.empty() || !(digit(body.front()) || body.front() == '.' ||
                        std::string_view("iInN").find(body.front()) != std::string_view::npos))
    return false;
  if (body.size() > 1 && body[0] == '0' && (body[1] == 'x' || body[1] == 'X')) return false;
  const std::string text(s);
  char* end = nullptr;
  const double number = std::strtod(text.c_str(), &end);
  if (end != text.c_str() + text.size()) return false;
  if (!digit(body.front()) && body.front() != '.') return true;  // inf, nan
  const std::string_view mantissa = body.substr(0, body.find_first_of("eE"));
  const bool nonzero = mantissa.find_first_of("123456789") != std::string_view::npos;
  return std::isfinite(number) && (number != 0 || !nonzero);
}

// Whether a spreadsheet would read `s` as a formula: its first character
// starts one, and it is not simply a number ("-0.5", "+3").
bool looks_like_formula(std::string_view s) {
  if (s.empty() || std::string_view("=+-@\t\r").find(s.front()) == std::string_view::npos)
    return false;
  return !is_whole_number(s.substr(s.front() == '+' ? 1 : 0));
}

}  // namespace

std::string csv_value(std::string_view field) {
  if (field.size() > 1 && field.front() == '\'' && looks_like_formula(field.substr(1)))
    field.remove_prefix(1);
  return std::string(field);
}

std::string csv_field(std::string_view text) {
  const std::string guarded =
      looks_like_formula(text) ? "'" + std::string(text) : std::string(text);
  const std::string_view s = guarded;
  const bool quote = s.find_first_of(",\"\r\n") != std::string_view::npos ||
                     (!s.empty() && (s.front() == ' ' || s.back() == ' '));
  if (!quote) return std::string(s);
  std::string out = "\"";
  for (char c : s) out += c == '"' ? std::string("\"\"") : std::string(1, c);
  return out + "\"";
}

}  // namespace attn
