// Marking a learner's hand calculation (docs/answers-format.md) the way a teacher
// does: each cell ok, carried (right on the learner's own earlier values),
// rounded (right but for an intermediate rounded too early), imprecise (too
// few digits to show the value), or wrong, with the mistake named.
//
// A written number stands for an interval: ± its tolerance (half a unit in
// its last decimal unless the answer gives one). Carried-forward credit puts
// the learner's earlier numbers in place of the true ones (run_pipeline's
// overrides) and carries their intervals through every later step
// (core/bounds.hpp); a later cell whose written interval meets that range is
// right on the learner's own numbers, whether they kept more decimals while
// working or used their numbers as written. Answers are marked in trace
// order; an answer never carries from its own step.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/backend.hpp"
#include "core/expand.hpp"
#include "core/lesson.hpp"
#include "teach/answers.hpp"
#include "teach/diagnose.hpp"

namespace attn {

// From best to worst: a cell's answer takes its worst cell's verdict.
enum class Verdict { ok, carried, rounded, imprecise, wrong, unreadable, missing };

// "ok", "carried", "rounded", "imprecise", "wrong", "unreadable", "missing".
std::string_view verdict_name(Verdict verdict);

struct AnswerCell {
  std::size_t row = 0;  // the step's cell
  std::size_t col = 0;
  WrittenNumber given;
  double tolerance = 0;
  double expected = 0;                       // the true value
  std::optional<double> carried_expected;    // recomputed from the learner's values, when different
  double carried_low = 0, carried_high = 0;  // the range the learner's written values allow
  Verdict verdict = Verdict::ok;
  std::vector<Diagnosis> diagnoses;  // wrong and rounded cells; the first is the diagnosis
  int required_decimals = 0;         // imprecise: the decimals that would show the value
  Message note;          // how a typed number was read, why a cell is unreadable, or why -1e9 is
                         // accepted as the mask; empty format: none
  bool as_mask = false;  // a mask-like fill accepted as the mask (the note says why)
  std::string typed;     // unreadable: the cell as written
  // Not ok, with earlier values of the learner's in play: the cell worked out
  // from the learner's own numbers.
  std::optional<CellExpansion> own_working;
};

// Where an earlier answer first differed from the truth: what a carried answer rests on.
struct CarriedSource {
  std::string step;
  std::size_t row = 0;
  std::size_t col = 0;
  bool wrong = true;  // the learner's values there were wrong (else themselves carried)
};

struct AnswerVerdict {
  Answer answer;
  // The worst verdict of its answered cells (a blank cell is `missing`, and
  // an answer with no answered cell is dropped: its step is missing).
  Verdict verdict = Verdict::ok;
  std::vector<AnswerCell> cells;            // one per number given, row by row
  std::vector<CarriedSource> carried_from;  // carried answers: the learner's earlier values used
  std::optional<Diagnosis> diagnosis;       // a label that explains every wrong cell of the answer
  std::vector<std::string> also_fits;       // other labels that explain every wrong cell too
};

struct VerifyReport {
  std::string lesson_id;
  std::vector<AnswerVerdict> answers;        // in the order of the answers file
  std::vector<std::string> missing;          // steps the lesson asks that no answer gives
  std::optional<CarriedSource> first_wrong;  // earliest wrong cell, in trace order
  // Cells of each verdict (missing: steps), the same in the text and the JSON.
  std::size_t ok = 0, carried = 0, rounded = 0, imprecise = 0, wrong = 0, unreadable = 0;
  std::size_t blank = 0;  // cells left blank ("") in the answers that were given
  // Every value ok or carried: a rounded value earns partial credit in `mark`,
  // but read alone a pass would hide that the working lost precision.
  bool passed() const {
    return wrong == 0 && rounded == 0 && imprecise == 0 && unreadable == 0 && missing.empty() &&
           blank == 0;
  }
};

VerifyReport verify_answers(const Lesson& lesson, Backend& backend,
                            const std::vector<Answer>& answers);

}  // namespace attn
