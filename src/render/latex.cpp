// LaTeX renderer: a fragment (needs amsmath) with one bmatrix per step and
// its formula. Wide steps need \setcounter{MaxMatrixCols}{...} in the preamble.
#include <fmt/format.h>

#include <cmath>

#include "core/i18n.hpp"
#include "core/lesson_library.hpp"
#include "render/escape.hpp"
#include "render/formula.hpp"
#include "render/numbers.hpp"
#include "render/render.hpp"

namespace attn {

namespace {

// The length of a Chinese character or full-width punctuation at s[i] (from
// U+2E80 on: three UTF-8 bytes, lead 0xE2 with 0xBA.. or above), else 0.
std::size_t cjk_at(const std::string& s, std::size_t i) {
  const auto byte = [&](std::size_t k) { return static_cast<unsigned char>(s[k]); };
  if (i + 2 >= s.size() || byte(i) < 0xE2 || byte(i) > 0xEF) return 0;
  return byte(i) > 0xE2 || byte(i + 1) >= 0xBA ? 3 : 0;
}

// The Unicode of a shapes line ("(4×4)·(4×4)ᵀ → 4×4") in math mode; its
// Chinese words (under --lang zh) in \text{}, where the text font has them.
std::string tex_shapes(const std::string& s) {
  static const std::pair<const char*, const char*> map[] = {{"×", "\\times "}, {"·", "\\cdot "},
                                                            {"ᵀ", "^\\top "},  {"→", "\\to "},
                                                            {"…", "\\dots "},  {"⊙", "\\odot "}};
  std::string out;
  for (std::size_t i = 0; i < s.size();) {
    if (cjk_at(s, i)) {
      std::size_t end = i;
      while (const std::size_t n = cjk_at(s, end)) end += n;
      out += "\\text{" + s.substr(i, end - i) + "}";
      i = end;
      continue;
    }
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

// What a LaTeX document needs around the fragment. Chinese needs LuaLaTeX and
// a CJK font, as the exercise sheets set it up (teach/sheet_latex.cpp).
std::string fragment_header(const Lesson& lesson) {
  std::string out = fmt::format(
      "% attn-trace {}: {}\n% {}\n", lesson.id,
      tr_format("a LaTeX fragment; needs {}", "\\usepackage{amsmath}"),
      tr_format("(and {} for matrices wider than 10 columns).", "\\setcounter{MaxMatrixCols}{20}"));
  if (language() == Language::zh)
    out += fmt::format(
        "% {}\n% \\usepackage{{fontspec}}\n"
        "% \\directlua{{luaotfload.add_fallback(\"attnfallback\", {{\"Noto Serif CJK "
        "SC:mode=node;\"}})}}\n"
        "% \\setmainfont{{Latin Modern Roman}}[RawFeature={{fallback=attnfallback}}]\n",
        tr("With Chinese in it: compile with LuaLaTeX, with these lines in the preamble "
           "(fonts-noto-cjk):"));
  return out;
}

}  // namespace

std::string render_latex(const Lesson& lesson, const Trace& trace, const RenderOptions& options) {
  const std::vector<const Step*> steps = select_steps(trace, options);
  const Language lang = language();
  const auto tex = [lang](std::string_view s) { return tex_text_in(lang, s); };
  const std::string& title = lesson.title_for(lang);
  std::string out = fragment_header(lesson) +
                    fmt::format("\\section*{{{}}}\n", tex(title.empty() ? lesson.id : title));
  if (!lesson.source.empty())
    out += fmt::format("\\noindent {}\n\n",
                       tex(tr_format("Source: {}", source_text(lesson.source, lang))));
  if (trace.dtype != Dtype::f64)
    out +=
        fmt::format("\\noindent {}\n\n", tex(tr_format("Numbers: {}", dtype_summary(trace.dtype))));
  for (const Step* step : steps) {
    const std::size_t number = static_cast<std::size_t>(step - trace.steps.data()) + 1;
    const arma::mat& M = step->value;
    const bool summarised = should_summarise(M, options.summary);
    const auto rows = visible_indices(M.n_rows, summarised);
    const auto cols = visible_indices(M.n_cols, summarised);
    std::string row_labels, col_labels;
    for (const auto& r : rows)
      row_labels += (row_labels.empty() ? "" : ", ") + (r ? tex(step->rows[*r]) : "\\dots");
    for (const auto& c : cols)
      col_labels += (col_labels.empty() ? "" : ", ") + (c ? tex(step->cols[*c]) : "\\dots");
    out += fmt::format("\n\\subsection*{{{}. \\texttt{{{}}}: {}}}\n", number, tex(step->id),
                       tex(step_display_name(*step)));
    const StepFormula f = step_formula(lesson, trace, *step, lang);
    // Labels are escaped already: the sentence around them is not escaped again.
    out += fmt::format("${}$, \\quad ${}$\\\\\n{}\n", f.latex, tex_shapes(f.shapes),
                       tr_format("Rows: {}. Columns: {}.", row_labels, col_labels));
    if (summarised)
      out += fmt::format(
          "\\\\ {}\n",
          tex(tr_format("Summary: {}.", format_stats(matrix_stats(M), options.precision))));
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
        out += fmt::format("\\noindent{{\\small {}}}\\par\n", tex(tr(e->note)));
    }
    for (const Warning& w : trace.warnings)
      if (w.step == step->step_id)
        out += fmt::format("\\textbf{{{}}} {}\n\n", tex(tr("Warning:")), tex(w.text.shown()));
  }
  return out;
}

}  // namespace attn
