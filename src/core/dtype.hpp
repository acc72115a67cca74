// Number formats (docs/numerics.md): the names of f64, f32, f16 and bf16, the
// bytes of one number, and exact rounding of a double to each format
// (round to nearest, ties to even, subnormals, overflow to ±inf, NaN kept).
#pragma once

#include <armadillo>
#include <cstddef>
#include <optional>
#include <string_view>

namespace attn {

// A number format and the bytes of one of its numbers.
enum class Dtype { f64, f32, f16, bf16 };
std::size_t dtype_bytes(Dtype dtype);
std::string_view dtype_name(Dtype dtype);
// "f64" | "f32" | "f16" | "bf16"; nullopt for anything else.
std::optional<Dtype> parse_dtype(std::string_view name);

// One sentence for a trace's header: how a pass in `dtype` computes.
// Empty for f64 (every existing trace reads as it did). In language() (tr).
std::string_view dtype_summary(Dtype dtype);

// The largest finite number of `dtype`: 65504 for f16, (2 − 2^-7)·2^127 for bf16.
double dtype_max(Dtype dtype);

// x rounded to the nearest number of `dtype`, ties to the even significand, as
// IEEE 754 does: below the smallest normal the spacing stays that of the
// subnormals (2^-24 for f16); a result beyond the largest finite number after
// rounding is ±inf (65520 -> inf in f16, 65519 -> 65504); ±inf, NaN and the
// sign of 0 are kept. Rounded once, straight from the double (never through
// float first: that would round twice). f64 returns x.
double round_to(Dtype dtype, double x);

// Every cell rounded with round_to. f64 returns M unchanged.
arma::mat round_to(Dtype dtype, const arma::mat& M);

}  // namespace attn
