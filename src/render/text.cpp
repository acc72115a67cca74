// Text renderer: numbered steps, formulas, shapes, token-labelled matrices
// (render/text_matrix.cpp), every line within RenderOptions::width.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "core/costs.hpp"
#include "core/dtype.hpp"
#include "core/error.hpp"
#include "core/lesson_library.hpp"
#include "core/number_text.hpp"
#include "core/parallel.hpp"
#include "core/pipeline.hpp"
#include "render/escape.hpp"
#include "render/formula.hpp"
#include "render/heatmap.hpp"
#include "render/numbers.hpp"
#include "render/render.hpp"
#include "render/text_matrix.hpp"

namespace attn {

namespace {

std::string scale_text(const Lesson& lesson, const Trace& trace) {
  switch (lesson.scale_kind) {
    case ScaleKind::sqrt_dk:
      return fmt::format("√d_k = {:g}", trace.scale);
    case ScaleKind::none:
      return std::string(tr("none"));
    case ScaleKind::number:
      return fmt::format("{:g}", trace.scale);
  }
  return "";
}

// " (-inf in f16)": the fill as a narrower format holds it, when it differs.
std::string fill_in_format(const Lesson& lesson, const Trace& trace) {
  const double held = round_to(trace.dtype, lesson.mask_fill);
  if (held == lesson.mask_fill || std::isnan(held)) return "";
  return tr_format(" ({} in {})", format_fixed(held, 0), dtype_name(trace.dtype));
}

// The heading: the lesson, its source and the documents it cites, its sizes
// and numbers, and its story (when the whole trace is shown as numbers).
std::string text_header(const Lesson& lesson, const Trace& trace, const RenderOptions& options,
                        bool heatmap) {
  const std::size_t W = options.width;
  const auto para = [W](const std::string& text) { return wrap_text(text, W, "", "  "); };
  std::string out;
  const std::string& title = lesson.title_for(language());
  out += para(fmt::format("attn-trace · {}{}", lesson.id,
                          title.empty() ? "" : " — " + show_controls(title)));
  if (!lesson.source.empty())
    out += para(tr_format("source: {}", show_controls(source_text(lesson.source, language()))));
  // Each document the source cites, by its own first heading.
  for (const SourceDocument& d : source_documents())
    if (lesson.source.find(d.file) != std::string::npos)
      out += wrap_text(fmt::format("{}: {}", std::string_view(d.file).substr(0, 3), d.heading), W,
                       "  ", "    ");
  out += para(tr_format(
      "{} queries × {} keys{} · d_model {} · heads {} · d_k {} · d_v {} · scale ÷ {} · mask "
      "fill {}{} · backend {}",
      lesson.queries(), lesson.keys(), lesson.is_cross() ? tr(" (cross-attention)") : "",
      lesson.X.n_cols, lesson.heads, lesson.d_k, lesson.d_v, scale_text(lesson, trace),
      format_fixed(lesson.mask_fill, 0), fill_in_format(lesson, trace), trace.backend));
  if (trace.dtype != Dtype::f64) out += para(tr_format("numbers: {}", dtype_summary(trace.dtype)));
  if (lesson.kv_head_count() != lesson.heads)
    out += para(tr_format("K/V heads: {} (query head h reads K/V head ⌊h / {}⌋)", lesson.kv_head_count(),
                          lesson.heads / lesson.kv_head_count()));
  if (!trace.host_steps.empty())
    out += para(tr_format("computed on the host, not by backend {}: {}", trace.backend,
                          fmt::join(trace.host_steps, ", ")));
  const std::string& story = lesson.story_for(language());
  if (!story.empty() && options.steps.empty() && !heatmap) {
    // Its lines as written (wrapped where wider than the width), any other
    // control character as its picture.
    out += "\n";
    for (const std::string_view line : text_lines(story))
      out += wrap_text(show_controls(line), W, "", "");
  }
  return out;
}

// One step's block: its title rule, formula, shapes (and FLOPs), its numbers
// or heatmap, the cell --expand asks for, and the warnings about it.
// `why_max` adds why the softmax subtracts the row max.
std::string step_block(const Lesson& lesson, const Trace& trace, const Step& step,
                       const RenderOptions& options, bool why_max) {
  const std::size_t W = options.width;
  const auto indented = [W](const std::string& text) { return wrap_text(text, W, "  ", "    "); };
  std::string block;
  const std::size_t number = static_cast<std::size_t>(&step - trace.steps.data()) + 1;
  const std::string title =
      tr_format("Step {} · {} · {}", number, step.id, step_display_name(step));
  // "── title ────": the rule fills the line to 76 columns or the width.
  const std::size_t rule_end = std::min<std::size_t>(W, 76);
  if (display_width(title) + 4 <= rule_end) {
    std::string rule;
    for (std::size_t i = display_width(title) + 4; i < rule_end; ++i) rule += "─";
    block += fmt::format("\n── {} {}\n", title, rule);
  } else {
    block += "\n" + wrap_text(title, W, "── ", "   ");
  }
  const StepFormula f = step_formula(lesson, trace, step, language());
  block += indented(f.text) + indented(tr_format("shapes: {}", f.shapes));
  if (options.summary == Summary::on)
    block +=
        indented(tr_format("FLOPs: {} ({})", step_flops(trace, step), flops_formula(trace, step)));
  if (why_max)
    block += indented(
        std::string(tr("(subtracting the row max changes nothing: the factor exp(-max) cancels "
                       "between numerator and denominator; it only keeps exp() from "
                       "overflowing)")));
  if (options.view == TextView::heatmap)
    write_heatmap(block, trace, step, options);
  else
    write_numbers(block, trace, step, options);
  if (const CellExpansion* e = expansion_for(options, step.id))
    block += indented(expansion_text(*e, options.precision));
  for (const Warning& w : trace.warnings)
    if (w.step == step.step_id)
      block += indented(tr_format("warning: {}", show_controls(w.text.shown())));
  return block;
}

// The end: the FLOPs of the pass and of each decoding step (with --summary),
// then every warning.
std::string text_footer(const Trace& trace, const RenderOptions& options) {
  const std::size_t W = options.width;
  const auto para = [W](const std::string& text) { return wrap_text(text, W, "", "  "); };
  std::string out;
  if (options.summary == Summary::on)
    out += "\n" + para(tr_format(
                      "FLOPs of the whole pass: {} (the steps above added up, but for "
                      "heads.mean/max, which only compare the heads; a product (n×k)·(k×m), k the "
                      "shared inner width, counts 2·n·k·m: a multiply and an add per term)",
                      pass_flops(trace)));
  if (const std::uint64_t back = backward_pass_flops(trace); options.summary == Summary::on && back)
    out += para(tr_format("FLOPs of the backward pass: {}, {:.2f} times the forward pass's (each "
                          "product of the forward pass has two products on the way back, one per "
                          "factor)",
                          back, static_cast<double>(back) / static_cast<double>(pass_flops(trace))));
  if (const std::vector<std::uint64_t> decoding = decoding_flops(trace);
      options.summary == Summary::on && !decoding.empty()) {
    std::vector<std::string> per_step;
    for (std::size_t t = 0; t < decoding.size(); ++t)
      per_step.push_back(
          fmt::format("t{} ({}) {}", t, show_controls(trace.at("X").rows.at(t)), decoding[t]));
    out += para(tr_format(
        "FLOPs per decoding step with the KV cache (all heads; not in the pass above): {}. Step t "
        "attends over t+1 cached tokens, so its cost grows with t; the projections of the new "
        "token (x_t·W_Q, x_t·W_K, x_t·W_V) cost the same at every step and are not counted here",
        fmt::format("{}", fmt::join(per_step, ", "))));
  }
  if (!trace.warnings.empty()) {
    out += "\n" + std::string(tr("warnings:")) + "\n";
    for (const std::string& w : shown_warnings(trace))
      out += wrap_text(show_controls(w), W, "  ", "    ");
  }
  return out;
}

}  // namespace

std::string render_text(const Lesson& lesson, const Trace& trace, const RenderOptions& options) {
  const bool heatmap = options.view == TextView::heatmap;
  std::vector<const Step*> steps = select_steps(trace, options);
  // The heatmap view draws the attention weights unless --step names others.
  if (heatmap && options.steps.empty())
    std::erase_if(steps, [](const Step* step) { return !is_any_weights(*step); });

  std::string out = text_header(lesson, trace, options, heatmap);
  if (heatmap && steps.empty())
    out += "\n" + wrap_text(std::string(tr("This lesson has no attention weights to draw; name "
                                           "the steps to draw with --step.")),
                            options.width, "", "  ");

  // Each step's block on its own (the summaries of big matrices are most of
  // the work), side by side, then in trace order. The first weights step says
  // why the softmax subtracts the row max.
  const auto first_weights = std::find_if(
      steps.begin(), steps.end(), [](const Step* step) { return step->kind == StepKind::weights; });
  std::vector<std::string> blocks(steps.size());
  parallel_for(steps.size(), [&](std::size_t k) {
    const bool why_max = first_weights != steps.end() && *first_weights == steps[k] && !heatmap;
    blocks[k] = step_block(lesson, trace, *steps[k], options, why_max);
  });
  for (const std::string& block : blocks) out += block;
  return out + text_footer(trace, options);
}

}  // namespace attn
