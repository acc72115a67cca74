// Rotary positions (RoPE) and linear biases (ALiBi), per head (docs/steps.md):
//   rotate            x:(n,d) -> pairs (2i, 2i+1) of row p turned by the angle
//                     (p + offset)·θ_i, θ_i = 10000^(−2i/d):(n,d)
//   alibi             -> −m_h·|i − j|:(n,m), m_h = 2^(−8(h+1)/H)
//   row_max_abs_diff  A:(n,m) B:(n,m) -> row i = max_j |B[i, j] − A[i, j]|:(n,1)
#include <algorithm>
#include <cmath>

#include "core/ops/families.hpp"
#include "core/pipeline.hpp"

namespace attn::ops {

namespace {

// The first column of col's pair, 2i.
std::size_t pair_start(std::size_t col) {
  return col - col % 2;
}

double rotate_cell(const CellContext& c, std::size_t row, std::size_t col) {
  const std::size_t first = pair_start(col);
  const double angle = rope_angle(row + c.step.made.offset, first / 2, c.step.value.n_cols);
  const double x = c.read(0, row, first), y = c.read(0, row, first + 1);
  return rotated_pair_cell(x, y, angle, col % 2 == 1);
}

// Both cells of the pair, and the angle they turn by.
void rotate_expand(const ExpandContext& c, CellExpansion& e) {
  e.kind = ExpansionKind::rotate;
  const std::size_t first = pair_start(e.col);
  e.position = e.row + c.step.made.offset;
  e.pair_index = first / 2;
  e.width = c.step.value.n_cols;
  e.cosine = e.col % 2 == 1;  // the second of its pair: x·sin + y·cos
  e.angle = rope_angle(e.position, e.pair_index, e.width);
  add_source(e, c.trace, c.step.made.inputs[0], e.row, first);
  add_source(e, c.trace, c.step.made.inputs[0], e.row, first + 1);
}

// [lo, hi] of a·x for a constant a.
std::pair<double, double> scaled_interval(double a, double lo, double hi) {
  return a >= 0 ? std::pair{a * lo, a * hi} : std::pair{a * hi, a * lo};
}

// x·cos − y·sin (first of a pair) or x·sin + y·cos (second), each term on its own.
Bounds rotate_bounds(const BoundsContext& c) {
  const Bounds& in = c.in(0);
  Bounds out{arma::mat(arma::size(in.lo)), arma::mat(arma::size(in.lo))};
  for (arma::uword r = 0; r < in.lo.n_rows; ++r)
    for (arma::uword col = 0; col < in.lo.n_cols; ++col) {
      const std::size_t first = pair_start(col);
      const double angle = rope_angle(r + c.step.made.offset, first / 2, in.lo.n_cols);
      const bool second = col % 2 == 1;
      const double a = second ? std::sin(angle) : std::cos(angle);
      const double b = second ? std::cos(angle) : -std::sin(angle);
      const auto [x_lo, x_hi] = scaled_interval(a, in.lo(r, first), in.hi(r, first));
      const auto [y_lo, y_hi] = scaled_interval(b, in.lo(r, first + 1), in.hi(r, first + 1));
      out.lo(r, col) = x_lo + y_lo;
      out.hi(r, col) = x_hi + y_hi;
    }
  return out;
}

// Two products and a sum per cell (the sines and cosines are a table).
FlopCount rotate_flops(const Step& /*step*/, const FlopSizes& s) {
  return {3 * s.n * s.m, fmt::format("3·n·d = 3·{}·{}", s.n, s.m)};
}

double alibi_cell(const CellContext& c, std::size_t row, std::size_t col) {
  return alibi_bias_cell(c.step.made.slope, row, col);
}

void alibi_expand(const ExpandContext& c, CellExpansion& e) {
  e.kind = ExpansionKind::alibi;
  e.slope = c.step.made.slope;
  e.position = e.row;
}

double row_max_abs_diff_cell(const CellContext& c, std::size_t row, std::size_t /*col*/) {
  const std::size_t m = c.trace.input(c.step, 0).value.n_cols;
  double out = 0.0;
  for (std::size_t j = 0; j < m; ++j)
    out = std::max(out, std::abs(c.read(1, row, j) - c.read(0, row, j)));
  return out;
}

// Row `row` of the second input against the same row of the first.
void row_max_abs_diff_expand(const ExpandContext& c, CellExpansion& e) {
  e.kind = ExpansionKind::max_abs_diff;
  const Step& other = c.trace.input(c.step, 1);
  const Step& base = c.trace.input(c.step, 0);
  const arma::rowvec a = other.value.row(e.row), b = base.value.row(e.row);
  e.row_values.assign(a.begin(), a.end());
  e.compare_values.assign(b.begin(), b.end());
  e.sources = {operand_ref(other, e.row, 0), operand_ref(base, e.row, 0)};
  e.source_values = {a(0), b(0)};
}

Bounds row_max_abs_diff_bounds(const BoundsContext& c) {
  const Bounds &A = c.in(0), &B = c.in(1);
  const arma::mat up = B.hi - A.lo, down = A.hi - B.lo;
  const arma::mat apart = arma::max(B.lo - A.hi, A.lo - B.hi);
  arma::mat lo = arma::max(apart, 1), hi = arma::max(arma::max(up, down), 1);
  lo.transform([](double v) { return std::max(0.0, v); });
  return {lo, hi};
}

// A subtraction and a comparison per cell compared.
FlopCount row_max_abs_diff_flops(const Step& /*step*/, const FlopSizes& s) {
  return {2 * s.n * s.k, fmt::format("2·n·m = 2·{}·{}", s.n, s.k)};
}

}  // namespace

const OpFacets rotate{Op::rotate,     "rotate",       "head{h}.Q or head{h}.K",
                      &rotate_cell,   &rotate_expand, &rotate_bounds,
                      &rotate_flops};
const OpFacets alibi{Op::alibi,        "alibi",           "none",   &alibi_cell,
                     &alibi_expand,    &exact_step_bounds, &per_cell};
const OpFacets row_max_abs_diff{Op::row_max_abs_diff,
                                "row_max_abs_diff",
                                "head{h}.scores, then head{h}.scores_shifted",
                                &row_max_abs_diff_cell,
                                &row_max_abs_diff_expand,
                                &row_max_abs_diff_bounds,
                                &row_max_abs_diff_flops};

}  // namespace attn::ops

