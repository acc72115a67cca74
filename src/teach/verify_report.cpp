// The report of verify: a learner's answers marked like a tutor marking a
// page (text), or for tools (JSON, docs/json.md).
#include "teach/verify_report.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <iterator>
#include <string>
#include <vector>

#include "core/expand.hpp"
#include "core/i18n.hpp"
#include "core/number_text.hpp"
#include "render/json_writer.hpp"
#include "render/numbers.hpp"
#include "render/render.hpp"

namespace attn {

namespace {

// A status or a diagnosis label as the reader's language names it.
std::string shown_name(std::string_view name) {
  return std::string(tr(name));
}

// A diagnosis's detail in the process-wide language.
std::string shown_detail(const Diagnosis& d) {
  return d.detail.shown();
}

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
      return tr_format(N_("{} row {} ({})"), a.step, a.where.row,
                       trace.at(a.step).rows.at(a.where.row));
    case CellSelector::Kind::matrix:
      return tr_format(N_("{} (whole matrix)"), a.step);
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
  const std::string_view and_ = tr(" and ");
  if (wrong_steps.empty())
    return built.empty()
               ? std::string(tr("right on your own earlier numbers as you wrote them"))
               : tr_format(N_("right on your own earlier numbers as you wrote them (your {})"),
                           fmt::join(built, and_));
  const bool one = wrong_steps.size() == 1;
  std::string out = tr_format(one ? N_("right given your {}, which was wrong at {}")
                                  : N_("right given your {}, which were wrong at {}"),
                              fmt::join(wrong_steps, and_), fmt::join(wrong_cells, ", "));
  if (!built.empty())
    out += tr_format(one ? N_(" (and your {}, built on it)") : N_(" (and your {}, built on them)"),
                     fmt::join(built, and_));
  return out;
}

// The given value as written; the others with as many decimals as help.
std::string given_text(const WrittenNumber& n) {
  return format_fixed(n.value, n.decimals);
}
// A value to compare with one written with `decimals`: two decimals more, so
// that the digit deciding the rounding shows (0.3054 next to 0.30), trailing
// zeros dropped down to one more than written (0.450 next to 0.51, 1.0000
// next to 1.000).
std::string value_text(double v, int decimals) {
  std::string s = format_fixed(v, decimals + 2);
  const std::size_t dot = s.find('.');
  if (dot == std::string::npos) return s;
  while (s.size() > dot + 2 + static_cast<std::size_t>(std::max(decimals, 0)) && s.back() == '0')
    s.pop_back();
  return s;
}

// "2 decimals must round to 0.31": for a near miss (one unit of the last
// written decimal from the true value rounded so: 0.30 or 0.32 for 0.31, a
// value that looks as if it were within tolerance), what the true value is at
// the decimals written. A value further off needs no lesson in rounding.
std::string must_round_text(const AnswerCell& c) {
  const int d = c.given.decimals;
  if (!std::isfinite(c.expected) || !std::isfinite(c.given.value) || d > 15) return "";
  const std::string right = format_fixed(c.expected, d);
  if (right == format_fixed(c.given.value, d)) return "";
  if (std::abs(c.given.value - std::strtod(right.c_str(), nullptr)) > 1.5 * std::pow(10.0, -d))
    return "";
  return tr_format(N_(" · {} must round to {}"),
                   tr_counted(static_cast<std::size_t>(d), N_("{} decimal"), N_("{} decimals")),
                   right);
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
      if (cut == std::string::npos) {  // no space to break at (Chinese): between characters
        line = wrap_text(line, width, "", indent);
        line.pop_back();  // its last newline: the line's own follows
        break;
      }
      out += line.substr(0, cut) + "\n";
      line = indent + line.substr(line.find_first_not_of(' ', cut));
    }
    out += line + (end < text.size() ? "\n" : "");
    start = end + 1;
  }
  return out;
}

// How the report is being written: the width its lines keep to, and what it
// has said once and will not repeat.
struct Writing {
  std::size_t width = 100;
  bool softmax_note = false;
};

// An expansion on one line after `label`, its softmax note the first time only.
std::string working(const std::string& indent, const std::string& label, const CellExpansion& e,
                    Writing& once) {
  std::string out =
      wrapped(indent + tr_format("{}: {}", label, expansion_text(e, 4)) + "\n", once.width, true);
  if (e.kind == ExpansionKind::softmax && !e.exps.empty() && !e.shifted && !e.given_exps &&
      !once.softmax_note) {
    out += indent + tr_format(N_("({})"), tr(e.note)) + "\n";
    once.softmax_note = true;
  }
  return out;
}

