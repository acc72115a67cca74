// The answers file of `verify` (docs/answers-format.md): a learner's hand-computed
// values, any subset of steps, as cells, rows or whole matrices.
//
//   [[answer]]
//   step = "head0.scores"
//   cell = [0, 1]          # or `row = i`, or neither for the whole matrix
//   value = 1.68           # `values = [...]` for a row, `[[...]]` for a matrix
//   tolerance = 0.005      # optional
//
// Numbers may be written as TOML numbers or as numeric strings ("1.70"), also
// as people type them (a typographic minus, full-width digits, a decimal
// comma: teach/typed_number.hpp), each such cell with a note; a string that is
// no number is an unreadable cell, not an error of the file; the
// decimals as written (also for TOML floats: 1.70 keeps two) set the default
// tolerance, half a unit in the last decimal. A masked cell may be given as
// -inf (a TOML float) or "-inf".
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/lesson.hpp"
#include "core/trace.hpp"
#include "teach/typed_number.hpp"

namespace attn {

struct Answer : StepValues {
  std::size_t index = 0;  // its place in the file, from 0
  // How the cells that were not plain ASCII numbers were read (a minus sign,
  // full-width digits, a decimal comma: docs/answers-format.md), and those
  // that could not be (values[r][c].unreadable).
  std::vector<CellReading> readings;
};

// Parses the answers and checks each against the trace's steps. Throws
// InputError naming `origin`, the line and key, and the fix: an unknown step
// (listing the valid ids), a cell or row outside the step (giving its shape),
// a row or matrix of the wrong shape, a value that is not a number. A step may
// be named by its short name for head 0 ("weights": head0.weights); the
// answers hold the full id. A value "" is a blank cell: not answered.
std::vector<Answer> parse_answers(std::string_view toml_text, const std::string& origin,
                                  const Trace& trace);

// Whose answers a file holds, when it says (the answers.toml templates that
// `exercise` writes do, with top-level keys student and variant).
struct AnswersFile {
  std::string student;
  std::string variant;
  std::vector<Answer> answers;
};

AnswersFile parse_answers_file(std::string_view toml_text, const std::string& origin,
                               const Trace& trace);

// Reads the answers file at `path` for `lesson`. Throws InputError when the
// file names a variant other than the lesson's (an exercise's [exercise]
// variant), naming both students: one student's answers are never marked
// against another's numbers.
std::vector<Answer> load_answers_file(const std::string& path, const Lesson& lesson,
                                      const Trace& trace);

}  // namespace attn
