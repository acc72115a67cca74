// The arithmetic of one cell of a product step, as one writes it on paper: a
// sum of products (plus a bias), and the ways one wrong term explains a wrong total.
//
// Product steps and their terms (n queries, m keys, d model width, k the summed index):
//   Q, K, V, head{h}.Q/K/V  cell (i,c) = Σ_k In[i,k] × W[k,c'] (+ b[c'])   In = X, X+PE, memory,
//   memory+PE;
//                           c' = h·width + c for a head slice (the column of the full projection)
//   head{h}.scores          cell (i,j) = Σ_k head{h}.Q[i,k] × head{h}.K[j,k]
//   head{h}.context         cell (i,c) = Σ_j head{h}.weights[i,j] × head{h}.V[j,c]
//   output                  cell (i,c) = Σ_k concat[i,k] × W_O[k,c] (+ b_O[c])
// Every other step is not a sum of products: cell_sum returns nullopt for it.
// Operands are read from the trace (and the lesson's weights), so a trace run with
// overrides (carried-forward credit) gives the arithmetic on the overridden values.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/error.hpp"
#include "core/lesson.hpp"
#include "core/trace.hpp"

namespace attn {

// One number used in a sum: where it lives. `step` is a step id of the trace
// ("X", "head0.K", "head0.weights", "concat") or a weight/bias of the lesson
// ("W_Q", "W_K", "W_V", "W_O", "b_Q", ...); row/col index that matrix (a bias is row 0).
struct OperandRef {
  std::string step;
  std::size_t row = 0;
  std::size_t col = 0;
  std::string label;  // for people: "head0.K[bank,d3]", "W_K[d2,d3]", "b_Q[d1]"
};

// left × right, e.g. head0.Q[river,d0] × head0.K[bank,d0].
struct ProductTerm {
  double left = 0.0;
  double right = 0.0;
  OperandRef left_ref;
  OperandRef right_ref;
  double product() const { return left * right; }
};

// The cell `step`[row, col] = Σ terms (+ bias) = value (the trace's value).
struct CellSum {
  std::string step;
  std::size_t row = 0;
  std::size_t col = 0;
  std::vector<ProductTerm> terms;
  std::optional<double> bias;
  OperandRef bias_ref;  // meaningful only when `bias` is set
  double value = 0.0;
};

// The sum of products behind `step`[row, col]; nullopt when the step is not a
// product step (see the table above). Throws InputError for an unknown step id
// or a cell outside the step's matrix (the message gives its shape).
std::optional<CellSum> cell_sum(const Lesson& lesson, const Trace& trace, std::string_view step,
                                std::size_t row, std::size_t col);

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
  std::string cause;         // "used W_K[d1,d3] = 0.2 instead of W_K[d2,d3] = 0.1"
  std::size_t distance = 0;  // wrong_entry: rows plus columns between the used and the right entry
};

// Throws InputError "cell [r, c] is outside step S, which is 4×4 (rows 0 to 3, ...)".
void require_cell(const Step& step, std::size_t row, std::size_t col);

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
std::vector<TermSlip> single_term_slips(const Lesson& lesson, const Trace& trace,
                                        const CellSum& sum, double written, double tolerance,
                                        const std::vector<StatedValue>& stated = {});

}  // namespace attn
