// Tests of the answers file reader: numbers as written, and every bad answer
// an error that names the file, the line, the key and the fix.
#include <doctest/doctest.h>

#include <cmath>
#include <filesystem>
#include <memory>

#include "backend/backend.hpp"
#include "core/atomic_file.hpp"
#include "core/error.hpp"
#include "core/lesson_library.hpp"
#include "core/pipeline.hpp"
#include "teach/answers.hpp"

namespace attn {

namespace {

Trace river_bank() {
  const std::unique_ptr<Backend> cpu = make_backend("cpu");
  return run_pipeline(find_lesson("river-bank"), *cpu);
}

std::string error_of(const std::string& toml) {
  try {
    parse_answers(toml, "mine.toml", river_bank());
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("answers: cells, rows and matrices, with the decimals as written") {
  const std::vector<Answer> a = parse_answers(R"(
[[answer]]
step = "head0.scores"
cell = [0, 1]
value = "1.70"

[[answer]]
step = "K"
row = 1
values = [0.66, 0.54, 0.660, 0.45]
tolerance = 0.01

[[answer]]
step = "head0.masked"
values = [[1, 2, 3, 4], [1, 2, 3, 4], [1, 2, 3, 4], ["-inf", -inf, 1.5e-1, 4]]
)",
                                              "mine.toml", river_bank());
  REQUIRE(a.size() == 3);
  CHECK(a[0].where.kind == CellSelector::Kind::cell);
  CHECK(a[0].values[0][0].value == doctest::Approx(1.7));
  CHECK(a[0].values[0][0].decimals == 2);
  CHECK(a[0].tolerance_for(a[0].values[0][0]) == doctest::Approx(0.005));
  CHECK(a[0].line == 2);
  CHECK(a[1].values[0][2].decimals == 3);
  CHECK(a[1].tolerance_for(a[1].values[0][2]) == doctest::Approx(0.01));
  CHECK(a[1].step_row(0) == 1);
  CHECK(a[1].step_col(3) == 3);
  CHECK(a[2].where.kind == CellSelector::Kind::matrix);
  CHECK(std::isinf(a[2].values[3][0].value));
  CHECK(std::isinf(a[2].values[3][1].value));
  CHECK(a[2].values[3][2].decimals == 2);  // 1.5e-1 = 0.15
  CHECK(a[2].step_row(3) == 3);
}

TEST_CASE("answers: every bad answer is an error naming the file, line, key and fix") {
  SUBCASE("unknown step: lists the valid ids") {
    const std::string e =
        error_of("[[answer]]\nstep = \"head0.score\"\ncell = [0, 1]\nvalue = 1\n");
    CHECK(e.find("mine.toml:2") != std::string::npos);
    CHECK(e.find("unknown step id 'head0.score'") != std::string::npos);
    CHECK(e.find("head0.scores, head0.scaled") != std::string::npos);
  }
  SUBCASE("cell outside the step: gives its shape") {
    const std::string e =
        error_of("[[answer]]\nstep = \"head0.scores\"\ncell = [4, 0]\nvalue = 1\n");
    CHECK(e.find("mine.toml:3: key 'answer[0].cell'") != std::string::npos);
    CHECK(e.find("4×4") != std::string::npos);
  }
  SUBCASE("row of the wrong length") {
    const std::string e = error_of("[[answer]]\nstep = \"Q\"\nrow = 0\nvalues = [0.69, 0.5]\n");
    CHECK(e.find("has 4 numbers, but 2 were given") != std::string::npos);
  }
  SUBCASE("matrix of the wrong shape") {
    const std::string e = error_of("[[answer]]\nstep = \"Q\"\nvalues = [[1, 2, 3, 4]]\n");
    CHECK(e.find("Q is 4×4, but the values given are 1 rows of 4") != std::string::npos);
  }
  SUBCASE("a value that is not a number") {  // a cell unreadable, not the file (test_typed_number)
    const std::string e = error_of("[[answer]]\nstep = \"Q\"\ncell = [0, 0]\nvalue = true\n");
    CHECK(e.find("expected a number, found a boolean") != std::string::npos);
  }
  SUBCASE("one cell given two different values") {
    const std::string e = error_of(
        "[[answer]]\nstep = \"Q\"\ncell = [0, 0]\nvalue = 0.69\n"
        "[[answer]]\nstep = \"Q\"\nrow = 0\nvalues = [0.7, 0.5, 0.86, 0.85]\n");
    CHECK(e.find("mine.toml:5: key 'answer[1]': Q[0, 0] is answered 0.7 here but 0.69 at line 1") !=
          std::string::npos);
  }
  SUBCASE("a typo in a key gets a suggestion") {
    const std::string e = error_of("[[answer]]\nstep = \"Q\"\ncell = [0, 0]\nvalu = 1\n");
    CHECK(e.find("did you mean 'value'") != std::string::npos);
  }
  SUBCASE("no answers at all") {
    CHECK(error_of("# nothing\n").find("no answers") != std::string::npos);
  }
  SUBCASE("a single value without a cell") {
    CHECK(error_of("[[answer]]\nstep = \"Q\"\nvalue = 1\n").find("needs cell = [r, c]") !=
          std::string::npos);
  }
}

}  // namespace attn

namespace attn {

TEST_CASE("answers: a blank cell \"\" is not answered, and a short name means head 0") {
  const AnswersFile file = parse_answers_file(R"(
student = "Ada"
variant = "00000000000000ff"
[[answer]]
step = "scores"
row = 1
values = ["", "1.5", " ", "2"]
)",
                                              "mine.toml", river_bank());
  CHECK(file.student == "Ada");
  CHECK(file.variant == "00000000000000ff");
  REQUIRE(file.answers.size() == 1);
  const Answer& a = file.answers[0];
  CHECK(a.step == "head0.scores");
  REQUIRE(a.values.size() == 1);
  REQUIRE(a.values[0].size() == 4);
  CHECK(a.values[0][0].blank);
  CHECK(std::isnan(a.values[0][0].value));
  CHECK_FALSE(a.values[0][1].blank);
  CHECK(a.values[0][1].value == 1.5);
  CHECK(a.values[0][1].decimals == 1);
  CHECK(a.values[0][2].blank);
  CHECK(a.values[0][3].value == 2);
}

TEST_CASE("answers: another student's variant is refused, naming both students") {
  Lesson lesson = find_lesson("river-bank");
  lesson.student = "Bo";
  lesson.variant = "0000000000000001";
  const std::unique_ptr<Backend> cpu = make_backend("cpu");
  const Trace truth = run_pipeline(lesson, *cpu);
  const std::string path =
      (std::filesystem::temp_directory_path() / "attn-test-answers-identity.toml").string();
  write_file_atomically(path,
                        "student = \"Ada\"\nvariant = \"00000000000000ff\"\n[[answer]]\nstep = "
                        "\"head0.scores\"\ncell = [0, 0]\nvalue = \"\"\n");
  std::string message;
  try {
    load_answers_file(path, lesson, truth);
  } catch (const InputError& e) {
    message = e.what();
  }
  std::filesystem::remove(path);
  CHECK(message.find("the answers of Ada (variant 00000000000000ff)") != std::string::npos);
  CHECK(message.find("the exercise of Bo (variant 0000000000000001)") != std::string::npos);
  lesson.variant = "00000000000000ff";  // the same variant: read
  write_file_atomically(path,
                        "variant = \"00000000000000ff\"\n[[answer]]\nstep = "
                        "\"head0.scores\"\ncell = [0, 0]\nvalue = \"1.5\"\n");
  const std::vector<Answer> mine = load_answers_file(path, lesson, truth);
  std::filesystem::remove(path);
  REQUIRE(mine.size() == 1);
  CHECK(mine[0].values[0][0].value == 1.5);
}

TEST_CASE("answers: a string that is no number is an unreadable cell, a decimal comma is read") {
  const std::vector<Answer> x = parse_answers(
      "[[answer]]\nstep = \"head0.scores\"\ncell = [0, 0]\nvalue = \"x\"\n", "mine.toml",
      river_bank());
  CHECK(x.at(0).values[0][0].unreadable);
  CHECK(x.at(0).readings.at(0).note.in(Language::en) ==
        "\"x\" is not a number; write a number such as 0.250");
  const std::vector<Answer> comma = parse_answers(
      "[[answer]]\nstep = \"head0.scores\"\ncell = [0, 0]\nvalue = \"-0,044\"\n", "mine.toml",
      river_bank());
  CHECK(comma.at(0).values[0][0].value == doctest::Approx(-0.044));
  CHECK(comma.at(0).values[0][0].decimals == 3);
  CHECK(comma.at(0).readings.at(0).note.in(Language::en) ==
        "read \"-0,044\" as -0.044: a decimal comma read as a point");
}

}  // namespace attn
