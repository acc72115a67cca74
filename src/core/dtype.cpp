// Number formats and exact rounding to them (docs/numerics.md).
#include "core/dtype.hpp"

#include <algorithm>
#include <cmath>

#include "core/i18n.hpp"

namespace attn {

namespace {

// The shape of a binary floating-point format: `precision` significand bits
// (the leading one included), exponents of normal numbers emin..emax.
struct Binary {
  int precision;
  int emin;
  int emax;
};

Binary binary(Dtype dtype) {
  switch (dtype) {
    case Dtype::f32:
      return {24, -126, 127};
    case Dtype::f16:
      return {11, -14, 15};
    case Dtype::bf16:
      return {8, -126, 127};
    case Dtype::f64:
      break;
  }
  return {53, -1022, 1023};
}

}  // namespace

std::size_t dtype_bytes(Dtype dtype) {
  switch (dtype) {
    case Dtype::f64:
      return 8;
    case Dtype::f32:
      return 4;
    case Dtype::f16:
    case Dtype::bf16:
      return 2;
  }
  return 8;
}

std::string_view dtype_name(Dtype dtype) {
  switch (dtype) {
    case Dtype::f64:
      return "f64";
    case Dtype::f32:
      return "f32";
    case Dtype::f16:
      return "f16";
    case Dtype::bf16:
      return "bf16";
  }
  return "f64";
}

std::optional<Dtype> parse_dtype(std::string_view name) {
  for (Dtype d : {Dtype::f64, Dtype::f32, Dtype::f16, Dtype::bf16})
    if (dtype_name(d) == name) return d;
  return std::nullopt;
}

std::string_view dtype_summary(Dtype dtype) {
  switch (dtype) {
    case Dtype::f64:
      return "";
    case Dtype::f32:
      return tr(
          "f32 (IEEE single), emulated exactly on the CPU: every input and step rounded "
          "to f32, products summed in order in f32");
    case Dtype::f16:
      return tr(
          "f16 (IEEE half), emulated exactly on the CPU: inputs rounded to f16, each step "
          "computed in f32 (products summed in order) and rounded to f16");
    case Dtype::bf16:
      return tr(
          "bf16 (bfloat16), emulated exactly on the CPU: inputs rounded to bf16, each "
          "step computed in f32 (products summed in order) and rounded to bf16");
  }
  return "";
}

double dtype_max(Dtype dtype) {
  const Binary b = binary(dtype);
  // (2 − 2^(1−p)) · 2^emax
  return std::ldexp(2.0 - std::ldexp(1.0, 1 - b.precision), b.emax);
}

double round_to(Dtype dtype, double x) {
  if (dtype == Dtype::f64 || !std::isfinite(x) || x == 0.0) return x;
  const Binary b = binary(dtype);
  // The spacing of the format's numbers around |x| (fixed below the normals),
  // a power of two: x / quantum and back are exact in double.
  const int exponent = std::max(std::ilogb(x), b.emin);
  const double quantum = std::ldexp(1.0, exponent - (b.precision - 1));
  // std::nearbyint rounds to the nearest integer, ties to even (the default
  // rounding mode, which nothing here changes).
  const double rounded = std::nearbyint(x / quantum) * quantum;
  if (std::fabs(rounded) > dtype_max(dtype)) return std::copysign(HUGE_VAL, x);
  return rounded == 0.0 ? std::copysign(0.0, x) : rounded;
}

arma::mat round_to(Dtype dtype, const arma::mat& M) {
  if (dtype == Dtype::f64) return M;
  arma::mat out = M;
  out.transform([dtype](double x) { return round_to(dtype, x); });
  return out;
}

}  // namespace attn
