// Products of matrices: the projections (X·W_Q + b_Q), the scores Q·Kᵀ, the
// context A·V and the output concat·W_O + b_O.
//   matmul    A:(n,k) B:(k,m) [bias:(1,m)] -> A·B (+ bias on every row):(n,m)
//   matmul_t  A:(n,k) B:(m,k)              -> A·Bᵀ:(n,m)
#include "core/cell_arithmetic.hpp"
#include "core/ops/families.hpp"

namespace attn::ops {

namespace {

// Σ_k A[row, k]·B[k, col] (+ bias[col]), the terms in the order of k.
double matmul_cell(const CellContext& c, std::size_t row, std::size_t col) {
  const std::size_t k = c.trace.input(c.step, 0).value.n_cols;
  double sum = 0.0;
  for (std::size_t i = 0; i < k; ++i) sum += c.read(0, row, i) * c.read(1, i, col);
  if (c.step.made.inputs.size() > 2) sum += c.read(2, 0, col);
  return sum;
}

// Σ_k A[row, k]·B[col, k].
double matmul_t_cell(const CellContext& c, std::size_t row, std::size_t col) {
  const std::size_t k = c.trace.input(c.step, 0).value.n_cols;
  double sum = 0.0;
  for (std::size_t i = 0; i < k; ++i) sum += c.read(0, row, i) * c.read(1, col, i);
  return sum;
}

void product_expand(const ExpandContext& c, CellExpansion& e) {
  e.kind = ExpansionKind::product;
  e.sum = cell_sum(c.trace, c.step.id, e.row, e.col);
}

Bounds matmul_bounds(const BoundsContext& c) {
  Bounds out = product_bounds(c.in(0), c.in(1));
  if (c.step.made.inputs.size() > 2) {
    out.lo.each_row() += c.in(2).lo.row(0);
    out.hi.each_row() += c.in(2).hi.row(0);
  }
  return out;
}

Bounds matmul_t_bounds(const BoundsContext& c) {
  return product_bounds(c.in(0), transposed_bounds(c.in(1)));
}

// (n×k)·(k×m): k products and k−1 additions per cell, counted 2·k; a bias adds one.
FlopCount matmul_flops(const Step& step, const FlopSizes& s) {
  if (step.made.inputs.size() > 2)
    return {2 * s.n * s.k * s.m + s.n * s.m,
            fmt::format("2·n·k·m + n·m = 2·{}·{}·{} + {}·{}", s.n, s.k, s.m, s.n, s.m)};
  return {2 * s.n * s.k * s.m, fmt::format("2·n·k·m = 2·{}·{}·{}", s.n, s.k, s.m)};
}

FlopCount matmul_t_flops(const Step& /*step*/, const FlopSizes& s) {
  return {2 * s.n * s.k * s.m, fmt::format("2·n·d_k·m = 2·{}·{}·{}", s.n, s.k, s.m)};
}

}  // namespace

const OpFacets matmul{Op::matmul,   "matmul",        "A, B, then a bias row when there is one",
                      &matmul_cell, &product_expand, &matmul_bounds,
                      &matmul_flops};
const OpFacets matmul_t{Op::matmul_t,    "matmul_t",       "A, B (B is transposed)", &matmul_t_cell,
                        &product_expand, &matmul_t_bounds, &matmul_t_flops};

}  // namespace attn::ops
