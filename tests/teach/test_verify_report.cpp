// verify's report: the text's summary counts and the JSON's agree with the
// marking, the JSON parses with one entry per number given, in file order,
// each with its true value. Structure and counts only: the wording may change.
#include <doctest/doctest.h>

#include <map>
#include <memory>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "backend/backend.hpp"
#include "core/lesson_library.hpp"
#include "core/pipeline.hpp"
#include "support/mini_json.hpp"
#include "teach/answers.hpp"
#include "teach/verify.hpp"
#include "teach/verify_report.hpp"

namespace {

struct Marked {
  attn::Lesson lesson = attn::find_lesson("river-bank");
  std::unique_ptr<attn::Backend> backend = attn::make_backend("cpu");
  attn::Trace truth = attn::run_pipeline(lesson, *backend);
  attn::VerifyReport report;
  std::string text, json_text;
  testjson::Value json;

  explicit Marked(const std::string& answers) {
    report =
        attn::verify_answers(lesson, *backend, attn::parse_answers(answers, "answers.toml", truth));
    text = attn::verify_report_text(lesson, truth, report, "answers.toml");
    json_text = attn::verify_report_json(lesson, report);
    json = testjson::parse(json_text);
  }
  // "N ok", "N carried", "N wrong" as the text's summary (its second line) states them.
  std::map<std::string, int> text_counts() const {
    std::istringstream lines(text);
    std::string summary;
    std::getline(lines, summary);
    std::getline(lines, summary);
    std::map<std::string, int> out;
    for (const char* verdict : {"ok", "carried", "wrong"}) {
      std::smatch m;
      if (std::regex_search(summary, m, std::regex(std::string("(\\d+) ") + verdict + "\\b")))
        out[verdict] = std::stoi(m[1]);
    }
    return out;
  }
  std::map<std::string, int> json_counts() const {
    std::map<std::string, int> out;
    for (const char* verdict : {"ok", "carried", "wrong"})
      out[verdict] = static_cast<int>(json["summary"][verdict].number);
    return out;
  }
};

// Where each [[answer]] table of `answers` starts, counted from line 1.
std::vector<int> answer_lines(const std::string& answers) {
  std::istringstream in(answers);
  std::vector<int> lines;
  int number = 0;
  for (std::string line; std::getline(in, line);) {
    ++number;
    if (line == "[[answer]]") lines.push_back(number);
  }
  return lines;
}

// Single cells: K(bank)[d3] as the document writes it (0.51, by hand 0.45), the
// score built on it (1.727: right on that K), two right values and a wrong one.
const char* kCells = R"([[answer]]
step = "K"
cell = [1, 3]
value = 0.51
[[answer]]
step = "head0.scores"
cell = [0, 1]
value = 1.727
[[answer]]
step = "Q"
cell = [0, 0]
value = 0.69
[[answer]]
step = "head0.scores"
cell = [0, 2]
value = 0.982
[[answer]]
step = "head0.scores"
cell = [0, 0]
value = 1.679
)";

}  // namespace

TEST_CASE("verify report: with one number per answer, the text's counts equal the JSON's") {
  const Marked m(kCells);
  const std::map<std::string, int> expected = {{"ok", 2}, {"carried", 1}, {"wrong", 2}};
  CHECK(m.text_counts() == expected);
  CHECK(m.json_counts() == expected);
  CHECK(m.report.ok == 2);
  CHECK(m.report.carried == 1);
  CHECK(m.report.wrong == 2);
  CHECK(m.text.find("answers.toml") != std::string::npos);
  CHECK(m.json["lesson"].text == "river-bank");
  CHECK(m.json["first_wrong"]["step"].text == "K");
  CHECK(m.json["first_wrong"]["cell"][0].number == 1);
  CHECK(m.json["first_wrong"]["cell"][1].number == 3);

  // One entry per answer, in file order, with its line, the given and the true value.
  const std::vector<int> lines = answer_lines(kCells);
  const char* statuses[] = {"wrong", "carried", "ok", "wrong", "ok"};
  const double given[] = {0.51, 1.727, 0.69, 0.982, 1.679};
  // Half a unit in the last decimal, and half a unit two decimals further (double rounding).
  const double tolerance[] = {0.00505, 0.000505, 0.00505, 0.000505, 0.000505};
  REQUIRE(m.json["answers"].size() == 5);
  for (std::size_t i = 0; i < 5; ++i) {
    const testjson::Value& a = m.json["answers"][i];
    CAPTURE(i);
    CHECK(a["answer"].number == static_cast<double>(i + 1));
    CHECK(a["line"].number == lines[i]);
    CHECK(a["status"].text == statuses[i]);
    CHECK(a["given"].number == given[i]);
    const auto& cell = a["cell"];
    const double truth = m.truth.at(a["step"].text)
                             .value(static_cast<std::size_t>(cell[0].number),
                                    static_cast<std::size_t>(cell[1].number));
    CHECK(a["expected"].number == truth);
    CHECK(a["tolerance"].number == doctest::Approx(tolerance[i]));
    // Each answer's block in the text is numbered and names its verdict.
    const std::string head = "\n" + std::to_string(i + 1) + ". ";
    const std::size_t at = m.text.find(head);
    REQUIRE(at != std::string::npos);
    CHECK(m.text.substr(at, m.text.find('\n', at + 1) - at).find(statuses[i]) != std::string::npos);
  }
  // By hand: K(bank)[d3] = 0.5·0.3 + 0.3·0.2 + 0.6·0.1 + 0.2·0.9 = 0.45; the
  // carried score 0.69×0.66 + 0.50×0.54 + 0.86×0.66 + 0.85×0.51 = 1.7265.
  CHECK(m.json["answers"][0]["expected"].number == doctest::Approx(0.45).epsilon(1e-12));
  CHECK(m.json["answers"][1]["carried_expected"].number == doctest::Approx(1.7265).epsilon(1e-12));
  CHECK(m.json["answers"][1]["carried_from"][0]["step"].text == "K");
}

