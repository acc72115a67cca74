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
    case Op::tile_block:
      return ops::tile_block;
    case Op::running_max:
      return ops::running_max;
    case Op::rescale:
      return ops::rescale;
    case Op::running_sum:
      return ops::running_sum;
    case Op::running_acc:
      return ops::running_acc;
    case Op::divide_rows:
      return ops::divide_rows;
    case Op::row_diff:
      return ops::row_diff;
    case Op::elu_plus_one:
      return ops::elu_plus_one;
    case Op::matmul_tn:
      return ops::matmul_tn;
    case Op::normaliser:
      return ops::normaliser;
    case Op::max_abs_diff:
      return ops::max_abs_diff;
  }
  throw std::logic_error("op_facets: not an Op");
}

}  // namespace attn
