// Tests of numbers as people type them: each form read with its note, each
// unreadable cell with its reason, unquoted decimal commas in an answers row,
// and random UTF-8 that never crashes the reader.
#include <doctest/doctest.h>

#include <cmath>
#include <memory>
#include <random>

#include "backend/backend.hpp"
#include "core/lesson_library.hpp"
#include "core/pipeline.hpp"
#include "teach/answers.hpp"
#include "teach/typed_number.hpp"

namespace attn {

namespace {

std::string note_of(const TypedNumber& t) {
  return t.note.in(Language::en);
}

Trace river_bank() {
  const std::unique_ptr<Backend> cpu = make_backend("cpu");
  return run_pipeline(find_lesson("river-bank"), *cpu);
}

}  // namespace

TEST_CASE("typed numbers: each form, its value, its decimals and its note") {
  struct Case {
    const char* text;
    double value;
    int decimals;
    const char* note;  // "" for a plain number
  };
  const Case cases[] = {
      {"0.250", 0.25, 3, ""},
      {"  -1.5 ", -1.5, 1, ""},
      {"+2", 2, 0, ""},
      {"\u22120.230", -0.23, 3, "read \"\u22120.230\" as -0.230: a dash read as the minus sign"},
      {"\u20130.5", -0.5, 1, "a dash read as the minus sign"},
      {"\u20140.5", -0.5, 1, "a dash read as the minus sign"},
      {"\u20100.5", -0.5, 1, "a dash read as the minus sign"},
      {"\uFF0D\uFF10\uFF0E\uFF10\uFF15\uFF17\uFF16", -0.0576, 4,
       "read \"\uFF0D\uFF10\uFF0E\uFF10\uFF15\uFF17\uFF16\" as -0.0576: full-width characters "
       "read as ASCII"},
      {"\uFE630.5", -0.5, 1, "full-width characters read as ASCII"},
      {"\uFF0B1.25", 1.25, 2, "full-width characters read as ASCII"},
      {"0,042", 0.042, 3, "read \"0,042\" as 0.042: a decimal comma read as a point"},
      {"\u22120,5", -0.5, 1, "a dash read as the minus sign; a decimal comma read as a point"},
      {"0\u30025", 0.5, 1, "an ideographic full stop read as a point"},
      {"\u00A00.75\u3000", 0.75, 2, ""},
  };
  for (const Case& c : cases) {
    CAPTURE(c.text);
    const TypedNumber t = read_typed_number(c.text);
    REQUIRE((t.kind == TypedNumber::Kind::plain || t.kind == TypedNumber::Kind::normalised));
    CHECK(t.number.value == doctest::Approx(c.value).epsilon(1e-15));
    CHECK(t.number.decimals == c.decimals);
    if (std::string(c.note).empty() || std::string(c.text).find("\u00A0") == 0) continue;
    CHECK(t.kind == TypedNumber::Kind::normalised);
    CHECK(note_of(t).find(c.note) != std::string::npos);
  }
}

TEST_CASE("typed numbers: blank, special and unreadable cells, each with its reason") {
  CHECK(read_typed_number("").kind == TypedNumber::Kind::blank);
  CHECK(read_typed_number("  \t").kind == TypedNumber::Kind::blank);
  CHECK(read_typed_number("\u2212inf").kind == TypedNumber::Kind::special);
  CHECK(read_typed_number("\u2212inf").text == "-inf");
  const std::pair<const char*, const char*> unreadable[] = {
      {"0.4l", "\"0.4l\" has \"l\" after the number; write the number alone, such as 0.4"},
      {"abc", "\"abc\" is not a number; write a number such as 0.250"},
      {"0.1 0.2", "\"0.1 0.2\" holds two numbers; write one number per cell"},
      {"0.1,0.2", "\"0.1,0.2\" holds two numbers"},
      {"1,2,3", "holds two numbers"},
      {"0x10", "has \"x10\" after the number"},
      {"1e999", "\"1e999\" is too large a number"},
      {"--1", "is not a number"},
      {"\xff\xfe", "the cell is not UTF-8 text"},
      {"1\x1b[31m", "\u241b"},  // a control character is shown (␛), never sent to a terminal
  };
  for (const auto& [text, reason] : unreadable) {
    CAPTURE(text);
    const TypedNumber t = read_typed_number(text);
    CHECK(t.kind == TypedNumber::Kind::unreadable);
    CHECK(note_of(t).find(reason) != std::string::npos);
    CHECK(note_of(t).find('\x1b') == std::string::npos);
  }
}

TEST_CASE("typed numbers: random UTF-8 and bytes never crash, and a number is a number") {
  std::mt19937 rng(24);
  const std::vector<std::string> pieces = {
      "0",      "1",      "9",      ".",      ",",        "-",      "+",    "e",
      " ",      "\u2212", "\uFF10", "\uFF0E", "\u3002",   "\u00A0", "\xff", "\x1b",
      "\u738b", "'",      "\"",     "inf",    "\xe2\x88", "E"};
  for (int i = 0; i < 20000; ++i) {
    std::string cell;
    const int length = static_cast<int>(rng() % 12);
    for (int k = 0; k < length; ++k) cell += pieces[rng() % pieces.size()];
    const TypedNumber t = read_typed_number(cell);
    if (t.kind == TypedNumber::Kind::plain || t.kind == TypedNumber::Kind::normalised) {
      CHECK(std::isfinite(t.number.value));
      CHECK(t.text.find_first_not_of("0123456789.-+eE") == std::string::npos);
    } else if (t.kind == TypedNumber::Kind::unreadable) {
      CHECK(!t.note.format.empty());
    }
  }
}

TEST_CASE("answers: unquoted decimal commas in a row are read back when the count is exact") {
  const std::string toml = R"([[answer]]
step = "head0.weights"
row = 0
values = [0,042, 0,5, 0,458, 0]   # four values, written with commas
[[answer]]
step = "head0.weights"
row = 1
values = [0,1,0,2,0,7,0]
[[answer]]
step = "head0.scores"
cell = [0, 0]
value = 1,25
[[answer]]
step = "head0.scaled"
values = [[0.1,0.2, 0.3, 0], [1,5, 2, 3, 4], [1, 2, 3, 4], [1, 2, 3, 4]]
)";
  const std::vector<Answer> a = parse_answers(toml, "mine.toml", river_bank());
  REQUIRE(a.size() == 4);
  REQUIRE(a[0].values[0].size() == 4);
  CHECK(a[0].values[0][0].value == doctest::Approx(0.042));
  CHECK(a[0].values[0][0].decimals == 3);
  CHECK(a[0].values[0][2].value == doctest::Approx(0.458));
  REQUIRE(a[0].readings.size() == 3);
  CHECK(a[0].readings[0].note.in(Language::en) ==
        "read 0,042 as 0.042: a decimal comma outside quotes; quote it (\"0,042\") or write a "
        "decimal point (0.042)");
  // Seven values for four cells, and joining every digit,digit gives one: ambiguous.
  REQUIRE(a[1].values[0].size() == 4);
  for (const WrittenNumber& n : a[1].values[0]) CHECK(n.unreadable);
  CHECK(a[1].readings.at(0).note.in(Language::en).find("quote each number") != std::string::npos);
  CHECK(a[2].values[0][0].value == doctest::Approx(1.25));
  CHECK(a[2].values[0][0].decimals == 2);
  // A matrix: [0.1,0.2, 0.3, 0] has four values (no join needed); [1,5, 2, 3, 4] five: 1.5.
  CHECK(a[3].values[0][1].value == doctest::Approx(0.2));
  CHECK(a[3].values[1][0].value == doctest::Approx(1.5));
  CHECK(a[3].values[3][3].value == 4);
  CHECK(a[3].values_line == 15);
}

