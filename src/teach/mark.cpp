// Marking a class: each student folder verified and scored, then the
// gradebook, the feedback files and the class summary written from the marks.
#include "teach/mark.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <set>
#include <utility>

#include "backend/backend.hpp"
#include "core/atomic_file.hpp"
#include "core/error.hpp"
#include "core/i18n.hpp"
#include "core/parallel.hpp"
#include "core/pipeline.hpp"
#include "core/toml_read.hpp"
#include "render/escape.hpp"
#include "render/json_writer.hpp"
#include "render/numbers.hpp"
#include "teach/answer_template.hpp"
#include "teach/answers.hpp"
#include "teach/exercise.hpp"
#include "teach/fingerprint.hpp"
#include "teach/names.hpp"

namespace attn {

namespace fs = std::filesystem;

namespace {

constexpr const char* kLessonFile = "lesson.toml";
constexpr const char* kAnswersFile = "answers.toml";
constexpr const char* kRosterFile = "roster.csv";
constexpr const char* kUnexplained = N_("none of the common mistakes");

// Points as people write them: "2", "1.5", "0.33" (two decimals at most).
std::string points_text(double points) {
  std::string s = fmt::format("{:.2f}", points);
  while (s.back() == '0') s.pop_back();
  if (s.back() == '.') s.pop_back();
  return s == "-0" ? "0" : s;
}

// Points in hundredths as people write them: 133 -> "1.33", 50 -> "0.5", 200 -> "2".
std::string hundredths_text(long long hundredths) {
  const long long magnitude = hundredths < 0 ? -hundredths : hundredths;
  std::string s = fmt::format("{}{}.{:02}", hundredths < 0 ? "-" : "", magnitude / 100,
                              magnitude % 100);
  while (s.back() == '0') s.pop_back();
  if (s.back() == '.') s.pop_back();
  return s;
}

// A step as the sheet titles its question: "`head0.scores` — Scores".
std::string sheet_step(const Trace& truth, const std::string& step) {
  return fmt::format("`{}` — {}", step, md_text(step_display_name(truth.at(step))));
}

// A cell as the key's worked cells name it: "`head0.scores` [1, 2] (cat, sat)",
// for Markdown (the tokens escaped).
std::string cell_text(const Trace& truth, const std::string& step, std::size_t row,
                      std::size_t col) {
  const Step& s = truth.at(step);
  return fmt::format("`{}` [{}, {}] ({}, {})", step, row, col, md_text(s.rows.at(row)),
                     md_text(s.cols.at(col)));
}

// The decimals a feedback file shows a true value with: the sheet's answer
// decimals, as its key shows every value (one more than written elsewhere).
int shown_decimals(const Lesson& lesson, const AnswerCell& c) {
  return lesson.answer_decimals.value_or(std::max(c.given.decimals, 1) + 1);
}

bool is_asked(const std::vector<StepMark>& steps, const std::string& step) {
  return std::any_of(steps.begin(), steps.end(), [&](const StepMark& s) { return s.step == step; });
}

// The diagnosis that names the mistake of a wrong cell: the cell's own first
// one, else the one its whole answer has.
const Diagnosis* cell_diagnosis(const AnswerVerdict& a, const AnswerCell& c) {
  if (!c.diagnoses.empty()) return &c.diagnoses.front();
  return a.diagnosis ? &*a.diagnosis : nullptr;
}

// The answer and the cell of `report` at the first wrong value of an asked
// step (`steps`, in trace order), if it has one: a step the sheet does not
// ask is not marked, so it is not shown either.
std::pair<const AnswerVerdict*, const AnswerCell*> first_wrong_cell(
    const VerifyReport& report, const std::vector<StepMark>& steps) {
  for (const StepMark& s : steps) {
    std::pair<const AnswerVerdict*, const AnswerCell*> first{nullptr, nullptr};
    for (const AnswerVerdict& a : report.answers)
      if (a.answer.step == s.step)
        for (const AnswerCell& c : a.cells)
          if (c.verdict == Verdict::wrong &&
              (!first.second || std::pair(c.row, c.col) < std::pair(first.second->row,
                                                                     first.second->col)))
            first = {&a, &c};
    if (first.second) return first;
  }
  return {nullptr, nullptr};
}

// Every mistake behind a value not right: the diagnosis labels of wrong and
// rounded cells of the asked steps, kUnexplained for a wrong cell no common
// mistake explains.
std::set<std::string> mistakes_made(const VerifyReport& report,
                                    const std::vector<StepMark>& steps) {
  std::set<std::string> out;
  for (const AnswerVerdict& a : report.answers)
    for (const AnswerCell& c : a.cells)
      if ((c.verdict == Verdict::wrong || c.verdict == Verdict::rounded) &&
          is_asked(steps, a.answer.step)) {
        const Diagnosis* d = cell_diagnosis(a, c);
        out.insert(d ? d->label : std::string(kUnexplained));
      }
  return out;
}

// The first value of an asked step rounded too early, and why, for the student.
std::string rounding_sentence(const VerifyReport& report, const Lesson& lesson,
                              const Trace& truth, const std::vector<StepMark>& steps) {
  for (const AnswerVerdict& a : report.answers)
    for (const AnswerCell& c : a.cells)
      if (c.verdict == Verdict::rounded && !c.diagnoses.empty() && is_asked(steps, a.answer.step))
        return tr_format(
            "- **Rounded too early:** {}: you wrote {}; the value is {} — {}. Keep at least "
            "{} decimals while you work and round only what you write.\n",
            cell_text(truth, a.answer.step, c.row, c.col),
            format_fixed(c.given.value, c.given.decimals),
            format_fixed(c.expected, shown_decimals(lesson, c)),
            c.diagnoses.front().detail.shown(), shown_decimals(lesson, c) + 2);
  return "";
}

// Values right but written with too few decimals: how many to write, with the
// first of them as the example.
std::string decimals_sentence(const VerifyReport& report, const Lesson& lesson,
                              const Trace& truth, const std::vector<StepMark>& steps) {
  std::size_t count = 0;
  const AnswerVerdict* first_answer = nullptr;
  const AnswerCell* first = nullptr;
  for (const AnswerVerdict& a : report.answers)
    for (const AnswerCell& c : a.cells)
      if (c.verdict == Verdict::imprecise && is_asked(steps, a.answer.step)) {
        ++count;
        if (!first) first_answer = &a, first = &c;
      }
  if (!first) return "";
  const int need = std::max(first->required_decimals, shown_decimals(lesson, *first));
  // The value they meant: the true one, or the one their own earlier numbers give.
  const double meant =
      first->carried_expected && std::abs(*first->carried_expected - first->given.value) <
                                     std::abs(first->expected - first->given.value)
          ? *first->carried_expected
          : first->expected;
  return tr_format(
      "- **Write {} decimals:** {}, which cannot show that they are right (e.g. {}: you wrote "
      "{}; to {} decimals it is {}). The sheet asks for {} decimals: keep zeros at the end too "
      "(\"{}\").\n",
      need,
      tr_counted(count, N_("{} value is right but written with fewer decimals"),
                 N_("{} values are right but written with fewer decimals")),
      cell_text(truth, first_answer->answer.step, first->row, first->col),
      format_fixed(first->given.value, first->given.decimals), need, format_fixed(meant, need),
      need, format_fixed(0.25, need));
}

// The counts of a step's cells as a phrase: "6 right, 3 right on your own numbers".
std::string cells_phrase(const StepMark& s) {
  const std::pair<std::size_t, const char*> parts[] = {
      {s.ok, N_("{} right")},
      {s.carried, N_("{} right on your own earlier numbers")},
      {s.rounded, N_("{} off only by rounding too early")},
      {s.imprecise, N_("{} right but with too few decimals")},
      {s.wrong, N_("{} wrong")},
      {s.unreadable, N_("{} unreadable (not read as a number)")},
      {s.blank, N_("{} not answered")}};
  std::vector<std::string> out;
  for (const auto& [count, words] : parts)
    if (count) out.push_back(tr_format(words, count));
  return fmt::format("{}", fmt::join(out, tr(", ")));
}

// The asked steps' marks: each cell earns its share of the step's points times
// the credit of its verdict; a cell no answer gives earns nothing (blank).
std::vector<StepMark> step_marks(const Lesson& lesson, const Trace& truth,
                                 const VerifyReport* report, const MarkScheme& scheme) {
  std::vector<std::string> asked;
  for (const std::string& name : lesson.asked) asked.push_back(truth.id_of(name));
  if (asked.empty() && report)  // not an exercise: the steps answered
    for (const AnswerVerdict& a : report->answers)
      if (std::find(asked.begin(), asked.end(), a.answer.step) == asked.end())
        asked.push_back(a.answer.step);
  std::vector<StepMark> out;
  for (const std::string& id : asked) {
    StepMark s;
    s.step = id;
    s.out_of = scheme.points_for(truth, id);
    const arma::mat& value = truth.at(id).value;
    // Each cell once, with its best verdict if it was answered twice.
    std::map<std::pair<std::size_t, std::size_t>, Verdict> cells;
    if (report)
      for (const AnswerVerdict& a : report->answers)
        if (a.answer.step == id)
          for (const AnswerCell& c : a.cells) {
            const auto [it, fresh] = cells.try_emplace({c.row, c.col}, c.verdict);
            if (!fresh) it->second = std::min(it->second, c.verdict);
          }
    double earned = 0;
    for (std::size_t r = 0; r < value.n_rows; ++r)
      for (std::size_t c = 0; c < value.n_cols; ++c) {
        const auto it = cells.find({r, c});
        const Verdict v = it == cells.end() ? Verdict::missing : it->second;
        earned += scheme.credit(v);
        s.ok += v == Verdict::ok;
        s.carried += v == Verdict::carried;
        s.rounded += v == Verdict::rounded;
        s.imprecise += v == Verdict::imprecise;
        s.wrong += v == Verdict::wrong;
        s.unreadable += v == Verdict::unreadable;
        s.blank += v == Verdict::missing;
      }
    s.points = s.out_of * earned / static_cast<double>(value.n_elem);
    out.push_back(s);
  }
  return out;
}

// The keys of the scheme's points that name one of `steps`.
std::set<std::string> keys_used(const MarkScheme& scheme, const Trace& truth,
                                const std::vector<StepMark>& steps) {
  std::set<std::string> out;
  for (const auto& [name, value] : scheme.points)
    for (const StepMark& s : steps)
      if (truth.id_of(name) == s.step) out.insert(name);
  return out;
}

// The student as feedback.md and summary.md name them: "Ada (ID 2024001)", or the name.
std::string who_label(const StudentMark& m) {
  return m.id.empty() ? m.name : tr_format("{} (ID {})", m.name, m.id);
}

// The first mistake of an asked step: the value written, the value, what went wrong and why.
std::string mistake_lines(const VerifyReport& report, const Lesson& lesson, const Trace& truth,
                          const std::vector<StepMark>& steps, std::string& lesson_shown) {
  const auto [a, c] = first_wrong_cell(report, steps);
  if (!c) return "";
  std::string out = tr_format("- **First mistake:** {}: you wrote {}; the value is {}.\n",
                              cell_text(truth, a->answer.step, c->row, c->col),
                              format_fixed(c->given.value, c->given.decimals),
                              format_fixed(c->expected, shown_decimals(lesson, *c)));
  if (const Diagnosis* d = cell_diagnosis(*a, *c)) {
    out += tr_format("- **What went wrong:** {} — {}\n", tr(d->label), d->detail.shown());
    if (!d->why.empty()) out += tr_format("- **Why:** {}\n", tr(d->why));
    lesson_shown = d->lesson;
  } else {
    out += tr(
        "- **What went wrong:** none of the common mistakes gives this value; redo the "
        "cell's arithmetic step by step.\n");
  }
  return out;
}

// "A", "A and B", "A, B and C".
std::string and_list(const std::vector<std::string>& items) {
  if (items.size() < 2) return items.empty() ? std::string() : items.front();
  const std::vector<std::string> head(items.begin(), items.end() - 1);
  return fmt::format("{}{}{}", fmt::join(head, tr(", ")), tr(" and "), items.back());
}

// The steps with values right on the student's own earlier numbers, and what
// those values earn; it claims no step right as a whole (a step may also have
// wrong values).
std::string carried_sentence(const std::vector<StepMark>& steps, double carried_credit) {
  std::vector<std::string> carried;
  for (const StepMark& s : steps)
    if (s.carried) carried.push_back(fmt::format("`{}`", s.step));
  if (carried.empty() || carried_credit <= 0) return "";
  if (carried_credit >= 1)
    return "\n" + tr_format("**Carried credit:** the values of your {} that are right on your "
                            "own earlier numbers count as right, so a mistake is counted once, "
                            "where it was made.\n",
                            and_list(carried));
  return "\n" + tr_format("**Carried credit:** the values of your {} that are right on your own "
                          "earlier numbers earn {} of their points.\n",
                          and_list(carried), points_text(100 * carried_credit) + "%");
}

// The cells not read as a number: each with what was written and why (the
// first three, then how many more), so the student sees what to write plainly.
std::string unreadable_lines(const StudentMark& m) {
  constexpr std::size_t kShown = 3;
  std::string out;
  for (std::size_t i = 0; i < m.unreadable.size() && i < kShown; ++i)
    out += tr_format("- **Not read as a number:** {}: {}\n", m.unreadable[i].shown,
                     md_text(m.unreadable[i].reason));
  if (m.unreadable.size() > kShown)
    out += tr_format("- … and {} more not read as a number.\n", m.unreadable.size() - kShown);
  return out;
}

// feedback.md, in the words of the student's sheet: its steps as it titles
// them, its cells as its key names them, values at its decimals, and no path
// or command of the instructor's (only the student's own files, for a student
// who has attn-trace).
std::string feedback_markdown(const StudentMark& m, const Lesson& lesson, const Trace& truth,
                              const VerifyReport& report, double carried_credit) {
  const PrintedPoints printed = printed_points(m);
  std::string out = fmt::format(
      "# {}\n\n{}\n\n| {} | {} | {} |\n|---|---:|---|\n",
      tr_format("Feedback: {}", md_text(who_label(m))),
      tr_format("Variant {} · **{} of {} points**", m.variant, printed.total,
                points_text(m.out_of)),
      tr("Step"), tr("Points"), tr("Your values"));
  for (std::size_t i = 0; i < m.steps.size(); ++i)
    out += fmt::format("| {}. {} | {} | {} |\n", i + 1, sheet_step(truth, m.steps[i].step),
                       tr_format("{} of {}", printed.steps[i], points_text(m.steps[i].out_of)),
                       cells_phrase(m.steps[i]));
  std::string lesson_shown;
  const std::string mistake = mistake_lines(report, lesson, truth, m.steps, lesson_shown);
  out += "\n" + unreadable_lines(m) + mistake;
  if (mistake.empty() && m.total >= m.out_of) out += tr("Every asked value is right.\n");
  out += rounding_sentence(report, lesson, truth, m.steps);
  out += decimals_sentence(report, lesson, truth, m.steps);
  out += carried_sentence(m.steps, carried_credit);
  out += "\n" + (lesson_shown.empty()
                     ? tr_format("With attn-trace, in the folder of your {0}: `attn-trace verify "
                                 "{1} --answers {0}` shows every value, cell by cell.\n",
                                 kAnswersFile, kLessonFile)
                     : tr_format("With attn-trace, in the folder of your {0}: `attn-trace verify "
                                 "{1} --answers {0}` shows every value, cell by cell, and "
                                 "`attn-trace run {2}` the lesson on this mistake.\n",
                                 kAnswersFile, kLessonFile, lesson_shown));
  return out;
}

std::string csv_row(const std::vector<std::string>& fields) {
  std::string out;
  for (std::size_t i = 0; i < fields.size(); ++i) out += (i ? "," : "") + csv_field(fields[i]);
  return out + "\r\n";
}

// feedback.md of a student who could not be marked: why.
std::string not_marked_feedback(const StudentMark& m) {
  return fmt::format("# {}\n\n{}\n", tr_format("Feedback: {}", md_text(who_label(m))),
                     tr_format("Not marked: {}", md_text(m.problem)));
}

// feedback.md of a student whose answers.toml is the blank template, or whose
// row of the class spreadsheet is empty.
std::string not_handed_in_feedback(const StudentMark& m) {
  return fmt::format(
      "# {}\n\n{}\n", tr_format("Feedback: {}", md_text(who_label(m))),
      m.from_sheet
          ? tr_format("Not handed in: your row of the class spreadsheet is empty (no value "
                      "typed), so nothing was marked. Out of {} points.",
                      points_text(m.out_of))
          : tr_format("Not handed in: your {} is the blank template (no value written), so "
                      "nothing was marked. Out of {} points.",
                      kAnswersFile, points_text(m.out_of)));
}

// Every asked step of the class, in order of first appearance, with its points.
std::vector<std::pair<std::string, double>> class_steps(const std::vector<StudentMark>& marks) {
  std::vector<std::pair<std::string, double>> steps;
  for (const StudentMark& m : marks)
    for (const StepMark& s : m.steps)
      if (std::none_of(steps.begin(), steps.end(),
                       [&](const auto& x) { return x.first == s.step; }))
        steps.emplace_back(s.step, s.out_of);
  return steps;
}

// "# Class summary", then how many students, how many marked, and their mean.
std::string class_counts(const std::vector<StudentMark>& marks) {
  std::size_t marked = 0, absent = 0;
  double total = 0, out_of = 0;
  for (const StudentMark& m : marks)
    if (m.not_handed_in) {
      ++absent;
    } else if (m.problem.empty()) {
      ++marked;
      total += m.total;
      out_of = std::max(out_of, m.out_of);
    }
  const auto tampered = static_cast<std::size_t>(
      std::count_if(marks.begin(), marks.end(), [](const StudentMark& m) { return m.tampered; }));
  std::string out = fmt::format("# {}\n\n", tr("Class summary"));
  out += marks.size() == 1 ? tr_format("{} student · {} marked", marks.size(), marked)
                           : tr_format("{} students · {} marked", marks.size(), marked);
  if (marked + tampered + absent < marks.size())
    out += tr_format(" · {} not marked (below)", marks.size() - marked - tampered - absent);
  if (tampered) out += tr_format(" · {} tampered (below)", tampered);
  if (absent) out += tr_format(" · {} not handed in (below)", absent);
  if (marked)
    out += tr_format(" · mean {} of {} points", points_text(total / static_cast<double>(marked)),
                     points_text(out_of));
  return out + "\n";
}

// Every mistake, with the students who made it anywhere, and the lesson that
// shows it (common_mistakes()): what to re-teach.
std::string reteach_section(const std::vector<StudentMark>& marks) {
  std::map<std::string, std::vector<std::string>> by_mistake;
  for (const StudentMark& m : marks)
    for (const std::string& label : m.mistakes) by_mistake[label].push_back(m.name);
  std::vector<std::pair<std::string, std::vector<std::string>>> ranked(by_mistake.begin(),
                                                                       by_mistake.end());
  std::stable_sort(ranked.begin(), ranked.end(), [](const auto& x, const auto& y) {
    if (x.first == kUnexplained || y.first == kUnexplained) return y.first == kUnexplained;
    return x.second.size() > y.second.size();
  });
  // Right values written with too few decimals: a line per number of decimals the sheets ask.
  std::map<int, std::vector<std::string>> by_decimals;
  for (const StudentMark& m : marks)
    if (m.imprecise) by_decimals[m.write_decimals].push_back(m.name);
  std::string out = fmt::format(
      "\n## {}\n\n{}\n\n", tr("What to re-teach"),
      tr("Each mistake behind a wrong (or rounded) value, and who made it."));
  if (ranked.empty() && by_decimals.empty())
    return out + std::string(tr("No wrong value in the answers given.\n"));
  out += fmt::format("| {} | {} | {} | {} |\n|---|---:|---|---|\n", tr("Mistake"), tr("Students"),
                     tr("Who"), tr("See lesson"));
  const auto row = [](const std::string& what, const std::vector<std::string>& names,
                      std::string_view lesson) {
    return fmt::format("| {} | {} | {} | {} |\n", what, names.size(),
                       md_text(fmt::format("{}", fmt::join(names, tr(", ")))), lesson);
  };
  for (const auto& [label, names] : ranked) {
    const CommonMistake* mistake = find_common_mistake(label);
    out += row(std::string(tr(label)), names, mistake ? mistake->lesson : "");
  }
  for (const auto& [decimals, names] : by_decimals)
    out += row(tr_format("too few decimals (imprecise): write {} decimals", decimals), names, "");
  return out;
}

// One row of the steps table: `step` across the students marked.
std::string step_row(const std::vector<StudentMark>& marks, const std::string& step, double of) {
  double sum = 0;
  std::size_t n = 0, full = 0, wrong = 0, blank = 0;
  for (const StudentMark& m : marks) {
    if (!m.problem.empty() || m.not_handed_in) continue;
    for (const StepMark& s : m.steps) {
      if (s.step != step) continue;
      ++n;
      sum += s.points;
      full += s.points >= s.out_of;
      wrong += s.wrong > 0;
      blank += s.blank > 0;
    }
  }
  return fmt::format("| {} | {} | {} | {} | {} |\n", step,
                     tr_format("{} of {}", n ? points_text(sum / static_cast<double>(n)) : "-",
                               points_text(of)),
                     full, wrong, blank);
}

// Each step across the class.
std::string steps_section(const std::vector<StudentMark>& marks) {
  std::string out = fmt::format(
      "\n## {}\n\n| {} | {} | {} | {} | {} |\n|---|---:|---:|---:|---:|\n", tr("Steps"), tr("Step"),
      tr("Mean points"), tr("Full marks"), tr("Some wrong"), tr("Some blank"));
  for (const auto& [step, points] : class_steps(marks)) out += step_row(marks, step, points);
  return out;
}

// The students who could not be marked, and why; nothing when every one was.
std::string not_marked_section(const std::vector<StudentMark>& marks) {
  const auto listed = [](const StudentMark& m) { return !m.problem.empty() && !m.tampered; };
  if (std::none_of(marks.begin(), marks.end(), listed)) return "";
  std::string out = fmt::format("\n## {}\n\n| {} | {} | {} |\n|---|---|---|\n", tr("Not marked"),
                                tr("Student"), tr("Folder"), tr("Problem"));
  for (const StudentMark& m : marks)
    if (listed(m))
      out +=
          fmt::format("| {} | {} | {} |\n", md_text(m.name), md_text(m.folder), md_text(m.problem));
  return out;
}

// The students whose answers.toml is the blank template: not in any mean.
std::string not_handed_in_section(const std::vector<StudentMark>& marks) {
  std::string rows;
  for (const StudentMark& m : marks)
    if (m.not_handed_in)
      rows += fmt::format("| {} | {} | {} |\n", md_text(m.name), md_text(m.id), md_text(m.folder));
  if (rows.empty()) return "";
  const bool sheet = std::any_of(marks.begin(), marks.end(),
                                 [](const StudentMark& m) { return m.from_sheet; });
  return fmt::format(
      "\n## {}\n\n{}\n\n| {} | {} | {} |\n|---|---|---|\n{}", tr("Not handed in"),
      sheet ? tr("Their row of the class spreadsheet is empty: no points, and left out of the "
                 "means above.")
            : tr_format("Their {} is the blank template: no points, and left out of the means "
                        "above.",
                        kAnswersFile),
      tr("Student"), tr("Student ID"), tr("Folder"), rows);
}

// The cells not read as a number, student by student: to read again on the paper.
std::string unreadable_section(const std::vector<StudentMark>& marks) {
  std::string rows;
  for (const StudentMark& m : marks)
    for (const UnreadableCell& u : m.unreadable)
      rows += fmt::format("| {} | {} | {} | {} |\n", md_text(m.name), md_text(m.id), u.shown,
                          md_text(fmt::format("\"{}\"", show_controls(u.typed))));
  if (rows.empty()) return "";
  return fmt::format(
      "\n## {}\n\n{}\n\n| {} | {} | {} | {} |\n|---|---|---|---|\n{}",
      tr("Cells to read again"),
      tr("These cells were not read as a number, so they earned nothing: read them again on the "
         "paper, correct the typing and mark again."),
      tr("Student"), tr("Student ID"), tr("Cell"), tr("Typed"), rows);
}

// The students a class summary lists apart: the tampered folders (not marked)
// and the students whose lesson.toml was found in another folder too.
std::string tampered_section(const std::vector<StudentMark>& marks) {
  std::string rows;
  for (const StudentMark& m : marks)
    if (m.tampered)
      rows +=
          fmt::format("| {} | {} | {} |\n", md_text(m.name), md_text(m.folder), md_text(m.problem));
  for (const StudentMark& m : marks)
    if (!m.warning.empty())
      rows += fmt::format("| {} | {} | {} |\n", md_text(m.name), md_text(m.folder),
                          md_text(tr_format("marked; {}", m.warning)));
  if (rows.empty()) return "";
  return fmt::format(
      "\n## {}\n\n{}\n\n| {} | {} | {} |\n|---|---|---|\n{}", tr("Tampered"),
      tr("Folders whose lesson.toml is not the one exercise wrote for the student roster.csv "
         "gives the folder to (edited, or copied from another folder): not marked. Students can "
         "change the files of their folder; roster.csv is yours."),
      tr("Student"), tr("Folder"), tr("What was found"), rows);
}

// The students marked whose lesson.toml had no fingerprint to be checked against.
std::string unchecked_section(const std::vector<StudentMark>& marks) {
  std::vector<std::string> names;
  for (const StudentMark& m : marks)
    if (m.problem.empty() && !m.not_handed_in && !m.fingerprint_checked) names.push_back(m.name);
  if (names.empty()) return "";
  const std::string who = md_text(fmt::format("{}", fmt::join(names, tr(", "))));
  return fmt::format(
      "\n## {}\n\n{}\n", tr("Not checked"),
      names.size() == 1
          ? tr_format("The {} of {} marked student could not be checked for edits: {} has no "
                      "fingerprint for it (an older attn-trace wrote it, or there is none): {}. "
                      "Run the command at the top of index.md again with --force to record the "
                      "fingerprints (filled-in {} files are kept).",
                      kLessonFile, names.size(), kRosterFile, who, kAnswersFile)
          : tr_format("The {} of {} marked students could not be checked for edits: {} has no "
                      "fingerprint for them (an older attn-trace wrote it, or there is none): {}. "
                      "Run the command at the top of index.md again with --force to record the "
                      "fingerprints (filled-in {} files are kept).",
                      kLessonFile, names.size(), kRosterFile, who, kAnswersFile));
}

// At most `limit` characters of text a student or a user wrote, for a message.
std::string shown(std::string_view text, std::size_t limit = 80) {
  if (code_point_count(text) <= limit) return std::string(text);
  std::size_t at = 0;
  for (std::size_t count = 0; count < limit; ++count) {
    ++at;  // past a lead byte, then its continuation bytes
    while (at < text.size() && (static_cast<unsigned char>(text[at]) & 0xC0) == 0x80) ++at;
  }
  return std::string(text.substr(0, at)) + "…";
}

bool same_name(std::string_view a, std::string_view b) {
  if (a == b) return true;
  try {
    return nfc(a) == nfc(b);
  } catch (const InputError&) {
    return false;
  }
}

// How a teacher puts a tampered lesson.toml right.
constexpr const char* kRestoreLesson = N_(
    "put back the lesson.toml exercise wrote (the command at the top of index.md, run again "
    "with --force, writes it and keeps filled-in answers.toml files), then mark again");

// What keeps `folder` from being the name of one sub-folder of the class
// folder, as a phrase ("is a path, ..."); "" when nothing does.
std::string folder_flaw(std::string_view folder) {
  if (folder.empty()) return std::string(tr("is empty"));
  if (folder == "." || folder == "..") return std::string(tr("leaves the class folder"));
  if (folder.find_first_of("/\\") != std::string_view::npos)
    return std::string(tr("is a path, not the name of one folder"));
  if (folder.front() == '.') return std::string(tr("starts with '.' (a hidden folder)"));
  for (char c : folder)
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f)
      return std::string(tr("has a control character"));
  if (invalid_utf8_offset(folder) != std::string_view::npos) return std::string(tr("is not UTF-8"));
  if (folder.size() > kMaxRosterFolderBytes)
    return tr_format("is longer than {} bytes", kMaxRosterFolderBytes);
  return "";
}

// Folders, NFC names and IDs already on roster.csv, with their lines.
struct RosterSeen {
  std::map<std::string, int> folders, names, ids;
};

// An ID of roster.csv: an ID (student_id_flaw), each on one row; "" is no ID.
void check_roster_id(const RosterEntry& e, const std::string& where, RosterSeen& seen) {
  if (e.id.empty()) return;
  if (const std::string flaw = student_id_flaw(e.id); !flaw.empty())
    throw InputError(tr_format(
        "{}: the ID \"{}\" {}; an ID is 1 to {} letters (A-Z, a-z), digits, '-', '_' or '.', "
        "starting with a letter or digit: correct it as in the roster given to exercise",
        where, shown(e.id), flaw, kMaxStudentIdChars));
  if (const auto [it, fresh] = seen.ids.emplace(e.id, e.line); !fresh)
    throw InputError(tr_format(
        "{}: ID {} is already on line {}; each student has an ID of their own: correct one of "
        "the two rows",
        where, e.id, it->second));
}

// `where` is "roster.csv:LINE".
void check_roster_name(const RosterEntry& e, const std::string& where, RosterSeen& seen) {
  if (e.name.empty())
    throw InputError(tr_format(
        "{}: no name for folder \"{}\"; write the student's name as exercise wrote it, or "
        "remove the row",
        where, shown(e.folder)));
  if (invalid_utf8_offset(e.name) != std::string_view::npos)
    throw InputError(
        tr_format("{}: the name is not UTF-8; save roster.csv as UTF-8 (or put back the one "
                    "exercise wrote)",
                    where));
  if (const std::size_t length = code_point_count(e.name); length > kMaxNameChars)
    throw InputError(tr_format(
        "{}: the name is {} characters long; a name is at most {} characters: write the "
        "student's name only",
        where, length, kMaxNameChars));
  if (const auto [it, fresh] = seen.names.emplace(nfc(e.name), e.line); !fresh)
    throw InputError(
        tr_format("{}: \"{}\" is already on line {}; each student is on one row: remove one "
                    "of the rows",
                    where, e.name, it->second));
}

// A row of roster.csv as exercise writes it, or an InputError naming its line and the fix:
// mark writes only into the folders roster.csv names, so each must be inside the class folder.
void check_roster_row(const RosterEntry& e, const std::string& where, bool has_names,
                      const fs::path& class_dir, RosterSeen& seen) {
  if (has_names) check_roster_name(e, where, seen);
  check_roster_id(e, where, seen);
  if (const std::string flaw = folder_flaw(e.folder); !flaw.empty())
    throw InputError(tr_format(
        "{}: folder \"{}\" {}; a row names its student's own sub-folder of {} by that "
        "folder's name alone, as exercise wrote it{}: correct the row or remove it",
        where, shown(e.folder), flaw, class_dir.string(),
        has_names ? tr_format(" (\"{}\" for {})", student_folder(e.name), e.name) : ""));
  if (const auto [it, fresh] = seen.folders.emplace(e.folder, e.line); !fresh)
    throw InputError(
        tr_format("{}: folder \"{}\" is already on line {}; each student has a folder of "
                    "their own: remove one of the rows",
                    where, e.folder, it->second));
  if (!e.fingerprint.empty() && !is_fingerprint(e.fingerprint))
    throw InputError(tr_format(
        "{}: fingerprint \"{}\" is not one exercise writes (sha256: and 64 hex digits); put "
        "back the roster.csv exercise wrote (the command at the top of index.md, run again "
        "with --force, writes it)",
        where, shown(e.fingerprint)));
}

// The rows of the class's roster.csv (`roster`), each checked.
std::vector<RosterEntry> roster_entries(const fs::path& class_dir, const std::string& roster) {
  std::vector<int> lines;
  const std::vector<std::vector<std::string>> rows = csv_rows(read_file(roster), &lines);
  const auto column = [&](std::string_view name) -> std::optional<std::size_t> {
    if (rows.empty()) return std::nullopt;
    const auto it = std::find(rows[0].begin(), rows[0].end(), name);
    if (it == rows[0].end()) return std::nullopt;
    return static_cast<std::size_t>(it - rows[0].begin());
  };
  const std::optional<std::size_t> folder_at = column("folder"), id_at = column("id"),
                                   name_at = column("name"), variant_at = column("variant"),
                                   fingerprint_at = column("fingerprint");
  if (!folder_at)
    throw InputError(
        tr_format("{}: no 'folder' column in its first line; it should be the "
                    "roster.csv that attn-trace exercise wrote (name,folder,variant,fingerprint)",
                    roster));
  RosterSeen seen;
  std::vector<RosterEntry> entries;
  for (std::size_t r = 1; r < rows.size(); ++r) {
    const std::vector<std::string>& row = rows[r];
    if (std::all_of(row.begin(), row.end(), [](const std::string& f) { return f.empty(); }))
      continue;  // an empty line, or one of commas only
    const auto cell = [&](std::optional<std::size_t> at) {
      return at && *at < row.size() ? row[*at] : std::string();
    };
    RosterEntry e{cell(folder_at),      cell(id_at), cell(name_at),         cell(variant_at),
                  cell(fingerprint_at), lines[r],    RosterStatus::listed};
    check_roster_row(e, fmt::format("{}:{}", roster, lines[r]), name_at.has_value(), class_dir,
                     seen);
    entries.push_back(std::move(e));
  }
  return entries;
}

// Why the lesson.toml at `path` (fingerprint and student in `m`) is not what
// the roster says of its folder; "" when nothing is wrong (or there is no
// roster to check against). Sets m.tampered for a listed folder's lesson.
std::string roster_problem(const RosterEntry& entry, StudentMark& m, const Lesson* lesson,
                           const std::string& path) {
  switch (entry.status) {
    case RosterStatus::no_roster:
      return "";
    case RosterStatus::not_listed:
      return tr_format(
          "not on {}, so its {} cannot be checked; if it is a student's folder, add the student "
          "to the roster and run exercise again with --force (filled-in {} files are kept), or "
          "else move the folder out of the class folder",
          kRosterFile, kLessonFile, kAnswersFile);
    case RosterStatus::listed:
      break;
  }
  const std::string row = tr_format("{} line {}", kRosterFile, entry.line);
  const std::string& who = entry.name.empty() ? entry.folder : entry.name;
  m.tampered = true;
  if (!entry.fingerprint.empty() && m.fingerprint != entry.fingerprint)
    return tr_format(
        "tampered: {} is not the lesson exercise wrote for {}: its fingerprint is not the one "
        "on {}; {}",
        path, who, row, tr(kRestoreLesson));
  if (lesson && !entry.name.empty() && !same_name(lesson->student, entry.name))
    return tr_format("tampered: {} is the exercise of \"{}\", but {} gives this folder to {}; {}",
                     path, shown(lesson->student), row, who, tr(kRestoreLesson));
  if (lesson && !entry.variant.empty() && lesson->variant != entry.variant)
    return tr_format("tampered: {} is variant {}, but {} gives {} variant {}; {}", path,
                     shown(lesson->variant), row, who, entry.variant, tr(kRestoreLesson));
  m.tampered = false;
  return "";
}

// The folder's lesson.toml, read once: its fingerprint and student into `m`,
// then checked against the roster's row. std::nullopt (m.problem says why)
// when it cannot be read, is not a lesson, or is not what the roster says.
std::optional<Lesson> checked_lesson(const fs::path& dir, const RosterEntry& entry,
                                     StudentMark& m) {
  const std::string path = (dir / kLessonFile).string();
  std::string text;
  try {
    text = read_file(path);
  } catch (const InputError& e) {
    m.problem = e.what();
    return std::nullopt;
  }
  m.fingerprint = lesson_fingerprint(text);
  std::optional<Lesson> lesson;
  std::string parse_error;
  try {
    lesson = parse_lesson(text, path);
    m.lesson_student = lesson->student;
  } catch (const InputError& e) {
    parse_error = e.what();
  }
  m.problem = roster_problem(entry, m, lesson ? &*lesson : nullptr, path);
  if (m.problem.empty()) m.problem = parse_error;
  if (!m.problem.empty()) return std::nullopt;
  if (entry.name.empty() && !lesson->student.empty()) m.name = lesson->student;
  m.fingerprint_checked = !entry.fingerprint.empty();
  return lesson;
}

// A folder whose lesson.toml is another roster student's (a copied folder:
// two folders claiming one student) is tampered and says whose; that
// student, marked, gets a warning naming the folder it was also found in.
void name_copied_lessons(const fs::path& class_dir, const std::vector<RosterEntry>& roster,
                         std::vector<StudentMark>& marks) {
  for (std::size_t i = 0; i < marks.size(); ++i) {
    StudentMark& m = marks[i];
    const bool listed = roster[i].status == RosterStatus::listed;
    if (m.fingerprint.empty() || !(m.tampered || roster[i].status == RosterStatus::not_listed))
      continue;
    for (std::size_t j = 0; j < roster.size(); ++j) {
      const RosterEntry& other = roster[j];
      if (j == i || other.status != RosterStatus::listed ||
          !((!other.fingerprint.empty() && other.fingerprint == m.fingerprint) ||
            (!m.lesson_student.empty() && same_name(m.lesson_student, other.name))))
        continue;
      const std::string path = (class_dir / m.folder / kLessonFile).string();
      m.tampered = true;
      m.problem = listed
                      ? tr_format(
                            "tampered: {} is the lesson of {} (folder {}), not {}'s: copied from "
                            "that folder? Two folders claim one student; {}",
                            path, other.name, other.folder, m.name, tr(kRestoreLesson))
                      : tr_format(
                            "tampered: {}, in a folder not on {}, is the lesson of {} (folder {}): "
                            "two folders claim one student; move the copy out of the class folder",
                            path, kRosterFile, other.name, other.folder);
      m.feedback = not_marked_feedback(m);
      marks[j].warning += (marks[j].warning.empty() ? std::string() : std::string(tr("; "))) +
                          tr_format("its {} is also in folder {} (copied?)", kLessonFile, m.folder);
      break;
    }
  }
}

}  // namespace

