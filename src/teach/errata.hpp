// The errata report: every value a lesson's source document states (its
// [[claim]]s) against the computed trace; a wrong one is either *carried*
// (right on the document's own earlier numbers) or a real slip, and where the
// document's arithmetic went wrong is told when it can be.
#pragma once

#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "core/i18n.hpp"
#include "core/lesson.hpp"
#include "core/trace.hpp"
#include "teach/slips.hpp"

namespace attn {

// How one stated number stands against the computation.
enum class CellStatus {
  agrees,   // within tolerance of the computed value
  carried,  // wrong, but right on the document's own earlier stated numbers
  slip,     // wrong on the document's own numbers too: a real slip
};

// A value the document states for a cell upstream, which differs from the truth.
struct UsedValue {
  std::string cell;  // "head0.scaled[river,bank]"
  double stated = 0.0;
  double truth = 0.0;
  // By cell, then the values (written out: the WebAssembly build's standard
  // library has no <=> for std::string).
  bool operator==(const UsedValue&) const = default;
  bool operator<(const UsedValue& o) const {
    return std::tie(cell, stated, truth) < std::tie(o.cell, o.stated, o.truth);
  }
  // "head0.scaled[river,bank] = 0.8635 (true 0.83775)", in `lang`.
  std::string text(Language lang) const;
};

// The document's own arithmetic for a cell: the cell recomputed from the values
// the document states for cells upstream of it (its other claims), every other
// input as computed. `used` names the stated values that differ from the truth.
struct OwnArithmetic {
  double value = 0.0;
  std::string formula;          // "e^0.8635 = 2.37145", "5000 / 5007.4 = 0.998522"
  std::vector<UsedValue> used;  // by cell
};

// One stated number against the computed cell.
struct ClaimCell {
  std::size_t row = 0;  // the cell in the step's matrix
  std::size_t col = 0;
  WrittenNumber stated;
  double computed = 0.0;
  double tolerance = 0.0;  // the claim's, else half a unit in the last decimal written
  CellStatus status = CellStatus::slip;
  // Set when a stated value that differs from the truth feeds this cell.
  std::optional<OwnArithmetic> own;
  std::optional<CellSum> arithmetic;  // the sum of products, for a product step
  std::string explanation;            // empty when the cell agrees; English (JSON)
  std::string explanation_zh;         // the same in Simplified Chinese (text, --lang zh)
  bool agrees() const { return status == CellStatus::agrees; }
  const std::string& explanation_in(Language lang) const {
    return lang == Language::zh ? explanation_zh : explanation;
  }
};

// A claim as a whole: every cell agrees; or none is a real slip, but some are
// carried; or at least one is a real slip.
enum class ClaimStatus { agrees, carried, disagrees };

struct ClaimVerdict {
  Claim claim;
  std::vector<ClaimCell> cells;  // row-major over the claimed cells
  ClaimStatus status() const;
  bool agrees() const { return status() == ClaimStatus::agrees; }
  // One line for people: the explanations of the disagreeing cells, joined
  // (English by default, as JSON has it).
  std::string explanation(Language lang = Language::en) const;
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
  // The factors were followed by the products as written ("0.69×0.69 + … =
  // 0.476 + …"): `product` is the written one, perhaps rounded.
  bool product_written = false;
};

// The terms after "written as" in a claim's `says`: "written as 0.15 + 0.06 +
// 0.12 + 0.18" or "written as 0.69×0.69 + 0.50×0.50 + …", the factors perhaps
// followed by "= " and their products as written (one per term). Empty when none.
std::vector<WrittenTerm> written_terms(std::string_view says);

// "0.5×0.3 + 0.3×0.2 + 0.6×0.1 + 0.2×0.9 = 0.15 + 0.06 + 0.06 + 0.18 = 0.45"
std::string expand_sum(const CellSum& sum);

// "agrees", "carried", "disagrees" (claims) and "agrees", "carried", "slip" (cells).
const char* status_name(ClaimStatus status);
const char* status_name(CellStatus status);

// `step`[row, col] on the document's own numbers (`stated`, the values it gives
// elsewhere); nullopt when no stated value that differs from the truth feeds it.
std::optional<OwnArithmetic> own_arithmetic(const Trace& trace,
                                            const std::vector<StatedValue>& stated,
                                            std::string_view step, std::size_t row,
                                            std::size_t col);

// Why `stated` is not `computed` at `step`[row, col]: carried (right on the
// document's own earlier numbers, `cell.own`), or a real slip, with the one
// cause that explains the whole difference when there is one: one product term
// or one input (cell_arithmetic), or the value of another cell of the same row
// or column (the wrong row or key used).
// Written in `lang` (the slips' causes are teach/slips' words).
std::string explain_difference(const Lesson& lesson, const Trace& trace, const Claim& claim,
                               const ClaimCell& cell, Language lang = Language::en);

}  // namespace attn
