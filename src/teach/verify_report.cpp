// The report of verify: a learner's answers marked like a tutor marking a
// page (text), or for tools (JSON, docs/json.md).
#include "teach/verify_report.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

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
// values it also rests on: "and your head0.scores, built on it"); when none of
// those was wrong, right on the learner's numbers as written.
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
  if (wrong_steps.empty())
    return built.empty()
               ? "right on your own earlier numbers as you wrote them"
               : fmt::format("right on your own earlier numbers as you wrote them (your {})",
                             fmt::join(built, " and "));
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

// Lines longer than `width` columns broken at spaces (for an equation, before
// an "=" when one is in the second half of the line); a continuation keeps the
// line's indent and two more spaces.
std::string wrapped(const std::string& text, std::size_t width, bool at_equals = false) {
  std::string out;
  std::size_t start = 0;
  while (start < text.size()) {
    std::size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    std::string line = text.substr(start, end - start);
    const std::string indent(
        line.find_first_not_of(' ') == std::string::npos ? 0 : line.find_first_not_of(' ') + 2,
        ' ');
    while (display_width(line) > width) {
      // The last space that leaves the head within `width` (counting display
      // columns), or better one before an "=" in the second half of the line.
      std::size_t cut = std::string::npos, before_equals = std::string::npos;
      for (std::size_t p = line.find(' ', indent.size()); p != std::string::npos;
           p = line.find(' ', p + 1)) {
        if (display_width(line.substr(0, p)) > width) break;
        cut = p;
        if (at_equals && line.compare(p, 3, " = ") == 0 &&
            display_width(line.substr(0, p)) > width / 2)
          before_equals = p;
      }
      if (before_equals != std::string::npos) cut = before_equals;
      if (cut == std::string::npos) break;  // one word longer than the line
      out += line.substr(0, cut) + "\n";
      line = indent + line.substr(line.find_first_not_of(' ', cut));
    }
    out += line + (end < text.size() ? "\n" : "");
    start = end + 1;
  }
  return out;
}

// What the report has said once and will not repeat.
struct Said {
  bool softmax_note = false;
};

// An expansion on one line after `label`, its softmax note the first time only.
std::string working(const std::string& indent, const std::string& label, const CellExpansion& e,
                    Said& said) {
  std::string out =
      wrapped(fmt::format("{}{}: {}\n", indent, label, expansion_text(e, 4)), 100, true);
  if (e.kind == ExpansionKind::softmax && !e.exps.empty() && !e.shifted && !e.given_exps &&
      !said.softmax_note) {
    out += fmt::format("{}({})\n", indent, e.note);
    said.softmax_note = true;
  }
  return out;
}

// A diagnosis: the mistake, then why the right step is right and where to see it.
std::string mistake(const std::string& indent, const Diagnosis& d, const char* heading) {
  std::string out = fmt::format("{}{}: {} — {}\n", indent, heading, d.label, d.detail);
  if (!d.why.empty())
    out += fmt::format("{}why: {} See lesson {} (attn-trace run {}).\n", indent, d.why, d.lesson,
                       d.lesson);
  return out;
}

