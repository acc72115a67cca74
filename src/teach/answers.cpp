// Reading a learner's answers file, every answer checked against the steps of
// the lesson's trace so that a typo is an error that says how to fix it.
#include "teach/answers.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <tuple>
#include <utility>

#include "core/error.hpp"
#include "core/i18n.hpp"
#include "core/number_text.hpp"
#include "core/read_input.hpp"
#include "core/toml_read.hpp"

namespace attn {

namespace {

class AnswersParser {
 public:
  AnswersParser(std::string_view text, const std::string& origin, const Trace& trace)
      : toml_(quote_decimal_comma_values(text, raw_lines_), origin), trace_(trace) {}

  AnswersFile parse() {
    const toml::table& root = toml_.root();
    toml_.require_known_keys(root, "", {"answer", "student", "variant"});
    AnswersFile file;
    if (const toml::node* n = root.get("student")) file.student = toml_.string(*n, "student");
    if (const toml::node* n = root.get("variant")) file.variant = toml_.string(*n, "variant");
    const toml::node* node = root.get("answer");
    if (!node)
      throw InputError(fmt::format(
          fmt::runtime(
              tr("{}: no answers; write one [[answer]] table per answer with step = \"...\" and "
                 "value = ... (or values = [...])")),
          toml_.origin()));
    toml::array* items = toml_.root_to_mend().get("answer")->as_array();
    if (!items || !items->is_array_of_tables())
      toml_.fail(node, "answer", tr("write each answer as an [[answer]] table"));
    std::vector<Answer>& out = file.answers;
    // cell -> (line, value): a cell given twice must be given the same
    std::map<std::tuple<std::string, std::size_t, std::size_t>, std::pair<int, double>> given_at;
    for (toml::node& item : *items) {
      out.push_back(read_answer(item, out.size()));
      const Answer& a = out.back();
      for (std::size_t r = 0; r < a.values.size(); ++r)
        for (std::size_t c = 0; c < a.values[r].size(); ++c) {
          const auto cell = std::make_tuple(a.step, a.step_row(r), a.step_col(c));
          if (a.values[r][c].blank || a.values[r][c].unreadable) continue;
          const double v = a.values[r][c].value;
          const auto [it, fresh] = given_at.emplace(cell, std::make_pair(a.line, v));
          if (!fresh &&
              !(it->second.second == v || (std::isnan(v) && std::isnan(it->second.second))))
            throw InputError(tr_format(
                "{}:{}: key '{}': {}[{}, {}] is answered {} here but {} at line {}; give each "
                "cell one value",
                toml_.origin(), a.line, a.key, a.step, a.step_row(r), a.step_col(c),
                short_number(v), short_number(it->second.second), it->second.first));
        }
    }
    return file;
  }

 private:
  Answer read_answer(toml::node& item, std::size_t index) const {
    const std::string where = fmt::format("answer[{}]", index);
    toml_.require_known_keys(*item.as_table(), where,
                             {"step", "cell", "row", "value", "values", "tolerance"});
    Answer a;
    // The numbers as people type them: strings read by read_typed_number,
    // a value with unquoted decimal commas from its raw text.
    toml::table& t = *item.as_table();
    const char* key = t.get("value") ? "value" : "values";
    toml::node* value = t.get(key);
    std::optional<RawRows> raw;
    if (value && value->is_string() &&
        std::find(raw_lines_.begin(), raw_lines_.end(), toml_.line_of(value)) != raw_lines_.end()) {
      raw = split_raw_rows(value->as_string()->get());
      const int line = toml_.line_of(value);
      if (raw->nested) {
        toml::array rows;  // (toml::array{toml::array{}} would copy the inner array)
        rows.push_back(toml::array{""});
        t.insert_or_assign(key, std::move(rows));
      } else if (std::string_view(key) == "values")
        t.insert_or_assign(key, toml::array{""});
      else
        t.insert_or_assign(key, "");
      a.values_line = line;
    } else if (value) {
      type_strings(*value, 0, 0, a.readings);
    }
    const int values_line = a.values_line;
    static_cast<StepValues&>(a) = toml_.step_values(t, where, /*blanks=*/true);
    if (raw) a.values_line = values_line;
    a.step = trace_.id_of(a.step);  // "weights" -> "head0.weights"
    a.index = index;
    if (raw) read_raw_values(*raw, a);
    for (const CellReading& r : a.readings)
      if (r.unreadable && r.r < a.values.size() && r.c < a.values[r.r].size()) {
        a.values[r.r][r.c].blank = false;
        a.values[r.r][r.c].unreadable = true;
      }
    require_fits(a, trace_, toml_.origin(), "answer");
    return a;
  }

  // Each string of a value read as typed: the string replaced by its ASCII
  // number ("" when it is none), its reading kept when it is not plain.
  static void type_strings(toml::node& node, std::size_t r, std::size_t c,
                           std::vector<CellReading>& readings) {
    if (toml::array* items = node.as_array()) {
      const bool matrix = !items->empty() && items->get(0)->is_array();
      for (std::size_t i = 0; i < items->size(); ++i)
        type_strings(*items->get(i), matrix ? i : r, matrix ? 0 : i, readings);
      return;
    }
    toml::value<std::string>* text = node.as_string();
    if (!text) return;
    const TypedNumber typed = read_typed_number(text->get());
    if (typed.kind == TypedNumber::Kind::blank) return;
    if (typed.kind == TypedNumber::Kind::normalised || typed.kind == TypedNumber::Kind::unreadable)
      readings.push_back({r, c, typed.kind == TypedNumber::Kind::unreadable, typed.note,
                          typed.kind == TypedNumber::Kind::unreadable ? text->get() : ""});
    *text = typed.kind == TypedNumber::Kind::unreadable ? std::string() : typed.text;
  }

  // The values of an answer written with unquoted decimal commas, each row read
  // for the step's columns (a cell: one).
  void read_raw_values(const RawRows& raw, Answer& a) const {
    const Step* step = trace_.find(a.step);
    if (!step) return;  // require_fits names the step
    const std::size_t cols = a.where.kind == CellSelector::Kind::cell ? 1 : step->value.n_cols;
    a.values.clear();
    for (std::size_t r = 0; r < raw.rows.size(); ++r)
      a.values.push_back(read_raw_row(raw.rows[r], raw.row_text[r], cols, r, a.readings));
  }

  std::vector<int> raw_lines_;  // before toml_: the lines of values read from their raw text
  TomlReader toml_;
  const Trace& trace_;
};

}  // namespace

AnswersFile parse_answers_file(std::string_view toml_text, const std::string& origin,
                               const Trace& trace) {
  return AnswersParser(toml_text, origin, trace).parse();
}

std::vector<Answer> parse_answers(std::string_view toml_text, const std::string& origin,
                                  const Trace& trace) {
  return parse_answers_file(toml_text, origin, trace).answers;
}

std::vector<Answer> load_answers_file(const std::string& path, const Lesson& lesson,
                                      const Trace& trace) {
  AnswersFile file = parse_answers_file(read_input(path), input_name(path), trace);
  if (!file.variant.empty() && !lesson.variant.empty() && file.variant != lesson.variant)
    throw InputError(tr_format(
        "{}: these are the answers of {} (variant {}), but {} is the exercise of {} (variant "
        "{}); mark each student's answers against their own lesson.toml",
        path, file.student.empty() ? "another student" : file.student, file.variant, lesson.origin,
        lesson.student.empty() ? "another student" : lesson.student, lesson.variant));
  return std::move(file.answers);
}

}  // namespace attn