namespace attn {

// The whole step at once, as the pipeline computes it (core/pipeline.hpp).

double rope_angle(std::size_t position, std::size_t pair, std::size_t width) {
  const double theta =
      std::pow(kRopeBase, -2.0 * static_cast<double>(pair) / static_cast<double>(width));
  return static_cast<double>(position) * theta;
}

double rotated_pair_cell(double x, double y, double angle, bool second) {
  return second ? x * std::sin(angle) + y * std::cos(angle)
                : x * std::cos(angle) - y * std::sin(angle);
}

// x:(n,d) -> (n,d)
arma::mat rope_rotate(const arma::mat& x, std::size_t shift) {
  arma::mat out(arma::size(x));
  for (arma::uword p = 0; p < x.n_rows; ++p)
    for (arma::uword col = 0; col + 1 < x.n_cols; col += 2) {
      const double angle = rope_angle(p + shift, col / 2, x.n_cols);
      out(p, col) = rotated_pair_cell(x(p, col), x(p, col + 1), angle, false);
      out(p, col + 1) = rotated_pair_cell(x(p, col), x(p, col + 1), angle, true);
    }
  return out;
}

double alibi_slope(std::size_t head, std::size_t heads) {
  return std::exp2(-8.0 * static_cast<double>(head + 1) / static_cast<double>(heads));
}

double alibi_bias_cell(double slope, std::size_t query, std::size_t key) {
  const double distance = query > key ? static_cast<double>(query - key)
                                      : static_cast<double>(key - query);
  return -slope * distance;
}

// -> (n,m)
arma::mat alibi_bias(double slope, std::size_t n, std::size_t m) {
  arma::mat out(n, m);
  for (arma::uword i = 0; i < n; ++i)
    for (arma::uword j = 0; j < m; ++j) out(i, j) = alibi_bias_cell(slope, i, j);
  return out;
}

// A:(n,m) B:(n,m) -> (n,1)
arma::mat row_max_abs_difference(const arma::mat& A, const arma::mat& B) {
  return arma::max(arma::abs(B - A), 1);
}

}  // namespace attn
