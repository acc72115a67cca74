// The lesson's own numbers (X, memory, W_Q, b_Q, ln1_gamma, ...): no inputs,
// nothing computed; each cell is exact.
#include "core/ops/families.hpp"

namespace attn::ops {

namespace {

double given_cell(const CellContext& c, std::size_t row, std::size_t col) {
  return c.step.value(row, col);
}

void given_expand(const ExpandContext& /*c*/, CellExpansion& e) {
  e.kind = ExpansionKind::input;
}

}  // namespace

const OpFacets given{Op::given,          "given",  "none", &given_cell, &given_expand,
                     &exact_step_bounds, &no_flops};

}  // namespace attn::ops