// The given and expected values of one cell; for a cell not ok, the cell
// worked out on paper (and from the learner's own values when they differ)
// and, unless the whole answer has one, the mistake named.
void write_cell(std::string& out, const Lesson& lesson, const Trace& truth, const AnswerVerdict& a,
                const AnswerCell& c, bool single, Said& said) {
  const std::string indent = single ? "   " : "     ";
  if (!single)
    out += fmt::format("   {} — {}\n", where(truth, a.answer.step, c.row, c.col),
                       verdict_name(c.verdict));
  const int decimals = c.given.decimals;
  out += fmt::format("{}given {} · expected {}", indent, given_text(c.given),
                     value_text(c.expected, decimals));
  // A tolerance the answer gave in full; the default shown as the half unit it rounds to.
  if (std::isfinite(c.given.value) && c.note.empty())
    out +=
        fmt::format(" (±{})", format_by_hand(c.tolerance, a.answer.tolerance ? 6 : decimals + 1));
  if (c.carried_expected && c.verdict != Verdict::ok)
    out += fmt::format(" · from your own values {}", value_text(*c.carried_expected, decimals));
  out += "\n";
  if (!c.note.empty()) out += fmt::format("{}note: {}\n", indent, c.note);
  if (c.verdict == Verdict::imprecise)
    out += fmt::format(
        "{}too few digits: {} decimal{} cannot show this value; write at least {} decimal{}\n",
        indent, decimals, decimals == 1 ? "" : "s", c.required_decimals,
        c.required_decimals == 1 ? "" : "s");
  if (c.verdict == Verdict::ok || c.verdict == Verdict::imprecise) return;
  if (c.own_working) out += working(indent, "from your own values", *c.own_working, said);
  if (c.verdict == Verdict::carried) return;
  out += working(indent, "on paper", expand_cell(lesson, truth, a.answer.step, c.row, c.col), said);
  if (a.diagnosis) return;  // named once for the whole answer
  if (c.diagnoses.empty()) {
    out += indent + "mistake: none of the common mistakes gives this value\n";
    return;
  }
  out += mistake(indent, c.diagnoses.front(), "mistake");
  for (std::size_t k = 1; k < c.diagnoses.size(); ++k)
    out +=
        fmt::format("{}also fits: {} — {}\n", indent, c.diagnoses[k].label, c.diagnoses[k].detail);
}

// "10 values in 4 answers: 7 ok · 1 carried · 2 wrong": ok, carried and wrong
// always, rounded, imprecise, blank and missing when there are any; cells
// counted as the JSON summary counts them.
std::string summary_line(const VerifyReport& r) {
  std::size_t cells = 0;
  for (const AnswerVerdict& a : r.answers) cells += a.cells.size();
  std::string counts = fmt::format("{} ok · {} carried", r.ok, r.carried);
  const std::pair<std::size_t, const char*> others[] = {{r.rounded, "rounded"},
                                                        {r.imprecise, "imprecise"}};
  for (const auto& [count, name] : others)
    if (count) counts += fmt::format(" · {} {}", count, name);
  counts += fmt::format(" · {} wrong", r.wrong);
  if (r.blank) counts += fmt::format(" · {} blank", r.blank);
  if (!r.missing.empty()) counts += fmt::format(" · {} missing", r.missing.size());
  return fmt::format("{} value{} in {} answer{}: {}", cells, cells == 1 ? "" : "s",
                     r.answers.size(), r.answers.size() == 1 ? "" : "s", counts);
}

}  // namespace

std::string verify_report_text(const Lesson& lesson, const Trace& truth, const VerifyReport& r,
                               const std::string& origin) {
  std::string out = fmt::format("attn-trace verify · {} · answers: {}\n", lesson.id, origin);
  out += fmt::format("{} · first wrong: {}\n", summary_line(r),
                     r.first_wrong
                         ? where(truth, r.first_wrong->step, r.first_wrong->row, r.first_wrong->col)
                         : std::string("none"));
  if (!r.missing.empty())
    out += fmt::format("missing: {} (asked by the exercise, not answered)\n",
                       fmt::join(r.missing, ", "));
  Said said;
  for (std::size_t i = 0; i < r.answers.size(); ++i) {
    const AnswerVerdict& a = r.answers[i];
    const bool single = a.cells.size() == 1;
    std::size_t not_ok = 0;
    std::vector<std::string> blank;
    for (const AnswerCell& c : a.cells) {
      not_ok += c.verdict != Verdict::ok && !c.given.blank;
      if (c.given.blank) blank.push_back(fmt::format("[{},{}]", c.row, c.col));
    }
    const std::size_t answered = a.cells.size() - blank.size();
    out +=
        fmt::format("\n{}. {} — {}", i + 1, answer_title(truth, a.answer), verdict_name(a.verdict));
    if (!single)
      out += not_ok ? fmt::format(" ({} of {} values not ok)", not_ok, answered)
                    : fmt::format(" (all {} values)", answered);
    out += fmt::format("   [line {}]\n", a.answer.line);
    if (std::any_of(a.cells.begin(), a.cells.end(),
                    [](const AnswerCell& c) { return c.verdict == Verdict::carried; }))
      out += "   " + carried_sentence(a.carried_from) + "\n";
    if (!blank.empty())
      out += fmt::format("   left blank ({} of {}): {}\n", blank.size(), a.cells.size(),
                         fmt::join(blank, " "));
    if (a.verdict == Verdict::rounded)
      out += "   right except that an earlier value was rounded too early: partial credit\n";
    if (a.diagnosis) {
      out += mistake("   ", *a.diagnosis, "mistake");
      if (!a.also_fits.empty())
        out += fmt::format("   also fits: {}\n", fmt::join(a.also_fits, ", "));
    }
    for (const AnswerCell& c : a.cells)
      if (!c.given.blank && (single || c.verdict != Verdict::ok || !c.note.empty()))
        write_cell(out, lesson, truth, a, c, single, said);
  }
  return wrapped(out, 100);
}

