// Escaping text for LaTeX, Markdown, XML and CSV.
#include "render/escape.hpp"

#include <fmt/format.h>

#include <cstdint>

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

// Shared by tex_text and tex_text_unicode: `keep_unicode` keeps a character
// without a LaTeX spelling as UTF-8 instead of naming it [U+XXXX].
std::string escape_tex(std::string_view s, bool keep_unicode) {
  std::string out;
  for (std::size_t i = 0; i < s.size();) {
    const std::size_t start = i;
    const char32_t cp = next_code_point(s, i);
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
        if (const char* symbol = tex_symbol(cp); symbol && !(keep_unicode && is_greek(cp)))
          out += symbol;
        else if (cp >= U'₀' && cp <= U'₉')
          out += fmt::format("$_{}$", static_cast<char>('0' + (cp - U'₀')));
        else if (keep_unicode || cp < 0x80 ||
                 (cp >= 0xC0 && cp <= 0xFF && cp != 0xD7 && cp != 0xF7))
          out += s.substr(start, i - start);
        else
          out += fmt::format("[U+{:04X}]", static_cast<std::uint32_t>(cp));
    }
  }
  return out;
}

}  // namespace

std::string tex_text(std::string_view s) {
  return escape_tex(s, false);
}

std::string tex_text_unicode(std::string_view s) {
  return escape_tex(s, true);
}

std::string md_text(std::string_view s) {
  std::string out;
  for (char c : s) {
    if (std::string_view("\\`*_{}[]<>#|!").find(c) != std::string_view::npos) out += '\\';
    out += c;
  }
  return out;
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
        out += c;
    }
  }
  return out;
}

std::string xml_cdata(std::string_view s) {
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

std::string csv_field(std::string_view s) {
  const bool quote = s.find_first_of(",\"\r\n") != std::string_view::npos ||
                     (!s.empty() && (s.front() == ' ' || s.back() == ' '));
  if (!quote) return std::string(s);
  std::string out = "\"";
  for (char c : s) out += c == '"' ? std::string("\"\"") : std::string(1, c);
  return out + "\"";
}

}  // namespace attn
