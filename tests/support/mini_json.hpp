// A strict little JSON reader for the unit tests (RFC 8259, no extensions), so a
// test can prove a renderer's output parses and read its numbers back.
#pragma once

#include <cstdlib>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace testjson {

struct Value {
  enum class Type { null, boolean, number, string, array, object };
  Type type = Type::null;
  bool boolean = false;
  double number = 0.0;
  std::string text;               // a string's content, or a number as written
  std::vector<std::string> keys;  // an object's keys, in document order
  std::vector<Value> items;       // an array's items, or an object's values

  bool has(std::string_view key) const {
    for (const std::string& k : keys)
      if (k == key) return true;
    return false;
  }
  const Value& operator[](std::string_view key) const {
    for (std::size_t i = 0; i < keys.size(); ++i)
      if (keys[i] == key) return items[i];
    throw std::out_of_range("no key " + std::string(key));
  }
  const Value& operator[](std::size_t i) const { return items.at(i); }
  std::size_t size() const { return items.size(); }
  bool is_null() const { return type == Type::null; }
};

class Parser {
 public:
  explicit Parser(std::string_view text) : s_(text) {}

  Value document() {
    Value v = value();
    skip();
    if (i_ != s_.size()) fail("text after the value");
    return v;
  }

 private:
  std::string_view s_;
  std::size_t i_ = 0;

  [[noreturn]] void fail(const std::string& what) const {
    throw std::runtime_error("JSON at byte " + std::to_string(i_) + ": " + what);
  }
  void skip() {
    while (i_ < s_.size() && std::string_view(" \t\n\r").find(s_[i_]) != std::string_view::npos)
      ++i_;
  }
  bool eat(char c) {
    skip();
    if (i_ >= s_.size() || s_[i_] != c) return false;
    ++i_;
    return true;
  }
  void expect(char c) {
    if (!eat(c)) fail(std::string("expected '") + c + "'");
  }
  bool literal(std::string_view word) {
    if (s_.substr(i_, word.size()) != word) return false;
    i_ += word.size();
    return true;
  }
  bool digit() const { return i_ < s_.size() && s_[i_] >= '0' && s_[i_] <= '9'; }
  void digits() {
    if (!digit()) fail("expected a digit");
    while (digit()) ++i_;
  }

  Value value() {
    skip();
    if (i_ >= s_.size()) fail("unexpected end");
    Value v;
    if (eat('{')) {
      v.type = Value::Type::object;
      if (eat('}')) return v;
      do {
        skip();
        v.keys.push_back(string());
        expect(':');
        v.items.push_back(value());
      } while (eat(','));
      expect('}');
    } else if (eat('[')) {
      v.type = Value::Type::array;
      if (eat(']')) return v;
      do v.items.push_back(value());
      while (eat(','));
      expect(']');
    } else if (s_[i_] == '"') {
      v.type = Value::Type::string;
      v.text = string();
    } else if (literal("true")) {
      v.type = Value::Type::boolean;
      v.boolean = true;
    } else if (literal("false")) {
      v.type = Value::Type::boolean;
    } else if (literal("null")) {
      v.type = Value::Type::null;
    } else {
      v.type = Value::Type::number;
      v.text = number();
      v.number = std::strtod(v.text.c_str(), nullptr);
    }
    return v;
  }

  // -? (0 | [1-9][0-9]*) (.[0-9]+)? ([eE][+-]?[0-9]+)?
  std::string number() {
    const std::size_t start = i_;
    if (i_ < s_.size() && s_[i_] == '-') ++i_;
    if (i_ < s_.size() && s_[i_] == '0')
      ++i_;
    else
      digits();
    if (i_ < s_.size() && s_[i_] == '.') {
      ++i_;
      digits();
    }
    if (i_ < s_.size() && (s_[i_] == 'e' || s_[i_] == 'E')) {
      ++i_;
      if (i_ < s_.size() && (s_[i_] == '+' || s_[i_] == '-')) ++i_;
      digits();
    }
    return std::string(s_.substr(start, i_ - start));
  }

  std::string string() {
    if (i_ >= s_.size() || s_[i_] != '"') fail("expected a string");
    ++i_;
    std::string out;
    while (true) {
      if (i_ >= s_.size()) fail("unterminated string");
      const char c = s_[i_++];
      if (c == '"') return out;
      if (static_cast<unsigned char>(c) < 0x20) fail("raw control character in a string");
      if (c != '\\') {
        out += c;
        continue;
      }
      if (i_ >= s_.size()) fail("unterminated escape");
      switch (const char e = s_[i_++]) {
        case '"':
        case '\\':
        case '/':
          out += e;
          break;
        case 'b':
          out += '\b';
          break;
        case 'f':
          out += '\f';
          break;
        case 'n':
          out += '\n';
          break;
        case 'r':
          out += '\r';
          break;
        case 't':
          out += '\t';
          break;
        case 'u': {
          if (i_ + 4 > s_.size()) fail("short \\u escape");
          const std::string hex(s_.substr(i_, 4));
          if (hex.find_first_not_of("0123456789abcdefABCDEF") != std::string::npos)
            fail("bad \\u escape");
          i_ += 4;
          const unsigned long cp = std::stoul(hex, nullptr, 16);
          if (cp >= 0x80) fail("the tests expect \\u escapes of ASCII only");
          out += static_cast<char>(cp);
          break;
        }
        default:
          fail("bad escape");
      }
    }
  }
};

inline Value parse(std::string_view text) {
  return Parser(text).document();
}

}  // namespace testjson
