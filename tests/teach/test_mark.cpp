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
#include "core/lesson.hpp"
#include "core/pipeline.hpp"
#include "support/hostile_lesson.hpp"
#include "support/sheet_fixture.hpp"
#include "teach/answer_template.hpp"
#include "teach/fingerprint.hpp"
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

namespace {

// A class folder with a student "ada" from the fixture and `roster` as roster.csv.
fs::path roster_class(const std::string& name, const std::string& roster) {
  const testsupport::SheetFixture f("Ada");
  const fs::path dir = scratch(name);
  fs::create_directories(dir / "ada");
  attn::write_file_atomically((dir / "ada" / "lesson.toml").string(), f.exercise.lesson_toml);
  attn::write_file_atomically((dir / "roster.csv").string(), roster);
  return dir;
}

std::string roster_error(const std::string& roster) {
  const fs::path dir = roster_class("roster-error", roster);
  try {
    attn::class_roster(dir);
  } catch (const attn::InputError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("csv_rows: the line each row starts on, a quoted line end inside a field") {
  std::vector<int> lines;
  const auto rows = attn::csv_rows("a,b\r\n\"x\ny\",c\n\nd,e\n", &lines);
  REQUIRE(rows.size() == 4);
  CHECK(rows[1][0] == "x\ny");
  CHECK(rows[3][1] == "e");
  CHECK(lines == std::vector<int>{1, 2, 4, 5});
}

TEST_CASE("roster.csv: each folder is a sub-folder of the class, named by itself") {
  const std::string head = "name,folder,variant,fingerprint\r\n";
  const std::string fp =
      attn::lesson_fingerprint(testsupport::SheetFixture("Ada").exercise.lesson_toml);
  const fs::path dir = roster_class("roster-ok", head + "Ada,ada,v," + fp + "\r\n,,,\r\n");
  const std::vector<attn::RosterEntry> entries = attn::class_roster(dir);
  REQUIRE(entries.size() == 1);
  CHECK(entries[0].folder == "ada");
  CHECK(entries[0].name == "Ada");
  CHECK(entries[0].fingerprint == fp);
  CHECK(entries[0].line == 2);
  CHECK(entries[0].status == attn::RosterStatus::listed);
  const std::pair<std::string, std::string> bad[] = {
      {"/srv/victim/created/deep", "is a path, not the name of one folder"},
      {"../../victim/s2", "is a path, not the name of one folder"},
      {"..", "leaves the class folder"},
      {".", "leaves the class folder"},
      {"", "is empty"},
      {".hidden", "starts with '.'"},
      {"a\\b", "is a path"},
      {"a\tb", "has a control character"},
      {"\xff", "is not UTF-8"},
      {std::string(256, 'e'), "is longer than 255 bytes"}};
  for (const auto& [folder, says] : bad) {
    CAPTURE(folder);
    const std::string error = roster_error(head + "Ada,ada,,\r\nEve,\"" + folder + "\",,\r\n");
    CHECK(error.find("roster.csv:3: folder \"") != std::string::npos);
    CHECK(error.find(says) != std::string::npos);
    CHECK(error.find("(\"eve\" for Eve): correct the row or remove it") != std::string::npos);
  }
  CHECK(roster_error(head + "Ada,ada,,\r\nBob,ada,,\r\n")
            .find("roster.csv:3: folder \"ada\" is already on line 2") != std::string::npos);
  CHECK(roster_error(head + "Ada,ada,,\r\nAda,bob,,\r\n")
            .find("roster.csv:3: \"Ada\" is already on line 2") != std::string::npos);
  CHECK(roster_error(head + ",ada,,\r\n").find("roster.csv:2: no name for folder \"ada\"") !=
        std::string::npos);
  CHECK(roster_error(head + std::string(201, 'A') + ",ada,,\r\n")
            .find("roster.csv:2: the name is 201 characters long") != std::string::npos);
  CHECK(roster_error(head + "Ada,ada,,sha256:abc\r\n")
            .find("roster.csv:2: fingerprint \"sha256:abc\" is not one exercise writes") !=
        std::string::npos);
  CHECK(roster_error("name,dir\r\nAda,ada\r\n").find("no 'folder' column") != std::string::npos);
}

TEST_CASE("a student folder checked against its roster row: fingerprint, name, variant") {
  const testsupport::SheetFixture f("Ada");
  const fs::path dir = roster_class("tampered", "name,folder\r\nAda,ada\r\n");
  attn::RosterEntry entry;
  entry.folder = "ada";
  entry.name = "Ada";
  entry.variant = f.model.variant;
  entry.fingerprint = f.exercise.fingerprint;
  entry.line = 2;
  entry.status = attn::RosterStatus::listed;
  attn::StudentMark m = attn::mark_student(dir, entry, attn::MarkScheme{});
  CHECK(m.fingerprint_checked);
  CHECK_FALSE(m.tampered);
  CHECK(m.fingerprint == f.exercise.fingerprint);
  CHECK(m.problem.starts_with("no answers.toml"));
  // X's first entry changed: its fingerprint differs.
  std::string edited = f.exercise.lesson_toml;
  const std::size_t first = edited.find("X = [[") + 6;
  edited.replace(first, edited.find(',', first) - first, "9.9");
  attn::write_file_atomically((dir / "ada" / "lesson.toml").string(), edited);
  CHECK(attn::parse_lesson(edited, "edited").X(0, 0) == 9.9);
  m = attn::mark_student(dir, entry, attn::MarkScheme{});
  CHECK(m.tampered);
  CHECK(m.problem.starts_with("tampered: " + (dir / "ada" / "lesson.toml").string() +
                              " is not the lesson exercise wrote for Ada: its fingerprint is not "
                              "the one on roster.csv line 2; put back the lesson.toml"));
  CHECK(m.steps.empty());
  CHECK(m.name == "Ada");
  CHECK(m.variant == f.model.variant);
  CHECK(m.feedback.starts_with("# Feedback: Ada\n\nNot marked: tampered: "));
  // Without a fingerprint (an older roster.csv), the name and the variant are still checked.
  attn::write_file_atomically((dir / "ada" / "lesson.toml").string(), f.exercise.lesson_toml);
  entry.fingerprint.clear();
  entry.name = "Bob";
  m = attn::mark_student(dir, entry, attn::MarkScheme{});
  CHECK(m.problem.starts_with("tampered: " + (dir / "ada" / "lesson.toml").string() +
                              " is the exercise of \"Ada\", but roster.csv line 2 gives this "
                              "folder to Bob;"));
  entry.name = "Ada";
  entry.variant = "0000000000000000";
  m = attn::mark_student(dir, entry, attn::MarkScheme{});
  CHECK(m.problem.find("is variant " + f.model.variant +
                       ", but roster.csv line 2 gives Ada variant 0000000000000000") !=
        std::string::npos);
  entry.variant.clear();
  m = attn::mark_student(dir, entry, attn::MarkScheme{});
  CHECK_FALSE(m.tampered);
  CHECK_FALSE(m.fingerprint_checked);
  fs::remove_all(dir);
}
