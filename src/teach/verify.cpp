// Verify: each answer against the truth, then against the learner's own
// earlier values (carried forward), then the mistake named when one fits.
#include "teach/verify.hpp"

#include <algorithm>
#include <map>

#include "core/pipeline.hpp"
#include "teach/slips.hpp"

namespace attn {

namespace {

std::size_t step_index(const Trace& trace, const std::string& id) {
  for (std::size_t i = 0; i < trace.steps.size(); ++i)
    if (trace.steps[i].id == id) return i;
  return trace.steps.size();
}

// Puts the numbers of `answer` in place of the true ones for the cells it gives.
void add_learner_values(Overrides& overrides, const Answer& answer, const Trace& truth) {
  const arma::mat& value = truth.at(answer.step).value;
  auto [it, fresh] = overrides.try_emplace(answer.step);
  if (fresh) it->second = {value, arma::umat(value.n_rows, value.n_cols, arma::fill::zeros)};
  for (std::size_t r = 0; r < answer.values.size(); ++r)
    for (std::size_t c = 0; c < answer.values[r].size(); ++c) {
      it->second.value(answer.step_row(r), answer.step_col(c)) = answer.values[r][c].value;
      it->second.given(answer.step_row(r), answer.step_col(c)) = 1;
    }
}

// A method mistake or rounding explains an answer only if it gives every value
// of it (the right ones too); arithmetic_slip is about one cell and always stays.
void keep_whole_answer_diagnoses(AnswerVerdict& a, Diagnoser& diagnoser) {
  for (AnswerCell& cell : a.cells)
    std::erase_if(cell.diagnoses, [&](const Diagnosis& d) {
      return !std::all_of(a.cells.begin(), a.cells.end(), [&](const AnswerCell& other) {
        const std::optional<double> v =
            diagnoser.value_under(d, a.answer.step, other.row, other.col);
        return !v || matches_written(*v, other.given.value, other.tolerance);
      });
    });
}

// The first label (in precedence order) that every wrong cell's diagnoses share,
// and the others that every wrong cell shares too.
void common_diagnosis(AnswerVerdict& a) {
  std::vector<const AnswerCell*> wrong;
  for (const AnswerCell& c : a.cells)
    if (c.verdict == Verdict::wrong) wrong.push_back(&c);
  if (wrong.empty()) return;
  for (std::string_view label : diagnosis_labels()) {
    const bool everywhere = std::all_of(wrong.begin(), wrong.end(), [&](const AnswerCell* c) {
      return std::any_of(c->diagnoses.begin(), c->diagnoses.end(),
                         [&](const Diagnosis& d) { return d.label == label; });
    });
    if (!everywhere) continue;
    if (!a.diagnosis) {
      for (const Diagnosis& d : wrong.front()->diagnoses)
        if (d.label == label) a.diagnosis = d;
    } else {
      a.also_fits.emplace_back(label);
    }
  }
}

}  // namespace

std::string_view verdict_name(Verdict verdict) {
  switch (verdict) {
    case Verdict::ok:
      return "ok";
    case Verdict::carried:
      return "carried";
    case Verdict::wrong:
      return "wrong";
  }
  return "";
}

VerifyReport verify_answers(const Lesson& lesson, Backend& backend,
                            const std::vector<Answer>& answers) {
  VerifyReport report;
  report.lesson_id = lesson.id;
  const Trace truth = run_pipeline(lesson, backend);

  std::map<std::string, int> decimals_by_step;
  for (const Answer& a : answers)
    for (const auto& row : a.values)
      for (const WrittenNumber& n : row)
        decimals_by_step[a.step] = std::max(decimals_by_step[a.step], n.decimals);

  // Mark in trace order so that carried values come before what rests on them.
  std::vector<std::size_t> order(answers.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](std::size_t x, std::size_t y) {
    return step_index(truth, answers[x].step) < step_index(truth, answers[y].step);
  });