TEST_CASE("answers: typed strings are read as typed, an unreadable one is no error of the file") {
  const std::vector<Answer> a = parse_answers(R"([[answer]]
step = "head0.scores"
row = 0
values = ["−0.230", "１．５", "0.4l", ""]
)",
                                              "mine.toml", river_bank());
  REQUIRE(a.size() == 1);
  CHECK(a[0].values[0][0].value == doctest::Approx(-0.23));
  CHECK(a[0].values[0][0].decimals == 3);
  CHECK(a[0].values[0][1].value == doctest::Approx(1.5));
  CHECK(a[0].values[0][2].unreadable);
  CHECK_FALSE(a[0].values[0][2].blank);
  CHECK(a[0].values[0][3].blank);
  REQUIRE(a[0].readings.size() == 3);
  CHECK(a[0].readings[2].unreadable);
}

TEST_CASE("answers: a row of 400,000 unquoted values is read once, not once per value") {
  std::string row;
  for (int i = 0; i < 200000; ++i) row += "0,1, ";
  const std::vector<Answer> a =
      parse_answers("[[answer]]\nstep = \"head0.scores\"\nrow = 0\nvalues = [" + row + "]\n",
                    "big.toml", river_bank());
  REQUIRE(a.size() == 1);
  for (const WrittenNumber& n : a[0].values[0]) CHECK(n.unreadable);
  CHECK(a[0].readings.at(0).note.in(Language::en).find("400000 values in") == 0);
}

}  // namespace attn
