// The sum of products behind one cell, read from the step's operation and inputs.
#include "core/cell_arithmetic.hpp"

#include <fmt/format.h>

#include "core/error.hpp"
#include "core/i18n.hpp"
#include "core/number_text.hpp"

namespace attn {

OperandRef operand_ref(const Step& step, std::size_t row, std::size_t col) {
  OperandRef ref{step.id, row, col, {}};
  ref.label = is_row_parameter(step)
                  ? fmt::format("{}[d{}]", step.id, col)
                  : fmt::format("{}[{},{}]", step.id, step.rows.at(row), step.cols.at(col));
  return ref;
}

void require_cell(const Step& step, std::size_t row, std::size_t col) {
  if (row < step.value.n_rows && col < step.value.n_cols) return;
  throw InputError(
      tr_format("cell [{}, {}] is outside step {}, which is {} (rows 0 to {}, columns 0 to {})",
                row, col, step.id, shape_str(step.value.n_rows, step.value.n_cols),
                static_cast<long long>(step.value.n_rows) - 1,
                static_cast<long long>(step.value.n_cols) - 1));
}

std::optional<CellSum> cell_sum(const Trace& trace, std::string_view step_id, std::size_t row,
                                std::size_t col) {
  const Step& step = trace.at(step_id);
  require_cell(step, row, col);
  // A head slice's cell is a cell of the projection it is cut from.
  const bool slice = step.made.op == Op::slice;
  const Step& product = slice ? trace.input(step, 0) : step;
  const std::size_t pcol = slice ? step.made.offset + col : col;
  const Operation& made = product.made;
  if (made.op != Op::matmul && made.op != Op::matmul_t) return std::nullopt;

  CellSum sum;
  sum.step = step.id;
  sum.row = row;
  sum.col = col;
  sum.value = step.value(row, col);
  sum.transposed = made.op == Op::matmul_t;
  const Step& left = trace.input(product, 0);
  const Step& right = trace.input(product, 1);
  for (std::size_t k = 0; k < left.value.n_cols; ++k) {
    const std::size_t rr = sum.transposed ? pcol : k;
    const std::size_t rc = sum.transposed ? k : pcol;
    sum.terms.push_back({left.value(row, k), right.value(rr, rc), operand_ref(left, row, k),
                         operand_ref(right, rr, rc)});
  }
  if (made.inputs.size() > 2) {
    const Step& bias = trace.input(product, 2);
    sum.bias = bias.value(0, pcol);
    sum.bias_ref = operand_ref(bias, 0, pcol);
  }
  return sum;
}

}  // namespace attn
