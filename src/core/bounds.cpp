// Interval bounds through the trace's graph, one rule per operation.
#include "core/bounds.hpp"

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

namespace {

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

// Column vectors broadcast to `cols` columns, row vectors to `rows` rows.
arma::mat spread_cols(const arma::mat& column, arma::uword cols) {
  return arma::repmat(column, 1, cols);
}
arma::mat spread_rows(const arma::mat& row, arma::uword rows) {
  return arma::repmat(row, rows, 1);
}

// The exact GELU's value range over [lo, hi]: it falls to its minimum at
// x ≈ -0.7518 and rises on either side.
Bounds gelu_bounds(const Bounds& B) {
  const double x_min = -0.75179187516;
  const arma::mat a = gelu(B.lo), b = gelu(B.hi);
  arma::mat lo = arma::min(a, b);
  const double y_min = gelu(arma::mat{x_min})(0, 0);
  lo.elem(arma::find((B.lo <= x_min) % (B.hi >= x_min))).fill(y_min);
  return {lo, arma::max(a, b)};
}

// The bounds of `step` from the bounds of its inputs, by its operation.
Bounds computed(const Step& step, const Trace& trace, const Overrides& overrides,
                const BoundsMap& bounds) {
  const Operation& made = step.made;
  auto in = [&](std::size_t i) -> const Bounds& { return bounds.at(made.inputs.at(i)); };
  switch (made.op) {
    case Op::given:
    case Op::positional:
      return exact_bounds(step.value);
    case Op::add_positions: {
      const arma::mat PE = step.value - trace.input(step, 0).value;
      return {in(0).lo + PE, in(0).hi + PE};
    }
    case Op::matmul:
    case Op::matmul_t: {
      Bounds out = product_bounds(in(0), made.op == Op::matmul ? in(1) : transposed_bounds(in(1)));
      if (made.inputs.size() > 2) {
        out.lo.each_row() += in(2).lo.row(0);
        out.hi.each_row() += in(2).hi.row(0);
      }
      return out;
    }
    case Op::slice: {
      const arma::uword first = made.offset, last = made.offset + step.value.n_cols - 1;
      return {in(0).lo.cols(first, last), in(0).hi.cols(first, last)};
    }
    case Op::rows: {
      const arma::uword first = made.offset, last = made.offset + step.value.n_rows - 1;
      return {in(0).lo.rows(first, last), in(0).hi.rows(first, last)};
    }
    case Op::divide:
      if (made.divisor < 0) return {in(0).hi / made.divisor, in(0).lo / made.divisor};
      return {in(0).lo / made.divisor, in(0).hi / made.divisor};
    case Op::mask: {
      Bounds out = in(0);
      const arma::uvec masked = arma::find(trace.mask);
      out.lo.elem(masked).fill(made.fill);
      out.hi.elem(masked).fill(made.fill);
      return out;
    }
    case Op::exp:
      return {arma::exp(in(0).lo), arma::exp(in(0).hi)};
    case Op::row_sum:
      return {arma::sum(in(0).lo, 1), arma::sum(in(0).hi, 1)};
    case Op::softmax: {
      // Given exponentials or row sums are divided as on paper, E / Σ (E ≥ 0, Σ > 0).
      if (made.inputs.size() > 2 &&
          (overrides.contains(made.inputs.at(1)) || overrides.contains(made.inputs.at(2)))) {
        Bounds out{in(1).lo, in(1).hi};
        out.lo.each_col() /= in(2).hi;
        out.hi.each_col() /= in(2).lo;
        return out;
      }
      return softmax_bounds(in(0), step.value);
    }
    case Op::mean: {
      const arma::mat zero(step.value.n_rows, step.value.n_cols, arma::fill::zeros);
      Bounds out{zero, zero};
      for (std::size_t i = 0; i < made.inputs.size(); ++i) {
        out.lo += in(i).lo;
        out.hi += in(i).hi;
      }
      return {out.lo / static_cast<double>(made.inputs.size()),
              out.hi / static_cast<double>(made.inputs.size())};
    }
    case Op::max: {
      Bounds out = in(0);
      for (std::size_t i = 1; i < made.inputs.size(); ++i) {
        out.lo = arma::max(out.lo, in(i).lo);
        out.hi = arma::max(out.hi, in(i).hi);
      }
      return out;
    }
    case Op::add:
      return {in(0).lo + in(1).lo, in(0).hi + in(1).hi};
    case Op::row_mean:
      return {arma::mean(in(0).lo, 1), arma::mean(in(0).hi, 1)};
    case Op::row_var: {  // mean over j of (x_j − mean)², each term bounded on its own
      const arma::uword d = in(0).lo.n_cols;
      const Bounds centred{in(0).lo - spread_cols(in(1).hi, d),
                           in(0).hi - spread_cols(in(1).lo, d)};
      const Bounds squares = square_bounds(centred);
      return {arma::mean(squares.lo, 1), arma::mean(squares.hi, 1)};
    }
    case Op::normalise: {  // (x − mean) × 1/√(var + eps), var + eps > 0
      const arma::uword d = in(0).lo.n_cols;
      const Bounds centred{in(0).lo - spread_cols(in(1).hi, d),
                           in(0).hi - spread_cols(in(1).lo, d)};
      const Bounds inverse_root{
          spread_cols(1.0 / arma::sqrt(in(2).hi + made.eps), d),
          spread_cols(1.0 / arma::sqrt(arma::clamp(in(2).lo, 0.0, arma::datum::inf) + made.eps),
                      d)};
      return times_bounds(centred, inverse_root);
    }
    case Op::scale_shift: {
      const arma::uword n = in(0).lo.n_rows;
      const Bounds gamma{spread_rows(in(1).lo, n), spread_rows(in(1).hi, n)};
      const Bounds scaled = times_bounds(in(0), gamma);
      return {scaled.lo + spread_rows(in(2).lo, n), scaled.hi + spread_rows(in(2).hi, n)};
    }
    case Op::relu:
      return {relu(in(0).lo), relu(in(0).hi)};
    case Op::gelu:
      return gelu_bounds(in(0));
    case Op::identity:
      return in(0);
    case Op::max_abs_diff: {  // row t: max_j |decoded_t[j] − full[t, j]|, each term on its own
      arma::mat lo(step.value.n_rows, 1, arma::fill::zeros), hi(step.value.n_rows, 1);
      for (arma::uword t = 0; t < step.value.n_rows; ++t) {
        const Bounds& row = in(1 + t);
        const arma::rowvec up = row.hi.row(0) - in(0).lo.row(t);    // largest decoded − full
        const arma::rowvec down = in(0).hi.row(t) - row.lo.row(0);  // largest full − decoded
        const arma::rowvec apart = arma::max(row.lo.row(0) - in(0).hi.row(t),
                                             in(0).lo.row(t) - row.hi.row(0));  // the least gap
        hi(t, 0) = arma::max(up, down).max();
        lo(t, 0) = std::max(0.0, apart.max());
      }
      return {lo, hi};
    }
    case Op::concat: {
      Bounds out;
      for (std::size_t i = 0; i < made.inputs.size(); ++i) {
        out.lo = arma::join_rows(out.lo, in(i).lo);
        out.hi = arma::join_rows(out.hi, in(i).hi);
      }
      return out;
    }
  }
  return exact_bounds(step.value);
}

}  // namespace

BoundsMap trace_bounds(const Trace& trace, const Overrides& overrides, const BoundsMap& given) {
  BoundsMap bounds;
  for (const Step& step : trace.steps) {
    Bounds b = computed(step, trace, overrides, bounds);
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
