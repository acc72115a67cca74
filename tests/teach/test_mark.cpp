// Marking a class: points per step from cell verdicts, the points file, the
// gradebook's quoting, and a student folder marked end to end.
#include <doctest/doctest.h>

#include <cmath>
#include <filesystem>
#include <memory>
#include <string>

#include "backend/backend.hpp"
#include "core/atomic_file.hpp"
#include "core/error.hpp"
#include "core/pipeline.hpp"
#include "support/hostile_lesson.hpp"
#include "support/sheet_fixture.hpp"
#include "teach/answer_template.hpp"
#include "teach/mark.hpp"

namespace fs = std::filesystem;

namespace {

// A fresh, empty folder under the system's temporary folder.
fs::path scratch(const std::string& name) {
  const fs::path dir = fs::temp_directory_path() / ("attn-test-mark-" + name);
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

std::string error_of(const std::string& toml) {
  const fs::path dir = scratch("scheme");
  const std::string path = (dir / "points.toml").string();
  attn::write_file_atomically(path, toml);
  try {
    attn::read_mark_scheme(path);
  } catch (const attn::InputError& e) {
    return e.what();
  }
  return "";
}

// A student folder of a class without roster.csv.
attn::RosterEntry unlisted(const std::string& folder) {
  attn::RosterEntry entry;
  entry.folder = folder;
  return entry;
}

// The key's value of a cell to 3 decimals, quoted for an answers file.
std::string written(const attn::Trace& t, const char* step, std::size_t r, std::size_t c) {
  return "\"" + testsupport::rounded(t.at(step).value(r, c), 3) + "\"";
}

}  // namespace

TEST_CASE("mark scheme: defaults, short names, and what each verdict earns") {
  const testsupport::SheetFixture f("Ada");
  attn::MarkScheme scheme;
  CHECK(scheme.points_for(f.exercise.trace, "head0.scores") == 1);
  scheme.points["weights"] = 3;
  scheme.points["head0.scores"] = 2;
  CHECK(scheme.points_for(f.exercise.trace, "head0.weights") == 3);
  CHECK(scheme.points_for(f.exercise.trace, "head0.scores") == 2);
  CHECK(scheme.points_for(f.exercise.trace, "head0.context") == 1);
  CHECK(scheme.credit(attn::Verdict::ok) == 1);
  CHECK(scheme.credit(attn::Verdict::carried) == 1);
  CHECK(scheme.credit(attn::Verdict::rounded) == 0.5);
  CHECK(scheme.credit(attn::Verdict::imprecise) == 0.5);
  CHECK(scheme.credit(attn::Verdict::wrong) == 0);
  CHECK(scheme.credit(attn::Verdict::missing) == 0);
}

TEST_CASE("points file: read, and every mistake in it named") {
  const fs::path dir = scratch("read");
  const std::string path = (dir / "points.toml").string();
  attn::write_file_atomically(
      path, "[points]\nscores = 2\ndefault = 0.5\n[credit]\ncarried = 0.75\nimprecise = 0\n");
  const attn::MarkScheme s = attn::read_mark_scheme(path);
  CHECK(s.points.at("scores") == 2);
  CHECK(s.default_points == 0.5);
  CHECK(s.carried == 0.75);
  CHECK(s.imprecise == 0);
  CHECK(s.rounded == 0.5);
  CHECK(error_of("[points]\nscores = -1\n").find("'points.scores': points cannot be negative") !=
        std::string::npos);
  CHECK(error_of("[credit]\ncarried = 2\n").find("'credit.carried'") != std::string::npos);
  CHECK(error_of("[credit]\nok = 0.5\n").find("'credit.ok'") != std::string::npos);
  CHECK(error_of("[pionts]\n").find("pionts") != std::string::npos);
  CHECK(error_of("[points]\nscores = \"two\"\n").find("points.toml:2") != std::string::npos);
}

TEST_CASE("a student folder marked: carried credit, a blank cell, the first mistake") {
  const testsupport::SheetFixture f("Ada");
  const attn::Trace& t = f.exercise.trace;
  const fs::path dir = scratch("student");
  fs::create_directories(dir / "ada");
  attn::write_file_atomically((dir / "ada" / "lesson.toml").string(), f.exercise.lesson_toml);
  // scores all right; scaled: forgot to divide (the scores again) -> wrong, and
  // weights and context computed from those scaled -> carried; one context cell blank.
  std::string answers = "student = \"Ada\"\nvariant = \"" + f.model.variant + "\"\n";
  auto matrix = [&](const char* step, const char* from) {
    std::string out = std::string("[[answer]]\nstep = \"") + step + "\"\nvalues = [";
    const arma::mat& v = t.at(step).value;
    for (std::size_t r = 0; r < v.n_rows; ++r) {
      out += r ? ", [" : "[";
      for (std::size_t c = 0; c < v.n_cols; ++c)
        out += (c ? ", " : "") + (std::string(step) == "head0.context" && r == 0 && c == 0
                                      ? std::string("\"\"")
                                      : written(t, from, r, c));
      out += "]";
    }
    return out + "]\n";
  };
  answers += matrix("head0.scores", "head0.scores");
  answers += matrix("head0.scaled", "head0.scores");
  attn::write_file_atomically((dir / "ada" / "answers.toml").string(), answers);
  const attn::StudentMark m = attn::mark_student(dir, unlisted("ada"), attn::MarkScheme{});
  CHECK(m.problem == "");
  CHECK(m.name == "Ada");
  CHECK(m.variant == f.model.variant);
  REQUIRE(m.steps.size() == 4);
  CHECK(m.steps[0].points == 1);
  CHECK(m.steps[0].ok == 9);
  // The scaled cells that differ from the scores (a score of 0 is right unscaled too).
  const arma::mat& scores = t.at("head0.scores").value;
  const arma::mat& scaled = t.at("head0.scaled").value;
  std::size_t off = 0;
  std::string first;
  for (std::size_t r = 0; r < scores.n_rows; ++r)
    for (std::size_t c = 0; c < scores.n_cols; ++c)
      if (std::abs(std::round(scores(r, c) * 1000) / 1000 - scaled(r, c)) > 0.000505) {
        ++off;
        if (first.empty())
          first = "head0.scaled[" + std::to_string(r) + "," + std::to_string(c) + "]";
      }
  REQUIRE(off > 0);
  CHECK(m.steps[1].wrong == off);
  CHECK(m.steps[1].ok == 9 - off);
  CHECK(m.steps[1].points == doctest::Approx((9.0 - static_cast<double>(off)) / 9.0));
  CHECK(m.steps[2].blank == 9);  // weights not answered
  CHECK(m.steps[3].blank == 6);
  CHECK(m.total == doctest::Approx(1 + (9.0 - static_cast<double>(off)) / 9.0));
  CHECK(m.out_of == 4);
  CHECK(m.first_wrong == first);
  CHECK(m.mistake == "unscaled");
  CHECK(m.feedback.find("of 4 points**") != std::string::npos);
  CHECK(m.feedback.find("unscaled") != std::string::npos);
  // No answers file: not marked, and said so.
  fs::remove(dir / "ada" / "answers.toml");
  const attn::StudentMark none = attn::mark_student(dir, unlisted("ada"), attn::MarkScheme{});
  CHECK(none.problem == "no answers.toml in " + (dir / "ada").string() +
                            "; put the student's filled-in answers.toml there (exercise writes a "
                            "blank one)");
  CHECK(none.out_of == 4);
  CHECK(none.total == 0);
  fs::remove_all(dir);
}

TEST_CASE("marks.csv: a byte-order mark, RFC 4180 quoting, a column per asked step") {
  attn::StudentMark a;
  a.name = "O'Brien, \"Pat\"";
  a.folder = "o-brien-pat";
  a.variant = "00000000000000ff";
  a.steps = {{"head0.scores", 1.0, 2.0}, {"head0.weights", 2.0 / 3.0, 1.0}};
  a.total = 5.0 / 3.0;
  a.out_of = 3;
  a.first_wrong = "head0.weights[1,2]";
  a.mistake = "softmax_wrong_axis";
  const std::string csv = attn::marks_csv({a});
  CHECK(
      csv.starts_with("\xEF\xBB\xBFname,folder,variant,head0.scores (2),head0.weights (1),"
                      "total,out of,first wrong,mistake,problem\r\n"));
  CHECK(csv.find("\"O'Brien, \"\"Pat\"\"\",o-brien-pat,00000000000000ff,1,0.67,1.67,3,"
                 "\"head0.weights[1,2]\",softmax_wrong_axis,\r\n") != std::string::npos);
}

TEST_CASE("class summary: a name or problem with a pipe or a newline keeps its table row whole") {
  attn::StudentMark unmarked;
  unmarked.folder = "ann";
  unmarked.name = "Ann | B\nC";
  unmarked.problem = "ann/lesson.toml: line 3 | oops\n\nnext";
  attn::StudentMark other = unmarked;
  other.folder = "bo";
  other.name = "Bo";
  const std::string summary = attn::class_summary({unmarked, other});
  CHECK_FALSE(testsupport::has_raw_control(summary));
  CHECK(summary.find("| Ann \\| B␊C | ann | ann/lesson.toml: line 3 \\| oops␊␊next |\n") !=
        std::string::npos);
  const testsupport::TableShapes shapes = testsupport::markdown_table_shapes(summary);
  CHECK(shapes.broken_row == "");
  CHECK(shapes.tables == 2);  // steps, not marked
}
