// Marking a class: points per step from cell verdicts, the points file, the
// gradebook's quoting, and a student folder marked end to end.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdio>
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
#include "teach/exercise.hpp"
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
  a.id = "2024001";
  attn::StudentMark absent;
  absent.id = "2024002";
  absent.name = "张伟";
  absent.folder = "张伟";
  absent.variant = "0000000000000001";
  absent.not_handed_in = true;
  absent.steps = {{"head0.scores", 0, 2.0}, {"head0.weights", 0, 1.0}};
  absent.out_of = 3;
  const std::string csv = attn::marks_csv({a, absent});
  CHECK(csv.starts_with(
      "\xEF\xBB\xBFid,name,folder,variant,status,head0.scores (2),head0.weights (1),"
      "total,out of,first wrong,mistake,problem,unreadable cells\r\n"));
  CHECK(csv.find("\r\n2024001,\"O'Brien, \"\"Pat\"\"\",o-brien-pat,00000000000000ff,marked,1,0.67,"
                 "1.67,3,\"head0.weights[1,2]\",softmax_wrong_axis,,\r\n") != std::string::npos);
  // Not handed in: a status, no points (not 0), the points possible.
  CHECK(csv.ends_with("\r\n2024002,张伟,张伟,0000000000000001,not handed in,,,,3,,,,\r\n"));
  const std::string json = attn::marks_json({a, absent});
  CHECK(json.find("{\"id\": \"2024001\", \"name\": \"O'Brien, \\\"Pat\\\"\", \"folder\": "
                  "\"o-brien-pat\", \"variant\": \"00000000000000ff\", \"status\": \"marked\", "
                  "\"total\": 1.6666666666666667,") != std::string::npos);
  CHECK(json.find("\"status\": \"not handed in\", \"total\": null, \"out_of\": 3,") !=
        std::string::npos);
  CHECK(json.find("{\"step\": \"head0.scores\", \"points\": null, \"out_of\": 2,") !=
        std::string::npos);
}

namespace {

// A printed number of points (at most two decimals) in hundredths.
long long hundredths(const std::string& text) {
  const std::size_t dot = text.find('.');
  long long whole = std::stoll(text.substr(0, dot));
  if (dot == std::string::npos) return whole * 100;
  std::string part = text.substr(dot + 1);
  REQUIRE(part.size() <= 2);
  while (part.size() < 2) part += '0';
  return whole * 100 + std::stoll(part);
}

}  // namespace

TEST_CASE("printed points: the printed steps add up to the printed total, random schemes") {
  // Three steps of 1/3 each, all right: 0.34 + 0.33 + 0.33 = 1, not 0.99 of 1.
  attn::StudentMark thirds;
  thirds.steps = {{"a", 1.0 / 3, 1.0 / 3}, {"b", 1.0 / 3, 1.0 / 3}, {"c", 1.0 / 3, 1.0 / 3}};
  thirds.total = 1.0 / 3 + 1.0 / 3 + 1.0 / 3;
  const attn::PrintedPoints p = attn::printed_points(thirds);
  CHECK(p.steps == std::vector<std::string>{"0.34", "0.33", "0.33"});
  CHECK(p.total == "1");
  // Random points per step, cells per step and credits, as marks.csv sees them.
  attn::SplitMix64 rng(24);
  const double credits[] = {0, 0.5, 1, 0.25, 0.75, 1.0 / 3};
  for (int student = 0; student < 2000; ++student) {
    attn::StudentMark m;
    const auto steps = static_cast<std::size_t>(rng.between(1, 8));
    for (std::size_t s = 0; s < steps; ++s) {
      const double out_of = static_cast<double>(rng.between(1, 700)) / 70.0;  // 1/70 to 10
      const auto cells = static_cast<double>(rng.between(1, 64));
      double earned = 0;
      for (int c = 0; c < static_cast<int>(cells); ++c) earned += credits[rng.below(6)];
      const double points = out_of * earned / cells;
      m.steps.push_back({"s" + std::to_string(s), points, out_of});
      m.total += points;
    }
    const attn::PrintedPoints printed = attn::printed_points(m);
    REQUIRE(printed.steps.size() == steps);
    long long sum = 0;
    for (std::size_t s = 0; s < steps; ++s) {
      sum += hundredths(printed.steps[s]);
      // Each column within a hundredth of its points.
      CHECK(std::abs(static_cast<double>(hundredths(printed.steps[s])) / 100 -
                     m.steps[s].points) < 0.01 + 1e-9);
    }
    CHECK(sum == hundredths(printed.total));
    CHECK(hundredths(printed.total) == std::llround(m.total * 100));
  }
}

