// The class spreadsheet (docs/marking.md, "A class in one spreadsheet"):
// answers.csv, one row per student (id, name, variant, then one column per
// asked cell, headed like head0.weights[the,cat]), which `exercise` writes
// blank and `mark DIR --answers FILE` marks exactly as the folders'
// answers.toml files. FILE may also be an .xlsx or .ods saved from it, read
// through LibreOffice's headless conversion to CSV.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "core/lesson.hpp"
#include "core/trace.hpp"
#include "teach/answers.hpp"
#include "teach/exercise_sheets.hpp"

namespace attn {

// The column of a cell: "head0.weights[the,cat]", its row and column named
// by their tokens (a token that repeats in its list as "2 the", its number in
// front, as the terminal's tables label it).
std::string answer_column(const std::string& step, const std::vector<std::string>& rows,
                          const std::vector<std::string>& cols, std::size_t r, std::size_t c);

// answers.csv for the class: UTF-8 with a byte-order mark, RFC 4180, CRLF;
// `ids` are the students' IDs, one per model ("" for none); every cell empty.
std::string answers_csv(const std::vector<SheetModel>& models, const std::vector<std::string>& ids);

// Whether an answers.csv holds typed answers (a cell past the first three
// columns that is not empty): exercise --force then keeps it (the note says
// why, as for an answers.toml); "" when it may be replaced.
std::string kept_answers_csv_note(std::string_view existing, const std::string& path);

struct AnswerSheetRow {
  int line = 0;  // in the CSV text
  std::string id, name, variant;
  std::vector<std::string> cells;  // under AnswerSheet::columns
  std::vector<bool> joined;        // per cell: two cells split by an unquoted decimal comma, joined
};

struct AnswerSheet {
  std::string origin;                // the file named by the user
  std::vector<std::string> columns;  // the headers after id, name, variant
  std::vector<AnswerSheetRow> rows;  // rows with a variant, in file order
  std::size_t number_cells = 0;      // .xlsx/.ods: answer cells the spreadsheet holds as numbers
  const AnswerSheetRow* row_of(std::string_view variant) const;
};

// Parses answers.csv text. Throws InputError naming `origin`, the line and
// the fix: no header, a cell column named twice or not at all, a row without
// a variant that holds answers, a variant that is not 16 hex digits (a
// spreadsheet may have made a number of it), a variant on two rows.
// `types_known`: the text is LibreOffice's export with every text cell quoted,
// so an unquoted answer cell was a number in the spreadsheet (number_cells).
AnswerSheet parse_answer_sheet(std::string_view csv_text, const std::string& origin,
                               bool types_known = false);

// The warning for a sheet whose answer cells were numbers in the spreadsheet
// (it may have changed them: "-0,289" to -289, 0.250 to 0.25); "" for none.
std::string number_cells_warning(const AnswerSheet& sheet);

// Reads `path`: .csv as it is; .xlsx and .ods converted by `soffice --headless`
// into a private temporary folder. Throws InputError (exit 2) naming the file
// and the fix when it cannot be read, or LibreOffice is not installed.
AnswerSheet read_answer_sheet(const std::string& path);

// A row's cells as the answers a filled answers.toml would give: one answer
// per asked step of `lesson`, its whole matrix, each cell read as typed
// (blank, a number with a note, or unreadable). Throws InputError (the
// student's problem) when the row names another student than the lesson, or
// a column that is not empty names no cell of the lesson's asked steps.
std::vector<Answer> sheet_answers(const AnswerSheet& sheet, const AnswerSheetRow& row,
                                  const Lesson& lesson, const Trace& truth);

}  // namespace attn
