// `attn-trace verify LESSON --answers FILE`: mark a learner's hand calculation
// like a tutor marking a page (text) or for tools (JSON, SPEC section 7).
#include <fmt/format.h>

#include <memory>
#include <string>

#include "backend/backend.hpp"
#include "cli/commands.hpp"
#include "core/lesson_library.hpp"
#include "core/pipeline.hpp"
#include "render/json_writer.hpp"
#include "render/numbers.hpp"
#include "render/render.hpp"
#include "teach/expand.hpp"
#include "teach/verify.hpp"

namespace attn {

namespace {

struct VerifyOptions {
  std::string lesson;
  std::string answers;
  std::string format = "text";
};

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

// "right given your K, which was wrong at K[1,3]"
std::string carried_sentence(const std::vector<CarriedSource>& sources) {
  std::vector<std::string> steps, cells;
  for (const CarriedSource& s : sources) {
    steps.push_back(s.step);
    cells.push_back(fmt::format("{}[{},{}]", s.step, s.row, s.col));
  }
  return fmt::format("right given your {}, which {} wrong at {}", fmt::join(steps, " and "),
                     sources.size() == 1 ? "was" : "were", fmt::join(cells, ", "));
}

// The given value as written; the others with as many decimals as help.
std::string given_text(const WrittenNumber& n) {
  return format_fixed(n.value, n.decimals);
}
std::string value_text(double v) {
  return format_by_hand(v, 4);
}

void write_cell(std::string& out, const Lesson& lesson, const Trace& truth, const AnswerVerdict& a,
                const CellVerdict& c, bool single) {
  const std::string indent = single ? "   " : "     ";
  if (!single)
    out += fmt::format("   {} — {}\n", where(truth, a.answer.step, c.row, c.col),
                       verdict_name(c.verdict));
  out += fmt::format("{}given {} · expected {} (±{})", indent, given_text(c.given),
                     value_text(c.expected), format_by_hand(c.tolerance, 6));
  if (c.verdict == Verdict::carried && c.carried_expected)
    out += fmt::format(" · from your own values {}", value_text(*c.carried_expected));
  out += "\n";
  if (c.verdict != Verdict::wrong) return;
  std::string expansion =
      expansion_text(expand_cell(lesson, truth, a.answer.step, c.row, c.col), 4);
  for (std::size_t p = expansion.find('\n'); p != std::string::npos;
       p = expansion.find('\n', p + 1))
    expansion.insert(p + 1, indent);
  out += fmt::format("{}on paper: {}\n", indent, expansion);
  if (c.diagnoses.empty()) {
    out += indent + "mistake: none of the common mistakes gives this value\n";
    return;
  }
  out += fmt::format("{}mistake: {} — {}\n", indent, c.diagnoses.front().label,
                     c.diagnoses.front().detail);
  for (std::size_t k = 1; k < c.diagnoses.size(); ++k)
    out +=
        fmt::format("{}also fits: {} — {}\n", indent, c.diagnoses[k].label, c.diagnoses[k].detail);
}

std::string render_report_text(const Lesson& lesson, const Trace& truth, const VerifyReport& r,
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
    for (const CellVerdict& c : a.cells) not_ok += c.verdict != Verdict::ok;
    out +=
        fmt::format("\n{}. {} — {}", i + 1, answer_title(truth, a.answer), verdict_name(a.verdict));
    if (!single)
      out += not_ok ? fmt::format(" ({} of {} values not right)", not_ok, a.cells.size())
                    : fmt::format(" (all {} values)", a.cells.size());
    out += fmt::format("   [line {}]\n", a.answer.line);
    if (a.verdict == Verdict::carried) out += "   " + carried_sentence(a.carried_from) + "\n";
    if (not_ok > 1 && a.diagnosis)
      out += fmt::format("   mistake: {} — {}\n", a.diagnosis->label, a.diagnosis->detail);
    for (const CellVerdict& c : a.cells)
      if (single || c.verdict != Verdict::ok) write_cell(out, lesson, truth, a, c, single);
  }
  return out;
}

// A value, row or matrix shaped like the answer.
std::string json_shaped(const Answer& a, const std::vector<CellVerdict>& cells,
                        double (*pick)(const CellVerdict&)) {
  std::vector<std::string> rows;
  std::size_t k = 0;
  for (const auto& row : a.values) {
    std::vector<std::string> items;
    for (std::size_t c = 0; c < row.size(); ++c) items.push_back(json_number(pick(cells[k++])));
    rows.push_back(fmt::format("[{}]", fmt::join(items, ", ")));
  }
  if (a.where.kind == CellSelector::Kind::cell) return json_number(pick(cells.front()));
  if (a.where.kind == CellSelector::Kind::row) return rows.front();
  return fmt::format("[{}]", fmt::join(rows, ", "));
}

std::string json_diagnosis(const std::optional<Diagnosis>& d) {
  return d ? json_string(d->label) : std::string("null");
}

std::string render_report_json(const Lesson& lesson, const VerifyReport& r) {
  std::string out = fmt::format(
      "{{\"lesson\": {},\n \"first_wrong\": {},\n \"summary\": {{\"ok\": {}, \"carried\": {}, "
      "\"wrong\": {}}},\n \"answers\": [",
      json_string(lesson.id),
      r.first_wrong
          ? fmt::format("{{\"step\": {}, \"cell\": [{}, {}]}}", json_string(r.first_wrong->step),
                        r.first_wrong->row, r.first_wrong->col)
          : std::string("null"),
      r.ok, r.carried, r.wrong);
  for (std::size_t i = 0; i < r.answers.size(); ++i) {
    const AnswerVerdict& a = r.answers[i];
    const Answer& q = a.answer;
    std::vector<std::string> cells, carried_from, also;
    for (const CellVerdict& c : a.cells) {
      std::vector<std::string> labels;
      for (const Diagnosis& d : c.diagnoses) labels.push_back(json_string(d.label));
      cells.push_back(fmt::format(
          "{{\"cell\": [{}, {}], \"given\": {}, \"expected\": {}, \"carried_expected\": {}, "
          "\"status\": {}, "
          "\"diagnosis\": {}, \"detail\": {}, \"also_fits\": [{}]}}",
          c.row, c.col, json_number(c.given.value), json_number(c.expected),
          c.carried_expected ? json_number(*c.carried_expected) : std::string("null"),
          json_string(verdict_name(c.verdict)),
          c.diagnoses.empty() ? std::string("null") : json_string(c.diagnoses.front().label),
          c.diagnoses.empty() ? std::string("null") : json_string(c.diagnoses.front().detail),
          fmt::join(
              std::vector<std::string>(labels.begin() + (labels.empty() ? 0 : 1), labels.end()),
              ", ")));
    }
    for (const CarriedSource& s : a.carried_from)
      carried_from.push_back(
          fmt::format("{{\"step\": {}, \"cell\": [{}, {}]}}", json_string(s.step), s.row, s.col));
    for (const std::string& l : a.also_fits) also.push_back(json_string(l));
    out += fmt::format(
        "{}\n  {{\"step\": {}, \"cell\": {}, \"row\": {}, \"line\": {}, \"given\": {}, "
        "\"expected\": {}, "
        "\"status\": {}, \"diagnosis\": {}, \"detail\": {}, \"also_fits\": [{}], \"carried_from\": "
        "[{}],\n"
        "   \"cells\": [{}]}}",
        i ? "," : "", json_string(q.step),
        q.where.kind == CellSelector::Kind::cell ? fmt::format("[{}, {}]", q.where.row, q.where.col)
                                                 : "null",
        q.where.kind == CellSelector::Kind::row ? std::to_string(q.where.row) : "null", q.line,
        json_shaped(q, a.cells, [](const CellVerdict& c) { return c.given.value; }),
        json_shaped(q, a.cells, [](const CellVerdict& c) { return c.expected; }),
        json_string(verdict_name(a.verdict)), json_diagnosis(a.diagnosis),
        a.diagnosis ? json_string(a.diagnosis->detail) : std::string("null"), fmt::join(also, ", "),
        fmt::join(carried_from, ", "), fmt::join(cells, ",\n             "));
  }
  return out + "\n ]}\n";
}

void verify_command(const VerifyOptions& o, CommandContext& context) {
  const Lesson lesson = find_lesson(o.lesson);
  const std::unique_ptr<Backend> backend = make_backend("cpu");
  const Trace truth = run_pipeline(lesson, *backend);
  const std::vector<Answer> answers = load_answers_file(o.answers, truth);
  const VerifyReport report = verify_answers(lesson, *backend, answers);
  write_stdout(o.format == "json" ? render_report_json(lesson, report)
                                  : render_report_text(lesson, truth, report, o.answers));
  context.exit_code = report.wrong ? 1 : 0;
}

}  // namespace

void setup_verify(CLI::App& app, CommandContext& context) {
  auto options = std::make_shared<VerifyOptions>();
  CLI::App* cmd = app.add_subcommand(
      "verify", "Check a hand calculation: which answers are right, carried or wrong, and why");
  cmd->add_option("lesson", options->lesson, "Embedded lesson id or path to a lesson .toml")
      ->required();
  cmd->add_option("--answers", options->answers,
                  "The answers file (TOML, [[answer]] tables; see README)")
      ->required();
  cmd->add_option("--format", options->format, "text or json")
      ->check(CLI::IsMember({"text", "json"}));
  cmd->callback([options, &context] { verify_command(*options, context); });
}

}  // namespace attn
