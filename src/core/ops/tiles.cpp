// The tiled (online) softmax of FlashAttention, one query block and one key
// block at a time (lesson [model] tile, docs/steps.md "Tiled softmax"):
//   tile_block   masked:(n,m) -> the block S:(r,c) at (offset, col_offset)
//   running_max  S:(r,c) [m_old:(r,1)] -> m = max(m_old, max_j S):(r,1)
//   rescale      m:(r,1) [m_old:(r,1)] -> α = exp(m_old − m):(r,1)
//   running_sum  S m α [ℓ_old] -> ℓ = α·ℓ_old + Σ_j exp(S − m):(r,1)
//   running_acc  S m α V [O_old] -> O = α·O_old + Σ_j exp(S_j − m)·V[col_offset + j]:(r,d_v)
//   divide_rows  (O_b, ℓ_b) per query block -> O/ℓ, the blocks' rows stacked:(n,d_v)
//   row_diff     A:(n,w) B:(n,w) -> max_j |A − B|:(n,1)
// Key block 0 has no m_old, ℓ_old, O_old: −inf, 0 and 0, so α = 0 there.
#include <algorithm>
#include <cmath>
#include <limits>

#include "core/efficient.hpp"
#include "core/i18n.hpp"
#include "core/ops/families.hpp"

