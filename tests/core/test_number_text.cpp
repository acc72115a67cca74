// Numbers and shapes as words: shapes with ×, short numbers of at most six
// significant digits, and exact numbers that read back bit for bit.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>

#include "core/number_text.hpp"

TEST_CASE("shape_str: rows × columns") {
  CHECK(attn::shape_str(4, 3) == "4×3");
  CHECK(attn::shape_str(1, 1) == "1×1");
  CHECK(attn::shape_str(0, 512) == "0×512");
}

TEST_CASE("short_number: at most six significant digits, no trailing zeros") {
  CHECK(attn::short_number(1.6755) == "1.6755");
  CHECK(attn::short_number(0.45) == "0.45");
  CHECK(attn::short_number(2.0) == "2");
  CHECK(attn::short_number(0.1 + 0.2) == "0.3");
  CHECK(attn::short_number(1.0 / 3.0) == "0.333333");
  CHECK(attn::short_number(-0.000123456789) == "-0.000123457");
  CHECK(attn::short_number(1234567.0) == "1.23457e+06");
}

TEST_CASE("format_exact: tricky values read back as the same double") {
  CHECK(attn::format_exact(0.6) == "0.59999999999999998");
  CHECK(attn::format_exact(1e23) == "9.9999999999999992e+22");
  CHECK(attn::format_exact(-0.0) == "-0");
  const double inf = std::numeric_limits<double>::infinity();
  CHECK(attn::format_exact(inf) == "inf");
  CHECK(attn::format_exact(-inf) == "-inf");
  CHECK(attn::format_exact(std::nan("")) == "nan");
  const double tricky[] = {1.0 / 3.0,
                           2.0 / 3.0,
                           0.1 + 0.2,
                           1.6755 / 2,
                           std::nextafter(1.0, 2.0),
                           std::nextafter(0.1, 0.0),
                           5e-324,  // the smallest subnormal
                           std::numeric_limits<double>::min(),
                           std::numeric_limits<double>::max(),
                           -1e9,
                           std::exp(1.0),
                           -0.0};
  for (const double v : tricky) {
    const std::string s = attn::format_exact(v);
    CAPTURE(s);
    const double back = std::strtod(s.c_str(), nullptr);
    CHECK(std::memcmp(&back, &v, sizeof v) == 0);
    // 17 significant digits at most: digits before an exponent, leading zeros aside.
    std::size_t significant = 0;
    bool leading = true;
    for (const char c : s.substr(0, s.find('e'))) {
      if (c < '0' || c > '9') continue;
      if (leading && c == '0') continue;
      leading = false;
      ++significant;
    }
    CHECK(significant <= 17);
  }
}
