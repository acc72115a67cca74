// The practice page's engine (engine.hpp): each request rebuilds the session
// from the lesson's text and the answers file so far, does one thing, and
// answers in JSON. Lessons are small, so nothing is kept between calls: the
// page's state is the answers file, which it keeps in localStorage.
#include "web/engine.hpp"

#include <fmt/format.h>

#include <charconv>
#include <cmath>
#include <cstdlib>
#include <optional>
#include <vector>

#include "core/error.hpp"
#include "core/i18n.hpp"
#include "core/lesson.hpp"
#include "core/pipeline.hpp"
#include "core/reference_backend.hpp"
#include "core/toml_read.hpp"
#include "render/formula.hpp"
#include "render/json_writer.hpp"
#include "render/numbers.hpp"
#include "render/render.hpp"
#include "teach/practice.hpp"

namespace attn {

namespace {

constexpr const char* kLessonOrigin = "lesson.toml";
constexpr const char* kAnswersOrigin = "answers.toml";
constexpr int kHintRungs = 3;

// The page's language for the length of one request.
class LanguageScope {
 public:
  explicit LanguageScope(const std::string& name)
      : terminal_(terminal_language()), documents_(document_language()) {
    const Language l = language_named(name).value_or(Language::en);
    set_languages(l, l);
  }
  ~LanguageScope() { set_languages(terminal_, documents_); }
  LanguageScope(const LanguageScope&) = delete;
  LanguageScope& operator=(const LanguageScope&) = delete;

 private:
  Language terminal_, documents_;
};

std::string failure(std::string_view message) {
  return fmt::format(R"({{"ok": false, "error": {}}})", json_string(message));
}

std::optional<std::size_t> index_in(std::string_view text) {
  std::size_t value = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc() || end != text.data() + text.size() || text.empty()) return std::nullopt;
  return value;
}

// "STEP:ROW:COL" -> the cell; InputError for anything else.
PracticeCell cell_named(std::string_view text) {
  const std::size_t b = text.rfind(':');
  const std::size_t a = b == std::string_view::npos || b == 0 ? b : text.rfind(':', b - 1);
  const auto fail = [&] {
    return InputError(tr_format("'{}' names no cell; write STEP:ROW:COL", text));
  };
  if (a == std::string_view::npos || b == std::string_view::npos || a == 0) throw fail();
  const std::optional<std::size_t> row = index_in(text.substr(a + 1, b - a - 1));
  const std::optional<std::size_t> col = index_in(text.substr(b + 1));
  if (!row || !col) throw fail();
  return {std::string(text.substr(0, a)), *row, *col};
}

std::string cell_json(const Trace& truth, const PracticeCell& c) {
  return fmt::format(R"({{"step": {}, "row": {}, "col": {}, "name": {}}})", json_string(c.step),
                     c.row, c.col, json_string(cell_name(truth, c)));
}

std::string record_json(const Trace& truth, const PracticeRecord& r) {
  return fmt::format(
      R"({{"cell": {}, "state": "{}", "typed": {}, "hints": {}, "follow_up": {}, "first": {}}})",
      cell_json(truth, r.cell), cell_state_name(r.state), json_string(r.typed), r.hints,
      r.follow_up, r.first_verdict ? json_string(verdict_name(*r.first_verdict)) : "null");
}

std::string mark_json(const Trace& truth, const CellMark& m) {
  const Feedback f = practice_feedback(truth, m);
  return fmt::format(
      R"({{"cell": {}, "verdict": "{}", "text": {}, "lines": {}, "mistake": {}, "follow_up_added": {}}})",
      cell_json(truth, m.asked), verdict_name(f.verdict),
      json_string(std::string(tr(verdict_name(f.verdict))) + f.rest), json_strings(f.lines),
      m.diagnosis ? json_string(m.diagnosis->label) : "null", m.follow_up_added);
}

std::vector<std::string> summary_texts(const PracticeSession& s, const PracticeSummary& sum) {
  std::vector<std::string> out;
  for (const SummaryLine& line : practice_summary_lines(s, sum)) out.push_back(line.text);
  return out;
}

std::string summary_json(const PracticeSession& s) {
  const PracticeSummary sum = s.summary();
  const VerifyReport& r = sum.report;
  return fmt::format(
      R"({{"asked": {}, "answered": {}, "skipped": {}, "right_first": {}, "hints": {}, "cells_with_hints": {}, "mistakes": {}, "verify": {{"ok": {}, "carried": {}, "rounded": {}, "imprecise": {}, "wrong": {}}}, "lines": {}}})",
      sum.asked, sum.answered, sum.skipped, sum.right_first, sum.hints, sum.cells_with_hints,
      sum.mistakes.size(), r.ok, r.carried, r.rounded, r.imprecise, r.wrong,
      json_strings(summary_texts(s, sum)));
}

// The session as the page draws it, after `action`.
std::string session_json(const PracticeSession& s, const std::optional<CellMark>& mark,
                         const std::optional<Hint>& hint, const std::string& notice) {
  const Trace& truth = s.truth();
  std::vector<std::string> steps, records, marks;
  for (const Step* step : s.steps()) steps.push_back(json_string(step->id));
  for (const PracticeRecord& r : s.records()) records.push_back(record_json(truth, r));
  for (const CellMark& m : s.marks()) marks.push_back(mark_json(truth, m));
  return fmt::format(
      R"({{"ok": true, "lesson": {}, "saved": {}, "finished": {}, "position": {}, "current": {}, "steps": [{}], "records": [{}], "marks": [{}], "mark": {}, "hint": {}, "notice": {}, "summary": {}}})",
      json_string(s.lesson().id), json_string(s.answers_toml()), s.finished(), s.position(),
      s.finished() ? "null" : cell_json(truth, s.current().cell), fmt::join(steps, ", "),
      fmt::join(records, ", "), fmt::join(marks, ", "), mark ? mark_json(truth, *mark) : "null",
      hint ? fmt::format(R"({{"rung": {}, "text": {}}})", hint->rung, json_string(hint->text))
           : "null",
      json_string(notice), summary_json(s));
}

std::string practice_action(PracticeSession& s, const PracticeRequest& q) {
  std::optional<CellMark> mark;
  std::optional<Hint> hint;
  std::string notice;
  if (!q.cell.empty() && q.action != "view") s.go_to(cell_named(q.cell));
  if (q.action == "answer") {
    mark = s.answer(q.typed);
    // As in the terminal: after a wrong answer, the next rung of the ladder.
    if (mark->cell.verdict == Verdict::wrong && s.current().hints < kHintRungs) hint = s.hint();
  } else if (q.action == "hint") {
    hint = s.hint();
  } else if (q.action == "skip") {
    s.skip();
  } else if (q.action == "back") {
    if (!s.back()) notice = tr("This is the first cell.");
  } else if (q.action != "view" && q.action != "go") {
    throw InputError(fmt::format("unknown action '{}'", q.action));
  }
  return session_json(s, mark, hint, notice);
}

}  // namespace

