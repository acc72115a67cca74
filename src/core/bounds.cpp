// Interval bounds through the trace's graph; the rule of each operation is its
// bounds facet (core/ops/).
#include "core/bounds.hpp"

#include "core/ops/op.hpp"

#include <algorithm>
#include <cmath>

namespace attn {

Bounds exact_bounds(const arma::mat& M) {
  return {M, M};
}

Bounds product_bounds(const Bounds& A, const Bounds& B) {
  const arma::mat Am = (A.lo + A.hi) / 2, Ar = (A.hi - A.lo) / 2;
  const arma::mat Bm = (B.lo + B.hi) / 2, Br = (B.hi - B.lo) / 2;
  const arma::mat mid = Am * Bm;
  const arma::mat rad = arma::abs(Am) * Br + Ar * arma::abs(Bm) + Ar * Br;
  return {mid - rad, mid + rad};
}

Bounds transposed_bounds(const Bounds& B) {
  return {B.lo.t(), B.hi.t()};
}

// w_j = 1 / (1 + Σ_{k≠j} exp(x_k − x_j)): lowest with x_j low and the others high.
Bounds softmax_bounds(const Bounds& S, const arma::mat& weights) {
  Bounds W = exact_bounds(weights);
  for (arma::uword i = 0; i < S.lo.n_rows; ++i) {
    if (!weights.row(i).is_finite() || S.hi.row(i).max() == -arma::datum::inf) continue;
    for (arma::uword j = 0; j < S.lo.n_cols; ++j) {
      double to_lo = 0, to_hi = 0;
      for (arma::uword k = 0; k < S.lo.n_cols; ++k) {
        if (k == j) continue;
        to_lo += std::exp(S.hi(i, k) - S.lo(i, j));
        to_hi += std::exp(S.lo(i, k) - S.hi(i, j));
      }
      W.lo(i, j) = S.lo(i, j) == -arma::datum::inf ? 0.0 : 1.0 / (1.0 + to_lo);
      W.hi(i, j) = S.hi(i, j) == -arma::datum::inf ? 0.0 : 1.0 / (1.0 + to_hi);
    }
  }
  return W;
}

// Each cell's square, [lo, hi] -> [lo², hi²] ordered, 0 when the interval holds 0.
Bounds square_bounds(const Bounds& B) {
  const arma::mat a = arma::square(B.lo), b = arma::square(B.hi);
  arma::mat lo = arma::min(a, b);
  lo.elem(arma::find((B.lo <= 0) % (B.hi >= 0))).zeros();
  return {lo, arma::max(a, b)};
}

// A cell-by-cell product of intervals.
Bounds times_bounds(const Bounds& A, const Bounds& B) {
  const arma::mat p1 = A.lo % B.lo, p2 = A.lo % B.hi, p3 = A.hi % B.lo, p4 = A.hi % B.hi;
  return {arma::min(arma::min(p1, p2), arma::min(p3, p4)),
          arma::max(arma::max(p1, p2), arma::max(p3, p4))};
}

BoundsMap trace_bounds(const Trace& trace, const Overrides& overrides, const BoundsMap& given) {
  BoundsMap bounds;
  for (const Step& step : trace.steps) {
    Bounds b = op_facets(step.made.op).bounds({trace, step, overrides, bounds});
    // Cells the caller gave lie within the bounds given for them.
    if (const auto o = overrides.find(step.id); o != overrides.end()) {
      const auto g = given.find(step.id);
      const arma::uvec cells = arma::find(o->second.given);
      for (const arma::uword cell : cells) {
        b.lo(cell) = g == given.end() ? step.value(cell) : g->second.lo(cell);
        b.hi(cell) = g == given.end() ? step.value(cell) : g->second.hi(cell);
      }
    }
    bounds.emplace(step.id, std::move(b));
  }
  return bounds;
}

}  // namespace attn
