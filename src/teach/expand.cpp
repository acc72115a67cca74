// Expanding one cell of each step into the numbers that make it: the data
// behind `run --expand`, verify's worked cells and the answer keys' examples.
#include "teach/expand.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "core/error.hpp"
#include "core/pipeline.hpp"

namespace attn {

namespace {

OperandRef cell_ref(const Step& step, std::size_t row, std::size_t col) {
  return {step.id, row, col,
          fmt::format("{}[{},{}]", step.id, step.rows.at(row), step.cols.at(col))};
}

// The cell of `source_id` that `e` is read from, recorded as its one source.
void add_source(CellExpansion& e, const Trace& trace, const std::string& source_id, std::size_t row,
                std::size_t col) {
  const Step& source = trace.at(source_id);
  e.sources.push_back(cell_ref(source, row, col));
  e.source_values.push_back(source.value(row, col));
}

// "Q" of "head0.Q", "scores" of "head0.scores".
std::string after_head(const std::string& id) {
  return id.substr(id.find('.') + 1);
}

void expand_softmax(CellExpansion& e, const Lesson& lesson, const Step& masked) {
  const arma::rowvec row = masked.value.row(e.row);
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
  for (double x : e.row_values) e.shifted_exps.push_back(std::exp(x - e.row_max));
  for (double s : e.shifted_exps) e.denominator += s;
  e.note =
      "subtracting the row max changes nothing: exp(x − max) / Σ exp(x_k − max) = exp(x) / Σ "
      "exp(x_k), the factor exp(−max) cancels; it only keeps exp() from overflowing";
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
  const std::string head = fmt::format("head{}.", step.head);

  switch (step.kind) {
    case StepKind::input:
      e.kind = ExpansionKind::input;
      break;
    case StepKind::positional:
      if (step.id == "PE") {
        e.kind = ExpansionKind::positional;
        e.position = row;
        e.pair_index = col / 2;
        e.width = step.value.n_cols;
        e.cosine = col % 2 == 1;
        e.angle =
            static_cast<double>(row) /
            std::pow(10000.0, static_cast<double>(2 * e.pair_index) / static_cast<double>(e.width));
      } else {  // X+PE or memory+PE
        e.kind = ExpansionKind::add;
        const std::string base = step.id == "X+PE" ? "X" : "memory";
        add_source(e, trace, base, row, col);
        const arma::mat PE = positional_encoding(step.value.n_rows, step.value.n_cols);
        e.sources.push_back({"PE", row, col, fmt::format("PE[{},{}]", e.row_label, e.col_label)});
        e.source_values.push_back(PE(row, col));
      }
      break;
    case StepKind::projection:
    case StepKind::scores:
    case StepKind::context:
    case StepKind::output:
      e.kind = ExpansionKind::product;
      e.sum = cell_sum(lesson, trace, step.id, row, col);
      break;
    case StepKind::head_slice: {
      e.kind = ExpansionKind::slice;
      const std::string letter = after_head(step.id);
      const std::size_t width = letter == "V" ? lesson.d_v : lesson.d_k;
      add_source(e, trace, letter, row, static_cast<std::size_t>(step.head) * width + col);
      break;
    }
    case StepKind::scaled:
      e.kind = ExpansionKind::divide;
      add_source(e, trace, head + "scores", row, col);
      e.scale_kind = lesson.scale_kind;
      e.d_k = lesson.d_k;
      e.divisor = trace.scale;
      break;
    case StepKind::masked:
      e.kind = ExpansionKind::mask;
      add_source(e, trace, head + "scaled", row, col);
      e.mask_reasons = static_cast<unsigned>(trace.mask(row, col));
      e.fill = lesson.mask_fill;
      break;
    case StepKind::exp:
      e.kind = ExpansionKind::exp;
      add_source(e, trace, head + "masked", row, col);
      break;
    case StepKind::row_sum: {
      e.kind = ExpansionKind::row_sum;
      const arma::rowvec exps = trace.at(head + "exp").value.row(row);
      e.row_values.assign(exps.begin(), exps.end());
      break;
    }
    case StepKind::weights:
      e.kind = ExpansionKind::softmax;
      expand_softmax(e, lesson, trace.at(head + "masked"));
      break;
    case StepKind::head_summary:
      e.kind = step.id == "heads.mean" ? ExpansionKind::head_mean : ExpansionKind::head_max;
      for (std::size_t h = 0; h < lesson.heads; ++h)
        add_source(e, trace, fmt::format("head{}.weights", h), row, col);
      break;
    case StepKind::concat: {
      e.kind = ExpansionKind::concat;
      const std::size_t h = col / lesson.d_v;
      add_source(e, trace, fmt::format("head{}.context", h), row, col - h * lesson.d_v);
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
    for (const Step& step : trace.steps)
      if (has_cell(step, row, col)) out.push_back(expand_cell(lesson, trace, step.id, row, col));
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
