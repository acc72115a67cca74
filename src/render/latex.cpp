// LaTeX renderer: a fragment (needs amsmath) with one bmatrix per step and
// its formula. Wide steps need \setcounter{MaxMatrixCols}{...} in the preamble.
#include <fmt/format.h>

#include <cmath>

#include "render/escape.hpp"
#include "render/formula.hpp"
#include "render/numbers.hpp"
#include "render/render.hpp"

namespace attn {

namespace {

// The Unicode of a shapes line ("(4×4)·(4×4)ᵀ → 4×4") in math mode.
std::string tex_shapes(const std::string& s) {
  static const std::pair<const char*, const char*> map[] = {{"×", "\\times "}, {"·", "\\cdot "},
                                                            {"ᵀ", "^\\top "},  {"→", "\\to "},
                                                            {"…", "\\dots "},  {"⊙", "\\odot "}};
  std::string out;
  for (std::size_t i = 0; i < s.size();) {
    bool replaced = false;
    for (const auto& [from, to] : map) {
      const std::string_view f(from);
      if (s.compare(i, f.size(), f) == 0) {
        out += to;
        i += f.size();
        replaced = true;
        break;
      }
    }
    if (replaced) continue;
    const char c = s[i++];
    if (c == ',')
      out += ",\\ ";
    else if (c == ' ')
      out += "\\ ";
    else
      out += c;
  }
  return out;
}

std::string tex_number(double v, int precision) {
  if (std::isnan(v)) return "\\mathrm{NaN}";
  if (std::isinf(v)) return v < 0 ? "-\\infty" : "\\infty";
  return format_fixed(v, precision);
}

}  // namespace

std::string render_latex(const Lesson& lesson, const Trace& trace, const RenderOptions& options) {
  const std::vector<const Step*> steps = select_steps(trace, options);
  std::string out = fmt::format(
      "% attn-trace {}: a LaTeX fragment; needs \\usepackage{{amsmath}}\n"
      "% (and \\setcounter{{MaxMatrixCols}}{{20}} for matrices wider than 10 columns).\n"
      "\\section*{{{}}}\n",
      lesson.id, tex_text(lesson.title.empty() ? lesson.id : lesson.title));
  if (!lesson.source.empty())
    out += fmt::format("\\noindent Source: {}\n\n", tex_text(lesson.source));
  if (trace.dtype != Dtype::f64)
    out += fmt::format("\\noindent Numbers: {}\n\n",
                       tex_text(std::string(dtype_summary(trace.dtype))));
  for (const Step* step : steps) {
    const std::size_t number = static_cast<std::size_t>(step - trace.steps.data()) + 1;
    const arma::mat& M = step->value;
    const bool summarised = should_summarise(M, options.summary);
    const auto rows = visible_indices(M.n_rows, summarised);
    const auto cols = visible_indices(M.n_cols, summarised);
    std::string row_labels, col_labels;
    for (const auto& r : rows)
      row_labels += (row_labels.empty() ? "" : ", ") + (r ? tex_text(step->rows[*r]) : "\\dots");
    for (const auto& c : cols)
      col_labels += (col_labels.empty() ? "" : ", ") + (c ? tex_text(step->cols[*c]) : "\\dots");
    out += fmt::format("\n\\subsection*{{{}. \\texttt{{{}}}: {}}}\n", number, tex_text(step->id),
                       tex_text(step->name));
    const StepFormula f = step_formula(lesson, trace, *step);
    out += fmt::format("${}$, \\quad ${}$\\\\\nRows: {}. Columns: {}.\n", f.latex,
                       tex_shapes(f.shapes), row_labels, col_labels);
    if (summarised)
      out += fmt::format("\\\\ Summary: {}.\n",
                         tex_text(format_stats(matrix_stats(M), options.precision)));
    out += "\\[\n\\begin{bmatrix}\n";
    for (const auto& r : rows) {
      std::string line;
      for (const auto& c : cols) {
        if (!line.empty()) line += " & ";
        line += (r && c) ? tex_number(M(*r, *c), options.precision)
                         : (!r && !c ? std::string("\\ddots")
                            : !r     ? std::string("\\vdots")
                                     : std::string("\\cdots"));
      }
      out += line + " \\\\\n";
    }
    out += "\\end{bmatrix}\n\\]\n";
    if (const CellExpansion* e = expansion_for(options, step->id)) {
      // Inline math, so that a long sum breaks across lines instead of running off the page.
      out += fmt::format("{{\\raggedright\\noindent ${}$\\par}}\n",
                         expansion_latex(*e, options.precision));
      if (e->kind == ExpansionKind::softmax && !e->note.empty())
        out += fmt::format("\\noindent{{\\small {}}}\\par\n", tex_text(e->note));
    }
    for (const Warning& w : trace.warnings)
      if (w.step == step->step_id)
        out += "\\textbf{Warning:} " + tex_text(w.text.in(Language::en)) + "\n\n";
  }
  return out;
}

}  // namespace attn
