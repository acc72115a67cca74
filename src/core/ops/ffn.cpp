// The rest of the encoder layer: residual sums, the FFN's activation (its two
// products are matmul, core/ops/products.cpp) and the layer's named result.
//   add       a:(n,d) b:(n,d) -> a + b:(n,d)
//   relu      h:(n,p) -> max(0, h):(n,p)
//   gelu      h:(n,p) -> h·Φ(h) = h·(1 + erf(h/√2))/2:(n,p), the exact GELU
//   identity  x:(n,d) -> x (layer.output names the layer's result)
#include <algorithm>
#include <cmath>

#include "core/ops/families.hpp"
#include "core/pipeline.hpp"

namespace attn::ops {

namespace {

double add_cell(const CellContext& c, std::size_t row, std::size_t col) {
  return c.read(0, row, col) + c.read(1, row, col);
}

double relu_cell(const CellContext& c, std::size_t row, std::size_t col) {
  return std::max(0.0, c.read(0, row, col));
}

// x·Φ(x) = x·(1 + erf(x/√2))/2, the exact GELU.
double gelu_of(double x) {
  return 0.5 * x * (1.0 + std::erf(x / std::sqrt(2.0)));
}

double gelu_cell(const CellContext& c, std::size_t row, std::size_t col) {
  return gelu_of(c.read(0, row, col));
}

double identity_cell(const CellContext& c, std::size_t row, std::size_t col) {
  return c.read(0, row, col);
}

void add_expand(const ExpandContext& c, CellExpansion& e) {
  e.kind = ExpansionKind::add;
  add_source(e, c.trace, c.step.made.inputs[0], e.row, e.col);
  add_source(e, c.trace, c.step.made.inputs[1], e.row, e.col);
}

void activation_expand(const ExpandContext& c, CellExpansion& e) {
  e.kind = ExpansionKind::activation;
  e.gelu = c.step.made.op == Op::gelu;
  add_source(e, c.trace, c.step.made.inputs[0], e.row, e.col);
}

void identity_expand(const ExpandContext& c, CellExpansion& e) {
  e.kind = ExpansionKind::copy;
  add_source(e, c.trace, c.step.made.inputs[0], e.row, e.col);
}

Bounds add_bounds(const BoundsContext& c) {
  return {c.in(0).lo + c.in(1).lo, c.in(0).hi + c.in(1).hi};
}

Bounds relu_bounds(const BoundsContext& c) {
  return {attn::relu(c.in(0).lo), attn::relu(c.in(0).hi)};
}

// The exact GELU's value range over [lo, hi]: it falls to its minimum at
// x ≈ -0.7518 and rises on either side.
Bounds gelu_bounds(const BoundsContext& c) {
  const Bounds& B = c.in(0);
  const double x_min = -0.75179187516;
  const arma::mat a = attn::gelu(B.lo), b = attn::gelu(B.hi);
  arma::mat lo = arma::min(a, b);
  const double y_min = attn::gelu(arma::mat{x_min})(0, 0);
  lo.elem(arma::find((B.lo <= x_min) % (B.hi >= x_min))).fill(y_min);
  return {lo, arma::max(a, b)};
}

}  // namespace

// A residual sum and x·Φ(x) are counted as one operation per cell.
const OpFacets add{Op::add,   "add",       "the sub-layer's input, its output",
                   &add_cell, &add_expand, &add_bounds,
                   &per_cell};
// A comparison: no FLOPs counted.
const OpFacets relu{
    Op::relu,     "relu",   "the FFN's hidden layer", &relu_cell, &activation_expand,
    &relu_bounds, &no_flops};
const OpFacets gelu{
    Op::gelu,     "gelu",   "the FFN's hidden layer", &gelu_cell, &activation_expand,
    &gelu_bounds, &per_cell};
// A name for the layer's result: no arithmetic.
const OpFacets identity{Op::identity,   "identity",       "the step it names",
                        &identity_cell, &identity_expand, &same_bounds,
                        &no_flops};

}  // namespace attn::ops

namespace attn {

// The whole step at once, as the pipeline computes it (core/pipeline.hpp).

// (n,p) -> (n,p)
arma::mat relu(const arma::mat& x) {
  return arma::clamp(x, 0.0, arma::datum::inf);
}

// (n,p) -> (n,p)
arma::mat gelu(const arma::mat& x) {
  arma::mat out = x;
  out.transform([](double v) { return ops::gelu_of(v); });
  return out;
}

}  // namespace attn
