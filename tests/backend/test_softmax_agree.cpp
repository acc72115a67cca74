// The one softmax of each arithmetic agree on the same rows: the f64 reference
// (core/arithmetic), the emulated f32/f16/bf16 (core/format_arithmetic), the
// per-row device code (backend/attention_rows.hpp) and every vectorised
// kernel this CPU runs (backend/column_softmax*), on finite rows, rows with
// -inf masked keys, a fully masked row under each masked_row policy, and
// large scores (exp would overflow without the max subtracted).
//
// The bound (support/fp_bounds.hpp): two f64 softmaxes within softmax_bound;
// an emulated format within the f32 rounding of each of its operations (the
// subtraction, exp, the m-term sum, the division), then its store, per side,
// plus the f64 side's; NaN, ±inf and the policy's 0 or 1/m exactly.
//
// Shape key: n rows (queries), m keys.
#include <doctest/doctest.h>

#include <cmath>
#include <limits>

#include "backend/attention_rows.hpp"
#include "backend/column_softmax.hpp"
#include "core/attention.hpp"
#include "core/format_arithmetic.hpp"
#include "support/fp_bounds.hpp"

namespace {

using attn::Dtype;
using attn::MaskedRowPolicy;
namespace fp = attn::testing;

constexpr double kInf = std::numeric_limits<double>::infinity();

// (5,6): finite; two keys masked; every key masked; large; widely spread.
arma::mat sample_rows() {
  return {{0.25, -1.5, 2.0, 0.75, -0.5, 1.25},
          {1.0, -kInf, 0.5, -kInf, 2.5, -1.0},
          {-kInf, -kInf, -kInf, -kInf, -kInf, -kInf},
          {700.0, 704.0, 708.0, 712.0, 696.0, 710.0},
          {300.0, -300.0, 0.0, 296.0, 1.0, -40.0}};
}

// The unit roundoff of a format's store, after the f32 operation (0 for f32
// itself: its store rounds nothing more), and its smallest subnormal.
double store_unit(Dtype dtype) {
  switch (dtype) {
    case Dtype::f64:
    case Dtype::f32:
      return 0.0;
    case Dtype::f16:
      return 0x1p-11;
    case Dtype::bf16:
      return 0x1p-8;
  }
  return 0.0;
}

double smallest_subnormal(Dtype dtype) {
  switch (dtype) {
    case Dtype::f64:
      return fp::kUnderflow;
    case Dtype::f32:
      return 0x1p-149;
    case Dtype::f16:
      return 0x1p-24;
    case Dtype::bf16:
      return 0x1p-133;
  }
  return 0.0;
}

// x:(n,m) -> how far the emulated `dtype` softmax of x may be from the f64
// one. Per side, to first order: u32·|x_j − M| (the subtraction's rounding,
// amplified by exp) + u32 + lib (exp, rounded to f32) + Σ_k w_k·(the same for
// k) + γ_m(u32) (the sum) + u32 (the division) + the store; an underflow
// (f32's exp, the format's store) errs by at most its smallest subnormal.
fp::Bound format_softmax_bound(const arma::mat& x, Dtype dtype) {
  const double u = 0x1p-24, lib = 2.0 * fp::kLibraryUlps * fp::kUnitRoundoff;
  fp::Bound out = fp::softmax_bound(x);  // the f64 side's
  for (std::size_t i = 0; i < x.n_rows; ++i) {
    const double top = x.row(i).max();
    if (!std::isfinite(top)) continue;
    arma::rowvec own(x.n_cols, arma::fill::zeros), w(x.n_cols, arma::fill::zeros);
    for (std::size_t j = 0; j < x.n_cols; ++j) {
      if (!std::isfinite(x(i, j))) continue;  // -inf: exactly 0 on both sides
      own(j) = std::expm1(u * (top - x(i, j)) * (1.0 + u)) + u + lib;
      w(j) = std::exp(x(i, j) - top);
    }
    w /= arma::accu(w);
    const double sum = arma::dot(w, own) * (1.0 + 1e-6) + fp::fp_gamma(x.n_cols, u);
    for (std::size_t j = 0; j < x.n_cols; ++j) {
      const double side = (1.0 + own(j)) * (1.0 + sum) * (1.0 + u) * (1.0 + store_unit(dtype)) - 1;
      out.relative(i, j) += side / (1.0 - side);
      out.absolute(i, j) += 2.0 * (0x1p-149 + smallest_subnormal(dtype));
    }
  }
  return out;
}

// weights:(n,m) of the per-row device code, row by row from column-major S.
arma::mat device_rows(const arma::mat& S, MaskedRowPolicy policy) {
  arma::mat W(S.n_rows, S.n_cols);
  for (std::size_t i = 0; i < S.n_rows; ++i)
    attn::rows::row_softmax(S.memptr() + i, W.memptr() + i, S.n_rows, S.n_cols, policy);
  return W;
}

// weights:(n,m) of a vectorised kernel: each row of S one column of its input.
arma::mat vectorised(const attn::SoftmaxKernel& kernel, const arma::mat& S) {
  arma::mat columns = S.t();  // (m,n)
  kernel.run(columns.memptr(), S.n_cols, S.n_rows, S.n_cols);
  return columns.t();
}

void check_within(const arma::mat& got, const arma::mat& want, const fp::Bound& bound) {
  const fp::Excess e = fp::beyond_bound(got, want, bound, "f64's");
  CHECK_MESSAGE(e.cells == 0, e.first);
  CHECK(e.worst <= 1.0);
}

}  // namespace

