// The op table: Op -> its facets. kFacets lists every family's facets; its size
// must be kOpCount (a static_assert), so an Op without facets fails to compile.
#include <array>
#include <stdexcept>

#include "core/i18n.hpp"
#include "core/ops/families.hpp"

namespace attn {

namespace ops {

void add_source(CellExpansion& e, const Trace& trace, const std::string& id, std::size_t row,
                std::size_t col) {
  const Step& source = trace.at(id);
  e.sources.push_back(operand_ref(source, row, col));
  e.source_values.push_back(source.value(row, col));
}

FlopCount per_cell(const Step& /*step*/, const FlopSizes& s) {
  return {s.n * s.m, tr_format(N_("one per cell: {}·{}"), s.n, s.m)};
}

FlopCount no_flops(const Step& /*step*/, const FlopSizes& /*s*/) {
  return {0, std::string(tr(N_("no arithmetic")))};
}

Bounds same_bounds(const BoundsContext& c) {
  return c.in(0);
}

Bounds exact_step_bounds(const BoundsContext& c) {
  return exact_bounds(c.step.value);
}

namespace {

// The facets of a step of the tiles or of linear attention.
const OpFacets& efficient_of(const Step& step) {
  switch (step.made.efficient) {
    case EfficientOp::tile_block:
      return tile_block;
    case EfficientOp::running_max:
      return running_max;
    case EfficientOp::rescale:
      return rescale;
    case EfficientOp::running_sum:
      return running_sum;
    case EfficientOp::running_acc:
      return running_acc;
    case EfficientOp::divide_rows:
      return divide_rows;
    case EfficientOp::row_diff:
      return row_diff;
    case EfficientOp::elu_plus_one:
      return elu_plus_one;
    case EfficientOp::matmul_tn:
      return matmul_tn;
    case EfficientOp::normaliser:
      return normaliser;
  }
  throw std::logic_error("efficient_of: not an EfficientOp");
}

double efficient_cell(const CellContext& c, std::size_t row, std::size_t col) {
  return efficient_of(c.step).cell(c, row, col);
}

void efficient_expand(const ExpandContext& c, CellExpansion& e) {
  efficient_of(c.step).expand(c, e);
}

Bounds efficient_bounds(const BoundsContext& c) {
  return efficient_of(c.step).bounds(c);
}

FlopCount efficient_flops(const Step& step, const FlopSizes& s) {
  return efficient_of(step).flops(step, s);
}

}  // namespace

const OpFacets efficient{Op::efficient,   "efficient",       "see Operation::efficient",
                         &efficient_cell, &efficient_expand, &efficient_bounds,
                         &efficient_flops};

}  // namespace ops

namespace {

// Every op's facets, in any order (op_facets files each under its op).
const OpFacets* const kFacets[] = {
    &ops::given,
    &ops::positional,
    &ops::add_positions,
    &ops::matmul,
    &ops::matmul_t,
    &ops::slice,
    &ops::rows,
    &ops::divide,
    &ops::mask,
    &ops::exp,
    &ops::row_sum,
    &ops::softmax,
    &ops::mean,
    &ops::max,
    &ops::concat,
    &ops::add,
    &ops::row_mean,
    &ops::row_var,
    &ops::normalise,
    &ops::scale_shift,
    &ops::relu,
    &ops::gelu,
    &ops::identity,
    &ops::efficient,
    &ops::max_abs_diff,
    &ops::rotate,
    &ops::alibi,
    &ops::row_max_abs_diff,
    &ops::backward,
};
static_assert(std::size(kFacets) == kOpCount, "every Op has its facets in kFacets");

}  // namespace

const OpFacets& op_facets(Op op) {
  static const std::array<const OpFacets*, kOpCount> by_op = [] {
    std::array<const OpFacets*, kOpCount> out{};
    for (const OpFacets* facets : kFacets) out.at(static_cast<std::size_t>(facets->op)) = facets;
    return out;
  }();
  const OpFacets* facets = by_op.at(static_cast<std::size_t>(op));
  if (!facets) throw std::logic_error("op_facets: not an Op");
  return *facets;
}

}  // namespace attn
