// Numbers as people type them into an answers file or a spreadsheet cell
// (docs/answers-format.md, "Numbers as people type them"): a typographic
// minus or dash, full-width digits from a Chinese input method, a decimal
// comma. Each such number is read with a note saying how; what still is no
// number is `unreadable`, with the reason and the fix.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "core/i18n.hpp"
#include "core/lesson.hpp"

namespace attn {

struct TypedNumber {
  enum class Kind {
    blank,       // nothing but spaces: not answered
    plain,       // an ASCII number, read as it is
    normalised,  // read after mending the characters: `note` says how
    special,     // "-inf", "inf" or "nan" (the caller decides whether they are allowed)
    unreadable,  // no number: `note` says why and what to write
  };
  Kind kind = Kind::blank;
  std::string text;      // plain, normalised, special: the ASCII number ("-0.230")
  WrittenNumber number;  // plain, normalised: its value and decimals as written
  Message note;          // normalised: how it was read; unreadable: why not
};

// Reads one cell's text. Never throws: any bytes are some TypedNumber.
TypedNumber read_typed_number(std::string_view cell);

// `cell` shown in a message: control characters made visible, at most 40 characters.
std::string shown_cell(std::string_view cell);

// The note of a number joined from two cells a decimal comma outside quotes
// split ("0,042" in a TOML row or a typed CSV row): read with a point, and how
// to write it so.
Message decimal_comma_note(const std::string& cell);

// A cell of an answer that was not read as plain ASCII: how it was read
// (note), or why it could not be (unreadable). r, c index Answer::values.
struct CellReading {
  std::size_t r = 0, c = 0;
  bool unreadable = false;
  Message note;
  std::string typed;  // unreadable: the cell as written (for the instructor to read again)
};

// One cell's number as read_typed_number reads `token` (its quotes, if
// any, taken off): blank, the number, ±inf or NaN as written, or NaN marked
// unreadable; a reading that is not plain goes to `readings` as cell (r, c).
WrittenNumber read_typed_cell(std::string_view token, std::size_t r, std::size_t c,
                              std::vector<CellReading>& readings);

// The values of a `value`/`values` written without quotes around decimal
// commas ("[0,042, 0.5]"): each row's text as written, in file order.
struct RawRows {
  bool nested = false;                         // [[...], [...]] (else one row, or one bare value)
  std::vector<std::vector<std::string>> rows;  // the tokens between commas, trimmed, quotes kept
  std::vector<std::string> row_text;           // each row as written, for messages
};

// The rows of a value written as `raw` (the right side of value = ...).
RawRows split_raw_rows(std::string_view raw);

// One row's cells read for `cols` cells: the tokens as they are when there are
// `cols`; else, when joining each digit,digit pair (a comma with no space
// around it) gives exactly `cols`, those joined (each with a note); else every
// cell is unreadable, the reason saying to quote the numbers or use a point.
// The readings of cells that are not plain go to `readings` (row r).
std::vector<WrittenNumber> read_raw_row(const std::vector<std::string>& tokens,
                                        const std::string& row_text, std::size_t cols,
                                        std::size_t r, std::vector<CellReading>& readings);

// Answers-file text with each `value = ...`/`values = ...` that holds an
// unquoted decimal comma (a digit, a comma, a digit) turned into a TOML
// literal string of what was written (the lines kept, comments dropped):
// TOML would refuse it or split the numbers. `raw_lines` gets the line of
// each one so rewritten (their numbers are then read by split_raw_rows).
std::string quote_decimal_comma_values(std::string_view text, std::vector<int>& raw_lines);

}  // namespace attn
