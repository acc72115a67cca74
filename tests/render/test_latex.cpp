// The LaTeX renderer: a bmatrix per step with its formula, shapes and labels,
// -\infty and \mathrm{NaN} for non-finite cells, and text escaped for LaTeX.
#include <doctest/doctest.h>

#include <cstdio>
#include <string>

#include "backend/cpu_backend.hpp"
#include "core/lesson_library.hpp"
#include "core/pipeline.hpp"
#include "render/render.hpp"
#include "support/hostile_lesson.hpp"

namespace {

struct Traced {
  attn::Lesson lesson;
  attn::Trace trace;
  explicit Traced(attn::Lesson l) : lesson(std::move(l)) {
    attn::CpuBackend cpu;
    trace = attn::run_pipeline(lesson, cpu);
  }
  std::string latex(const char* step) const {
    attn::RenderOptions o;
    o.steps = {step};
    return attn::render_latex(lesson, trace, o);
  }
};

bool has(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

}  // namespace

TEST_CASE("latex: a step as a bmatrix of its values, with formula, shapes and labels") {
  const Traced rb(attn::find_lesson("river-bank"));
  const attn::Lesson& L = rb.lesson;
  const std::string tex = rb.latex("Q");
  CHECK(
      tex.starts_with("% attn-trace river-bank: a LaTeX fragment; needs \\usepackage{amsmath}\n"));
  CHECK(has(tex, "\\section*{Single-head self-attention: river bank}\n"));
  CHECK(has(tex,
            "\\subsection*{3. \\texttt{Q}: Queries}\n"
            "$Q = X W_Q$, \\quad $(4\\times 4)\\cdot (4\\times 4)\\ \\to \\ 4\\times 4$\\\\\n"
            "Rows: river, bank, walk, by. Columns: d0, d1, d2, d3.\n"));
  // Q = X·W_Q by a plain loop, row by row, 4 decimals, cells joined by " & ".
  std::string matrix = "\\begin{bmatrix}\n";
  for (std::size_t r = 0; r < 4; ++r) {
    for (std::size_t c = 0; c < 4; ++c) {
      double q = 0;
      for (std::size_t i = 0; i < 4; ++i) q += L.X(r, i) * L.W_Q(i, c);
      char cell[32];
      std::snprintf(cell, sizeof cell, "%.4f", q);
      matrix += (c ? " & " : "") + std::string(cell);
    }
    matrix += " \\\\\n";
  }
  matrix += "\\end{bmatrix}\n";
  CHECK(has(tex, matrix));
  CHECK(has(tex, "\\begin{bmatrix}\n0.6900 & 0.5000 & 0.8600 & 0.8500 \\\\\n"));
  CHECK(has(rb.latex("head0.scores"),
            "$(4\\times 4)\\cdot (4\\times 4)^\\top \\ \\to \\ 4\\times 4$"));
}

TEST_CASE("latex: masked cells are -\\infty, a fully masked row \\mathrm{NaN}, and a warning") {
  const Traced cd(attn::find_lesson("causal-decoder"));
  // By hand, row <s>: (0.3·0.15 + 0.1·0.05 + 0.2·0.1 + 0.1·0.05) / √4 = 0.0375, the rest masked.
  CHECK(has(cd.latex("head0.masked"), "\\begin{bmatrix}\n0.0375 & -\\infty & -\\infty \\\\\n"));
  CHECK(has(cd.latex("head0.masked"), "Rows: \\textless{}s\\textgreater{}, The, animal."));
  const Traced mp(attn::find_lesson("mask-polarity"));
  const std::string weights = mp.latex("head0.weights");
  CHECK(has(weights, "\\mathrm{NaN} & \\mathrm{NaN} & \\mathrm{NaN} \\\\\n\\end{bmatrix}"));
  CHECK(has(weights, "\\textbf{Warning:} head0.weights row 2 (animal)"));
}

TEST_CASE("latex: _ % & # $ { } ~ in titles, sources and tokens are escaped") {
  const Traced t(attn::parse_lesson(R"(
[lesson]
id = "odd_chars"
title = "50% of a_b & c#d"
source = "see {x} ~y"
[input]
tokens = ["x_1", "$y"]
X = [[1.0, 0.0], [0.0, 1.0]]
[weights]
W_Q = "identity"
W_K = "identity"
W_V = "identity"
)",
                                    "odd.toml"));
  const std::string tex = t.latex("head0.scores");
  CHECK(has(tex, "\\section*{50\\% of a\\_b \\& c\\#d}\n"));
  CHECK(has(tex, "\\noindent Source: see \\{x\\} \\~{}y\n"));
  CHECK(has(tex, "Rows: x\\_1, \\$y. Columns: x\\_1, \\$y.\n"));
  CHECK(has(tex, "\\begin{bmatrix}\n1.0000 & 0.0000 \\\\\n0.0000 & 1.0000 \\\\\n"));  // X·Xᵀ = I
}

TEST_CASE("latex: newlines, tabs and control characters are named by code point") {
  const Traced t(testsupport::hostile_lesson());
  const std::string tex = attn::render_latex(t.lesson, t.trace, {});
  CHECK_FALSE(testsupport::has_raw_control(tex));
  // No blank line inside a heading (a \par there is an error), nothing LaTeX refuses.
  CHECK(has(tex,
            "\\section*{Line one[U+000A]line two[U+000A][U+000A]after a blank[U+0009]tab [U+0001] "
            "[U+007F] \\textbar{} \\# \\textbackslash{} \\{ \\$ \\% \\& \\_ \\^{} \\~{}}\n"));
  CHECK(has(tex, "\\noindent Source: a source[U+000A]with [U+001B][31m colour\n"));
  CHECK(has(tex,
            "Rows: new[U+000A]line, blank[U+000A][U+000A]line, tab[U+0009]\\textbar{}\\#, "
            "[U+0001]\\textbackslash{}\\{\\$, \\%\\&\\_\\^{}\\~{}[U+007F]`. Columns: d0, d1.\n"));
}
