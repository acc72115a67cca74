// Decoding with a KV cache (lesson [decode]): step t reads its query and the
// cache's rows out of head{h}.Q, K and V, and a check compares each step's
// context with row t of the full causal computation.
//   rows          P:(n,w) -> P[offset : offset + r, :]:(r,w)
//   max_abs_diff  C:(n,d_v) c_t: n × (1,d_v) -> row t = max_j |c_t[j] − C[t, j]|:(n,1)
#include <algorithm>
#include <cmath>

#include "core/ops/families.hpp"

namespace attn::ops {

namespace {

double rows_cell(const CellContext& c, std::size_t row, std::size_t col) {
  return c.read(0, c.step.made.offset + row, col);
}

void rows_expand(const ExpandContext& c, CellExpansion& e) {
  e.kind = ExpansionKind::copy;
  add_source(e, c.trace, c.step.made.inputs[0], c.step.made.offset + e.row, e.col);
}

Bounds rows_bounds(const BoundsContext& c) {
  const arma::uword first = c.step.made.offset, last = first + c.step.value.n_rows - 1;
  return {c.in(0).lo.rows(first, last), c.in(0).hi.rows(first, last)};
}

double max_abs_diff_cell(const CellContext& c, std::size_t row, std::size_t /*col*/) {
  const std::size_t d_v = c.trace.input(c.step, 0).value.n_cols;
  double out = 0.0;
  for (std::size_t j = 0; j < d_v; ++j)
    out = std::max(out, std::abs(c.read(1 + row, 0, j) - c.read(0, row, j)));
  return out;
}

// Decoding step `row`'s context against row `row` of the full one.
void max_abs_diff_expand(const ExpandContext& c, CellExpansion& e) {
  e.kind = ExpansionKind::max_abs_diff;
  const Step& decoded_step = c.trace.input(c.step, 1 + e.row);
  const Step& full_step = c.trace.input(c.step, 0);
  const arma::rowvec decoded = decoded_step.value.row(0);
  const arma::rowvec full = full_step.value.row(e.row);
  e.row_values.assign(decoded.begin(), decoded.end());
  e.compare_values.assign(full.begin(), full.end());
  e.sources = {operand_ref(decoded_step, 0, 0), operand_ref(full_step, e.row, 0)};
  e.source_values = {decoded(0), full(0)};
}

// Row t: max_j |decoded_t[j] − full[t, j]|, each term on its own.
Bounds max_abs_diff_bounds(const BoundsContext& c) {
  const arma::uword n = c.step.value.n_rows;
  arma::mat lo(n, 1, arma::fill::zeros), hi(n, 1);
  const Bounds& full = c.in(0);
  for (arma::uword t = 0; t < n; ++t) {
    const Bounds& row = c.in(1 + t);
    const arma::rowvec up = row.hi.row(0) - full.lo.row(t);    // largest decoded − full
    const arma::rowvec down = full.hi.row(t) - row.lo.row(0);  // largest full − decoded
    const arma::rowvec apart = arma::max(row.lo.row(0) - full.hi.row(t),
                                         full.lo.row(t) - row.hi.row(0));  // the least gap
    hi(t, 0) = arma::max(up, down).max();
    lo(t, 0) = std::max(0.0, apart.max());
  }
  return {lo, hi};
}

// A subtraction and a comparison per cell of the full context.
FlopCount max_abs_diff_flops(const Step& /*step*/, const FlopSizes& s) {
  return {2 * s.n * s.k, fmt::format("2·n·d_v = 2·{}·{}", s.n, s.k)};
}

}  // namespace

// A query or a cache is read, not computed: no FLOPs.
const OpFacets rows{Op::rows,     "rows",   "head{h}.Q, .K or .V", &rows_cell, &rows_expand,
                    &rows_bounds, &no_flops};
const OpFacets max_abs_diff{
    Op::max_abs_diff,   "max_abs_diff",       "head{h}.context, then each decoding step's context",
    &max_abs_diff_cell, &max_abs_diff_expand, &max_abs_diff_bounds,
    &max_abs_diff_flops};

}  // namespace attn::ops
