// How far two correct double-precision implementations of one operation may
// differ, whatever order each adds in (docs/numerics.md, "Comparing with
// another implementation"); the C++ twin of tests/bounds.py, for the tests
// that compare the pipeline or a backend with another implementation.
//
// A bound is absolute + relative·(|a| + |b|), cell by cell, for two results a
// and b of one operation computed from the same inputs:
//   - a sum of k products: |a − b| ≤ 2·γ_k·Σ|terms| in any order, with or
//     without fused multiply-adds, γ_k = k·u / (1 − k·u), u = 2^-53;
//   - a few correctly rounded operations: each errs by u of its own result;
//   - exp from a library: kLibraryUlps ulps per call;
//   - NaN and ±inf are never within a bound: they must sit in the same cells.
// forward_error() carries such bounds through a whole forward pass, for the
// comparisons that can only see its end (the forward plan).
//
// Shape key: n queries, m keys, k the length of a sum, d model width, h heads.
#pragma once

#include <armadillo>
#include <cmath>
#include <cstddef>
#include <limits>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace attn::testing {

inline constexpr double kUnitRoundoff = 0x1p-53;  // u of IEEE double
inline constexpr double kUnderflow = 0x1p-1074;   // the smallest subnormal: an underflow's error
// ulps of a library's exp per call: glibc's double exp is within 0.52 ulp,
// SLEEF's u10 functions (the forward plan's softmax) within 1 ulp.
inline constexpr int kLibraryUlps = 4;

// γ_k = k·u / (1 − k·u): the relative error of k roundings.
inline double fp_gamma(std::size_t k, double u = kUnitRoundoff) {
  const double ku = static_cast<double>(k) * u;
  if (ku >= 1.0) throw std::invalid_argument("fp_gamma: k·u >= 1");
  return ku / (1.0 - ku);
}

struct Bound {
  arma::mat absolute;  // the step's shape
  arma::mat relative;  // the step's shape
  double limit(std::size_t r, std::size_t c, double a, double b) const {
    return absolute(r, c) + relative(r, c) * (std::abs(a) + std::abs(b));
  }
};

// Both sides within `per_side`·|exact|: |a − b| ≤ per_side·(|a| + |b|) / (1 − per_side).
inline double both_sides(double per_side) {
  return per_side / (1.0 - per_side);
}

// Bit for bit: copies, masks, a maximum, one correctly rounded operation.
inline Bound exact_bound(std::size_t rows, std::size_t cols) {
  return {arma::mat(rows, cols, arma::fill::zeros), arma::mat(rows, cols, arma::fill::zeros)};
}

// `operations` correctly rounded operations (+ − × ÷ √) from the same inputs.
inline Bound elementwise_bound(std::size_t rows, std::size_t cols, std::size_t operations) {
  return {
      arma::mat(rows, cols, arma::fill::value(2.0 * static_cast<double>(operations) * kUnderflow)),
      arma::mat(rows, cols, arma::fill::value(both_sides(fp_gamma(operations))))};
}

// exp (or another library function) of the same inputs.
inline Bound library_bound(std::size_t rows, std::size_t cols) {
  return {arma::mat(rows, cols, arma::fill::value(2.0 * kLibraryUlps * kUnderflow)),
          arma::mat(rows, cols, arma::fill::value(both_sides(2.0 * kLibraryUlps * kUnitRoundoff)))};
}

// A sum of `count` rounded terms whose magnitudes add up to `terms`: each side
// within γ_count·terms of the exact sum, in any order.
inline Bound sum_bound(const arma::mat& terms, std::size_t count) {
  const std::size_t k = std::max<std::size_t>(count, 1);
  // terms itself was summed in double: raise it by its own worst rounding.
  const arma::mat raised = terms * (1.0 + fp_gamma(k + 1));
  return {2.0 * fp_gamma(k) * raised + 2.0 * static_cast<double>(k) * kUnderflow,
          arma::mat(terms.n_rows, terms.n_cols, arma::fill::zeros)};
}

// A:(n,k) B:(k,p) (+ bias:(1,p), added to every row) -> the bound of A·B (+ bias):
// each cell a sum of k products, k + 1 terms with the bias.
inline Bound product_bound(const arma::mat& A, const arma::mat& B,
                           const arma::rowvec* bias = nullptr) {
  arma::mat terms = arma::abs(A) * arma::abs(B);
  if (A.n_cols == 0) terms.zeros(A.n_rows, B.n_cols);
  if (bias) terms.each_row() += arma::abs(*bias);
  return sum_bound(terms, A.n_cols + (bias ? 1 : 0));
}