namespace attn {

double tile_exp(double s, double m) {
  return m == -arma::datum::inf ? 0.0 : std::exp(s - m);
}

double tile_rescale(double m_old, double m_new) {
  return m_new == -arma::datum::inf ? 1.0 : std::exp(m_old - m_new);
}

namespace ops {

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

// Whether the step reads the previous key block's value (input `i` exists).
bool has_input(const Step& step, std::size_t i) {
  return step.made.inputs.size() > i;
}

double tile_block_cell(const CellContext& c, std::size_t row, std::size_t col) {
  return c.read(0, c.step.made.offset + row, c.step.made.col_offset + col);
}

void tile_block_expand(const ExpandContext& c, CellExpansion& e) {
  e.kind = ExpansionKind::copy;
  add_source(e, c.trace, c.step.made.inputs[0], c.step.made.offset + e.row,
             c.step.made.col_offset + e.col);
}

Bounds tile_block_bounds(const BoundsContext& c) {
  const arma::uword r0 = c.step.made.offset, c0 = c.step.made.col_offset;
  const arma::uword r1 = r0 + c.step.value.n_rows - 1, c1 = c0 + c.step.value.n_cols - 1;
  return {c.in(0).lo.submat(r0, c0, r1, c1), c.in(0).hi.submat(r0, c0, r1, c1)};
}

// The columns of input 0 (the block's scores).
std::size_t block_width(const Trace& trace, const Step& step) {
  return trace.input(step, 0).value.n_cols;
}

double running_max_cell(const CellContext& c, std::size_t row, std::size_t /*col*/) {
  double m = has_input(c.step, 1) ? c.read(1, row, 0) : -kInf;
  for (std::size_t j = 0; j < block_width(c.trace, c.step); ++j) m = std::max(m, c.read(0, row, j));
  return m;
}

// max(m_old, S[r,0], …) = max(0.5, 0.3, …)
void running_max_expand(const ExpandContext& c, CellExpansion& e) {
  e.kind = ExpansionKind::expression;
  const Step& S = c.trace.input(c.step, 0);
  const bool old = has_input(c.step, 1);
  add_symbol(e, "max(");
  if (old) add_ref(e, c.trace.input(c.step, 1), e.row, 0);
  for (std::size_t j = 0; j < S.value.n_cols; ++j) {
    if (old || j) add_symbol(e, ",");
    add_ref(e, S, e.row, j);
  }
  add_symbol(e, ")");
  add_symbol(e, "=");
  add_symbol(e, "max(");
  if (old) add_number(e, c.trace.input(c.step, 1).value(e.row, 0));
  for (std::size_t j = 0; j < S.value.n_cols; ++j) {
    if (old || j) add_symbol(e, ",");
    add_number(e, S.value(e.row, j));
  }
  add_symbol(e, ")");
}

Bounds running_max_bounds(const BoundsContext& c) {
  Bounds out{arma::max(c.in(0).lo, 1), arma::max(c.in(0).hi, 1)};
  if (has_input(c.step, 1)) {
    out.lo = arma::max(out.lo, c.in(1).lo);
    out.hi = arma::max(out.hi, c.in(1).hi);
  }
  return out;
}

double rescale_cell(const CellContext& c, std::size_t row, std::size_t /*col*/) {
  return tile_rescale(has_input(c.step, 1) ? c.read(1, row, 0) : -kInf, c.read(0, row, 0));
}

// exp(m_old − m) = exp(0.5 − 0.7)
void rescale_expand(const ExpandContext& c, CellExpansion& e) {
  e.kind = ExpansionKind::expression;
  const Step& m = c.trace.input(c.step, 0);
  const bool old = has_input(c.step, 1);
  add_symbol(e, "exp(");
  if (old)
    add_ref(e, c.trace.input(c.step, 1), e.row, 0);
  else
    add_words(e, N_("m_old (no earlier key block: −inf)"));
  add_symbol(e, "−");
  add_ref(e, m, e.row, 0);
  add_symbol(e, ")");
  add_symbol(e, "=");
  add_symbol(e, "exp(");
  add_number(e, old ? c.trace.input(c.step, 1).value(e.row, 0) : -kInf);
  add_symbol(e, "−");
  add_number(e, m.value(e.row, 0));
  add_symbol(e, ")");
}

// exp(m_old − m) falls as m grows.
Bounds rescale_bounds(const BoundsContext& c) {
  const arma::uword r = c.step.value.n_rows;
  Bounds out{arma::mat(r, 1), arma::mat(r, 1)};
  for (arma::uword i = 0; i < r; ++i) {
    const double old_lo = has_input(c.step, 1) ? c.in(1).lo(i, 0) : -kInf;
    const double old_hi = has_input(c.step, 1) ? c.in(1).hi(i, 0) : -kInf;
    out.lo(i, 0) = tile_rescale(old_lo, c.in(0).hi(i, 0));
    out.hi(i, 0) = tile_rescale(old_hi, c.in(0).lo(i, 0));
    if (out.hi(i, 0) < out.lo(i, 0)) std::swap(out.lo(i, 0), out.hi(i, 0));  // the −inf rows
  }
  return out;
}

// A subtraction and an exp per row.
FlopCount rescale_flops(const Step& /*step*/, const FlopSizes& s) {
  return {2 * s.n, fmt::format("2·r = 2·{}", s.n)};
}

double running_sum_cell(const CellContext& c, std::size_t row, std::size_t /*col*/) {
  const double m = c.read(1, row, 0);
  double sum = 0.0;
  for (std::size_t j = 0; j < block_width(c.trace, c.step); ++j)
    sum += tile_exp(c.read(0, row, j), m);
  return has_input(c.step, 3) ? c.read(2, row, 0) * c.read(3, row, 0) + sum : sum;
}

// The exponentials of the block's row: exp(s_0 − m) + exp(s_1 − m) + …
void add_exp_terms(const Step& S, std::size_t row, double m, CellExpansion& e,
                   const Step* V = nullptr, std::size_t v_first = 0, std::size_t col = 0) {
  for (std::size_t j = 0; j < S.value.n_cols; ++j) {
    if (j) add_symbol(e, "+");
    add_symbol(e, "exp(");
    add_number(e, S.value(row, j));
    add_symbol(e, "−");
    add_number(e, m);
    add_symbol(e, ")");
    if (!V) continue;
    add_symbol(e, "×");
    add_number(e, V->value(v_first + j, col));
  }
}

// "α × old + ": the rescale (input 2) times the previous key block's value
// (input `old`, column `col`), as numbers; both cells are sources.
void add_rescaled(CellExpansion& e, const Trace& trace, const Step& step, std::size_t old,
                  std::size_t col) {
  const Step &alpha = trace.input(step, 2), &previous = trace.input(step, old);
  add_number(e, alpha.value(e.row, 0));
  add_symbol(e, "×");
  add_number(e, previous.value(e.row, col));
  add_symbol(e, "+");
  e.sources = {operand_ref(alpha, e.row, 0), operand_ref(previous, e.row, col)};
  e.source_values = {alpha.value(e.row, 0), previous.value(e.row, col)};
}

// α × ℓ_old + Σ_j exp(s_j − m) = 0.82 × 1.5 + exp(0.3 − 0.7) + …
void running_sum_expand(const ExpandContext& c, CellExpansion& e) {
  e.kind = ExpansionKind::expression;
  const Step &S = c.trace.input(c.step, 0), &m = c.trace.input(c.step, 1);
  add_words(e, has_input(c.step, 3) ? N_("rescale × l_old + Σ_j exp(scores_j − m)")
                                    : N_("Σ_j exp(scores_j − m)"));
  add_symbol(e, "=");
  if (has_input(c.step, 3)) add_rescaled(e, c.trace, c.step, 3, 0);
  add_exp_terms(S, e.row, m.value(e.row, 0), e);
}

// exp(x − m) for x in [x_lo, x_hi], m in [m_lo, m_hi]: [exp(x_lo − m_hi), exp(x_hi − m_lo)].
std::pair<double, double> exp_term_bounds(double x_lo, double x_hi, double m_lo, double m_hi) {
  return {tile_exp(x_lo, m_hi),
          m_lo == -kInf ? (x_hi == -kInf ? 0.0 : kInf) : tile_exp(x_hi, m_lo)};
}

// [a]·[b] for intervals.
std::pair<double, double> times(double a_lo, double a_hi, double b_lo, double b_hi) {
  const double p[] = {a_lo * b_lo, a_lo * b_hi, a_hi * b_lo, a_hi * b_hi};
  return {*std::min_element(p, p + 4), *std::max_element(p, p + 4)};
}

Bounds running_sum_bounds(const BoundsContext& c) {
  const arma::uword r = c.step.value.n_rows;
  Bounds out{arma::mat(r, 1, arma::fill::zeros), arma::mat(r, 1, arma::fill::zeros)};
  const Bounds &S = c.in(0), &m = c.in(1);
  for (arma::uword i = 0; i < r; ++i) {
    for (arma::uword j = 0; j < S.lo.n_cols; ++j) {
      const auto [lo, hi] = exp_term_bounds(S.lo(i, j), S.hi(i, j), m.lo(i, 0), m.hi(i, 0));
      out.lo(i, 0) += lo;
      out.hi(i, 0) += hi;
    }
    if (!has_input(c.step, 3)) continue;
    const auto [lo, hi] =
        times(c.in(2).lo(i, 0), c.in(2).hi(i, 0), c.in(3).lo(i, 0), c.in(3).hi(i, 0));
    out.lo(i, 0) += lo;
    out.hi(i, 0) += hi;
  }
  return out;
}

// Per row: c subtractions and exps, c−1 additions, and α·ℓ_old + (a product and a sum).
FlopCount running_sum_flops(const Step& step, const FlopSizes& s) {
  if (!has_input(step, 3))
    return {s.n * (3 * s.k - 1), fmt::format("r·(3·c − 1) = {}·(3·{} − 1)", s.n, s.k)};
  return {s.n * (3 * s.k + 1), fmt::format("r·(3·c + 1) = {}·(3·{} + 1)", s.n, s.k)};
}

double running_acc_cell(const CellContext& c, std::size_t row, std::size_t col) {
  const double m = c.read(1, row, 0);
  const std::size_t first = c.step.made.col_offset;
  double sum = 0.0;
  for (std::size_t j = 0; j < block_width(c.trace, c.step); ++j)
    sum += tile_exp(c.read(0, row, j), m) * c.read(3, first + j, col);
  return has_input(c.step, 4) ? c.read(2, row, 0) * c.read(4, row, col) + sum : sum;
}

// α × O_old + Σ_j exp(s_j − m) × V[j] = 0.82 × 0.4 + exp(0.3 − 0.7) × 0.1 + …
void running_acc_expand(const ExpandContext& c, CellExpansion& e) {
  e.kind = ExpansionKind::expression;
  const Step &S = c.trace.input(c.step, 0), &m = c.trace.input(c.step, 1);
  const Step& V = c.trace.input(c.step, 3);
  add_words(e, has_input(c.step, 4) ? N_("rescale × acc_old + Σ_j exp(scores_j − m) × V_j")
                                    : N_("Σ_j exp(scores_j − m) × V_j"));
  add_symbol(e, "=");
  if (has_input(c.step, 4)) add_rescaled(e, c.trace, c.step, 4, e.col);
  add_exp_terms(S, e.row, m.value(e.row, 0), e, &V, c.step.made.col_offset, e.col);
}

Bounds running_acc_bounds(const BoundsContext& c) {
  const arma::uword r = c.step.value.n_rows, w = c.step.value.n_cols;
  Bounds out{arma::mat(r, w, arma::fill::zeros), arma::mat(r, w, arma::fill::zeros)};
  const Bounds &S = c.in(0), &m = c.in(1), &V = c.in(3);
  const std::size_t first = c.step.made.col_offset;
  for (arma::uword i = 0; i < r; ++i)
    for (arma::uword k = 0; k < w; ++k) {
      for (arma::uword j = 0; j < S.lo.n_cols; ++j) {
        const auto [p_lo, p_hi] = exp_term_bounds(S.lo(i, j), S.hi(i, j), m.lo(i, 0), m.hi(i, 0));
        const auto [lo, hi] = times(p_lo, p_hi, V.lo(first + j, k), V.hi(first + j, k));
        out.lo(i, k) += lo;
        out.hi(i, k) += hi;
      }
      if (!has_input(c.step, 4)) continue;
      const auto [lo, hi] =
          times(c.in(2).lo(i, 0), c.in(2).hi(i, 0), c.in(4).lo(i, k), c.in(4).hi(i, k));
      out.lo(i, k) += lo;
      out.hi(i, k) += hi;
    }
  return out;
}

// P·V_block as a matmul, 2·r·c·d_v (P = exp(S − m) is counted in .l), and
// α·O_old + … two more per cell.
FlopCount running_acc_flops(const Step& step, const FlopSizes& s) {
  const std::uint64_t product = 2 * s.n * s.k * s.m;
  if (!has_input(step, 4)) return {product, fmt::format("2·r·c·d_v = 2·{}·{}·{}", s.n, s.k, s.m)};
  return {product + 2 * s.n * s.m,
          fmt::format("2·r·c·d_v + 2·r·d_v = 2·{}·{}·{} + 2·{}·{}", s.n, s.k, s.m, s.n, s.m)};
}

// The pair (numerator input, row in it) that holds row `row` of the stacked result.
std::pair<std::size_t, std::size_t> stacked_row(const Trace& trace, const Step& step,
                                                std::size_t row) {
  std::size_t first = 0;
  for (std::size_t b = 0; b + 1 < step.made.inputs.size(); b += 2) {
    const std::size_t rows = trace.input(step, b).value.n_rows;
    if (row < first + rows) return {b, row - first};
    first += rows;
  }
  return {step.made.inputs.size(), 0};
}

double divide_rows_cell(const CellContext& c, std::size_t row, std::size_t col) {
  const auto [b, r] = stacked_row(c.trace, c.step, row);
  if (b >= c.step.made.inputs.size()) return c.step.value(row, col);
  const double den = c.read(b + 1, r, 0);
  if (!(den > 0) || !std::isfinite(den)) return c.step.value(row, col);  // the masked_row policy
  return c.read(b, r, col) / den;
}

void divide_rows_expand(const ExpandContext& c, CellExpansion& e) {
  e.kind = ExpansionKind::expression;
  const auto [b, r] = stacked_row(c.trace, c.step, e.row);
  const Step &num = c.trace.input(c.step, b), &den = c.trace.input(c.step, b + 1);
  add_ref(e, num, r, e.col);
  add_symbol(e, "/");
  add_ref(e, den, r, 0);
  add_symbol(e, "=");
  add_number(e, num.value(r, e.col));
  add_symbol(e, "/");
  add_number(e, den.value(r, 0));
  if (!(den.value(r, 0) > 0)) {
    add_symbol(e, ",");
    add_words(e, N_("0/0: every key of this row is masked, so the lesson's masked_row policy "
                    "decides the row"));
  }
}

Bounds divide_rows_bounds(const BoundsContext& c) {
  Bounds out = exact_bounds(c.step.value);
  for (arma::uword i = 0; i < c.step.value.n_rows; ++i) {
    const auto [b, r] = stacked_row(c.trace, c.step, i);
    const Bounds &num = c.in(b), &den = c.in(b + 1);
    if (!(den.lo(r, 0) > 0)) continue;  // the policy's row, or a denominator that may be 0
    for (arma::uword k = 0; k < c.step.value.n_cols; ++k) {
      const double q[] = {num.lo(r, k) / den.lo(r, 0), num.lo(r, k) / den.hi(r, 0),
                          num.hi(r, k) / den.lo(r, 0), num.hi(r, k) / den.hi(r, 0)};
      out.lo(i, k) = *std::min_element(q, q + 4);
      out.hi(i, k) = *std::max_element(q, q + 4);
    }
  }
  return out;
}

double row_diff_cell(const CellContext& c, std::size_t row, std::size_t /*col*/) {
  double out = 0.0;
  for (std::size_t j = 0; j < block_width(c.trace, c.step); ++j) {
    const double a = c.read(0, row, j), b = c.read(1, row, j);
    if (std::isnan(a) && std::isnan(b)) continue;
    const double d = std::abs(a - b);
    out = std::isnan(d) ? d : std::max(out, d);
    if (std::isnan(out)) return out;
  }
  return out;
}

// max(|a_0 − b_0|, |a_1 − b_1|, …)
void row_diff_expand(const ExpandContext& c, CellExpansion& e) {
  e.kind = ExpansionKind::expression;
  const Step &A = c.trace.input(c.step, 0), &B = c.trace.input(c.step, 1);
  add_words(e, N_("max_j |a_j − b_j|"));
  add_symbol(e, "=");
  add_symbol(e, "max(");
  for (std::size_t j = 0; j < A.value.n_cols; ++j) {
    if (j) add_symbol(e, ",");
    add_symbol(e, "|");
    add_number(e, A.value(e.row, j));
    add_symbol(e, "−");
    add_number(e, B.value(e.row, j));
    add_symbol(e, "|");
  }
  add_symbol(e, ")");
  e.sources = {operand_ref(A, e.row, 0), operand_ref(B, e.row, 0)};
  e.source_values = {A.value(e.row, 0), B.value(e.row, 0)};
}

Bounds row_diff_bounds(const BoundsContext& c) {
  const arma::uword n = c.step.value.n_rows;
  arma::mat lo(n, 1, arma::fill::zeros), hi(n, 1, arma::fill::zeros);
  const Bounds &A = c.in(0), &B = c.in(1);
  for (arma::uword i = 0; i < n; ++i)
    for (arma::uword j = 0; j < A.lo.n_cols; ++j) {
      hi(i, 0) = std::max({hi(i, 0), A.hi(i, j) - B.lo(i, j), B.hi(i, j) - A.lo(i, j)});
      lo(i, 0) = std::max({lo(i, 0), A.lo(i, j) - B.hi(i, j), B.lo(i, j) - A.hi(i, j)});
    }
  const arma::uvec nan = arma::find_nonfinite(c.step.value);
  lo.elem(nan) = c.step.value.elem(nan);
  hi.elem(nan) = c.step.value.elem(nan);
  return {lo, hi};
}

// A subtraction and a comparison per cell compared.
FlopCount row_diff_flops(const Step& /*step*/, const FlopSizes& s) {
  return {2 * s.n * s.k, fmt::format("2·n·w = 2·{}·{}", s.n, s.k)};
}

}  // namespace

const OpFacets tile_block{
    Op::efficient,    "tile_block",       "head{h}.masked (the block at offset, col_offset)",
    &tile_block_cell, &tile_block_expand, &tile_block_bounds,
    &no_flops};
const OpFacets running_max{Op::efficient,     "running_max",       "the block's scores [, m_old]",
                           &running_max_cell, &running_max_expand, &running_max_bounds,
                           &no_flops};
const OpFacets rescale{Op::efficient,   "rescale",       "m [, m_old]", &rescale_cell,
                       &rescale_expand, &rescale_bounds, &rescale_flops};
const OpFacets running_sum{
    Op::efficient,     "running_sum",       "the block's scores, m, rescale [, l_old]",
    &running_sum_cell, &running_sum_expand, &running_sum_bounds,
    &running_sum_flops};
const OpFacets running_acc{
    Op::efficient,     "running_acc",       "the block's scores, m, rescale, head{h}.V [, acc_old]",
    &running_acc_cell, &running_acc_expand, &running_acc_bounds,
    &running_acc_flops};
const OpFacets divide_rows{
    Op::efficient,     "divide_rows",       "numerator, denominator (one pair per block of rows)",
    &divide_rows_cell, &divide_rows_expand, &divide_rows_bounds,
    &per_cell};
const OpFacets row_diff{Op::efficient,  "row_diff",       "two matrices of one shape",
                        &row_diff_cell, &row_diff_expand, &row_diff_bounds,
                        &row_diff_flops};

}  // namespace ops

