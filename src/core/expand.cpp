// Expanding one cell of each step into the numbers that make it: the data
// behind `run --expand`, verify's worked cells and the answer keys' examples.
#include "core/expand.hpp"

#include "core/i18n.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "core/error.hpp"
#include "core/number_text.hpp"
#include "core/ops/op.hpp"

namespace attn {

std::string_view expansion_kind_name(ExpansionKind kind) {
  switch (kind) {
    case ExpansionKind::input:
      return "input";
    case ExpansionKind::positional:
      return "positional";
    case ExpansionKind::add:
      return "add";
    case ExpansionKind::product:
      return "product";
    case ExpansionKind::slice:
      return "slice";
    case ExpansionKind::divide:
      return "divide";
    case ExpansionKind::mask:
      return "mask";
    case ExpansionKind::exp:
      return "exp";
    case ExpansionKind::row_sum:
      return "row_sum";
    case ExpansionKind::softmax:
      return "softmax";
    case ExpansionKind::head_mean:
      return "head_mean";
    case ExpansionKind::head_max:
      return "head_max";
    case ExpansionKind::concat:
      return "concat";
    case ExpansionKind::row_mean:
      return "row_mean";
    case ExpansionKind::row_var:
      return "row_var";
    case ExpansionKind::normalise:
      return "normalise";
    case ExpansionKind::scale_shift:
      return "scale_shift";
    case ExpansionKind::activation:
      return "activation";
    case ExpansionKind::copy:
      return "copy";
    case ExpansionKind::max_abs_diff:
      return "max_abs_diff";
    case ExpansionKind::rotate:
      return "rotate";
    case ExpansionKind::alibi:
      return "alibi";
    case ExpansionKind::expression:
      return "expression";
  }
  return "";
}

void add_number(CellExpansion& e, double value) {
  e.expression.push_back({ExprPiece::Kind::number, value, {}, {}});
}

void add_symbol(CellExpansion& e, std::string symbol) {
  e.expression.push_back({ExprPiece::Kind::symbol, 0.0, std::move(symbol), {}});
}

void add_words(CellExpansion& e, std::string msgid) {
  e.expression.push_back({ExprPiece::Kind::words, 0.0, std::move(msgid), {}});
}

void add_ref(CellExpansion& e, const Step& step, std::size_t row, std::size_t col) {
  const OperandRef ref = operand_ref(step, row, col);
  e.expression.push_back({ExprPiece::Kind::ref, step.value(row, col), {}, ref});
  e.sources.push_back(ref);
  e.source_values.push_back(step.value(row, col));
}

bool has_cell(const Step& step, std::size_t row, std::size_t col) {
  return row < step.value.n_rows && (step.value.n_cols == 1 || col < step.value.n_cols);
}

CellExpansion expand_cell(const Lesson& lesson, const Trace& trace, std::string_view step_id,
                          std::size_t row, std::size_t col) {
  const Step& step = trace.at(step_id);
  if (step.value.n_cols == 1) col = 0;
  require_cell(step, row, col);
  CellExpansion e;
  e.step = step.id;
  e.step_id = step.step_id;
  e.row = row;
  e.col = col;
  e.row_label = step.rows.at(row);
  e.col_label = step.cols.at(col);
  e.value = step.value(row, col);
  op_facets(step.made.op).expand({lesson, trace, step}, e);
  return e;
}

std::vector<CellExpansion> expand_all(const Lesson& lesson, const Trace& trace, std::size_t row,
                                      std::size_t col) {
  std::vector<CellExpansion> out;
  std::size_t widest = 0;
  for (const Step& step : trace.steps) widest = std::max<std::size_t>(widest, step.value.n_cols);
  if (col < widest)  // a one-column step (row sums) answers for any column, not for any number
    for (const Step& step : trace.steps) {
      // Decoding step t answers for query row t: its one row (q, scores,
      // weights, context), or the row its cache adds.
      if (step.decoding >= 0) {
        const std::size_t r = step.value.n_rows == 1 ? 0 : row;
        if (static_cast<std::size_t>(step.decoding) == row && has_cell(step, r, col))
          out.push_back(expand_cell(lesson, trace, step.id, r, col));
        continue;
      }
      if (has_cell(step, row, col)) out.push_back(expand_cell(lesson, trace, step.id, row, col));
    }
  if (out.empty()) {
    std::vector<std::string> shapes;
    for (const Step& step : trace.steps)
      shapes.push_back(
          fmt::format("{} {}", step.id, shape_str(step.value.n_rows, step.value.n_cols)));
    throw InputError(
        tr_format("--expand {},{}: no step of lesson {} has that cell ({}); rows "
                  "and columns are counted from 0",
                  row, col, trace.lesson_id, fmt::join(shapes, ", ")));
  }
  return out;
}

}  // namespace attn
