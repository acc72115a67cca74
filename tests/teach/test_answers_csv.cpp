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
  // Too many cells that no decimal comma explains: never "delete the cells".
  const std::string extra = error_of(head + ",A,0123456789abcdef,1,a\r\n");
  CHECK(extra.find("answers.csv:2: 5 cells, but the header names 4 columns; the row probably "
                   "holds decimal commas typed without quotes") != std::string::npos);
  CHECK(extra.find("(\"-0,178\")") != std::string::npos);
  CHECK(extra.find("delete") == std::string::npos);
  CHECK(kept_answers_csv_note(head + ",A,0123456789abcdef,\r\n", "answers.csv").empty());
  CHECK(kept_answers_csv_note(head + ",A,0123456789abcdef,0.5\r\n", "answers.csv")
            .find("kept answers.csv") != std::string::npos);
}

TEST_CASE("answers.csv: decimal commas typed without quotes are joined when the count fits") {
  const std::unique_ptr<Backend> cpu = make_backend("cpu");
  Lesson lesson = find_lesson("river-bank");
  lesson.asked = {"head0.weights"};
  const Trace truth = run_pipeline(lesson, *cpu);
  const std::string head =
      "id,name,variant,\"head0.weights[0,0]\",\"head0.weights[0,1]\",\"head0.weights[1,0]\"\r\n";
  // -0,178 | 0,375 | 0,433 typed in a text editor: six cells for three columns.
  const AnswerSheet sheet =
      parse_answer_sheet(head + "s1,Ada,0123456789abcdef,-0,178,0,375,0,433\r\n", "answers.csv");
  REQUIRE(sheet.rows.size() == 1);
  CHECK(sheet.rows[0].cells == std::vector<std::string>{"-0,178", "0,375", "0,433"});
  CHECK(sheet.rows[0].joined == std::vector<bool>{true, true, true});
  const std::vector<Answer> a = sheet_answers(sheet, sheet.rows[0], lesson, truth);
  REQUIRE(a.size() == 1);
  CHECK(a[0].values[0][0].value == doctest::Approx(-0.178));
  CHECK(a[0].values[0][0].decimals == 3);
  CHECK(a[0].values[0][1].value == doctest::Approx(0.375));
  CHECK(a[0].values[1][0].value == doctest::Approx(0.433));
  REQUIRE(a[0].readings.size() == 3);
  CHECK(a[0].readings[0].note.in(Language::en) ==
        "read -0,178 as -0.178: a decimal comma outside quotes; quote it (\"-0,178\") or write a "
        "decimal point (-0.178)");
  // One cell quoted, the others split: still the header's count once joined.
  const AnswerSheet mixed = parse_answer_sheet(
      head + "s1,Ada,0123456789abcdef,\"-0,178\",0,375,0.433\r\n", "answers.csv");
  CHECK(mixed.rows[0].joined == std::vector<bool>{false, true, false});
  // Joining gives too few cells: an error, not a guess.
  CHECK(error_of(head + ",A,0123456789abcdef,0,1,0,2,0,3,0,4\r\n")
            .find("11 cells, but the header names 6 columns; the row probably holds decimal "
                  "commas") != std::string::npos);
}

TEST_CASE("answers.csv: an unreadable cell keeps what was typed, for the instructor") {
  const std::unique_ptr<Backend> cpu = make_backend("cpu");
  Lesson lesson = find_lesson("river-bank");
  lesson.asked = {"head0.weights"};
  const Trace truth = run_pipeline(lesson, *cpu);
  const AnswerSheet sheet = parse_answer_sheet(
      "id,name,variant,\"head0.weights[1,1]\"\r\ns1,Ada,0123456789abcdef,0.19l\r\n", "answers.csv");
  const std::vector<Answer> a = sheet_answers(sheet, sheet.rows[0], lesson, truth);
  REQUIRE(a[0].readings.size() == 1);
  CHECK(a[0].readings[0].unreadable);
  CHECK(a[0].readings[0].typed == "0.19l");
  CHECK(a[0].readings[0].note.in(Language::en) ==
        "\"0.19l\" has \"l\" after the number; write the number alone, such as 0.19");
}

TEST_CASE("answers.csv: from a spreadsheet, an unquoted answer cell was a number there") {
  const std::string text =
      "\"id\",\"name\",\"variant\",\"x\",\"y\"\r\n"
      "1,\"Ada\",\"0123456789abcdef\",0.25,\"0.250\"\r\n"
      "2,\"Bo\",\"0123456789abcdee\",-289,\"\"\r\n";
  CHECK(parse_answer_sheet(text, "a.ods", true).number_cells == 2);
  CHECK(parse_answer_sheet(text, "a.csv").number_cells == 0);  // a CSV says nothing of types
  const AnswerSheet sheet = parse_answer_sheet(text, "a.ods", true);
  CHECK(number_cells_warning(sheet).starts_with(
      "a.ods: 2 answer cell(s) are numbers in the spreadsheet, not text"));
  CHECK(number_cells_warning(sheet).find("every column's type set to Text (docs/marking.md)") !=
        std::string::npos);
  CHECK(number_cells_warning(parse_answer_sheet(text, "a.csv")).empty());
}

}  // namespace attn
