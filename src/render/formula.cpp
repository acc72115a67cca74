// Formulas and shapes of the steps, written from the dataflow of the trace.
#include "render/formula.hpp"

#include <fmt/format.h>

#include <algorithm>

#include <cmath>

#include "core/error.hpp"
#include "core/i18n.hpp"
#include "core/number_text.hpp"
#include "core/pipeline.hpp"
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
      {mask_keep, N_("keep: 0 in the keep matrix")}};
  std::string out;
  for (const auto& [bit, what] : sources) {
    arma::uword cells = 0;
    for (const arma::uword reasons : mask) cells += (reasons & bit) != 0u;
    if (cells)
      out += fmt::format("{}{}", out.empty() ? "" : translate(lang, "; "),
                         fmt::format(cells == 1 ? fmt::runtime(translate(lang, "{}, {} cell"))
                                                : fmt::runtime(translate(lang, "{}, {} cells")),
                                     translate(lang, what), cells));
  }
  return out;
}

// A step id in LaTeX math: upright, escaped ("\\mathrm{layer.ln1}").
std::string tex_id(const std::string& id) {
  return fmt::format("\\mathrm{{{}}}", tex_text(id));
}

// A projection's operand or result in LaTeX: a layer step id upright, X, W_Q as they are.
std::string tex_operand(const std::string& id) {
  return id.starts_with("layer.") ? tex_id(id) : operand_name(id);
}

StepFormula given(const Step& step, Language lang) {
  const std::string shape = dims(step.value);
  if (step.id == "X") return {std::string(translate(lang, "X: one row per token")), "X", shape};
  if (step.id == "memory")
    return {std::string(
                translate(lang, "memory: one row per source token; keys and values come from it")),
            "M", shape};
  if (step.id.starts_with("b_"))
    return {
        fmt::format(fmt::runtime(translate(lang, "{}: given in the lesson, added to every row")),
                    step.id),
        step.id, shape};
  if (step.id.starts_with("ln")) {  // ln1_gamma, ln2_beta: LayerNorm's per-feature parameters
    const bool gamma = step.id.ends_with("gamma");
    const std::string k = step.id.substr(2, 1);
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
          fmt::format("{} = {} {}{}", tex_operand(step.id), tex_operand(in[0]), in[1],
                      bias ? " + " + in[2] : ""),
          shapes};
}

// "√d_k, with √d_k = √4 = 2" and its LaTeX.
std::pair<std::string, std::string> divisor(const Lesson& lesson, double s, Language lang) {
  switch (lesson.scale_kind) {
    case ScaleKind::sqrt_dk:
      return {fmt::format(fmt::runtime(translate(lang, "√d_k, with √d_k = √{} = {}")), lesson.d_k,
                          short_number(s)),
              fmt::format("\\sqrt{{d_k}},\\ \\text{{with}}\\ \\sqrt{{d_k}} = \\sqrt{{{}}} = {}",
                          lesson.d_k, short_number(s))};
    case ScaleKind::none:
      return {std::string(translate(lang, "1 (no scaling)")), "1\\ (\\text{no scaling})"};
    case ScaleKind::number:
      break;
  }
  return {short_number(s), short_number(s)};
}

