// The report of verify: a learner's answers marked like a tutor marking a
// page (text), or for tools (JSON, docs/json.md).
#include "teach/verify_report.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <string>

#include "core/expand.hpp"
#include "core/number_text.hpp"
#include "render/json_writer.hpp"
#include "render/numbers.hpp"
#include "render/render.hpp"

namespace attn {

namespace {

// "K[1,3] (bank, d3)": indices as in the answers file, then the labels.
std::string where(const Trace& trace, const std::string& step, std::size_t row, std::size_t col) {
  const Step& s = trace.at(step);
  return fmt::format("{}[{},{}] ({}, {})", step, row, col, s.rows.at(row), s.cols.at(col));
}

std::string answer_title(const Trace& trace, const Answer& a) {
  switch (a.where.kind) {
    case CellSelector::Kind::cell:
      return where(trace, a.step, a.where.row, a.where.col);
    case CellSelector::Kind::row:
      return fmt::format("{} row {} ({})", a.step, a.where.row,
                         trace.at(a.step).rows.at(a.where.row));
    case CellSelector::Kind::matrix:
      return fmt::format("{} (whole matrix)", a.step);
  }
  return a.step;
}

// "right given your K, which was wrong at K[1,3]" (and the learner's carried
// values it also rests on: "and your head0.scores, built on it").
std::string carried_sentence(const std::vector<CarriedSource>& sources) {
  std::vector<std::string> wrong_steps, wrong_cells, built;
  for (const CarriedSource& s : sources) {
    if (s.wrong) {
      wrong_steps.push_back(s.step);
      wrong_cells.push_back(fmt::format("{}[{},{}]", s.step, s.row, s.col));
    } else {
      built.push_back(s.step);
    }
  }
  std::string out =
      fmt::format("right given your {}, which {} wrong at {}", fmt::join(wrong_steps, " and "),
                  wrong_steps.size() == 1 ? "was" : "were", fmt::join(wrong_cells, ", "));
  if (!built.empty())
    out += fmt::format(" (and your {}, built on {})", fmt::join(built, " and "),
                       wrong_steps.size() == 1 ? "it" : "them");
  return out;
}

// The given value as written; the others with as many decimals as help.
std::string given_text(const WrittenNumber& n) {
  return format_fixed(n.value, n.decimals);
}
// A value to compare with one written with `decimals`: one decimal more, and
// trailing zeros dropped down to the written decimals (0.45 next to 0.51,
// 1.6755 next to 1.727, 1.0000 next to 1.0000).
std::string value_text(double v, int decimals) {
  std::string s = format_fixed(v, decimals + 1);
  const std::size_t dot = s.find('.');
  if (dot == std::string::npos) return s;
  while (s.size() > dot + 1 + static_cast<std::size_t>(std::max(decimals, 1)) && s.back() == '0')
    s.pop_back();
  return s;
}

// The given and expected values of one cell; for a wrong one, the cell worked
// out on paper and, unless the whole answer has one, the mistake named.
void write_cell(std::string& out, const Lesson& lesson, const Trace& truth, const AnswerVerdict& a,
                const AnswerCell& c, bool single) {
  const std::string indent = single ? "   " : "     ";
  if (!single)
    out += fmt::format("   {} — {}\n", where(truth, a.answer.step, c.row, c.col),
                       verdict_name(c.verdict));
  const int decimals = c.given.decimals;
  out += fmt::format("{}given {} · expected {}", indent, given_text(c.given),
                     value_text(c.expected, decimals));
  if (std::isfinite(c.given.value)) out += fmt::format(" (±{})", format_by_hand(c.tolerance, 6));
  if (c.verdict == Verdict::carried && c.carried_expected)
    out += fmt::format(" · from your own values {}", value_text(*c.carried_expected, decimals));
  out += "\n";
  if (c.verdict != Verdict::wrong) return;
  std::string expansion =
      expansion_text(expand_cell(lesson, truth, a.answer.step, c.row, c.col), 4);
  for (std::size_t p = expansion.find('\n'); p != std::string::npos;
       p = expansion.find('\n', p + 1))
    expansion.insert(p + 1, indent);
  out += fmt::format("{}on paper: {}\n", indent, expansion);
  if (a.diagnosis) return;  // named once for the whole answer
  if (c.diagnoses.empty()) {
    out += indent + "mistake: none of the common mistakes gives this value\n";
    return;
  }
  for (std::size_t k = 0; k < c.diagnoses.size(); ++k)
    out += fmt::format("{}{}: {} — {}\n", indent, k ? "also fits" : "mistake", c.diagnoses[k].label,
                       c.diagnoses[k].detail);
}

}  // namespace

std::string verify_report_text(const Lesson& lesson, const Trace& truth, const VerifyReport& r,
                               const std::string& origin) {
  std::string out = fmt::format("attn-trace verify · {} · answers: {}\n", lesson.id, origin);
  out += fmt::format("{} answer{}: {} ok · {} carried · {} wrong · first wrong: {}\n",
                     r.answers.size(), r.answers.size() == 1 ? "" : "s", r.ok, r.carried, r.wrong,
                     r.first_wrong
                         ? where(truth, r.first_wrong->step, r.first_wrong->row, r.first_wrong->col)
                         : std::string("none"));
  for (std::size_t i = 0; i < r.answers.size(); ++i) {
    const AnswerVerdict& a = r.answers[i];
    const bool single = a.cells.size() == 1;
    std::size_t not_ok = 0;
    for (const AnswerCell& c : a.cells) not_ok += c.verdict != Verdict::ok;
    out +=
        fmt::format("\n{}. {} — {}", i + 1, answer_title(truth, a.answer), verdict_name(a.verdict));
    if (!single)
      out += not_ok ? fmt::format(" ({} of {} values differ from the true ones)", not_ok,
                                  a.cells.size())
                    : fmt::format(" (all {} values)", a.cells.size());
    out += fmt::format("   [line {}]\n", a.answer.line);
    if (a.verdict == Verdict::carried) out += "   " + carried_sentence(a.carried_from) + "\n";
    if (a.diagnosis) {
      out += fmt::format("   mistake: {} — {}\n", a.diagnosis->label, a.diagnosis->detail);
      if (!a.also_fits.empty())
        out += fmt::format("   also fits: {} (the first label in precedence order is named)\n",
                           fmt::join(a.also_fits, ", "));
    }
    for (const AnswerCell& c : a.cells)
      if (single || c.verdict != Verdict::ok) write_cell(out, lesson, truth, a, c, single);
  }
  return out;
}

// One JSON entry per number given (docs/json.md: each with its cell), in the
// order of the answers file; "answer" and "line" say which answer it came from.
std::string verify_report_json(const Lesson& lesson, const VerifyReport& r) {
  std::vector<std::string> entries;
  std::size_t ok = 0, carried = 0, wrong = 0;
  for (std::size_t i = 0; i < r.answers.size(); ++i) {
    const AnswerVerdict& a = r.answers[i];
    std::vector<std::string> carried_from;
    for (const CarriedSource& s : a.carried_from)
      carried_from.push_back(fmt::format("{{\"step\": {}, \"cell\": [{}, {}], \"wrong\": {}}}",
                                         json_string(s.step), s.row, s.col,
                                         s.wrong ? "true" : "false"));
    for (const AnswerCell& c : a.cells) {
      ok += c.verdict == Verdict::ok;
      carried += c.verdict == Verdict::carried;
      wrong += c.verdict == Verdict::wrong;
      // The answer's common diagnosis first when it has one, then the cell's others.
      std::vector<const Diagnosis*> order;
      for (const Diagnosis& d : c.diagnoses)
        if (a.diagnosis && d.label == a.diagnosis->label) order.push_back(&d);
      for (const Diagnosis& d : c.diagnoses)
        if (!a.diagnosis || d.label != a.diagnosis->label) order.push_back(&d);
      std::vector<std::string> also;
      for (std::size_t k = 1; k < order.size(); ++k) also.push_back(json_string(order[k]->label));
      entries.push_back(fmt::format(
          "{{\"step\": {}, \"cell\": [{}, {}], \"given\": {}, \"expected\": {}, \"status\": {}, "
          "\"diagnosis\": {},\n   \"detail\": {}, \"also_fits\": [{}], \"carried_expected\": {}, "
          "\"carried_from\": [{}], \"answer\": {}, \"line\": {}, \"tolerance\": {}}}",
          json_string(a.answer.step), c.row, c.col, json_number(c.given.value),
          json_number(c.expected), json_string(verdict_name(c.verdict)),
          order.empty() ? "null" : json_string(order.front()->label),
          order.empty() ? "null" : json_string(order.front()->detail), fmt::join(also, ", "),
          c.carried_expected ? json_number(*c.carried_expected) : "null",
          c.verdict == Verdict::carried ? fmt::format("{}", fmt::join(carried_from, ", ")) : "",
          i + 1, a.answer.line, json_number(c.tolerance)));
    }
  }
  const std::string first = r.first_wrong ? fmt::format("{{\"step\": {}, \"cell\": [{}, {}]}}",
                                                        json_string(r.first_wrong->step),
                                                        r.first_wrong->row, r.first_wrong->col)
                                          : "null";
  return fmt::format(
      "{{\"lesson\": {},\n \"first_wrong\": {},\n \"summary\": {{\"ok\": {}, \"carried\": {}, "
      "\"wrong\": {}}},\n \"answers\": [\n  {}\n ]}}\n",
      json_string(lesson.id), first, ok, carried, wrong, fmt::join(entries, ",\n  "));
}

}  // namespace attn
