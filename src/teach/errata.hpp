// The errata report: every value a lesson's source document states (its
// [[claim]]s) against the computed trace, and, for a wrong one, where the
// document's arithmetic went wrong when that can be told.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "core/lesson.hpp"
#include "core/trace.hpp"
#include "teach/slips.hpp"

namespace attn {

// One stated number against the computed cell.
struct ClaimCell {
  std::size_t row = 0;  // the cell in the step's matrix
  std::size_t col = 0;
  WrittenNumber stated;
  double computed = 0.0;
  double tolerance = 0.0;  // the claim's, else half a unit in the last decimal written
  bool agrees = false;
  std::optional<CellSum> arithmetic;  // the sum of products, for a product step
  std::string explanation;            // empty when the cell agrees
};

struct ClaimVerdict {
  Claim claim;
  std::vector<ClaimCell> cells;  // row-major over the claimed cells
  bool agrees() const;
  // One line for people: the explanations of the disagreeing cells, joined.
  std::string explanation() const;
};

// Every claim of `lesson` checked against `trace`. A claim on an unknown step
// or outside its matrix is an InputError naming the lesson file and line.
std::vector<ClaimVerdict> check_claims(const Lesson& lesson, const Trace& trace);

// The values the document states elsewhere, as operands it may have reused:
// every cell of every claim except `except` (the claim being explained).
std::vector<StatedValue> stated_values(const Lesson& lesson, const Claim* except);

// One term of a sum as the document wrote it: a product ("0.12") or a pair of
// factors ("0.85×0.51", product computed from them).
struct WrittenTerm {
  std::optional<WrittenNumber> left, right;  // set when the factors were written
  WrittenNumber product;
};

// The terms after "written as" in a claim's `says`: "written as 0.15 + 0.06 +
// 0.12 + 0.18" or "written as 0.69×0.69 + 0.50×0.50 + …". Empty when none.
std::vector<WrittenTerm> written_terms(std::string_view says);

// "0.5×0.3 + 0.3×0.2 + 0.6×0.1 + 0.2×0.9 = 0.15 + 0.06 + 0.06 + 0.18 = 0.45"
std::string expand_sum(const CellSum& sum);

// Why `stated` is not `computed` at `step`[row, col], when one cause explains
// the whole difference: one product term or one input (cell_arithmetic), the
// document's own upstream value carried through an element-wise step, or the
// value of another cell of the same row or column (the wrong row or key used).
std::string explain_difference(const Lesson& lesson, const Trace& trace, const Claim& claim,
                               const ClaimCell& cell);

}  // namespace attn