// The whole steps (core/efficient.hpp).

arma::mat tile_running_max(const arma::mat& S, const arma::mat& m_old) {
  arma::mat m = arma::max(S, 1);
  if (!m_old.is_empty()) m = arma::max(m, m_old);
  return m;
}

arma::mat tile_rescale_factors(const arma::mat& m_new, const arma::mat& m_old, const Round& round) {
  arma::mat out(m_new.n_rows, 1);
  for (arma::uword i = 0; i < m_new.n_rows; ++i) {
    const double old = m_old.is_empty() ? -arma::datum::inf : m_old(i, 0);
    out(i, 0) = m_new(i, 0) == -arma::datum::inf ? 1.0 : round(std::exp(round(old - m_new(i, 0))));
  }
  return out;
}

// exp(s − m) as the format computes it: the difference, then its exp, each rounded.
double rounded_tile_exp(double s, double m, const Round& round) {
  return m == -arma::datum::inf ? 0.0 : round(std::exp(round(s - m)));
}

arma::mat tile_running_sum(const arma::mat& S, const arma::mat& m, const arma::mat& alpha,
                           const arma::mat& l_old, const Round& round) {
  arma::mat out(S.n_rows, 1);
  for (arma::uword i = 0; i < S.n_rows; ++i) {
    double sum = 0.0;
    for (arma::uword j = 0; j < S.n_cols; ++j)
      sum = round(sum + rounded_tile_exp(S(i, j), m(i, 0), round));
    out(i, 0) = l_old.is_empty() ? sum : round(round(alpha(i, 0) * l_old(i, 0)) + sum);
  }
  return out;
}