// A diagnosis: the mistake, then why the right step is right and where to see it.
std::string mistake(const std::string& indent, const Diagnosis& d) {
  std::string out =
      indent + tr_format(N_("mistake: {} — {}"), shown_name(d.label), shown_detail(d)) + "\n";
  if (!d.why.empty())
    out += indent +
           tr_format(N_("why: {0} See lesson {1} (attn-trace run {1})."), tr(d.why), d.lesson) +
           "\n";
  return out;
}

// The given and expected values of one cell; for a cell not ok, the cell
// worked out on paper (and from the learner's own values when they differ)
// and, unless the whole answer has one, the mistake named.
void write_cell(std::string& out, const Lesson& lesson, const Trace& truth, const AnswerVerdict& a,
                const AnswerCell& c, bool single, Writing& once) {
  const std::string indent = single ? "   " : "     ";
  if (!single)
    out += "   " +
           tr_format(N_("{} — {}"), where(truth, a.answer.step, c.row, c.col),
                     shown_name(verdict_name(c.verdict))) +
           "\n";
  if (c.verdict == Verdict::unreadable) {
    out += indent + tr_format(N_("unreadable: {}"), c.note.shown()) + "\n";
    return;
  }
  const int decimals = c.given.decimals;
  out += indent + tr_format(N_("given {} · true {}"), given_text(c.given),
                            value_text(c.expected, decimals));
  const bool off = c.verdict == Verdict::wrong || c.verdict == Verdict::rounded;
  // A tolerance the answer gave in full; the default shown as the half unit it
  // rounds to; for a value off the truth, what it should have been instead.
  if (off && !a.answer.tolerance)
    out += must_round_text(c);
  else if (std::isfinite(c.given.value) && !c.as_mask)
    out +=
        fmt::format(" (±{})", format_by_hand(c.tolerance, a.answer.tolerance ? 6 : decimals + 1));
  if (c.carried_expected && c.verdict != Verdict::ok)
    out += tr_format(N_(" · from your own values {}"), value_text(*c.carried_expected, decimals));
  out += "\n";
  if (!c.note.format.empty()) out += indent + tr_format(N_("note: {}"), c.note.shown()) + "\n";
  if (c.verdict == Verdict::imprecise)
    out +=
        indent +
        tr_format(N_("too few digits: {} cannot show this value; write at least {}"),
                  tr_counted(static_cast<std::size_t>(decimals), N_("{} decimal"), N_("{} decimals")),
                  tr_counted(static_cast<std::size_t>(c.required_decimals), N_("{} decimal"),
                          N_("{} decimals"))) +
        "\n";
  if (c.verdict == Verdict::ok || c.verdict == Verdict::imprecise) return;
  if (c.own_working)
    out += working(indent, shown_name(N_("from your own values")), *c.own_working, once);
  if (c.verdict == Verdict::carried) return;
  out += working(indent, shown_name(N_("on paper")),
                 expand_cell(lesson, truth, a.answer.step, c.row, c.col), once);
  if (a.diagnosis) return;  // named once for the whole answer
  if (c.diagnoses.empty()) {
    out += indent + shown_name(N_("mistake: none of the common mistakes gives this value")) + "\n";
    return;
  }
  out += mistake(indent, c.diagnoses.front());
  for (std::size_t k = 1; k < c.diagnoses.size(); ++k)
    out += indent +
           tr_format(N_("also fits: {} — {}"), shown_name(c.diagnoses[k].label),
                     shown_detail(c.diagnoses[k])) +
           "\n";
}

// "10 values in 4 answers: 7 ok · 1 carried · 2 wrong": ok, carried and wrong
// always, rounded, imprecise, blank and missing when there are any; cells
// counted as the JSON summary counts them.
std::string summary_line(const VerifyReport& r) {
  std::size_t cells = 0;
  for (const AnswerVerdict& a : r.answers) cells += a.cells.size();
  std::string counts =
      tr_format(N_("{} ok"), r.ok) + " · " + tr_format(N_("{} carried"), r.carried);
  const std::pair<std::size_t, const char*> others[] = {{r.rounded, N_("{} rounded")},
                                                        {r.imprecise, N_("{} imprecise")}};
  for (const auto& [count, name] : others)
    if (count) counts += " · " + tr_format(name, count);
  counts += " · " + tr_format(N_("{} wrong"), r.wrong);
  if (r.unreadable) counts += " · " + tr_format(N_("{} unreadable"), r.unreadable);
  if (r.blank) counts += " · " + tr_format(N_("{} blank"), r.blank);
  if (!r.missing.empty()) counts += " · " + tr_format(N_("{} missing"), r.missing.size());
  return tr_format(N_("{} in {}: {}"), tr_counted(cells, N_("{} value"), N_("{} values")),
                   tr_counted(r.answers.size(), N_("{} answer"), N_("{} answers")), counts);
}

