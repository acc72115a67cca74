// prescan_toml: every TOML file the project ships passes; keys, headers and
// nesting above the limits and keys with an empty part are refused with the
// line and the fix, in linear time; what strings and comments hold is not
// structure; against toml++ itself on random token soup.
#include <doctest/doctest.h>
#include <fmt/format.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "core/toml.hpp"
#include "core/toml_prescan.hpp"

namespace {

namespace fs = std::filesystem;

// The message of the InputError that prescan_toml throws on `text` ("" if none).
std::string prescan_error(const std::string& text) {
  try {
    attn::prescan_toml(text, "t.toml");
  } catch (const attn::InputError& e) {
    return e.what();
  }
  return "";
}

std::string repeat(const std::string& part, int times, const std::string& between = "") {
  std::string out;
  for (int i = 0; i < times; ++i) out += (i ? between : "") + part;
  return out;
}

std::string file_text(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

bool toml_parses(const std::string& text) {
  try {
    (void)toml::parse(text, std::string_view("t.toml"));
    return true;
  } catch (const toml::parse_error&) {
    return false;
  }
}

const char* const kParts = "t.toml:2: a dotted key or table header of more than 64 parts";
const char* const kNesting = "t.toml:1: arrays and inline tables nested more than 64 deep";
const char* const kDepth = "t.toml:2: a value more than 128 levels below the top of the file";

}  // namespace

TEST_CASE("prescan_toml: every TOML file of the project passes") {
  int files = 0;
  for (const char* folder : {"lessons", "golden", "tests", "fuzz/corpus", "bench"}) {
    const fs::path root = fs::path(ATTN_SOURCE_DIR) / folder;
    if (!fs::exists(root)) continue;
    for (const fs::directory_entry& e : fs::recursive_directory_iterator(root)) {
      if (e.path().extension() != ".toml") continue;
      const std::string text = file_text(e.path());
      if (!toml_parses(text)) continue;  // the tests' deliberately broken files
      CAPTURE(e.path().string());
      CHECK(prescan_error(text) == "");
      ++files;
    }
  }
  CHECK(files > 40);
}

TEST_CASE("prescan_toml: valid TOML whose strings and comments look deep passes") {
  const std::vector<std::string> valid = {
      "a = \"" + repeat("[{", 500) + "\"\n",
      "a = '" + repeat("[.", 500) + "'\n",
      "a = \"\"\"\n" + repeat("]]] [[ .. \\\"\"\" ", 50) + "\n\"\"\"\n",
      "a = '''x''''\nb = \"\"\"y\"\"\"\"\"\n",
      "# " + repeat("[", 1000) + "\n[t] # [[x..y]]\n",
      "\"" + repeat("a", 200, ".") + "\" = 1\n",
      "'" + repeat("a", 200, ".") + "'.b = 1\n",
      "a . b . \"c\" . 'd' = 1\n[ x . \"y\" ]\n[[ z.w ]]\n",
      "[''.\"\"]\n\"\" = 1\n",
      "d = 1979-05-27 07:32:00.5 # a date\nf = [1.5, -2e-3, +inf, nan, 0x1F]\n",
      "a = [\n  [1, 2], # one\n  [3, 4],\n]\nb = {x = {y = [{z = 1}]}, w = []}\nc = {}\n",
      "\xEF\xBB\xBF"
      "a = 1\r\nb = \"\\\"\"\r\n",
      "s = \"\"\"line \\\n   continued\"\"\"\n",
      "v = [0x1F, 0o17, 0b101, 1_000, 1e06, 1E+5, -0.0, +inf, -nan, true, false, 0, -0]\n",
      "t = [1979-05-27T07:32:00.999999-07:00, 1979-05-27t07:32:00z, 07:32:00.5, 1979-05-27]\n"
      "u = 1979-05-27 07:32:00Z\nw = 1979-05-27 07:32:00.5+05:30 # c\n",
      "x = " + repeat("[", 64) + repeat("]", 64) + "\n",
      repeat("a", 64, ".") + " = 1\n[" + repeat("b", 64, ".") + "]\n",
      "[" + repeat("a", 64, ".") + "]\n" + repeat("b", 64, ".") + " = 1\n",
  };
  for (const std::string& text : valid) {
    CAPTURE(text.substr(0, 120));
    REQUIRE(toml_parses(text));
    CHECK(prescan_error(text) == "");
  }
}

TEST_CASE("prescan_toml: keys and headers of more than 64 parts are refused") {
  const std::string key = repeat("a", 65, ".");
  for (const std::string& text : {"# first\n" + key + " = 1\n", "# first\n[" + key + "]\n",
                                  "# first\n[[" + key + "]]\n", "# first\nx = {" + key + " = 1}\n",
                                  "# first\n\"q\"." + repeat("'b'", 64, ".") + " = 1\n"}) {
    CAPTURE(text.substr(0, 40));
    CHECK(prescan_error(text) ==
          std::string(kParts) + "; attn-trace's files need only a few. Shorten the key.");
  }
}

TEST_CASE("prescan_toml: nesting above 64 and depth above 128 are refused") {
  CHECK(prescan_error("x = " + repeat("[", 65) + repeat("]", 65) + "\n") ==
        std::string(kNesting) + "; attn-trace's files need only a few levels. Flatten the value.");
  CHECK(prescan_error("x = " + repeat("{a = ", 65) + "1" + repeat("}", 65) + "\n")
            .starts_with(kNesting));
  CHECK(prescan_error("x = [" + repeat("{a = [", 40) + "\n").starts_with(kNesting));
  // 64 parts of header and 64 of key: 128 levels; an array there goes one deeper.
  const std::string deep = "[" + repeat("a", 64, ".") + "]\n" + repeat("b", 64, ".") + " = ";
  CHECK(prescan_error(deep + "1\n") == "");
  CHECK(prescan_error(deep + "[]\n") == "");
  CHECK(prescan_error(deep + "[1]\n") ==
        std::string(kDepth) +
            " (table headers, dotted keys and nested arrays or inline tables together); "
            "attn-trace's files need only a few. Flatten the file.");
  // Inline tables each with a long dotted key reach the depth before the nesting limit.
  CHECK(prescan_error("\nx = " + repeat("{" + repeat("k", 60, ".") + " = ", 3) + "1" +
                      repeat("}", 3) + "\n")
            .starts_with(kDepth));
}

TEST_CASE("prescan_toml: a key with an empty part is refused where it is") {
  const std::string fix =
      ": a key is missing here: a table header or dotted key cannot have an empty part (as in "
      "[.a], [a..b] or a. = 1). Write the name there, or quote an empty one (\"\").";
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"[.a]\n", "t.toml:1:2"},         {"x = 1\n[[.a]]\n", "t.toml:2:3"},
      {"[ . a]\n", "t.toml:1:3"},       {"[a..b]\n", "t.toml:1:4"},
      {"[a.]\n", "t.toml:1:4"},         {"[]\n", "t.toml:1:2"},
      {"[=]\n", "t.toml:1:2"},          {"[\n]\n", "t.toml:1:2"},
      {"a..b = 1\n", "t.toml:1:3"},     {"a. = 1\n", "t.toml:1:4"},
      {".a = 1\n", "t.toml:1:1"},       {"x = {a = 1, .b = 2}\n", "t.toml:1:13"},
      {"é.\"ü\". = 1\n", "t.toml:1:1"}, {"\"ü\". = 1\n", "t.toml:1:6"},
  };
  for (const auto& [text, where] : cases) {
    CAPTURE(text);
    CHECK(prescan_error(text) == where + fix);
  }
}