TEST_CASE("verify report: a row answer is one answer, and counts one value per number") {
  const Marked m(R"([[answer]]
step = "K"
row = 1
values = [0.66, 0.54, 0.66, 0.51]
[[answer]]
step = "head0.scores"
cell = [0, 1]
value = 1.727
)");
  // Both count numbers: three right values of K, its wrong one, the carried score.
  CHECK(m.text_counts() == std::map<std::string, int>{{"ok", 3}, {"carried", 1}, {"wrong", 1}});
  CHECK(m.text.find("5 values in 2 answers") != std::string::npos);
  // The JSON's summary is the tally of its own entries.
  REQUIRE(m.json["answers"].size() == 5);
  std::map<std::string, int> tally = {{"ok", 0}, {"carried", 0}, {"wrong", 0}};
  for (const testjson::Value& a : m.json["answers"].items) ++tally[a["status"].text];
  CHECK(m.json_counts() == tally);
  CHECK(tally == std::map<std::string, int>{{"ok", 3}, {"carried", 1}, {"wrong", 1}});
  for (std::size_t c = 0; c < 4; ++c) {
    CHECK(m.json["answers"][c]["cell"][1].number == c);
    CHECK(m.json["answers"][c]["answer"].number == 1);
  }
}

TEST_CASE("verify report: the true value shows the digit that decides the rounding, and what "
          "the written decimals must round to") {
  // K[1,3] is 0.45 exactly; head0.scores[0,1] is 1.6755: 1.67 rounds the wrong way.
  const Marked m(R"(
[[answer]]
step = "head0.scores"
cell = [0, 1]
value = "1.67"
)");
  CHECK(m.report.wrong == 1);
  CHECK(m.text.find("given 1.67 · true 1.6755 · 2 decimals must round to 1.68") !=
        std::string::npos);
}

TEST_CASE("verify report: the last line is the page's result, in the full text and in --brief") {
  const Marked right(R"(
[[answer]]
step = "head0.scores"
row = 0
values = ["1.679", "1.676", "1.846", "1.974"]
)");
  CHECK(right.report.passed());
  CHECK(right.text.ends_with("\nresult: passed — every value is ok or carried\n"));
  const std::string brief = attn::verify_report_brief(right.truth, right.report, 100);
  CHECK(brief == "head0.scores: 4 ok\nresult: passed — every value is ok or carried\n");

  // The river's weights from scaled scores rounded to 2 decimals (docs/answers-format.md's
  // example): rounded, so not a pass; one value with too few decimals.
  const Marked early(R"(
[[answer]]
step = "head0.weights"
row = 0
values = [0.236, 0.236, 0.255, 0.274]

[[answer]]
step = "head0.scores"
cell = [3, 0]
value = 2
)");
  CHECK(early.report.rounded == 3);
  CHECK_FALSE(early.report.passed());
  const std::string last =
      "result: not passed — 3 values off because earlier values were rounded too early (keep 5 "
      "decimals while you work); 1 value with too few decimals: write 1 decimal\n";
  // The text wraps its lines at 100 columns: compared with the breaks undone.
  const std::string unwrapped = std::regex_replace(early.text, std::regex("\n  +"), " ");
  CHECK(unwrapped.ends_with("\n" + last));
  const std::string brief_early = attn::verify_report_brief(early.truth, early.report, 200);
  CHECK(brief_early ==
        "head0.scores: 0 ok · 1 imprecise — first: head0.scores[3,0] (by, river) imprecise\n"
        "head0.weights: 1 ok · 3 rounded — first: head0.weights[0,1] (river, bank) rounded "
        "· mistake: rounding\n" +
            last);
}