std::vector<std::vector<std::string>> csv_rows(std::string_view text, std::vector<int>* lines,
                                               std::vector<std::vector<bool>>* quoted_fields) {
  if (text.starts_with("\xEF\xBB\xBF")) text.remove_prefix(3);
  std::vector<std::vector<std::string>> rows(1, std::vector<std::string>(1));
  std::vector<std::vector<bool>> quotes(1, std::vector<bool>(1, false));
  std::vector<int> starts(1, 1);
  int line = 1;
  bool quoted = false;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    std::string& field = rows.back().back();
    line += c == '\n';
    if (quoted) {
      if (c != '"')
        field += c;
      else if (i + 1 < text.size() && text[i + 1] == '"')
        field += text[++i];
      else
        quoted = false;
    } else if (c == '"') {
      quoted = true;
      quotes.back().back() = true;
    } else if (c == ',') {
      rows.back().emplace_back();
      quotes.back().push_back(false);
    } else if (c == '\n') {
      rows.emplace_back(1);
      quotes.emplace_back(1, false);
      starts.push_back(line);
    } else if (c != '\r') {
      field += c;
    }
  }
  if (rows.back().size() == 1 && rows.back()[0].empty()) {
    rows.pop_back();
    quotes.pop_back();
    starts.pop_back();
  }
  if (lines) *lines = std::move(starts);
  if (quoted_fields) *quoted_fields = std::move(quotes);
  for (std::vector<std::string>& row : rows)
    for (std::string& field : row) field = csv_value(field);  // as csv_field wrote it
  return rows;
}