TEST_CASE("prescan_toml: a bare value that is not TOML's, where toml++ may assert, is refused") {
  const std::string time =
      ": a date followed by an incomplete time; write a date and time as 1979-05-27 07:32:00 (or "
      "1979-05-27T07:32:00), or the date alone.";
  for (const std::string text :
       {"d = 1979-05-27 0\n", "d = 1979-05-27 0}\n", "d = 1979-05-27 0 # c\n",
        "d = 1979-05-27 0x\n", "d = 1979-05-27 0\xC3\xA9\n", "d = 1979-05-27 07:32\n"}) {
    CAPTURE(text);
    CHECK(prescan_error(text) == "t.toml:1:5" + time);
  }
  CHECK(prescan_error("d = [1979-05-27 0]\n") == "t.toml:1:6" + time);
  const std::string value =
      ": not a TOML value: write a number (1.70, -2e-3, inf), true or false, a date or time "
      "(1979-05-27 07:32:00), or text in quotes.";
  for (const std::string text :
       {"x = 1979-05-27T~07:32:00Z\n", "x = 01\n", "x = 1.\n", "x = .5\n", "x = abc\n",
        "x = 1__0\n", "x = 0x\n", "x = +0x1F\n", "x = 1e\n", "x = 1_979-05-27\n", "x = 07:32:00Z\n",
        "x = True\n", "x = 1\xC2\xA0\n", "x = 1\"2\"\n"}) {
    CAPTURE(text);
    CHECK(prescan_error(text) == "t.toml:1:5" + value);
  }
}

