// Text renderer: numbered steps, formulas, shapes, token-labelled matrices,
// and an ANSI heatmap of the attention weights when colour is on.
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
#include "render/numbers.hpp"
#include "render/render.hpp"

namespace attn {

namespace {

std::string pad_left(const std::string& s, std::size_t width) {
  const std::size_t w = display_width(s);
  return w >= width ? s : std::string(width - w, ' ') + s;
}

std::string pad_right(const std::string& s, std::size_t width) {
  const std::size_t w = display_width(s);
  return w >= width ? s : s + std::string(width - w, ' ');
}

// A weight in [0, 1] as a 256-colour background from dark to bright, with a
// foreground that stays readable on it.
std::string heat(const std::string& cell, double weight) {
  if (!std::isfinite(weight)) return cell;
  const double w = std::clamp(weight, 0.0, 1.0);
  const int shade = 232 + static_cast<int>(std::lround(w * 23.0));
  const int fg = w > 0.5 ? 16 : 255;
  return fmt::format("\x1b[48;5;{}m\x1b[38;5;{}m{}\x1b[0m", shade, fg, cell);
}

void write_matrix(std::string& out, const Step& step, const RenderOptions& options) {
  const arma::mat& M = step.value;
  const bool summarised = should_summarise(M, options.summary);
  const auto rows = visible_indices(M.n_rows, summarised);
  const auto cols = visible_indices(M.n_cols, summarised);
  const bool shade =
      options.color && (step.kind == StepKind::weights || step.kind == StepKind::head_summary ||
                        step.kind == StepKind::decode_weights);

  // Tokens with their control characters as pictures: one line each.
  std::vector<std::string> row_labels(M.n_rows), col_labels(M.n_cols);
  std::size_t label_width = 0;
  for (const auto& r : rows)
    if (r) {
      row_labels[*r] = show_controls(step.rows[*r]);
      label_width = std::max(label_width, display_width(row_labels[*r]));
    }
  std::vector<std::size_t> width(M.n_cols, 0);
  for (const auto& c : cols) {
    if (!c) continue;
    col_labels[*c] = show_controls(step.cols[*c]);
    width[*c] = display_width(col_labels[*c]);
    for (const auto& r : rows)
      if (r) width[*c] = std::max(width[*c], format_fixed(M(*r, *c), options.precision).size());
  }

  if (summarised)
    out += fmt::format("  summary: {} · {}\n", shape_str(M.n_rows, M.n_cols),
                       format_stats(matrix_stats(M), options.precision));
  out += "  " + std::string(label_width, ' ');
  for (const auto& c : cols) out += "  " + (c ? pad_left(col_labels[*c], width[*c]) : "…");
  out += '\n';
  for (const auto& r : rows) {
    out += "  " + (r ? pad_right(row_labels[*r], label_width) : pad_right("⋮", label_width));
    for (const auto& c : cols) {
      if (!r || !c) {
        out += "  " + (c ? pad_left("⋮", width[*c]) : "…");
        continue;
      }
      const std::string cell = pad_left(format_fixed(M(*r, *c), options.precision), width[*c]);
      out += "  " + (shade ? heat(cell, M(*r, *c)) : cell);
    }
    out += '\n';
  }
}

std::string scale_text(const Lesson& lesson, const Trace& trace) {
  switch (lesson.scale_kind) {
    case ScaleKind::sqrt_dk:
      return fmt::format("√d_k = {:g}", trace.scale);
    case ScaleKind::none:
      return "none";
    case ScaleKind::number:
      return fmt::format("{:g}", trace.scale);
  }
  return "";
}

// " (-inf in f16)": the fill as a narrower format holds it, when it differs.
std::string fill_in_format(const Lesson& lesson, const Trace& trace) {
  const double held = round_to(trace.dtype, lesson.mask_fill);
  if (held == lesson.mask_fill || std::isnan(held)) return "";
  return fmt::format(" ({} in {})", format_fixed(held, 0), dtype_name(trace.dtype));
}

}  // namespace

std::string render_text(const Lesson& lesson, const Trace& trace, const RenderOptions& options) {
  const std::vector<const Step*> steps = select_steps(trace, options);
  std::string out;
  out += fmt::format("attn-trace · {}{}\n", lesson.id,
                     lesson.title.empty() ? "" : " — " + show_controls(lesson.title));
  if (!lesson.source.empty()) out += fmt::format("source: {}\n", show_controls(lesson.source));
  // Each document the source cites, by its own first heading.
  for (const SourceDocument& d : source_documents())
    if (lesson.source.find(d.file) != std::string::npos)
      out += fmt::format("  {}: {}\n", std::string_view(d.file).substr(0, 3), d.heading);
  out += fmt::format(
      "{} queries × {} keys{} · d_model {} · heads {} · d_k {} · d_v {} · scale ÷ {} · mask "
      "fill {}{} · backend {}\n",
      lesson.queries(), lesson.keys(), lesson.is_cross() ? " (cross-attention)" : "",
      lesson.X.n_cols, lesson.heads, lesson.d_k, lesson.d_v, scale_text(lesson, trace),
      format_fixed(lesson.mask_fill, 0), fill_in_format(lesson, trace), trace.backend);
  if (trace.dtype != Dtype::f64) out += fmt::format("numbers: {}\n", dtype_summary(trace.dtype));
  if (!lesson.story.empty() && options.steps.empty()) {
    out += "\n";  // its lines as written, any other control character as its picture
    for (const std::string_view line : text_lines(lesson.story)) out += show_controls(line) + "\n";
  }

  // Each step's block on its own (the summaries of big matrices are most of
  // the work), side by side, then in trace order. The first weights step says
  // why the softmax subtracts the row max.
  const auto first_weights = std::find_if(
      steps.begin(), steps.end(), [](const Step* step) { return step->kind == StepKind::weights; });
  std::vector<std::string> blocks(steps.size());
  parallel_for(steps.size(), [&](std::size_t k) {
    const Step* step = steps[k];
    std::string& block = blocks[k];
    const std::size_t number = static_cast<std::size_t>(step - trace.steps.data()) + 1;
    const std::string title = fmt::format("Step {} · {} · {}", number, step->id, step->name);
    std::string rule;
    for (std::size_t i = display_width(title); i < 72; ++i) rule += "─";
    block += fmt::format("\n── {} {}\n", title, rule);
    const StepFormula f = step_formula(lesson, trace, *step);
    block += fmt::format("  {}\n  shapes: {}\n", f.text, f.shapes);
    if (options.summary)
      block +=
          fmt::format("  FLOPs: {} ({})\n", step_flops(trace, *step), flops_formula(trace, *step));
    if (first_weights != steps.end() && *first_weights == step)
      block +=
          "  (subtracting the row max changes nothing: the factor exp(-max) cancels between\n"
          "   numerator and denominator; it only keeps exp() from overflowing)\n";
    write_matrix(block, *step, options);
    if (const CellExpansion* e = expansion_for(options, step->id))
      block += "  " + expansion_text(*e, options.precision) + "\n";
    for (const std::string& w : trace.warnings)
      if (w.starts_with(step->id + " ")) block += "  warning: " + show_controls(w) + "\n";
  });
  for (const std::string& block : blocks) out += block;
  if (options.summary)
    out += fmt::format(
        "\nFLOPs of the whole pass: {} (the steps above added up, but for heads.mean/max, which "
        "only compare the heads; a product (n×k)·(k×m), k the shared inner width, counts "
        "2·n·k·m: a multiply and an add per term)\n",
        pass_flops(trace));
  if (const std::vector<std::uint64_t> decoding = decoding_flops(trace);
      options.summary && !decoding.empty()) {
    std::vector<std::string> per_step;
    for (std::size_t t = 0; t < decoding.size(); ++t)
      per_step.push_back(
          fmt::format("t{} ({}) {}", t, show_controls(trace.at("X").rows.at(t)), decoding[t]));
    out += fmt::format(
        "FLOPs per decoding step with the KV cache (all heads; not in the pass above): {}. Step t "
        "attends over t+1 cached tokens, so its cost grows with t; the projections of the new "
        "token (x_t·W_Q, x_t·W_K, x_t·W_V) cost the same at every step and are not counted here\n",
        fmt::join(per_step, ", "));
  }
  if (!trace.warnings.empty()) {
    out += "\nwarnings:\n";
    for (const std::string& w : trace.warnings) out += "  " + show_controls(w) + "\n";
  }
  return out;
}

}  // namespace attn
