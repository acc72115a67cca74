// Practice (docs/practice.md): the tool asks for one cell at a time, in trace
// order, and marks each answer at once with verify's engine. No terminal I/O
// here: the command (cli/practice.cpp) reads and prints, so that the same
// engine can serve another front end.
//
// Usage:
//   PracticeSession s(lesson, backend, {.cells = 3});
//   while (!s.finished()) {
//     const PracticeCell& c = s.current().cell;     // "head0.scaled[river, bank] = ?"
//     const CellMark m = s.answer("1.19");          // verify's verdict of that cell
//     ...                                           // or s.hint(), s.skip(), s.back()
//   }
//   write(s.answers_toml());                        // `verify LESSON --answers FILE` reads it
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/backend.hpp"
#include "core/lesson.hpp"
#include "core/trace.hpp"
#include "teach/answers.hpp"
#include "teach/verify.hpp"

namespace attn {

// One cell of one step: what practice asks for.
struct PracticeCell {
  std::string step;  // a step id, "head0.scaled"
  std::size_t row = 0;
  std::size_t col = 0;
  bool operator==(const PracticeCell&) const = default;
};

enum class CellState { pending, answered, skipped };
// "pending", "answered", "skipped": the saved file's and the page's word for it.
std::string_view cell_state_name(CellState state);

// What became of one asked cell.
struct PracticeRecord {
  PracticeCell cell;
  CellState state = CellState::pending;
  std::string typed{};                     // the answer as the learner typed it (answered)
  int hints = 0;                           // rungs of the hint ladder taken, 0 to 3
  std::optional<Verdict> first_verdict{};  // the verdict of the first answer given
  std::string first_mistake{};             // the mistake named at the first answer, or ""
  bool follow_up = false;                  // asked after a named mistake in its step
};

struct PracticeOptions {
  std::vector<std::string> steps;  // step ids to practise (empty: the default, see steps())
  std::size_t cells = 0;           // cells asked per step; 0: the saved number, else 3
};

// The marking of one answer: verify's verdict of the cell, on every answer so far.
struct CellMark {
  PracticeCell asked;                         // the cell answered
  AnswerCell cell{};                          // status, expected value, diagnoses, own working
  std::optional<Diagnosis> diagnosis{};       // the mistake named, when there is one
  std::vector<CarriedSource> carried_from{};  // carried: the learner's earlier values used
  bool follow_up_added = false;               // a named mistake: one more cell of the step is asked
};

// One rung of the hint ladder: 1 the formula with the learner's own numbers
// substituted, 2 the terms of the cell, 3 the worked arithmetic and the value.
struct Hint {
  int rung = 1;
  std::string text{};  // one or more lines, no trailing newline
};

// The end of a session.
struct PracticeSummary {
  std::size_t asked = 0;        // cells asked
  std::size_t answered = 0;     // cells answered (not skipped)
  std::size_t skipped = 0;      // cells skipped
  std::size_t right_first = 0;  // ok or carried at the first answer
  std::size_t hints = 0;        // hint rungs taken, all cells together
  std::size_t cells_with_hints = 0;
  struct Mistake {
    PracticeCell cell;
    std::string label;   // a common_mistakes() label
    std::string lesson;  // the lesson that shows it (attn-trace run LESSON)
  };
  std::vector<Mistake> mistakes;  // named at a first answer, in the order asked
  VerifyReport report;            // verify on the answers file as it stands
};

class PracticeSession {
 public:
  // Throws InputError for a step of options.steps that the trace lacks or
  // that the lesson gives (X, W_Q: nothing to compute), naming the valid ones.
  PracticeSession(const Lesson& lesson, Backend& backend, PracticeOptions options);

  const Lesson& lesson() const { return lesson_; }
  const Trace& truth() const { return truth_; }
  const PracticeOptions& options() const { return options_; }
  // The steps practised, in trace order: options.steps, else the lesson's
  // [exercise] ask, else every computed step but the copies (head slices,
  // concat, rows, identity).
  const std::vector<const Step*>& steps() const { return steps_; }
  const std::vector<PracticeRecord>& records() const { return records_; }

  bool finished() const { return position_ >= records_.size(); }
  std::size_t position() const { return position_; }
  const PracticeRecord& current() const { return records_.at(position_); }

  // Marks `typed` as the current cell's answer (replacing an earlier one) with
  // verify_answers on every answer so far. A right, carried, rounded or
  // imprecise answer moves on; a wrong one stays (try again, `h`, `s`). After
  // a named mistake at a cell's first answer one more cell of the step is
  // asked next. Throws InputError, changing nothing, when `typed` is not a number.
  CellMark answer(std::string_view typed);
  // Makes `cell` (any cell of a step practised) the current one, asking it
  // after the others when it was not among the cells asked (the page lets a
  // learner fill any cell of a grid). Throws InputError for another cell.
  void go_to(const PracticeCell& cell);
  // verify's verdict of every cell answered, on every answer so far, in the order asked.
  std::vector<CellMark> marks() const;
  // The next rung of the current cell's hint ladder (the third again once all
  // are taken), recorded.
  Hint hint();
  // The current cell left unanswered (its earlier answer, if any, is kept); moves on.
  void skip();
  // Back to the cell asked before the current one; false at the first.
  bool back();

  // The answers file (docs/answers-format.md) of everything answered, in the
  // order asked; the session's own record (hints, skips, first verdicts, the
  // cell asked next) in `# practice:` comments, which verify ignores.
  std::string answers_toml() const;
  // Continues a session from answers_toml()'s text; `origin` names the file in
  // errors. Options given now (steps, cells) win over the saved ones.
  void restore(std::string_view saved, const std::string& origin);
  // True when `saved` (answers_toml()'s text) records a finished session.
  static bool saved_finished(std::string_view saved);

  PracticeSummary summary() const;

 private:
  void choose_steps();
  std::vector<PracticeCell> base_plan() const;
  std::vector<PracticeCell> cells_in_order(const Step& step) const;
  std::vector<Answer> parsed_answers(const std::vector<PracticeRecord>& records) const;
  void add_follow_up(const PracticeCell& cell);
  void move_on();

  const Lesson& lesson_;
  Backend& backend_;
  PracticeOptions options_;
  bool cells_given_ = false;
  Trace truth_;
  std::vector<const Step*> steps_;
  std::vector<PracticeRecord> records_;
  std::size_t position_ = 0;
  // verify on the answers as they stand, made when first needed after a change
  mutable std::optional<VerifyReport> report_;
  const VerifyReport& report() const;
};

// The verdict of `cell` in `report` (verify_answers on answers that include it).
CellMark mark_of(const VerifyReport& report, const PracticeCell& cell);

// What a learner is told of one marked answer, in the terminal and on the
// page alike: a line that begins with the verdict's name (tr(verdict_name(verdict))
// then `rest`), then more lines (why, where to read, a note, what comes next).
struct Feedback {
  Verdict verdict = Verdict::ok;
  std::string rest{};
  std::vector<std::string> lines{};
};
Feedback practice_feedback(const Trace& truth, const CellMark& mark);

// The end summary's lines (after its heading): the counts, the mistakes
// named with what to reread (`inner`: one of that list), and verify's marks.
struct SummaryLine {
  std::string text;
  bool inner = false;
};
std::vector<SummaryLine> practice_summary_lines(const PracticeSession& s,
                                                const PracticeSummary& summary);

// "head0.scaled[river, bank]": a cell by its token names.
std::string cell_name(const Trace& trace, const PracticeCell& cell);

}  // namespace attn
