// The JSON helpers: strings escaped so that any text reads back unchanged,
// numbers with 17 significant digits, non-finite values as strings.
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <string>

#include "render/json_writer.hpp"
#include "support/mini_json.hpp"

TEST_CASE("json_string: quotes, backslash and control characters escaped, the rest kept") {
  CHECK(attn::json_string("") == "\"\"");
  CHECK(attn::json_string("say \"hi\"") == "\"say \\\"hi\\\"\"");
  CHECK(attn::json_string("C:\\tmp") == "\"C:\\\\tmp\"");
  CHECK(attn::json_string("a\tb\rc\n") == "\"a\\tb\\rc\\n\"");
  CHECK(attn::json_string(std::string_view("\x01\x08\x1f", 3)) == "\"\\u0001\\u0008\\u001f\"");
  CHECK(attn::json_string(std::string_view("a\0b", 3)) == "\"a\\u0000b\"");
  CHECK(attn::json_string("\x7f") == "\"\x7f\"");  // DEL is not a JSON control character
  // UTF-8 passes through byte for byte: accents, CJK, a 4-byte code point.
  CHECK(attn::json_string("José 银行 𝄞 √d_k") == "\"José 银行 𝄞 √d_k\"");
}

TEST_CASE("json_string: every ASCII character and some UTF-8 read back unchanged") {
  std::string all;
  for (int c = 0; c < 0x80; ++c) all += static_cast<char>(c);
  all += "é·ᵀ→…";
  const std::string written = attn::json_string(all);
  for (char c : written) CHECK(static_cast<unsigned char>(c) >= 0x20);  // no raw control bytes
  const testjson::Value back = testjson::parse(written);
  CHECK(back.type == testjson::Value::Type::string);
  CHECK(back.text == all);
}

TEST_CASE("json_number: 17 significant digits that parse back to the same double") {
  CHECK(attn::json_number(1.0 / 3.0) == "0.33333333333333331");
  CHECK(attn::json_number(0.6) == "0.59999999999999998");
  CHECK(attn::json_number(2.5e-8) == "2.4999999999999999e-08");
  CHECK(attn::json_number(1e23) == "9.9999999999999992e+22");
  CHECK(attn::json_number(100.0) == "100");
  CHECK(attn::json_number(-1.6755) == "-1.6755");
  const double inf = std::numeric_limits<double>::infinity();
  CHECK(attn::json_number(inf) == "\"inf\"");
  CHECK(attn::json_number(-inf) == "\"-inf\"");
  CHECK(attn::json_number(-std::nan("")) == "\"nan\"");
  for (const double v : {1.0 / 3.0, 0.1 + 0.2, 1e-300, 1e21, -0.0, 5e-324,
                         std::numeric_limits<double>::max(), std::nextafter(1.0, 2.0)}) {
    CAPTURE(v);
    const testjson::Value back = testjson::parse(attn::json_number(v));
    REQUIRE(back.type == testjson::Value::Type::number);
    CHECK(std::memcmp(&back.number, &v, sizeof v) == 0);  // bit for bit, sign of zero too
  }
}

TEST_CASE("json_strings and json_row: arrays, empty ones too") {
  CHECK(attn::json_strings({}) == "[]");
  CHECK(attn::json_strings({"river", "a\"b"}) == "[\"river\", \"a\\\"b\"]");
  const arma::rowvec row = {0.5, -std::numeric_limits<double>::infinity(), std::nan(""), -2};
  CHECK(attn::json_row(row) == "[0.5, \"-inf\", \"nan\", -2]");
  CHECK(attn::json_row(arma::rowvec()) == "[]");
  CHECK(attn::json_matrix(arma::mat()) == "[]");
  const testjson::Value m = testjson::parse(attn::json_matrix(arma::mat{{0.25, 1}, {2, 0.1}}));
  REQUIRE(m.size() == 2);
  CHECK(m[0][0].number == 0.25);
  CHECK(m[1][1].number == 0.1);
}
