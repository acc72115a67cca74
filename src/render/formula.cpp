// Formulas and shapes of the steps, written from the dataflow of the trace.
#include "render/formula.hpp"

#include <fmt/format.h>

#include <algorithm>

#include <cmath>
#include <stdexcept>

#include "core/error.hpp"
#include "core/i18n.hpp"
#include "core/number_text.hpp"
#include "core/pipeline.hpp"
#include "core/costs.hpp"
#include "render/escape.hpp"

namespace attn {

namespace {

std::string dims(const arma::mat& M) {
  return shape_str(M.n_rows, M.n_cols);
}

// How a projection's input is named in its formula: X, (X+PE), M, (M+PE), concat.
std::string operand_name(const std::string& id) {
  if (id == "X+PE") return "(X+PE)";
  if (id == "memory") return "M";
  if (id == "memory+PE") return "(M+PE)";
  return id;
}

// "causal: key after the query, 3 cells; padding: the key is padding, 2 cells"
std::string mask_sources(const arma::umat& mask, Language lang) {
  static const std::pair<unsigned, const char*> sources[] = {
      {mask_causal, N_("causal: key after the query")},
      {mask_padding, N_("padding: the key is padding")},
      {mask_keep, N_("keep: 0 in the keep matrix")},
      {mask_window, N_("window: key farther from the query than the window")},
      {mask_stride, N_("stride: not a stride key and outside the window")}};
  std::string out;
  arma::uword listed = 0;  // cells counted under a reason, a cell once per reason
  for (const auto& [bit, what] : sources) {
    arma::uword cells = 0;
    for (const arma::uword reasons : mask) cells += (reasons & bit) != 0u;
    listed += cells;
    if (cells)
      out += fmt::format("{}{}", out.empty() ? "" : translate(lang, "; "),
                         fmt::format(cells == 1 ? fmt::runtime(translate(lang, "{}, {} cell"))
                                                : fmt::runtime(translate(lang, "{}, {} cells")),
                                     translate(lang, what), cells));
  }
  const arma::uword masked = arma::accu(mask != 0u);
  if (listed > masked)  // the reasons overlap: say so, or the counts seem not to add up
    out += fmt::format(fmt::runtime(translate(
                           lang, "; {} masked cells in all (a cell may be masked for several "
                                 "reasons, and is counted under each)")),
                       masked);
  return out;
}

// Words in LaTeX math, in `lang`: "\\text{masked cells}".
std::string tex_words(Language lang, const char* msgid) {
  return fmt::format("\\text{{{}}}", tex_math_text_in(lang, translate(lang, msgid)));
}

// A step id in LaTeX math: upright, escaped ("\\mathrm{layer.ln1}").
std::string tex_id(const std::string& id) {
  return fmt::format("\\mathrm{{{}}}", tex_text(id));
}

// A projection's operand or result in LaTeX: a layer step id upright, X, W_Q as they are.
std::string tex_operand(const Step& step) {
  return step.step_id.family() == StepFamily::layer ? tex_id(step.id) : operand_name(step.id);
}

StepFormula given(const Step& step, Language lang) {
  const std::string shape = dims(step.value);
  if (step.id == "X") return {std::string(translate(lang, "X: one row per token")), "X", shape};
  if (step.id == "memory")
    return {std::string(
                translate(lang, "memory: one row per source token; keys and values come from it")),
            "M", shape};
  if (is_bias(step.step_id))
    return {
        fmt::format(fmt::runtime(translate(lang, "{}: given in the lesson, added to every row")),
                    step.id),
        step.id, shape};
  // ln1_gamma, ln2_beta: LayerNorm's per-feature parameters
  if (const std::optional<int> norm = layer_norm_number(step.step_id)) {
    const bool gamma = is_layer_norm_scale(step.step_id);
    const std::string k = std::to_string(*norm);
    return {
        fmt::format(
            fmt::runtime(translate(lang, "{}: given in the lesson, {} of LayerNorm {}")), step.id,
            translate(lang, gamma ? N_("one scale γ per feature") : N_("one shift β per feature")),
            k),
        fmt::format("\\{}_{{{}}}", gamma ? "gamma" : "beta", k), shape};
  }
  return {fmt::format(fmt::runtime(translate(
                          lang,
                          "{}: given in the lesson (rows: input features, columns: output "
                          "features)")),
                      step.id),
          step.id, shape};
}

// Q = X·W_Q + b_Q, and output = concat·W_O + b_O.
StepFormula projection(const Trace& trace, const Step& step) {
  const std::vector<std::string>& in = step.made.inputs;
  const bool bias = in.size() > 2;
  const std::string shapes = fmt::format("({})·({}) → {}", dims(trace.input(step, 0).value),
                                         dims(trace.input(step, 1).value), dims(step.value));
  const std::string text =
      fmt::format("{} = {}·{}{}", step.id, operand_name(in[0]), in[1], bias ? " + " + in[2] : "");
  if (step.kind == StepKind::output)
    return {text,
            fmt::format("\\mathrm{{output}} = \\mathrm{{concat}}\\, {}{}", in[1],
                        bias ? " + " + in[2] : ""),
            shapes};
  return {text,
          fmt::format("{} = {} {}{}", tex_operand(step), tex_operand(trace.input(step, 0)), in[1],
                      bias ? " + " + in[2] : ""),
          shapes};
}

// "√d_k, with √d_k = √4 = 2" and its LaTeX.
std::pair<std::string, std::string> divisor(const Lesson& lesson, double s, Language lang) {
  switch (lesson.scale_kind) {
    case ScaleKind::sqrt_dk:
      return {fmt::format(fmt::runtime(translate(lang, "√d_k, with √d_k = √{} = {}")), lesson.d_k,
                          short_number(s)),
              fmt::format("\\sqrt{{d_k}},\\ {}\\ \\sqrt{{d_k}} = \\sqrt{{{}}} = {}",
                          // TRANSLATORS: in a formula, "√d_k, with √d_k = √4 = 2".
                          tex_words(lang, N_("with")), lesson.d_k, short_number(s))};
    case ScaleKind::none:
      return {std::string(translate(lang, "1 (no scaling)")),
              fmt::format("1\\ ({})", tex_words(lang, N_("no scaling")))};
    case ScaleKind::number:
      break;
  }
  return {short_number(s), short_number(s)};
}

// "; attended: 19 of 49 cells (window 1, global [0])": the cells the masks
// leave against n·m, when the lesson has a window or a stride pattern.
std::string attended_count(const Trace& trace, Language lang) {
  const MaskPattern& p = trace.mask_pattern;
  if (!p.sparse()) return "";
  std::string pattern;
  if (p.window) pattern += fmt::format(fmt::runtime(translate(lang, "window {}")), *p.window);
  if (!p.global.empty())
    pattern += std::string(pattern.empty() ? "" : translate(lang, ", ")) +
               fmt::format(fmt::runtime(translate(lang, "global [{}]")), fmt::join(p.global, ", "));
  if (p.stride)
    pattern += std::string(pattern.empty() ? "" : translate(lang, ", ")) +
               fmt::format(fmt::runtime(translate(lang, "stride {}")), *p.stride);
  const std::string counted = fmt::format(
      fmt::runtime(translate(lang, "; attended: {} of {} cells")),
      arma::accu(trace.mask == 0u), trace.mask.n_elem);
  return fmt::format("{} ({})", counted, pattern);
}

StepFormula masked(const Trace& trace, const Step& step, Language lang) {
  const std::string shapes =
      fmt::format("{} → {}", dims(trace.input(step, 0).value), dims(step.value));
  if (!arma::any(arma::vectorise(trace.mask)))
    return {std::string(translate(lang, "nothing is masked: masked = scaled")),
            tex_words(lang, N_("nothing masked")), shapes};
  const double fill = step.made.fill;
  const std::string text = std::isinf(fill) ? "-inf" : fmt::format("{:g}", fill);
  return {fmt::format(
              fmt::runtime(translate(lang, "masked cells := {} ({}); the others are unchanged")),
              text, mask_sources(trace.mask, lang)) +
              attended_count(trace, lang),
          fmt::format("{} := {}", tex_words(lang, N_("masked cells")),
                      std::isinf(fill) ? "-\\infty" : text),
          shapes};
}

// "A₀, A₁" / "C₀ | C₁": one letter per input head.
std::string per_head(const Trace& trace, const Step& step, const char* letter,
                     const char* separator) {
  std::string out;
  for (const std::string& id : step.made.inputs)
    out += (out.empty() ? "" : separator) + (letter + subscript(trace.at(id).head));
  return out;
}

constexpr const char* kDropout =
    N_("dropout is the identity at inference: nothing dropped, nothing rescaled; only training "
       "scales the kept values by 1/(1−p)");

// What every formula is written from: the step, its head (0 for a step not per
// head) and the language of its words.
struct Context {
  const Lesson& lesson;
  const Trace& trace;
  const Step& step;
  Language lang;
  std::size_t h;    // the step's head
  std::string sub;  // its subscript: "₀"

