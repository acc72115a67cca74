// The answers file of `verify` (docs/answers-format.md): a learner's hand-computed
// values, any subset of steps, as cells, rows or whole matrices.
//
//   [[answer]]
//   step = "head0.scores"
//   cell = [0, 1]          # or `row = i`, or neither for the whole matrix
//   value = 1.68           # `values = [...]` for a row, `[[...]]` for a matrix
//   tolerance = 0.005      # optional
//
// Numbers may be written as TOML numbers or as numeric strings ("1.70"); the
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

namespace attn {

struct Answer : StepValues {
  std::size_t index = 0;  // its place in the file, from 0
};

// Parses the answers and checks each against the trace's steps. Throws
// InputError naming `origin`, the line and key, and the fix: an unknown step
// (listing the valid ids), a cell or row outside the step (giving its shape),
// a row or matrix of the wrong shape, a value that is not a number.
std::vector<Answer> parse_answers(std::string_view toml_text, const std::string& origin,
                                  const Trace& trace);

// Reads and parses an answers file.
std::vector<Answer> load_answers_file(const std::string& path, const Trace& trace);

}  // namespace attn