double MarkScheme::points_for(const Trace& trace, const std::string& step) const {
  for (const auto& [name, value] : points)
    if (trace.id_of(name) == step) return value;
  return default_points;
}

double MarkScheme::credit(Verdict verdict) const {
  switch (verdict) {
    case Verdict::ok:
      return ok;
    case Verdict::carried:
      return carried;
    case Verdict::rounded:
      return rounded;
    case Verdict::imprecise:
      return imprecise;
    case Verdict::wrong:
    case Verdict::unreadable:
    case Verdict::missing:
      return 0;
  }
  return 0;
}

MarkScheme read_mark_scheme(const std::string& path) {
  TomlReader toml(read_file(path), path);
  toml.require_known_keys(toml.root(), "", {"points", "credit"});
  MarkScheme scheme;
  auto non_negative = [&](const toml::node& n, const std::string& key) {
    const double v = toml.number(n, key).value;
    if (v < 0) toml.fail(&n, key, std::string(tr("points cannot be negative")));
    return v;
  };
  if (const toml::table* t = toml.table(toml.root(), "points"))
    for (const auto& [key, node] : *t) {
      const std::string name(key.str());
      if (name == "default")
        scheme.default_points = non_negative(node, "points.default");
      else
        scheme.points[name] = non_negative(node, "points." + name);
    }
  if (const toml::table* t = toml.table(toml.root(), "credit")) {
    toml.require_known_keys(*t, "credit", {"carried", "rounded", "imprecise"});
    const std::pair<const char*, double*> fractions[] = {{"carried", &scheme.carried},
                                                         {"rounded", &scheme.rounded},
                                                         {"imprecise", &scheme.imprecise}};
    for (const auto& [key, into] : fractions)
      if (const toml::node* n = t->get(key)) {
        const std::string where = fmt::format("credit.{}", key);
        *into = toml.number(*n, where).value;
        if (*into < 0 || *into > 1)
          toml.fail(n, where, std::string(tr("a credit is the fraction of the points a value earns: 0 to 1")));
      }
  }
  return scheme;
}