  std::string in(std::size_t i) const { return dims(trace.input(step, i).value); }
  std::string out() const { return dims(step.value); }
  const std::string& input_id(std::size_t i) const { return step.made.inputs.at(i); }
  // A format string in the formula's language, filled in.
  template <typename... Args>
  std::string say(const char* format, const Args&... args) const {
    return fmt::format(fmt::runtime(translate(lang, format)), args...);
  }
};

// The LayerNorm number of layer.ln{k}...: "1" or "2".
std::string norm_number(const Step& step) {
  const std::optional<int> k = layer_norm_number(step.step_id);
  return k ? std::to_string(*k) : "";
}

// --- the encoder layer's own steps (lesson [layer]); its FFN's products are projections

StepFormula residual(const Context& c) {
  const std::string& id = c.step.id;
  return {fmt::format("{} = {} + {} ({})", id, operand_name(c.input_id(0)), c.input_id(1),
                      translate(c.lang, kDropout)),
          fmt::format("{} = {} + {}", tex_id(id), tex_id(c.input_id(0)), tex_id(c.input_id(1))),
          fmt::format("{} + {} → {}", c.in(0), c.in(1), c.out())};
}

StepFormula row_mean(const Context& c) {
  const std::string k = norm_number(c.step);
  const std::string& x = c.input_id(0);
  return {c.say(N_("μ{} = Σ_j x[i, j] / d: the mean of each row of {} over its {} features"),
                subscript(std::stoul(k)), x, c.trace.at(x).value.n_cols),
          fmt::format("\\mu_{{{}}} = \\tfrac1d \\textstyle\\sum_j {}_{{ij}}", k, tex_id(x)),
          fmt::format("{} → {}", c.in(0), c.out())};
}

StepFormula row_var(const Context& c) {
  const std::string k = norm_number(c.step);
  const std::string& x = c.input_id(0);
  return {
      c.say(N_("σ²{0} = Σ_j (x[i, j] − μ{0})² / d over each row of {1} (biased: divided "
               "by d, not d − 1, as PyTorch)"),
            subscript(std::stoul(k)), x),
      fmt::format("\\sigma^2_{{{0}}} = \\tfrac1d \\textstyle\\sum_j ({1}_{{ij}} - \\mu_{{{0}}})^2",
                  k, tex_id(x)),
      fmt::format("{}, {} → {}", c.in(0), c.in(1), c.out())};
}

StepFormula normalise(const Context& c) {
  const std::string k = norm_number(c.step);
  const double eps = c.step.made.eps;
  return {c.say(N_("x̂ = (x − μ{0}) / √(σ²{0} + ε), ε = {1:g}, row by row (x = {2})"),
                subscript(std::stoul(k)), eps, c.input_id(0)),
          fmt::format("\\hat x = ({2} - \\mu_{{{0}}}) / \\sqrt{{\\sigma^2_{{{0}}} + \\varepsilon}},"
                      "\\ \\varepsilon = {1:g}",
                      k, eps, tex_id(c.input_id(0))),
          fmt::format("{}, {}, {} → {}", c.in(0), c.in(1), c.in(2), c.out())};
}

StepFormula scale_shift(const Context& c) {
  const std::string k = norm_number(c.step);
  return {
      c.say(N_("{0} = γ ⊙ x̂ + β: column j of {1} times {2}[j], plus {3}[j]"), c.step.id,
            c.input_id(0), c.input_id(1), c.input_id(2)),
      fmt::format("{} = \\gamma_{{{}}} \\odot \\hat x + \\beta_{{{}}}", tex_id(c.step.id), k, k),
      fmt::format("{} ⊙ {} + {} → {}", c.in(1), c.in(0), c.in(2), c.out())};
}

StepFormula activation(const Context& c) {
  const bool gelu = c.step.made.op == Op::gelu;
  const std::string& h = c.input_id(0);
  return {c.say(N_("{} = {}, cell by cell; then dropout, which is the identity at inference"),
                c.step.id,
                gelu ? c.say(N_("GELU(h) = h·Φ(h) = h·(1 + erf(h/√2))/2, exact, with h = {}"), h)
                     : fmt::format("ReLU({0}) = max(0, {0})", h)),
          gelu ? fmt::format("{} = {} \\cdot \\Phi({})", tex_id(c.step.id), tex_id(h), tex_id(h))
               : fmt::format("{} = \\max(0, {})", tex_id(c.step.id), tex_id(h)),
          fmt::format("{} → {}", c.in(0), c.out())};
}

// layer.residual1/2 of a layer with residual = false: the sub-layer's output alone.
StepFormula no_residual(const Context& c) {
  return {c.say(N_("{} = {}: no residual connection (the lesson's [layer] residual = false), so "
                   "the sub-layer's input is not added back"),
                c.step.id, c.input_id(0)),
          fmt::format("{} = {}", tex_id(c.step.id), tex_id(c.input_id(0))),
          fmt::format("{} → {}", c.in(0), c.out())};
}

StepFormula layer_output(const Context& c) {
  const auto& layer = c.lesson.layer;
  return {c.say(N_("{} = {}: the encoder layer's result ({}, {})"), c.step.id, c.input_id(0),
                layer && layer->norm == NormPlacement::pre ? "Pre-LN" : "Post-LN",
                layer && layer->activation == Activation::gelu ? "GELU" : "ReLU"),
          fmt::format("{} = {}", tex_id(c.step.id), tex_id(c.input_id(0))),
          fmt::format("{} → {}", c.in(0), c.out())};
}

// --- decoding token t with a KV cache (lesson [decode]): t is read from the
// shapes (the cache of step t holds t + 1 tokens), h from the step

StepFormula decode_query(const Context& c) {
  const std::size_t t = c.step.made.offset;
  return {c.say(N_("q = Q{0}[{1}, :]: the query of token {1} alone; step {1} needs no other "
                   "query"),
                c.sub, t),
          fmt::format("q_{{{0}}} = Q_{{{1}}}[{0},:]", t, c.h),
          fmt::format("({}) → {}", c.in(0), c.out())};
}

StepFormula decode_cache(const Context& c) {
  const std::size_t t = c.step.value.n_rows - 1;
  const bool keys = c.input_id(0) == head_step_id(c.h, HeadStep::K);
  const char* M = keys ? "K" : "V";
  const bool bias = keys ? c.lesson.b_K.has_value() : c.lesson.b_V.has_value();
  const std::string grown =
      t == 0
          ? std::string(translate(c.lang, keys ? N_("the cache starts with token 0's key")
                                               : N_("the cache starts with token 0's value")))
          : c.say(N_("{} kept from earlier steps, row {} (x_{}·W_{}{}) added now"),
                  t == 1 ? std::string(translate(c.lang, "row 0")) : c.say(N_("rows 0..{}"), t - 1),
                  t, t, M, bias ? fmt::format(" + b_{}", M) : "");
  return {
      fmt::format("{}_cache = {}{}[0:{}, :]: {}", M, M, c.sub, t + 1, grown),
      fmt::format("{0}^{{\\mathrm{{cache}}}}_{{{1}}} = {0}_{{{2}}}[0{{:}}{3},:]", M, t, c.h, t + 1),
      fmt::format("({}) → {}", c.in(0), c.out())};
}

StepFormula decode_scores(const Context& c) {
  return {std::string(translate(
              c.lang,
              "s = q·K_cacheᵀ: the new query against every cached key; no later key exists yet, "
              "so nothing is masked")),
          fmt::format("s = q\\, (K^{{\\mathrm{{cache}}}}_{{{}}})^\\top", c.step.value.n_cols - 1),
          fmt::format("({})·({})ᵀ → {}", c.in(0), c.in(1), c.out())};
}

StepFormula decode_scaled(const Context& c) {
  const auto [text, latex] = divisor(c.lesson, c.step.made.divisor, c.lang);
  return {fmt::format("s / {}", text), fmt::format("s / {}", latex),
          c.say(N_("{} / scalar → {}"), c.in(0), c.out())};
}

StepFormula decode_weights(const Context& c) {
  return {std::string(translate(c.lang,
                                "a = softmax(s) over the cached keys (computed stably, with "
                                "the row max subtracted)")),
          "a = \\mathrm{softmax}(s)", c.say(N_("{} → {}, sums to 1"), c.in(0), c.out())};
}

StepFormula decode_context(const Context& c) {
  return {c.say(N_("c = a·V_cache: must equal row {} of head{}.context"),
                c.trace.input(c.step, 0).value.n_cols - 1, c.h),
          "c = a\\, V^{\\mathrm{cache}}", fmt::format("({})·({}) → {}", c.in(0), c.in(1), c.out())};
}

StepFormula decode_check(const Context& c) {
  return {c.say(N_("row t: max_j |c_t[j] − C{}[t, j]|, decoding step t's context against "
                   "row t of head{}.context; at most {:g} proves the cache changes nothing"),
                c.sub, c.h, kDecodeTolerance),
          fmt::format("\\max_j |c_t[j] - C_{{{}}}[t,j]|", c.h),
          fmt::format("{} × (1×{}), ({}) → {}", c.step.made.inputs.size() - 1,
                      c.trace.input(c.step, 0).value.n_cols, c.in(0), c.out())};
}

// --- rotary positions (RoPE) and linear biases (ALiBi), head by head

StepFormula rotate(const Context& c) {
  const std::string& of = c.input_id(0);
  const std::size_t shift = c.step.made.offset;
  const std::string pos = shift ? fmt::format("(p + {})", shift) : "p";
  const std::string tex_pos = shift ? fmt::format("(p + {})", shift) : "p";
  return {c.say(N_("{0} row p: each pair (2i, 2i+1) = (a, b) rotated by the angle {1}·θ_i, "
                   "θ_i = 10000^(−2i/{2}): (a·cos − b·sin, a·sin + b·cos)"),
                of, pos, c.step.value.n_cols),
          fmt::format("\\mathrm{{RoPE}}_{{{}\\theta}}(\\mathrm{{{}}}),\\ \\theta_i = 10000^{{-2i/{}}}", tex_pos,
                      tex_text(of), c.step.value.n_cols),
          fmt::format("({}) → {}", c.in(0), c.out())};
}

StepFormula alibi(const Context& c) {
  const std::size_t heads = c.lesson.heads;
  return {c.say(N_("bias[i, j] = −m{0}·|i − j|, slope m{0} = 2^(−8·{1}/{2}) = {3}"), c.sub,
                c.h + 1, heads, short_number(c.step.made.slope)),
          fmt::format("\\mathrm{{ALiBi}}_{{{0}}}[i,j] = -m_{{{0}}}\\,|i-j|,\\ m_{{{0}}} = 2^{{-8\\cdot {1}/{2}}}",
                      c.h, c.h + 1, heads),
          c.out()};
}

StepFormula biased(const Context& c) {
  return {c.say(N_("S{0} / s + bias{0}: ALiBi's bias added to the scaled scores, before the "
                   "mask"),
                c.sub),
          fmt::format("S_{{{0}}}/s + \\mathrm{{ALiBi}}_{{{0}}}", c.h),
          fmt::format("{} + {} → {}", c.in(0), c.in(1), c.out())};
}

StepFormula shift_check(const Context& c) {
  return {c.say(N_("row i: max_j |{}[i, j] − {}[i, j]|: RoPE depends only on j − i, so "
                   "shifting every position changes no score (at most {:g})"),
                c.input_id(1), c.input_id(0), kShiftTolerance),
          fmt::format("\\max_j |{}_{{ij}} - {}_{{ij}}|", tex_id(c.input_id(1)),
                      tex_id(c.input_id(0))),
          fmt::format("({}), ({}) → {}", c.in(1), c.in(0), c.out())};
}

// RoPE's rotations, ALiBi's bias, the shift check.
StepFormula position_formula(const Context& c) {
  if (c.step.made.op == Op::rotate) return rotate(c);
  if (c.step.made.op == Op::alibi) return alibi(c);
  return shift_check(c);
}

// --- positions, and the attention of each head

StepFormula positions(const Context& c) {
  return {"PE(pos,2i) = sin(pos/10000^(2i/d)), PE(pos,2i+1) = cos(pos/10000^(2i/d))",
          R"(PE_{pos,2i} = \sin(pos/10000^{2i/d}),\ PE_{pos,2i+1} = \cos(pos/10000^{2i/d}))",
          c.out()};
}

StepFormula add_positions(const Context& c) {
  if (c.step.id == "X+PE")
    return {"X + PE", "X + PE", fmt::format("{} + {} → {}", c.in(0), c.in(1), c.out())};
  return {"M + PE", "M + PE", c.out()};
}

// With grouped K/V heads: which K/V head a query head's K or V is, and who shares it.
std::string shared_kv_head(const Context& c) {
  const std::size_t heads = c.lesson.heads, g = c.lesson.kv_head_count();
  if (g == heads || c.input_id(0) == "Q") return "";
  const std::size_t group = heads / g, kv = c.h / group;
  return c.say(N_(" (K/V head {} of {}: query heads {}–{} share it, ⌊{} / {}⌋ = {})"), kv, g,
               kv * group, kv * group + group - 1, c.h, group, kv);
}

StepFormula head_slice(const Context& c) {
  const std::string& of = c.input_id(0);
  const std::size_t lo = c.step.made.offset, hi = lo + c.step.value.n_cols;
  return {fmt::format("{}{} = {}[:, {}:{}]{}", of, c.sub, of, lo, hi, shared_kv_head(c)),
          fmt::format("{}_{{{}}} = {}_{{:,\\,{}:{}}}", of, c.h, of, lo, hi),
          fmt::format("({}) → {}", c.in(0), c.out())};
}

StepFormula scores(const Context& c) {
  if (c.step.kind == StepKind::rope_shift_scores || c.trace.input(c.step, 0).kind == StepKind::rope_rotated)
    return {fmt::format("{} = {}·{}ᵀ", c.step.id, c.input_id(0), c.input_id(1)),
            fmt::format("{} = {}\\,{}^\\top", tex_id(c.step.id), tex_id(c.input_id(0)),
                        tex_id(c.input_id(1))),
            fmt::format("({})·({})ᵀ → {}", c.in(0), c.in(1), c.out())};
  return {fmt::format("S{0} = Q{0}·K{0}ᵀ", c.sub),
          fmt::format("S_{{{0}}} = Q_{{{0}}} K_{{{0}}}^\\top", c.h),
          fmt::format("({})·({})ᵀ → {}", c.in(0), c.in(1), c.out())};
}

StepFormula scaled(const Context& c) {
  const auto [text, latex] = divisor(c.lesson, c.step.made.divisor, c.lang);
  return {fmt::format("S{} / {}", c.sub, text), fmt::format("S_{{{}}} / {}", c.h, latex),
          c.say(N_("{} / scalar → {}"), c.in(0), c.out())};
}

StepFormula exponentials(const Context& c) {
  // The note on -inf only where a masked score is -inf.
  const arma::mat& masked = c.trace.input(c.step, 0).value;
  const bool minus_inf =
      std::any_of(masked.begin(), masked.end(), [](double x) { return x == -arma::datum::inf; });
  return {c.say(N_("E{} = exp(masked), cell by cell{}"), c.sub,
                minus_inf ? std::string(translate(c.lang, N_(" (exp(-inf) = 0)"))) : ""),
          fmt::format("E_{{{}}} = \\exp(\\text{{masked}})", c.h),
          fmt::format("{} → {}", c.in(0), c.out())};
}

StepFormula row_sums(const Context& c) {
  return {fmt::format("Σ{0} = Σ_j E{0}[i, j]", c.sub),
          fmt::format("\\Sigma_{{{0}}} = \\textstyle\\sum_j E_{{{0}}}[i,j]", c.h),
          fmt::format("{} → {}", c.in(0), c.out())};
}

StepFormula weights(const Context& c) {
  return {c.say(N_("A{0} = softmax(masked) = E{0} / Σ{0}, row by row (computed stably, "
                   "with the row max subtracted)"),
                c.sub),
          fmt::format("A_{{{0}}} = \\mathrm{{softmax}}(\\text{{masked}}) = E_{{{0}}} / "
                      "\\Sigma_{{{0}}}",
                      c.h),
          c.say(N_("{} → {}, each row sums to 1"), c.in(0), c.out())};
}

StepFormula context(const Context& c) {
  return {fmt::format("C{0} = A{0}·V{0}", c.sub),
          fmt::format("C_{{{0}}} = A_{{{0}}} V_{{{0}}}", c.h),
          fmt::format("({})·({}) → {}", c.in(0), c.in(1), c.out())};
}

StepFormula heads_mean(const Context& c) {
  return {c.say(N_("mean of {}, cell by cell (each row still sums to 1)"),
                per_head(c.trace, c.step, "A", ", ")),
          "\\frac{1}{h}\\textstyle\\sum_h A_h",
          fmt::format("{} × ({}) → {}", c.step.made.inputs.size(), c.in(0), c.in(0))};
}

StepFormula heads_max(const Context& c) {
  return {c.say(N_("max of {}, cell by cell (rows no longer sum to 1)"),
                per_head(c.trace, c.step, "A", ", ")),
          "\\max_h A_h",
          fmt::format("{} × ({}) → {}", c.step.made.inputs.size(), c.in(0), c.in(0))};
}

StepFormula concat(const Context& c) {
  std::string parts_tex;
  for (const std::string& id : c.step.made.inputs)
    parts_tex += fmt::format("{}C_{{{}}}", parts_tex.empty() ? "" : " \\mid ", c.trace.at(id).head);
  return {fmt::format("concat = [{}]", per_head(c.trace, c.step, "C", " | ")),
          fmt::format("\\mathrm{{concat}} = [{}]", parts_tex),
          fmt::format("{} × ({}) → {}", c.step.made.inputs.size(), c.in(0), c.out())};
}

// --- the tiled softmax (lesson [model] tile) and linear attention

StepFormula tile_block(const Context& c) {
  const Step& s = c.step;
  return {c.say(N_("S = {0}[rows {1}–{2}, columns {3}–{4}]: one block of the masked scores, "
                   "as a kernel loads it"),
                c.input_id(0), s.made.offset, s.made.offset + s.value.n_rows - 1, s.made.col_offset,
                s.made.col_offset + s.value.n_cols - 1),
          fmt::format("S = \\mathrm{{masked}}_{{{}}}[{}{{:}}{}, {}{{:}}{}]", c.h, s.made.offset,
                      s.made.offset + s.value.n_rows, s.made.col_offset,
                      s.made.col_offset + s.value.n_cols),
          fmt::format("{} → {}", c.in(0), c.out())};
}

StepFormula running_max(const Context& c) {
  const bool old = c.step.made.inputs.size() > 1;
  return {old ? c.say(N_("m = max(m_old, max_j S[i, j]): the largest score of the row so far "
                         "(m_old from {})"),
                      c.input_id(1))
              : std::string(translate(c.lang, N_("m = max_j S[i, j]: the first key block's "
                                                 "largest score of the row"))),
          old ? "m_j = \\max(m_{j-1}, \\max_k S_{i,k})" : "m = \\max_j S_{ij}",
          fmt::format("{} → {}", c.in(0), c.out())};
}

StepFormula rescale(const Context& c) {
  return {std::string(translate(
              c.lang, N_("α = exp(m_old − m): what the sums so far are multiplied by, because "
                         "they were taken against the old max (0 for the first key block, where "
                         "m_old = −inf; 1 while m is still −inf)"))),
          "\\alpha = \\exp(m_{j-1} - m_j)", fmt::format("{} → {}", c.in(0), c.out())};
}

StepFormula running_sum(const Context& c) {
  return {std::string(translate(c.lang, N_("ℓ = α·ℓ_old + Σ_j exp(S[i, j] − m): the row's "
                                           "softmax denominator so far, against the current max"))),
          "\\ell_j = \\alpha\\;\\ell_{j-1} + \\textstyle\\sum_k e^{S_{i,k} - m_j}",
          fmt::format("{}, {} → {}", c.in(0), c.in(1), c.out())};
}

StepFormula running_acc(const Context& c) {
  const Step& s = c.step;
  return {c.say(N_("O = α·O_old + Σ_j exp(S[i, j] − m)·V[{0} + j]: the weighted sum of the "
                   "values so far, not yet divided by ℓ (rows {0}–{1} of {2})"),
                s.made.col_offset, s.made.col_offset + c.trace.input(s, 0).value.n_cols - 1,
                c.input_id(3)),
          "O_j = \\alpha\\; O_{j-1} + e^{S - m_j} V_j",
          fmt::format("{}, {} → {}", c.in(0), c.in(3), c.out())};
}

StepFormula divide_rows(const Context& c) {
  const std::size_t pairs = c.step.made.inputs.size() / 2;
  if (c.step.step_id.family() == StepFamily::tiled)
    return {c.say(N_("O / ℓ of each query block's last key block, the {} blocks' rows stacked; "
                     "it must equal head{}.context"),
                  pairs, c.h),
            "C = O / \\ell", fmt::format("{} × ({}) → {}", pairs, c.in(0), c.out())};
  return {
      c.say(N_("{0} = {1} / {2}, row by row (no softmax: φ > 0 keeps every row positive)"),
            c.step.id, c.input_id(0), c.input_id(1)),
      fmt::format("{} = {} / {}", tex_id(c.step.id), tex_id(c.input_id(0)), tex_id(c.input_id(1))),
      fmt::format("{}, {} → {}", c.in(0), c.in(1), c.out())};
}

StepFormula row_diff(const Context& c) {
  return {
      c.say(N_("row i: max_j |{}[i, j] − {}[i, j]|; two orders of the same arithmetic, so "
               "at most {:g} in double precision"),
            c.input_id(0), c.input_id(1), kDecodeTolerance),
      fmt::format("\\max_j |{}_{{ij}} - {}_{{ij}}|", tex_id(c.input_id(0)), tex_id(c.input_id(1))),
      fmt::format("{}, {} → {}", c.in(0), c.in(1), c.out())};
}

StepFormula elu_plus_one(const Context& c) {
  return {c.say(N_("φ(x) = elu(x) + 1 of {}, cell by cell: x + 1 above 0, exp(x) at or below "
                   "(always positive)"),
                c.input_id(0)),
          fmt::format("\\varphi({}) = \\mathrm{{elu}}({}) + 1", tex_id(c.input_id(0)),
                      tex_id(c.input_id(0))),
          fmt::format("{} → {}", c.in(0), c.out())};
}

StepFormula matmul_tn(const Context& c) {
  return {c.say(N_("{}ᵀ·{}: d_k × d_v, whatever the number of keys"), c.input_id(0), c.input_id(1)),
          fmt::format("{}^\\top {}", tex_id(c.input_id(0)), tex_id(c.input_id(1))),
          fmt::format("({})ᵀ·({}) → {}", c.in(0), c.in(1), c.out())};
}

StepFormula normaliser(const Context& c) {
  return {c.say(N_("φ(q_i)·Σ_j φ(k_j): the sum of row i of φ(Q)φ(K)ᵀ, computed without it "
                   "({} and the column sums of {})"),
                c.input_id(0), c.input_id(1)),
          "\\varphi(q_i) \\cdot \\textstyle\\sum_j \\varphi(k_j)",
          fmt::format("{}, {} → {}", c.in(0), c.in(1), c.out())};
}

// φ(Q)·kv and similarity·V: linear attention's two orders of the same product.
StepFormula linear_product(const Context& c) {
  return {
      fmt::format("{} = {}·{}", c.step.id, c.input_id(0), c.input_id(1)),
      fmt::format("{} = {}\\, {}", tex_id(c.step.id), tex_id(c.input_id(0)), tex_id(c.input_id(1))),
      fmt::format("({})·({}) → {}", c.in(0), c.in(1), c.out())};
}

// φ(Q)·φ(K)ᵀ: linear attention's n × m similarities.
StepFormula similarity(const Context& c) {
  return {c.say(N_("{} = {}·{}ᵀ: the n × m matrix linear attention avoids (computed here only "
                   "to compare)"),
                c.step.id, c.input_id(0), c.input_id(1)),
          fmt::format("{} = {} {}^\\top", tex_id(c.step.id), tex_id(c.input_id(0)),
                      tex_id(c.input_id(1))),
          fmt::format("({})·({})ᵀ → {}", c.in(0), c.in(1), c.out())};
}

// The formula of a step of the tiles or of linear attention.
StepFormula efficient_formula(const Context& c) {
  switch (c.step.made.efficient) {
    case EfficientOp::tile_block:
      return tile_block(c);
    case EfficientOp::running_max:
      return running_max(c);
    case EfficientOp::rescale:
      return rescale(c);
    case EfficientOp::running_sum:
      return running_sum(c);
    case EfficientOp::running_acc:
      return running_acc(c);
    case EfficientOp::divide_rows:
      return divide_rows(c);
    case EfficientOp::row_diff:
      return row_diff(c);
    case EfficientOp::elu_plus_one:
      return elu_plus_one(c);
    case EfficientOp::matmul_tn:
      return matmul_tn(c);
    case EfficientOp::normaliser:
      return normaliser(c);
  }
  throw std::logic_error("efficient_formula: not an EfficientOp");
}

// A product: a projection (Q = X·W_Q + b_Q, an FFN layer, the output), a
// head's context A·V, or a decoding step's a·V_cache.
StepFormula product(const Context& c) {
  if (c.step.kind == StepKind::linear) return linear_product(c);
  if (c.step.kind == StepKind::context) return context(c);
  if (c.step.kind == StepKind::decode_context) return decode_context(c);
  return projection(c.trace, c.step);
}

}  // namespace

std::string subscript(std::size_t n) {
  static const char* digits[] = {"₀", "₁", "₂", "₃", "₄", "₅", "₆", "₇", "₈", "₉"};
  if (n < 10) return digits[n];
  return subscript(n / 10) + digits[n % 10];
}

// The encoder layer's LayerNorm and feed-forward steps.
StepFormula layer_formula(const Context& c) {
  switch (c.step.made.op) {
    case Op::row_mean:
      return row_mean(c);
    case Op::row_var:
      return row_var(c);
    case Op::normalise:
      return normalise(c);
    case Op::scale_shift:
      return scale_shift(c);
    case Op::identity:
      return c.step.kind == StepKind::residual ? no_residual(c) : layer_output(c);
    default:
      return activation(c);
  }
}

StepFormula step_formula(const Lesson& lesson, const Trace& trace, const Step& step,
                         Language lang) {
  const std::size_t h = step.head < 0 ? 0 : static_cast<std::size_t>(step.head);
  const Context c{lesson, trace, step, lang, h, subscript(h)};
  const bool decoding = step.decoding >= 0;
  switch (step.made.op) {
    case Op::given:  // the upstream gradient and the loss's target: the backward pass's
      return is_backward_step(step) ? backward_formula(trace, step, lang) : given(step, lang);
    case Op::positional:
      return positions(c);
    case Op::add_positions:
      return add_positions(c);
    case Op::matmul:
      return product(c);
    case Op::matmul_t:
      return step.kind == StepKind::linear ? similarity(c) : decoding ? decode_scores(c) : scores(c);
    case Op::slice:
      return head_slice(c);
    case Op::rows:
      return step.kind == StepKind::decode_query ? decode_query(c) : decode_cache(c);
    case Op::divide:
      return decoding ? decode_scaled(c) : scaled(c);
    case Op::mask:
      return masked(trace, step, lang);
    case Op::exp:
      return exponentials(c);
    case Op::row_sum:
      return row_sums(c);
    case Op::softmax:
      return decoding ? decode_weights(c) : weights(c);
    case Op::mean:
      return heads_mean(c);
    case Op::max:
      return heads_max(c);
    case Op::concat:
      return concat(c);
    case Op::add:
      return step.kind == StepKind::alibi_biased ? biased(c) : residual(c);
    case Op::row_mean:
    case Op::row_var:
    case Op::normalise:
    case Op::scale_shift:
    case Op::relu:
    case Op::gelu:
    case Op::identity:
      return layer_formula(c);
    case Op::max_abs_diff:
      return decode_check(c);
    case Op::rotate:
    case Op::alibi:
    case Op::row_max_abs_diff:
      return position_formula(c);
    case Op::efficient:
      return efficient_formula(c);
    case Op::backward:
      return backward_formula(trace, step, lang);
  }
  return {};
}

}  // namespace attn
