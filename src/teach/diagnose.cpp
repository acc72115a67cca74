// The common mistakes, each a trace recomputed the mistaken way (on top of the
// learner's own values) and compared with what the learner wrote.
#include "teach/diagnose.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <functional>

#include "core/arithmetic.hpp"
#include "core/bounds.hpp"
#include "core/error.hpp"
#include "core/number_text.hpp"
#include "teach/slips.hpp"

namespace attn {

namespace {

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

// `d` with its detail written from `detail`: in English, and kept as a message.
Diagnosis described(Diagnosis d, Message detail) {
  d.detail = detail.in(Language::en);
  d.detail_message = std::move(detail);
  return d;
}

// masked:(n,m) -> softmax of each column (over the queries): (n,m).
arma::mat column_softmax(const arma::mat& masked) {
  arma::mat W = masked;
  W.each_row() -= arma::max(W, 0);
  W = arma::exp(W);
  W.each_row() /= arma::sum(W, 0);
  return W;
}

}  // namespace

const std::vector<std::string_view>& diagnosis_labels() {
  static const std::vector<std::string_view> labels = {
      N_("not_transposed"), N_("mask_ignored"),       N_("wrong_mask_polarity"),
      N_("mask_fill_zero"), N_("mask_after_softmax"), N_("softmax_wrong_axis"),
      N_("unscaled"),       N_("scaled_by_dk"),       N_("arithmetic_slip"),
      N_("rounding")};
  return labels;
}

void explain(Diagnosis& d) {
  struct Why {
    std::string_view label, why, lesson;
  };
  static constexpr Why reasons[] = {
      {"not_transposed",
       N_("Each score pairs a query row with a key row, S[i,j] = q_i·k_j, and that is Q·Kᵀ: "
          "K is transposed so that its rows become columns."),
       "river-bank"},
      {"mask_ignored",
       N_("The mask decides which keys a query may see; a masked key must end with weight 0, so "
          "its "
          "score is replaced before the softmax."),
       "causal-decoder"},
      {"wrong_mask_polarity",
       N_("In a keep-matrix 1 means may attend and 0 means masked, as masked_fill(mask == 0, -inf) "
          "reads."),
       "mask-polarity"},
      {"mask_fill_zero",
       N_("Masking sets a score to -inf (or a number as low as -1e9), not to 0: exp(-inf) = 0 "
          "removes the key, while exp(0) = 1 gives it a real weight."),
       "fill-values-zero"},
      {"mask_after_softmax",
       N_("The mask comes before the softmax, so that the open keys share all of the weight and "
          "each row still sums to 1."),
       "causal-decoder"},
      {"softmax_wrong_axis",
       N_("Each query's weights are a distribution over the keys, so the softmax runs along each "
          "row "
          "and every row sums to 1."),
       "river-bank"},
      {"unscaled",
       N_("Dividing by √d_k keeps the scores' spread near 1 whatever d_k is, so the softmax does "
          "not "
          "saturate on the largest score."),
       "why-scale"},
      {"scaled_by_dk",
       N_("A dot product of d_k terms of variance 1 has variance d_k, so its spread is √d_k: the "
          "scale is √d_k, not d_k."),
       "why-scale"},
      {"arithmetic_slip",
       N_("Only one product of the sum is off; the method is right, so check that term again."),
       "river-bank"},
      {"rounding",
       N_("Rounding a value early moves everything computed from it; keep at least 5 decimals "
          "while you work and round only what you write."),
       "river-bank"},
  };
  for (const Why& r : reasons)
    if (r.label == d.label) {
      d.why = r.why;
      d.lesson = r.lesson;
    }
}

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

void Diagnoser::build_method_mistakes() {
  method_.emplace();
  const bool any_masked = arma::any(arma::vectorise(base_.mask));
  // One mistaken trace: `make` gives head h's mistaken value of its step
  // `part`, and its bounds, from the base trace and its bounds (nullopt where
  // the mistake cannot be made).
  auto add = [&](const char* label, Message detail, HeadStep part,
                 const std::function<std::optional<Bounds>(std::size_t)>& make) {
    Overrides mistaken = learner_;
    BoundsMap given = learner_bounds_;
    bool made = false;
    for (std::size_t h = 0; h < lesson_.heads; ++h) {
      const std::string id = head_step_id(h, part);
      if (learner_.contains(id)) continue;  // the learner's own values stand
      std::optional<Bounds> range = make(h);
      if (!range) continue;
      arma::mat mid = (range->lo + range->hi) / 2;
      const arma::uvec same = arma::find(range->lo == range->hi);  // keeps ±inf exact
      mid.elem(same) = range->lo.elem(same);
      arma::umat all(mid.n_rows, mid.n_cols, arma::fill::ones);
      mistaken[id] = {std::move(mid), std::move(all)};
      given[id] = std::move(*range);
      made = true;
    }
    if (!made) return;
    Trace trace = run_pipeline(lesson_, backend_, mistaken);
    BoundsMap bounds = trace_bounds(trace, mistaken, given);
    method_->push_back({label, std::move(detail), std::move(trace), std::move(bounds)});
  };
  auto base = [&](std::size_t h, HeadStep part) -> const Bounds& {
    return base_bounds_.at(head_step_id(h, part));
  };
  auto value = [&](std::size_t h, HeadStep part) -> const arma::mat& {
    return base_.at(head_step_id(h, part)).value;
  };

  add("not_transposed",
      N_("Q·K was computed instead of Q·Kᵀ (row i of Q times column j of K, not row j of K)"),
      HeadStep::scores, [&](std::size_t h) -> std::optional<Bounds> {
        const Bounds& Q = base(h, HeadStep::Q);
        const Bounds& K = base(h, HeadStep::K);
        if (K.lo.n_rows != Q.lo.n_cols || K.lo.n_cols != K.lo.n_rows) return std::nullopt;
        return product_bounds(Q, K);
      });
  if (any_masked) {
    const arma::uvec masked = arma::find(base_.mask), open = arma::find(base_.mask == 0u);
    // The scaled scores with the cells `cells` set to `fill`.
    auto filled = [&](std::size_t h, const arma::uvec& cells, double fill) {
      Bounds M = base(h, HeadStep::scaled);
      M.lo.elem(cells).fill(fill);
      M.hi.elem(cells).fill(fill);
      return std::optional<Bounds>(std::move(M));
    };
    add("mask_ignored", N_("the mask was not applied: the masked cells kept their scaled values"),
        HeadStep::masked,
        [&](std::size_t h) { return std::optional<Bounds>(base(h, HeadStep::scaled)); });
    add("wrong_mask_polarity",
        N_("the mask was inverted: the cells that may attend were masked and the masked ones kept "
           "(in a keep-matrix 1 = may attend, 0 = masked)"),
        HeadStep::masked, [&](std::size_t h) { return filled(h, open, lesson_.mask_fill); });
    add("mask_fill_zero",
        N_("the masked scores were set to 0 instead of -inf, so each masked key still got exp(0) = "
           "1 in the softmax"),
        HeadStep::masked, [&](std::size_t h) { return filled(h, masked, 0.0); });
    add("mask_after_softmax",
        N_("the softmax was taken before masking: the masked weights were set to 0 afterwards and "
           "the row was not renormalised, so it no longer sums to 1"),
        HeadStep::weights, [&](std::size_t h) {
          Bounds W = softmax_bounds(base(h, HeadStep::scaled),
                                    f64_arithmetic().row_softmax(value(h, HeadStep::scaled)));
          W.lo.elem(masked).zeros();
          W.hi.elem(masked).zeros();
          return std::optional<Bounds>(std::move(W));
        });
  }
  add("softmax_wrong_axis",
      N_("the softmax was taken down each column (over the queries) instead of along each row "
         "(over the keys)"),
      HeadStep::weights, [&](std::size_t h) {
        const Bounds columns = softmax_bounds(transposed_bounds(base(h, HeadStep::masked)),
                                              column_softmax(value(h, HeadStep::masked)).t());
        return std::optional<Bounds>(transposed_bounds(columns));
      });
  if (lesson_.scale_divisor() != 1.0)
    add("unscaled",
        Message(N_("the scores were not divided by {}"), {short_number(lesson_.scale_divisor())}),
        HeadStep::scaled,
        [&](std::size_t h) { return std::optional<Bounds>(base(h, HeadStep::scores)); });
  if (lesson_.scale_kind == ScaleKind::sqrt_dk && lesson_.d_k != 1) {
    const double d_k = static_cast<double>(lesson_.d_k);
    add("scaled_by_dk",
        Message(N_("the scores were divided by d_k = {} instead of √d_k = {}"),
                {std::to_string(lesson_.d_k), short_number(std::sqrt(d_k))}),
        HeadStep::scaled, [&](std::size_t h) {
          const Bounds& S = base(h, HeadStep::scores);
          return std::optional<Bounds>(Bounds{S.lo / d_k, S.hi / d_k});
        });
  }
}

std::vector<std::string> Diagnoser::roundable_before(const std::string& step) const {
  std::vector<std::string> out;
  for (const Step& s : base_.steps) {
    if (s.id == step) break;
    if (s.made.op != Op::given && s.made.op != Op::positional && !learner_.contains(s.id))
      out.push_back(s.id);
  }
  return out;
}

const Diagnoser::Mistaken& Diagnoser::rounded_trace(const std::string& step, int decimals,
                                                    const std::string& only) {
  const auto key = std::make_tuple(step, decimals, only);
  if (const auto it = rounded_.find(key); it != rounded_.end()) return it->second;
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
  return rounded_.emplace(key, Mistaken{"rounding", Message(), std::move(trace), std::move(bounds)})
      .first->second;
}

namespace {

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

}  // namespace

std::vector<Diagnosis> Diagnoser::diagnose(const std::string& step, std::size_t row,
                                           std::size_t col, double written, double tolerance,
                                           int decimals, const std::vector<WrittenCell>& answer) {
  std::vector<Diagnosis> out;
  if (!method_) build_method_mistakes();
  for (const Mistaken& m : *method_)
    if (meets(m.bounds.at(step), row, col, written, tolerance))
      out.push_back(described({m.label, "", m.trace.at(step).value(row, col), 0}, m.detail));

  if (const std::optional<CellSum> sum = cell_sum(base_, step, row, col)) {
    // The learner's own values are known to within their range: so is the sum.
    const Bounds& range = base_bounds_.at(step);
    const double spread = (range.hi(row, col) - range.lo(row, col)) / 2;
    const double slack = tolerance + (std::isfinite(spread) ? spread : 0.0);
    std::vector<TermSlip> slips = single_term_slips(base_, *sum, written, slack);
    // Too weak alone, as they fit many values by chance: a miscopied leading
    // digit (one value in ten), an entry read from further than the next line or column.
    // A slip must also move the total by several tolerances, or it cannot be
    // told from a near miss (two neighbouring weights are often almost equal).
    std::erase_if(slips, [&](const TermSlip& s) {
      return s.kind == SlipKind::digit_slip ||
             (s.kind == SlipKind::wrong_entry && s.distance > 1) ||
             std::abs(s.written_product - s.true_product) < 4 * slack;
    });
    // One story: every explanation is a product of the same true value written
    // as the same wrong one. Two different stories that both give the value
    // are both told (a learner can tell which one they did); more than two
    // is too many to name.
    const bool one_story =
        !slips.empty() && std::all_of(slips.begin(), slips.end(), [&](const TermSlip& s) {
          return matches_written(s.true_product, slips.front().true_product, 0.0) &&
                 matches_written(s.written_product, slips.front().written_product, 0.0);
        });
    std::vector<std::string> causes;
    for (const TermSlip& s : slips) causes.push_back(s.cause);
    const TermSlip* s = slips.empty() ? nullptr : &slips.front();
    if (one_story)
      out.push_back(described(
          {"arithmetic_slip", "", sum->value - s->true_product + s->written_product, 0},
          slips.size() == 1
              ? Message(N_("one product term is off: term {} should be {}, not {} ({})"),
                        {std::to_string(s->term + 1), short_number(s->true_product),
                         short_number(s->written_product),
                         fmt::format("{}", fmt::join(causes, "; or "))})
              : Message(N_("one product term is off: a product should be {}, not {} ({})"),
                        {short_number(s->true_product), short_number(s->written_product),
                         fmt::format("{}", fmt::join(causes, "; or "))})));
    else if (slips.size() == 2)
      out.push_back(described(
          {"arithmetic_slip", "", sum->value - s->true_product + s->written_product, 0},
          Message(N_("one product term is off, in one of two ways that both give this value: {}"),
                  {fmt::format("{}", fmt::join(causes, "; or "))})));
  }

  // Rounded too early: every earlier value to d decimals (or to as many as
  // written), or one earlier step alone, the coarsest rounding tried last. A
  // way of rounding must give every cell of the answer.
  const std::vector<std::string> earlier = roundable_before(step);
  for (int d = std::clamp(decimals, 1, kMaxRoundingDecimals); d >= 1; --d) {
    std::vector<std::string> models = {""};
    if (earlier.size() > 1) models.insert(models.end(), earlier.begin(), earlier.end());
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
    const Step& rounded_step = base_.at(fits->empty() ? step : *fits);
    const std::string named = !fits->empty() && rounded_step.made.op == Op::mask &&
                                      !arma::any(arma::vectorise(base_.mask))
                                  ? rounded_step.made.inputs.at(0)
                                  : *fits;
    const std::string places = std::to_string(d);
    Diagnosis rounding = described(
        {"rounding", "", rounded_trace(step, d, *fits).trace.at(step).value(row, col), d},
        fits->empty()
            ? Message(d == 1 ? N_("right up to rounding: with the earlier values rounded to {} "
                                  "decimal (or to as many as you wrote them with) the answer comes "
                                  "out as you wrote it")
                             : N_("right up to rounding: with the earlier values rounded to {} "
                                  "decimals (or to as many as you wrote them with) the answer "
                                  "comes out as you wrote it"),
                      {places})
            : Message(d == 1 ? N_("right up to rounding: with {} rounded to {} decimal the answer "
                                  "comes out as you wrote it")
                             : N_("right up to rounding: with {} rounded to {} decimals the answer "
                                  "comes out as you wrote it"),
                      {named, places}));
    rounding.rounded_step = *fits;
    out.push_back(std::move(rounding));
    break;
  }
  for (Diagnosis& d : out) explain(d);
  return out;
}

std::optional<bool> Diagnoser::fits(const Diagnosis& d, const std::string& step, std::size_t row,
                                    std::size_t col, double written, double tolerance) {
  if (d.label == "rounding")
    return meets(rounded_trace(step, d.rounded_to, d.rounded_step).bounds.at(step), row, col,
                 written, tolerance);
  if (!method_) build_method_mistakes();
  for (const Mistaken& m : *method_)
    if (m.label == d.label) return meets(m.bounds.at(step), row, col, written, tolerance);
  return std::nullopt;
}

}  // namespace attn