// The marks of a verified answers file: points, first mistake, feedback.
void mark_report(StudentMark& m, const Lesson& lesson, const Trace& truth,
                 const VerifyReport& report, const MarkScheme& scheme) {
  m.steps = step_marks(lesson, truth, &report, scheme);
  if (const auto [a, c] = first_wrong_cell(report, m.steps); c) {
    m.first_wrong = fmt::format("{}[{},{}]", a->answer.step, c->row, c->col);
    if (const Diagnosis* d = cell_diagnosis(*a, *c)) m.mistake = d->label;
  }
  m.mistakes = mistakes_made(report, m.steps);
  for (const AnswerVerdict& a : report.answers)
    for (const AnswerCell& c : a.cells)
      if (c.verdict == Verdict::unreadable && is_asked(m.steps, a.answer.step))
        m.unreadable.push_back({fmt::format("{}[{},{}]", a.answer.step, c.row, c.col),
                                cell_text(truth, a.answer.step, c.row, c.col), c.typed,
                                c.note.shown()});
  for (const StepMark& s : m.steps) {
    m.total += s.points;
    m.out_of += s.out_of;
    m.imprecise += s.imprecise;
  }
  for (const AnswerVerdict& a : report.answers)
    for (const AnswerCell& c : a.cells)
      if (c.verdict == Verdict::imprecise && is_asked(m.steps, a.answer.step))
        m.write_decimals =
            std::max({m.write_decimals, c.required_decimals, shown_decimals(lesson, c)});
  m.feedback = feedback_markdown(m, lesson, truth, report, scheme.carried);
  m.point_keys_used = keys_used(scheme, truth, m.steps);
}

