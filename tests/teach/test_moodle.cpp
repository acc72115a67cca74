// The Moodle XML bank: cloze cells with the key's value and verify's tolerance
// as plain decimals, and text that can neither end a CDATA section nor open or
// close a cloze sub-question, whatever a token or a roster file is called.
#include <doctest/doctest.h>

#include <cmath>
#include <limits>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "backend/backend.hpp"
#include "core/i18n.hpp"
#include "teach/answers.hpp"
#include "teach/verify.hpp"

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
  // The true value (9 decimals more than asked, trailing zeros dropped), not the key's rounding.
  CHECK(attn::cloze_cell(0.25, 3) == "{1:NUMERICAL:=0.250:0.000505}");
  CHECK(attn::cloze_cell(-0.12345678, 3) == "{1:NUMERICAL:=-0.12345678:0.000505}");
  CHECK(attn::cloze_cell(1.0, 2) == "{1:NUMERICAL:=1.00:0.00505}");
  CHECK(attn::cloze_cell(0.0, 3) == "{1:NUMERICAL:=0.000:0.000505}");
  CHECK(attn::cloze_cell(-1e-6, 3) == "{1:NUMERICAL:=-0.000001:0.000505}");
  CHECK(attn::cloze_cell(-1e-13, 3) == "{1:NUMERICAL:=0.000:0.000505}");  // no -0.000
  CHECK(attn::cloze_cell(0.1234567, 6) == "{1:NUMERICAL:=0.1234567:0.000000505}");
  CHECK(attn::cloze_cell(2.0 / 3.0, 3) == "{1:NUMERICAL:=0.666666666667:0.000505}");
  // The cell: true 0.8654987, keyed 0.865; verify accepts 0.866 (0.0005013 off).
  CHECK(attn::cloze_cell(0.8654987, 3) == "{1:NUMERICAL:=0.8654987:0.000505}");
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

namespace {

// Every {1:NUMERICAL:=A:T} of `text`, in order, as (A, T) read back from the text.
std::vector<std::pair<double, double>> numerical_cells(const std::string& text) {
  std::vector<std::pair<double, double>> out;
  const std::string open = "{1:NUMERICAL:=";
  for (std::size_t at = text.find(open); at != std::string::npos; at = text.find(open, at + 1)) {
    const std::size_t colon = text.find(':', at + open.size());
    const std::size_t close = text.find('}', colon);
    out.emplace_back(std::stod(text.substr(at + open.size(), colon - at - open.size())),
                     std::stod(text.substr(colon + 1, close - colon - 1)));
  }
  return out;
}

// Answers of one step, every cell the true value rounded to 3 decimals, moved
// `units` thousandths.
std::string step_answers(const attn::SheetMatrix& m, int units) {
  std::string out = "[[answer]]\nstep = \"" + m.id + "\"\nvalues = [";
  for (std::size_t r = 0; r < m.value.n_rows; ++r) {
    out += r ? ", [" : "[";
    for (std::size_t c = 0; c < m.value.n_cols; ++c) {
      const double v = m.value(r, c);
      const std::string text =
          std::isinf(v) ? "-inf" : testsupport::rounded((std::round(v * 1000) + units) / 1000, 3);
      out += (c ? ", \"" : "\"") + text + "\"";
    }
    out += "]";
  }
  return out + "]\n";
}

}  // namespace

TEST_CASE("Moodle accepts exactly what verify accepts: a simulated class, the XML read back") {
  std::size_t ok = 0, wrong = 0;
  for (int student = 0; student < 12; ++student) {
    const testsupport::SheetFixture f("Student " + std::to_string(student), student % 3 == 0);
    const std::string xml = attn::render_moodle_xml(f.spec, {f.model});
    const std::string question = xml.substr(0, xml.find("<generalfeedback"));
    const std::vector<std::pair<double, double>> cloze = numerical_cells(question);
    const std::unique_ptr<attn::Backend> backend = attn::make_backend("cpu");
    // Each step alone (so nothing is carried), every cell moved -2 to +2 thousandths.
    for (int units = -2; units <= 2; ++units) {
      std::size_t at = 0;  // the cloze cell of the step's first finite cell
      for (const attn::SheetMatrix& m : f.model.asked) {
        const std::vector<attn::Answer> answers =
            attn::parse_answers(step_answers(m, units), "a.toml", f.exercise.trace);
        const attn::VerifyReport report = attn::verify_answers(f.exercise.lesson, *backend, answers);
        REQUIRE(report.answers.size() == 1);
        for (const attn::AnswerCell& c : report.answers[0].cells) {
          if (std::isinf(c.expected)) continue;  // a masked cell: SHORTANSWER, -inf
          REQUIRE(at < cloze.size());
          const auto [answer, tolerance] = cloze[at++];
          CHECK(answer == doctest::Approx(c.expected).epsilon(1e-12));
          const bool inside = std::abs(c.given.value - answer) <= tolerance;  // Moodle's rule
          REQUIRE((c.verdict == attn::Verdict::ok || c.verdict == attn::Verdict::wrong));
          CHECK(inside == (c.verdict == attn::Verdict::ok));
          ok += c.verdict == attn::Verdict::ok;
          wrong += c.verdict == attn::Verdict::wrong;
        }
      }
      CHECK(at == cloze.size());
    }
  }
  // Both kinds seen, many times: the test would notice a cloze too wide or too narrow.
  CHECK(ok > 300);
  CHECK(wrong > 1000);
}

TEST_CASE("moodle_category: at most 255 characters, English and Chinese, at the longest inputs") {
  attn::ExerciseSpec spec;
  spec.seed = 18446744073709551615ull;
  spec.tokens = attn::kMaxExerciseTokens;
  spec.memory_tokens = attn::kMaxExerciseTokens;
  spec.d_model = attn::kMaxExerciseWidth;
  spec.heads = attn::kMaxExerciseHeads;
  spec.d_k = attn::kMaxExerciseWidth / attn::kMaxExerciseHeads;
  spec.causal = spec.key_padding = true;
  spec.decimals = attn::kMaxExerciseDecimals;
  spec.answer_decimals = attn::kMaxAnswerDecimals;
  spec.ask = {"Q", "K", "V", "concat"};
  for (int h = 0; h < 4; ++h)
    for (const char* step : {"Q", "K", "V", "scores", "scaled", "masked", "exp", "row_sum",
                             "weights", "context"})
      spec.ask.push_back("head" + std::to_string(h) + "." + step);
  attn::normalise_spec(spec);
  const auto characters = [](const std::string& text) {
    std::size_t n = 0;
    for (const char c : text) n += (static_cast<unsigned char>(c) & 0xC0) != 0x80;
    return n;
  };
  const std::string prefix = "$course$/top/attn-trace/";
  for (const attn::Language language : {attn::Language::en, attn::Language::zh}) {
    attn::set_languages(language, language);
    const std::string longest = attn::moodle_category(spec);
    REQUIRE(longest.starts_with(prefix));
    CHECK(characters(longest.substr(prefix.size())) <= 255);
    // Named by the count of its steps and a hash of their list, not silently cut.
    CHECK(longest.find(std::to_string(spec.ask.size())) != std::string::npos);
    attn::ExerciseSpec fewer = spec;
    fewer.ask.pop_back();
    CHECK(attn::moodle_category(fewer) != longest);
    // A list that fits is written out.
    fewer.ask = {"head0.scores", "head3.context"};
    CHECK(attn::moodle_category(fewer).ends_with(" · head0.scores head3.context"));
  }
  attn::set_languages(attn::Language::en, attn::Language::en);
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
