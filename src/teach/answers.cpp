// Reading a learner's answers file, every answer checked against the steps of
// the lesson's trace so that a typo is an error that says how to fix it.
#include "teach/answers.hpp"

#include <fmt/format.h>

#include <cmath>

#include "core/atomic_file.hpp"
#include "core/error.hpp"
#include "core/toml_read.hpp"

namespace attn {

namespace {

class AnswersParser {
 public:
  AnswersParser(std::string_view text, const std::string& origin, const Trace& trace)
      : toml_(text, origin), trace_(trace) {}

  std::vector<Answer> parse() {
    const toml::table& root = toml_.root();
    toml_.require_known_keys(root, "", {"answer"});
    const toml::node* node = root.get("answer");
    if (!node)
      throw InputError(fmt::format(
          "{}: no answers; write one [[answer]] table per answer with step = \"...\" and "
          "value = ... (or values = [...])",
          toml_.origin()));
    const toml::array* items = node->as_array();
    if (!items || !items->is_array_of_tables())
      toml_.fail(node, "answer", "write each answer as an [[answer]] table");
    std::vector<Answer> out;
    for (const toml::node& item : *items) out.push_back(read_answer(item, out.size()));
    return out;
  }

 private:
  // A number, or -inf / inf / nan (a masked cell is -inf), as TOML or as a string.
  WrittenNumber number(const toml::node& node, const std::string& key) const {
    if (node.is_floating_point() && !std::isfinite(node.as_floating_point()->get()))
      return {node.as_floating_point()->get(), 0};
    if (node.is_string()) {
      const std::string& s = node.as_string()->get();
      if (s == "-inf") return {-arma::datum::inf, 0};
      if (s == "inf") return {arma::datum::inf, 0};
      if (s == "nan") return {arma::datum::nan, 0};
    }
    return toml_.number(node, key);
  }

  std::vector<WrittenNumber> row(const toml::node& node, const std::string& key) const {
    if (!node.is_array())
      toml_.fail(&node, key, "expected an array of numbers, e.g. values = [0.69, 0.50]");
    std::vector<WrittenNumber> out;
    for (const toml::node& item : *node.as_array())
      out.push_back(number(item, fmt::format("{}[{}]", key, out.size())));
    return out;
  }

  std::vector<std::vector<WrittenNumber>> matrix(const toml::node& node,
                                                 const std::string& key) const {
    if (!node.is_array() || node.as_array()->empty() || !node.as_array()->get(0)->is_array())
      toml_.fail(&node, key, "expected a matrix: an array of rows, e.g. values = [[1, 0], [0, 1]]");
    std::vector<std::vector<WrittenNumber>> out;
    for (const toml::node& item : *node.as_array())
      out.push_back(row(item, fmt::format("{}[{}]", key, out.size())));
    return out;
  }

  Answer read_answer(const toml::node& item, std::size_t index) const {
    const toml::table& t = *item.as_table();
    const std::string where = fmt::format("answer[{}]", index);
    toml_.require_known_keys(t, where, {"step", "cell", "row", "value", "values", "tolerance"});
    Answer a;
    a.line = toml_.line_of(&item);
    a.index = index;
    const toml::node* step = t.get("step");
    if (!step)
      toml_.fail(&item, where + ".step", "missing; name the step id, e.g. \"head0.scores\"");
    a.step = toml_.string(*step, where + ".step");
    const Step* s = trace_.find(a.step);
    if (!s)
      toml_.fail(step, where + ".step",
                 fmt::format("unknown step id '{}' for lesson {}; valid ids: {}", a.step,
                             trace_.lesson_id, fmt::join(trace_.ids(), ", ")));
    const std::size_t rows = s->value.n_rows, cols = s->value.n_cols;
    const std::string shape = fmt::format("{} is {} (rows 0 to {}, columns 0 to {})", a.step,
                                          shape_str(rows, cols), rows - 1, cols - 1);
    if (const toml::node* n = t.get("tolerance")) {
      a.tolerance = toml_.number(*n, where + ".tolerance").value;
      if (*a.tolerance < 0) toml_.fail(n, where + ".tolerance", "must not be negative");
    }
    const toml::node* cell = t.get("cell");
    const toml::node* row_node = t.get("row");
    const toml::node* value = t.get("value");
    const toml::node* values = t.get("values");
    if (cell && row_node)
      toml_.fail(row_node, where + ".row", "give either cell = [r, c] or row = r, not both");
    if (cell) {
      std::tie(a.where.row, a.where.col) = toml_.cell(*cell, where + ".cell");
      a.where.kind = CellSelector::Kind::cell;
      if (a.where.row >= rows || a.where.col >= cols)
        toml_.fail(
            cell, where + ".cell",
            fmt::format("cell [{}, {}] is outside the step: {}", a.where.row, a.where.col, shape));
      if (!value)
        toml_.fail(&item, where + ".value",
                   values ? "a cell answer takes value = <number>, not values"
                          : "a cell answer needs value = <number>");
      a.values = {{number(*value, where + ".value")}};
    } else if (row_node) {
      const long long r = toml_.integer(*row_node, where + ".row");
      if (r < 0 || static_cast<std::size_t>(r) >= rows)
        toml_.fail(row_node, where + ".row",
                   fmt::format("row {} is outside the step: {}", r, shape));
      a.where = {CellSelector::Kind::row, static_cast<std::size_t>(r), 0};
      if (!values) toml_.fail(&item, where + ".values", "a row answer needs values = [...]");
      a.values = {row(*values, where + ".values")};
      if (a.values[0].size() != cols)
        toml_.fail(values, where + ".values",
                   fmt::format("a row of {} has {} numbers, but {} were given", a.step, cols,
                               a.values[0].size()));
    } else {
      a.where.kind = CellSelector::Kind::matrix;
      if (!values)
        toml_.fail(&item, where + ".values",
                   value ? "a single value needs cell = [r, c] (or give row = r or the whole "
                           "matrix with values = [[...]])"
                         : "a whole-matrix answer needs values = [[...]]");
      a.values = matrix(*values, where + ".values");
      for (const auto& r : a.values)
        if (r.size() != cols || a.values.size() != rows)
          toml_.fail(values, where + ".values",
                     fmt::format("{} is {}, but the values given are {} rows of {} (a ragged or "
                                 "mis-sized matrix); give every row and column",
                                 a.step, shape_str(rows, cols), a.values.size(), r.size()));
    }
    return a;
  }

  TomlReader toml_;
  const Trace& trace_;
};

}  // namespace

std::vector<Answer> parse_answers(std::string_view toml_text, const std::string& origin,
                                  const Trace& trace) {
  return AnswersParser(toml_text, origin, trace).parse();
}

std::vector<Answer> load_answers_file(const std::string& path, const Trace& trace) {
  return parse_answers(read_file(path), path, trace);
}

}  // namespace attn