// An answer's heading: its number, title and verdict, how many of its values
// are not ok (of an answer of several), and its line in the answers file.
std::string answer_heading(const Trace& truth, const AnswerVerdict& a, std::size_t number) {
  std::size_t not_ok = 0, carried = 0, blank = 0;
  for (const AnswerCell& c : a.cells) {
    not_ok += c.verdict != Verdict::ok && !c.given.blank;
    carried += c.verdict == Verdict::carried && !c.given.blank;
    blank += c.given.blank;
  }
  const std::size_t answered = a.cells.size() - blank;
  std::string out = fmt::format("\n{}. ", number) +
                    tr_format(N_("{} — {}"), answer_title(truth, a.answer),
                              shown_name(verdict_name(a.verdict)));
  // Carried values are not ok against the true ones, but right on the
  // learner's own: counted apart, so "carried" never reads as "all wrong".
  if (a.cells.size() != 1)
    out += !not_ok             ? tr_format(N_(" (all {} values)"), answered)
           : carried == not_ok ? tr_format(N_(" ({} of {} values carried)"), carried, answered)
           : carried ? tr_format(N_(" ({} of {} values not ok, {} of them carried)"), not_ok,
                                 answered, carried)
                     : tr_format(N_(" ({} of {} values not ok)"), not_ok, answered);
  return out + tr_format(N_("   [line {}]"), a.answer.line) + "\n";
}

// One answer: its heading, what holds for the whole answer (carried values,
// blank cells, an early rounding, the mistake), then each cell worth showing.
void write_answer(std::string& out, const Lesson& lesson, const Trace& truth,
                  const AnswerVerdict& a, std::size_t number, Writing& once) {
  const bool single = a.cells.size() == 1;
  out += answer_heading(truth, a, number);
  if (std::any_of(a.cells.begin(), a.cells.end(),
                  [](const AnswerCell& c) { return c.verdict == Verdict::carried; }))
    out += "   " + carried_sentence(a.carried_from) + "\n";
  std::vector<std::string> blank;
  for (const AnswerCell& c : a.cells)
    if (c.given.blank) blank.push_back(fmt::format("[{},{}]", c.row, c.col));
  if (!blank.empty())
    out += tr_format(N_("   left blank ({} of {}): {}"), blank.size(), a.cells.size(),
                     fmt::join(blank, " ")) +
           "\n";
  if (a.verdict == Verdict::rounded)
    out += shown_name(
               N_("   right except that an earlier value was rounded too early: partial credit")) +
           "\n";
  if (a.diagnosis) {
    out += mistake("   ", *a.diagnosis);
    if (!a.also_fits.empty()) {
      std::vector<std::string> names;
      for (const std::string& label : a.also_fits) names.push_back(shown_name(label));
      out += tr_format(N_("   also fits: {}"), fmt::join(names, ", ")) + "\n";
    }
  }
  for (const AnswerCell& c : a.cells)
    if (!c.given.blank && (single || c.verdict != Verdict::ok || !c.note.format.empty()))
      write_cell(out, lesson, truth, a, c, single, once);
}

// The decimals the imprecise values needed (the most of them).
std::size_t decimals_needed(const VerifyReport& r) {
  int most = 0;
  for (const AnswerVerdict& a : r.answers)
    for (const AnswerCell& c : a.cells)
      if (c.verdict == Verdict::imprecise) most = std::max(most, c.required_decimals);
  return static_cast<std::size_t>(most);
}

// The verdict of the whole page, the report's last line: a pass only when
// every value is ok or carried; else what keeps it from passing.
std::string result_line(const VerifyReport& r) {
  if (r.passed()) return std::string(tr("result: passed — every value is ok or carried"));
  std::vector<std::string> parts;
  if (r.wrong) parts.push_back(tr_counted(r.wrong, N_("{} value wrong"), N_("{} values wrong")));
  if (r.rounded)
    parts.push_back(tr_counted(r.rounded,
                               N_("{} value off because an earlier value was rounded too early "
                                  "(keep 5 decimals while you work)"),
                               N_("{} values off because earlier values were rounded too early "
                                  "(keep 5 decimals while you work)")));
  if (r.imprecise)
    parts.push_back(
        tr_counted(r.imprecise, N_("{} value with too few decimals"),
                   N_("{} values with too few decimals")) +
        tr_format(N_(": {}"), tr_counted(decimals_needed(r), N_("write {} decimal"),
                                         N_("write {} decimals"))));
  if (r.unreadable)
    parts.push_back(tr_counted(r.unreadable, N_("{} value unreadable (no number)"),
                               N_("{} values unreadable (no number)")));
  if (r.blank) parts.push_back(tr_counted(r.blank, N_("{} value blank"), N_("{} values blank")));
  if (!r.missing.empty())
    parts.push_back(
        tr_counted(r.missing.size(), N_("{} step missing"), N_("{} steps missing")));
  return tr_format(N_("result: not passed — {}"), fmt::join(parts, "; "));
}

