// The pass of toml_prescan.hpp: a small state machine over TOML's lexical
// structure (strings, comments, keys, brackets), each byte looked at once.
#include "core/toml_prescan.hpp"

#include <algorithm>
#include <vector>

#include "core/error.hpp"
#include "core/i18n.hpp"

namespace attn {

namespace {

bool is_bare_key_char(char c) {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' ||
         c == '-';
}

// A byte that ends a bare value (a number, a boolean, a date): what may follow
// a value, or what begins something else.
bool ends_bare_value(char c) {
  switch (c) {
    case ' ':
    case '\t':
    case '\r':
    case '\n':
    case ',':
    case ']':
    case '}':
    case '#':
    case '"':
    case '\'':
    case '[':
    case '{':
    case '=':
      return true;
    default:
      return false;
  }
}

// TOML's scalars, as its ABNF writes them: toml++ asserts on the shape of
// some malformed ones (a date with one digit of time, 1979-05-27T~07), so a bare
// value reaches it only when it is one of these.
bool is_decimal(char c) {
  return c >= '0' && c <= '9';
}
bool is_hex(char c) {
  return is_decimal(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}
bool is_octal(char c) {
  return c >= '0' && c <= '7';
}
bool is_binary(char c) {
  return c == '0' || c == '1';
}

// Digits of `is`, with single underscores between two of them ("1_000").
bool digit_groups(std::string_view s, bool (*is)(char)) {
  if (s.empty() || !is(s.front()) || !is(s.back())) return false;
  for (std::size_t i = 1; i + 1 < s.size(); ++i)
    if (s[i] == '_' ? !is(s[i + 1]) : !is(s[i])) return false;
  return true;
}

std::string_view without_sign(std::string_view s) {
  return !s.empty() && (s[0] == '+' || s[0] == '-') ? s.substr(1) : s;
}

// 0, or digits not starting with 0.
bool unsigned_integer(std::string_view s) {
  return digit_groups(s, is_decimal) && (s.size() == 1 || s[0] != '0');
}

bool is_integer(std::string_view s) {
  if (s.size() > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'o' || s[1] == 'b'))
    return digit_groups(s.substr(2), s[1] == 'x' ? is_hex : s[1] == 'o' ? is_octal : is_binary);
  return unsigned_integer(without_sign(s));
}

bool is_float(std::string_view s) {
  s = without_sign(s);
  if (s == "inf" || s == "nan") return true;
  const std::size_t e = s.find_first_of("eE");
  const std::string_view mantissa = s.substr(0, e);
  const std::size_t dot = mantissa.find('.');
  if (!unsigned_integer(mantissa.substr(0, dot))) return false;
  if (dot != std::string_view::npos && !digit_groups(mantissa.substr(dot + 1), is_decimal))
    return false;
  if (e != std::string_view::npos && !digit_groups(without_sign(s.substr(e + 1)), is_decimal))
    return false;
  return dot != std::string_view::npos || e != std::string_view::npos;
}

// `pattern` with 'D' for a digit: "DDDD-DD-DD".
bool shaped(std::string_view s, std::string_view pattern) {
  if (s.size() != pattern.size()) return false;
  for (std::size_t i = 0; i < s.size(); ++i)
    if (pattern[i] == 'D' ? !is_decimal(s[i]) : s[i] != pattern[i]) return false;
  return true;
}

bool is_date(std::string_view s) {
  return shaped(s, "DDDD-DD-DD");
}

// 07:32:00, 07:32:00.999; with `offset`, then optionally Z or -07:00.
bool is_time(std::string_view s, bool offset) {
  if (s.size() < 8 || !shaped(s.substr(0, 8), "DD:DD:DD")) return false;
  std::size_t end = 8;
  if (end < s.size() && s[end] == '.') {
    const std::size_t digits = end + 1;
    for (end = digits; end < s.size() && is_decimal(s[end]);) ++end;
    if (end == digits) return false;
  }
  const std::string_view rest = s.substr(end);
  return rest.empty() || (offset && (rest == "Z" || rest == "z" || shaped(rest, "+DD:DD") ||
                                     shaped(rest, "-DD:DD")));
}

bool is_date_time(std::string_view s) {
  return s.size() > 11 && is_date(s.substr(0, 10)) && (s[10] == 'T' || s[10] == 't') &&
         is_time(s.substr(11), true);
}

bool is_scalar(std::string_view s) {
  return s == "true" || s == "false" || is_integer(s) || is_float(s) || is_date(s) ||
         is_time(s, false) || is_date_time(s);
}

// What ends a value for toml++ (its is_value_terminator, ASCII part).
bool ends_toml_value(char c) {
  return c == ' ' || (c >= '\t' && c <= '\r') || c == ']' || c == '}' || c == ',' || c == '#';
}

class Prescan {
 public:
  Prescan(std::string_view text, const std::string& origin) : text_(text), origin_(origin) {}