// One JSON entry per number given (docs/json.md: each with its cell), in the
// order of the answers file; "answer" and "line" say which answer it came from.
// A step the exercise asks that no answer gives is one entry with status
// "missing" and no cell.
std::string verify_report_json(const Lesson& lesson, const VerifyReport& r) {
  std::vector<std::string> entries;
  for (std::size_t i = 0; i < r.answers.size(); ++i) {
    const AnswerVerdict& a = r.answers[i];
    std::vector<std::string> carried_from;
    for (const CarriedSource& s : a.carried_from)
      carried_from.push_back(fmt::format("{{\"step\": {}, \"cell\": [{}, {}], \"wrong\": {}}}",
                                         json_string(s.step), s.row, s.col,
                                         s.wrong ? "true" : "false"));
    for (const AnswerCell& c : a.cells) {
      std::vector<std::string> also;
      for (std::size_t k = 1; k < c.diagnoses.size(); ++k)
        also.push_back(json_string(c.diagnoses[k].label));
      const Diagnosis* d = c.diagnoses.empty() ? nullptr : &c.diagnoses.front();
      entries.push_back(fmt::format(
          "{{\"step\": {}, \"cell\": [{}, {}], \"given\": {}, \"expected\": {}, \"status\": {}, "
          "\"diagnosis\": {},\n   \"detail\": {}, \"why\": {}, \"lesson\": {}, \"also_fits\": "
          "[{}], "
          "\"carried_expected\": {}, \"carried_range\": {}, \"carried_from\": [{}], \"note\": {}, "
          "\"required_decimals\": {}, \"answer\": {}, \"line\": {}, \"tolerance\": {}}}",
          json_string(a.answer.step), c.row, c.col,
          c.given.blank ? "null" : json_number(c.given.value), json_number(c.expected),
          json_string(verdict_name(c.verdict)), d ? json_string(d->label) : "null",
          d ? json_string(d->detail) : "null", d ? json_string(d->why) : "null",
          d ? json_string(d->lesson) : "null", fmt::join(also, ", "),
          c.carried_expected ? json_number(*c.carried_expected) : "null",
          c.carried_expected
              ? fmt::format("[{}, {}]", json_number(c.carried_low), json_number(c.carried_high))
              : "null",
          c.verdict == Verdict::carried ? fmt::format("{}", fmt::join(carried_from, ", ")) : "",
          c.note.empty() ? "null" : json_string(c.note),
          c.verdict == Verdict::imprecise ? std::to_string(c.required_decimals) : "null", i + 1,
          a.answer.line, c.given.blank ? "null" : json_number(c.tolerance)));
    }
  }
  for (const std::string& step : r.missing)
    entries.push_back(fmt::format("{{\"step\": {}, \"cell\": null, \"status\": \"missing\"}}",
                                  json_string(step)));
  const std::string first = r.first_wrong ? fmt::format("{{\"step\": {}, \"cell\": [{}, {}]}}",
                                                        json_string(r.first_wrong->step),
                                                        r.first_wrong->row, r.first_wrong->col)
                                          : "null";
  return fmt::format(
      "{{\"lesson\": {},\n \"first_wrong\": {},\n \"summary\": {{\"ok\": {}, \"carried\": {}, "
      "\"rounded\": {}, \"imprecise\": {}, \"wrong\": {}, \"blank\": {}, \"missing\": {}}},\n "
      "\"answers\": [\n  {}\n ]}}\n",
      json_string(lesson.id), first, r.ok, r.carried, r.rounded, r.imprecise, r.wrong, r.blank,
      r.missing.size(), fmt::join(entries, ",\n  "));
}

}  // namespace attn
