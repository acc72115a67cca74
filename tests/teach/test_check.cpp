// Checking a lesson against its golden file: pass on the committed file, fail
// naming the step and cell of one altered number, missing as a status; and the
// report's JSON fields read back.
#include <doctest/doctest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <unistd.h>

#include "backend/cpu_backend.hpp"
#include "core/atomic_file.hpp"
#include "core/golden.hpp"
#include "core/lesson_library.hpp"
#include "render/numbers.hpp"
#include "support/mini_json.hpp"
#include "teach/check.hpp"

namespace {

// A width no report line reaches: the report's words checked, not its wrapping.
constexpr std::size_t kUnwrapped = 100000;

const std::string kSource = ATTN_SOURCE_DIR;

attn::LessonCheck check(const std::string& golden_path) {
  attn::CpuBackend cpu;
  return attn::check_lesson(attn::find_lesson("river-bank"), golden_path, attn::kGoldenTolerance,
                            cpu);
}

// The golden file of river-bank with head0.scores[2,1] written as `value`.
std::string altered_golden(const std::string& value) {
  std::string text = attn::read_file(kSource + "/golden/river-bank.toml");
  std::size_t at = text.find("id = \"head0.scores\"");
  at = text.find("data = [", at);
  for (int row = 0; row < 3; ++row) at = text.find("\n  [", at + 1);  // the third row
  const std::size_t start = text.find(", ", at) + 2;                  // its second number
  text.replace(start, text.find(',', start) - start, value);
  return text;
}

// Where each [[claim]] table of river-bank starts, counted from line 1.
std::vector<int> claim_lines() {
  std::ifstream in(kSource + "/lessons/river-bank.toml");
  std::vector<int> lines;
  int number = 0;
  for (std::string line; std::getline(in, line);) {
    ++number;
    if (line == "[[claim]]") lines.push_back(number);
  }
  return lines;
}

}  // namespace

TEST_CASE("check_lesson: the committed golden file of river-bank passes") {
  const std::string path = kSource + "/golden/river-bank.toml";
  const attn::LessonCheck c = check(path);
  CHECK(c.status == attn::GoldenStatus::pass);
  CHECK(c.mismatches.empty());
  CHECK(c.golden_path == path);
  CHECK(c.claims.size() == claim_lines().size());
  // By hand: Q(walk)·K(bank) = 0.63×0.66 + 0.74×0.54 + 0.64×0.66 + 0.87×0.45 = 1.6293.
  CHECK(c.trace.at("head0.scores").value(2, 1) == doctest::Approx(1.6293).epsilon(1e-12));
  CHECK(attn::check_report_text(c, attn::kGoldenTolerance, kUnwrapped)
            .find(fmt::format("golden: pass — all {} steps match {}", c.trace.steps.size(),
                              path)) != std::string::npos);
  const testjson::Value json = testjson::parse(attn::check_report_json(c));
  CHECK(json["golden"]["status"].text == "pass");
  CHECK(json["golden"]["mismatches"].size() == 0);
}

TEST_CASE("check_lesson: one altered golden number fails, naming that step and cell") {
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / fmt::format("attn-check-{}", ::getpid());
  std::filesystem::create_directories(dir);
  const std::string path = (dir / "river-bank.toml").string();
  attn::write_file_atomically(path, altered_golden("1.6294"));

  const attn::LessonCheck c = check(path);
  CHECK(c.status == attn::GoldenStatus::fail);
  REQUIRE(c.mismatches.size() == 1);
  const attn::GoldenMismatch& m = c.mismatches[0];
  CHECK(m.step == "head0.scores");
  REQUIRE(m.cell.has_value());
  CHECK(m.cell->first == 2);
  CHECK(m.cell->second == 1);
  CHECK(m.golden == 1.6294);
  CHECK(m.computed == doctest::Approx(1.6293).epsilon(1e-12));
  const std::string text = attn::check_report_text(c, attn::kGoldenTolerance, kUnwrapped);
  CHECK(text.find("golden: FAIL — 1 step(s) differ from " + path) != std::string::npos);
  CHECK(text.find("head0.scores [2, 1]: golden 1.6294") != std::string::npos);

  const testjson::Value json = testjson::parse(attn::check_report_json(c));
  CHECK(json["golden"]["status"].text == "fail");
  CHECK(json["golden"]["file"].text == path);
  REQUIRE(json["golden"]["mismatches"].size() == 1);
  const testjson::Value& jm = json["golden"]["mismatches"][0];
  CHECK(jm["step"].text == "head0.scores");
  CHECK(jm["cell"][0].number == 2);
  CHECK(jm["cell"][1].number == 1);
  CHECK(jm["golden"].number == 1.6294);
  CHECK(jm["computed"].number == c.trace.at("head0.scores").value(2, 1));
  std::filesystem::remove_all(dir);
}

TEST_CASE("check_report_text: wrapped to the width, continuation lines indented") {
  const attn::LessonCheck c = check(kSource + "/golden/river-bank.toml");
  const std::string text = attn::check_report_text(c, attn::kGoldenTolerance, 60);
  std::size_t start = 0, lines = 0;
  while (start < text.size()) {
    const std::size_t end = text.find('\n', start);
    const std::string line = text.substr(start, end - start);
    CHECK(attn::display_width(line) <= 60);
    CHECK((lines == 0 || line.starts_with("  ")));  // only the header starts at column 0
    start = end + 1;
    ++lines;
  }
  CHECK(lines > c.claims.size());
}