TEST_CASE("prescan_toml: a } or a Unicode line break where an array's value must be is refused") {
  const std::string fix =
      ": a value is missing here, in an array; write the value, or close the array with ].";
  CHECK(prescan_error("x = [}\n") == "t.toml:1:6" + fix);
  CHECK(prescan_error("x = [1, }\n") == "t.toml:1:9" + fix);
  CHECK(prescan_error("x = [ # c\n  }\n") == "t.toml:2:3" + fix);
  CHECK(prescan_error("x = [\xE2\x80\xA8]\n") == "t.toml:1:6" + fix);
  CHECK(prescan_error("x = [1,\xC2\x85]\n") == "t.toml:1:8" + fix);
  CHECK(prescan_error("x = {a = }\n") == "");  // toml++'s own error
}

TEST_CASE("prescan_toml: the issue's reproducers are refused in linear time") {
  const auto started = std::chrono::steady_clock::now();
  const std::string key = repeat("a", 300000, ".");
  CHECK(prescan_error(key + " = 1\n").starts_with("t.toml:1: a dotted key or table header"));
  CHECK(prescan_error("[" + key + "]\n").starts_with("t.toml:1: a dotted key or table header"));
  CHECK(prescan_error("[[" + key + "]]\n").starts_with("t.toml:1: a dotted key or table header"));
  CHECK(prescan_error("x = " + repeat("[", 300000)).starts_with("t.toml:1: arrays and inline"));
  CHECK(prescan_error("x = " + repeat("{a=", 300000)).starts_with("t.toml:1: arrays and inline"));
  // A long file with a deep key at its end: still one pass.
  const std::string long_file = repeat("x = [1.5, \"[[\", {a = 'b'}] # [[\n", 100000, "") + "\n[[" +
                                repeat("b", 65, ".") + "]]\n";
  CHECK(prescan_error(long_file).starts_with("t.toml:100002: a dotted key or table header"));
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  CHECK(seconds < 2.0);
}

TEST_CASE("prescan_toml: other syntax errors are left to toml++") {
  for (const std::string text : {"a = \"open\n", "a = '''never closed", "a = 1 2\n", "[a b]\n",
                                 "a = {b = 1,\nc = 2}\n", "a = [1 2]\n", "\"\"\"k\"\"\" = 1\n"}) {
    CAPTURE(text);
    CHECK(prescan_error(text) == "");
    CHECK_FALSE(toml_parses(text));
  }
}

// Random strings of TOML tokens: whatever toml++ accepts, the pass accepts
// (its limits aside); what the pass refuses, toml++ refuses too (asked only in
// builds without assertions: toml++ asserts on some). In a build with them,
// toml++ is asked whatever the pass lets through: an assertion stops the test.
TEST_CASE("prescan_toml: never refuses what toml++ accepts (random token soup)") {
  // TOML's syntax, and what reached toml++'s assertions: "[." and "[\r", "}"
  // or U+2028 in an array, a date with one digit of time.
  const std::vector<std::string> tokens = {
      "a",        "b.c",        ".",     " ",        "=",
      " = ",      "1",          "1.5",   "\"s\"",    "'l'",
      "\"\"\"",   "\'\'\'",     "[",     "]",        "[[",
      "]]",       "{",          "}",     ",",        "\n",
      "#c",       "\\",         "\"",    "'",        "\"a.b\"",
      "x = [",    "y = {",      "[t]\n", "\xC3\xA9", "\r",
      "\t",       "\r\n",       "_",     "\x01",     "\xE2\x80\xA8",
      "\xC2\x85", "1979-05-27", " 0",    "0}",       "1979-05-27 07:32:00"};
  std::mt19937 random(25);
  int accepted = 0, refused = 0;
  for (int i = 0; i < 60000; ++i) {
    std::string text;
    const int length = 1 + static_cast<int>(random() % 12);
    for (int t = 0; t < length; ++t) text += tokens[random() % tokens.size()];
    const std::string error = prescan_error(text);
#ifdef NDEBUG
    const bool parses = toml_parses(text);
#else
    const bool parses = error.empty() && toml_parses(text);
#endif
    CAPTURE(text);
    if (parses) CHECK(error == "");
    if (!error.empty()) CHECK_FALSE(parses);
    accepted += parses;
    refused += !error.empty();
  }
  CHECK(accepted > 1000);
  CHECK(refused > 1000);
}
