// Verify: each written cell against the truth, then against the range the
// learner's own earlier numbers allow (carried forward), then the mistake
// that best explains what was written.
#include "teach/verify.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <memory>
#include <optional>

#include "core/bounds.hpp"
#include "core/dtype.hpp"
#include "core/error.hpp"
#include "core/i18n.hpp"
#include "core/number_text.hpp"
#include "core/pipeline.hpp"
#include "teach/slips.hpp"

namespace attn {

namespace {

// Any fill at or below this, written for a masked score, is accepted as the mask.
constexpr double kMaskLike = -1e4;

std::size_t step_index(const Trace& trace, const std::string& id) {
  for (std::size_t i = 0; i < trace.steps.size(); ++i)
    if (trace.steps[i].id == id) return i;
  return trace.steps.size();
}

// What a number written with d decimals stands for, unless the answer gives a
// tolerance: written_tolerance, because a learner who keeps 5 decimals and
// rounds what they write rounds twice (0.433497 kept as 0.43350, written 0.434).
double tolerance_of(const Answer& answer, const WrittenNumber& n) {
  if (answer.tolerance) return *answer.tolerance;
  return written_tolerance(n.decimals);
}

// The decimals a written value needs to show `value`: the exercise's answer
// decimals when it set them, else two significant digits (at most 4 decimals).
int required_decimals(const Lesson& lesson, double value) {
  if (lesson.answer_decimals) return *lesson.answer_decimals;
  if (value == 0 || !std::isfinite(value)) return 0;
  const int magnitude = static_cast<int>(std::floor(std::log10(std::abs(value))));
  return std::clamp(1 - magnitude, 0, 4);
}

// True when `value` is shown exactly with `decimals` (0 as "0", 0.5 as "0.5").
bool exact_at(double value, int decimals) {
  const double factor = std::pow(10.0, decimals);
  return std::abs(std::round(value * factor) / factor - value) <=
         1e-12 * std::max(1.0, std::abs(value));
}

// [value - tolerance, value + tolerance] meets [low, high] (with a hair of slack).
bool meets(double low, double high, double value, double tolerance) {
  if (!std::isfinite(low) || !std::isfinite(high)) return false;
  const double slack = 1e-9 * std::max({tolerance, std::abs(low), std::abs(high)}) + 1e-12;
  return value + tolerance + slack >= low && value - tolerance - slack <= high;
}

// Puts the numbers of `answer` in place of the computed ones for the cells it
// gives, each standing for the range ± its tolerance.
void add_learner_values(Overrides& overrides, BoundsMap& ranges, const AnswerVerdict& marked,
                        const Trace& truth) {
  const Answer& answer = marked.answer;
  const arma::mat& value = truth.at(answer.step).value;
  auto [it, fresh] = overrides.try_emplace(answer.step);
  if (fresh) it->second = {value, arma::umat(value.n_rows, value.n_cols, arma::fill::zeros)};
  auto [r, new_range] = ranges.try_emplace(answer.step);
  if (new_range) r->second = exact_bounds(value);
  for (const AnswerCell& cell : marked.cells) {
    if (!std::isfinite(cell.given.value)) continue;  // -inf for a masked cell is the mask itself
    it->second.value(cell.row, cell.col) = cell.given.value;
    it->second.given(cell.row, cell.col) = 1;
    // An imprecise number is taken at the precision it should have had.
    const double radius =
        cell.verdict == Verdict::imprecise ? half_unit(cell.required_decimals) : cell.tolerance;
    r->second.lo(cell.row, cell.col) = cell.given.value - radius;
    r->second.hi(cell.row, cell.col) = cell.given.value + radius;
  }
}

// Whether `d` names a mistake of this kind.
bool is_kind(const Diagnosis& d, MistakeKind kind) {
  const CommonMistake* mistake = find_common_mistake(d.label);
  return mistake && mistake->kind == kind;
}

// How many of the learner's cells of `step` the mistake `d` explains.
std::size_t cells_explained(Diagnoser& diagnoser, const Diagnosis& d, const std::string& step,
                            const std::vector<WrittenCell>& given) {
  std::size_t count = 0;
  for (const WrittenCell& g : given)
    count += diagnoser.fits(d, step, g.row, g.col, g.value, g.tolerance).value_or(false);
  return count;
}

// The mistake that explains the most of the learner's cells of this step
// (ties: the more specific, in the order of common_mistakes()), put first in
// every cell that has it; the others that explain every wrong cell too are
// listed as also fitting. A cell whose first diagnosis is rounding is rounded.
void best_fit(AnswerVerdict& a, Diagnoser& diagnoser, const std::vector<WrittenCell>& given) {
  std::vector<const Diagnosis*> candidates;
  for (const AnswerCell& c : a.cells)
    for (const Diagnosis& d : c.diagnoses)
      if (std::none_of(candidates.begin(), candidates.end(),
                       [&](const Diagnosis* x) { return x->label == d.label; }))
        candidates.push_back(&d);
  if (candidates.empty()) return;
  // A label names the whole answer only if every cell not right on the
  // learner's numbers has it (a wrong cell with no diagnosis keeps its own).
  auto explains_every_flagged_cell = [&](const std::string& label) {
    return std::all_of(a.cells.begin(), a.cells.end(), [&](const AnswerCell& c) {
      return c.verdict != Verdict::wrong ||
             std::any_of(c.diagnoses.begin(), c.diagnoses.end(),
                         [&](const Diagnosis& d) { return d.label == label; });
    });
  };
  auto rank = [&](const Diagnosis* d) {
    const CommonMistake* mistake = find_common_mistake(d->label);
    const auto place = mistake - common_mistakes().data();
    const std::size_t cells =
        is_kind(*d, MistakeKind::slip) ? 0 : cells_explained(diagnoser, *d, a.answer.step, given);
    return std::make_tuple(explains_every_flagged_cell(d->label), cells, -place);
  };
  std::stable_sort(candidates.begin(), candidates.end(),
                   [&](const Diagnosis* x, const Diagnosis* y) { return rank(x) > rank(y); });
  const Diagnosis best = *candidates.front();
  if (explains_every_flagged_cell(best.label)) a.diagnosis = best;
  for (std::size_t i = 1; i < candidates.size(); ++i)
    if (explains_every_flagged_cell(candidates[i]->label))
      a.also_fits.push_back(candidates[i]->label);
  for (AnswerCell& c : a.cells) {
    std::stable_partition(c.diagnoses.begin(), c.diagnoses.end(),
                          [&](const Diagnosis& d) { return d.label == best.label; });
    if (c.verdict == Verdict::wrong && !c.diagnoses.empty() &&
        is_kind(c.diagnoses.front(), MistakeKind::rounding))
      c.verdict = Verdict::rounded;
  }
}

// Within rounding noise: `cell` is no further than one unit in its last
// written decimal (and the half unit of rounding twice) from the true value
// or from the range that is right on the learner's own numbers (0.30 for
// 0.3054), as a slip of rounding leaves it.
bool within_rounding_noise(const AnswerCell& cell) {
  const double g = cell.given.value;
  if (!std::isfinite(g) || !std::isfinite(cell.expected)) return false;
  const int d = std::min(cell.given.decimals, 15);
  const double noise = std::pow(10.0, -d) + half_unit(d + 2);
  const double from_own = std::isfinite(cell.carried_low) && std::isfinite(cell.carried_high)
                              ? std::max({cell.carried_low - g, g - cell.carried_high, 0.0})
                              : INFINITY;
  return std::min(std::abs(g - cell.expected), from_own) <= noise * (1 + 1e-9);
}

// Whether the mistake `d` (found in one cell) explains answer `a`: it gives
// every value of it; or, for a mistake in how right values were written
// (truncated, transposed_answer), it gives at least two of the wrong values,
// more than it leaves, and each value it does not give is wrong (an unrelated
// slip: 0.812 for 0.7281 among cut values; a right value written otherwise,
// 0.236 for 0.2356, says the habit is not there). One lone cut value is no habit.
bool explains_answer(const AnswerVerdict& a, Diagnoser& diagnoser, const Diagnosis& d) {
  std::size_t wrong_given = 0, wrong_left = 0;
  bool every = true, only_wrong_left = true;
  for (const AnswerCell& c : a.cells) {
    if (c.given.blank || c.given.unreadable) continue;
    const bool gives =
        diagnoser.fits(d, a.answer.step, c.row, c.col, c.given.value, c.tolerance).value_or(true);
    const bool wrong = c.verdict == Verdict::wrong;
    wrong_given += gives && wrong;
    wrong_left += !gives && wrong;
    every = every && gives;
    only_wrong_left = only_wrong_left && (gives || wrong);
  }
  if (every) return true;
  return is_kind(d, MistakeKind::written) && only_wrong_left && wrong_given >= 2 &&
         wrong_given > wrong_left;
}

// A method mistake or rounding explains an answer only if it gives every value
// of it (the right ones too), truncated and transposed_answer also as
// explains_answer allows; arithmetic_slip is about one cell and always stays.
// Any other mistake must also explain the answer better than rounding noise
// does (CommonMistake::explains_noise): some wrong cell of it lies beyond the
// noise of the right value.
void keep_whole_answer_diagnoses(AnswerVerdict& a, Diagnoser& diagnoser) {
  const bool only_noise = std::all_of(a.cells.begin(), a.cells.end(), [](const AnswerCell& c) {
    return c.verdict != Verdict::wrong || within_rounding_noise(c);
  });
  for (AnswerCell& cell : a.cells)
    if (only_noise)
      std::erase_if(cell.diagnoses, [](const Diagnosis& d) {
        const CommonMistake* mistake = find_common_mistake(d.label);
        return mistake && !mistake->explains_noise;
      });
  for (AnswerCell& cell : a.cells)
    std::erase_if(cell.diagnoses, [&](const Diagnosis& d) {
      return !explains_answer(a, diagnoser, d);
    });
}

}  // namespace

std::string_view verdict_name(Verdict verdict) {
  switch (verdict) {
    case Verdict::ok:
      return N_("ok");
    case Verdict::carried:
      return N_("carried");
    case Verdict::rounded:
      return N_("rounded");
    case Verdict::imprecise:
      return N_("imprecise");
    case Verdict::wrong:
      return N_("wrong");
    case Verdict::unreadable:
      return N_("unreadable");
    case Verdict::missing:
      return N_("missing");
  }
  return "";
}

namespace {

// An answer left wholly blank is no answer (its step may then be missing).
std::vector<Answer> answers_given(const std::vector<Answer>& all_answers) {
  std::vector<Answer> out;
  for (const Answer& a : all_answers)
    if (std::any_of(a.values.begin(), a.values.end(), [](const auto& row) {
          return std::any_of(row.begin(), row.end(),
                             [](const WrittenNumber& n) { return !n.blank || n.unreadable; });
        }))
      out.push_back(a);
  return out;
}

// The cells an answer writes, with the range each stands for.
std::vector<WrittenCell> written_cells(const Answer& a) {
  std::vector<WrittenCell> out;
  for (std::size_t r = 0; r < a.values.size(); ++r)
    for (std::size_t c = 0; c < a.values[r].size(); ++c)
      if (!a.values[r][c].blank && !a.values[r][c].unreadable)
        out.push_back(
            {a.step_row(r), a.step_col(c), a.values[r][c].value, tolerance_of(a, a.values[r][c])});
  return out;
}

// The indices of `answers` in trace order, so that carried values come before
// what rests on them.
std::vector<std::size_t> trace_order(const Trace& truth, const std::vector<Answer>& answers) {
  std::vector<std::size_t> order(answers.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](std::size_t x, std::size_t y) {
    return step_index(truth, answers[x].step) < step_index(truth, answers[y].step);
  });
  return order;
}

// What verify knows while it marks the answers in trace order.
struct Marking {
  const Lesson& lesson;
  Backend& backend;
  const Trace& truth;
  std::map<std::string, int> decimals_by_step;  // the most decimals written in each step
  std::map<std::string, std::vector<WrittenCell>> given_by_step;
  Overrides as_given;                                  // every value the learner gave so far
  BoundsMap ranges;                                    // the range each of them stands for
  std::map<std::string, CarriedSource> first_differs;  // per step with a cell not ok
};

// One answer's view of the learner's earlier values: the trace run with them
// (never with the answer's own step) and the ranges they allow.
struct EarlierValues {
  Overrides values;
  BoundsMap ranges;
  Trace carried;
  BoundsMap bounds;  // of every step of `carried`
};

EarlierValues earlier_values(const Marking& m, const std::string& step) {
  EarlierValues out{m.as_given, m.ranges, {}, {}};
  out.values.erase(step);  // an answer never carries from its own step
  out.ranges.erase(step);
  out.carried = out.values.empty() ? m.truth : run_pipeline(m.lesson, m.backend, out.values);
  out.bounds = trace_bounds(out.carried, out.values, out.ranges);
  return out;
}

// Why a mask-like fill written for a masked cell is accepted.
Message mask_accepted_note(const Trace& truth, double written) {
  const std::string format(dtype_name(truth.dtype));
  if (round_to(truth.dtype, written) == -arma::datum::inf)
    return Message(
        N_("{} is accepted as the mask: in {} it is -inf (beyond the largest {} "
           "number, {}), the mask itself"),
        {short_number(written), format, format, fmt::format("{:g}", dtype_max(truth.dtype))});
  if (truth.dtype == Dtype::f64)
    return Message(N_("{} is accepted as the mask: with a key of the row left open, exp() of any "
                      "fill at or below -10000 underflows to 0 in double precision, so the masked "
                      "key gets weight 0, as with -inf"),
                   {short_number(written)});
  return Message(N_("{} is accepted as the mask: with a key of the row left open, exp() of any "
                    "fill at or below -10000 underflows to 0 in {}, so the masked key gets "
                    "weight 0, as with -inf"),
                 {short_number(written), format});
}

// A mask-like fill written for a masked cell, where a key of the row is left
// open: there any fill this low weighs exactly 0.
bool accepted_as_mask(const Marking& m, const Step& step, const AnswerCell& cell) {
  const double g = cell.given.value;
  // Only a mask step's cells are read in the mask (a gradient of W_Q has more rows).
  const bool masked_cell = step.made.op == Op::mask && m.truth.mask(cell.row, cell.col) != 0u;
  return masked_cell && arma::any(m.truth.mask.row(cell.row) == 0u) && m.lesson.mask_fill <= kMaskLike && g <= kMaskLike &&
         g != cell.expected;
}

// The cell's verdict (ok, carried or wrong), and a wrong cell's diagnoses.
void judge(const Marking& m, const EarlierValues& earlier, const Step& step,
           const std::vector<WrittenCell>& this_answer, std::optional<Diagnoser>& diagnoser,
           AnswerCell& cell) {
  const double g = cell.given.value;
  if (accepted_as_mask(m, step, cell)) {
    cell.verdict = Verdict::ok;
    cell.note = mask_accepted_note(m.truth, g);
    cell.as_mask = true;
  } else if (matches_written(cell.expected, g, cell.tolerance)) {
    cell.verdict = Verdict::ok;
  } else if (cell.carried_expected && meets(cell.carried_low, cell.carried_high, g, cell.tolerance)) {
    // Carried only when the learner's own earlier numbers give another value
    // than the truth: with theirs equal to the true ones there is nothing to carry.
    cell.verdict = Verdict::carried;
  } else {
    cell.verdict = Verdict::wrong;
    if (!diagnoser)
      diagnoser.emplace(m.lesson, m.backend, earlier.values, earlier.ranges, earlier.carried,
                        earlier.bounds, m.decimals_by_step);
    cell.diagnoses = diagnoser->diagnose(step.id, cell.row, cell.col, g, cell.tolerance,
                                         cell.given.decimals, this_answer);
  }
}

// The cell (r, c) of `answer` marked against the truth and the learner's own numbers.
AnswerCell mark_cell(const Marking& m, const EarlierValues& earlier, const Answer& answer,
                     std::size_t r, std::size_t c, const std::vector<WrittenCell>& this_answer,
                     std::optional<Diagnoser>& diagnoser) {
  const Step& step = m.truth.at(answer.step);
  AnswerCell cell;
  cell.row = answer.step_row(r);
  cell.col = answer.step_col(c);
  cell.given = answer.values[r][c];
  cell.tolerance = tolerance_of(answer, cell.given);
  cell.expected = step.value(cell.row, cell.col);
  for (const CellReading& reading : answer.readings)
    if (reading.r == r && reading.c == c) {
      cell.note = reading.note;
      cell.typed = reading.typed;
    }
  if (cell.given.unreadable) {  // no number: the note says why
    cell.verdict = Verdict::unreadable;
    return cell;
  }
  if (cell.given.blank) {  // not answered
    cell.verdict = Verdict::missing;
    return cell;
  }
  const double mid = earlier.carried.at(answer.step).value(cell.row, cell.col);
  if (!matches_written(mid, cell.expected, 0.0)) cell.carried_expected = mid;
  cell.carried_low = earlier.bounds.at(answer.step).lo(cell.row, cell.col);
  cell.carried_high = earlier.bounds.at(answer.step).hi(cell.row, cell.col);
  judge(m, earlier, step, this_answer, diagnoser, cell);
  // Right, but too few digits to show it: never ok.
  const double shown = cell.verdict == Verdict::carried ? mid : cell.expected;
  const int need = required_decimals(m.lesson, shown);
  if ((cell.verdict == Verdict::ok || cell.verdict == Verdict::carried) && !answer.tolerance &&
      std::isfinite(cell.given.value) && cell.given.decimals < need &&
      !exact_at(shown, cell.given.decimals) && !cell.as_mask) {
    cell.verdict = Verdict::imprecise;
    cell.required_decimals = need;
  }
  if (cell.verdict != Verdict::ok && cell.carried_expected)
    cell.own_working = expand_cell(m.lesson, earlier.carried, answer.step, cell.row, cell.col);
  return cell;
}

// The learner's earlier steps a carried answer rests on: with that step's
// values alone, the answer already comes out other than the truth.
std::vector<CarriedSource> carried_from(const Marking& m, const EarlierValues& earlier,
                                        const AnswerVerdict& a) {
  std::vector<CarriedSource> out;
  if (std::none_of(a.cells.begin(), a.cells.end(),
                   [](const AnswerCell& c) { return c.verdict == Verdict::carried; }))
    return out;
  for (const auto& [source_step, source] : m.first_differs) {
    if (!earlier.values.contains(source_step)) continue;
    const Overrides alone{{source_step, earlier.values.at(source_step)}};
    const Trace other = run_pipeline(m.lesson, m.backend, alone);
    const bool rests_on = std::any_of(a.cells.begin(), a.cells.end(), [&](const AnswerCell& c) {
      return c.verdict == Verdict::carried &&
             other.at(a.answer.step).value(c.row, c.col) != c.expected;
    });
    if (rests_on) out.push_back(source);
  }
  std::sort(out.begin(), out.end(), [&](const auto& x, const auto& y) {
    return step_index(m.truth, x.step) < step_index(m.truth, y.step);
  });
  return out;
}

// What the answers of one step are marked against: the learner's earlier
// values, and the diagnoser made from them at the first wrong cell. Answers
// are marked in trace order, so the answers of a step come one after another,
// and between them only that step's own values (which an answer never
// carries from) join the learner's: one context serves them all, and the
// diagnoser's mistaken traces are made once per step, not once per answer
// (a file of one [[answer]] per cell, as practice writes, has many).
struct StepContext {
  StepContext(const Marking& m, const std::string& id) : step(id), earlier(earlier_values(m, id)) {}
  StepContext(const StepContext&) = delete;  // the diagnoser refers into `earlier`
  StepContext& operator=(const StepContext&) = delete;
  std::string step;
  EarlierValues earlier;
  std::optional<Diagnoser> diagnoser{};
};

// One answer marked: its cells, the mistake that explains them, its verdict
// and what it carried from; then its values join the learner's own.
AnswerVerdict mark_answer(Marking& m, const Answer& answer, StepContext& context) {
  const EarlierValues& earlier = context.earlier;
  std::optional<Diagnoser>& diagnoser = context.diagnoser;
  AnswerVerdict a;
  a.answer = answer;
  const std::vector<WrittenCell> this_answer = written_cells(answer);
  for (std::size_t r = 0; r < answer.values.size(); ++r)
    for (std::size_t c = 0; c < answer.values[r].size(); ++c)
      a.cells.push_back(mark_cell(m, earlier, answer, r, c, this_answer, diagnoser));
  if (diagnoser) {
    keep_whole_answer_diagnoses(a, *diagnoser);
    best_fit(a, *diagnoser, m.given_by_step[answer.step]);
  }
  for (const AnswerCell& cell : a.cells)
    if (cell.verdict != Verdict::missing)  // the answer is what was written
      a.verdict = std::max(a.verdict, cell.verdict);
  a.carried_from = carried_from(m, earlier, a);

  add_learner_values(m.as_given, m.ranges, a, m.truth);
  for (const AnswerCell& cell : a.cells)
    if (cell.verdict != Verdict::ok && cell.verdict != Verdict::missing &&
        cell.verdict != Verdict::unreadable && !m.first_differs.contains(answer.step))
      m.first_differs[answer.step] = {answer.step, cell.row, cell.col,
                                      cell.verdict == Verdict::wrong};
  return a;
}

// The report's first wrong cell, moved to one of `a`'s when that is earlier in trace order.
void note_first_wrong(VerifyReport& report, const Trace& truth, const AnswerVerdict& a) {
  for (const AnswerCell& cell : a.cells) {
    if (cell.verdict != Verdict::wrong) continue;
    const CarriedSource here{a.answer.step, cell.row, cell.col};
    if (!report.first_wrong ||
        std::make_tuple(step_index(truth, here.step), here.row, here.col) <
            std::make_tuple(step_index(truth, report.first_wrong->step), report.first_wrong->row,
                            report.first_wrong->col))
      report.first_wrong = here;
  }
}

// The steps the lesson asks that no answer gives.
std::vector<std::string> missing_steps(const Lesson& lesson, const Trace& truth,
                                       const std::vector<Answer>& answers) {
  std::vector<std::string> out;
  for (const std::string& short_or_id : lesson.asked) {
    const std::string asked = truth.id_of(short_or_id);
    if (!truth.find(asked))
      throw InputError(tr_format("{}: key 'exercise.ask': unknown step id '{}'; valid ids: {}",
                                 lesson.origin, asked, fmt::join(truth.ids(), ", ")));
    if (std::none_of(answers.begin(), answers.end(),
                     [&](const Answer& a) { return a.step == asked; }))
      out.push_back(asked);
  }
  return out;
}

void count_cells(VerifyReport& report, const AnswerVerdict& a) {
  for (const AnswerCell& c : a.cells) {
    report.ok += c.verdict == Verdict::ok;
    report.carried += c.verdict == Verdict::carried;
    report.rounded += c.verdict == Verdict::rounded;
    report.imprecise += c.verdict == Verdict::imprecise;
    report.wrong += c.verdict == Verdict::wrong;
    report.unreadable += c.verdict == Verdict::unreadable;
    report.blank += c.verdict == Verdict::missing;
  }
}

}  // namespace