std::string practice_json(const PracticeRequest& q) {
  const LanguageScope scope(q.lang);
  try {
    const Lesson lesson = parse_lesson(q.lesson_toml, kLessonOrigin);
    ReferenceBackend backend;
    PracticeSession s(lesson, backend, {});
    if (!q.saved.empty()) s.restore(q.saved, kAnswersOrigin);
    return practice_action(s, q);
  } catch (const std::exception& e) {
    return failure(e.what());
  }
}

namespace {

// The byte offset in `text` of (line, column), both 1-based, the column
// counted in characters as toml++ counts them.
std::size_t offset_of(std::string_view text, const toml::source_position& at) {
  std::size_t offset = 0;
  for (std::uint32_t line = 1; line < at.line; ++line) {
    offset = text.find('\n', offset);
    if (offset == std::string_view::npos) return text.size();
    ++offset;
  }
  for (std::uint32_t column = 1; column < at.column && offset < text.size(); ++column) {
    ++offset;  // past one character's first byte, then its continuation bytes
    while (offset < text.size() && (static_cast<unsigned char>(text[offset]) & 0xC0) == 0x80)
      ++offset;
  }
  return offset;
}

// The number the lesson's text gives for `cell` of the given step `cell.step`:
// an entry of a matrix (or of a row, for a one-row step) at a key of that name
// in any table of the lesson.
const toml::node* given_number(const toml::table& root, const PracticeCell& cell) {
  for (const auto& [name, node] : root) {
    const toml::table* table = node.as_table();
    if (!table) continue;
    const toml::array* value = table->get_as<toml::array>(cell.step);
    if (!value) continue;
    const toml::node* row = value->get(cell.row);
    if (row && row->is_array()) return row->as_array()->get(cell.col);
    if (cell.row == 0 && !value->empty() && !value->front().is_array()) return value->get(cell.col);
  }
  return nullptr;
}

// The lesson's text with the given number at `edit` ("STEP:ROW:COL=VALUE")
// replaced by VALUE as typed; the rest of the file (comments, story) as it was.
std::string edited_lesson(const std::string& text, std::string_view edit) {
  const std::size_t eq = edit.find('=');
  if (eq == std::string_view::npos)
    throw InputError(tr_format("'{}' is no edit; write STEP:ROW:COL=VALUE", edit));
  const PracticeCell cell = cell_named(edit.substr(0, eq));
  std::string value(edit.substr(eq + 1));
  std::erase_if(value, [](char c) { return c == ' '; });
  // strtod: emscripten's libc++ has no std::from_chars for double, and the
  // program never sets a locale, so the decimal point is '.'.
  char* end = nullptr;
  const double number = value.empty() ? NAN : std::strtod(value.c_str(), &end);
  if (value.empty() || end != value.c_str() + value.size() || !std::isfinite(number) ||
      value.find_first_of("xXpP") != std::string::npos)
    throw InputError(tr_format("'{}' is not a number; type a number such as 0.5 or -1.25", value));
  const TomlReader reader(text, kLessonOrigin);
  const toml::node* node = given_number(reader.root(), cell);
  if (!node || !node->is_number())
    throw InputError(
        tr_format("{}[{}, {}] is not a number the lesson gives", cell.step, cell.row, cell.col));
  const std::size_t begin = offset_of(text, node->source().begin);
  const std::size_t stop = offset_of(text, node->source().end);
  return text.substr(0, begin) + value + text.substr(stop);
}

// Steps of more rows or columns than this come as their shape, their
// statistics and their top-left corner of kExploreCorner rows and columns.
constexpr std::size_t kExploreCells = 32;
constexpr std::size_t kExploreCorner = 8;

// One step as explore draws it: its numbers (a large one: its corner, and
// for a computed one its statistics; `rows` and `cols` label what is sent).
std::string explore_step(const Lesson& lesson, const Trace& trace, const Step& step) {
  const bool small = step.value.n_rows <= kExploreCells && step.value.n_cols <= kExploreCells;
  const std::size_t n =
      small ? step.value.n_rows : std::min<std::size_t>(step.value.n_rows, kExploreCorner);
  const std::size_t m =
      small ? step.value.n_cols : std::min<std::size_t>(step.value.n_cols, kExploreCorner);
  const std::vector<std::string> rows(step.rows.begin(), step.rows.begin() + n);
  const std::vector<std::string> cols(step.cols.begin(), step.cols.begin() + m);
  return fmt::format(
      R"({{"id": {}, "name": {}, "formula": {}, "shape": [{}, {}], "rows": {}, "cols": {}, "data": {}, "whole": {}, "stats": {}}})",
      json_string(step.id), json_string(step_display_name(step)),
      json_string(step_formula(lesson, trace, step, language()).text), step.value.n_rows,
      step.value.n_cols, json_strings(rows), json_strings(cols),
      n && m ? json_matrix(step.value.submat(0, 0, n - 1, m - 1)) : "[]", small,
      // a large given matrix (768×768 identity weights) is the lesson's: its corner says enough
      small || step.made.op == Op::given ? "null"
                                         : json_string(format_stats(matrix_stats(step.value), 4)));
}

}  // namespace

std::string explore_json(const ExploreRequest& q) {
  const LanguageScope scope(q.lang);
  try {
    const std::string text = q.edit.empty() ? q.lesson_toml : edited_lesson(q.lesson_toml, q.edit);
    const TomlReader reader(text, kLessonOrigin);
    const Lesson lesson = parse_lesson(reader);
    ReferenceBackend backend;
    const Trace trace = run_pipeline(lesson, backend);
    // The given steps written number by number, which the page lets the learner edit.
    std::vector<std::string> editable, steps;
    for (const Step& step : trace.steps) {
      steps.push_back(explore_step(lesson, trace, step));
      if (step.made.op != Op::given || step.value.empty()) continue;
      const toml::node* first = given_number(reader.root(), {step.id, 0, 0});
      if (first && first->is_number()) editable.push_back(step.id);
    }
    return fmt::format(R"({{"ok": true, "toml": {}, "editable": {}, "steps": [{}]}})",
                       json_string(text), json_strings(editable), fmt::join(steps, ",\n"));
  } catch (const std::exception& e) {
    return failure(e.what());
  }
}

}  // namespace attn
