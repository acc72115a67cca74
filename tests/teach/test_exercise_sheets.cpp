// The sheet/key model and its Markdown, LaTeX and HTML renderers: what a
// student sees (no answers), what the key shows (every value), and escaping.
#include <doctest/doctest.h>

#include <fmt/format.h>

#include "render/numbers.hpp"
#include "render/render.hpp"
#include "support/sheet_fixture.hpp"
#include "teach/exercise.hpp"
#include "teach/exercise_sheets.hpp"

namespace {

std::size_t count(const std::string& text, const std::string& what) {
  std::size_t n = 0;
  for (std::size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

using Fixture = testsupport::SheetFixture;

}  // namespace

TEST_CASE("the model: inputs given, asked steps blank, every step in the key") {
  const Fixture f("Ada");
  CHECK(f.model.student == "Ada");
  CHECK(f.model.variant == fmt::format("{:016x}", attn::student_stream_seed(11, "Ada")));
  CHECK(f.model.lesson_file == "slug/lesson.toml");
  REQUIRE(f.model.inputs.size() == 4);
  CHECK(f.model.inputs[0].id == "X");
  CHECK(f.model.inputs[0].rows == std::vector<std::string>{"the", "cat", "sat"});
  CHECK(arma::approx_equal(f.model.inputs[1].value, f.exercise.lesson.W_Q, "absdiff", 0.0));
  REQUIRE(f.model.asked.size() == 4);
  CHECK(f.model.asked[0].id == "head0.scores");
  CHECK(f.model.asked[0].cols == std::vector<std::string>{"the", "cat", "sat"});
  CHECK(f.model.key.front().id == "Q");
  CHECK(f.model.key.back().id == "head0.context");
  CHECK(f.model.key.back().asked);
  CHECK_FALSE(f.model.key.front().asked);
  // The convention states the divisor the student uses: √2 to 8 decimals.
  bool scale_stated = false;
  for (const attn::ConventionLine& line : f.model.convention)
    scale_stated |= line.text.find("√2 ≈ 1.41421356") != std::string::npos;
  CHECK(scale_stated);
}

TEST_CASE("Markdown: the sheet has blank grids and no answers — the key has every value") {
  const Fixture f("Ada");
  const std::string sheet = attn::render_sheet_markdown(f.model, false);
  const std::string key = attn::render_sheet_markdown(f.model, true);
  CHECK(sheet.starts_with("# Attention exercise: Ada\n"));
  CHECK(sheet.find("### 1. `head0.scores` — Scores") != std::string::npos);
  CHECK(sheet.find("| **the** |   |   |   |") != std::string::npos);  // a blank row of scores
  CHECK(sheet.find(f.key_value("head0.weights", 0, 0)) == std::string::npos);
  CHECK(sheet.find("Every step") == std::string::npos);
  // Inputs with the input decimals: X[0,0] exactly as in the lesson file.
  CHECK(sheet.find(fmt::format("| **the** | {} |", attn::format_fixed(f.exercise.lesson.X(0, 0),
                                                                      1))) != std::string::npos);
  CHECK(key.starts_with("# Answer key: Ada\n"));
  CHECK(key.find("### `head0.weights` — Attention weights ★") != std::string::npos);
  CHECK(key.find("### `Q` — Queries\n") != std::string::npos);
  const std::string weights_row =
      fmt::format("| **cat** | {} | {} | {} |", f.key_value("head0.weights", 1, 0),
                  f.key_value("head0.weights", 1, 1), f.key_value("head0.weights", 1, 2));
  CHECK(key.find(weights_row) != std::string::npos);
}

TEST_CASE("Markdown escapes a name that would be markup") {
  const Fixture f("*Ada* <b>|x|</b>");
  const std::string sheet = attn::render_sheet_markdown(f.model, false);
  CHECK(sheet.starts_with("# Attention exercise: \\*Ada\\* \\<b\\>\\|x\\|\\</b\\>\n"));
}

TEST_CASE("LaTeX: a complete UTF-8 document, pages numbered per student, escaped names") {
  Fixture a("José O'Brien & Co_1 50%");
  Fixture b("李雷", true);
  const std::string sheets = attn::render_sheet_latex({a.model, b.model}, false);
  const std::string keys = attn::render_sheet_latex({a.model, b.model}, true);
  CHECK(sheets.find("\\documentclass") != std::string::npos);
  CHECK(sheets.ends_with("\\end{document}\n"));
  CHECK(sheets.find("\\usepackage{fontspec}") != std::string::npos);
  CHECK(sheets.find("Noto Serif CJK SC") != std::string::npos);
  CHECK(count(sheets, "\\startstudent{") == 2);
  CHECK(count(sheets, "\\finishstudent{") == 2);
  CHECK(sheets.find("\n\\duplextrue\n") != std::string::npos);  // the class: double-sided
  CHECK(attn::render_sheet_latex({a.model}, false).find("\n\\duplextrue\n") == std::string::npos);
  CHECK(count(sheets, "{\\Large\\bfseries Attention exercise:") == 2);
  CHECK(sheets.find("\\startstudent{1}{José O\\textquotesingle{}Brien \\& Co\\_1 50\\%}{" + a.model.variant + "}") !=
        std::string::npos);
  CHECK(sheets.find("\\startstudent{2}{李\\hspace{0pt plus 0.1em}雷}") != std::string::npos);  // UTF-8, for LuaLaTeX
  CHECK(sheets.find("[U+") == std::string::npos);
  CHECK(sheets.find("Causal mask") != std::string::npos);  // only b's page has one
  CHECK(count(sheets, "Causal mask") == 1);
  CHECK(count(sheets, "\\rule{0pt}{7mm}") == 2 * (3 + 3 + 3 + 3));  // four blank grids of 3 rows
  CHECK(keys.find(fmt::format("${}$", a.key_value("head0.context", 2, 1))) != std::string::npos);
  CHECK(keys.find("$-\\infty$") != std::string::npos);  // b's masked scores
}

TEST_CASE("HTML: self-contained, printable, a page break per student") {
  const Fixture a("Ada <script>");
  const Fixture b("Bob");
  const std::string html = attn::render_sheet_html({a.model, b.model}, false);
  const std::string key = attn::render_sheet_html({a.model, b.model}, true);
  CHECK(html.starts_with("<!DOCTYPE html>"));
  CHECK(count(html, "<section class=\"student\">") == 2);
  CHECK(html.find("break-after: page") != std::string::npos);
  CHECK(html.find("@media print") != std::string::npos);
  for (const char* external : {"http:", "https:", "src=", "<link", "@import", "<script"})
    CHECK(html.find(external) == std::string::npos);
  CHECK(html.find("Ada &lt;script&gt;") != std::string::npos);
  CHECK(count(html, "<td class=\"blank\"></td>") == 2 * (9 + 9 + 9 + 6));
  CHECK(key.find(fmt::format("<td>{}</td>", b.key_value("head0.scaled", 2, 2))) !=
        std::string::npos);
  CHECK(key.find("<td class=\"blank\">") == std::string::npos);
}

TEST_CASE("the key works one cell of each asked step in every format") {
  const Fixture f("Ada");
  REQUIRE(f.model.worked.size() == 4);
  const attn::CellExpansion& weights = f.model.worked[2];
  CHECK(weights.step == "head0.weights");
  const int precision = f.spec.answer_decimals + 2;
  const std::string md = attn::render_sheet_markdown(f.model, true);
  CHECK(md.find("## Worked cells") != std::string::npos);
  CHECK(md.find("### `head0.weights` [2, 0] (sat, the)") != std::string::npos);
  CHECK(md.find(attn::expansion_markdown(weights, precision)) != std::string::npos);
  CHECK(attn::render_sheet_markdown(f.model, false).find("Worked cells") == std::string::npos);
  const std::string html = attn::render_sheet_html({f.model}, true);
  CHECK(html.find("<pre>" + attn::expansion_text(f.model.worked[0], precision).substr(0, 20)) !=
        std::string::npos);
  const std::string tex = attn::render_sheet_latex({f.model}, true);
  CHECK(tex.find("\\fitline{$\\displaystyle") != std::string::npos);
  CHECK(tex.find("−") == std::string::npos);  // the minus of math mode, not U+2212
}

TEST_CASE(
    "the sheet's formulas: no head subscript with one head, softmax of what the student has") {
  const Fixture plain("Ada"), causal("Bob", true);
  const attn::SheetMatrix& weights = plain.model.asked[2];
  REQUIRE(weights.id == "head0.weights");
  CHECK(weights.formula ==
        "A = softmax(scaled) by rows: A[i, j] = exp(scaled[i, j]) / Σ_k exp(scaled[i, k])");
  CHECK(weights.latex.find("_{0}") == std::string::npos);
  CHECK(plain.model.asked[0].formula == "S = Q·Kᵀ");
  for (const attn::SheetMatrix& m : plain.model.key) {
    CAPTURE(m.id);
    CHECK(m.formula.find("masked") == std::string::npos);
    CHECK(m.formula.find("₀") == std::string::npos);
  }
  const attn::SheetMatrix& masked_weights = causal.model.asked[2];
  CHECK(masked_weights.formula.find("softmax(masked)") != std::string::npos);
}

TEST_CASE("the key's worked weights cell divides the numbers of its own exp and row_sum tables") {
  for (const bool causal : {false, true}) {
    CAPTURE(causal);
    const Fixture f("Ada", causal);
    const attn::CellExpansion& w = f.model.worked[2];
    REQUIRE(w.step == "head0.weights");
    CHECK_FALSE(w.shifted);
    const arma::mat& exps = f.exercise.trace.at("head0.exp").value;
    const arma::mat& sums = f.exercise.trace.at("head0.row_sum").value;
    REQUIRE(w.exps.size() == exps.n_cols);
    for (std::size_t c = 0; c < exps.n_cols; ++c) CHECK(w.exps[c] == exps(w.row, c));
    CHECK(w.denominator == sums(w.row, 0));
    CHECK(attn::render_sheet_latex({f.model}, true).find("row max") == std::string::npos);
  }
}
