// The op table: Op -> its facets. A switch with no default, so that an Op
// without facets fails to compile (-Werror=switch).
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

const OpFacets& op_facets(Op op) {
  switch (op) {
    case Op::given:
      return ops::given;
    case Op::positional:
      return ops::positional;
    case Op::add_positions:
      return ops::add_positions;
    case Op::matmul:
      return ops::matmul;
    case Op::matmul_t:
      return ops::matmul_t;
    case Op::slice:
      return ops::slice;
    case Op::rows:
      return ops::rows;
    case Op::divide:
      return ops::divide;
    case Op::mask:
      return ops::mask;
    case Op::exp:
      return ops::exp;
    case Op::row_sum:
      return ops::row_sum;
    case Op::softmax:
      return ops::softmax;
    case Op::mean:
      return ops::mean;
    case Op::max:
      return ops::max;
    case Op::concat:
      return ops::concat;
    case Op::add:
      return ops::add;
    case Op::row_mean:
      return ops::row_mean;
    case Op::row_var:
      return ops::row_var;
    case Op::normalise:
      return ops::normalise;
    case Op::scale_shift:
      return ops::scale_shift;
    case Op::relu:
      return ops::relu;
    case Op::gelu:
      return ops::gelu;
    case Op::identity:
      return ops::identity;
    case Op::efficient:
      return ops::efficient;
    case Op::max_abs_diff:
      return ops::max_abs_diff;
    case Op::rotate:
      return ops::rotate;
    case Op::alibi:
      return ops::alibi;
    case Op::row_max_abs_diff:
      return ops::row_max_abs_diff;
  }
  throw std::logic_error("op_facets: not an Op");
}

}  // namespace attn