  void run() {
    if (text_.starts_with("\xEF\xBB\xBF")) pos_ = 3;  // a UTF-8 byte order mark
    Expect next = Expect::statement;
    while (next != Expect::stop) next = step(next);
  }

 private:
  // What valid TOML may bring next; `stop` at the end, or where the text
  // cannot be TOML (toml++ reports that).
  enum class Expect { statement, key, value, after_value, line_end, stop };
  struct Open {  // an array or inline table not closed yet
    bool array = false;
    int depth = 0;  // levels from the top of the file to it
  };

  Expect step(Expect at) {
    switch (at) {
      case Expect::statement:
        return statement();
      case Expect::key:
        return key();
      case Expect::value:
        return value();
      case Expect::after_value:
        return after_value();
      case Expect::line_end:
        return line_end();
      case Expect::stop:
        break;
    }
    return Expect::stop;
  }

  // A new line at the top level: a table header, a key, or nothing.
  Expect statement() {
    for (;;) {
      skip_spaces();
      if (at_end()) return Expect::stop;
      if (peek() == '\n') {
        ++pos_;
      } else if (peek() == '#') {
        skip_comment();
      } else {
        header_ = peek() == '[';
        if (header_) ++pos_;
        array_header_ = header_ && peek() == '[';
        if (array_header_) ++pos_;
        return Expect::key;
      }
    }
  }

  // The key of a table header, of a key = value line, or in an inline table.
  Expect key() {
    skip_spaces();
    while (!header_ && in_inline_table() && (peek() == '\n' || peek() == '#')) {
      // Line breaks in an inline table: TOML 1.1; toml++ 3.3 reports them.
      if (peek() == '#') skip_comment();
      if (peek() == '\n') ++pos_;
      skip_spaces();
    }
    if (!header_ && in_inline_table() && peek() == '}') {  // {} or { a = 1, }
      ++pos_;
      open_.pop_back();
      return Expect::after_value;
    }
    const int parts = dotted_key();
    if (parts == 0) return Expect::stop;
    skip_spaces();
    if (header_) {
      header_ = false;
      if (peek() != ']') return Expect::stop;
      ++pos_;
      if (array_header_ && peek() != ']') return Expect::stop;
      if (array_header_) ++pos_;
      table_depth_ = parts + (array_header_ ? 1 : 0);  // [[a]]: the array a, then its table
      return Expect::line_end;
    }
    if (peek() != '=') return Expect::stop;
    ++pos_;
    value_depth_ = (open_.empty() ? table_depth_ : open_.back().depth) + parts;
    return Expect::value;
  }

  Expect value() {
    for (;;) {  // line breaks and comments only between the values of an array
      skip_spaces();
      if (in_array() && peek() == '\n') {
        ++pos_;
      } else if (in_array() && peek() == '#') {
        skip_comment();
      } else if (in_array() && peek() == ']') {  // [] or [1, 2, ]
        ++pos_;
        open_.pop_back();
        return Expect::after_value;
      } else {
        break;
      }
    }
    if (at_end()) return Expect::stop;
    // What toml++ asserts is not there (and assumes, without assertions).
    if (in_array() && (peek() == '}' || unicode_line_break())) fail_missing_value();
    if (value_depth_ > kMaxTomlDepth) fail_depth();
    const char c = peek();
    if (c == '[' || c == '{') {
      if (open_.size() >= static_cast<std::size_t>(kMaxTomlNesting)) fail_nesting();
      ++pos_;
      open_.push_back({c == '[', value_depth_});
      if (c == '{') return Expect::key;  // its keys add their parts to its depth
      ++value_depth_;                    // an array's values are one level down
      return Expect::value;
    }
    if (c == '"' || c == '\'') return string(true) ? Expect::after_value : Expect::stop;
    if (ends_bare_value(c)) return Expect::stop;
    bare_value();
    return Expect::after_value;
  }