StepFormula masked(const Trace& trace, const Step& step, Language lang) {
  const std::string shapes =
      fmt::format("{} → {}", dims(trace.input(step, 0).value), dims(step.value));
  if (!arma::any(arma::vectorise(trace.mask)))
    return {std::string(translate(lang, "nothing is masked: masked = scaled")),
            "\\text{nothing masked}", shapes};
  const double fill = step.made.fill;
  const std::string text = std::isinf(fill) ? "-inf" : fmt::format("{:g}", fill);
  return {fmt::format(
              fmt::runtime(translate(lang, "masked cells := {} ({}); the others are unchanged")),
              text, mask_sources(trace.mask, lang)),
          fmt::format("\\text{{masked cells}} := {}", std::isinf(fill) ? "-\\infty" : text),
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

// The encoder layer's own steps (lesson [layer]): residual sums, LayerNorm,
// the FFN's activation, the layer's output. FFN products are projections.
StepFormula layer_formula(const Lesson& lesson, const Trace& trace, const Step& step,
                          Language lang) {
  const std::vector<std::string>& in = step.made.inputs;
  const std::string out = dims(step.value);
  const auto shape = [&](std::size_t i) { return dims(trace.at(in.at(i)).value); };
  // The LayerNorm number of layer.ln{k}...: "1" or "2".
  const std::string k = step.id.size() > 8 ? step.id.substr(8, 1) : "";
  switch (step.made.op) {
    case Op::add:
      return {fmt::format("{} = {} + {} ({})", step.id, operand_name(in[0]), in[1],
                          translate(lang, kDropout)),
              fmt::format("{} = {} + {}", tex_id(step.id), tex_id(in[0]), tex_id(in[1])),
              fmt::format("{} + {} → {}", shape(0), shape(1), out)};
    case Op::row_mean:
      return {
          fmt::format(
              fmt::runtime(translate(
                  lang, "μ{} = Σ_j x[i, j] / d: the mean of each row of {} over its {} features")),
              subscript(std::stoul(k)), in[0], trace.at(in[0]).value.n_cols),
          fmt::format("\\mu_{{{}}} = \\tfrac1d \\textstyle\\sum_j {}_{{ij}}", k, tex_id(in[0])),
          fmt::format("{} → {}", shape(0), out)};
    case Op::row_var:
      return {
          fmt::format(fmt::runtime(translate(
                          lang,
                          "σ²{0} = Σ_j (x[i, j] − μ{0})² / d over each row of {1} (biased: divided "
                          "by d, not d − 1, as PyTorch)")),
                      subscript(std::stoul(k)), in[0]),
          fmt::format(
              "\\sigma^2_{{{0}}} = \\tfrac1d \\textstyle\\sum_j ({1}_{{ij}} - \\mu_{{{0}}})^2", k,
              tex_id(in[0])),
          fmt::format("{}, {} → {}", shape(0), shape(1), out)};
    case Op::normalise:
      return {
          fmt::format(fmt::runtime(translate(
                          lang, "x̂ = (x − μ{0}) / √(σ²{0} + ε), ε = {1:g}, row by row (x = {2})")),
                      subscript(std::stoul(k)), step.made.eps, in[0]),
          fmt::format("\\hat x = ({2} - \\mu_{{{0}}}) / \\sqrt{{\\sigma^2_{{{0}}} + \\varepsilon}},"
                      "\\ \\varepsilon = {1:g}",
                      k, step.made.eps, tex_id(in[0])),
          fmt::format("{}, {}, {} → {}", shape(0), shape(1), shape(2), out)};
    case Op::scale_shift:
      return {
          fmt::format(fmt::runtime(translate(
                          lang, "{0} = γ ⊙ x̂ + β: column j of {1} times {2}[j], plus {3}[j]")),
                      step.id, in[0], in[1], in[2]),
          fmt::format("{} = \\gamma_{{{}}} \\odot \\hat x + \\beta_{{{}}}", tex_id(step.id), k, k),
          fmt::format("{} ⊙ {} + {} → {}", shape(1), shape(0), shape(2), out)};
    case Op::relu:
    case Op::gelu: {
      const bool gelu = step.made.op == Op::gelu;
      return {
          fmt::format(
              fmt::runtime(translate(
                  lang, "{} = {}, cell by cell; then dropout, which is the identity at inference")),
              step.id,
              gelu ? fmt::format(
                         fmt::runtime(translate(
                             lang, "GELU(h) = h·Φ(h) = h·(1 + erf(h/√2))/2, exact, with h = {}")),
                         in[0])
                   : fmt::format("ReLU({0}) = max(0, {0})", in[0])),
          gelu ? fmt::format("{} = {} \\cdot \\Phi({})", tex_id(step.id), tex_id(in[0]),
                             tex_id(in[0]))
               : fmt::format("{} = \\max(0, {})", tex_id(step.id), tex_id(in[0])),
          fmt::format("{} → {}", shape(0), out)};
    }
    case Op::identity:
      return {fmt::format(
                  fmt::runtime(translate(lang, "{} = {}: the encoder layer's result ({}, {})")),
                  step.id, in[0],
                  lesson.layer && lesson.layer->norm == NormPlacement::pre ? "Pre-LN" : "Post-LN",
                  lesson.layer && lesson.layer->activation == Activation::gelu ? "GELU" : "ReLU"),
              fmt::format("{} = {}", tex_id(step.id), tex_id(in[0])),
              fmt::format("{} → {}", shape(0), out)};
    default:
      return {};
  }
}

// Decoding token t with a KV cache (lesson [decode]): t is read from the
// shapes (the cache of step t holds t + 1 tokens), h from the step.
StepFormula decode_formula(const Lesson& lesson, const Trace& trace, const Step& step,
                           std::size_t h, Language lang) {
  const std::string sub = subscript(h);
  const std::string out = dims(step.value);
  const auto in = [&](std::size_t i) { return dims(trace.input(step, i).value); };
  switch (step.kind) {
    case StepKind::decode_query: {
      const std::size_t t = step.made.offset;
      return {
          fmt::format(fmt::runtime(translate(
                          lang,
                          "q = Q{0}[{1}, :]: the query of token {1} alone; step {1} needs no other "
                          "query")),
                      sub, t),
          fmt::format("q_{{{0}}} = Q_{{{1}}}[{0},:]", t, h), fmt::format("({}) → {}", in(0), out)};
    }
    case StepKind::decode_cache: {
      const std::size_t t = step.value.n_rows - 1;
      const bool keys = step.made.inputs.at(0) == head_step_id(h, HeadStep::K);
      const char* M = keys ? "K" : "V";
      const std::string grown =
          t == 0 ? std::string(translate(lang, keys ? N_("the cache starts with token 0's key")
                                                    : N_("the cache starts with token 0's value")))
                 : fmt::format(
                       fmt::runtime(translate(
                           lang, "{} kept from earlier steps, row {} (x_{}·W_{}{}) added now")),
                       t == 1 ? std::string(translate(lang, "row 0"))
                              : fmt::format(fmt::runtime(translate(lang, "rows 0..{}")), t - 1),
                       t, t, M, (keys ? lesson.b_K : lesson.b_V) ? fmt::format(" + b_{}", M) : "");
      return {fmt::format("{}_cache = {}{}[0:{}, :]: {}", M, M, sub, t + 1, grown),
              fmt::format("{0}^{{\\mathrm{{cache}}}}_{{{1}}} = {0}_{{{2}}}[0{{:}}{3},:]", M, t, h,
                          t + 1),
              fmt::format("({}) → {}", in(0), out)};
    }
    case StepKind::decode_scores:
      return {
          std::string(translate(
              lang,
              "s = q·K_cacheᵀ: the new query against every cached key; no later key exists yet, "
              "so nothing is masked")),
          fmt::format("s = q\\, (K^{{\\mathrm{{cache}}}}_{{{}}})^\\top", step.value.n_cols - 1),
          fmt::format("({})·({})ᵀ → {}", in(0), in(1), out)};
    case StepKind::decode_scaled: {
      const auto [text, latex] = divisor(lesson, step.made.divisor, lang);
      return {fmt::format("s / {}", text), fmt::format("s / {}", latex),
              fmt::format("{} / scalar → {}", in(0), out)};
    }
    case StepKind::decode_weights:
      return {std::string(translate(lang,
                                    "a = softmax(s) over the cached keys (computed stably, with "
                                    "the row max subtracted)")),
              "a = \\mathrm{softmax}(s)",
              fmt::format(fmt::runtime(translate(lang, "{} → {}, sums to 1")), in(0), out)};
    case StepKind::decode_context:
      return {fmt::format(fmt::runtime(translate(
                              lang, "c = a·V_cache: must equal row {} of head{}.context")),
                          trace.input(step, 0).value.n_cols - 1, h),
              "c = a\\, V^{\\mathrm{cache}}", fmt::format("({})·({}) → {}", in(0), in(1), out)};
    case StepKind::decode_check:
      return {fmt::format(
                  fmt::runtime(translate(
                      lang,
                      "row t: max_j |c_t[j] − C{}[t, j]|, decoding step t's context against "
                      "row t of head{}.context; at most {:g} proves the cache changes nothing")),
                  sub, h, kDecodeTolerance),
              fmt::format("\\max_j |c_t[j] - C_{{{}}}[t,j]|", h),
              fmt::format("{} × (1×{}), ({}) → {}", step.made.inputs.size() - 1,
                          trace.input(step, 0).value.n_cols, in(0), out)};
    default:
      return {};
  }
}

}  // namespace

std::string subscript(std::size_t n) {
  static const char* digits[] = {"₀", "₁", "₂", "₃", "₄", "₅", "₆", "₇", "₈", "₉"};
  if (n < 10) return digits[n];
  return subscript(n / 10) + digits[n % 10];
}

StepFormula step_formula(const Lesson& lesson, const Trace& trace, const Step& step,
                         Language lang) {
  const std::size_t h = step.head < 0 ? 0 : static_cast<std::size_t>(step.head);
  const std::string sub = subscript(h);
  const auto in = [&](std::size_t i) { return dims(trace.input(step, i).value); };
  switch (step.kind) {
    case StepKind::input:
      return given(step, lang);
    case StepKind::positional:
      if (step.made.op == Op::positional)
        return {"PE(pos,2i) = sin(pos/10000^(2i/d)), PE(pos,2i+1) = cos(pos/10000^(2i/d))",
                R"(PE_{pos,2i} = \sin(pos/10000^{2i/d}),\ PE_{pos,2i+1} = \cos(pos/10000^{2i/d}))",
                dims(step.value)};
      if (step.id == "X+PE")
        return {"X + PE", "X + PE", fmt::format("{} + {} → {}", in(0), in(1), dims(step.value))};
      return {"M + PE", "M + PE", dims(step.value)};
    case StepKind::projection:
    case StepKind::output:
      return projection(trace, step);
    case StepKind::ffn:
      if (step.made.op == Op::matmul) return projection(trace, step);
      return layer_formula(lesson, trace, step, lang);
    case StepKind::residual:
    case StepKind::norm:
    case StepKind::layer_output:
      return layer_formula(lesson, trace, step, lang);
    case StepKind::head_slice: {
      const std::string& of = step.made.inputs.at(0);
      const std::size_t lo = step.made.offset, hi = lo + step.value.n_cols;
      return {fmt::format("{}{} = {}[:, {}:{}]", of, sub, of, lo, hi),
              fmt::format("{}_{{{}}} = {}_{{:,\\,{}:{}}}", of, h, of, lo, hi),
              fmt::format("({}) → {}", in(0), dims(step.value))};
    }
    case StepKind::scores:
      return {fmt::format("S{0} = Q{0}·K{0}ᵀ", sub),
              fmt::format("S_{{{0}}} = Q_{{{0}}} K_{{{0}}}^\\top", h),
              fmt::format("({})·({})ᵀ → {}", in(0), in(1), dims(step.value))};
    case StepKind::scaled: {
      const auto [text, latex] = divisor(lesson, step.made.divisor, lang);
      return {fmt::format("S{} / {}", sub, text), fmt::format("S_{{{}}} / {}", h, latex),
              fmt::format("{} / scalar → {}", in(0), dims(step.value))};
    }
    case StepKind::masked:
      return masked(trace, step, lang);
    case StepKind::exp: {
      // The note on -inf only where a masked score is -inf.
      const arma::mat& masked = trace.at(step.made.inputs.at(0)).value;
      const bool minus_inf = std::any_of(masked.begin(), masked.end(),
                                         [](double x) { return x == -arma::datum::inf; });
      return {fmt::format(fmt::runtime(translate(lang, "E{} = exp(masked), cell by cell{}")), sub,
                          minus_inf ? " (exp(-inf) = 0)" : ""),
              fmt::format("E_{{{}}} = \\exp(\\text{{masked}})", h),
              fmt::format("{} → {}", in(0), dims(step.value))};
    }
    case StepKind::row_sum:
      return {fmt::format("Σ{0} = Σ_j E{0}[i, j]", sub),
              fmt::format("\\Sigma_{{{0}}} = \\textstyle\\sum_j E_{{{0}}}[i,j]", h),
              fmt::format("{} → {}", in(0), dims(step.value))};
    case StepKind::weights:
      return {fmt::format(fmt::runtime(translate(
                              lang,
                              "A{0} = softmax(masked) = E{0} / Σ{0}, row by row (computed stably, "
                              "with the row max subtracted)")),
                          sub),
              fmt::format("A_{{{0}}} = \\mathrm{{softmax}}(\\text{{masked}}) = E_{{{0}}} / "
                          "\\Sigma_{{{0}}}",
                          h),
              fmt::format(fmt::runtime(translate(lang, "{} → {}, each row sums to 1")), in(0),
                          dims(step.value))};
    case StepKind::context:
      return {fmt::format("C{0} = A{0}·V{0}", sub),
              fmt::format("C_{{{0}}} = A_{{{0}}} V_{{{0}}}", h),
              fmt::format("({})·({}) → {}", in(0), in(1), dims(step.value))};
    case StepKind::head_summary: {
      const std::string shapes =
          fmt::format("{} × ({}) → {}", step.made.inputs.size(), in(0), in(0));
      if (step.made.op == Op::mean)
        return {fmt::format(fmt::runtime(translate(
                                lang, "mean of {}, cell by cell (each row still sums to 1)")),
                            per_head(trace, step, "A", ", ")),
                "\\frac{1}{h}\\textstyle\\sum_h A_h", shapes};
      return {fmt::format(fmt::runtime(
                              translate(lang, "max of {}, cell by cell (rows no longer sum to 1)")),
                          per_head(trace, step, "A", ", ")),
              "\\max_h A_h", shapes};
    }
    case StepKind::decode_query:
    case StepKind::decode_cache:
    case StepKind::decode_scores:
    case StepKind::decode_scaled:
    case StepKind::decode_weights:
    case StepKind::decode_context:
    case StepKind::decode_check:
      return decode_formula(lesson, trace, step, h, lang);
    case StepKind::concat: {
      std::string parts_tex;
      for (const std::string& id : step.made.inputs)
        parts_tex +=
            fmt::format("{}C_{{{}}}", parts_tex.empty() ? "" : " \\mid ", trace.at(id).head);
      return {fmt::format("concat = [{}]", per_head(trace, step, "C", " | ")),
              fmt::format("\\mathrm{{concat}} = [{}]", parts_tex),
              fmt::format("{} × ({}) → {}", step.made.inputs.size(), in(0), dims(step.value))};
    }
  }
  return {};
}

}  // namespace attn
