// Sinusoidal positions: the table PE and its sum with the tokens' vectors.
// PE(pos, 2i) = sin(pos / 10000^(2i/d)), PE(pos, 2i+1) = cos(the same angle).
#include <cmath>

#include "core/ops/families.hpp"
#include "core/pipeline.hpp"

namespace attn::ops {

namespace {

// pos / 10000^(2i/d) for column `col` (2i or 2i+1) of a table of width d.
double angle(std::size_t pos, std::size_t col, std::size_t d) {
  const double two_i = static_cast<double>(col - col % 2);
  return static_cast<double>(pos) / std::pow(10000.0, two_i / static_cast<double>(d));
}

double positional_cell(const CellContext& c, std::size_t row, std::size_t col) {
  const double a = angle(row, col, c.step.value.n_cols);
  return col % 2 == 0 ? std::sin(a) : std::cos(a);
}

void positional_expand(const ExpandContext& c, CellExpansion& e) {
  e.kind = ExpansionKind::positional;
  e.position = e.row;
  e.pair_index = e.col / 2;
  e.width = c.step.value.n_cols;
  e.cosine = e.col % 2 == 1;
  e.angle = angle(e.row, e.col, e.width);
}

// X+PE or memory+PE: the input's cell plus its position's PE cell. The PE
// added is read off the step (the step minus its input), as the trace holds it.
double add_positions_cell(const CellContext& c, std::size_t row, std::size_t col) {
  const Step& in = c.trace.input(c.step, 0);
  return c.read(0, row, col) + (c.step.value(row, col) - in.value(row, col));
}

void add_positions_expand(const ExpandContext& c, CellExpansion& e) {
  e.kind = ExpansionKind::add;
  add_source(e, c.trace, c.step.made.inputs[0], e.row, e.col);
  const arma::mat PE = positional_encoding(c.step.value.n_rows, c.step.value.n_cols);
  e.sources.push_back({"PE", e.row, e.col, fmt::format("PE[{},{}]", e.row_label, e.col_label)});
  e.source_values.push_back(PE(e.row, e.col));
}

Bounds add_positions_bounds(const BoundsContext& c) {
  const arma::mat PE = c.step.value - c.trace.input(c.step, 0).value;
  return {c.in(0).lo + PE, c.in(0).hi + PE};
}

}  // namespace

// The PE table is computed once for every input: its FLOPs are not counted.
const OpFacets positional{Op::positional,     "positional",       "none",   &positional_cell,
                          &positional_expand, &exact_step_bounds, &no_flops};
const OpFacets add_positions{Op::add_positions,
                             "add_positions",
                             "the input (X or memory), then the PE step when recorded",
                             &add_positions_cell,
                             &add_positions_expand,
                             &add_positions_bounds,
                             &per_cell};

}  // namespace attn::ops

namespace attn {

// The whole step at once, as the pipeline computes it (core/pipeline.hpp).

// -> PE:(n,d)
arma::mat positional_encoding(std::size_t n, std::size_t d) {
  arma::mat PE(n, d);
  for (std::size_t pos = 0; pos < n; ++pos)
    for (std::size_t j = 0; j < d; ++j) {
      const double a = ops::angle(pos, j, d);
      PE(pos, j) = (j % 2 == 0) ? std::sin(a) : std::cos(a);
    }
  return PE;
}

}  // namespace attn
