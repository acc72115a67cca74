// The Markdown sheet and key: every number of the key is the trace's value
// rounded to the answer decimals, the inputs to the input decimals, in tables
// labelled by token.
#include <doctest/doctest.h>

#include <string>

#include "support/hostile_lesson.hpp"
#include "support/sheet_fixture.hpp"
#include "teach/exercise_sheets.hpp"

namespace {

using testsupport::rounded;

// The table of `step` as the test expects it: labels, then every cell rounded.
std::string expected_table(const attn::Step& step, int decimals) {
  std::string out = "| |";
  for (const std::string& c : step.cols) out += " " + c + " |";
  out += "\n|---|";
  for (std::size_t c = 0; c < step.cols.size(); ++c) out += "---:|";
  out += "\n";
  for (std::size_t r = 0; r < step.rows.size(); ++r) {
    out += "| **" + step.rows[r] + "** |";
    for (std::size_t c = 0; c < step.cols.size(); ++c)
      out += " " + rounded(step.value(r, c), decimals) + " |";
    out += "\n";
  }
  return out;
}

}  // namespace

TEST_CASE("Markdown key: every step's table equals the trace rounded to the answer decimals") {
  for (const bool causal : {false, true}) {
    CAPTURE(causal);
    const testsupport::SheetFixture f("Ada", causal);
    const std::string key = attn::render_sheet_markdown(f.model, true);
    REQUIRE_FALSE(f.model.key.empty());
    for (const attn::SheetMatrix& m : f.model.key) {
      CAPTURE(m.id);
      const attn::Step& step = f.exercise.trace.at(m.id);
      const std::string heading =
          "### `" + m.id + "` — " + step.name + (m.asked ? " ★" : "") + "\n\n";
      const std::size_t at = key.find(heading);
      REQUIRE(at != std::string::npos);
      CHECK(key.find(expected_table(step, f.spec.answer_decimals), at) ==
            key.find("| |", at));  // the first table after the heading
    }
    if (causal) CHECK(key.find(" -inf |") != std::string::npos);
  }
}

TEST_CASE("Markdown sheet: the inputs to the input decimals, the asked steps left blank") {
  const testsupport::SheetFixture f("Ada");
  const std::string sheet = attn::render_sheet_markdown(f.model, false);
  const attn::Step& X = f.exercise.trace.at("X");
  CHECK(sheet.find(expected_table(X, 1)) != std::string::npos);
  for (const attn::SheetMatrix& m : f.model.asked) {
    CAPTURE(m.id);
    const attn::Step& step = f.exercise.trace.at(m.id);
    std::string blank_row = "| **" + step.rows[0] + "** |";
    for (std::size_t c = 0; c < step.cols.size(); ++c) blank_row += "   |";
    CHECK(sheet.find(blank_row + "\n") != std::string::npos);
    CHECK(sheet.find(expected_table(step, f.spec.answer_decimals)) == std::string::npos);
  }
}

TEST_CASE(
    "Markdown sheet and key: labels with newlines, controls and pipes keep the tables whole") {
  testsupport::SheetFixture f("Ann | #1 {x} $5 & ~y~");
  f.use_hostile_labels(testsupport::kHostileTokens);
  for (const bool key : {false, true}) {
    CAPTURE(key);
    const std::string md = attn::render_sheet_markdown(f.model, key);
    CHECK_FALSE(testsupport::has_raw_control(md));
    CHECK(md.starts_with(std::string(key ? "# Answer key: " : "# Attention exercise: ") +
                         "Ann \\| \\#1 \\{x\\} \\$5 \\& \\~y\\~\n"));
    CHECK(md.find("| | blank␊␊line | tab␉\\|\\# |") != std::string::npos);
    CHECK(md.find("| **new␊line** |") != std::string::npos);
    const testsupport::TableShapes shapes = testsupport::markdown_table_shapes(md);
    CHECK(shapes.broken_row == "");
    CHECK(shapes.tables ==
          f.model.inputs.size() + (key ? f.model.key.size() : f.model.asked.size()));
  }
}
