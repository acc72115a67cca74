// Markdown renderer: one table per step, for a learner's notes.
#include <fmt/format.h>

#include "core/error.hpp"
#include "core/i18n.hpp"
#include "core/lesson_library.hpp"
#include "core/number_text.hpp"
#include "render/escape.hpp"
#include "render/formula.hpp"
#include "render/numbers.hpp"
#include "render/render.hpp"

namespace attn {

std::string render_markdown(const Lesson& lesson, const Trace& trace,
                            const RenderOptions& options) {
  const std::vector<const Step*> steps = select_steps(trace, options);
  const std::string& title = lesson.title_for(language());
  std::string out =
      fmt::format("# {}{}\n\n", md_text(lesson.id), title.empty() ? "" : ": " + md_text(title));
  if (!lesson.source.empty())
    // TRANSLATORS: Markdown; in Chinese "*来源*：{}" (an emphasis closed before "：").
    out += tr_format("*Source:* {}", md_text(source_text(lesson.source, language()))) + "\n\n";
  if (trace.dtype != Dtype::f64)
    out += tr_format("*Numbers:* {}", md_text(std::string(dtype_summary(trace.dtype)))) + "\n\n";
  const std::string& story = lesson.story_for(language());
  if (!story.empty() && options.steps.empty()) {
    // A quote, line by line; a blank line of the story is a paragraph break in it.
    std::vector<std::string_view> lines = text_lines(story);
    while (!lines.empty() && lines.back().find_first_not_of(" \t") == std::string_view::npos)
      lines.pop_back();
    for (const std::string_view line : lines) {
      const bool blank = line.find_first_not_of(" \t") == std::string_view::npos;
      out += blank ? ">\n" : "> " + md_text(line) + "\n";
    }
    if (!lines.empty()) out += "\n";
  }
  for (const Step* step : steps) {
    const std::size_t number = static_cast<std::size_t>(step - trace.steps.data()) + 1;
    const arma::mat& M = step->value;
    const StepFormula f = step_formula(lesson, trace, *step, language());
    out += fmt::format("## {}. `{}` — {}\n\n`{}` · {}\n\n", number, step->id,
                       step_display_name(*step), f.text, tr_format("shapes: {}", f.shapes));
    const bool summarised = should_summarise(M, options.summary);
    if (summarised)
      out += tr_format("Summary: {} · {}", shape_str(M.n_rows, M.n_cols),
                       format_stats(matrix_stats(M), options.precision)) +
             "\n\n";
    const auto rows = visible_indices(M.n_rows, summarised);
    const auto cols = visible_indices(M.n_cols, summarised);
    out += "| |";
    for (const auto& c : cols) out += fmt::format(" {} |", c ? md_text(step->cols[*c]) : "…");
    out += "\n|---|";
    for (std::size_t i = 0; i < cols.size(); ++i) out += "---:|";
    out += "\n";
    for (const auto& r : rows) {
      out += fmt::format("| {} |", r ? fmt::format("**{}**", md_text(step->rows[*r])) : "⋮");
      for (const auto& c : cols)
        out += fmt::format(" {} |", r && c ? format_fixed(M(*r, *c), options.precision) : "⋮");
      out += "\n";
    }
    out += "\n";
    if (const CellExpansion* e = expansion_for(options, step->id))
      out += expansion_markdown(*e, options.precision) + "\n\n";
    for (const Warning& w : trace.warnings)
      if (w.step == step->step_id)
        out += "> " + tr_format("**Warning:** {}", md_text(w.text.shown())) + "\n\n";
  }
  return out;
}

}  // namespace attn