// E:(n,m) -> the bound of Σ_j E[i, j]:(n,1).
inline Bound row_sum_bound(const arma::mat& E) {
  return sum_bound(arma::sum(arma::abs(E), 1), E.n_cols);
}

// The cell-by-cell mean of h matrices: h terms summed, then a division (or a
// product by a rounded 1/h).
inline Bound mean_bound(const std::vector<arma::mat>& values) {
  arma::mat terms(values.at(0).n_rows, values.at(0).n_cols, arma::fill::zeros);
  for (const arma::mat& v : values) terms += arma::abs(v);
  return sum_bound(terms / static_cast<double>(values.size()), values.size() + 2);
}

// x:(n,m) -> the bound of its stable row softmax, the same x on both sides:
// w_j = exp(x_j − M) / Σ_k exp(x_k − M), M the row max (exact). Relative error
// per side of w_j, to first order: u·|x_j − M| + lib (the subtraction's
// rounding, amplified by exp) + Σ_k w_k·(u·|x_k − M| + lib) + γ_m (the sum, a
// weighted mean of its terms' errors) + 2u (÷ Σ, or × a rounded 1/Σ). Rows
// whose every cell is -inf are the caller's (NaN, or the masked-row policy).
inline Bound softmax_bound(const arma::mat& x) {
  const double u = kUnitRoundoff, lib = 2.0 * kLibraryUlps * kUnitRoundoff;
  Bound out = exact_bound(x.n_rows, x.n_cols);
  for (std::size_t i = 0; i < x.n_rows; ++i) {
    double top = -std::numeric_limits<double>::infinity();
    for (std::size_t j = 0; j < x.n_cols; ++j) top = std::max(top, x(i, j));
    if (!std::isfinite(top)) continue;
    arma::rowvec own(x.n_cols, arma::fill::zeros), w(x.n_cols, arma::fill::zeros);
    double total = 0.0;
    for (std::size_t j = 0; j < x.n_cols; ++j) {
      if (!std::isfinite(x(i, j))) continue;  // -inf: exactly 0 on both sides
      const double d = top - x(i, j);
      own(j) = std::expm1(u * d * (1.0 + u)) + lib;
      w(j) = std::exp(-d);
      total += w(j);
    }
    w /= total;
    const double sum = arma::dot(w, own) * (1.0 + 1e-6) + lib + fp_gamma(x.n_cols);
    for (std::size_t j = 0; j < x.n_cols; ++j) {
      const double per_side = (1.0 + own(j)) * (1.0 + sum) * (1.0 + fp_gamma(2)) - 1.0;
      out.relative(i, j) = both_sides(std::min(per_side, 0.5));
      out.absolute(i, j) = 2.0 * (kLibraryUlps + 2) * kUnderflow;
    }
  }
  return out;
}

// What a comparison found: cells beyond their bound, the first of them in
// words, and the largest |a − b| / bound among all cells (≤ 1 when all pass).
struct Excess {
  std::size_t cells = 0;
  std::string first;
  double worst = 0.0;
};

// `got` against `want` cell by cell within `bound`; NaN must meet NaN and an
// infinity the same infinity. `reference` names want's side in the message.
inline Excess beyond_bound(const arma::mat& got, const arma::mat& want, const Bound& bound,
                           const std::string& reference = "the reference's") {
  Excess out;
  std::ostringstream text;
  text.precision(17);
  if (got.n_rows != want.n_rows || got.n_cols != want.n_cols) {
    text << "shape " << got.n_rows << "x" << got.n_cols << ", " << reference << " " << want.n_rows
         << "x" << want.n_cols;
    out.cells = 1;
    out.first = text.str();
    return out;
  }
  for (std::size_t c = 0; c < want.n_cols; ++c)
    for (std::size_t r = 0; r < want.n_rows; ++r) {
      const double a = got(r, c), b = want(r, c);
      bool ok;
      if (std::isnan(a) || std::isnan(b)) {
        ok = std::isnan(a) && std::isnan(b);
      } else if (std::isinf(a) || std::isinf(b)) {
        ok = a == b;
      } else {
        const double limit = bound.limit(r, c, a, b), diff = std::abs(a - b);
        ok = diff <= limit;
        if (diff > 0)
          out.worst = std::max(out.worst,
                               limit > 0 ? diff / limit : std::numeric_limits<double>::infinity());
        if (!ok && out.cells == 0)
          text << "cell (" << r << "," << c << ") is " << a << ", " << reference << " " << b
               << ": |difference| " << diff << " > bound " << limit;
      }
      if (!ok && out.cells == 0 && text.str().empty())
        text << "cell (" << r << "," << c << ") is " << a << ", " << reference << " " << b;
      out.cells += !ok;
    }
  if (out.cells > 1) text << " (and " << out.cells - 1 << " more cells)";
  out.first = text.str();
  return out;
}

