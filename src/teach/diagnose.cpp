// The common mistakes, each a trace recomputed the mistaken way (on top of the
// learner's own values) and compared with what the learner wrote.
#include "teach/diagnose.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <set>
#include <stdexcept>
#include <utility>

#include "core/arithmetic.hpp"
#include "core/bounds.hpp"
#include "core/error.hpp"
#include "core/number_text.hpp"
#include "teach/slips.hpp"

namespace attn {

namespace {

bool any_masked(const Trace& trace) {
  return arma::any(arma::vectorise(trace.mask));
}

// The range S with the cells `cells` set to `fill`.
Bounds filled(Bounds S, const arma::uvec& cells, double fill) {
  S.lo.elem(cells).fill(fill);
  S.hi.elem(cells).fill(fill);
  return S;
}

// `v` cut (not rounded) to `decimals`: toward zero.
double cut_to(double v, int decimals) {
  const double f = std::pow(10.0, decimals);
  return std::trunc(v * f * (1 + 1e-12)) / f;
}

// `written` is `right`'s range [lo, hi] at [row, col] cut to `decimals`, and
// not what rounding gives.
bool cut_not_rounded(const Bounds& right, std::size_t row, std::size_t col, double written,
                     int decimals) {
  const double lo = right.lo(row, col), hi = right.hi(row, col);
  if (!std::isfinite(lo) || !std::isfinite(hi) || !std::isfinite(written) || decimals > 12)
    return false;
  const double half = 0.5 * std::pow(10.0, -decimals);
  return cut_to(lo, decimals) - half * 1e-6 <= written && written <= cut_to(hi, decimals) + half * 1e-6;
}

// `written` meets `right` at the transposed cell [col, row].
bool in_transposed_cell(const Bounds& right, std::size_t row, std::size_t col, double written,
                        int decimals) {
  if (right.lo.n_rows != right.lo.n_cols || row >= right.lo.n_rows || col >= right.lo.n_cols)
    return false;
  const double tolerance = written_tolerance(decimals);
  const double lo = right.lo(col, row), hi = right.hi(col, row);
  if (!std::isfinite(lo) || !std::isfinite(hi)) return lo <= written && written <= hi;
  return written + tolerance * (1 + 1e-9) >= lo && written - tolerance * (1 + 1e-9) <= hi;
}

// exp(x − m) for x in [x_lo, x_hi], m in [m_lo, m_hi], as the tiles take it
// (0 where m = −inf).
std::pair<double, double> tile_exp_range(double x_lo, double x_hi, double m_lo, double m_hi) {
  const double lo = m_hi == -INFINITY ? 0.0 : std::exp(x_lo - m_hi);
  const double hi =
      m_lo == -INFINITY ? (x_hi == -INFINITY ? 0.0 : INFINITY) : std::exp(x_hi - m_lo);
  return {lo, hi};
}

// [a]·[b] for intervals.
std::pair<double, double> interval_times(double a_lo, double a_hi, double b_lo, double b_hi) {
  const double p[] = {a_lo * b_lo, a_lo * b_hi, a_hi * b_lo, a_hi * b_hi};
  return {*std::min_element(p, p + 4), *std::max_element(p, p + 4)};
}

// ℓ or O of a key block j > 0 with the old value not rescaled:
// old + Σ_j exp(S − m) (× V_j for O); nullopt for any other step.
std::optional<Bounds> unrescaled(const MistakeSite& at) {
  const Operation& op = at.step.made;
  const bool sum = op.efficient == EfficientOp::running_sum;
  if (op.op != Op::efficient || (!sum && op.efficient != EfficientOp::running_acc) ||
      op.inputs.size() < (sum ? 4u : 5u))
    return std::nullopt;
  const Bounds &S = at.range(at.input(at.step, 0)), &m = at.range(at.input(at.step, 1));
  Bounds out = at.range(at.input(at.step, sum ? 3 : 4));  // the old value, as it was
  for (arma::uword i = 0; i < out.lo.n_rows; ++i)
    for (arma::uword k = 0; k < out.lo.n_cols; ++k)
      for (arma::uword j = 0; j < S.lo.n_cols; ++j) {
        auto [lo, hi] = tile_exp_range(S.lo(i, j), S.hi(i, j), m.lo(i, 0), m.hi(i, 0));
        if (!sum) {
          const Bounds& V = at.range(at.input(at.step, 3));
          const std::size_t v = op.col_offset + j;
          std::tie(lo, hi) = interval_times(lo, hi, V.lo(v, k), V.hi(v, k));
        }
        out.lo(i, k) += lo;
        out.hi(i, k) += hi;
      }
  return out;
}

// Head h's K or V sliced from K/V head h mod g (the heads taken in turn)
// instead of ⌊h / (heads / g)⌋; nullopt where K/V are not grouped or the two agree.
std::optional<Bounds> wrong_kv_slice(const MistakeSite& at) {
  const Step& full = at.input(at.step, 0);
  const std::size_t width = at.step.value.n_cols;
  if (at.step.made.op != Op::slice || width == 0 || at.step.head < 0) return std::nullopt;
  const std::size_t groups = full.value.n_cols / width;
  if (groups == 0 || groups >= at.lesson.heads) return std::nullopt;  // Q, or one K/V per head
  const std::size_t right = at.step.made.offset / width;
  const std::size_t wrong = static_cast<std::size_t>(at.step.head) % groups;
  if (wrong == right) return std::nullopt;
  const Bounds& K = at.range(full);
  const arma::uword first = wrong * width, last = first + width - 1;
  return Bounds{K.lo.cols(first, last), K.hi.cols(first, last)};
}

// head{h}.kv computed as Kᵀ·V instead of φ(K)ᵀ·V; nullopt for any other step.
std::optional<Bounds> kv_without_phi(const MistakeSite& at) {
  if (at.step.made.op != Op::efficient || at.step.made.efficient != EfficientOp::matmul_tn)
    return std::nullopt;
  const Step& phi_k = at.input(at.step, 0);
  if (phi_k.made.op != Op::efficient || phi_k.made.efficient != EfficientOp::elu_plus_one)
    return std::nullopt;
  return product_bounds(transposed_bounds(at.range(at.input(phi_k, 0))),
                        at.range(at.input(at.step, 1)));
}

// The backward pass's mistakes (grad.* steps, Op::backward). Each reads the
// one vjp of a gradient step (or its vjps, for a sum of consumers) and its
// inputs' ranges; nullopt for any other step.

// The gradient step's only vjp when it is of `kind` and goes back through a
// step of kind `through` (StepKind::input: any); nullptr otherwise.
const Vjp* only_vjp(const MistakeSite& at, VjpKind kind, StepKind through = StepKind::input) {
  const Operation& op = at.step.made;
  if (op.op != Op::backward || op.vjps.size() != 1 || op.vjps[0].kind != kind) return nullptr;
  const Step* of = at.base.find(op.vjps[0].of);
  if (!of || (through != StepKind::input && of->kind != through)) return nullptr;
  return &op.vjps[0];
}

// The range of input k of vjp v (its G, its other factor …).
const Bounds& vjp_range(const MistakeSite& at, const Vjp& v, std::size_t k) {
  return at.range(at.input(at.step, v.first + k));
}

bool is_square(const Bounds& B) {
  return B.lo.n_rows == B.lo.n_cols;
}

// grad.head{h}.K as dS·Q instead of dSᵀ·Q (dS square: self-attention).
std::optional<Bounds> grad_k_untransposed(const MistakeSite& at) {
  const Vjp* v = only_vjp(at, VjpKind::matmul_t_right, StepKind::scores);
  if (!v || !is_square(vjp_range(at, *v, 0))) return std::nullopt;
  return product_bounds(vjp_range(at, *v, 0), vjp_range(at, *v, 1));
}

// grad.head{h}.Q as dSᵀ·K instead of dS·K (dS square).
std::optional<Bounds> grad_q_transposed(const MistakeSite& at) {
  const Vjp* v = only_vjp(at, VjpKind::matmul_t_left, StepKind::scores);
  if (!v || !is_square(vjp_range(at, *v, 0))) return std::nullopt;
  return product_bounds(transposed_bounds(vjp_range(at, *v, 0)), vjp_range(at, *v, 1));
}

// grad.W (a given weight of Y = X·W) as X·dY instead of Xᵀ·dY (X square).
std::optional<Bounds> grad_w_untransposed(const MistakeSite& at) {
  const Vjp* v = only_vjp(at, VjpKind::matmul_right);
  if (!v) return std::nullopt;
  const Step* weight = at.base.find(at.step.step_id.forward().str());
  if (!weight || weight->made.op != Op::given || !is_square(vjp_range(at, *v, 0)))
    return std::nullopt;
  return product_bounds(vjp_range(at, *v, 0), vjp_range(at, *v, 1));
}

// grad.head{h}.scores = grad.scaled / s with the division left out (power 0)
// or made twice (power 2); nullopt where s = 1.
std::optional<Bounds> grad_divided(const MistakeSite& at, int power) {
  const Vjp* v = only_vjp(at, VjpKind::divide, StepKind::scaled);
  if (!v || v->divisor == 1.0) return std::nullopt;
  const Bounds& G = vjp_range(at, *v, 0);
  const double by = std::pow(v->divisor, power);
  return Bounds{G.lo / by, G.hi / by};
}

// [a(1 − a)] for a in [lo, hi]: a(1 − a) rises to ¼ at a = ½, then falls.
std::pair<double, double> a_one_minus_a(double lo, double hi) {
  const double at_lo = lo * (1 - lo), at_hi = hi * (1 - hi);
  const double top = lo <= 0.5 && 0.5 <= hi ? 0.25 : std::max(at_lo, at_hi);
  return {std::min(at_lo, at_hi), top};
}

// grad.head{h}.masked from the Jacobian's diagonal only, A(1 − A)·dA
// (`diagonal`), or without the row dot, A ⊙ dA; a row the masked_row policy
// set stays 0, as in the right step.
std::optional<Bounds> softmax_grad_part(const MistakeSite& at, bool diagonal) {
  const Vjp* v = only_vjp(at, VjpKind::softmax);
  if (!v) return std::nullopt;
  const Bounds &G = vjp_range(at, *v, 0), &A = vjp_range(at, *v, 1);
  const Bounds& right = at.range(at.step);
  Bounds out = times_bounds(A, G);
  for (arma::uword r = 0; r < out.lo.n_rows; ++r)
    for (arma::uword c = 0; c < out.lo.n_cols; ++c) {
      if (right.lo(r, c) == 0 && right.hi(r, c) == 0 && arma::all(at.base.mask.row(r) != 0u)) {
        out.lo(r, c) = out.hi(r, c) = 0;
        continue;
      }
      if (!diagonal) continue;
      const auto [lo, hi] = a_one_minus_a(A.lo(r, c), A.hi(r, c));
      std::tie(out.lo(r, c), out.hi(r, c)) = interval_times(lo, hi, G.lo(r, c), G.hi(r, c));
    }
  return out;
}

// An input read by several products (X by Q, K and V) given the gradient of
// the first alone, dQ·W_Qᵀ; nullopt unless every consumer is such a product.
std::optional<Bounds> first_consumer_only(const MistakeSite& at) {
  const Operation& op = at.step.made;
  if (op.op != Op::backward || op.vjps.size() < 2 ||
      std::any_of(op.vjps.begin(), op.vjps.end(),
                  [](const Vjp& v) { return v.kind != VjpKind::matmul_left; }))
    return std::nullopt;
  const Vjp& v = op.vjps.front();
  return product_bounds(vjp_range(at, v, 0), transposed_bounds(vjp_range(at, v, 1)));
}

// The mistakes, in precedence order (diagnose.hpp: how to add one). A method
// mistake's computation reads the step's inputs from the op graph: the scores
// are Q_h·K_hᵀ (inputs Q_h, K_h), scaled divides the scores, masked masks the
// scaled scores, the weights are the softmax of the masked scores.
const CommonMistake kCommonMistakes[] = {
    {.label = N_("transposed_answer"),
     .kind = MistakeKind::written,
     .why = N_("Row i of a step is query i (or token i) and column j is key j (or feature j), so "
               "the value of [i, j] goes in row i, column j."),
     .lesson = "river-bank",
     .written_as = in_transposed_cell,
     .written_detail = [](const Bounds&, std::size_t, std::size_t, double, int) -> Message {
       return Message(N_("the values were written into the transposed cells: [i, j] holds the "
                         "value of [j, i]"));
     }},
    {.label = N_("transposed_weights"),
     .why = N_("A projection maps each token's row of X through W: Q = X·W_Q takes row i of X "
               "times column j of W_Q, so W is used as it is, not transposed."),
     .lesson = "three-words",
     .starts_from = StepKind::projection,
     .mistaken = [](const MistakeSite& at) -> std::optional<Bounds> {
       if (at.step.made.op != Op::matmul) return std::nullopt;
       const Bounds& X = at.range(at.input(at.step, 0));
       const Bounds& W = at.range(at.input(at.step, 1));
       // X·Wᵀ has the shape of X·W only for a square W.
       if (W.lo.n_rows != W.lo.n_cols || X.lo.n_cols != W.lo.n_rows) return std::nullopt;
       Bounds P = product_bounds(X, transposed_bounds(W));
       if (at.step.made.inputs.size() > 2) {
         const Bounds& b = at.range(at.input(at.step, 2));
         P.lo.each_row() += b.lo.row(0);
         P.hi.each_row() += b.hi.row(0);
       }
       return P;
     },
     .detail =
         [](const Lesson&) {
           return Message(
               N_("the projections were computed with the weight matrix transposed, X·Wᵀ instead "
                  "of X·W"));
         }},
    {.label = N_("not_transposed"),
     .why = N_("Each score pairs a query row with a key row, S[i,j] = q_i·k_j, and that is Q·Kᵀ: "
               "K is transposed so that its rows become columns."),
     .lesson = "river-bank",
     .starts_from = StepKind::scores,
     .mistaken = [](const MistakeSite& at) -> std::optional<Bounds> {
       const Bounds& Q = at.range(at.input(at.step, 0));
       const Bounds& K = at.range(at.input(at.step, 1));
       // Q·K needs as many keys as d_k, and scores of the same shape: K square.
       if (K.lo.n_rows != Q.lo.n_cols || K.lo.n_cols != K.lo.n_rows) return std::nullopt;
       return product_bounds(Q, K);
     },
     .detail =
         [](const Lesson&) {
           return Message(
               N_("Q·K was computed instead of Q·Kᵀ (row i of Q times column j of K, not row j of "
                  "K)"));
         }},
    {.label = N_("mask_ignored"),
     .why = N_("The mask decides which keys a query may see; a masked key must end with weight 0, "
               "so its score is replaced before the softmax."),
     .lesson = "causal-decoder",
     .starts_from = StepKind::masked,
     .mistaken = [](const MistakeSite& at) -> std::optional<Bounds> {
       if (!any_masked(at.base)) return std::nullopt;
       return at.range(at.input(at.step, 0));
     },
     .detail =
         [](const Lesson&) {
           return Message(
               N_("the mask was not applied: the masked cells kept their scaled values"));
         }},
    {.label = N_("wrong_mask_polarity"),
     .why = N_("In a keep-matrix 1 means may attend and 0 means masked, as masked_fill(mask == 0, "
               "-inf) reads."),
     .lesson = "mask-polarity",
     .starts_from = StepKind::masked,
     .mistaken = [](const MistakeSite& at) -> std::optional<Bounds> {
       if (!any_masked(at.base)) return std::nullopt;
       return filled(at.range(at.input(at.step, 0)), arma::find(at.base.mask == 0u),
                     at.lesson.mask_fill);
     },
     .detail =
         [](const Lesson&) {
           return Message(N_(
               "the mask was inverted: the cells that may attend were masked and the masked ones "
               "kept (in a keep-matrix 1 = may attend, 0 = masked)"));
         }},
    {.label = N_("mask_fill_zero"),
     .why = N_("Masking sets a score to -inf (or a number as low as -1e9), not to 0: exp(-inf) = "
               "0 removes the key, while exp(0) = 1 gives it a real weight."),
     .lesson = "fill-values-zero",
     .starts_from = StepKind::masked,
     .mistaken = [](const MistakeSite& at) -> std::optional<Bounds> {
       if (!any_masked(at.base)) return std::nullopt;
       return filled(at.range(at.input(at.step, 0)), arma::find(at.base.mask), 0.0);
     },
     .detail =
         [](const Lesson&) {
           return Message(
               N_("the masked scores were set to 0 instead of -inf, so each masked key still got "
                  "exp(0) = 1 in the softmax"));
         }},
    {.label = N_("mask_after_softmax"),
     .why = N_("The mask comes before the softmax, so that the open keys share all of the weight "
               "and each row still sums to 1."),
     .lesson = "causal-decoder",
     .starts_from = StepKind::weights,
     .mistaken = [](const MistakeSite& at) -> std::optional<Bounds> {
       if (!any_masked(at.base)) return std::nullopt;
       // The softmax of what the mask was applied to, then the masked weights zeroed.
       const Step& unmasked = at.input(at.input(at.step, 0), 0);
       const Bounds W =
           softmax_bounds(at.range(unmasked), f64_arithmetic().row_softmax(unmasked.value));
       return filled(W, arma::find(at.base.mask), 0.0);
     },
     .detail =
         [](const Lesson&) {
           return Message(N_(
               "the softmax was taken before masking: the masked weights were set to 0 afterwards "
               "and the row was not renormalised, so it no longer sums to 1"));
         }},
    {.label = N_("softmax_wrong_axis"),
     .why = N_("Each query's weights are a distribution over the keys, so the softmax runs along "
               "each row and every row sums to 1."),
     .lesson = "river-bank",
     .starts_from = StepKind::weights,
     .mistaken = [](const MistakeSite& at) -> std::optional<Bounds> {
       // The softmax of each column: the row softmax of the transpose.
       const Step& masked = at.input(at.step, 0);
       const Bounds columns = softmax_bounds(transposed_bounds(at.range(masked)),
                                             f64_arithmetic().row_softmax(masked.value.t()));
       return transposed_bounds(columns);
     },
     .detail =
         [](const Lesson&) {
           return Message(
               N_("the softmax was taken down each column (over the queries) instead of along each "
                  "row (over the keys)"));
         }},
    {.label = N_("exps_as_weights"),
     .why = N_("The weights are the exponentials divided by their row's sum, so that each row "
               "sums to 1; the exponentials alone are only the numerators."),
     .lesson = "why-scale-exp",
     .starts_from = StepKind::weights,
     .mistaken = [](const MistakeSite& at) -> std::optional<Bounds> {
       // The learner's own exponentials where the trace records them, else exp of the masked scores.
       if (at.step.made.inputs.size() > 1) return at.range(at.input(at.step, 1));
       const Bounds& M = at.range(at.input(at.step, 0));
       return Bounds{arma::exp(M.lo), arma::exp(M.hi)};
     },
     .detail =
         [](const Lesson&) {
           return Message(
               N_("the exponentials were written as the weights: each exp() was not divided by "
                  "its row's sum"));
         }},
    {.label = N_("unscaled"),
     .why = N_("Dividing by √d_k keeps the scores' spread near 1 whatever d_k is, so the softmax "
               "does not saturate on the largest score."),
     .lesson = "why-scale",
     .starts_from = StepKind::scaled,
     .mistaken = [](const MistakeSite& at) -> std::optional<Bounds> {
       if (at.step.made.divisor == 1.0) return std::nullopt;
       return at.range(at.input(at.step, 0));
     },
     .detail =
         [](const Lesson& lesson) {
           return Message(N_("the scores were not divided by {}"),
                          {short_number(lesson.scale_divisor())});
         }},
    {.label = N_("scaled_by_dk"),
     .why = N_("A dot product of d_k terms of variance 1 has variance d_k, so its spread is √d_k: "
               "the scale is √d_k, not d_k."),
     .lesson = "why-scale",
     .starts_from = StepKind::scaled,
     .mistaken = [](const MistakeSite& at) -> std::optional<Bounds> {
       if (at.lesson.scale_kind != ScaleKind::sqrt_dk || at.lesson.d_k == 1) return std::nullopt;
       const double d_k = static_cast<double>(at.lesson.d_k);
       const Bounds& S = at.range(at.input(at.step, 0));
       return Bounds{S.lo / d_k, S.hi / d_k};
     },
     .detail =
         [](const Lesson& lesson) {
           return Message(N_("the scores were divided by d_k = {} instead of √d_k = {}"),
                          {std::to_string(lesson.d_k),
                           short_number(std::sqrt(static_cast<double>(lesson.d_k)))});
         }},
    {.label = N_("softmax_of_unscaled"),
     .why = N_("The softmax takes the scaled (and masked) scores: the division by √d_k is what "
               "keeps the weights from saturating, so the weights must come from the scaled ones."),
     .lesson = "why-scale",
     .starts_from = StepKind::weights,
     .mistaken = [](const MistakeSite& at) -> std::optional<Bounds> {
       const Step& masked = at.input(at.step, 0);
       const Step& scaled = masked.made.op == Op::mask ? at.input(masked, 0) : masked;
       if (scaled.made.op != Op::divide || scaled.made.divisor == 1.0) return std::nullopt;
       const Step& scores = at.input(scaled, 0);
       // The unscaled scores, masked as the scaled ones are.
       Bounds S = at.range(scores);
       arma::mat value = scores.value;
       if (masked.made.op == Op::mask && any_masked(at.base)) {
         S = filled(S, arma::find(at.base.mask), masked.made.fill);
         value.elem(arma::find(at.base.mask)).fill(masked.made.fill);
       }
       return softmax_bounds(S, f64_arithmetic().row_softmax(value));
     },
     .detail =
         [](const Lesson& lesson) {
           return Message(N_("the softmax was taken of the scores not divided by {}, though the "
                             "scaled scores were right"),
                          {short_number(lesson.scale_divisor())});
         }},
    {.label = N_("no_rescale"),
     .why = N_("When a key block raises the running max m, everything summed so far was measured "
               "against the old max, so ℓ and O are multiplied by exp(m_old − m_new) before the "
               "block's own terms are added."),
     .lesson = "flash-tiles",
     .starts_from = StepKind::tile,
     .mistaken = unrescaled,
     .detail =
         [](const Lesson&) {
           return Message(N_("ℓ and O were not rescaled: the new block's terms were added to "
                             "ℓ_old and O_old instead of to rescale × ℓ_old and rescale × O_old"));
         }},
    {.label = N_("wrong_kv_head"),
     .why = N_("Consecutive query heads share a K/V head: with heads / kv_heads query heads per "
               "group, query head h reads K/V head ⌊h / (heads / kv_heads)⌋."),
     .lesson = "gqa-kv-heads",
     .starts_from = StepKind::head_slice,
     .mistaken = wrong_kv_slice,
     .detail =
         [](const Lesson& lesson) {
           return Message(N_("each query head h read K/V head h mod {} instead of ⌊h / {}⌋"),
                          {std::to_string(lesson.kv_head_count()),
                           std::to_string(lesson.heads / lesson.kv_head_count())});
         }},
    {.label = N_("phi_not_applied"),
     .why = N_("Linear attention replaces exp(q·k) by φ(q)·φ(k), so the keys go through the "
               "feature map φ(x) = elu(x) + 1 before they are summed with V: kv = φ(K)ᵀ·V."),
     .lesson = "linear-attention",
     .starts_from = StepKind::linear,
     .mistaken = kv_without_phi,
     .detail =
         [](const Lesson&) {
           return Message(N_("kv was computed as Kᵀ·V instead of φ(K)ᵀ·V: φ was not applied to "
                             "the keys"));
         }},
    // The backward pass (grad.* steps), in the order the way back meets them.
    {.label = N_("grad_not_transposed_w"),
     .why = N_("For Y = X·W each weight W[i,j] meets column i of X, so dW = Xᵀ·dY: the factor on "
               "the left of the product comes back transposed."),
     .lesson = "backward-by-hand",
     .starts_from = StepKind::gradient,
     .mistaken = grad_w_untransposed,
     .detail =
         [](const Lesson&) {
           return Message(N_("a weight's gradient was computed as X·dY instead of Xᵀ·dY"));
         }},
    {.label = N_("softmax_grad_diagonal"),
     .why = N_("Each weight of a row depends on every score of the row: ∂A_k/∂S_j = A_k(δ_kj − "
               "A_j), so dS_j = A_j(dA_j − Σ_k dA_k·A_k), not A_j(1 − A_j)·dA_j alone."),
     .lesson = "backward-by-hand",
     .starts_from = StepKind::gradient,
     .mistaken = [](const MistakeSite& at) { return softmax_grad_part(at, true); },
     .detail =
         [](const Lesson&) {
           return Message(N_("only the softmax Jacobian's diagonal was used: A(1 − A)·dA instead "
                             "of A ⊙ (dA − D) with D = Σ_k dA·A"));
         }},
    {.label = N_("softmax_grad_no_row_dot"),
     .why = N_("The weights of a row sum to 1, so raising one lowers the others: the softmax's "
               "gradient subtracts the row dot D = Σ_k dA·A, dS = A ⊙ (dA − D)."),
     .lesson = "backward-by-hand",
     .starts_from = StepKind::gradient,
     .mistaken = [](const MistakeSite& at) { return softmax_grad_part(at, false); },
     .detail =
         [](const Lesson&) {
           return Message(N_("the row dot was left out: A ⊙ dA instead of A ⊙ (dA − D) with "
                             "D = Σ_k dA·A"));
         }},
    {.label = N_("grad_unscaled"),
     .why = N_("The forward pass divided the scores by the scale s, so on the way back each score "
               "gets grad.scaled / s: a division by s once, as on the way forward."),
     .lesson = "backward-by-hand",
     .starts_from = StepKind::gradient,
     .mistaken = [](const MistakeSite& at) { return grad_divided(at, 0); },
     .detail =
         [](const Lesson& lesson) {
           return Message(N_("the scores' gradient was not divided by {}: grad.scores = "
                             "grad.scaled"),
                          {short_number(lesson.scale_divisor())});
         }},
    {.label = N_("grad_scaled_twice"),
     .why = N_("scaled = scores / s has the derivative 1/s, so grad.scores = grad.scaled / s: "
               "one division, not s²."),
     .lesson = "backward-by-hand",
     .starts_from = StepKind::gradient,
     .mistaken = [](const MistakeSite& at) { return grad_divided(at, 2); },
     .detail =
         [](const Lesson& lesson) {
           const double s = lesson.scale_divisor();
           return Message(N_("the scores' gradient was divided by {} twice (by {}) instead of "
                             "once"),
                          {short_number(s), short_number(s * s)});
         }},
    {.label = N_("grad_q_transposed"),
     .why = N_("For S = Q·Kᵀ, S[i,j] = q_i·k_j: row i of Q meets row i of dS, so dQ = dS·K, with "
               "no transpose on dS."),
     .lesson = "backward-by-hand",
     .starts_from = StepKind::gradient,
     .mistaken = grad_q_transposed,
     .detail =
         [](const Lesson&) {
           return Message(N_("the queries' gradient was computed as dSᵀ·K instead of dS·K"));
         }},
    {.label = N_("grad_k_not_transposed"),
     .why = N_("For S = Q·Kᵀ, key j meets column j of dS (every query's score for it), so dK = "
               "dSᵀ·Q: the transpose moves to dS."),
     .lesson = "backward-by-hand",
     .starts_from = StepKind::gradient,
     .mistaken = grad_k_untransposed,
     .detail =
         [](const Lesson&) {
           return Message(N_("the keys' gradient was computed as dS·Q instead of dSᵀ·Q"));
         }},
    {.label = N_("grad_one_consumer"),
     .why = N_("A step read by several others gets a gradient from each: X feeds Q, K and V, so "
               "dX = dQ·W_Qᵀ + dK·W_Kᵀ + dV·W_Vᵀ."),
     .lesson = "backward-by-hand",
     .starts_from = StepKind::gradient,
     .mistaken = first_consumer_only,
     .detail =
         [](const Lesson&) {
           return Message(N_("only the first reader's gradient was taken (dQ·W_Qᵀ for X): the "
                             "others' were not added"));
         }},
    {.label = N_("arithmetic_slip"),
     .kind = MistakeKind::slip,
     .why = N_("Only one product of the sum is off; the method is right, so check that term "
               "again."),
     .lesson = "river-bank",
     .explains_noise = true},
    {.label = N_("truncated"),
     .kind = MistakeKind::written,
     .why = N_("Rounding keeps the written value within half a unit of the true one; cutting the "
               "digits off can miss by almost a whole unit, always in the same direction."),
     .lesson = "river-bank",
     .explains_noise = true,
     .written_as = cut_not_rounded,
     .written_detail = [](const Bounds& right, std::size_t row, std::size_t col, double,
                          int decimals) -> Message {
       const double v = (right.lo(row, col) + right.hi(row, col)) / 2;
       return Message(N_("the digits were cut, not rounded: {} rounds to {}, not {}"),
                      {fmt::format("{:.{}f}", v, decimals + 2),
                       fmt::format("{:.{}f}", v, decimals),
                       fmt::format("{:.{}f}", cut_to(v, decimals), decimals)});
     }},
    {.label = N_("rounding"),
     .kind = MistakeKind::rounding,
     .why = N_("Rounding a value early moves everything computed from it; keep at least 5 "
               "decimals while you work and round only what you write."),
     .lesson = "river-bank",
     .explains_noise = true},
};

}  // namespace

std::span<const CommonMistake> common_mistakes() {
  return kCommonMistakes;
}

const CommonMistake* find_common_mistake(std::string_view label) {
  for (const CommonMistake& m : kCommonMistakes)
    if (m.label == label) return &m;
  return nullptr;
}

namespace {

// The decimals a written number's tolerance stands for (0.00505: 2).
int decimals_of_tolerance(double tolerance) {
  if (!(tolerance > 0)) return 15;
  return std::clamp(static_cast<int>(std::floor(-std::log10(tolerance) + 1e-9)), 0, 15);
}

// Rounding to more decimals than this is not a hand calculation's habit (and
// beyond 15 a double has no more digits to lose).
constexpr int kMaxRoundingDecimals = 8;

// M:(r,c) -> every cell rounded to `decimals`; ±inf and NaN unchanged.
arma::mat round_to(const arma::mat& M, int decimals) {
  if (decimals > 15) return M;
  const double factor = std::pow(10.0, decimals);
  arma::mat R = M;
  R.transform(
      [factor](double v) { return std::isfinite(v) ? std::round(v * factor) / factor : v; });
  return R;
}

// The mistake of this kind (slip, rounding: one entry each).
const CommonMistake& mistake_of_kind(MistakeKind kind) {
  for (const CommonMistake& m : common_mistakes())
    if (m.kind == kind) return m;
  throw std::logic_error("no common mistake of this kind");
}

// The diagnosis `m` with `detail`, giving `value` for the cell.
Diagnosis diagnosed(const CommonMistake& m, Message detail, double value, int rounded_to = 0) {
  return {std::string(m.label), std::move(detail),    value, rounded_to, "",
          std::string(m.why),   std::string(m.lesson)};
}

// A range's midpoint, where its ends are equal the end itself (keeps ±inf exact).
arma::mat midpoint(const Bounds& range) {
  arma::mat mid = (range.lo + range.hi) / 2;
  const arma::uvec same = arma::find(range.lo == range.hi);
  mid.elem(same) = range.lo.elem(same);
  return mid;
}

// `written` ± `tolerance` meets the range [lo, hi] of the cell (with a hair of slack).
bool meets(const Bounds& b, std::size_t row, std::size_t col, double written, double tolerance) {
  const double lo = b.lo(row, col), hi = b.hi(row, col);
  if (std::isnan(lo) || std::isnan(hi) || std::isnan(written))
    return std::isnan(lo) && std::isnan(written);
  if (!std::isfinite(written) || !std::isfinite(lo) || !std::isfinite(hi))
    return lo <= written && written <= hi;
  const double slack = 1e-9 * std::max({tolerance, std::abs(lo), std::abs(hi)}) + 1e-12;
  return written + tolerance + slack >= lo && written - tolerance - slack <= hi;
}

// The slips worth naming: a miscopied leading digit (one value in ten) and an
// entry read from further than the next line or column fit many values by
// chance, so they are too weak alone; and a slip must move the total by
// several tolerances, or it cannot be told from a near miss (two neighbouring
// weights are often almost equal).
void drop_weak_slips(std::vector<TermSlip>& slips, double slack) {
  std::erase_if(slips, [&](const TermSlip& s) {
    return s.kind == SlipKind::digit_slip || (s.kind == SlipKind::wrong_entry && s.distance > 1) ||
           std::abs(s.written_product - s.true_product) < 4 * slack;
  });
}

// One story: every explanation is a product of the same true value written as
// the same wrong one.
bool one_story(const std::vector<TermSlip>& slips) {
  return !slips.empty() && std::all_of(slips.begin(), slips.end(), [&](const TermSlip& s) {
    return matches_written(s.true_product, slips.front().true_product, 0.0) &&
           matches_written(s.written_product, slips.front().written_product, 0.0);
  });
}

// What the slips say, for people: one story, or two that both give the value.
Message slip_detail(const std::vector<TermSlip>& slips) {
  Message all = slips.front().cause;  // "cause; or cause; or …"
  for (std::size_t i = 1; i < slips.size(); ++i)
    all = Message(N_("{}; or {}"), {}, {std::move(all), slips[i].cause});
  const TermSlip& s = slips.front();
  if (!one_story(slips))
    return Message(N_("one product term is off, in one of two ways that both give this value: {}"),
                   {}, {all});
  if (slips.size() == 1)
    return Message(
        N_("one product term is off: term {} should be {}, not {} ({})"),
        {std::to_string(s.term + 1), short_number(s.true_product), short_number(s.written_product)},
        {all});
  return Message(N_("one product term is off: a product should be {}, not {} ({})"),
                 {short_number(s.true_product), short_number(s.written_product)}, {all});
}

// Rounded too early, for people: every earlier step to `decimals`, or `named` alone.
Message rounding_detail(int decimals, const std::string& named) {
  const std::string places = std::to_string(decimals);
  if (named.empty())
    return Message(decimals == 1 ? N_("right up to rounding: with the earlier values rounded to {} "
                                      "decimal (or to as many as you wrote them with) the answer "
                                      "comes out as you wrote it")
                                 : N_("right up to rounding: with the earlier values rounded to {} "
                                      "decimals (or to as many as you wrote them with) the answer "
                                      "comes out as you wrote it"),
                   {places});
  return Message(decimals == 1 ? N_("right up to rounding: with {} rounded to {} decimal the "
                                    "answer comes out as you wrote it")
                               : N_("right up to rounding: with {} rounded to {} decimals the "
                                    "answer comes out as you wrote it"),
                 {named, places});
}

}  // namespace

Diagnoser::Diagnoser(const Lesson& lesson, Backend& backend, Overrides learner_values,
                     BoundsMap learner_bounds, const Trace& base, const BoundsMap& base_bounds,
                     std::map<std::string, int> decimals_by_step)
    : lesson_(lesson),
      backend_(backend),
      learner_(std::move(learner_values)),
      learner_bounds_(std::move(learner_bounds)),
      decimals_by_step_(std::move(decimals_by_step)),
      base_(base),
      base_bounds_(base_bounds) {}

std::optional<Diagnoser::Mistaken> Diagnoser::made_the_mistaken_way(const CommonMistake& m) const {
  Overrides mistaken = learner_;
  BoundsMap given = learner_bounds_;
  bool made = false;
  for (const Step& step : base_.steps) {
    if (step.kind != m.starts_from || learner_.contains(step.id)) continue;  // theirs stand
    std::optional<Bounds> range = m.mistaken({lesson_, base_, base_bounds_, step});
    if (!range) continue;
    arma::mat mid = midpoint(*range);
    arma::umat all(mid.n_rows, mid.n_cols, arma::fill::ones);
    mistaken[step.id] = {std::move(mid), std::move(all)};
    given[step.id] = std::move(*range);
    made = true;
  }
  if (!made) return std::nullopt;
  Trace trace = run_pipeline(lesson_, backend_, mistaken);
  BoundsMap bounds = trace_bounds(trace, mistaken, given);
  return Mistaken{&m, m.detail(lesson_), std::move(trace), std::move(bounds)};
}

const std::vector<Diagnoser::Mistaken>& Diagnoser::method_mistakes() {
  if (method_) return *method_;
  method_.emplace();
  for (const CommonMistake& m : common_mistakes())
    if (m.kind == MistakeKind::method)
      if (std::optional<Mistaken> made = made_the_mistaken_way(m))
        method_->push_back(std::move(*made));
  return *method_;
}

std::vector<std::string> Diagnoser::roundable_before(const std::string& step) const {
  // Every step `step` is computed from, following the op graph back.
  std::set<std::string, std::less<>> from;
  std::vector<std::string> pending = base_.at(step).made.inputs;
  while (!pending.empty()) {
    std::string id = std::move(pending.back());
    pending.pop_back();
    if (!from.insert(id).second) continue;
    const std::vector<std::string>& inputs = base_.at(id).made.inputs;
    pending.insert(pending.end(), inputs.begin(), inputs.end());
  }
  std::vector<std::string> out;
  for (const Step& s : base_.steps)
    if (from.contains(s.id) && s.made.op != Op::given && s.made.op != Op::positional &&
        !learner_.contains(s.id))
      out.push_back(s.id);
  return out;
}

namespace {

// The rounding model "the scale √d_k rounded" (1.414 for √2), next to the
// models that round steps: a name no step id can have.
constexpr std::string_view kScaleModel = "√d_k";

// Whether `step` divides by a scale that `decimals` cannot write exactly (√2, not 2).
// The scale a step divides its first input by: the scaled scores', and on the
// way back grad.head{h}.scores' (grad.scaled / s, one divide vjp); 1 for any other.
double divisor_of(const Step& step) {
  if (step.made.op == Op::divide) return step.made.divisor;
  const std::vector<Vjp>& vjps = step.made.vjps;
  if (step.made.op == Op::backward && vjps.size() == 1 && vjps[0].kind == VjpKind::divide)
    return vjps[0].divisor;
  return 1.0;
}

bool divides_by_inexact(const Step& step, int decimals) {
  const double divisor = divisor_of(step);
  if (divisor == 1.0) return false;
  const double f = std::pow(10.0, decimals);
  return std::round(divisor * f) / f != divisor;
}

}  // namespace

std::vector<std::string> Diagnoser::scaled_up_to(const std::string& step) const {
  std::vector<std::string> out;
  std::vector<std::string> steps = roundable_before(step);
  steps.push_back(step);  // the step itself may be the one that divides
  for (const std::string& id : steps)
    if (divides_by_inexact(base_.at(id), kMaxRoundingDecimals) && !learner_.contains(id))
      out.push_back(id);
  return out;
}

// The trace with every scale of the steps before `step` rounded to `decimals`
// (the learner's own values stand).
Diagnoser::Mistaken Diagnoser::scale_rounded_trace(const std::string& step, int decimals) const {
  Overrides rounded = learner_;
  BoundsMap given = learner_bounds_;
  for (const std::string& id : scaled_up_to(step)) {
    const Step& s = base_.at(id);
    if (!divides_by_inexact(s, decimals)) continue;
    const double f = std::pow(10.0, decimals);
    const double divisor = std::round(divisor_of(s) * f) / f;
    const Trace so_far = run_pipeline(lesson_, backend_, rounded);
    const Bounds input = trace_bounds(so_far, rounded, given).at(s.made.inputs.at(0));
    const arma::mat value = so_far.at(s.made.inputs.at(0)).value / divisor;
    rounded[id] = {value, arma::umat(value.n_rows, value.n_cols, arma::fill::ones)};
    given[id] = {input.lo / divisor, input.hi / divisor};
  }
  Trace trace = run_pipeline(lesson_, backend_, rounded);
  BoundsMap bounds = trace_bounds(trace, rounded, given);
  return Mistaken{&mistake_of_kind(MistakeKind::rounding), Message(), std::move(trace),
                  std::move(bounds)};
}

const Diagnoser::Mistaken& Diagnoser::rounded_trace(const std::string& step, int decimals,
                                                    const std::string& only) {
  const auto key = std::make_tuple(step, decimals, only);
  if (const auto it = rounded_.find(key); it != rounded_.end()) return it->second;
  if (only == kScaleModel)
    return rounded_.emplace(key, scale_rounded_trace(step, decimals)).first->second;
  Overrides rounded = learner_;
  BoundsMap given = learner_bounds_;
  for (const std::string& id : roundable_before(step)) {
    if (!only.empty() && id != only) continue;
    const auto written = decimals_by_step_.find(id);
    const int d = written != decimals_by_step_.end() ? written->second : decimals;
    const Trace so_far = run_pipeline(lesson_, backend_, rounded);
    const arma::mat& value = so_far.at(id).value;
    // Rounding never decreases: the rounded bounds bound the rounded value.
    const Bounds range = trace_bounds(so_far, rounded, given).at(id);
    rounded[id] = {round_to(value, d), arma::umat(value.n_rows, value.n_cols, arma::fill::ones)};
    given[id] = {round_to(range.lo, d), round_to(range.hi, d)};
  }
  Trace trace = run_pipeline(lesson_, backend_, rounded);
  BoundsMap bounds = trace_bounds(trace, rounded, given);
  return rounded_
      .emplace(key, Mistaken{&mistake_of_kind(MistakeKind::rounding), Message(), std::move(trace),
                             std::move(bounds)})
      .first->second;
}

std::optional<Diagnosis> Diagnoser::slip(const std::string& step, std::size_t row, std::size_t col,
                                         double written, double tolerance) const {
  const std::optional<CellSum> sum = cell_sum(base_, step, row, col);
  if (!sum) return std::nullopt;
  // The learner's own values are known to within their range: so is the sum.
  const Bounds& range = base_bounds_.at(step);
  const double spread = (range.hi(row, col) - range.lo(row, col)) / 2;
  const double slack = tolerance + (std::isfinite(spread) ? spread : 0.0);
  std::vector<TermSlip> slips = single_term_slips(base_, *sum, written, slack);
  drop_weak_slips(slips, slack);
  // Two different stories that both give the value are both told (a learner
  // can tell which one they did); more than two is too many to name.
  if (!one_story(slips) && slips.size() != 2) return std::nullopt;
  const TermSlip& s = slips.front();
  return diagnosed(mistake_of_kind(MistakeKind::slip), slip_detail(slips),
                   sum->value - s.true_product + s.written_product);
}

std::optional<Diagnosis> Diagnoser::rounding(const std::string& step, std::size_t row,
                                             std::size_t col, double written, double tolerance,
                                             int decimals, const std::vector<WrittenCell>& answer) {
  // Every earlier value to d decimals (or to as many as written), or one
  // earlier step alone, the coarsest rounding tried last. A way of rounding
  // must give every cell of the answer.
  const std::vector<std::string> earlier = roundable_before(step);
  std::vector<std::string> models = {""};
  if (earlier.size() > 1) models.insert(models.end(), earlier.begin(), earlier.end());
  if (!scaled_up_to(step).empty()) models.emplace_back(kScaleModel);
  for (int d = std::clamp(decimals, 1, kMaxRoundingDecimals); d >= 1; --d) {
    const auto fits = std::find_if(models.begin(), models.end(), [&](const std::string& only) {
      const Bounds& rounded = rounded_trace(step, d, only).bounds.at(step);
      return meets(rounded, row, col, written, tolerance) &&
             std::all_of(answer.begin(), answer.end(), [&](const WrittenCell& c) {
               return !std::isfinite(c.value) || meets(rounded, c.row, c.col, c.value, c.tolerance);
             });
    });
    if (fits == models.end()) continue;
    // With nothing masked, `masked` is `scaled` under another name: name the
    // step the learner knows.
    const Step* alone = fits->empty() || *fits == kScaleModel ? nullptr : &base_.at(*fits);
    const std::string named = *fits == kScaleModel
                                  ? fmt::format("√d_k = {}", short_number(lesson_.scale_divisor()))
                              : alone && alone->made.op == Op::mask && !any_masked(base_)
                                  ? alone->made.inputs.at(0)
                                  : *fits;
    Diagnosis out = diagnosed(mistake_of_kind(MistakeKind::rounding), rounding_detail(d, named),
                              rounded_trace(step, d, *fits).trace.at(step).value(row, col), d);
    out.rounded_step = *fits;
    return out;
  }
  return std::nullopt;
}

std::vector<Diagnosis> Diagnoser::diagnose(const std::string& step, std::size_t row,
                                           std::size_t col, double written, double tolerance,
                                           int decimals, const std::vector<WrittenCell>& answer) {
  std::vector<Diagnosis> out;
  // On a gradient step a mistake made on the way back comes first: dividing
  // grad.scaled by s twice gives the same number as scores divided by d_k.
  const bool backward_step = base_.at(step).kind == StepKind::gradient;
  for (const bool way_back_first : {true, false})
    for (const Mistaken& m : method_mistakes())
      if ((m.mistake->starts_from == StepKind::gradient) == (way_back_first == backward_step) &&
          meets(m.bounds.at(step), row, col, written, tolerance))
        out.push_back(diagnosed(*m.mistake, m.detail, m.trace.at(step).value(row, col)));
  if (std::optional<Diagnosis> d = slip(step, row, col, written, tolerance))
    out.push_back(std::move(*d));
  const Bounds& right = base_bounds_.at(step);
  for (const CommonMistake& m : common_mistakes())
    if (m.kind == MistakeKind::written && m.written_as(right, row, col, written, decimals))
      out.push_back(diagnosed(m, m.written_detail(right, row, col, written, decimals), written));
  if (std::optional<Diagnosis> d = rounding(step, row, col, written, tolerance, decimals, answer))
    out.push_back(std::move(*d));
  return out;
}

std::optional<bool> Diagnoser::fits(const Diagnosis& d, const std::string& step, std::size_t row,
                                    std::size_t col, double written, double tolerance) {
  const CommonMistake* mistake = find_common_mistake(d.label);
  if (mistake && mistake->kind == MistakeKind::written)
    return mistake->written_as(base_bounds_.at(step), row, col, written,
                               decimals_of_tolerance(tolerance));
  if (mistake && mistake->kind == MistakeKind::rounding)
    return meets(rounded_trace(step, d.rounded_to, d.rounded_step).bounds.at(step), row, col,
                 written, tolerance);
  for (const Mistaken& m : method_mistakes())
    if (m.mistake == mistake) return meets(m.bounds.at(step), row, col, written, tolerance);
  return std::nullopt;
}

}  // namespace attn