TEST_CASE("check_lesson: no golden file is the status missing, not an error") {
  const std::string path = kSource + "/golden/no-such-lesson.toml";
  const attn::LessonCheck c = check(path);
  CHECK(c.status == attn::GoldenStatus::missing);
  CHECK(attn::check_report_text(c, attn::kGoldenTolerance, kUnwrapped)
            .find("golden: MISSING — no " + path +
                  "; write it with `attn-trace golden river-bank`") != std::string::npos);
  CHECK(testjson::parse(attn::check_report_json(c))["golden"]["status"].text == "missing");
}

TEST_CASE("check_report_json: the lesson, and every claim with its stated and computed values") {
  const attn::LessonCheck c = check(kSource + "/golden/river-bank.toml");
  const testjson::Value json = testjson::parse(attn::check_report_json(c));
  CHECK(json["lesson"].text == "river-bank");
  CHECK(json["title"].text == c.lesson.title);
  CHECK(json["source"].text == c.lesson.source);
  const std::vector<int> lines = claim_lines();
  REQUIRE(json["claims"].size() == lines.size());
  for (std::size_t k = 0; k < lines.size(); ++k) {
    CAPTURE(k);
    CHECK(json["claims"][k]["line"].number == lines[k]);
    const std::string status = json["claims"][k]["status"].text;
    CHECK((status == "agrees" || status == "carried" || status == "disagrees"));
    CHECK(json["claims"][k]["explanation"].is_null() == (status == "agrees"));
    CHECK(json["claims"][k]["cell_status"].size() == json["claims"][k]["stated"].size());
  }
  // The first claim, Q(river) = [0.69, 0.50, 0.86, 0.85], is right.
  const testjson::Value& q = json["claims"][0];
  CHECK(q["step"].text == "Q");
  CHECK(q["row"].number == 0);
  CHECK(q["status"].text == "agrees");
  CHECK(q["stated"][1].text == "0.50");
  // The second, K(bank) ending in 0.51: by hand 0.5·0.3 + 0.3·0.2 + 0.6·0.1 + 0.2·0.9 = 0.45.
  const testjson::Value& k = json["claims"][1];
  CHECK(k["step"].text == "K");
  CHECK(k["status"].text == "disagrees");
  CHECK(k["stated"][3].number == 0.51);
  CHECK(k["computed"][3].text == "0.45");
  CHECK(k["computed_exact"][3].number == doctest::Approx(0.45).epsilon(1e-12));
  CHECK(k["computed_exact"][3].number == c.trace.at("K").value(1, 3));
  // A cell claim: river·bank, stated 1.727, computed 1.6755 shown to the stated 3 decimals.
  const testjson::Value& s = json["claims"][3];
  CHECK(s["cell"][1].number == 1);
  CHECK(s["stated"].number == 1.727);
  CHECK(s["computed"].text == "1.676");
  // ... carried: right on the document's own K(bank), 1.7265 on its own numbers.
  CHECK(s["status"].text == "carried");
  CHECK(s["cell_status"].text == "carried");
  CHECK(s["own"].number == doctest::Approx(1.7265).epsilon(1e-12));
  CHECK(q["own"][0].is_null());
  // The exponentials: three carried, e^0.8635 a real slip.
  const testjson::Value& e = json["claims"][10];
  CHECK(e["step"].text == "head0.exp");
  CHECK(e["status"].text == "disagrees");
  CHECK(e["cell_status"][0].text == "carried");
  CHECK(e["cell_status"][1].text == "slip");
  CHECK(e["own"][1].number == doctest::Approx(std::exp(0.8635)).epsilon(1e-12));
}

TEST_CASE("derived claims: read from the lesson, counted apart, marked in text and JSON") {
  attn::CpuBackend cpu;
  // mask-after-softmax: its three claims are the lesson's own numbers.
  const attn::LessonCheck c =
      attn::check_lesson(attn::find_lesson("mask-after-softmax"),
                         kSource + "/golden/mask-after-softmax.toml", attn::kGoldenTolerance, cpu);
  const attn::ClaimCounts n = attn::count_claims(c.claims);
  CHECK(n.checked == 3);
  CHECK(n.derived == 3);
  CHECK(n.derived_agree == 3);
  const std::string text = attn::check_report_text(c, attn::kGoldenTolerance, kUnwrapped);
  CHECK(text.find("; 3 of them derived by the lesson itself") != std::string::npos);
  CHECK(text.find("(the lesson's own number): stated [0.3255, 0.3255, 0.3491]") !=
        std::string::npos);
  const testjson::Value json = testjson::parse(attn::check_report_json(c));
  CHECK(json["claims"][0]["derived"].boolean);
  // mask-broadcasting: a stated value claim, two derived ones, a derived shape.
  const attn::LessonCheck b =
      attn::check_lesson(attn::find_lesson("mask-broadcasting"),
                         kSource + "/golden/mask-broadcasting.toml", attn::kGoldenTolerance, cpu);
  const testjson::Value both = testjson::parse(attn::check_report_json(b));
  CHECK(both["claims"][0]["derived"].boolean);
  CHECK_FALSE(both["claims"][2]["derived"].boolean);
  CHECK(both["quantity_claims"][0]["derived"].boolean);
  // Counting one claim at a time keeps the stated and derived counts apart.
  attn::ClaimCounts m;
  m.add(attn::ClaimStatus::carried, false);
  m.add(attn::ClaimStatus::disagrees, true);
  m.add(attn::ClaimStatus::agrees, true);
  CHECK(m.checked == 3);
  CHECK(m.carried == 1);
  CHECK(m.derived_carried == 0);
  CHECK(m.derived == 2);
  CHECK(m.derived_agree == 1);
  CHECK(m.disagree == 1);
}