  // A number, boolean, date or time, as toml++ will read it: to the next
  // space, ] } , or #. A date, a space and a digit go on with a time.
  void bare_value() {
    const std::string_view value = run_at(pos_);
    const std::size_t after = pos_ + value.size();
    if (is_date(value) && peek_at(after) == ' ' && is_decimal(peek_at(after + 1))) {
      const std::string_view time = run_at(after + 1);
      if (!is_time(time, true)) fail_incomplete_time();
      pos_ = after + 1 + time.size();
      return;
    }
    if (!is_scalar(value)) fail_not_a_value();
    pos_ = after;
  }
  std::string_view run_at(std::size_t at) const {
    std::size_t end = at;
    while (end < text_.size() && !ends_toml_value(text_[end])) ++end;
    return text_.substr(at, end - at);
  }
  char peek_at(std::size_t at) const { return at < text_.size() ? text_[at] : '\0'; }

  Expect after_value() {
    for (;;) {
      skip_spaces();
      if (at_end()) return Expect::stop;
      const char c = peek();
      if (c == '#') {
        skip_comment();
      } else if (c == '\n') {
        ++pos_;
        if (open_.empty()) return Expect::statement;
      } else if (c == ',') {
        ++pos_;
        if (open_.empty()) return Expect::stop;
        if (!in_array()) return Expect::key;
        value_depth_ = open_.back().depth + 1;
        return Expect::value;
      } else if ((c == ']' && in_array()) || (c == '}' && in_inline_table())) {
        ++pos_;
        open_.pop_back();
      } else {  // a second value: toml++'s error
        return Expect::stop;
      }
    }
  }

  // After a table header: a comment at most.
  Expect line_end() {
    skip_spaces();
    if (peek() == '#') skip_comment();
    if (at_end() || peek() != '\n') return Expect::stop;
    ++pos_;
    return Expect::statement;
  }

  // Reads one dotted key (a.b."c d".'e'); returns its parts, or 0 where a
  // quoted part does not end on its line.
  int dotted_key() {
    int parts = 0;
    for (;;) {
      skip_spaces();
      const char c = peek();
      if (c == '"' || c == '\'') {
        if (!string(false)) return 0;
      } else if (is_bare_key_char(c)) {
        while (is_bare_key_char(peek())) ++pos_;
      } else {
        fail_missing_key();
      }
      if (++parts > kMaxTomlKeyParts) fail_key_parts();
      skip_spaces();
      if (peek() != '.') return parts;
      ++pos_;
    }
  }

  // Skips the string whose quote is at pos_: "basic" (with \ escapes),
  // 'literal', and with `multi_line` """...""" and '''...''' (which end with
  // up to two more quotes). False when it does not end as TOML requires.
  bool string(bool multi_line) {
    const char quote = peek();
    if (multi_line && peek(1) == quote && peek(2) == quote) {
      for (pos_ += 3; !at_end();) {
        if (quote == '"' && peek() == '\\') {
          pos_ += 2;
        } else if (peek() == quote && peek(1) == quote && peek(2) == quote) {
          pos_ += 3;
          for (int extra = 0; extra < 2 && peek() == quote; ++extra) ++pos_;
          return true;
        } else {
          ++pos_;
        }
      }
      return false;
    }
    for (++pos_; !at_end() && peek() != '\n';) {
      const char c = peek();
      pos_ += quote == '"' && c == '\\' ? 2 : 1;
      if (c == quote) return true;
    }
    return false;
  }