// A student whose answers.toml is the blank template: every step with its
// points possible, none earned, and a note instead of feedback.
void mark_not_handed_in(StudentMark& m, const Lesson& lesson, const Trace& truth,
                        const MarkScheme& scheme) {
  m.not_handed_in = true;
  m.steps = step_marks(lesson, truth, nullptr, scheme);
  for (const StepMark& s : m.steps) m.out_of += s.out_of;
  m.feedback = not_handed_in_feedback(m);
  m.point_keys_used = keys_used(scheme, truth, m.steps);
}

// Why the student's folder, or a file of it that mark reads or writes, is a
// symbolic link ("" when none is): mark neither reads nor writes through one,
// and one student's link does not stop the class (its feedback is not written).
std::string linked_problem(const fs::path& dir) {
  for (const fs::path& path : {dir, dir / kLessonFile, dir / kAnswersFile, dir / "feedback.md"}) {
    std::error_code ec;
    if (!fs::is_symlink(fs::symlink_status(path, ec))) continue;
    const fs::path to = fs::read_symlink(path, ec);
    return tr_format(
        "{} is a symbolic link to {}: mark reads and writes a student's folder only as real "
        "files and folders; replace the link with what it points to, then mark again (no "
        "feedback.md was written)",
        path.string(), ec ? std::string("?") : to.string());
  }
  return "";
}