const MaskedRowPolicy kPolicies[] = {MaskedRowPolicy::nan, MaskedRowPolicy::zero,
                                     MaskedRowPolicy::uniform};

TEST_CASE("softmax agree: the f64 reference masks exactly, shifts by the max, applies the policy") {
  const arma::mat S = sample_rows();
  for (const MaskedRowPolicy policy : kPolicies) {
    CAPTURE(static_cast<int>(policy));
    const arma::mat reference = attn::attention_weights(attn::f64_arithmetic(), S, policy);
    CHECK(reference(1, 1) == 0.0);  // a masked key weighs exactly 0
    CHECK(arma::accu(reference.row(1)) == doctest::Approx(1.0));
    CHECK(std::isfinite(reference(3, 3)));  // exp would overflow without the max subtracted
    for (std::size_t j = 0; j < S.n_cols; ++j) switch (policy) {
        case MaskedRowPolicy::nan:
          CHECK(std::isnan(reference(2, j)));
          break;
        case MaskedRowPolicy::zero:
          CHECK(reference(2, j) == 0.0);
          break;
        case MaskedRowPolicy::uniform:
          CHECK(reference(2, j) == 1.0 / 6.0);
          break;
      }
  }
}

TEST_CASE("softmax agree: the per-row device code, under each masked_row policy") {
  const arma::mat S = sample_rows();
  for (const MaskedRowPolicy policy : kPolicies) {
    CAPTURE(static_cast<int>(policy));
    check_within(device_rows(S, policy), attn::attention_weights(attn::f64_arithmetic(), S, policy),
                 fp::softmax_bound(S));
  }
}

TEST_CASE("softmax agree: the emulated formats, on the rows stored in the format") {
  for (const Dtype dtype : {Dtype::f32, Dtype::f16, Dtype::bf16}) {
    CAPTURE(attn::dtype_name(dtype));
    const arma::mat stored = attn::store_in(dtype, sample_rows());
    const attn::FormatArithmetic format(dtype);
    for (const MaskedRowPolicy policy : kPolicies) {
      CAPTURE(static_cast<int>(policy));
      check_within(attn::attention_weights(format, stored, policy),
                   attn::attention_weights(attn::f64_arithmetic(), stored, policy),
                   format_softmax_bound(stored, dtype));
    }
  }
}

TEST_CASE(
    "softmax agree: every vectorised kernel, a fully masked row NaN (the policy is the caller's)") {
  const arma::mat S = sample_rows();
  const arma::mat reference =
      attn::attention_weights(attn::f64_arithmetic(), S, MaskedRowPolicy::nan);
  for (const attn::SoftmaxKernel& kernel : attn::column_softmax_kernels()) {
    CAPTURE(kernel.name);
    check_within(vectorised(kernel, S), reference, fp::softmax_bound(S));
  }
}

TEST_CASE("softmax agreement: a value moved past its bound is caught") {
  const arma::mat S = sample_rows();
  const arma::mat reference =
      attn::attention_weights(attn::f64_arithmetic(), S, MaskedRowPolicy::nan);
  const fp::Bound bound = fp::softmax_bound(S);
  arma::mat moved = device_rows(S, MaskedRowPolicy::nan);
  moved(0, 2) += 4.0 * bound.limit(0, 2, moved(0, 2), reference(0, 2));
  CHECK(fp::beyond_bound(moved, reference, bound).cells == 1);
  const arma::mat stored = attn::store_in(Dtype::f16, S);
  arma::mat f16 =
      attn::attention_weights(attn::FormatArithmetic(Dtype::f16), stored, MaskedRowPolicy::nan);
  const arma::mat want =
      attn::attention_weights(attn::f64_arithmetic(), stored, MaskedRowPolicy::nan);
  const fp::Bound f16_bound = format_softmax_bound(stored, Dtype::f16);
  f16(0, 0) += 2.0 * f16_bound.limit(0, 0, f16(0, 0), want(0, 0));
  CHECK(fp::beyond_bound(f16, want, f16_bound).cells == 1);
}