// One step's cells counted by verdict for --brief: ok always, the others when any.
std::string step_counts(const std::vector<const AnswerCell*>& cells) {
  // Indexed by Verdict, from ok to missing (a blank cell).
  std::size_t n[7] = {};
  for (const AnswerCell* c : cells) ++n[static_cast<int>(c->verdict)];
  std::string out = tr_format(N_("{} ok"), n[0]);
  const char* names[] = {nullptr,        N_("{} carried"),    N_("{} rounded"), N_("{} imprecise"),
                         N_("{} wrong"), N_("{} unreadable"), N_("{} blank")};
  static_assert(std::size(names) == static_cast<std::size_t>(Verdict::missing) + 1);
  for (int v = 1; v < 7; ++v)
    if (n[v]) out += " · " + tr_format(names[v], n[v]);
  return out;
}

// The first cell of a step not ok or carried, for --brief: where, its status, its mistake.
std::string first_mistake(const Trace& truth, const AnswerCell& c, const std::string& step) {
  std::string out = tr_format(N_(" — first: {} {}"), where(truth, step, c.row, c.col),
                              shown_name(verdict_name(c.verdict)));
  if (!c.diagnoses.empty()) out += tr_format(N_(" · mistake: {}"), shown_name(c.diagnoses.front().label));
  return out;
}

}  // namespace

std::string verify_report_brief(const Trace& truth, const VerifyReport& r, std::size_t width) {
  std::string out;
  for (const Step& step : truth.steps) {
    std::vector<const AnswerCell*> cells;
    for (const AnswerVerdict& a : r.answers)
      if (a.answer.step == step.id)
        for (const AnswerCell& c : a.cells) cells.push_back(&c);
    const bool missing = std::find(r.missing.begin(), r.missing.end(), step.id) != r.missing.end();
    if (missing) out += tr_format(N_("{}: missing"), step.id) + "\n";
    if (cells.empty()) continue;
    std::string line = tr_format(N_("{}: {}"), step.id, step_counts(cells));
    const auto first = std::find_if(cells.begin(), cells.end(), [](const AnswerCell* c) {
      return c->verdict != Verdict::ok && c->verdict != Verdict::carried;
    });
    if (first != cells.end()) line += first_mistake(truth, **first, step.id);
    out += line + "\n";
  }
  return wrapped(out + result_line(r) + "\n", width);
}

std::string verify_report_text(const Lesson& lesson, const Trace& truth, const VerifyReport& r,
                               const std::string& origin, std::size_t width) {
  std::string out = tr_format(N_("attn-trace verify · {} · answers: {}"), lesson.id, origin) + "\n";
  out += tr_format(N_("{} · first wrong: {}"), summary_line(r),
                   r.first_wrong
                       ? where(truth, r.first_wrong->step, r.first_wrong->row, r.first_wrong->col)
                       : std::string(tr("none"))) +
         "\n";
  if (!r.missing.empty())
    out += tr_format(N_("missing: {} (asked by the exercise, not answered)"),
                     fmt::join(r.missing, ", ")) +
           "\n";
  Writing once;
  once.width = width;
  for (std::size_t i = 0; i < r.answers.size(); ++i)
    write_answer(out, lesson, truth, r.answers[i], i + 1, once);
  out += "\n" + result_line(r) + "\n";
  return wrapped(out, width);
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
          c.given.blank || c.given.unreadable ? "null" : json_number(c.given.value),
          json_number(c.expected),
          json_string(verdict_name(c.verdict)), d ? json_string(d->label) : "null",
          d ? json_string(d->detail.in(Language::en)) : "null", d ? json_string(d->why) : "null",
          d ? json_string(d->lesson) : "null", fmt::join(also, ", "),
          c.carried_expected ? json_number(*c.carried_expected) : "null",
          c.carried_expected
              ? fmt::format("[{}, {}]", json_number(c.carried_low), json_number(c.carried_high))
              : "null",
          c.verdict == Verdict::carried ? fmt::format("{}", fmt::join(carried_from, ", ")) : "",
          c.note.format.empty() ? "null" : json_string(c.note.in(Language::en)),
          c.verdict == Verdict::imprecise ? std::to_string(c.required_decimals) : "null", i + 1,
          a.answer.line,
          c.given.blank || c.given.unreadable ? "null" : json_number(c.tolerance)));
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
      "\"rounded\": {}, \"imprecise\": {}, \"wrong\": {}, \"unreadable\": {}, \"blank\": {}, "
      "\"missing\": {}}},\n \"answers\": [\n  {}\n ]}}\n",
      json_string(lesson.id), first, r.ok, r.carried, r.rounded, r.imprecise, r.wrong,
      r.unreadable, r.blank,
      r.missing.size(), fmt::join(entries, ",\n  "));
}

}  // namespace attn