namespace {

// The student's answers, from `source` (the class spreadsheet's row) or the
// folder's answers.toml; nothing when they handed nothing in (the template
// untouched, or the spreadsheet's row left empty).
std::optional<std::vector<Answer>> handed_in(const fs::path& answers_path, const Lesson& lesson,
                                             const Trace& truth, const AnswersSource& source) {
  if (!source) {
    if (blank_answers_text(read_file(answers_path.string()))) return std::nullopt;
    return load_answers_file(answers_path.string(), lesson, truth);
  }
  std::vector<Answer> answers = source(lesson, truth);
  const bool blank = std::all_of(answers.begin(), answers.end(), [](const Answer& a) {
    return std::all_of(a.values.begin(), a.values.end(), [](const auto& row) {
      return std::all_of(row.begin(), row.end(),
                         [](const WrittenNumber& n) { return n.blank && !n.unreadable; });
    });
  });
  if (blank) return std::nullopt;
  return answers;
}

}  // namespace

StudentMark mark_student(const fs::path& class_dir, const RosterEntry& entry,
                         const MarkScheme& scheme, const AnswersSource& source) {
  StudentMark m;
  m.folder = entry.folder;
  m.id = entry.id;
  m.name = entry.name.empty() ? entry.folder : entry.name;
  m.variant = entry.variant;
  m.from_sheet = static_cast<bool>(source);
  const fs::path dir = class_dir / entry.folder;
  const std::string shown_dir = dir.string();
  m.problem = linked_problem(dir);
  if (!m.problem.empty()) {
    m.linked = true;
    return m;
  }
  // The lesson first, checked against the roster: without it there is nothing to mark against.
  std::optional<Lesson> lesson = checked_lesson(dir, entry, m);
  if (!lesson) {
    m.feedback = not_marked_feedback(m);
    return m;
  }
  m.variant = lesson->variant;
  const std::unique_ptr<Backend> backend = make_backend("cpu");
  const Trace truth = run_pipeline(*lesson, *backend);
  const fs::path answers_path = dir / kAnswersFile;
  try {
    std::error_code ec;
    if (!source && !fs::exists(answers_path, ec))
      throw InputError(
          tr_format("no {} in {}; put the student's filled-in {} there (exercise "
                      "writes a blank one)",
                      kAnswersFile, shown_dir, kAnswersFile));
    const std::optional<std::vector<Answer>> answers =
        handed_in(answers_path, *lesson, truth, source);
    if (!answers) {
      mark_not_handed_in(m, *lesson, truth, scheme);
      return m;
    }
    const VerifyReport report = verify_answers(*lesson, *backend, *answers);
    mark_report(m, *lesson, truth, report, scheme);
  } catch (const InputError& e) {
    // Marked as nothing answered, with the same columns as everyone else.
    m.problem = e.what();
    m.steps = step_marks(*lesson, truth, nullptr, scheme);
    m.total = m.out_of = 0;
    for (const StepMark& s : m.steps) m.out_of += s.out_of;
    m.feedback = not_marked_feedback(m);
  }
  m.point_keys_used = keys_used(scheme, truth, m.steps);
  return m;
}