  Overrides learner;                                   // the learner's non-ok values so far
  Overrides as_given;                                  // every value the learner gave so far
  std::map<std::string, CarriedSource> first_differs;  // per overridden step
  std::vector<AnswerVerdict> marked(answers.size());
  for (std::size_t index : order) {
    const Answer& answer = answers[index];
    Overrides earlier = learner;
    earlier.erase(answer.step);  // an answer never carries from its own step
    // Mistakes are recognised on the values the learner worked from, also
    // those that were ok only as rounded to the decimals written.
    Overrides worked_from = as_given;
    worked_from.erase(answer.step);
    const Trace carried = earlier.empty() ? truth : run_pipeline(lesson, backend, earlier);
    std::optional<Diagnoser> diagnoser;

    AnswerVerdict& a = marked[index];
    a.answer = answer;
    for (std::size_t r = 0; r < answer.values.size(); ++r)
      for (std::size_t c = 0; c < answer.values[r].size(); ++c) {
        AnswerCell cell;
        cell.row = answer.step_row(r);
        cell.col = answer.step_col(c);
        cell.given = answer.values[r][c];
        cell.tolerance = answer.tolerance_for(cell.given);
        cell.expected = truth.at(answer.step).value(cell.row, cell.col);
        const double recomputed = carried.at(answer.step).value(cell.row, cell.col);
        if (!matches_written(recomputed, cell.expected, 0.0)) cell.carried_expected = recomputed;
        if (matches_written(cell.expected, cell.given.value, cell.tolerance)) {
          cell.verdict = Verdict::ok;
        } else if (cell.carried_expected &&
                   matches_written(*cell.carried_expected, cell.given.value, cell.tolerance)) {
          cell.verdict = Verdict::carried;
        } else {
          cell.verdict = Verdict::wrong;
          if (!diagnoser) diagnoser.emplace(lesson, backend, worked_from, decimals_by_step);
          cell.diagnoses = diagnoser->diagnose(answer.step, cell.row, cell.col, cell.given.value,
                                               cell.tolerance, cell.given.decimals);
          const CarriedSource here{answer.step, cell.row, cell.col};
          if (!report.first_wrong ||
              std::make_tuple(step_index(truth, here.step), here.row, here.col) <
                  std::make_tuple(step_index(truth, report.first_wrong->step),
                                  report.first_wrong->row, report.first_wrong->col))
            report.first_wrong = here;
        }
        a.verdict = std::max(a.verdict, cell.verdict);
        a.cells.push_back(std::move(cell));
      }
    if (a.verdict == Verdict::carried)
      for (const auto& [step, source] : first_differs) {
        if (!earlier.contains(step)) continue;
        // Name only the learner's steps this answer rests on: with that step's
        // values alone, the answer already comes out other than the truth.
        const Overrides alone{{step, earlier.at(step)}};
        const Trace other = run_pipeline(lesson, backend, alone);
        const bool rests_on = std::any_of(a.cells.begin(), a.cells.end(), [&](const AnswerCell& c) {
          return c.verdict == Verdict::carried &&
                 other.at(answer.step).value(c.row, c.col) != c.expected;
        });
        if (rests_on) a.carried_from.push_back(source);
      }
    std::sort(a.carried_from.begin(), a.carried_from.end(), [&](const auto& x, const auto& y) {
      return step_index(truth, x.step) < step_index(truth, y.step);
    });
    if (diagnoser) keep_whole_answer_diagnoses(a, *diagnoser);
    common_diagnosis(a);

    add_learner_values(as_given, answer, truth);
    if (a.verdict != Verdict::ok) {
      add_learner_values(learner, answer, truth);
      for (const AnswerCell& cell : a.cells)
        if (cell.verdict != Verdict::ok && !first_differs.contains(answer.step))
          first_differs[answer.step] = {answer.step, cell.row, cell.col,
                                        cell.verdict == Verdict::wrong};
    }
  }

  for (AnswerVerdict& a : marked) {
    report.ok += a.verdict == Verdict::ok;
    report.carried += a.verdict == Verdict::carried;
    report.wrong += a.verdict == Verdict::wrong;
    report.answers.push_back(std::move(a));
  }
  return report;
}

}  // namespace attn