namespace {

// Answers to every asked step of `f`, from its key: `decimals` decimals, and
// `weights_decimals` for the weights.
std::string key_answers(const testsupport::SheetFixture& f, int decimals, int weights_decimals) {
  std::string out = "student = \"" + f.exercise.student.name + "\"\nvariant = \"" +
                    f.model.variant + "\"\n";
  for (const attn::SheetMatrix& m : f.model.asked) {
    const int d = m.id == "head0.weights" ? weights_decimals : decimals;
    out += "[[answer]]\nstep = \"" + m.id + "\"\nvalues = [";
    for (std::size_t r = 0; r < m.value.n_rows; ++r) {
      out += r ? ", [" : "[";
      for (std::size_t c = 0; c < m.value.n_cols; ++c)
        out += (c ? ", \"" : "\"") + testsupport::rounded(m.value(r, c), d) + "\"";
      out += "]";
    }
    out += "]\n";
  }
  return out;
}

}  // namespace

TEST_CASE("a class with IDs and absentees: marks.csv, summary.md and feedback.md") {
  const fs::path dir = scratch("absent");
  const testsupport::SheetFixture right("张伟"), two("李娜"), absent("Ada");
  std::string roster = "id,name,folder,variant,fingerprint\r\n";
  const std::pair<const testsupport::SheetFixture*, const char*> students[] = {
      {&right, "2024001"}, {&two, "2024002"}, {&absent, "2024003"}};
  for (const auto& [f, id] : students) {
    const std::string folder = f->exercise.student.name;
    fs::create_directories(dir / folder);
    attn::write_file_atomically((dir / folder / "lesson.toml").string(), f->exercise.lesson_toml);
    roster += std::string(id) + "," + folder + "," + folder + "," + f->model.variant + "," +
              attn::lesson_fingerprint(f->exercise.lesson_toml) + "\r\n";
  }
  attn::write_file_atomically((dir / "roster.csv").string(), roster);
  attn::write_file_atomically((dir / "张伟" / "answers.toml").string(), key_answers(right, 3, 3));
  attn::write_file_atomically((dir / "李娜" / "answers.toml").string(), key_answers(two, 3, 2));
  attn::write_file_atomically((dir / "Ada" / "answers.toml").string(),
                              attn::answers_template(absent.model));
  const std::vector<attn::StudentMark> marks = attn::mark_class(dir, attn::MarkScheme{}, "");
  REQUIRE(marks.size() == 3);
  CHECK(marks[0].id == "2024001");
  CHECK(marks[0].total == 4);
  CHECK(attn::mark_status(marks[0]) == "marked");
  // Two decimals where the sheet asks three: imprecise weights, half their credit.
  const std::size_t exact = [&] {
    std::size_t n = 0;
    const arma::mat& w = two.exercise.trace.at("head0.weights").value;
    for (const double v : w) n += std::abs(std::round(v * 100) / 100 - v) < 1e-12;
    return n;
  }();
  CHECK(marks[1].imprecise == 9 - exact);
  CHECK(marks[1].write_decimals == 3);
  CHECK(marks[1].total == doctest::Approx(3 + (exact + 0.5 * (9.0 - exact)) / 9.0));
  CHECK(marks[2].not_handed_in);
  CHECK(marks[2].problem == "");
  CHECK(marks[2].total == 0);
  CHECK(marks[2].out_of == 4);
  CHECK(attn::mark_status(marks[2]) == "not handed in");

  const std::string csv = attn::marks_csv(marks);
  CHECK(csv.find("\r\n2024001,张伟,张伟," + right.model.variant + ",marked,1,1,1,1,4,4,,,,\r\n") !=
        std::string::npos);
  CHECK(csv.ends_with("\r\n2024003,Ada,Ada," + absent.model.variant +
                      ",not handed in,,,,,,4,,,,\r\n"));
  const std::string summary = attn::class_summary(marks);
  const double mean = (4 + marks[1].total) / 2;  // Ada left out
  CHECK(summary.find("3 students · 2 marked · 1 not handed in (below) · mean ") !=
        std::string::npos);
  char mean_text[32];
  std::snprintf(mean_text, sizeof mean_text, "%.2f", mean);
  std::string mean_shown = mean_text;
  while (mean_shown.back() == '0') mean_shown.pop_back();
  if (mean_shown.back() == '.') mean_shown.pop_back();
  CHECK(summary.find("· mean " + mean_shown + " of 4 points") != std::string::npos);
  CHECK(summary.find("| too few decimals (imprecise): write 3 decimals | 1 | 李娜 |  |") !=
        std::string::npos);
  CHECK(summary.find("## Not handed in") != std::string::npos);
  CHECK(summary.find("| Ada | 2024003 | Ada |") != std::string::npos);
  // The steps table counts the two students marked, not Ada.
  CHECK(summary.find("| head0.scores | 1 of 1 | 2 | 0 | 0 |") != std::string::npos);

  const std::string& feedback = marks[1].feedback;
  CHECK(feedback.starts_with("# Feedback: 李娜 (ID 2024002)\n"));
  CHECK(feedback.find("| 1. `head0.scores` — Scores | 1 of 1 | 9 right |") != std::string::npos);
  CHECK(feedback.find("- **Write 3 decimals:** ") != std::string::npos);
  CHECK(feedback.find(dir.string()) == std::string::npos);  // no instructor path
  CHECK(feedback.find("attn-trace mark") == std::string::npos);
  CHECK(marks[2].feedback.find("Not handed in: your answers.toml is the blank template") !=
        std::string::npos);
  fs::remove_all(dir);
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

TEST_CASE("roster.csv's id column: read into each row, a bad or repeated ID names its line") {
  const fs::path dir = scratch("roster-ids");
  for (const char* folder : {"ada", "bob"}) fs::create_directories(dir / folder);
  const auto roster_with = [&](const std::string& rows) {
    attn::write_file_atomically((dir / "roster.csv").string(),
                                "id,name,folder,variant,fingerprint\r\n" + rows);
  };
  roster_with("2024001,Ada,ada,,\r\nX-2,Bob,bob,,\r\n");
  const std::vector<attn::RosterEntry> entries = attn::class_roster(dir);
  REQUIRE(entries.size() == 2);
  CHECK(entries[0].id == "2024001");
  CHECK(entries[0].name == "Ada");
  CHECK(entries[1].id == "X-2");
  CHECK(entries[1].folder == "bob");
  roster_with("2024001,Ada,ada,,\r\n2024001,Bob,bob,,\r\n");
  CHECK_THROWS_WITH_AS(attn::class_roster(dir),
                       doctest::Contains("roster.csv:3: ID 2024001 is already on line 2"),
                       attn::InputError);
  roster_with("2024001,Ada,ada,,\r\n\"=cmd|' /C calc'!A0\",Bob,bob,,\r\n");
  CHECK_THROWS_WITH_AS(attn::class_roster(dir),
                       doctest::Contains("roster.csv:3: the ID \"=cmd|' /C calc'!A0\" does not "
                                         "start with a letter or digit"),
                       attn::InputError);
  // An older roster.csv without the id column still marks, with no IDs.
  attn::write_file_atomically((dir / "roster.csv").string(),
                              "name,folder,variant\r\nAda,ada,\r\nBob,bob,\r\n");
  const std::vector<attn::RosterEntry> older = attn::class_roster(dir);
  REQUIRE(older.size() == 2);
  CHECK(older[0].id == "");
  CHECK(older[0].name == "Ada");
  fs::remove_all(dir);
}

TEST_CASE("feedback's carried credit names the steps with carried values, claims none right as a "
          "whole, and lists them as 'A, B and C'") {
  const testsupport::SheetFixture f("Ada");
  const attn::Lesson& lesson = f.exercise.lesson;
  const std::unique_ptr<attn::Backend> cpu = attn::make_backend("cpu");
  const fs::path dir = scratch("carried-sentence");
  fs::create_directories(dir / "ada");
  attn::write_file_atomically((dir / "ada" / "lesson.toml").string(), f.exercise.lesson_toml);
  // Scores with [0,0] off by 0.5; every later step worked from the student's
  // own values, but scaled [2,2] also off by 0.3: scaled has wrong and carried values.
  attn::Overrides own;
  std::string answers = "student = \"Ada\"\nvariant = \"" + f.model.variant + "\"\n";
  for (const char* step : {"head0.scores", "head0.scaled", "head0.weights", "head0.context"}) {
    arma::mat v = attn::run_pipeline(lesson, *cpu, own).at(step).value;
    v.transform([](double x) { return std::round(x * 1000) / 1000; });
    if (std::string(step) == "head0.scores") v(0, 0) += 0.5;
    if (std::string(step) == "head0.scaled") v(2, 2) += 0.3;
    own[step] = {v, arma::umat(v.n_rows, v.n_cols, arma::fill::ones)};
    answers += std::string("[[answer]]\nstep = \"") + step + "\"\nvalues = [";
    for (std::size_t r = 0; r < v.n_rows; ++r) {
      answers += r ? ", [" : "[";
      for (std::size_t c = 0; c < v.n_cols; ++c)
        answers += (c ? ", \"" : "\"") + testsupport::rounded(v(r, c), 3) + "\"";
      answers += "]";
    }
    answers += "]\n";
  }
  attn::write_file_atomically((dir / "ada" / "answers.toml").string(), answers);
  const attn::StudentMark m = attn::mark_student(dir, unlisted("ada"), attn::MarkScheme{});
  REQUIRE(m.steps.size() == 4);
  CHECK(m.steps[0].wrong == 1);
  CHECK(m.steps[1].wrong >= 1);  // not right as a whole
  CHECK(m.steps[1].carried >= 1);
  CHECK(m.steps[2].carried >= 1);
  CHECK(m.steps[3].carried >= 1);
  CHECK(m.feedback.find(
            "**Carried credit:** the values of your `head0.scaled`, `head0.weights` and "
            "`head0.context` that are right on your own earlier numbers count as right, so a "
            "mistake is counted once, where it was made.\n") != std::string::npos);
  CHECK(m.feedback.find("are right on your own earlier numbers, so") == std::string::npos);
  attn::MarkScheme half;
  half.carried = 0.5;
  const attn::StudentMark h = attn::mark_student(dir, unlisted("ada"), half);
  CHECK(h.feedback.find("**Carried credit:** the values of your `head0.scaled`, `head0.weights` "
                        "and `head0.context` that are right on your own earlier numbers earn 50% "
                        "of their points.\n") != std::string::npos);
  fs::remove_all(dir);
}
