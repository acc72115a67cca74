// Naming a learner's mistake: each common mistake (docs/answers-format.md) is
// recognised by recomputing the step the mistaken way and comparing.
//
// Labels, from the most specific to the mildest (verify names the one that
// explains the most of the learner's cells, ties going to the earlier label):
//   not_transposed       scores = Q·K instead of Q·Kᵀ (needs as many keys as d_k)
//   mask_ignored         the mask not applied: masked = scaled
//   wrong_mask_polarity  the mask inverted: the allowed cells masked, the masked ones kept
//   mask_fill_zero       masked scores set to 0 instead of -inf before the softmax
//   mask_after_softmax   softmax of the unmasked scores, masked weights then zeroed,
//                        the row not renormalised
//   softmax_wrong_axis   softmax down each column instead of along each row
//   unscaled             scores not divided by the scale
//   scaled_by_dk         divided by d_k instead of √d_k
//   arithmetic_slip      one product term of the cell's sum is off (teach/slips.hpp)
//   rounding             right when the earlier steps are rounded to fewer decimals
// A method mistake (the first eight) recomputes whole steps, so it is a stronger
// explanation than a single slipped term; rounding is the mildest, so it comes last.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include "backend/backend.hpp"
#include "core/bounds.hpp"
#include "core/i18n.hpp"
#include "core/lesson.hpp"
#include "core/pipeline.hpp"
#include "core/trace.hpp"

namespace attn {

// The labels above, in precedence order.
const std::vector<std::string_view>& diagnosis_labels();

struct Diagnosis {
  std::string label;           // one of diagnosis_labels()
  std::string detail;          // for people: what was done and what it should be
  double mistaken_value = 0;   // what the mistaken way gives for the cell
  int rounded_to = 0;          // rounding: the decimals the earlier steps were rounded to
  std::string rounded_step{};  // rounding: the one step rounded, or empty for every earlier one
  std::string why{};           // one or two sentences on why the right step is right
  std::string lesson{};        // the lesson that shows it
  Message detail_message{};    // `detail` as a message, to show in either language
};

// Fills in `why` and `lesson` for d.label.
void explain(Diagnosis& d);

// One number a learner wrote for a cell of a step, ± what it stands for.
struct WrittenCell {
  std::size_t row = 0, col = 0;
  double value = 0, tolerance = 0;
};

class Diagnoser {
 public:
  // `learner_values` are the learner's own earlier values (carried forward):
  // mistakes are recognised on top of them, as the learner worked from them.
  // `decimals_by_step` are the decimals the learner wrote for each step they
  // answered (used by `rounding`).
  // `learner_bounds` are the ranges the learner's written values stand for;
  // `base` and `base_bounds` are the trace run with `learner_values` and its
  // bounds, which the caller has computed already (they must outlive this).
  Diagnoser(const Lesson& lesson, Backend& backend, Overrides learner_values,
            BoundsMap learner_bounds, const Trace& base, const BoundsMap& base_bounds,
            std::map<std::string, int> decimals_by_step);

  // Every diagnosis that explains `written` at step[row, col] within
  // `tolerance`, in precedence order; empty for a right or an unrelated value.
  // `decimals` is the number of decimals the learner wrote for this value;
  // `answer` is every cell of the answer it belongs to: a way of rounding
  // too early is named only when it gives all of them.
  std::vector<Diagnosis> diagnose(const std::string& step, std::size_t row, std::size_t col,
                                  double written, double tolerance, int decimals,
                                  const std::vector<WrittenCell>& answer);

  // Whether the mistake `d` (found by diagnose for this step) also gives
  // `written` ± `tolerance` at another cell of the step, within the range the
  // learner's own values allow: to check that it explains a whole row or
  // matrix. nullopt for arithmetic_slip, which is about one cell only.
  std::optional<bool> fits(const Diagnosis& d, const std::string& step, std::size_t row,
                           std::size_t col, double written, double tolerance);

 private:
  struct Mistaken {
    std::string label;
    Message detail;  // in English: detail.in(Language::en)
    Trace trace;
    BoundsMap bounds;  // of every step, from the ranges of the learner's values
  };
  void build_method_mistakes();
  // The computed steps before `step` that the learner did not give.
  std::vector<std::string> roundable_before(const std::string& step) const;
  // The trace with those steps (or only `only`) rounded to `decimals`, each
  // computed from the rounded ones before it.
  const Mistaken& rounded_trace(const std::string& step, int decimals, const std::string& only);

  const Lesson& lesson_;
  Backend& backend_;
  Overrides learner_;
  BoundsMap learner_bounds_;
  std::map<std::string, int> decimals_by_step_;
  const Trace& base_;
  const BoundsMap& base_bounds_;
  std::optional<std::vector<Mistaken>> method_;                            // built on first use
  std::map<std::tuple<std::string, int, std::string>, Mistaken> rounded_;  // (step, d, only)
};

}  // namespace attn
