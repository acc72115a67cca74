// LayerNorm of the encoder layer, piece by piece: each row's mean and biased
// variance, the normalised row, and the per-feature scale γ and shift β.
//   row_mean     x:(n,d) -> μ:(n,1)
//   row_var      x:(n,d) μ:(n,1) -> σ² = Σ_j (x_ij − μ_i)² / d:(n,1)
//   normalise    x:(n,d) μ:(n,1) σ²:(n,1) -> x̂ = (x − μ) / √(σ² + ε):(n,d)
//   scale_shift  x̂:(n,d) γ:(1,d) β:(1,d) -> γ ⊙ x̂ + β:(n,d)
#include <cmath>

#include "core/i18n.hpp"
#include "core/ops/families.hpp"
#include "core/pipeline.hpp"

namespace attn::ops {

namespace {

// Column vectors broadcast to `cols` columns, row vectors to `rows` rows.
arma::mat spread_cols(const arma::mat& column, arma::uword cols) {
  return arma::repmat(column, 1, cols);
}
arma::mat spread_rows(const arma::mat& row, arma::uword rows) {
  return arma::repmat(row, rows, 1);
}

// The number of features of the row being reduced or normalised.
std::size_t features(const CellContext& c) {
  return c.trace.input(c.step, 0).value.n_cols;
}

double row_mean_cell(const CellContext& c, std::size_t row, std::size_t /*col*/) {
  double sum = 0.0;
  for (std::size_t j = 0; j < features(c); ++j) sum += c.read(0, row, j);
  return sum / static_cast<double>(features(c));
}

double row_var_cell(const CellContext& c, std::size_t row, std::size_t /*col*/) {
  const double mean = c.read(1, row, 0);
  double sum = 0.0;
  for (std::size_t j = 0; j < features(c); ++j) {
    const double centred = c.read(0, row, j) - mean;
    sum += centred * centred;
  }
  return sum / static_cast<double>(features(c));
}

double normalise_cell(const CellContext& c, std::size_t row, std::size_t col) {
  return (c.read(0, row, col) - c.read(1, row, 0)) / std::sqrt(c.read(2, row, 0) + c.step.made.eps);
}

double scale_shift_cell(const CellContext& c, std::size_t row, std::size_t col) {
  return c.read(0, row, col) * c.read(1, 0, col) + c.read(2, 0, col);
}

// The row the reduction reads: row_values; row_var also its mean.
void row_mean_expand(const ExpandContext& c, CellExpansion& e) {
  e.kind = ExpansionKind::row_mean;
  const arma::rowvec x = c.trace.input(c.step, 0).value.row(e.row);
  e.row_values.assign(x.begin(), x.end());
}

void row_var_expand(const ExpandContext& c, CellExpansion& e) {
  row_mean_expand(c, e);
  e.kind = ExpansionKind::row_var;
  e.mean = c.trace.input(c.step, 1).value(e.row, 0);
}

void normalise_expand(const ExpandContext& c, CellExpansion& e) {
  e.kind = ExpansionKind::normalise;
  const std::vector<std::string>& in = c.step.made.inputs;
  add_source(e, c.trace, in[0], e.row, e.col);
  add_source(e, c.trace, in[1], e.row, 0);
  add_source(e, c.trace, in[2], e.row, 0);
  e.eps = c.step.made.eps;
}

void scale_shift_expand(const ExpandContext& c, CellExpansion& e) {
  e.kind = ExpansionKind::scale_shift;
  const std::vector<std::string>& in = c.step.made.inputs;
  add_source(e, c.trace, in[0], e.row, e.col);
  add_source(e, c.trace, in[1], 0, e.col);
  add_source(e, c.trace, in[2], 0, e.col);
}

Bounds row_mean_bounds(const BoundsContext& c) {
  return {arma::mean(c.in(0).lo, 1), arma::mean(c.in(0).hi, 1)};
}

// x − μ, each cell from the lowest and highest values of both.
Bounds centred_bounds(const BoundsContext& c) {
  const arma::uword d = c.in(0).lo.n_cols;
  return {c.in(0).lo - spread_cols(c.in(1).hi, d), c.in(0).hi - spread_cols(c.in(1).lo, d)};
}

// The mean over j of (x_j − μ)², each term bounded on its own.
Bounds row_var_bounds(const BoundsContext& c) {
  const Bounds squares = square_bounds(centred_bounds(c));
  return {arma::mean(squares.lo, 1), arma::mean(squares.hi, 1)};
}

// (x − μ) × 1/√(σ² + ε), σ² + ε > 0.
Bounds normalise_bounds(const BoundsContext& c) {
  const arma::uword d = c.in(0).lo.n_cols;
  const double eps = c.step.made.eps;
  const Bounds inverse_root{
      spread_cols(1.0 / arma::sqrt(c.in(2).hi + eps), d),
      spread_cols(1.0 / arma::sqrt(arma::clamp(c.in(2).lo, 0.0, arma::datum::inf) + eps), d)};
  return times_bounds(centred_bounds(c), inverse_root);
}

Bounds scale_shift_bounds(const BoundsContext& c) {
  const arma::uword n = c.in(0).lo.n_rows;
  const Bounds gamma{spread_rows(c.in(1).lo, n), spread_rows(c.in(1).hi, n)};
  const Bounds scaled = times_bounds(c.in(0), gamma);
  return {scaled.lo + spread_rows(c.in(2).lo, n), scaled.hi + spread_rows(c.in(2).hi, n)};
}

// k−1 additions and one division per row.
FlopCount row_mean_flops(const Step& /*step*/, const FlopSizes& s) {
  return {s.n * s.k, fmt::format("n·d = {}·{}", s.n, s.k)};
}

// k subtractions, k squares, k−1 additions, one division per row.
FlopCount row_var_flops(const Step& /*step*/, const FlopSizes& s) {
  return {3 * s.n * s.k, fmt::format("3·n·d = 3·{}·{}", s.n, s.k)};
}

// (x − μ) / √(σ² + ε), or γ ⊙ x̂ + β: two per cell.
FlopCount two_per_cell(const Step& /*step*/, const FlopSizes& s) {
  return {2 * s.n * s.m, tr_format(N_("two per cell: 2·{}·{}"), s.n, s.m)};
}

}  // namespace

const OpFacets row_mean{Op::row_mean,     "row_mean",     "x", &row_mean_cell, &row_mean_expand,
                        &row_mean_bounds, &row_mean_flops};
const OpFacets row_var{Op::row_var,     "row_var",       "x, its row mean", &row_var_cell,
                       &row_var_expand, &row_var_bounds, &row_var_flops};
const OpFacets normalise{Op::normalise,   "normalise",       "x, its row mean, its row variance",
                         &normalise_cell, &normalise_expand, &normalise_bounds,
                         &two_per_cell};
const OpFacets scale_shift{Op::scale_shift,   "scale_shift",       "x̂, γ, β",
                           &scale_shift_cell, &scale_shift_expand, &scale_shift_bounds,
                           &two_per_cell};

}  // namespace attn::ops

namespace attn {

// The whole step at once, as the pipeline computes it (core/pipeline.hpp).

// x:(n,d) -> (n,1)
arma::mat row_mean(const arma::mat& x) {
  return arma::mean(x, 1);
}

// x:(n,d) mean:(n,1) -> (n,1)
arma::mat row_variance(const arma::mat& x, const arma::mat& mean) {
  arma::mat centred = x;
  centred.each_col() -= mean.col(0);
  return arma::mean(arma::square(centred), 1);
}

// x:(n,d) mean:(n,1) var:(n,1) -> (n,d)
arma::mat normalise_rows(const arma::mat& x, const arma::mat& mean, const arma::mat& var,
                         double eps) {
  arma::mat out = x;
  out.each_col() -= mean.col(0);
  out.each_col() /= arma::sqrt(var.col(0) + eps);
  return out;
}

// x:(n,d) gamma:(d) beta:(d) -> (n,d)
arma::mat scale_shift(const arma::mat& x, const arma::rowvec& gamma, const arma::rowvec& beta) {
  arma::mat out = x;
  out.each_row() %= gamma;
  out.each_row() += beta;
  return out;
}

}  // namespace attn
