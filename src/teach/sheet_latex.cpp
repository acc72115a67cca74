// LaTeX sheets and keys: complete UTF-8 documents for LuaLaTeX (fontspec; Latin
// Modern with Noto Serif CJK as the fallback for Cyrillic, Chinese, ...), each
// student's pages numbered on their own, the name and variant on every page.
#include <fmt/format.h>

#include <cmath>
#include <string_view>

#include "core/i18n.hpp"
#include "render/escape.hpp"
#include "render/numbers.hpp"
#include "render/render.hpp"
#include "teach/exercise_sheets.hpp"

namespace attn {

namespace {

// Packages of texlive-latex-base, -latex-recommended (fontspec) and -luatex; the
// font of fonts-noto-cjk. \startstudent restarts the page numbers; \finishstudent
// records the student's last page ("page 1 of 2" on the second run) and, for
// double-sided printing, adds a blank page after an odd number of pages, so
// that every student starts on a new sheet of paper.
constexpr std::string_view kPreambleStart = R"(\documentclass[10pt,a4paper]{article}
\usepackage[margin=15mm,top=20mm,headheight=13pt,headsep=4mm,footskip=8mm]{geometry}
\usepackage{fontspec}
\directlua{luaotfload.add_fallback("attnfallback", {"Noto Serif CJK SC:mode=node;"})}
\setmainfont{Latin Modern Roman}[RawFeature={fallback=attnfallback}]
\usepackage{amsmath}
\usepackage{array}
\usepackage{graphicx}
\usepackage{fancyhdr}
\setlength{\parindent}{0pt}
\setlength{\tabcolsep}{4pt}
% \fitline{...}: as is, or shrunk to the line width when wider.
\newsavebox{\fitbox}
\newcommand{\fitline}[1]{\sbox{\fitbox}{#1}\ifdim\wd\fitbox>\linewidth\resizebox{\linewidth}{!}{\usebox{\fitbox}}\else\usebox{\fitbox}\fi}
% \matrixbox{heading}{table}: a heading above its table, kept together.
\newcommand{\matrixbox}[2]{\begin{tabular}[t]{@{}l@{}}#1\\[0.4ex]#2\end{tabular}\hspace{7mm plus 3mm}}
% A blank page after a student with an odd number of pages (\duplexfalse: none).
\newif\ifduplex
\newcommand{\student}{}
\newcommand{\variant}{}
\newcommand{\studentpages}{?}
\pagestyle{fancy}
\fancyhf{}
\fancyhead[L]{\student}
)";

// The rest of the preamble, after the page's head and foot in the documents' language.
constexpr std::string_view kPreambleEnd = R"(\newcommand{\startstudent}[3]{\renewcommand{\student}{#2}\renewcommand{\variant}{#3}%
  \renewcommand{\studentpages}{\pageref{student-#1-end}}\setcounter{page}{1}}
\newcommand{\finishstudent}[1]{\label{student-#1-end}\clearpage
  \ifduplex\ifodd\value{page}\else\thispagestyle{empty}\mbox{}\clearpage\fi\fi}
)";

std::string tex_number(double v, int decimals) {
  if (std::isnan(v)) return "$\\mathrm{NaN}$";
  if (std::isinf(v)) return v < 0 ? "$-\\infty$" : "$\\infty$";
  return fmt::format("${}$", format_fixed(v, decimals));
}

std::string tex_header(const SheetMatrix& m) {
  std::string out;
  for (const std::string& c : m.cols)
    out += fmt::format(" & \\multicolumn{{1}}{{c}}{{{}}}", tex_text_unicode(c));
  return out + " \\\\\n";
}

std::string tex_values(const SheetMatrix& m, int decimals) {
  std::string out = fmt::format("\\begin{{tabular}}{{l|*{{{}}}{{r}}}}\n", m.cols.size());
  out += tex_header(m) + "\\hline\n";
  for (std::size_t r = 0; r < m.rows.size(); ++r) {
    out += tex_text_unicode(m.rows[r]);
    for (std::size_t c = 0; c < m.cols.size(); ++c)
      out += " & " + tex_number(m.value(r, c), decimals);
    out += " \\\\\n";
  }
  return out + "\\end{tabular}";
}

// Boxes to write in, one per cell, tall enough for a handwritten number.
std::string tex_blank_grid(const SheetMatrix& m) {
  const std::size_t cols = m.cols.size();
  std::string out = fmt::format("\\begin{{tabular}}{{l|*{{{}}}{{p{{15mm}}|}}}}\n", cols);
  out += tex_header(m) + fmt::format("\\cline{{2-{}}}\n", cols + 1);
  for (std::size_t r = 0; r < m.rows.size(); ++r) {
    out += tex_text_unicode(m.rows[r]);
    for (std::size_t c = 0; c < cols; ++c) out += " & ";
    out += fmt::format("\\rule{{0pt}}{{7mm}} \\\\\n\\cline{{2-{}}}\n", cols + 1);
  }
  return out + "\\end{tabular}";
}

// "1. head0.scores — Scores" over its formula and result shape.
std::string tex_step_heading(const SheetMatrix& m, const std::string& prefix, bool star) {
  return fmt::format("\\textbf{{{}\\texttt{{{}}} --- {}}}{}\\\\ ${}$\\quad ({}\\,$\\times$\\,{})",
                     prefix, tex_text_unicode(m.id), tex_text_unicode(m.name),
                     star && m.asked ? " $\\star$" : "", m.latex, m.value.n_rows, m.value.n_cols);
}

// The inputs side by side, each under its id and shape (the convention says
// what X, M and the W's are), so that they fit one row at the default size.
std::string tex_given(const SheetModel& model) {
  std::string out = fmt::format("\\subsection*{{{}}}\n\\begin{{flushleft}}\n", tr("Given"));
  for (const SheetMatrix& m : model.inputs)
    out += fmt::format("\\matrixbox{{\\textbf{{\\texttt{{{}}}}} ({}\\,$\\times$\\,{})}}{{{}}}\n",
                       tex_text_unicode(m.id), m.value.n_rows, m.value.n_cols,
                       tex_values(m, model.input_decimals));
  return out + "\\end{flushleft}\n";
}

std::string tex_student(const SheetModel& model, bool key, std::size_t number) {
  std::string out = fmt::format("\\startstudent{{{}}}{{{}}}{{{}}}\n", number,
                                tex_text_unicode(student_label(model)), model.variant);
  out +=
      fmt::format("{{\\Large\\bfseries {}}}\\par\\smallskip\n{}\\par\n",
                  tex_text_unicode(sheet_title(model, key)), tex_text_unicode(sheet_meta(model)));
  if (key)
    out += fmt::format("\\smallskip{{\\small {}}}\\par\n", tex_text_unicode(key_note(model)));
  out += fmt::format(
      "\\subsection*{{{}}}\n{{\\small\\begin{{itemize}}\\setlength{{\\itemsep}}{{0pt}}"
      "\\setlength{{\\parskip}}{{0pt}}\n",
      tr("Convention"));
  for (const ConventionLine& line : model.convention) out += fmt::format("\\item {}\n", line.latex);
  out += "\\end{itemize}}\n" + tex_given(model);
  if (!key) {
    out += fmt::format("\\subsection*{{{}}}\n\\begin{{flushleft}}\n", tr("To compute"));
    for (std::size_t i = 0; i < model.asked.size(); ++i)
      out += fmt::format("\\matrixbox{{{}}}{{{}}}\n",
                         tex_step_heading(model.asked[i], fmt::format("{}. ", i + 1), false),
                         tex_blank_grid(model.asked[i]));
    out += fmt::format("\\end{{flushleft}}\n\\subsection*{{{}}}\n", tr("Working"));
  } else {
    out += fmt::format("\\subsection*{{{}}}\n\\begin{{flushleft}}\n", tr("Every step"));
    for (const SheetMatrix& m : model.key)
      out += fmt::format("\\matrixbox{{{}}}{{{}}}\n", tex_step_heading(m, "", true),
                         tex_values(m, model.answer_decimals));
    out += "\\end{flushleft}\n";
    if (!model.worked.empty()) {
      out += fmt::format("\\subsection*{{{}}}\n", tr("Worked cells"));
      for (const CellExpansion& e : model.worked) {
        out += fmt::format(
            "\\textbf{{\\texttt{{{}}} [{}, {}] ({}, {})}}\\par\\noindent"
            "\\fitline{{$\\displaystyle {}$}}\\par\\smallskip\n",
            tex_text_unicode(e.step), e.row, e.col, tex_text_unicode(e.row_label),
            tex_text_unicode(e.col_label), expansion_latex(e, model.answer_decimals + 2));
        if (e.kind == ExpansionKind::softmax && e.shifted)
          out += fmt::format("{{\\small {}}}\\par\\smallskip\n",
                             tex_text_unicode(tr_format("({})", tr(e.note))));
      }
    }
  }
  return out + fmt::format("\\finishstudent{{{}}}\n", number);
}

}  // namespace

std::string render_sheet_latex(const std::vector<SheetModel>& models, bool key) {
  std::string out =
      key ? tr_format("% attn-trace exercise: answer keys for {} student(s). UTF-8; compile with "
                      "lualatex, twice\n% (the second run writes \"page 1 of N\"); needs "
                      "texlive-luatex, texlive-latex-recommended and fonts-noto-cjk.\n",
                      models.size())
          : tr_format("% attn-trace exercise: sheets for {} student(s). UTF-8; compile with "
                      "lualatex, twice\n% (the second run writes \"page 1 of N\"); needs "
                      "texlive-luatex, texlive-latex-recommended and fonts-noto-cjk.\n",
                      models.size());
  out += kPreambleStart;
  out += fmt::format("\\fancyhead[R]{{{} \\variant}}\n\\fancyfoot[C]{{{}}}\n", tr("Variant"),
                     tr_format("{0}, page {1}\\ of {2}", "\\documentkind", "\\thepage",
                               "\\studentpages"));
  out += kPreambleEnd;
  out += fmt::format("\\newcommand{{\\documentkind}}{{{}}}\n", key ? tr("Answer key") : tr("Sheet"));
  if (models.size() > 1)
    out += tr(
        "% Double-sided printing: every student starts on an odd page. For one-sided\n"
        "% printing, write \\duplexfalse instead.\n\\duplextrue\n");
  out += "\\begin{document}\n";
  for (std::size_t i = 0; i < models.size(); ++i) out += "\n" + tex_student(models[i], key, i + 1);
  return out + "\n\\end{document}\n";
}

}  // namespace attn
