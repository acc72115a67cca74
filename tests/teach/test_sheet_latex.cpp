// The LaTeX key: every number is the trace's value rounded to the answer
// decimals, in math mode, a masked cell $-\infty$; the inputs to the input decimals.
#include <doctest/doctest.h>

#include <string>

#include "support/hostile_lesson.hpp"
#include "support/sheet_fixture.hpp"
#include "teach/exercise_sheets.hpp"

namespace {

// One row of a tabular: the label, then each cell as $value$ (or $-\infty$).
std::string expected_row(const attn::Step& step, std::size_t r, int decimals) {
  std::string out = step.rows[r];
  for (std::size_t c = 0; c < step.cols.size(); ++c) {
    const std::string v = testsupport::rounded(step.value(r, c), decimals);
    out += " & $" + (v == "-inf" ? std::string("-\\infty") : v) + "$";
  }
  return out + " \\\\\n";
}

}  // namespace

TEST_CASE("LaTeX key: every row of every step equals the trace rounded to the answer decimals") {
  const testsupport::SheetFixture plain("Ada"), causal("Bob", true);
  const std::string keys = attn::render_sheet_latex({plain.model, causal.model}, true);
  for (const testsupport::SheetFixture* f : {&plain, &causal})
    for (const attn::SheetMatrix& m : f->model.key) {
      CAPTURE(m.id);
      const attn::Step& step = f->exercise.trace.at(m.id);
      for (std::size_t r = 0; r < step.rows.size(); ++r)
        CHECK(keys.find(expected_row(step, r, f->spec.answer_decimals)) != std::string::npos);
    }
  CHECK(keys.find(" & $-\\infty$") != std::string::npos);
}

TEST_CASE("LaTeX sheet: the inputs to the input decimals — no key values on it") {
  const testsupport::SheetFixture f("Ada");
  const std::string sheet = attn::render_sheet_latex({f.model}, false);
  for (const char* input : {"X", "W_Q", "W_K", "W_V"}) {
    const attn::Step& step = f.exercise.trace.at(input);
    for (std::size_t r = 0; r < step.rows.size(); ++r)
      CHECK(sheet.find(expected_row(step, r, 1)) != std::string::npos);
  }
  const attn::Step& weights = f.exercise.trace.at("head0.weights");
  CHECK(sheet.find(expected_row(weights, 0, f.spec.answer_decimals)) == std::string::npos);
}

TEST_CASE("LaTeX sheet and key: newlines and control characters in labels named by code point") {
  testsupport::SheetFixture f("Ann | #1 {x} $5 & ~y~");
  f.use_hostile_labels(testsupport::kHostileTokens);
  for (const bool key : {false, true}) {
    CAPTURE(key);
    const std::string tex = attn::render_sheet_latex({f.model}, key);
    CHECK_FALSE(testsupport::has_raw_control(tex));
    CHECK(tex.find("\\startstudent{1}{Ann \\textbar{} \\#1 \\{x\\} \\$5 \\& \\~{}y\\~{}}") !=
          std::string::npos);
    CHECK(tex.find(" & \\multicolumn{1}{c}{blank[U+000A][U+000A]line} & "
                   "\\multicolumn{1}{c}{tab[U+0009]\\textbar{}\\#}") != std::string::npos);
    CHECK(tex.find("\nnew[U+000A]line & ") != std::string::npos);
  }
}
