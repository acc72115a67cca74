// Marking a learner's hand calculation (docs/answers-format.md) the way a teacher
// does: each answer ok, wrong or carried (right on the learner's own earlier
// wrong values), the first genuinely new mistake, and the mistake named.
//
// Carried-forward credit: every answer that is not ok (wrong or carried) puts
// the learner's numbers in place of the true ones for the cells given (a whole
// matrix, a row or a cell; the cells not given keep their true values), and every
// later step is recomputed from them (run_pipeline's overrides). A later answer
// that is wrong against the truth but right on those values is `carried`.
// Answers are marked in trace order, so an answer may come before the one it
// depends on in the file; an answer never carries from its own step.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "backend/backend.hpp"
#include "core/lesson.hpp"
#include "teach/answers.hpp"
#include "teach/diagnose.hpp"

namespace attn {

enum class Verdict { ok, carried, wrong };

// "ok", "carried", "wrong".
std::string_view verdict_name(Verdict verdict);

struct AnswerCell {
  std::size_t row = 0;  // the step's cell
  std::size_t col = 0;
  WrittenNumber given;
  double tolerance = 0;
  double expected = 0;                     // the true value
  std::optional<double> carried_expected;  // recomputed from the learner's values, when different
  Verdict verdict = Verdict::ok;
  std::vector<Diagnosis> diagnoses;  // wrong cells only; the first is the diagnosis
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
  Verdict verdict = Verdict::ok;            // wrong if any cell is, else carried if any is, else ok
  std::vector<AnswerCell> cells;            // one per number given, row by row
  std::vector<CarriedSource> carried_from;  // carried answers: the learner's earlier values used
  std::optional<Diagnosis> diagnosis;       // a label that explains every wrong cell of the answer
  std::vector<std::string> also_fits;       // other labels that explain every wrong cell too
};

struct VerifyReport {
  std::string lesson_id;
  std::vector<AnswerVerdict> answers;          // in the order of the answers file
  std::optional<CarriedSource> first_wrong;    // earliest wrong cell, in trace order
  std::size_t ok = 0, carried = 0, wrong = 0;  // answers of each verdict
};

VerifyReport verify_answers(const Lesson& lesson, Backend& backend,
                            const std::vector<Answer>& answers);

}  // namespace attn
