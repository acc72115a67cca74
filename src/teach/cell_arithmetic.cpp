// The sum of products behind one cell, and the single-term slips that explain
// a wrong total: the on-paper arithmetic that expand, verify and the errata share.
#include "teach/cell_arithmetic.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "core/error.hpp"
#include "core/pipeline.hpp"

namespace attn {

namespace {

// A matrix an operand is read from, with the labels of its rows and columns.
struct OperandMatrix {
  const arma::mat* values = nullptr;
  std::vector<std::string> rows;
  std::vector<std::string> cols;
};

const arma::mat* lesson_weight(const Lesson& lesson, std::string_view step) {
  if (step == "W_Q") return &lesson.W_Q;
  if (step == "W_K") return &lesson.W_K;
  if (step == "W_V") return &lesson.W_V;
  if (step == "W_O" && lesson.W_O) return &*lesson.W_O;
  return nullptr;
}

OperandMatrix operand_matrix(const Lesson& lesson, const Trace& trace, std::string_view step) {
  if (const arma::mat* W = lesson_weight(lesson, step))
    return {W, feature_labels(W->n_rows), feature_labels(W->n_cols)};
  const Step& s = trace.at(step);
  return {&s.value, s.rows, s.cols};
}

OperandRef make_ref(const OperandMatrix& m, std::string step, std::size_t row, std::size_t col) {
  OperandRef ref{std::move(step), row, col, {}};
  ref.label = fmt::format("{}[{},{}]", ref.step, m.rows.at(row), m.cols.at(col));
  return ref;
}

// The step id that Q (or K and V) are projected from.
std::string projection_input(const Trace& trace, bool keys_side) {
  if (keys_side && trace.find("memory+PE")) return "memory+PE";
  if (keys_side && trace.find("memory")) return "memory";
  return trace.find("X+PE") ? "X+PE" : "X";
}

// "Q" for Q and head{h}.Q; "K", "V" likewise.
std::string projection_letter(const Step& step) {
  const std::size_t dot = step.id.find('.');
  return dot == std::string::npos ? step.id : step.id.substr(dot + 1);
}

// Σ_k left[lrow,k] × right[k,rcol] with right stored transposed when `right_transposed`.
void add_terms(CellSum& sum, const Lesson& lesson, const Trace& trace, const std::string& left,
               std::size_t lrow, const std::string& right, std::size_t rcol,
               bool right_transposed) {
  const OperandMatrix L = operand_matrix(lesson, trace, left);
  const OperandMatrix R = operand_matrix(lesson, trace, right);
  for (std::size_t k = 0; k < L.values->n_cols; ++k) {
    const std::size_t rr = right_transposed ? rcol : k;
    const std::size_t rc = right_transposed ? k : rcol;
    sum.terms.push_back({(*L.values)(lrow, k), (*R.values)(rr, rc), make_ref(L, left, lrow, k),
                         make_ref(R, right, rr, rc)});
  }
}

void add_bias(CellSum& sum, const std::optional<arma::rowvec>& bias, const std::string& name,
              std::size_t col) {
  if (!bias) return;
  sum.bias = (*bias)(col);
  sum.bias_ref = {name, 0, col, fmt::format("{}[d{}]", name, col)};
}

// True when `stated` is a value for the cell `ref` points at (directly, or a
// projection's cell seen through a head's column block).
bool refers_to(const Lesson& lesson, const Trace& trace, const StatedValue& stated,
               const OperandRef& ref) {
  if (stated.row != ref.row) return false;
  if (stated.step == ref.step) return stated.col == ref.col;
  const Step* step = trace.find(ref.step);
  if (!step || step->kind != StepKind::head_slice) return false;
  const std::string letter = projection_letter(*step);
  if (stated.step != letter) return false;
  const std::size_t width = letter == "V" ? lesson.d_v : lesson.d_k;
  return stated.col == static_cast<std::size_t>(step->head) * width + ref.col;
}

// Decimals implied by a half-unit tolerance: 0.0005 -> 3; 0 when none can be told.
int decimals_of_tolerance(double tolerance) {
  if (tolerance <= 0) return -1;
  return std::max(0, static_cast<int>(std::lround(-std::log10(2.0 * tolerance))));
}

// `p` rounded to `decimals`, with its leading significant digit changed to each
// other digit (digit_slip), and with each pair of adjacent digits swapped (digit_swap).
std::vector<std::pair<double, SlipKind>> digit_slips_of(double p, int decimals) {
  std::vector<std::pair<double, SlipKind>> out;
  const std::string text = fmt::format("{:.{}f}", std::abs(p), decimals);
  const double sign = p < 0 ? -1.0 : 1.0;
  const std::size_t lead = text.find_first_of("123456789");
  if (lead == std::string::npos) return out;
  for (char d = '0'; d <= '9'; ++d) {
    if (d == text[lead]) continue;
    std::string changed = text;
    changed[lead] = d;
    out.emplace_back(sign * std::stod(changed), SlipKind::digit_slip);
  }
  for (std::size_t i = lead; i + 1 < text.size(); ++i) {
    std::size_t j = i + 1;
    if (text[j] == '.') ++j;
    if (j >= text.size() || text[i] == '.' || text[i] == text[j]) continue;
    std::string swapped = text;
    std::swap(swapped[i], swapped[j]);
    out.emplace_back(sign * std::stod(swapped), SlipKind::digit_swap);
  }
  return out;
}

}  // namespace

void require_cell(const Step& step, std::size_t row, std::size_t col) {
  if (row < step.value.n_rows && col < step.value.n_cols) return;
  throw InputError(
      fmt::format("cell [{}, {}] is outside step {}, which is {} (rows 0 to {}, columns 0 to {})",
                  row, col, step.id, shape_str(step.value.n_rows, step.value.n_cols),
                  static_cast<long long>(step.value.n_rows) - 1,
                  static_cast<long long>(step.value.n_cols) - 1));
}

bool matches_written(double value, double written, double tolerance) {
  if (std::isnan(value) || std::isnan(written)) return std::isnan(value) && std::isnan(written);
  if (std::isinf(value) || std::isinf(written)) return value == written;
  const double slack = 1e-9 * std::max({tolerance, std::abs(value), std::abs(written)}) + 1e-12;
  return std::abs(value - written) <= tolerance + slack;
}

std::optional<CellSum> cell_sum(const Lesson& lesson, const Trace& trace, std::string_view step_id,
                                std::size_t row, std::size_t col) {
  const Step& step = trace.at(step_id);
  require_cell(step, row, col);
  CellSum sum;
  sum.step = step.id;
  sum.row = row;
  sum.col = col;
  sum.value = step.value(row, col);
  const std::string h = fmt::format("head{}.", step.head);
  switch (step.kind) {
    case StepKind::projection:
    case StepKind::head_slice: {
      const std::string letter = projection_letter(step);
      const std::size_t width = letter == "V" ? lesson.d_v : lesson.d_k;
      const std::size_t full_col = step.kind == StepKind::head_slice
                                       ? static_cast<std::size_t>(step.head) * width + col
                                       : col;
      add_terms(sum, lesson, trace, projection_input(trace, letter != "Q"), row, "W_" + letter,
                full_col, false);
      add_bias(sum,
               letter == "Q"   ? lesson.b_Q
               : letter == "K" ? lesson.b_K
                               : lesson.b_V,
               "b_" + letter, full_col);
      return sum;
    }
    case StepKind::scores:
      add_terms(sum, lesson, trace, h + "Q", row, h + "K", col, true);
      return sum;
    case StepKind::context:
      add_terms(sum, lesson, trace, h + "weights", row, h + "V", col, false);
      return sum;
    case StepKind::output:
      add_terms(sum, lesson, trace, "concat", row, "W_O", col, false);
      add_bias(sum, lesson.b_O, "b_O", col);
      return sum;
    default:
      return std::nullopt;
  }
}

std::vector<TermSlip> single_term_slips(const Lesson& lesson, const Trace& trace,
                                        const CellSum& sum, double written, double tolerance,
                                        const std::vector<StatedValue>& stated) {
  std::vector<TermSlip> out;
  if (matches_written(sum.value, written, tolerance)) return out;
  auto consider = [&](std::size_t term, double true_p, double new_p, SlipKind kind,
                      std::string cause, std::size_t distance = 0) {
    if (!matches_written(sum.value - true_p + new_p, written, tolerance)) return;
    out.push_back({term, true_p, new_p, kind, std::move(cause), distance});
  };
  const int decimals = decimals_of_tolerance(tolerance);

  for (std::size_t t = 0; t < sum.terms.size(); ++t) {
    const ProductTerm& term = sum.terms[t];
    const double p = term.product();
    const std::size_t n = t + 1;  // terms are counted from 1 for people
    const std::string product = fmt::format("{} × {} = {}", short_number(term.left),
                                            short_number(term.right), short_number(p));
    // One operand replaced: by a value stated for that cell, or by a neighbour entry.
    for (int side = 0; side < 2; ++side) {
      const OperandRef& ref = side == 0 ? term.left_ref : term.right_ref;
      const double own = side == 0 ? term.left : term.right;
      const double other = side == 0 ? term.right : term.left;
      auto replaced = [&](double v) {
        return fmt::format("{} × {} = {} instead of {}", short_number(side == 0 ? v : other),
                           short_number(side == 0 ? other : v), short_number(v * other), product);
      };
      for (const StatedValue& s : stated)
        if (s.value != own && refers_to(lesson, trace, s, ref))
          consider(
              t, p, s.value * other, SlipKind::stated_value,
              fmt::format("term {}: used {} = {} ({}) instead of {}: {}", n, ref.label,
                          short_number(s.value), s.source, short_number(own), replaced(s.value)));
      const OperandMatrix M = operand_matrix(lesson, trace, ref.step);
      auto try_entry = [&](std::size_t r, std::size_t c) {
        const double v = (*M.values)(r, c);
        if (v == own || !std::isfinite(v)) return;
        consider(
            t, p, v * other, SlipKind::wrong_entry,
            fmt::format("term {}: used {} = {} instead of {} = {}: {}", n,
                        make_ref(M, ref.step, r, c).label, short_number(v), ref.label,
                        short_number(own), replaced(v)),
            (r > ref.row ? r - ref.row : ref.row - r) + (c > ref.col ? c - ref.col : ref.col - c));
      };
      for (std::size_t r = 0; r < M.values->n_rows; ++r)
        if (r != ref.row) try_entry(r, ref.col);
      for (std::size_t c = 0; c < M.values->n_cols; ++c)
        if (c != ref.col) try_entry(ref.row, c);
    }
    const std::string labels = fmt::format("{} × {}", term.left_ref.label, term.right_ref.label);
    consider(t, p, 0.0, SlipKind::dropped_term,
             fmt::format("term {} left out: {} = {}", n, labels, product));
    consider(t, p, -p, SlipKind::sign_flip,
             fmt::format("term {}: wrote {} for {} (sign flipped)", n, short_number(-p), product));
    for (double factor : {10.0, 0.1})
      consider(t, p, p * factor, SlipKind::decimal_shift,
               fmt::format("term {}: wrote {} for {} (decimal point shifted)", n,
                           short_number(p * factor), product));
    if (decimals >= 0)
      for (const auto& [slip, kind] : digit_slips_of(p, decimals))
        consider(
            t, p, slip, kind,
            fmt::format("term {}: wrote {} for {} ({})", n, short_number(slip), product,
                        kind == SlipKind::digit_swap ? "two digits swapped" : "a digit miscopied"));
  }
  if (sum.bias)
    consider(sum.terms.size(), *sum.bias, 0.0, SlipKind::dropped_bias,
             fmt::format("bias left out: {} = {}", sum.bias_ref.label, short_number(*sum.bias)));

  std::stable_sort(out.begin(), out.end(), [](const TermSlip& a, const TermSlip& b) {
    return a.kind != b.kind ? a.kind < b.kind : a.term < b.term;
  });
  return out;
}

}  // namespace attn
