// Rounding to f32, f16 and bf16: edge cases by hand, and every f16 and bf16
// number with the midpoints between neighbours (an exhaustive table).
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>

#include "core/dtype.hpp"

namespace {

using attn::Dtype;
using attn::round_to;

// An f16 bit pattern as a double, decoded here by the IEEE 754 layout (1 sign,
// 5 exponent, 10 fraction bits), independently of the code under test.
double f16_value(std::uint16_t bits) {
  const int sign = bits >> 15, exponent = (bits >> 10) & 0x1f, fraction = bits & 0x3ff;
  double v = 0;
  if (exponent == 0)
    v = std::ldexp(fraction, -24);
  else if (exponent == 31)
    v = fraction ? std::numeric_limits<double>::quiet_NaN() : HUGE_VAL;
  else
    v = std::ldexp(1024 + fraction, exponent - 25);
  return sign ? -v : v;
}

// A bf16 bit pattern as a double: the top half of an f32.
double bf16_value(std::uint16_t bits) {
  const std::uint32_t wide = static_cast<std::uint32_t>(bits) << 16;
  float f = 0;
  std::memcpy(&f, &wide, sizeof f);
  return f;
}

// Every positive finite number of a format (bits 0x0000 .. `last`): each
// rounds to itself; the midpoint of two neighbours rounds to the one whose
// last significand bit is 0; a hair below or above it to the nearer one.
template <typename Decode>
void check_every_number(Dtype dtype, std::uint16_t last, Decode value) {
  for (std::uint32_t bits = 0; bits <= last; ++bits) {
    const double a = value(static_cast<std::uint16_t>(bits));
    REQUIRE(round_to(dtype, a) == a);
    REQUIRE(round_to(dtype, -a) == -a);
    if (bits == last) break;
    const double b = value(static_cast<std::uint16_t>(bits + 1));
    const double mid = (a + b) / 2, hair = (b - a) / (1 << 20);
    REQUIRE(round_to(dtype, mid) == (bits % 2 == 0 ? a : b));
    REQUIRE(round_to(dtype, mid - hair) == a);
    REQUIRE(round_to(dtype, mid + hair) == b);
    REQUIRE(round_to(dtype, -(mid + hair)) == -b);
  }
}

}  // namespace

TEST_CASE("dtype names, bytes and largest numbers") {
  for (Dtype d : {Dtype::f64, Dtype::f32, Dtype::f16, Dtype::bf16})
    CHECK(attn::parse_dtype(attn::dtype_name(d)) == d);
  CHECK_FALSE(attn::parse_dtype("fp16").has_value());
  CHECK(attn::dtype_bytes(Dtype::bf16) == 2);
  CHECK(attn::dtype_max(Dtype::f16) == 65504.0);
  CHECK(attn::dtype_max(Dtype::bf16) == 3.3895313892515355e38);
  CHECK(attn::dtype_max(Dtype::f32) == static_cast<double>(std::numeric_limits<float>::max()));
}

TEST_CASE("f16 edge cases") {
  CHECK(round_to(Dtype::f16, 65504.0) == 65504.0);                        // the largest finite
  CHECK(round_to(Dtype::f16, 65519.0) == 65504.0);                        // below the midpoint
  CHECK(round_to(Dtype::f16, 65520.0) == HUGE_VAL);                       // the midpoint: to inf
  CHECK(round_to(Dtype::f16, -1e9) == -HUGE_VAL);                         // 002's fill overflows
  CHECK(round_to(Dtype::f16, -65504.0) == -65504.0);                      // 002's FP16 fill
  CHECK(round_to(Dtype::f16, std::ldexp(1, -24)) == std::ldexp(1, -24));  // smallest subnormal
  CHECK(round_to(Dtype::f16, std::ldexp(1, -25)) == 0.0);                 // tie: to 0, the even one
  CHECK(round_to(Dtype::f16, std::ldexp(3, -26)) == std::ldexp(1, -24));
  CHECK(round_to(Dtype::f16, std::ldexp(1, -14)) == std::ldexp(1, -14));         // smallest normal
  CHECK(round_to(Dtype::f16, 1 + std::ldexp(1, -11)) == 1.0);                    // tie: to even 1.0
  CHECK(round_to(Dtype::f16, 1 + std::ldexp(3, -11)) == 1 + std::ldexp(1, -9));  // tie: up
  CHECK(round_to(Dtype::f16, 0.1) == 0.0999755859375);
  CHECK(round_to(Dtype::f16, 1.0 / 3) == 0.333251953125);
  // Rounded once: through float first, 1 + 2^-11 + 2^-40 would become the tie
  // 1 + 2^-11 and then 1; straight from the double it is above the tie.
  CHECK(round_to(Dtype::f16, 1 + std::ldexp(1, -11) + std::ldexp(1, -40)) ==
        1 + std::ldexp(1, -10));
  CHECK(std::isnan(round_to(Dtype::f16, std::numeric_limits<double>::quiet_NaN())));
  CHECK(round_to(Dtype::f16, -HUGE_VAL) == -HUGE_VAL);
  CHECK(std::signbit(round_to(Dtype::f16, -0.0)));
  CHECK(std::signbit(round_to(Dtype::f16, -std::ldexp(1, -26))));  // underflows to -0
}

TEST_CASE("bf16 edge cases") {
  CHECK(round_to(Dtype::bf16, 1e9) == 998244352.0);  // finite: bf16 has f32's range
  CHECK(round_to(Dtype::bf16, -65504.0) == -65536.0);
  CHECK(round_to(Dtype::bf16, 1.0 / 3) == 0.333984375);
  CHECK(round_to(Dtype::bf16, 1 + std::ldexp(1, -8)) == 1.0);  // tie: to even
  CHECK(round_to(Dtype::bf16, 3.4e38) == HUGE_VAL);
  CHECK(round_to(Dtype::bf16, std::ldexp(1, -133)) == std::ldexp(1, -133));  // smallest subnormal
}

TEST_CASE("every f16 number and every midpoint between neighbours") {
  check_every_number(Dtype::f16, 0x7bff, f16_value);  // 0 .. 65504
  CHECK(round_to(Dtype::f16, (65504.0 + 65536.0) / 2) == HUGE_VAL);
}

TEST_CASE("every bf16 number and every midpoint between neighbours") {
  check_every_number(Dtype::bf16, 0x7f7f, bf16_value);  // 0 .. the largest finite
}

TEST_CASE("f32 agrees with the float conversion, subnormals included") {
  std::mt19937_64 random(11);
  std::uniform_real_distribution<double> mantissa(-1.0, 1.0);
  std::uniform_int_distribution<int> exponent(-155, 127);
  for (int k = 0; k < 200000; ++k) {
    const double x = std::ldexp(mantissa(random), exponent(random));
    REQUIRE(round_to(Dtype::f32, x) == static_cast<double>(static_cast<float>(x)));
  }
  CHECK(round_to(Dtype::f32, 3.5e38) == HUGE_VAL);
  CHECK(round_to(Dtype::f32, 1e9) == 1e9);
  CHECK(round_to(Dtype::f64, 0.1) == 0.1);
}