  // Spaces and tabs, and the \r of a \r\n (a lone \r is no space to toml++).
  void skip_spaces() {
    while (peek() == ' ' || peek() == '\t' || (peek() == '\r' && peek(1) == '\n')) ++pos_;
  }
  void skip_comment() {
    while (!at_end() && peek() != '\n') ++pos_;
  }
  bool at_end() const { return pos_ >= text_.size(); }
  char peek(std::size_t ahead = 0) const {
    return pos_ + ahead < text_.size() ? text_[pos_ + ahead] : '\0';
  }
  // U+0085, U+2028 or U+2029 at pos_: line breaks to toml++, not to TOML.
  bool unicode_line_break() const {
    const std::string_view rest = text_.substr(pos_);
    return rest.starts_with("\xC2\x85") || rest.starts_with("\xE2\x80\xA8") ||
           rest.starts_with("\xE2\x80\xA9");
  }
  bool in_array() const { return !open_.empty() && open_.back().array; }
  bool in_inline_table() const { return !open_.empty() && !open_.back().array; }

  // The line of pos_, counted from 1 (only for an error: the pass keeps no count).
  std::size_t line() const {
    const std::size_t at = std::min(pos_, text_.size());
    return 1 + static_cast<std::size_t>(std::count(text_.begin(), text_.begin() + at, '\n'));
  }
  // The column of pos_ in code points, counted from 1, as toml++ counts them.
  std::size_t column() const {
    const std::size_t at = std::min(pos_, text_.size());
    const std::size_t start = text_.rfind('\n', at == 0 ? 0 : at - 1);
    std::size_t column = 1;
    for (std::size_t i = start == std::string_view::npos ? 0 : start + 1; i < at; ++i)
      column += (static_cast<unsigned char>(text_[i]) & 0xC0) != 0x80;
    return column;
  }

  [[noreturn]] void fail_missing_key() const {
    throw InputError(tr_format(
        "{}:{}:{}: a key is missing here: a table header or dotted key cannot have an empty "
        "part (as in [.a], [a..b] or a. = 1). Write the name there, or quote an empty one (\"\").",
        origin_, line(), column()));
  }
  [[noreturn]] void fail_missing_value() const {
    throw InputError(
        tr_format("{}:{}:{}: a value is missing here, in an array; write the value, or close "
                  "the array with ].",
                  origin_, line(), column()));
  }
  [[noreturn]] void fail_incomplete_time() const {
    throw InputError(
        tr_format("{}:{}:{}: a date followed by an incomplete time; write a date and time as "
                  "1979-05-27 07:32:00 (or 1979-05-27T07:32:00), or the date alone.",
                  origin_, line(), column()));
  }
  [[noreturn]] void fail_not_a_value() const {
    throw InputError(tr_format(
        "{}:{}:{}: not a TOML value: write a number (1.70, -2e-3, inf), true or false, a date "
        "or time (1979-05-27 07:32:00), or text in quotes.",
        origin_, line(), column()));
  }
  [[noreturn]] void fail_key_parts() const {
    throw InputError(tr_format(
        "{}:{}: a dotted key or table header of more than {} parts; attn-trace's files need "
        "only a few. Shorten the key.",
        origin_, line(), kMaxTomlKeyParts));
  }
  [[noreturn]] void fail_nesting() const {
    throw InputError(tr_format(
        "{}:{}: arrays and inline tables nested more than {} deep; attn-trace's files need "
        "only a few levels. Flatten the value.",
        origin_, line(), kMaxTomlNesting));
  }
  [[noreturn]] void fail_depth() const {
    throw InputError(tr_format(
        "{}:{}: a value more than {} levels below the top of the file (table headers, dotted "
        "keys and nested arrays or inline tables together); attn-trace's files need only a "
        "few. Flatten the file.",
        origin_, line(), kMaxTomlDepth));
  }

  std::string_view text_;
  const std::string& origin_;
  std::size_t pos_ = 0;
  std::vector<Open> open_;
  bool header_ = false;        // the key being read is a table header's
  bool array_header_ = false;  // ... of an array of tables, [[a]]
  int table_depth_ = 0;        // levels of the last table header
  int value_depth_ = 0;        // levels of the value to come
};

}  // namespace

void prescan_toml(std::string_view text, const std::string& origin) {
  Prescan(text, origin).run();
}

}  // namespace attn