std::vector<RosterEntry> class_roster(const fs::path& class_dir) {
  std::error_code ec;
  if (!fs::is_directory(class_dir, ec))
    throw InputError(
        tr_format("{}: not a folder; give the folder that attn-trace exercise "
                    "--out wrote",
                    class_dir.string()));
  // The roster's students first, in its order, whether or not their folder is
  // complete (a missing lesson.toml is then that student's problem)...
  std::vector<RosterEntry> entries;
  const fs::path roster = class_dir / kRosterFile;
  const bool has_roster = fs::exists(roster, ec);
  if (has_roster) entries = roster_entries(class_dir, roster.string());
  // ...then every other sub-folder holding a lesson.toml, by name.
  std::vector<RosterEntry> others;
  for (const fs::directory_entry& entry : fs::directory_iterator(class_dir, ec)) {
    const std::string name = entry.path().filename().string();
    if (entry.is_directory() && fs::exists(entry.path() / kLessonFile) &&
        std::none_of(entries.begin(), entries.end(),
                     [&](const RosterEntry& e) { return e.folder == name; })) {
      RosterEntry other;
      other.folder = name;
      other.status = has_roster ? RosterStatus::not_listed : RosterStatus::no_roster;
      others.push_back(std::move(other));
    }
  }
  if (ec)
    throw InputError(
        tr_format("{}: cannot list the folder: {}", class_dir.string(), ec.message()));
  std::sort(others.begin(), others.end(),
            [](const RosterEntry& a, const RosterEntry& b) { return a.folder < b.folder; });
  entries.insert(entries.end(), others.begin(), others.end());
  if (entries.empty())
    throw InputError(tr_format(
        "{}: no student folders (sub-folders with a {}); give the folder that attn-trace "
        "exercise --out wrote",
        class_dir.string(), kLessonFile));
  return entries;
}

std::vector<StudentMark> mark_class(const fs::path& class_dir, const MarkScheme& scheme,
                                    const std::string& points_file) {
  return mark_class(class_dir, class_roster(class_dir), scheme, points_file);
}