arma::mat tile_running_acc(const arma::mat& S, const arma::mat& m, const arma::mat& alpha,
                           const arma::mat& V_block, const arma::mat& O_old, const Round& round) {
  arma::mat out(S.n_rows, V_block.n_cols);
  for (arma::uword i = 0; i < S.n_rows; ++i)
    for (arma::uword k = 0; k < V_block.n_cols; ++k) {
      double sum = 0.0;
      for (arma::uword j = 0; j < S.n_cols; ++j)
        sum = round(sum + round(rounded_tile_exp(S(i, j), m(i, 0), round) * V_block(j, k)));
      out(i, k) = O_old.is_empty() ? sum : round(round(alpha(i, 0) * O_old(i, k)) + sum);
    }
  return out;
}

arma::mat divide_by_rows(const arma::mat& num, const arma::mat& den, const Round& round) {
  arma::mat out(num.n_rows, num.n_cols);
  for (arma::uword i = 0; i < num.n_rows; ++i)
    for (arma::uword k = 0; k < num.n_cols; ++k)
      out(i, k) = den(i, 0) > 0 ? round(num(i, k) / den(i, 0)) : arma::datum::nan;
  return out;
}

arma::mat max_abs_row_diff(const arma::mat& A, const arma::mat& B) {
  arma::mat out(A.n_rows, 1, arma::fill::zeros);
  for (arma::uword i = 0; i < A.n_rows; ++i)
    for (arma::uword j = 0; j < A.n_cols; ++j) {
      if (std::isnan(A(i, j)) && std::isnan(B(i, j))) continue;
      const double d = std::abs(A(i, j) - B(i, j));
      if (std::isnan(d) || std::isnan(out(i, 0)))
        out(i, 0) = arma::datum::nan;
      else
        out(i, 0) = std::max(out(i, 0), d);
    }
  return out;
}

}  // namespace attn
