// The HTML key: every number is the trace's value rounded to the answer
// decimals, in labelled rows; names with < & " ' are escaped everywhere.
#include <doctest/doctest.h>
#include <fmt/format.h>

#include <string>

#include "render/escape.hpp"
#include "support/hostile_lesson.hpp"
#include "support/sheet_fixture.hpp"
#include "teach/exercise_sheets.hpp"

namespace {

// One table row: the label as a header cell, then each value in a <td>.
std::string expected_row(const attn::Step& step, std::size_t r, int decimals) {
  std::string out = "<tr><th>" + step.rows[r] + "</th>";
  for (std::size_t c = 0; c < step.cols.size(); ++c)
    out += "<td>" + testsupport::rounded(step.value(r, c), decimals) + "</td>";
  return out + "</tr>\n";
}

}  // namespace

TEST_CASE("HTML key: every row of every step equals the trace rounded to the answer decimals") {
  const testsupport::SheetFixture plain("Ada"), causal("Bob", true);
  const std::string keys = attn::render_sheet_html({plain.model, causal.model}, true);
  for (const testsupport::SheetFixture* f : {&plain, &causal})
    for (const attn::SheetMatrix& m : f->model.key) {
      CAPTURE(m.id);
      const attn::Step& step = f->exercise.trace.at(m.id);
      for (std::size_t r = 0; r < step.rows.size(); ++r)
        CHECK(keys.find(expected_row(step, r, f->spec.answer_decimals)) != std::string::npos);
    }
  CHECK(keys.find("<td>-inf</td>") != std::string::npos);
  // The inputs with their own decimals.
  const attn::Step& X = plain.exercise.trace.at("X");
  CHECK(keys.find(expected_row(X, 0, 1)) != std::string::npos);
}

TEST_CASE("HTML: a name with < & \" ' is escaped in the title and the heading, never raw") {
  const std::string name = "Ann & \"Bo\" <x> O'Neil";
  const std::string escaped = "Ann &amp; &quot;Bo&quot; &lt;x&gt; O&#39;Neil";
  const testsupport::SheetFixture f(name);
  for (const bool key : {false, true}) {
    CAPTURE(key);
    const std::string html = attn::render_sheet_html({f.model}, key);
    const std::string title = key ? "Answer key: " : "Attention exercise: ";
    CHECK(html.find("<title>" + title + escaped + "</title>") != std::string::npos);
    CHECK(html.find("<h1>" + title + escaped + "</h1>") != std::string::npos);
    CHECK(html.find(name) == std::string::npos);
    CHECK(html.find("<x>") == std::string::npos);
  }
}

TEST_CASE("HTML sheet and key: newlines and control characters in labels shown as pictures") {
  testsupport::SheetFixture f("Ann");
  f.use_hostile_labels(testsupport::kHostileTokens);
  REQUIRE_FALSE(f.model.worked.empty());
  for (const bool key : {false, true}) {
    CAPTURE(key);
    const std::string html = attn::render_sheet_html({f.model}, key);
    CHECK_FALSE(testsupport::has_raw_control(html));
    CHECK(html.find("<tr><th></th><th>blank␊␊line</th><th>tab␉|#</th>") != std::string::npos);
    CHECK(html.find("<tr><th>new␊line</th>") != std::string::npos);
  }
  // A worked cell: its labels in the heading, its lines kept in <pre>.
  const attn::CellExpansion& e = f.model.worked.front();
  const std::string html = attn::render_sheet_html({f.model}, true);
  CHECK(html.find(fmt::format("</span> [{}, {}] ({}, {})</h3>\n<pre>{}[", e.row, e.col,
                              attn::xml_text(e.row_label), attn::xml_text(e.col_label), e.step)) !=
        std::string::npos);
}
