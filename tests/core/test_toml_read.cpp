// TomlReader: numbers read with their value and the decimals as written, on
// long lines and on lines where non-ASCII text comes before the numbers.
#include <doctest/doctest.h>
#include <fmt/format.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "core/toml_read.hpp"

namespace {

// The message of the InputError that `read` throws ("" if none).
template <typename Read>
std::string error_of(Read&& read) {
  try {
    read();
  } catch (const attn::InputError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("decimals as written") {
  CHECK(attn::decimals_written("1.70") == 2);
  CHECK(attn::decimals_written("2") == 0);
  CHECK(attn::decimals_written("-0.8635") == 4);
  CHECK(attn::decimals_written("1e-3") == 3);
  CHECK(attn::decimals_written("1.5e2") == 0);
  CHECK(attn::decimals_written("1.25e-3") == 5);
  CHECK(attn::decimals_written("1.2345E+2") == 2);
  CHECK(attn::decimals_written("1_000.125_5") == 4);
  CHECK(attn::decimals_written("1e-1_0") == 10);
  CHECK(attn::half_unit(2) == doctest::Approx(0.005));
}

TEST_CASE("decimals: exponents of any length are bounded, never overflow") {
  CHECK(attn::decimals_written("1e-340") == 340);
  CHECK(attn::decimals_written("1e-339") == 339);
  CHECK(attn::decimals_written("1e-400") == attn::kMaxWrittenDecimals);
  CHECK(attn::decimals_written("1e-2147483648") == attn::kMaxWrittenDecimals);
  CHECK(attn::decimals_written("1.5e-99999999999999999999999") == attn::kMaxWrittenDecimals);
  CHECK(attn::decimals_written("1e2147483648") == 0);
  CHECK(attn::decimals_written("1.5e99999999999999999999999") == 0);
  // Beyond 17 significant digits, more digits carry no more precision.
  CHECK(attn::decimals_written("0." + std::string(500, '1')) == 17);
  CHECK(attn::decimals_written("0.000" + std::string(30, '7')) == 20);
  CHECK(attn::decimals_written("123.45678901234567890") == 14);
  CHECK(attn::decimals_written("0." + std::string(40, '0')) == 17);
  // 17 meaningful decimals, the point moved 300 places right: none left; left: 317.
  CHECK(attn::decimals_written("0." + std::string(500, '1') + "e300") == 0);
  CHECK(attn::decimals_written("0." + std::string(500, '1') + "e-300") == 317);
  CHECK(attn::half_unit(attn::kMaxWrittenDecimals) == 0.0);

  SUBCASE("read from a file") {
    // TOML floats must fit a double (toml++ built with std::from_chars rejects
    // 1e-400) and have at most 128 digits; strings may carry any exponent.
    // 102 significant digits, of which 17 count: 16 decimals, + 300
    const std::string a_literal = "1." + std::string(100, '0') + "1e-300";
    const attn::TomlReader toml("a = " + a_literal + "\nb = 1.5e-300\n" +
                                    "c = \"1e-2147483648\"\nd = \"2.5e+2147483648\"\n",
                                "t.toml");
    const attn::WrittenNumber a = toml.number(*toml.root().get("a"), "a");
    CHECK(a.value == std::strtod(a_literal.c_str(), nullptr));
    CHECK(a.decimals == 316);
    const attn::WrittenNumber b = toml.number(*toml.root().get("b"), "b");
    CHECK(b.value == 1.5e-300);
    CHECK(b.decimals == 301);
    const attn::WrittenNumber c = toml.number(*toml.root().get("c"), "c");
    CHECK(c.value == 0.0);
    CHECK(c.decimals == attn::kMaxWrittenDecimals);
    CHECK(error_of([&] { toml.number(*toml.root().get("d"), "d"); }) ==
          "t.toml:4: key 'd': infinity is not allowed here; every input must be a finite number");
  }
}

TEST_CASE("a matrix on one long line: every value and its decimals") {
  // 40 rows of 100 numbers on one line of about 30 kB, decimals 0 to 5, some in
  // exponent form (11e-3 has 3 decimals).
  constexpr std::size_t kRows = 40, kCols = 100;
  std::string line = "m = [";
  std::vector<std::vector<attn::WrittenNumber>> expected(kRows);
  for (std::size_t r = 0; r < kRows; ++r) {
    line += r ? ", [" : "[";
    for (std::size_t c = 0; c < kCols; ++c) {
      const std::size_t k = r * kCols + c;
      const int decimals = static_cast<int>(k % 6);
      const double value = (static_cast<double>(k % 997) - 498.0) / 7.0;
      std::string literal =
          k % 11 == 0 ? fmt::format("{}e-3", k) : fmt::format("{:.{}f}", value, decimals);
      if (k % 11 == 0) {
        expected[r].push_back({static_cast<double>(k) / 1000.0, 3});
      } else {
        expected[r].push_back({std::stod(literal), decimals});
      }
      line += (c ? ", " : "") + literal;
    }
    line += "]";
  }
  line += "]\n";
  const attn::TomlReader toml("# the whole matrix on one line\n" + line, "long.toml");
  const auto m = toml.number_matrix(*toml.root().get("m"), "m");
  REQUIRE(m.size() == kRows);
  for (std::size_t r = 0; r < kRows; ++r) {
    REQUIRE(m[r].size() == kCols);
    for (std::size_t c = 0; c < kCols; ++c) {
      INFO("m[" << r << "][" << c << "]");
      CHECK(m[r][c].value == expected[r][c].value);
      CHECK(m[r][c].decimals == expected[r][c].decimals);
    }
  }
  const arma::mat values = toml.matrix(*toml.root().get("m"), "m");
  CHECK(values(kRows - 1, kCols - 1) == expected[kRows - 1][kCols - 1].value);
}

TEST_CASE("numbers after non-ASCII text on the same line") {
  const attn::TomlReader toml(
      "[input]\n"
      "word = { token = \"河岸\", at = [1.50, -0.125, 3e-2, 7] }  # 河岸: the river bank\n"
      "\"河岸🙂é\" = 2.250\n"
      "pairs = [{ t = \"河\", v = 0.5 }, { t = \"岸岸岸\", v = 12.0625 }, { t = \"🙂\", v = "
      "1e1 "
      "}]\n"
      "split = { s = \"\"\"河\n岸\"\"\", v = 4.20 }\n",
      "utf8.toml");
  const toml::table& input = *toml.root().get("input")->as_table();

  const auto at = toml.number_row(*input.get("word")->as_table()->get("at"), "at");
  REQUIRE(at.size() == 4);
  CHECK(at[0].value == 1.5);
  CHECK(at[0].decimals == 2);
  CHECK(at[1].value == -0.125);
  CHECK(at[1].decimals == 3);
  CHECK(at[2].value == 0.03);
  CHECK(at[2].decimals == 2);
  CHECK(at[3].value == 7.0);
  CHECK(at[3].decimals == 0);

  const attn::WrittenNumber key = toml.number(*input.get("河岸🙂é"), "河岸🙂é");
  CHECK(key.value == 2.25);
  CHECK(key.decimals == 3);

  const toml::array& pairs = *input.get("pairs")->as_array();
  // Read right to left: the reader must not depend on going left to right.
  const std::vector<std::pair<double, int>> expected{{0.5, 1}, {12.0625, 4}, {10.0, 0}};
  for (std::size_t i = pairs.size(); i-- > 0;) {
    const attn::WrittenNumber v = toml.number(*pairs.get(i)->as_table()->get("v"), "v");
    CHECK(v.value == expected[i].first);
    CHECK(v.decimals == expected[i].second);
  }

  // A line that starts inside a multi-line string.
  const attn::WrittenNumber v = toml.number(*input.get("split")->as_table()->get("v"), "v");
  CHECK(v.value == 4.2);
  CHECK(v.decimals == 2);
}

TEST_CASE("a bad number in a long row is named by its index and line") {
  std::string row = "x = 1\nrow = [";
  for (int i = 0; i < 1500; ++i) row += fmt::format("{}.5, ", i);
  row += "\"soon\"]\n";
  const attn::TomlReader toml(row, "bad.toml");
  CHECK(error_of([&] { toml.number_row(*toml.root().get("row"), "row"); }) ==
        "bad.toml:2: key 'row[1500]': \"soon\" is not a number; write a number such as 1.70 or "
        "\"1.70\"");
  CHECK(error_of([&] { toml.number_matrix(*toml.root().get("row"), "row"); }) ==
        "bad.toml:2: key 'row': expected a matrix: an array of rows, e.g. [[1, 0], [0, 1]]");
}
