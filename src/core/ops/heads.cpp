// Splitting into heads and joining them: a head's columns of Q, K or V, the
// heads' contexts side by side, and the heads' weights summarised cell by cell.
//   slice   P:(n,h·d_k) -> P[:, offset:offset+d_k]:(n,d_k)
//   concat  h × (n,d_v) -> (n,h·d_v)
//   mean    h × (n,m)   -> (A₀ + … + A_{h−1}) / h:(n,m)
//   max     h × (n,m)   -> max(A₀, …, A_{h−1}):(n,m)
#include <algorithm>
#include <limits>

#include "core/ops/families.hpp"

namespace attn::ops {

namespace {

double slice_cell(const CellContext& c, std::size_t row, std::size_t col) {
  return c.read(0, row, c.step.made.offset + col);
}

void slice_expand(const ExpandContext& c, CellExpansion& e) {
  e.kind = ExpansionKind::slice;
  add_source(e, c.trace, c.step.made.inputs[0], e.row, c.step.made.offset + e.col);
}

Bounds slice_bounds(const BoundsContext& c) {
  const arma::uword first = c.step.made.offset, last = first + c.step.value.n_cols - 1;
  return {c.in(0).lo.cols(first, last), c.in(0).hi.cols(first, last)};
}

// The input whose columns hold `col`, and the column there: (input, column).
std::pair<std::size_t, std::size_t> concat_source(const Trace& trace, const Step& step,
                                                  std::size_t col) {
  std::size_t first = 0;
  for (std::size_t i = 0; i < step.made.inputs.size(); ++i) {
    const std::size_t width = trace.input(step, i).value.n_cols;
    if (col < first + width) return {i, col - first};
    first += width;
  }
  return {step.made.inputs.size(), 0};
}

double concat_cell(const CellContext& c, std::size_t row, std::size_t col) {
  const auto [input, at] = concat_source(c.trace, c.step, col);
  return input < c.step.made.inputs.size() ? c.read(input, row, at) : c.step.value(row, col);
}

void concat_expand(const ExpandContext& c, CellExpansion& e) {
  e.kind = ExpansionKind::concat;
  const auto [input, at] = concat_source(c.trace, c.step, e.col);
  if (input < c.step.made.inputs.size())
    add_source(e, c.trace, c.step.made.inputs[input], e.row, at);
}

Bounds concat_bounds(const BoundsContext& c) {
  Bounds out;
  for (std::size_t i = 0; i < c.step.made.inputs.size(); ++i) {
    out.lo = arma::join_rows(out.lo, c.in(i).lo);
    out.hi = arma::join_rows(out.hi, c.in(i).hi);
  }
  return out;
}

double mean_cell(const CellContext& c, std::size_t row, std::size_t col) {
  double sum = 0.0;
  for (std::size_t i = 0; i < c.step.made.inputs.size(); ++i) sum += c.read(i, row, col);
  return sum / static_cast<double>(c.step.made.inputs.size());
}

double max_cell(const CellContext& c, std::size_t row, std::size_t col) {
  double out = -std::numeric_limits<double>::infinity();
  for (std::size_t i = 0; i < c.step.made.inputs.size(); ++i)
    out = std::max(out, c.read(i, row, col));
  return out;
}

void every_head_source(const ExpandContext& c, CellExpansion& e) {
  for (const std::string& id : c.step.made.inputs) add_source(e, c.trace, id, e.row, e.col);
}

void mean_expand(const ExpandContext& c, CellExpansion& e) {
  e.kind = ExpansionKind::head_mean;
  every_head_source(c, e);
}

void max_expand(const ExpandContext& c, CellExpansion& e) {
  e.kind = ExpansionKind::head_max;
  every_head_source(c, e);
}

Bounds mean_bounds(const BoundsContext& c) {
  const arma::mat zero(c.step.value.n_rows, c.step.value.n_cols, arma::fill::zeros);
  Bounds out{zero, zero};
  for (std::size_t i = 0; i < c.step.made.inputs.size(); ++i) {
    out.lo += c.in(i).lo;
    out.hi += c.in(i).hi;
  }
  const double h = static_cast<double>(c.step.made.inputs.size());
  return {out.lo / h, out.hi / h};
}

Bounds max_bounds(const BoundsContext& c) {
  Bounds out = c.in(0);
  for (std::size_t i = 1; i < c.step.made.inputs.size(); ++i) {
    out.lo = arma::max(out.lo, c.in(i).lo);
    out.hi = arma::max(out.hi, c.in(i).hi);
  }
  return out;
}

// h−1 additions and one division per cell.
FlopCount mean_flops(const Step& step, const FlopSizes& s) {
  const std::uint64_t h = step.made.inputs.size();
  return {h * s.n * s.m, fmt::format("h·n·m = {}·{}·{}", h, s.n, s.m)};
}

}  // namespace

const OpFacets slice{Op::slice,   "slice",       "the projection (Q, K or V)",
                     &slice_cell, &slice_expand, &slice_bounds,
                     &no_flops};
const OpFacets concat{Op::concat,   "concat",       "every head's context, in head order",
                      &concat_cell, &concat_expand, &concat_bounds,
                      &no_flops};
const OpFacets mean{Op::mean,     "mean",     "every head's weights", &mean_cell, &mean_expand,
                    &mean_bounds, &mean_flops};
// Comparisons, not arithmetic.
const OpFacets max{Op::max,     "max",    "every head's weights", &max_cell, &max_expand,
                   &max_bounds, &no_flops};

}  // namespace attn::ops
