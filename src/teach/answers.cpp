// Reading a learner's answers file, every answer checked against the steps of
// the lesson's trace so that a typo is an error that says how to fix it.
#include "teach/answers.hpp"

#include <fmt/format.h>

#include <cmath>
#include <map>
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
      : toml_(text, origin), trace_(trace) {}

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
    const toml::array* items = node->as_array();
    if (!items || !items->is_array_of_tables())
      toml_.fail(node, "answer", tr("write each answer as an [[answer]] table"));
    std::vector<Answer>& out = file.answers;
    // cell -> (line, value): a cell given twice must be given the same
    std::map<std::tuple<std::string, std::size_t, std::size_t>, std::pair<int, double>> given_at;
    for (const toml::node& item : *items) {
      out.push_back(read_answer(item, out.size()));
      const Answer& a = out.back();
      for (std::size_t r = 0; r < a.values.size(); ++r)
        for (std::size_t c = 0; c < a.values[r].size(); ++c) {
          const auto cell = std::make_tuple(a.step, a.step_row(r), a.step_col(c));
          if (a.values[r][c].blank) continue;
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
  Answer read_answer(const toml::node& item, std::size_t index) const {
    const toml::table& t = *item.as_table();
    const std::string where = fmt::format("answer[{}]", index);
    toml_.require_known_keys(t, where, {"step", "cell", "row", "value", "values", "tolerance"});
    Answer a;
    static_cast<StepValues&>(a) = toml_.step_values(item, where, /*blanks=*/true);
    a.step = trace_.id_of(a.step);  // "weights" -> "head0.weights"
    a.index = index;
    require_fits(a, trace_, toml_.origin(), "answer");
    return a;
  }

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
