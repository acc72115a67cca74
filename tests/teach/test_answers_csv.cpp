// Tests of the class spreadsheet: its columns, a row read back as the answers
// an answers.toml would give, and the sheet's errors.
#include <doctest/doctest.h>

#include <memory>

#include "backend/backend.hpp"
#include "core/error.hpp"
#include "core/lesson_library.hpp"
#include "core/pipeline.hpp"
#include "teach/answers_csv.hpp"

namespace attn {

namespace {

std::string error_of(const std::string& csv) {
  try {
    parse_answer_sheet(csv, "answers.csv");
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("answers.csv: a column per cell, a token that repeats numbered as in the tables") {
  const std::vector<std::string> rows = {"the", "cat", "the"}, cols = {"d0", "d1"};
  CHECK(answer_column("head0.Q", rows, cols, 0, 1) == "head0.Q[0 the,d1]");
  CHECK(answer_column("head0.Q", rows, cols, 1, 0) == "head0.Q[cat,d0]");
}

TEST_CASE("answers.csv: a row is the answers a filled answers.toml gives") {
  const std::unique_ptr<Backend> cpu = make_backend("cpu");
  Lesson lesson = find_lesson("river-bank");
  lesson.asked = {"head0.weights"};
  const Trace truth = run_pipeline(lesson, *cpu);
  const Step& w = truth.at("head0.weights");
  const std::string c01 = answer_column(w.id, w.rows, w.cols, 0, 1);
  const AnswerSheet sheet =
      parse_answer_sheet("\xEF\xBB\xBFid,name,variant,\"" + c01 + "\",\"head0.weights[1,1]\"\r\n" +
                             "s1,Ada,0123456789abcdef,\u22120.25,0.4l\r\n,,,,\r\n",
                         "answers.csv");
  REQUIRE(sheet.rows.size() == 1);
  CHECK(sheet.rows[0].line == 2);
  const std::vector<Answer> a = sheet_answers(sheet, sheet.rows[0], lesson, truth);
  REQUIRE(a.size() == 1);
  CHECK(a[0].step == "head0.weights");
  REQUIRE(a[0].values.size() == w.value.n_rows);
  CHECK(a[0].values[0][0].blank);
  CHECK(a[0].values[0][1].value == doctest::Approx(-0.25));
  CHECK(a[0].values[0][1].decimals == 2);
  CHECK(a[0].values[1][1].unreadable);
  REQUIRE(a[0].readings.size() == 2);
  CHECK(a[0].readings[0].note.in(Language::en).find("minus") != std::string::npos);
}

TEST_CASE("answers.csv: what cannot be matched is an error naming the line and the fix") {
  const std::string head = "id,name,variant,x\r\n";
  CHECK(error_of("a,b\r\n").find("no header row") != std::string::npos);
  CHECK(error_of("id,name,variant,x,x\r\n").find("columns 4 and 5 are both headed x") !=
        std::string::npos);
  CHECK(error_of(head + ",A,0123456789abcdef,1\r\n,B,0123456789abcdef,2\r\n")
            .find("answers.csv:3: variant 0123456789abcdef is also on line 2") !=
        std::string::npos);
  CHECK(error_of(head + ",A,1.23457E+15,1\r\n").find("set the column's type to Text") !=
        std::string::npos);
  CHECK(error_of(head + ",A,,1\r\n").find("answers but no variant") != std::string::npos);
  CHECK(error_of(head + ",A,0123456789abcdef,1,2\r\n").find("past the last column") !=
        std::string::npos);
  CHECK(kept_answers_csv_note(head + ",A,0123456789abcdef,\r\n", "answers.csv").empty());
  CHECK(kept_answers_csv_note(head + ",A,0123456789abcdef,0.5\r\n", "answers.csv")
            .find("kept answers.csv") != std::string::npos);
}

}  // namespace attn
