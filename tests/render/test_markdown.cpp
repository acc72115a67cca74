// The Markdown renderer: a pipe table per step with token labels and the
// values to the chosen precision, and labels that cannot break a table.
#include <doctest/doctest.h>

#include <cstdio>
#include <sstream>
#include <string>
#include <vector>

#include "backend/cpu_backend.hpp"
#include "core/expand.hpp"
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
  std::string markdown(const attn::RenderOptions& o = {}) const {
    return attn::render_markdown(lesson, trace, o);
  }
};

bool has(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

std::string fixed(double v, int decimals) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
  return buf;
}

}  // namespace

TEST_CASE("markdown: title, source, story, and each step as a table with token labels") {
  const Traced rb(attn::find_lesson("river-bank"));
  const attn::Lesson& L = rb.lesson;
  const std::string md = rb.markdown();
  CHECK(
      md.starts_with("# river-bank: Single-head self-attention: river bank\n\n"
                     "*Source:* 000\\_0ccc5db2bedb29fc.txt, section 3"));
  CHECK(has(
      md,
      "\n> Four tokens of the sentence \"It's a pleasant walk by the river bank\" have 4-d\n> "));

  // Q = X·W_Q and the scores QKᵀ of the walk row, by plain loops, to 4 decimals.
  std::string q_row = "| **walk** |", scores_row = "| **walk** |";
  for (std::size_t j = 0; j < 4; ++j) {
    double q = 0, score = 0;
    for (std::size_t i = 0; i < 4; ++i) q += L.X(2, i) * L.W_Q(i, j);
    for (std::size_t k = 0; k < 4; ++k) {
      double q_k = 0, key_k = 0;
      for (std::size_t i = 0; i < 4; ++i) q_k += L.X(2, i) * L.W_Q(i, k);
      for (std::size_t i = 0; i < 4; ++i) key_k += L.X(j, i) * L.W_K(i, k);
      score += q_k * key_k;
    }
    q_row += " " + fixed(q, 4) + " |";
    scores_row += " " + fixed(score, 4) + " |";
  }
  CHECK(has(md, "| | d0 | d1 | d2 | d3 |\n|---|---:|---:|---:|---:|\n| **river** | 0.6900 |"));
  CHECK(has(md, q_row + "\n"));
  CHECK(has(md, "| | river | bank | walk | by |\n|---|---:|---:|---:|---:|\n"));
  CHECK(has(md, scores_row + "\n"));
  CHECK(has(md, "| **walk** | 1.6085 | 1.6293 | 1.9145 | 1.9319 |"));
  std::size_t number = 0;
  while (rb.trace.steps[number].id != "head0.scores") ++number;
  CHECK(has(md, "## " + std::to_string(number + 1) + ". `head0.scores` — Scores\n\n`S₀ = Q₀·K₀ᵀ`"));

  attn::RenderOptions o;
  o.steps = {"Q"};
  o.precision = 2;
  const std::string q_only = rb.markdown(o);
  CHECK(has(q_only, "| **river** | 0.69 | 0.50 | 0.86 | 0.85 |\n"));
  CHECK_FALSE(has(q_only, "> Four tokens"));  // the story only with every step
  CHECK_FALSE(has(q_only, "`head0.scores`"));
}

TEST_CASE("markdown: a '|' or '*' in a token or title cannot split a cell") {
  const Traced t(attn::parse_lesson(R"(
[lesson]
id = "pipes"
title = "x | y"
[input]
tokens = ["a|b", "c*d"]
X = [[1.0, 0.0], [0.0, 1.0]]
[weights]
W_Q = "identity"
W_K = "identity"
W_V = "identity"
)",
                                    "pipes.toml"));
  const std::string md = t.markdown();
  CHECK(md.starts_with("# pipes: x \\| y\n"));
  // Scores of the identity lesson: X·Xᵀ = I.
  CHECK(has(md,
            "| | a\\|b | c\\*d |\n|---|---:|---:|\n| **a\\|b** | 1.0000 | 0.0000 |\n"
            "| **c\\*d** | 0.0000 | 1.0000 |\n"));
  // Every line of a table has as many cell bars as its |---| line.
  std::istringstream lines(md);
  std::vector<std::string> table;
  for (std::string line; std::getline(lines, line);) {
    if (line.starts_with("|")) {
      table.push_back(line);
      continue;
    }
    for (const std::string& row : table)
      CHECK(testsupport::cell_bars(row) == testsupport::cell_bars(table.at(1)));
    table.clear();
  }
}

TEST_CASE("markdown: masked cells -inf, a fully masked row nan, and its warning under the table") {
  const Traced mp(attn::find_lesson("mask-polarity"));
  attn::RenderOptions o;
  o.steps = {"head0.weights"};
  const std::string md = mp.markdown(o);
  CHECK(has(md, "| | \\<s\\> | The | animal |\n"));
  CHECK(has(md, "| **animal** | nan | nan | nan |\n\n> **Warning:** head0.weights row 2 (animal)"));
  const Traced cd(attn::find_lesson("causal-decoder"));
  o.steps = {"head0.masked"};
  // By hand: Q(<s>) = X(<s>) = [0.3, 0.1, 0.2, 0.1], K(<s>) = X(<s>)/2, so
  // (0.045 + 0.005 + 0.02 + 0.005) / √4 = 0.0375; the later keys are masked.
  CHECK(has(cd.markdown(o), "| **\\<s\\>** | 0.0375 | -inf | -inf |\n"));
}

TEST_CASE("markdown: newlines, tabs, control characters and specials in a lesson's text") {
  const Traced t(testsupport::hostile_lesson());
  attn::RenderOptions o;
  o.expansions = attn::expand_all(t.lesson, t.trace, 1, 4);
  const std::string md = t.markdown(o);
  CHECK_FALSE(testsupport::has_raw_control(md));
  // One line each: the heading, the source; the story's lines quoted, its
  // blank line a paragraph break, the \r of its \r\n dropped.
  CHECK(md.starts_with(
      "# hostile: Line one␊line two␊␊after a blank␉tab ␁ ␡ \\| \\# \\\\ \\{ \\$ % \\& \\_ ^ \\~\n\n"
      "*Source:* a source␊with ␛\\[31m colour\n\n"
      "> First \\| \\# \\\\ \\{ \\} \\$ % \\& \\_ ^ \\~\n>\n> Second␉with ␁ and ␡.\n> Third\n\n## "
      "1."));
  CHECK(has(md,
            "| | new␊line | blank␊␊line | tab␉\\|\\# | ␁\\\\\\{\\$ | %\\&\\_^\\~␡\\` |\n"
            "|---|---:|---:|---:|---:|---:|\n| **new␊line** |"));
  // The worked cell is one code span, fenced past the token's backtick.
  CHECK(has(md,
            "\n``head0.scores[blank␊␊line,%&_^~␡`] = head0.Q[blank␊␊line,:]·head0.K[%&_^~␡`,:] = "
            "0.00×1.00 + 1.00×(-1.00) = -1.00``\n"));
  // Every table keeps its shape: as many cell bars on each line as on |---|.
  const testsupport::TableShapes shapes = testsupport::markdown_table_shapes(md);
  CHECK(shapes.broken_row == "");
  CHECK(shapes.tables == t.trace.steps.size());
}
