// Shape, bytes, FLOPs and sampled-statistic claims against the trace (via
// core/costs) and the sampler (teach/qk_stats).
#include "teach/quantity_claims.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "core/costs.hpp"
#include "core/error.hpp"
#include "core/i18n.hpp"
#include "core/mask_pattern.hpp"
#include "core/number_text.hpp"
#include "render/json_writer.hpp"
#include "render/numbers.hpp"
#include "teach/qk_stats.hpp"
#include "teach/softmax_grad_stats.hpp"
#include "teach/stack_grad.hpp"

namespace attn {

namespace {

// A sampled statistic agrees when it is within the written tolerance plus
// this many standard errors of the sample (docs/lesson-format.md).
constexpr double kSamplingErrors = 4.0;

[[noreturn]] void fail(const Lesson& lesson, const QuantityClaim& c, int line, std::string_view key,
                       const std::string& message) {
  throw InputError(tr_format("{}:{}: key '{}': {}", lesson.origin, line ? line : c.line,
                             fmt::format("{}.{}", c.key, key), message));
}

// The steps a claim is about: one id, or "head*.<step>" for every head's step;
// none for the whole pass.
std::vector<const Step*> claimed_steps(const Lesson& lesson, const Trace& trace,
                                       const QuantityClaim& c) {
  std::vector<const Step*> out;
  if (c.step.empty()) return out;
  if (const std::optional<HeadStep> part = parse_every_head_step(c.step)) {
    for (const Step& step : trace.steps)
      if (step.step_id.family() == StepFamily::head && step.step_id.head_part() == *part)
        out.push_back(&step);
  } else if (const Step* step = trace.find(c.step)) {
    out.push_back(step);
  }
  if (out.empty())
    fail(lesson, c, c.step_line, "step",
         tr_format("unknown step id '{}' for lesson {}; valid ids: {} (or head*.<step> for every "
                   "head)",
                   c.step, trace.lesson_id, fmt::join(trace.ids(), ", ")));
  return out;
}

// `format`, already in its language (translate(lang, "…")), with its {} filled in.
template <typename... Args>
std::string fill(std::string_view format, const Args&... args) {
  return fmt::vformat(format, fmt::make_format_args(args...));
}

// What a dimension counts, from its labels: "queries", "keys", "tokens"
// (self-attention: both), or "columns".
std::string dimension_name(const Trace& trace, const std::vector<std::string>& labels,
                           Language lang) {
  const std::vector<std::string>& queries = trace.at("X").rows;
  const Step* memory = trace.find("memory");
  const std::vector<std::string>& keys = memory ? memory->rows : queries;
  if (labels == queries)
    return std::string(memory ? translate(lang, "queries") : translate(lang, "tokens"));
  if (labels == keys) return std::string(translate(lang, "keys"));
  return std::string(translate(lang, "columns"));
}

std::string shape_text(const std::vector<std::size_t>& shape) {
  return fmt::format("[{}]", fmt::join(shape, ", "));
}

std::string at_seq(const QuantityClaim& c, Language lang) {
  return c.seq ? fill(translate(lang, " at seq {}"), *c.seq) : "";
}

// A number to the decimals the claim was written with (at least `least`).
std::string as_stated(double value, const QuantityClaim& c, int least = 0) {
  return format_fixed(value, std::max(c.value.decimals, least));
}

// "head*.weights is [batch, heads, queries, keys] = [2, 8, 5, 7]", in `lang`.
std::string shape_details(const Trace& trace, const QuantityClaim& c, const Step& step,
                          std::size_t heads, const std::string& computed, Language lang) {
  std::vector<std::string> names;
  if (c.batch) names.emplace_back(translate(lang, "batch"));
  if (heads) names.emplace_back(translate(lang, "heads"));
  names.push_back(dimension_name(trace, step.rows, lang));
  names.push_back(dimension_name(trace, step.cols, lang));
  return fill(translate(lang, "{} is [{}] = {}{}"), c.step,
              fmt::join(names, lang == Language::zh ? "、" : ", "), computed, at_seq(c, lang));
}

QuantityVerdict check_shape(const Trace& trace, const QuantityClaim& c,
                            const std::vector<const Step*>& steps) {
  QuantityVerdict v;
  v.claim = c;
  const CostSizes sizes{c.seq, c.seq};
  const Step& step = *steps.front();
  const auto [rows, cols] = step_shape(trace, step, sizes);
  const std::size_t heads = parse_every_head_step(c.step) ? steps.size() : 0;
  if (c.batch) v.computed_shape.push_back(*c.batch);
  if (heads) v.computed_shape.push_back(heads);
  v.computed_shape.push_back(rows);
  v.computed_shape.push_back(cols);
  v.place = fill(translate(Language::en, "{} shape"), c.step);
  v.place_zh = fill(translate(Language::zh, "{} shape"), c.step);
  v.stated = shape_text(c.shape);
  v.computed = shape_text(v.computed_shape);
  v.agrees = c.shape == v.computed_shape;
  v.details = shape_details(trace, c, step, heads, v.computed, Language::en);
  v.details_zh = shape_details(trace, c, step, heads, v.computed, Language::zh);
  return v;
}

// "head0.scores bytes", "whole pass FLOPs", in `lang`.
std::string cost_place(const QuantityClaim& c, Language lang) {
  const bool bytes = c.kind == QuantityClaim::Kind::bytes;
  if (c.step.empty())
    return std::string(bytes ? translate(lang, "whole pass bytes")
                             : translate(lang, "whole pass FLOPs"));
  return fill(bytes ? translate(lang, "{} bytes") : translate(lang, "{} FLOPs"), c.step);
}

// How a cost is made up, in `lang`: the sum over the pass, or the steps' sizes.
std::string cost_how(const Trace& trace, const QuantityClaim& c,
                     const std::vector<const Step*>& steps, Language lang) {
  const CostSizes sizes{c.seq, c.seq};
  const std::uint64_t batch = c.batch.value_or(1);
  if (steps.empty()) {
    std::size_t counted = 0;
    for (const Step& step : trace.steps) counted += counts_in_pass(trace, step);
    return fill(translate(lang,
                          "the sum over the pass's {} steps (inputs and every computed step; not "
                          "the weights, not heads.mean/max)"),
                counted);
  }
  const Step& first = *steps.front();
  const auto [rows, cols] = step_shape(trace, first, sizes);
  const std::string times =
      steps.size() > 1 ? fill(translate(lang, "{} heads × "), steps.size()) : "";
  const std::string batched = batch > 1 ? fill(translate(lang, "batch {} × "), batch) : "";
  if (c.kind == QuantityClaim::Kind::bytes)
    return fmt::format("{}{}{}×{} × {} B ({})", times, batched, rows, cols, dtype_bytes(c.dtype),
                       dtype_name(c.dtype));
  return fmt::format("{}{}{}", times, batched, flops_formula(trace, first, sizes));
}

QuantityVerdict check_cost(const Trace& trace, const QuantityClaim& c,
                           const std::vector<const Step*>& steps) {
  QuantityVerdict v;
  v.claim = c;
  const CostSizes sizes{c.seq, c.seq};
  const std::uint64_t batch = c.batch.value_or(1);
  const bool bytes = c.kind == QuantityClaim::Kind::bytes;
  v.place = cost_place(c, Language::en);
  v.place_zh = cost_place(c, Language::zh);
  std::uint64_t total = 0;
  if (steps.empty()) {
    total = bytes ? pass_bytes(trace, c.dtype, batch, sizes) : batch * pass_flops(trace, sizes);
  } else {
    for (const Step* step : steps)
      total += bytes ? step_bytes(trace, *step, c.dtype, batch, sizes)
                     : batch * step_flops(trace, *step, sizes);
  }
  const double unit = bytes ? c.unit_size : 1.0;
  const double value = static_cast<double>(total) / unit;
  v.computed_value = value;
  v.tolerance = c.tolerance.value_or(half_unit(c.value.decimals));
  v.agrees = std::abs(c.value.value - value) <= v.tolerance;
  const std::string suffix = bytes ? " " + c.unit : "";
  v.stated = as_stated(c.value.value, c) + suffix;
  v.computed_number = as_stated(value, c);
  v.computed = v.computed_number + suffix;
  const auto details = [&](Language lang) {
    return fmt::format("{} = {} {}{}", cost_how(trace, c, steps, lang), total,
                       bytes ? "B" : "FLOPs", at_seq(c, lang));
  };
  v.details = details(Language::en);
  v.details_zh = details(Language::zh);
  return v;
}

// The KV cache: g K/V heads × (d_k + d_v) numbers per token, × the keys of
// a sequence (or seq) × batch. g is the claim's kv_heads, else the lesson's,
// and must divide heads.
QuantityVerdict check_kv_cache(const Lesson& lesson, const QuantityClaim& c) {
  const std::size_t g = c.kv_heads.value_or(lesson.kv_head_count());
  if (lesson.heads % g != 0)
    fail(lesson, c, 0, "kv_heads",
         tr_format("kv_heads = {} does not divide heads = {}; choose kv_heads dividing {}", g,
                   lesson.heads, lesson.heads));
  QuantityVerdict v;
  v.claim = c;
  const std::uint64_t per_token =
      static_cast<std::uint64_t>(g) * (lesson.d_k + lesson.d_v) * dtype_bytes(c.dtype);
  const std::uint64_t tokens = c.per_token ? 1 : c.seq.value_or(lesson.keys());
  const std::uint64_t batch = c.per_token ? 1 : c.batch.value_or(1);
  const std::uint64_t total = per_token * tokens * batch;
  const auto place = [&](Language lang) {
    return fill(c.per_token ? translate(lang, "KV cache bytes per token at kv_heads {}")
                            : translate(lang, "KV cache bytes per sequence at kv_heads {}"),
                g);
  };
  v.place = place(Language::en);
  v.place_zh = place(Language::zh);
  const double value = static_cast<double>(total) / c.unit_size;
  v.computed_value = value;
  v.tolerance = c.tolerance.value_or(half_unit(c.value.decimals));
  v.agrees = std::abs(c.value.value - value) <= v.tolerance;
  v.stated = as_stated(c.value.value, c) + " " + c.unit;
  v.computed_number = as_stated(value, c);
  v.computed = v.computed_number + " " + c.unit;
  const auto details = [&](Language lang) {
    return fill(translate(lang, "K and V: {} K/V head(s) × (d_k {} + d_v {}) × {} B ({}) × {} "
                                "token(s) × batch {} = {} B"),
                g, lesson.d_k, lesson.d_v, dtype_bytes(c.dtype), dtype_name(c.dtype), tokens,
                batch, total);
  };
  v.details = details(Language::en);
  v.details_zh = details(Language::zh);
  return v;
}

// "qk_std of q·k/√d_k (unit_length, d_k 64)", in `lang`.
std::string sampled_place(const QuantityClaim& c, std::string_view vectors, Language lang) {
  return fill(c.scaled ? translate(lang, "{} of q·k/√d_k ({}, d_k {})")
                       : translate(lang, "{} ({}, d_k {})"),
              c.quantity, vectors, c.d_k);
}

std::string sampled_details(const QuantityClaim& c, const Estimate& e, Language lang) {
  return fill(translate(lang,
                        "sampled {:.6g} ± {:.2g} (standard error) from {} pairs, seed {}; theory "
                        "{}{:.6g}; `attn-trace stats --d-k {} --samples {} --seed {}` shows it"),
              e.value, e.standard_error, c.samples, c.seed, e.theory_exact ? "" : "≈ ", e.theory,
              c.d_k, c.samples, c.seed);
}

QuantityVerdict check_sampled(const Lesson& lesson, const QuantityClaim& c) {
  QuantityVerdict v;
  v.claim = c;
  QkSampleSpec spec{c.d_k, c.samples, c.seed,
                    c.unit_length ? QkVectors::unit_length : QkVectors::unit_variance};
  try {
    validate(spec);
  } catch (const InputError& e) {
    fail(lesson, c, 0, "samples", e.what());
  }
  const QkStats stats = sample_qk(spec);
  const Estimate& e = *find_statistic(c.scaled ? stats.scaled : stats.raw, c.quantity);
  v.place = sampled_place(c, vectors_name(spec.vectors), Language::en);
  v.place_zh = sampled_place(c, vectors_name(spec.vectors), Language::zh);
  v.computed_value = e.value;
  v.tolerance =
      c.tolerance.value_or(half_unit(c.value.decimals)) + kSamplingErrors * e.standard_error;
  v.agrees = std::abs(c.value.value - e.value) <= v.tolerance;
  v.stated = as_stated(c.value.value, c);
  v.computed_number = as_stated(e.value, c, 3);
  v.computed = v.computed_number;
  v.details = sampled_details(c, e, Language::en);
  v.details_zh = sampled_details(c, e, Language::zh);
  return v;
}

// quantity = "max_abs" | "norm": the largest |cell| or the Frobenius norm
// √(Σ cell²) over the claimed steps (every head's for head*.), NaN if a
// cell is NaN.
QuantityVerdict check_step_size(const QuantityClaim& c, const std::vector<const Step*>& steps) {
  QuantityVerdict v;
  v.claim = c;
  const bool norm = c.quantity == "norm";
  double value = 0.0;
  std::size_t cells = 0;
  for (const Step* step : steps) {
    cells += step->value.n_elem;
    value = norm ? std::hypot(value, arma::norm(arma::vectorise(step->value), 2))
                 : std::max(value, arma::abs(step->value).max());
    if (step->value.has_nan()) value = std::numeric_limits<double>::quiet_NaN();
  }
  const auto place = [&](Language lang) {
    return fill(norm ? translate(lang, "{} norm") : translate(lang, "{} largest |cell|"), c.step);
  };
  v.place = place(Language::en);
  v.place_zh = place(Language::zh);
  v.computed_value = value;
  v.tolerance = c.tolerance.value_or(half_unit(c.value.decimals));
  v.agrees = std::abs(c.value.value - value) <= v.tolerance;
  v.stated = as_stated(c.value.value, c);
  v.computed_number = as_stated(value, c, 4);
  v.computed = v.computed_number;
  const auto details = [&](Language lang) {
    return fill(norm ? translate(lang, "√(Σ cell²) over {} cells = {:.6g}")
                     : translate(lang, "max |cell| over {} cells = {:.6g}"),
                cells, value);
  };
  v.details = details(Language::en);
  v.details_zh = details(Language::zh);
  return v;
}

// "softmax_grad_median of softmax(q·k) (unit_variance, d_k 64, 9 keys)", in `lang`.
std::string softmax_grad_place(const QuantityClaim& c, std::string_view vectors, Language lang) {
  return fill(c.scaled ? translate(lang, "{} of softmax(q·k/√d_k) ({}, d_k {}, {} keys)")
                       : translate(lang, "{} of softmax(q·k) ({}, d_k {}, {} keys)"),
              c.quantity, vectors, c.d_k, c.keys);
}

// quantity = "softmax_grad_median" | "softmax_grad_vanished": sampled rows of
// one query against `keys` keys; within the tolerance plus 4 standard errors.
QuantityVerdict check_softmax_grad(const Lesson& lesson, const QuantityClaim& c) {
  SoftmaxGradSpec spec{
      {c.d_k, c.samples, c.seed, c.unit_length ? QkVectors::unit_length : QkVectors::unit_variance},
      c.keys,
      c.scaled};
  try {
    validate(spec);
  } catch (const InputError& e) {
    fail(lesson, c, 0, "samples", e.what());
  }
  const SoftmaxGradStats stats = sample_softmax_grad(spec);
  const bool median = c.quantity == "softmax_grad_median";
  const double value = median ? stats.median : stats.vanished;
  const double error = median ? stats.median_error : stats.vanished_error;
  QuantityVerdict v;
  v.claim = c;
  v.place = softmax_grad_place(c, vectors_name(spec.draws.vectors), Language::en);
  v.place_zh = softmax_grad_place(c, vectors_name(spec.draws.vectors), Language::zh);
  v.computed_value = value;
  v.tolerance = c.tolerance.value_or(half_unit(c.value.decimals)) + kSamplingErrors * error;
  v.agrees = std::abs(c.value.value - value) <= v.tolerance;
  v.stated = as_stated(c.value.value, c);
  v.computed_number = as_stated(value, c, 4);
  v.computed = v.computed_number;
  const auto details = [&](Language lang) {
    return fill(translate(lang,
                          // xgettext:no-c-format
                          "sampled {:.4g} ± {:.2g} (standard error) from {} rows, seed {}; per "
                          "row the largest |∂a_i/∂s_j| = max a_i(1 − a_i), at most 0.25: median "
                          "{:.4g}, {:.1f}% of rows below 0.0025 (1% of 0.25: vanished)"),
                value, error, c.samples, c.seed, stats.median, 100.0 * stats.vanished);
  };
  v.details = details(Language::en);
  v.details_zh = details(Language::zh);
  return v;
}

// "stack_grad_norm at layer 6 of 12, no residual", in `lang`.
std::string stack_place(const QuantityClaim& c, Language lang) {
  return fill(c.residual ? translate(lang, "{} at layer {} of {}, with residual sums")
                         : translate(lang, "{} at layer {} of {}, no residual sums"),
              c.quantity, c.at, c.layers);
}

std::string stack_details(const QuantityClaim& c, const std::vector<double>& norms,
                          Language lang) {
  std::vector<std::string> ratios;
  for (double n : norms) ratios.push_back(fmt::format("{:.3g}", n / norms.back()));
  return fill(translate(lang,
                        "‖dL/d(input of layer {0})‖ / ‖dL/d(input of layer {1})‖ = {2:.4g} / "
                        "{3:.4g} (Frobenius norms); {1} layers shaped like the lesson's, weights "
                        "N(0, 1/d_model) from seed {4}, no biases, γ = 1, β = 0, upstream "
                        "N(0, 1) at the top; the ratio at layers 1 to {1}: {5}"),
              c.at, c.layers, norms[c.at - 1], norms.back(), c.seed,
              fmt::join(ratios, lang == Language::zh ? "，" : ", "));
}

// quantity = "stack_grad_norm": the ratio of the input gradients' norms in a
// seeded stack of the lesson's layer (teach/stack_grad.hpp).
QuantityVerdict check_stack_grad(const Lesson& lesson, const QuantityClaim& c) {
  std::vector<double> norms;
  try {
    norms = stack_input_grad_norms(lesson, {static_cast<std::size_t>(c.layers), c.seed, c.residual});
  } catch (const InputError& e) {
    fail(lesson, c, 0, "quantity", e.what());
  }
  const double value = norms[c.at - 1] / norms.back();
  QuantityVerdict v;
  v.claim = c;
  v.place = stack_place(c, Language::en);
  v.place_zh = stack_place(c, Language::zh);
  v.computed_value = value;
  v.tolerance = c.tolerance.value_or(half_unit(c.value.decimals));
  v.agrees = std::abs(c.value.value - value) <= v.tolerance;
  v.stated = as_stated(c.value.value, c);
  v.computed_number = as_stated(value, c, 4);
  v.computed = v.computed_number;
  v.details = stack_details(c, norms, Language::en);
  v.details_zh = stack_details(c, norms, Language::zh);
  return v;
}

// "window 2, global [0], stride 4, causal", in `lang`; "full attention" when none.
std::string pattern_text(const MaskPattern& p, Language lang) {
  std::vector<std::string> parts;
  if (p.window) parts.push_back(fill(translate(lang, "window {}"), *p.window));
  if (!p.global.empty())
    parts.push_back(fill(translate(lang, "global [{}]"), fmt::join(p.global, ", ")));
  if (p.stride) parts.push_back(fill(translate(lang, "stride {}"), *p.stride));
  if (p.causal) parts.emplace_back(translate(lang, "causal"));
  if (parts.empty()) return std::string(translate(lang, "full attention"));
  return fmt::format("{}", fmt::join(parts, lang == Language::zh ? "，" : ", "));
}

// What an attended-cells claim counted: cells, out of total, and how, in both languages.
struct AttendedCount {
  std::uint64_t cells = 0, total = 0;
  std::string how, how_zh;
};

AttendedCount count_attended(const Lesson& lesson, const Trace& trace, const QuantityClaim& c) {
  AttendedCount out;
  const auto both = [&](auto&& text) {
    out.how = text(Language::en);
    out.how_zh = text(Language::zh);
  };
  if (c.chunk) {
    const ChunkCount k = chunk_cells(*c.seq, c.chunk, c.overlap);
    out.cells = k.cells;
    out.total = *c.seq * *c.seq;
    both([&](Language lang) {
      return fill(translate(lang,
                            "{} chunks of {} tokens overlapping by {} (the last {} long), each "
                            "with full attention: Σ length²"),
                  k.chunks, c.chunk, c.overlap, k.last);
    });
    return out;
  }
  if (c.pattern || c.seq) {
    if (!c.pattern && (lesson.is_cross() || !lesson.key_padding.empty() || lesson.keep))
      fail(lesson, c, 0, "seq",
           std::string(tr("the lesson's padding, keep or memory are given for its own tokens and "
                          "cannot be carried to another length; remove seq or state the pattern "
                          "in the claim")));
    const MaskPattern p = c.pattern ? *c.pattern : lesson.mask_pattern();
    out.cells = attended_cells(p, *c.seq);
    out.total = *c.seq * *c.seq;
    both([&](Language lang) { return pattern_text(p, lang); });
    return out;
  }
  out.cells = arma::accu(trace.mask == 0u);
  out.total = trace.mask.n_elem;
  both([&](Language lang) {
    return fill(translate(lang, "the lesson's mask ({})"), pattern_text(lesson.mask_pattern(), lang));
  });
  return out;
}

QuantityVerdict check_attended(const Lesson& lesson, const Trace& trace, const QuantityClaim& c) {
  QuantityVerdict v;
  v.claim = c;
  const AttendedCount k = count_attended(lesson, trace, c);
  const std::uint64_t batch = c.batch.value_or(1);
  const double share = static_cast<double>(k.cells) / static_cast<double>(k.total);
  const double value = c.fraction ? share : static_cast<double>(batch * k.cells);
  const auto place = [&](Language lang) {
    return std::string(c.fraction ? translate(lang, "attended fraction")
                                  : translate(lang, "attended cells"));
  };
  v.place = place(Language::en);
  v.place_zh = place(Language::zh);
  v.computed_value = value;
  v.tolerance = c.tolerance.value_or(half_unit(c.value.decimals));
  v.agrees = std::abs(c.value.value - value) <= v.tolerance;
  v.stated = as_stated(c.value.value, c);
  // A count is a whole number, written whole however large.
  v.computed_number = c.fraction ? as_stated(value, c, 4) : fmt::format("{}", batch * k.cells);
  v.computed = v.computed_number;
  const auto details = [&](Language lang, const std::string& how) {
    return fill(translate(lang, "{}: {} of {} cells ({:.2f}%){}"), how, k.cells, k.total,
                100.0 * share, at_seq(c, lang));
  };
  v.details = details(Language::en, k.how);
  v.details_zh = details(Language::zh, k.how_zh);
  return v;
}

}  // namespace

std::vector<QuantityVerdict> check_quantity_claims(const Lesson& lesson, const Trace& trace) {
  std::vector<QuantityVerdict> out;
  for (const QuantityClaim& c : lesson.quantity_claims) {
    if (c.kind == QuantityClaim::Kind::sampled) {
      out.push_back(check_sampled(lesson, c));
      continue;
    }
    if (c.kind == QuantityClaim::Kind::kv_cache_bytes) {
      out.push_back(check_kv_cache(lesson, c));
      continue;
    }
    if (c.kind == QuantityClaim::Kind::attended) {
      out.push_back(check_attended(lesson, trace, c));
      continue;
    }
    if (c.kind == QuantityClaim::Kind::softmax_grad) {
      out.push_back(check_softmax_grad(lesson, c));
      continue;
    }
    if (c.kind == QuantityClaim::Kind::stack_grad_norm) {
      out.push_back(check_stack_grad(lesson, c));
      continue;
    }
    if (c.kind == QuantityClaim::Kind::step_size) {
      out.push_back(check_step_size(c, claimed_steps(lesson, trace, c)));
      continue;
    }
    const std::vector<const Step*> steps = claimed_steps(lesson, trace, c);
    out.push_back(c.kind == QuantityClaim::Kind::shape ? check_shape(trace, c, steps)
                                                       : check_cost(trace, c, steps));
  }
  return out;
}

std::string quantity_claims_text(const std::vector<QuantityVerdict>& verdicts, std::size_t width) {
  if (verdicts.empty()) return "";
  std::size_t agree = 0, derived = 0;
  for (const QuantityVerdict& v : verdicts) {
    agree += v.agrees;
    derived += v.claim.derived;
  }
  std::string out = wrap_text(
      tr_format("shape and cost claims: {} checked, {} agree, {} disagree", verdicts.size(), agree,
                verdicts.size() - agree) +
          (derived ? tr_format("; {} of them derived by the lesson itself", derived) : ""),
      width, "  ", "    ");
  const std::string_view agrees = tr("agrees"), disagrees = tr("DISAGREES");
  const std::size_t column =
      std::max(display_width(std::string(agrees)), display_width(std::string(disagrees)));
  const std::string under(4 + column + 2, ' ');
  for (const QuantityVerdict& v : verdicts) {
    const std::string status = pad_right(std::string(v.agrees ? agrees : disagrees), column);
    const std::string& says = v.claim.says_for(language());
    out += wrap_text(
        v.claim.derived
            ? tr_format("{}  {}  \"{}\" (the lesson's own number): stated {}, computed {}",
                        status, v.place_in(language()), says, v.stated, v.computed)
            : tr_format("{}  {}  \"{}\": stated {}, computed {}", status, v.place_in(language()),
                        says, v.stated, v.computed),
        width, "    ", under);
    out += wrap_text(v.details_in(language()), width, under, under + "  ");
  }
  return out;
}

std::string quantity_claim_json(const QuantityVerdict& v) {
  const QuantityClaim& c = v.claim;
  const bool shape = c.kind == QuantityClaim::Kind::shape;
  const auto optional_number = [](const auto& o) {
    return o ? fmt::format("{}", *o) : std::string("null");
  };
  return fmt::format(
      "{{\"kind\": {}, \"step\": {}, \"says\": {}, \"derived\": {}, \"line\": {}, \"batch\": {}, \"seq\": {}, "
      "\"unit\": {}, \"stated\": {}, \"computed\": {}, \"computed_exact\": {}, \"tolerance\": {}, "
      "\"status\": \"{}\", \"details\": {}}}",
      json_string(c.quantity), c.step.empty() ? "null" : json_string(c.step), json_string(c.says),
      c.derived ? "true" : "false", c.line, optional_number(c.batch), optional_number(c.seq),
      c.kind == QuantityClaim::Kind::bytes || c.kind == QuantityClaim::Kind::kv_cache_bytes
          ? json_string(c.unit)
          : "null",
      shape ? v.stated : format_fixed(c.value.value, c.value.decimals),
      shape ? v.computed : v.computed_number,
      v.computed_value ? json_number(*v.computed_value) : "null",
      shape ? "null" : json_number(v.tolerance), v.agrees ? "agrees" : "disagrees",
      json_string(v.details));
}

}  // namespace attn