std::vector<StudentMark> mark_class(const fs::path& class_dir,
                                    const std::vector<RosterEntry>& roster,
                                    const MarkScheme& scheme, const std::string& points_file,
                                    const AnswersSource& source) {
  std::vector<StudentMark> marks(roster.size());
  parallel_for(roster.size(), [&](std::size_t i) {
    marks[i] = mark_student(class_dir, roster[i], scheme, source);
  });
  name_copied_lessons(class_dir, roster, marks);
  std::vector<std::string> asked;
  for (const auto& [step, out_of] : class_steps(marks)) asked.push_back(step);
  // (Lambdas capture the key by name, not a structured binding: clang before 16 cannot.)
  for (const auto& entry : scheme.points)
    if (const std::string& name = entry.first;
        std::none_of(marks.begin(), marks.end(),
                     [&](const StudentMark& m) { return m.point_keys_used.contains(name); }))
      throw InputError(fmt::format(
          fmt::runtime(translate(terminal_language(),
          "{}: key 'points.{}': no student was asked for this step; the asked steps are {} "
          "(a short name such as 'weights' means head 0)")),
          points_file, name, fmt::join(asked, ", ")));
  return marks;
}

std::string_view mark_status(const StudentMark& m) {
  if (m.not_handed_in) return "not handed in";
  if (m.tampered) return "tampered";
  return m.problem.empty() ? "marked" : "not marked";
}

PrintedPoints printed_points(const StudentMark& m) {
  // In hundredths: the total rounded, each step's points rounded down, and
  // the hundredths left over given to the steps that lost the most.
  const long long total = std::llround(m.total * 100);
  std::vector<long long> steps;
  std::vector<std::pair<double, std::size_t>> lost;  // (remainder, step)
  long long sum = 0;
  for (std::size_t i = 0; i < m.steps.size(); ++i) {
    const double hundredths = m.steps[i].points * 100;
    const auto down = static_cast<long long>(std::floor(hundredths + 1e-9));
    steps.push_back(down);
    sum += down;
    lost.emplace_back(hundredths - static_cast<double>(down), i);
  }
  std::stable_sort(lost.begin(), lost.end(),
                   [](const auto& a, const auto& b) { return a.first > b.first; });
  long long left = total - sum;  // 0 to the number of steps, but for rounding noise
  for (std::size_t k = 0; left > 0 && k < lost.size(); ++k, --left) ++steps[lost[k].second];
  for (std::size_t k = lost.size(); left < 0 && k > 0; --k, ++left) --steps[lost[k - 1].second];
  PrintedPoints out;
  for (const long long h : steps) out.steps.push_back(hundredths_text(h));
  sum = 0;
  for (const long long h : steps) sum += h;
  out.total = hundredths_text(sum);  // == total, unless no step could take the rest
  return out;
}

std::string marks_csv(const std::vector<StudentMark>& marks) {
  const std::vector<std::pair<std::string, double>> steps = class_steps(marks);
  // The header in the documents' language (tr); the rows are the same in both.
  std::vector<std::string> header;
  for (const char* column : {N_("id"), N_("name"), N_("folder"), N_("variant"), N_("status")})
    header.emplace_back(tr(column));
  for (const auto& [step, out_of] : steps)
    header.push_back(tr_format("{} ({})", step, points_text(out_of)));
  for (const char* column :
       {N_("total"), N_("out of"), N_("first wrong"), N_("mistake"), N_("problem"),
        N_("unreadable cells")})
    header.emplace_back(tr(column));
  std::string out = "\xEF\xBB\xBF" + csv_row(header);
  for (const StudentMark& m : marks) {
    const PrintedPoints printed = printed_points(m);
    std::vector<std::string> row = {m.id, m.name, m.folder, m.variant,
                                     std::string(mark_status(m))};
    for (const auto& column : steps) {
      const std::string& step = column.first;
      const auto it = std::find_if(m.steps.begin(), m.steps.end(),
                                   [&](const StepMark& s) { return s.step == step; });
      row.push_back(it == m.steps.end() || m.not_handed_in
                        ? ""
                        : printed.steps[static_cast<std::size_t>(it - m.steps.begin())]);
    }
    row.push_back(m.not_handed_in ? "" : printed.total);
    row.push_back(points_text(m.out_of));
    row.push_back(m.first_wrong);
    row.push_back(m.mistake);
    row.push_back(m.problem);
    std::vector<std::string> unreadable;  // head0.weights[1,1] "0.19l"; ...
    for (const UnreadableCell& u : m.unreadable)
      unreadable.push_back(fmt::format("{} \"{}\"", u.cell, show_controls(u.typed)));
    row.push_back(fmt::format("{}", fmt::join(unreadable, "; ")));
    out += csv_row(row);
  }
  return out;
}

namespace {

std::vector<std::string> unreadable_json(const StudentMark& m) {
  std::vector<std::string> out;
  for (const UnreadableCell& u : m.unreadable)
    out.push_back(fmt::format(R"({{"cell": {}, "typed": {}, "reason": {}}})", json_string(u.cell),
                              json_string(u.typed), json_string(u.reason)));
  return out;
}

}  // namespace

std::string marks_json(const std::vector<StudentMark>& marks) {
  // null for what a student without marks does not have.
  const auto text_or_null = [](const std::string& s) {
    return s.empty() ? "null" : json_string(s);
  };
  std::vector<std::string> students;
  for (const StudentMark& m : marks) {
    const auto points = [&](double p) {
      return m.not_handed_in ? std::string("null") : json_number(p);
    };
    std::vector<std::string> steps;
    for (const StepMark& s : m.steps)
      steps.push_back(
          fmt::format("{{\"step\": {}, \"points\": {}, \"out_of\": {}, \"cells\": {{\"ok\": {}, "
                      "\"carried\": {}, "
                      "\"rounded\": {}, \"imprecise\": {}, \"wrong\": {}, \"unreadable\": {}, "
                      "\"missing\": {}}}}}",
                      json_string(s.step), points(s.points), json_number(s.out_of), s.ok,
                      s.carried, s.rounded, s.imprecise, s.wrong, s.unreadable, s.blank));
    students.push_back(fmt::format(
        "{{\"id\": {}, \"name\": {}, \"folder\": {}, \"variant\": {}, \"status\": {}, "
        "\"total\": {}, \"out_of\": {}, \"first_wrong\": {}, \"mistake\": {}, \"problem\": {},\n"
        "   \"unreadable\": [{}],\n   \"steps\": [{}]}}",
        text_or_null(m.id), json_string(m.name), json_string(m.folder), text_or_null(m.variant),
        json_string(mark_status(m)), points(m.total), json_number(m.out_of),
        text_or_null(m.first_wrong), text_or_null(m.mistake), text_or_null(m.problem),
        fmt::join(unreadable_json(m), ", "), fmt::join(steps, ",\n    ")));
  }
  return fmt::format("{{\"students\": [\n  {}\n]}}\n", fmt::join(students, ",\n  "));
}

std::string class_summary(const std::vector<StudentMark>& marks,
                          const std::string& sheet_warning) {
  std::string out = class_counts(marks);
  if (!sheet_warning.empty())
    out += fmt::format("\n## {}\n\n{}\n", tr("Spreadsheet"), md_text(sheet_warning));
  out += reteach_section(marks);
  out += steps_section(marks);
  out += tampered_section(marks);
  out += unreadable_section(marks);
  out += not_handed_in_section(marks);
  out += not_marked_section(marks);
  out += unchecked_section(marks);
  return out;
}

}  // namespace attn