// A computed matrix and a bound on its distance from the exact result of the
// computation that made it, cell by cell, for any order of every sum.
struct Carried {
  arma::mat value;
  arma::mat error;
};

// Â:(n,k)±eA · B̂:(k,p)±eB (÷ divisor), with `extra` roundings besides the
// sum's (a scale). Another implementation's Â and B̂ lie within 2·eA, 2·eB of
// these, so |its fl(Â·B̂) − A·B| ≤ eA·|B̂| + |Â|·eB + 3·eA·eB (the inputs'
// errors) + γ_{k+extra}·(|Â| + 2eA)·(|B̂| + 2eB) (its own rounding).
inline Carried carried_product(const Carried& A, const Carried& B, double divisor = 1.0,
                               std::size_t extra = 0) {
  const arma::mat absA = arma::abs(A.value), absB = arma::abs(B.value);
  const arma::mat spread = A.error * absB + absA * B.error + 3.0 * (A.error * B.error);
  const double g = fp_gamma(A.value.n_cols + extra + 1);  // +1: these sums, done in double
  return {A.value * B.value / divisor,
          (spread * (1.0 + 3.0 * g) + g * (absA * absB)) / divisor +
              static_cast<double>(A.value.n_cols + extra) * kUnderflow};
}

// The stable row softmax of Ŝ±e: |ŵ − w| ≤ ŵ·(expm1(e_j + max_k e_k) + R_j)(1 + …), with R
// the rounding of softmax_bound (per side) and the second factor a first-order
// margin; a row that is all -inf stays NaN.
inline Carried carried_softmax(const Carried& S) {
  arma::mat w = S.value;
  w.each_col() -= arma::max(S.value, 1);
  w = arma::exp(w);
  w.each_col() /= arma::sum(w, 1);
  const Bound local = softmax_bound(S.value);
  arma::mat error(w.n_rows, w.n_cols, arma::fill::zeros);
  for (std::size_t i = 0; i < w.n_rows; ++i) {
    double spread = 0.0;
    for (std::size_t j = 0; j < w.n_cols; ++j)
      if (std::isfinite(S.value(i, j))) spread = std::max(spread, S.error(i, j));
    for (std::size_t j = 0; j < w.n_cols; ++j) {
      // local.relative is both sides' (r / (1 − r)), at least one side's r.
      const double moved = std::expm1(S.error(i, j) + spread);
      error(i, j) =
          std::abs(w(i, j)) * ((1.0 + moved) * (1.0 + local.relative(i, j)) - 1.0) * (1.0 + 1e-6) +
          local.absolute(i, j);
    }
  }
  return {w, error};
}

// X:(n,d) W_QKV:(d,3d) W_O:(d,d), h heads of d/h -> output:(n,d) =
// [softmax(Q_h·K_hᵀ/√(d/h))·V_h]_h·W_O, computed here, with a bound on |computed − exact| that
// holds for every implementation of the same formula, in any summation order (X and the weights
// exact). Two implementations differ by at most twice `error`.
inline Carried forward_error(const arma::mat& X, const arma::mat& W_QKV, const arma::mat& W_O,
                             std::size_t heads) {
  const std::size_t d = X.n_cols, w = d / heads;
  const Carried x{X, arma::mat(X.n_rows, X.n_cols, arma::fill::zeros)};
  const Carried qkv = carried_product(x, {W_QKV, arma::mat(arma::size(W_QKV), arma::fill::zeros)});
  Carried concat{arma::mat(X.n_rows, d), arma::mat(X.n_rows, d)};
  const double scale = std::sqrt(static_cast<double>(w));
  for (std::size_t h = 0; h < heads; ++h) {
    const auto part = [&](std::size_t first) {
      return Carried{qkv.value.cols(first, first + w - 1), qkv.error.cols(first, first + w - 1)};
    };
    const Carried Q = part(h * w), K = part(d + h * w), V = part(2 * d + h * w);
    // the scale: √(d/h) rounded, then a division or a product by its rounded inverse
    const Carried scaled = carried_product(Q, {K.value.t(), K.error.t()}, scale, /*extra=*/3);
    const Carried context = carried_product(carried_softmax(scaled), V);
    concat.value.cols(h * w, (h + 1) * w - 1) = context.value;
    concat.error.cols(h * w, (h + 1) * w - 1) = context.error;
  }
  return carried_product(concat, {W_O, arma::mat(arma::size(W_O), arma::fill::zeros)});
}

}  // namespace attn::testing
