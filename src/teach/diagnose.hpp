// Naming a learner's mistake: each common mistake (docs/answers-format.md) is
// recognised by recomputing the step the mistaken way and comparing.
//
// The mistakes are one table, common_mistakes() (kCommonMistakes in
// diagnose.cpp), in precedence order: verify names the one that explains the
// most of the learner's cells, ties going to the earlier entry. A method
// mistake recomputes whole steps, so it is a stronger explanation than a
// single slipped term; rounding is the mildest, so it comes last.
//
// To add a mistake:
//   1. one entry in kCommonMistakes, at its place in precedence: its label,
//      kind, why, lesson and, for a method mistake, the kind of step it starts
//      from, its mistaken computation (the step's range, read from the inputs
//      the trace's op graph names: MistakeSite::input) and its detail; for a
//      mistake in how right values were written (MistakeKind::written), its
//      test written_as and its written_detail; whether it may explain values
//      within rounding noise (explains_noise);
//   2. its test in tests/teach/test_diagnose.cpp: an instance of it, worked by
//      plain loops, named by verify (and a row in docs/answers-format.md's
//      table of labels, which that file's "catalogue" test compares);
//   3. scripts/update-po, then its strings translated in po/zh_CN.po.
// verify, mark and the summaries read the table; nothing else lists labels.
#pragma once

#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include "core/backend.hpp"
#include "core/bounds.hpp"
#include "core/i18n.hpp"
#include "core/lesson.hpp"
#include "core/pipeline.hpp"
#include "core/trace.hpp"

namespace attn {

// How a common mistake is recognised.
enum class MistakeKind {
  method,    // a step computed the mistaken way in every head; the later steps follow from it
  slip,      // one product term of one cell's sum is off (teach/slips.hpp)
  rounding,  // the earlier steps rounded too early, each computed from the rounded ones
  written,   // the right value written wrongly: its digits cut, or into the transposed cell
};

// Where a method mistake is made: one step of the trace on the learner's own
// values, the ranges of that trace's steps, and what the op graph says the
// step is computed from.
struct MistakeSite {
  const Lesson& lesson;
  const Trace& base;
  const BoundsMap& bounds;  // of every step of `base`
  const Step& step;         // the step computed the mistaken way, e.g. head0.masked

  // The step `s` reads as its input i (Operation::inputs), and its range.
  const Step& input(const Step& s, std::size_t i) const { return base.input(s, i); }
  const Bounds& range(const Step& s) const { return bounds.at(s.id); }
};

struct CommonMistake {
  std::string_view label;  // "not_transposed": in JSON, and as tr() names it
  MistakeKind kind = MistakeKind::method;
  std::string_view why;     // one or two sentences on why the right step is right
  std::string_view lesson;  // the embedded lesson that shows it (attn-trace run LESSON)
  // Whether it may explain values within rounding noise of the right ones (a
  // unit in the last decimal): truncation and rounding are that noise, and a
  // slip has its own threshold; the others are named only beyond it.
  bool explains_noise = false;
  // method only: each step of this kind (one per head) is computed the mistaken way
  StepKind starts_from = StepKind::input;
  // method only: the range of the step computed the mistaken way, from the
  // ranges of its inputs; nullopt where the lesson does not allow the mistake
  std::optional<Bounds> (*mistaken)(const MistakeSite&) = nullptr;
  // method only: what was done and what it should be, for people
  Message (*detail)(const Lesson&) = nullptr;
  // written only: whether `written` (with `decimals`) at [row, col] is a value
  // of `right` (the ranges that are right on the learner's own numbers)
  // written this wrong way, and what was done, for people
  bool (*written_as)(const Bounds& right, std::size_t row, std::size_t col, double written,
                     int decimals) = nullptr;
  Message (*written_detail)(const Bounds& right, std::size_t row, std::size_t col,
                            double written, int decimals) = nullptr;
};

// Every common mistake, in precedence order.
std::span<const CommonMistake> common_mistakes();
// The mistake labelled `label`; nullptr for any other label.
const CommonMistake* find_common_mistake(std::string_view label);

struct Diagnosis {
  std::string label;           // a common_mistakes() label
  Message detail;              // for people: what was done and what it should be
  double mistaken_value = 0;   // what the mistaken way gives for the cell
  int rounded_to = 0;          // rounding: the decimals the earlier steps were rounded to
  std::string rounded_step{};  // rounding: the one step rounded ("√d_k": the scale), or empty for every earlier one
  std::string why{};           // the mistake's why (common_mistakes())
  std::string lesson{};        // the lesson that shows it
};

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
    const CommonMistake* mistake;
    Message detail;
    Trace trace;
    BoundsMap bounds;  // of every step, from the ranges of the learner's values
  };
  const std::vector<Mistaken>& method_mistakes();
  // The trace with every step of kind m.starts_from computed the mistaken way
  // (those the learner gave stand); nullopt when no step could be.
  std::optional<Mistaken> made_the_mistaken_way(const CommonMistake& m) const;
  std::optional<Diagnosis> slip(const std::string& step, std::size_t row, std::size_t col,
                                double written, double tolerance) const;
  std::optional<Diagnosis> rounding(const std::string& step, std::size_t row, std::size_t col,
                                    double written, double tolerance, int decimals,
                                    const std::vector<WrittenCell>& answer);
  // The computed steps that `step` is computed from (through the op graph)
  // and that the learner did not give, in trace order.
  std::vector<std::string> roundable_before(const std::string& step) const;
  // The trace with those steps (or only `only`) rounded to `decimals`, each
  // computed from the rounded ones before it.
  const Mistaken& rounded_trace(const std::string& step, int decimals, const std::string& only);
  // The steps up to `step` (itself included) that divide by a scale such as
  // √2 that can be rounded (1.414) and that the learner did not give, and the
  // trace with those scales rounded to `decimals`.
  std::vector<std::string> scaled_up_to(const std::string& step) const;
  Mistaken scale_rounded_trace(const std::string& step, int decimals) const;

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
