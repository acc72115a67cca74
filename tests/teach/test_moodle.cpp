// The Moodle XML bank: cloze cells with the key's value and verify's tolerance
// as plain decimals, and text that can neither end a CDATA section nor open or
// close a cloze sub-question, whatever a token or a roster file is called.
#include <doctest/doctest.h>

#include <cmath>
#include <limits>
#include <string>

#include "support/sheet_fixture.hpp"
#include "teach/moodle.hpp"

namespace {

std::size_t count(const std::string& text, const std::string& what) {
  std::size_t n = 0;
  for (std::size_t pos = text.find(what); pos != std::string::npos;
       pos = text.find(what, pos + what.size()))
    ++n;
  return n;
}

}  // namespace

TEST_CASE("cloze_cell: the key's value and verify's tolerance, plain decimals") {
  CHECK(attn::cloze_cell(0.25, 3) == "{1:NUMERICAL:=0.250:0.000505}");
  CHECK(attn::cloze_cell(-0.12345678, 3) == "{1:NUMERICAL:=-0.123:0.000505}");
  CHECK(attn::cloze_cell(1.0, 2) == "{1:NUMERICAL:=1.00:0.00505}");
  CHECK(attn::cloze_cell(0.0, 3) == "{1:NUMERICAL:=0.000:0.000505}");
  CHECK(attn::cloze_cell(-1e-6, 3) == "{1:NUMERICAL:=0.000:0.000505}");  // no -0.000
  CHECK(attn::cloze_cell(0.1234567, 6) == "{1:NUMERICAL:=0.123457:0.000000505}");
  CHECK(attn::cloze_cell(-std::numeric_limits<double>::infinity(), 3) ==
        "{1:SHORTANSWER:=-inf~=−∞~=-∞~=-infinity}");
}

TEST_CASE("cloze escaping: text outside and inside a sub-question") {
  CHECK(attn::cloze_html_text("a<b & ]]> {1:NUMERICAL:=1} #~\\") ==
        "a&lt;b &amp; ]]&gt; &#123;1:NUMERICAL:=1&#125; &#35;&#126;&#92;");
  CHECK(attn::cloze_html_text("the cat, 张伟") == "the cat, 张伟");
  CHECK(attn::cloze_answer_text("a}b#c~d/e\"f\\g") == "a\\}b\\#c\\~d\\/e\\\"f\\\\g");
  CHECK(attn::cloze_answer_text("-inf") == "-inf");
}

TEST_CASE("moodle_category: names the seed, the shape, the decimals and the asked steps") {
  const testsupport::SheetFixture f("Ada");
  CHECK(attn::moodle_category(f.spec) ==
        "$course$/top/attn-trace/seed 11 · 3 tokens · d_model 3 · d_k 2 · 1 head · inputs 1 "
        "decimal · answers 3 decimals · head0.scores head0.scaled head0.weights head0.context");
}

TEST_CASE("Moodle XML: odd tokens and file names escaped for XML, CDATA and cloze — no names") {
  testsupport::SheetFixture plain("Ann <&]]>}# Lee"), causal("Bob", true);
  const std::string token = "a<b&]]>}#{1:NUMERICAL:=9}";
  const std::string escaped = "a&lt;b&amp;]]&gt;&#125;&#35;&#123;1:NUMERICAL:=9&#125;";
  plain.model.inputs[0].rows[0] = token;
  plain.model.asked[0].cols[1] = token;
  plain.spec.command = "attn-trace exercise --roster x]]>&<y.txt";
  const std::string xml = attn::render_moodle_xml(plain.spec, {plain.model, causal.model});

  CHECK(xml.starts_with("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<quiz>\n"));
  CHECK(xml.ends_with("</quiz>\n"));
  CHECK(xml.find("<question type=\"category\">") < xml.find("<question type=\"cloze\">"));
  CHECK(count(xml, "<question type=\"cloze\">") == 2);
  // Every CDATA section ends where it should: one "]]>" per "<![CDATA[".
  CHECK(count(xml, "<![CDATA[") == count(xml, "]]>"));
  // The inputs' table, the asked table, and that table again in the feedback's key.
  CHECK(count(xml, escaped) == 3);
  CHECK(xml.find("a<b") == std::string::npos);
  CHECK(xml.find("x]]&gt;&amp;&lt;y.txt") != std::string::npos);
  // No student's name: a random question gives a student any variant.
  CHECK(xml.find("Ann") == std::string::npos);
  CHECK(xml.find("Bob") == std::string::npos);
  CHECK(xml.find("variant " + plain.model.variant) != std::string::npos);

  // One sub-question per asked cell, each the key's value of that cell.
  std::size_t cells = 0;
  for (const attn::SheetModel* model : {&plain.model, &causal.model})
    for (const attn::SheetMatrix& m : model->asked) {
      cells += m.value.n_elem;
      CHECK(xml.find(attn::cloze_cell(m.value(2, 0), 3)) != std::string::npos);
    }
  CHECK(count(xml, "{1:NUMERICAL:=") == cells);
  CHECK(count(xml, "{1:NUMERICAL:") == cells);  // the token's fake one is escaped
}
