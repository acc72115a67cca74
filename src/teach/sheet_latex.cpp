// LaTeX sheets and keys: one complete document (article, amsmath, array,
// geometry, graphicx, all in texlive-latex-base) that compiles with pdflatex, a page per student.
#include <fmt/format.h>

#include <cmath>
#include <string_view>

#include "render/escape.hpp"
#include "render/numbers.hpp"
#include "render/render.hpp"
#include "teach/exercise_sheets.hpp"

namespace attn {

namespace {

std::string tex_number(double v, int decimals) {
  if (std::isnan(v)) return "$\\mathrm{NaN}$";
  if (std::isinf(v)) return v < 0 ? "$-\\infty$" : "$\\infty$";
  return fmt::format("${}$", format_fixed(v, decimals));
}

std::string tex_header(const SheetMatrix& m) {
  std::string out;
  for (const std::string& c : m.cols)
    out += fmt::format(" & \\multicolumn{{1}}{{c}}{{{}}}", tex_text(c));
  return out + " \\\\\n";
}

std::string tex_values(const SheetMatrix& m, int decimals) {
  std::string out = fmt::format("\\begin{{tabular}}{{l|*{{{}}}{{r}}}}\n", m.cols.size());
  out += tex_header(m) + "\\hline\n";
  for (std::size_t r = 0; r < m.rows.size(); ++r) {
    out += tex_text(m.rows[r]);
    for (std::size_t c = 0; c < m.cols.size(); ++c)
      out += " & " + tex_number(m.value(r, c), decimals);
    out += " \\\\\n";
  }
  return out + "\\end{tabular}\n";
}

// Boxes to write in, one per cell, tall enough for a handwritten number.
std::string tex_blank_grid(const SheetMatrix& m) {
  const std::size_t cols = m.cols.size();
  std::string out = fmt::format("\\begin{{tabular}}{{l|*{{{}}}{{p{{17mm}}|}}}}\n", cols);
  out += tex_header(m) + fmt::format("\\cline{{2-{}}}\n", cols + 1);
  for (std::size_t r = 0; r < m.rows.size(); ++r) {
    out += tex_text(m.rows[r]);
    for (std::size_t c = 0; c < cols; ++c) out += " & ";
    out += fmt::format("\\rule{{0pt}}{{7mm}} \\\\\n\\cline{{2-{}}}\n", cols + 1);
  }
  return out + "\\end{tabular}\n";
}

std::string tex_step_heading(const SheetMatrix& m, const std::string& prefix) {
  return fmt::format("\\paragraph{{{}\\texttt{{{}}} --- {}{}}} ${}$\\quad (result ${}$)\\\\[1ex]\n",
                     prefix, tex_text(m.id), tex_text(m.name), m.asked ? " $\\star$" : "", m.latex,
                     fmt::format("{} \\times {}", m.value.n_rows, m.value.n_cols));
}

std::string tex_student(const SheetModel& model, bool key) {
  std::string out = fmt::format("\\section*{{{}}}\n{}\n", tex_text(sheet_title(model, key)),
                                tex_text(sheet_meta(model)));
  if (key) out += fmt::format("\n\\smallskip\\noindent {}\n", tex_text(key_note(model)));
  out += "\\subsection*{Convention}\n\\begin{itemize}\n";
  for (const ConventionLine& line : model.convention) out += fmt::format("\\item {}\n", line.latex);
  out += "\\end{itemize}\n\\subsection*{Given}\n";
  for (const SheetMatrix& m : model.inputs)
    out +=
        fmt::format("\\paragraph{{\\texttt{{{}}} --- {} (${} \\times {}$)}}\\mbox{{}}\\\\[1ex]\n",
                    tex_text(m.id), tex_text(m.name), m.value.n_rows, m.value.n_cols) +
        tex_values(m, model.input_decimals);
  if (!key) {
    out += "\\subsection*{To compute}\n";
    for (std::size_t i = 0; i < model.asked.size(); ++i) {
      SheetMatrix m = model.asked[i];
      m.asked = false;  // the star belongs to the key
      out += tex_step_heading(m, fmt::format("{}. ", i + 1)) + tex_blank_grid(m);
    }
    return out;
  }
  out += "\\subsection*{Every step}\n";
  for (const SheetMatrix& m : model.key)
    out += tex_step_heading(m, "") + tex_values(m, model.answer_decimals);
  if (!model.worked.empty()) {
    out += "\\subsection*{Worked cells}\n";
    for (const CellExpansion& e : model.worked) {
      out +=
          fmt::format("\\subsubsection*{{\\texttt{{{}}} [{}, {}] ({}, {})}}\n{}\n",
                      tex_text(e.step), e.row, e.col, tex_text(e.row_label), tex_text(e.col_label),
                      fmt::format("\\par\\noindent\\fitline{{$\\displaystyle {}$}}\\par",
                                  expansion_latex(e, model.answer_decimals + 2)));
      if (e.kind == ExpansionKind::softmax && !e.exps.empty())
        out +=
            "Subtracting the row maximum changes nothing: the factor $e^{-\\max}$ cancels "
            "between numerator and denominator; it only keeps $e^x$ from overflowing.\n\n";
    }
  }
  return out;
}

}  // namespace

std::string render_sheet_latex(const std::vector<SheetModel>& models, bool key) {
  std::string out = fmt::format(
      "% attn-trace exercise: {} for {} student(s); compile with pdflatex.\n"
      "\\documentclass[11pt,a4paper]{{article}}\n"
      "\\usepackage[margin=18mm]{{geometry}}\n"
      "\\usepackage{{amsmath}}\n"
      "\\usepackage{{array}}\n"
      "\\usepackage{{graphicx}}\n"
      "\\setlength{{\\parindent}}{{0pt}}\n"
      "% \\fitline{{...}}: as is, or shrunk to the line width when wider.\n"
      "\\newsavebox{{\\fitbox}}\n"
      "\\newcommand{{\\fitline}}[1]{{\\sbox{{\\fitbox}}{{#1}}\\ifdim\\wd\\fitbox>\\linewidth"
      "\\resizebox{{\\linewidth}}{{!}}{{\\usebox{{\\fitbox}}}}\\else\\usebox{{\\fitbox}}\\fi}}\n"
      "\\begin{{document}}\n",
      key ? "answer keys" : "sheets", models.size());
  for (std::size_t i = 0; i < models.size(); ++i)
    out += (i ? "\n\\clearpage\n" : "\n") + tex_student(models[i], key);
  return out + "\n\\end{document}\n";
}

}  // namespace attn
