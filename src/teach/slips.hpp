// The ways one wrong term explains a wrong total of a sum of products
// (core/cell_arithmetic.hpp), for verify's diagnoses and the errata.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/cell_arithmetic.hpp"
#include "core/trace.hpp"

namespace attn {

// A value someone stated for a cell of a step (e.g. the learner's or the
// document's own K[bank,d3] = 0.51), which they may have used in a later sum.
// `step` may be a projection ("K") even when the operand is a head slice
// ("head0.K"): the column is mapped through the head's column block.
struct StatedValue {
  std::string step;
  std::size_t row = 0;
  std::size_t col = 0;
  double value = 0.0;
  std::string source;  // for people: "your K", "claim at line 12"
};

// How one term came out wrong, in order of precedence (most specific first).
enum class SlipKind {
  stated_value,   // an operand replaced by a StatedValue for that same cell
  wrong_entry,    // an operand replaced by another entry of its row or column
  dropped_term,   // the product left out
  dropped_bias,   // the bias left out (term == terms.size())
  sign_flip,      // the product's sign flipped
  decimal_shift,  // the product ×10 or ÷10
  digit_slip,     // the product's leading digit miscopied (fits often by chance: weak evidence)
  digit_swap,     // two adjacent digits of the product swapped (0.45 written as 0.54)
};

// One way a single term (or the bias) explains `written` instead of the true value.
struct TermSlip {
  std::size_t term = 0;  // index into CellSum::terms; terms.size() for the bias
  double true_product = 0.0;
  double written_product = 0.0;
  SlipKind kind = SlipKind::wrong_entry;
  Message cause;             // "used W_K[d1,d3] = 0.2 instead of W_K[d2,d3] = 0.1"
  std::size_t distance = 0;  // wrong_entry: rows plus columns between the used and the right entry
};

// |value - written| within tolerance, counting a value exactly half a unit away
// as a match (1.7265 written as 1.727 with tolerance 0.0005) despite binary rounding.
// Infinities match only themselves; NaN matches NaN (a fully masked row written "nan").
bool matches_written(double value, double written, double tolerance);

// Every way exactly ONE term (or the bias) of `sum`, changed for a recognised
// cause, brings the total within `tolerance` of `written`. Empty when `written`
// already matches the true value, or when no single recognised change explains it
// (an unrelated wrong value gets no explanation). Sorted by SlipKind precedence,
// then by term index. `digit_slip` and `digit_swap` look at the product rounded to the decimals
// implied by `tolerance` (half a unit: 0.0005 -> 3 decimals).
std::vector<TermSlip> single_term_slips(const Trace& trace, const CellSum& sum, double written,
                                        double tolerance,
                                        const std::vector<StatedValue>& stated = {});

}  // namespace attn