VerifyReport verify_answers(const Lesson& lesson, Backend& backend,
                            const std::vector<Answer>& all_answers) {
  const std::vector<Answer> answers = answers_given(all_answers);
  VerifyReport report;
  report.lesson_id = lesson.id;
  const Trace truth = run_pipeline(lesson, backend);
  Marking m{lesson, backend, truth, {}, {}, {}, {}, {}};
  for (const Answer& a : answers) {
    const std::vector<WrittenCell> cells = written_cells(a);
    m.given_by_step[a.step].insert(m.given_by_step[a.step].end(), cells.begin(), cells.end());
    for (const auto& row : a.values)
      for (const WrittenNumber& n : row)
        if (!n.blank && !n.unreadable)
          m.decimals_by_step[a.step] = std::max(m.decimals_by_step[a.step], n.decimals);
  }

  std::vector<AnswerVerdict> marked(answers.size());
  std::unique_ptr<StepContext> context;
  for (std::size_t index : trace_order(truth, answers)) {
    if (!context || context->step != answers[index].step)
      context = std::make_unique<StepContext>(m, answers[index].step);
    marked[index] = mark_answer(m, answers[index], *context);
    note_first_wrong(report, truth, marked[index]);
  }
  report.missing = missing_steps(lesson, truth, answers);
  for (AnswerVerdict& a : marked) {
    count_cells(report, a);
    report.answers.push_back(std::move(a));
  }
  return report;
}

}  // namespace attn
