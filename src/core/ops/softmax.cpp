// The scaled softmax, piece by piece as on paper: scores divided by the scale,
// the exponentials of the masked scores, their row sums, and the weights
// E / Σ (a decoding step's weights: the softmax of its one row, in one step).
//   divide   S:(n,m) -> S / s:(n,m)
//   exp      masked:(n,m) -> E = exp(masked):(n,m)
//   row_sum  E:(n,m) -> Σ_j E[i, j]:(n,1)
//   softmax  masked:(n,m) [E:(n,m) Σ:(n,1)] -> A:(n,m), each row sums to 1
#include <cmath>

#include "core/i18n.hpp"
#include "core/ops/families.hpp"

namespace attn::ops {

namespace {

double divide_cell(const CellContext& c, std::size_t row, std::size_t col) {
  return c.read(0, row, col) / c.step.made.divisor;
}

void divide_expand(const ExpandContext& c, CellExpansion& e) {
  e.kind = ExpansionKind::divide;
  add_source(e, c.trace, c.step.made.inputs[0], e.row, e.col);
  e.scale_kind = c.lesson.scale_kind;
  e.d_k = c.lesson.d_k;
  e.divisor = c.step.made.divisor;
}

Bounds divide_bounds(const BoundsContext& c) {
  const double s = c.step.made.divisor;
  if (s < 0) return {c.in(0).hi / s, c.in(0).lo / s};
  return {c.in(0).lo / s, c.in(0).hi / s};
}

double exp_cell(const CellContext& c, std::size_t row, std::size_t col) {
  return std::exp(c.read(0, row, col));
}

void exp_expand(const ExpandContext& c, CellExpansion& e) {
  e.kind = ExpansionKind::exp;
  add_source(e, c.trace, c.step.made.inputs[0], e.row, e.col);
}

Bounds exp_bounds(const BoundsContext& c) {
  return {arma::exp(c.in(0).lo), arma::exp(c.in(0).hi)};
}

double row_sum_cell(const CellContext& c, std::size_t row, std::size_t /*col*/) {
  double sum = 0.0;
  const std::size_t m = c.trace.input(c.step, 0).value.n_cols;
  for (std::size_t j = 0; j < m; ++j) sum += c.read(0, row, j);
  return sum;
}

void row_sum_expand(const ExpandContext& c, CellExpansion& e) {
  e.kind = ExpansionKind::row_sum;
  const arma::rowvec exps = c.trace.input(c.step, 0).value.row(e.row);
  e.row_values.assign(exps.begin(), exps.end());
}

Bounds row_sum_bounds(const BoundsContext& c) {
  return {arma::sum(c.in(0).lo, 1), arma::sum(c.in(0).hi, 1)};
}

// m−1 additions per row, m the columns summed.
FlopCount row_sum_flops(const Step& /*step*/, const FlopSizes& s) {
  const std::uint64_t adds = s.k > 0 ? s.k - 1 : 0;
  return {s.n * adds, fmt::format("n·(m−1) = {}·{}", s.n, adds)};
}

// Whether the weights are E / Σ of recorded steps (head{h}.weights), not the
// softmax of their row in one step (a decoding step's).
bool divides_recorded(const Step& step) {
  return step.made.inputs.size() > 2;
}

// E[row, col] / Σ[row] as on paper; the stable softmax of the row when the
// exponentials are not recorded. A row whose softmax is 0/0 (every key
// masked) or whose Σ is not a positive number keeps the value the lesson's
// masked_row policy gave it.
double softmax_cell(const CellContext& c, std::size_t row, std::size_t col) {
  if (divides_recorded(c.step)) {
    const double sum = c.read(2, row, 0);
    if (!(sum > 0) || !std::isfinite(sum)) return c.step.value(row, col);
    return c.read(1, row, col) / sum;
  }
  const std::size_t m = c.step.value.n_cols;
  double top = -arma::datum::inf;
  for (std::size_t j = 0; j < m; ++j) top = std::max(top, c.read(0, row, j));
  if (top == -arma::datum::inf) return c.step.value(row, col);
  double sum = 0.0;
  for (std::size_t j = 0; j < m; ++j) sum += std::exp(c.read(0, row, j) - top);
  return std::exp(c.read(0, row, col) - top) / sum;
}

// The weight as on paper, E[i,j] / Σ[i], with the trace's own exponentials and
// row sums (the learner's, when verify carries them). Only when exp() overflows
// or every exponential underflows to 0 is the row max subtracted first.
void softmax_expand(const ExpandContext& c, CellExpansion& e) {
  const Trace& trace = c.trace;
  const Step& weights = c.step;
  e.kind = ExpansionKind::softmax;
  const arma::rowvec row = trace.input(weights, 0).value.row(e.row);
  e.row_values.assign(row.begin(), row.end());
  e.row_max = row.max();
  if (e.row_max == -arma::datum::inf) {
    const MaskedRowPolicy policy = c.lesson.masked_row;
    // One whole message per policy, so that the note stays a msgid (tr(e.note)).
    e.note = policy == MaskedRowPolicy::nan
                 ? N_("every key of this row is masked, so the softmax is 0/0; the lesson's "
                      "masked_row policy decides the row (nan: 0/0, as PyTorch)")
             : policy == MaskedRowPolicy::zero
                 ? N_("every key of this row is masked, so the softmax is 0/0; the lesson's "
                      "masked_row policy decides the row (zero: the row is set to 0)")
                 : N_("every key of this row is masked, so the softmax is 0/0; the lesson's "
                      "masked_row policy decides the row (uniform: the row is 1/m)");
    return;
  }
  // A decoding step records no exponentials or row sum: they are exp() of its row.
  const bool recorded = divides_recorded(weights);
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

Bounds softmax_step_bounds(const BoundsContext& c) {
  const std::vector<std::string>& in = c.step.made.inputs;
  // Given exponentials or row sums are divided as on paper, E / Σ (E ≥ 0, Σ > 0).
  if (divides_recorded(c.step) &&
      (c.overrides.contains(in.at(1)) || c.overrides.contains(in.at(2)))) {
    Bounds out{c.in(1).lo, c.in(1).hi};
    out.lo.each_col() /= c.in(2).hi;
    out.hi.each_col() /= c.in(2).lo;
    return out;
  }
  return softmax_bounds(c.in(0), c.step.value);
}

// exp / row sum: one division per cell, where the exponentials and row sums
// are steps of their own; a softmax alone (a decoding step) also counts its exp
// per cell and its m−1 additions per row.
FlopCount softmax_flops(const Step& step, const FlopSizes& s) {
  if (step.made.inputs.size() == 1)
    return {2 * s.n * s.m + s.n * (s.m - 1),
            tr_format(N_("exp, sum and divide: 2·n·m + n·(m−1) = 2·{}·{} + {}·{}"), s.n, s.m, s.n,
                        s.m - 1)};
  return per_cell(step, s);
}

}  // namespace

const OpFacets divide{Op::divide,     "divide",       "the scores", &divide_cell,
                      &divide_expand, &divide_bounds, &per_cell};
const OpFacets exp{Op::exp,     "exp",    "the masked scores", &exp_cell, &exp_expand,
                   &exp_bounds, &per_cell};
const OpFacets row_sum{Op::row_sum,     "row_sum",       "the exponentials", &row_sum_cell,
                       &row_sum_expand, &row_sum_bounds, &row_sum_flops};
const OpFacets softmax{Op::softmax,
                       "softmax",
                       "the masked scores, then the exponentials and row sums when recorded",
                       &softmax_cell,
                       &softmax_expand,
                       &softmax_step_bounds,
                       &softmax_flops};

}  // namespace attn::ops
