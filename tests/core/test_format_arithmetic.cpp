// The emulated f32 / f16 / bf16 arithmetic: accumulation in f32, in order,
// and the softmax computed in f32 then rounded.
#include <doctest/doctest.h>

#include <cmath>

#include "core/format_arithmetic.hpp"

using attn::Dtype;
using attn::FormatArithmetic;

TEST_CASE("f16 products are summed in f32, not in f16") {
  // 2048 + 1 + 1: in f16 each +1 is a tie back to 2048; in f32 it is 2050,
  // which f16 holds.
  FormatArithmetic f16(Dtype::f16);
  const arma::mat A = {{2048, 1, 1}};
  const arma::mat B(3, 1, arma::fill::ones);
  CHECK(f16.matmul(A, B)(0, 0) == 2050.0);
  CHECK(f16.matmul_transposed(A, B.t())(0, 0) == 2050.0);
}

TEST_CASE("f32 sums in order t = 0, 1, ...: each partial sum rounded") {
  // 2^24 + 1 is a tie, back to 2^24, twice; the other order would give 2^24 + 2.
  FormatArithmetic f32(Dtype::f32);
  const arma::mat A = {{16777216, 1, 1}};
  const arma::mat B(3, 1, arma::fill::ones);
  CHECK(f32.matmul(A, B)(0, 0) == 16777216.0);
  const arma::mat A_reversed = {{1, 1, 16777216}};
  CHECK(f32.matmul(A_reversed, B)(0, 0) == 16777218.0);
}

TEST_CASE("bf16 result rounded once, after the f32 sum") {
  FormatArithmetic bf16(Dtype::bf16);
  const arma::mat A = {{1, 0.00390625}};  // 1 + 2^-8: a tie in bf16 -> 1
  const arma::mat B(2, 1, arma::fill::ones);
  CHECK(bf16.matmul(A, B)(0, 0) == 1.0);
}

TEST_CASE("softmax in f16: computed in f32, rounded, -inf keys 0, a row of -inf NaN") {
  FormatArithmetic f16(Dtype::f16);
  const double inf = HUGE_VAL;
  const arma::mat S = {{0, 0, 0}, {0, -inf, -inf}, {-inf, -inf, -inf}};
  const arma::mat W = f16.row_softmax(S);
  CHECK(W(0, 0) == 0.333251953125);  // f16(f32(1/3))
  CHECK(W(1, 0) == 1.0);
  CHECK(W(1, 1) == 0.0);
  CHECK(std::isnan(W(2, 0)));
}

TEST_CASE("store_in: an f32 result, then the format") {
  // f32 rounds 1 + 2^-11 + 2^-40 to 1 + 2^-11, a tie in f16, then 1: the
  // double rounding of an f32 kernel writing f16, on purpose.
  CHECK(attn::store_in(Dtype::f16, 1 + std::ldexp(1, -11) + std::ldexp(1, -40)) == 1.0);
  CHECK(attn::store_in(Dtype::f64, 0.1) == 0.1);
  FormatArithmetic f16(Dtype::f16);
  CHECK(f16.row_sum(arma::mat{{2048, 1, 1}})(0, 0) == 2050.0);
}
