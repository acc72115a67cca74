// Expanding one cell of each step into the numbers that make it: the data
// behind `run --expand`, verify's worked cells and the answer keys' examples.
#include "core/expand.hpp"

#include "core/i18n.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "core/error.hpp"
#include "core/number_text.hpp"
#include "core/pipeline.hpp"

namespace attn {

namespace {

// The cell of `source_id` that `e` is read from, recorded as its one source.
void add_source(CellExpansion& e, const Trace& trace, const std::string& source_id, std::size_t row,
                std::size_t col) {
  const Step& source = trace.at(source_id);
  e.sources.push_back(operand_ref(source, row, col));
  e.source_values.push_back(source.value(row, col));
}

// The weight as on paper, E[i,j] / Σ[i], with the trace's own exponentials and
// row sums (the learner's, when verify carries them). Only when exp() overflows
// or every exponential underflows to 0 is the row max subtracted first.
void expand_softmax(CellExpansion& e, const Lesson& lesson, const Trace& trace,
                    const Step& weights) {
  const arma::rowvec row = trace.input(weights, 0).value.row(e.row);
  e.row_values.assign(row.begin(), row.end());
  e.row_max = row.max();
  if (e.row_max == -arma::datum::inf) {
    const char* policy = lesson.masked_row == MaskedRowPolicy::nan    ? "nan: 0/0, as PyTorch"
                         : lesson.masked_row == MaskedRowPolicy::zero ? "zero: the row is set to 0"
                                                                      : "uniform: the row is 1/m";
    e.note = fmt::format(
        "every key of this row is masked, so the softmax is 0/0; the lesson's masked_row policy "
        "decides the row ({})",
        policy);
    return;
  }
  // A decoding step records no exponentials or row sum: they are exp() of its row.
  const bool recorded = weights.made.inputs.size() > 2;
  const arma::rowvec exps =
      recorded ? arma::rowvec(trace.input(weights, 1).value.row(e.row)) : arma::exp(row);
  const double sum = recorded ? trace.input(weights, 2).value(e.row, 0) : arma::accu(exps);
  if (exps.is_finite() && std::isfinite(sum) && sum > 0) {
    e.exps.assign(exps.begin(), exps.end());
    e.denominator = sum;
    // Exponentials or a row sum that are not exp(x) and Σ exp(x) (a learner's,
    // for carried credit) are divided as they are: E / Σ.
    const double close = 1e-12;
    const arma::rowvec on_paper = arma::exp(row);
    e.given_exps = recorded && (!arma::approx_equal(exps, on_paper, "reldiff", close) ||
                                std::abs(arma::accu(exps) - sum) > close * sum);
    if (e.given_exps) {
      e.sources = {operand_ref(trace.input(weights, 1), e.row, e.col),
                   operand_ref(trace.input(weights, 2), e.row, 0)};
      e.source_values = {exps(e.col), sum};
    }
    e.note =
        N_("the tool computes it stably, exp(x − max) / Σ exp(x_k − max): the factor exp(−max) "
           "cancels, so the weights are the same; it only keeps exp() from overflowing");
    return;
  }
  e.shifted = true;
  for (double x : e.row_values) e.exps.push_back(std::exp(x - e.row_max));
  for (double s : e.exps) e.denominator += s;
  e.note =
      N_("exp() of these scores overflows or underflows to 0, so the row max is subtracted first: "
         "exp(x − max) / Σ exp(x_k − max) = exp(x) / Σ exp(x_k), the factor exp(−max) cancels");
}

}  // namespace

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
  }
  return "";
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
  e.row = row;
  e.col = col;
  e.row_label = step.rows.at(row);
  e.col_label = step.cols.at(col);
  e.value = step.value(row, col);
  const Operation& made = step.made;
  switch (made.op) {
    case Op::given:
      e.kind = ExpansionKind::input;
      break;
    case Op::positional:
      e.kind = ExpansionKind::positional;
      e.position = row;
      e.pair_index = col / 2;
      e.width = step.value.n_cols;
      e.cosine = col % 2 == 1;
      e.angle = static_cast<double>(row) / std::pow(10000.0, static_cast<double>(2 * e.pair_index) /
                                                                 static_cast<double>(e.width));
      break;
    case Op::add_positions: {  // X+PE or memory+PE: the input plus its position's PE
      e.kind = ExpansionKind::add;
      add_source(e, trace, made.inputs[0], row, col);
      const arma::mat PE = positional_encoding(step.value.n_rows, step.value.n_cols);
      e.sources.push_back({"PE", row, col, fmt::format("PE[{},{}]", e.row_label, e.col_label)});
      e.source_values.push_back(PE(row, col));
      break;
    }
    case Op::matmul:
    case Op::matmul_t:
      e.kind = ExpansionKind::product;
      e.sum = cell_sum(trace, step.id, row, col);
      break;
    case Op::slice:
      e.kind = ExpansionKind::slice;
      add_source(e, trace, made.inputs[0], row, made.offset + col);
      break;
    case Op::rows:  // a decoding step's query or cache: a row of head{h}.Q, .K, .V
      e.kind = ExpansionKind::copy;
      add_source(e, trace, made.inputs[0], made.offset + row, col);
      break;
    case Op::divide:
      e.kind = ExpansionKind::divide;
      add_source(e, trace, made.inputs[0], row, col);
      e.scale_kind = lesson.scale_kind;
      e.d_k = lesson.d_k;
      e.divisor = made.divisor;
      break;
    case Op::mask:
      e.kind = ExpansionKind::mask;
      add_source(e, trace, made.inputs[0], row, col);
      e.mask_reasons = static_cast<unsigned>(trace.mask(row, col));
      e.fill = made.fill;
      break;
    case Op::exp:
      e.kind = ExpansionKind::exp;
      add_source(e, trace, made.inputs[0], row, col);
      break;
    case Op::row_sum: {
      e.kind = ExpansionKind::row_sum;
      const arma::rowvec exps = trace.input(step, 0).value.row(row);
      e.row_values.assign(exps.begin(), exps.end());
      break;
    }
    case Op::softmax:
      e.kind = ExpansionKind::softmax;
      expand_softmax(e, lesson, trace, step);
      break;
    case Op::mean:
    case Op::max:
      e.kind = made.op == Op::mean ? ExpansionKind::head_mean : ExpansionKind::head_max;
      for (const std::string& id : made.inputs) add_source(e, trace, id, row, col);
      break;
    case Op::add:
      e.kind = ExpansionKind::add;
      add_source(e, trace, made.inputs[0], row, col);
      add_source(e, trace, made.inputs[1], row, col);
      break;
    case Op::row_mean:
    case Op::row_var: {
      e.kind = made.op == Op::row_mean ? ExpansionKind::row_mean : ExpansionKind::row_var;
      const arma::rowvec x = trace.input(step, 0).value.row(row);
      e.row_values.assign(x.begin(), x.end());
      if (made.op == Op::row_var) e.mean = trace.input(step, 1).value(row, 0);
      break;
    }
    case Op::normalise:
      e.kind = ExpansionKind::normalise;
      add_source(e, trace, made.inputs[0], row, col);
      add_source(e, trace, made.inputs[1], row, 0);
      add_source(e, trace, made.inputs[2], row, 0);
      e.eps = made.eps;
      break;
    case Op::scale_shift:
      e.kind = ExpansionKind::scale_shift;
      add_source(e, trace, made.inputs[0], row, col);
      add_source(e, trace, made.inputs[1], 0, col);
      add_source(e, trace, made.inputs[2], 0, col);
      break;
    case Op::relu:
    case Op::gelu:
      e.kind = ExpansionKind::activation;
      e.gelu = made.op == Op::gelu;
      add_source(e, trace, made.inputs[0], row, col);
      break;
    case Op::identity:
      e.kind = ExpansionKind::copy;
      add_source(e, trace, made.inputs[0], row, col);
      break;
    case Op::max_abs_diff: {  // decoding step `row`'s context against row `row` of the full one
      e.kind = ExpansionKind::max_abs_diff;
      const arma::rowvec decoded = trace.input(step, 1 + row).value.row(0);
      const arma::rowvec full = trace.input(step, 0).value.row(row);
      e.row_values.assign(decoded.begin(), decoded.end());
      e.compare_values.assign(full.begin(), full.end());
      e.sources = {operand_ref(trace.input(step, 1 + row), 0, 0),
                   operand_ref(trace.input(step, 0), row, 0)};
      e.source_values = {decoded(0), full(0)};
      break;
    }
    case Op::concat: {  // the input whose columns hold `col`
      e.kind = ExpansionKind::concat;
      std::size_t first = 0;
      for (const std::string& id : made.inputs) {
        const std::size_t width = trace.at(id).value.n_cols;
        if (col < first + width) {
          add_source(e, trace, id, row, col - first);
          break;
        }
        first += width;
      }
      break;
    }
  }
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
        fmt::format("--expand {},{}: no step of lesson {} has that cell ({}); rows "
                    "and columns are counted from 0",
                    row, col, trace.lesson_id, fmt::join(shapes, ", ")));
  }
  return out;
}

}  // namespace attn
