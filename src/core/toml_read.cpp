// TomlReader: typed access to a user's TOML file with actionable errors.
#include "core/toml_read.hpp"
#include "core/i18n.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>

#include "core/error.hpp"
#include "core/number_text.hpp"
#include "core/toml_prescan.hpp"

namespace attn {

namespace {

std::string lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

std::size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<std::size_t> prev(b.size() + 1), cur(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) prev[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    cur[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t subst = prev[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1);
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, subst});
    }
    std::swap(prev, cur);
  }
  return prev[b.size()];
}

}  // namespace

std::string_view nearest_name(std::string_view name, const std::vector<std::string_view>& names) {
  std::string_view best;
  std::size_t best_distance = 3;  // at most two edits
  for (std::string_view candidate : names) {
    const std::size_t d = edit_distance(lower(name), lower(candidate));
    if (d < best_distance) best = candidate, best_distance = d;
  }
  return best;
}

namespace {

// What a TOML value is, in language(): "a table", "an integer", …
std::string_view type_name(const toml::node& node) {
  switch (node.type()) {
    case toml::node_type::table:
      return tr("a table");
    case toml::node_type::array:
      return tr("an array");
    case toml::node_type::string:
      return tr("a string");
    case toml::node_type::integer:
      return tr("an integer");
    case toml::node_type::floating_point:
      return tr("a float");
    case toml::node_type::boolean:
      return tr("a boolean");
    default:
      return tr("a date or time");
  }
}

}  // namespace

int decimals_written(std::string_view literal) {
  // Characters after the first '.' of the mantissa; '_' separates digits.
  // Digits from the first non-zero one on are significant.
  long long decimals = 0, significant = 0;
  bool after_dot = false;
  std::size_t i = 0;
  for (; i < literal.size() && literal[i] != 'e' && literal[i] != 'E'; ++i) {
    const char c = literal[i];
    if (c == '_') continue;
    if (c >= '0' && c <= '9' && (significant > 0 || c != '0')) ++significant;
    if (after_dot)
      ++decimals;
    else if (c == '.')
      after_dot = true;
  }
  // A double holds 17 significant digits: more written carry no more meaning
  // (and a zero written with many decimals is as precise as 17 of them).
  constexpr long long kMeaningfulDigits = 17;
  if (significant > kMeaningfulDigits) decimals -= significant - kMeaningfulDigits;
  if (significant == 0) decimals = std::min(decimals, kMeaningfulDigits);
  // The exponent, as atoi reads it (sign, then digits), saturated at 2^40 (more
  // than any literal has characters) so that no number of digits overflows.
  constexpr long long kExponentCap = 1LL << 40;
  long long exponent = 0;
  bool negative = false, signed_yet = false;
  for (++i; i < literal.size(); ++i) {
    const char c = literal[i];
    if (c == '_') continue;
    if (!signed_yet && (c == '+' || c == '-')) {
      negative = c == '-', signed_yet = true;
      continue;
    }
    signed_yet = true;
    if (c < '0' || c > '9') break;
    exponent = std::min(exponent * 10 + (c - '0'), kExponentCap);
  }
  decimals += negative ? exponent : -exponent;
  return static_cast<int>(std::clamp(decimals, 0LL, static_cast<long long>(kMaxWrittenDecimals)));
}

double half_unit(int decimals) {
  return 0.5 * std::pow(10.0, -decimals);
}

double written_tolerance(int decimals) {
  return half_unit(decimals) + half_unit(decimals + 2);
}

arma::mat to_matrix(const std::vector<std::vector<WrittenNumber>>& numbers) {
  arma::mat m(numbers.size(), numbers.empty() ? 0 : numbers[0].size());
  for (std::size_t r = 0; r < m.n_rows; ++r)
    for (std::size_t c = 0; c < m.n_cols; ++c) m(r, c) = numbers[r][c].value;
  return m;
}

TomlReader::TomlReader(std::string_view text, std::string origin)
    : text_(text), origin_(std::move(origin)) {
  line_starts_.push_back(0);
  bool ascii = true;
  for (std::size_t i = 0; i < text_.size(); ++i) {
    if (text_[i] == '\n') {
      line_starts_.push_back(i + 1);
      ascii_line_.push_back(ascii);
      ascii = true;
    } else if (static_cast<unsigned char>(text_[i]) >= 0x80) {
      ascii = false;
    }
  }
  ascii_line_.push_back(ascii);
  // Depth bounded before toml++, which recurses once per level.
  prescan_toml(text_, origin_);
  try {
    root_ = toml::parse(text_, origin_);
  } catch (const toml::parse_error& e) {
    throw InputError(tr_format("{}:{}:{}: TOML syntax error: {}. Fix the file at that line.",
                               origin_, e.source().begin.line, e.source().begin.column,
                               e.description()));
  }
}

int TomlReader::line_of(const toml::node* node) const {
  return node ? static_cast<int>(node->source().begin.line) : 0;
}

void TomlReader::fail(const toml::node* node, std::string_view key,
                      std::string_view message) const {
  const int line = line_of(node);
  if (line > 0) throw InputError(tr_format("{}:{}: key '{}': {}", origin_, line, key, message));
  throw InputError(tr_format("{}: key '{}': {}", origin_, key, message));
}

void TomlReader::require_known_keys(const toml::table& table, std::string_view where,
                                    std::initializer_list<std::string_view> allowed) const {
  for (auto&& [key, node] : table) {
    const std::string_view name = key.str();
    if (std::find(allowed.begin(), allowed.end(), name) != allowed.end()) continue;
    const std::string_view best = nearest_name(name, std::vector<std::string_view>(allowed));
    std::string known;
    for (std::string_view candidate : allowed)
      known += (known.empty() ? "" : ", ") + std::string(candidate);
    const std::string hint = best.empty() ? "" : tr_format("; did you mean '{}'?", best);
    fail(&node, fmt::format("{}{}", where.empty() ? "" : std::string(where) + ".", name),
         tr_format("unknown key{} (known keys{}: {})", hint,
                   where.empty() ? "" : tr_format(" in [{}]", where), known));
  }
}

const toml::table* TomlReader::table(const toml::table& parent, std::string_view key) const {
  const toml::node* node = parent.get(key);
  if (!node) return nullptr;
  if (!node->is_table())
    fail(node, key, tr_format("expected a table [{}], found {}", key, type_name(*node)));
  return node->as_table();
}

std::string TomlReader::string(const toml::node& node, std::string_view key) const {
  if (!node.is_string())
    fail(&node, key, tr_format("expected a string, found {}", type_name(node)));
  return node.as_string()->get();
}

bool TomlReader::boolean(const toml::node& node, std::string_view key) const {
  if (!node.is_boolean())
    fail(&node, key, tr_format("expected true or false, found {}", type_name(node)));
  return node.as_boolean()->get();
}

long long TomlReader::integer(const toml::node& node, std::string_view key) const {
  if (!node.is_integer())
    fail(&node, key, tr_format("expected an integer, found {}", type_name(node)));
  return node.as_integer()->get();
}

std::size_t TomlReader::byte_of(std::size_t line, std::size_t column) const {
  const std::size_t start = line_starts_[line - 1];
  if (ascii_line_[line - 1]) return std::min(start + column - 1, text_.size());
  // Walk the line's UTF-8 (from the cursor when it is on this line, not past
  // `column`), one code point per column.
  Cursor at = cursor_.line == line && cursor_.column <= column ? cursor_ : Cursor{line, 1, start};
  for (; at.column < column && at.byte < text_.size(); ++at.column) {
    ++at.byte;
    while (at.byte < text_.size() && (static_cast<unsigned char>(text_[at.byte]) & 0xC0) == 0x80)
      ++at.byte;
  }
  at.column = column;
  cursor_ = at;
  return at.byte;
}

std::string_view TomlReader::literal_text(const toml::node& node) const {
  const auto& begin = node.source().begin;
  if (begin.line == 0 || begin.line > line_starts_.size()) return {};
  const std::size_t pos = byte_of(begin.line, begin.column);
  auto in_literal = [](char c) {
    return (c >= '0' && c <= '9') ||
           std::string_view("+-._eEinfa").find(c) != std::string_view::npos;
  };
  std::size_t end = pos;
  while (end < text_.size() && in_literal(text_[end])) ++end;
  return std::string_view(text_).substr(pos, end - pos);
}

WrittenNumber TomlReader::number(const toml::node& node, std::string_view key) const {
  std::string error;
  const WrittenNumber out = read_number(node, {.stated = false}, error);
  if (!error.empty()) fail(&node, key, error);
  return out;
}

WrittenNumber TomlReader::stated_number(const toml::node& node, std::string_view key) const {
  std::string error;
  const WrittenNumber out = read_number(node, {.stated = true}, error);
  if (!error.empty()) fail(&node, key, error);
  return out;
}

WrittenNumber TomlReader::read_number(const toml::node& node, NumberRules rules,
                                      std::string& error) const {
  if (rules.blank && node.is_string() &&
      node.as_string()->get().find_first_not_of(' ') == std::string::npos)
    return {arma::datum::nan, 0, true};
  if (rules.stated) {
    if (node.is_floating_point() && !std::isfinite(node.as_floating_point()->get()))
      return {node.as_floating_point()->get(), 0};
    if (node.is_string()) {
      const std::string& s = node.as_string()->get();
      if (s == "-inf") return {-arma::datum::inf, 0};
      if (s == "inf") return {arma::datum::inf, 0};
      if (s == "nan") return {arma::datum::nan, 0};
    }
  }
  WrittenNumber out;
  if (node.is_integer()) {
    out.value = static_cast<double>(node.as_integer()->get());
    out.decimals = 0;
    return out;
  }
  if (node.is_floating_point()) {
    out.value = node.as_floating_point()->get();
    if (rules.decimals) out.decimals = decimals_written(literal_text(node));
  } else if (node.is_string()) {
    const std::string& s = node.as_string()->get();
    const char* begin = s.c_str();
    char* end = nullptr;
    out.value = std::strtod(begin, &end);
    while (end && *end == ' ') ++end;
    if (end == begin || *end != '\0') {
      error = tr_format(
          "\"{}\" is not a number; write a number such as 1.70 or \"1.70\"{}", s,
          s.find(',') != std::string::npos ? tr(" (with a decimal point, not a comma)") : "");
      return out;
    }
    if (rules.decimals) {
      std::string_view trimmed(s);
      while (!trimmed.empty() && trimmed.front() == ' ') trimmed.remove_prefix(1);
      while (!trimmed.empty() && trimmed.back() == ' ') trimmed.remove_suffix(1);
      out.decimals = decimals_written(trimmed);
    }
  } else {
    error = tr_format("expected a number, found {}", type_name(node));
    return out;
  }
  if (!std::isfinite(out.value))
    error = tr_format("{} is not allowed here; every input must be a finite number",
                      std::isnan(out.value) ? "NaN" : tr("infinity"));
  return out;
}

std::vector<WrittenNumber> TomlReader::number_row(const toml::node& node, std::string_view key,
                                                  bool stated) const {
  return read_row(node, key, {.stated = stated});
}

std::vector<std::vector<WrittenNumber>> TomlReader::number_matrix(const toml::node& node,
                                                                  std::string_view key,
                                                                  bool stated) const {
  return read_matrix(node, key, {.stated = stated});
}

std::vector<WrittenNumber> TomlReader::read_row(const toml::node& node, std::string_view key,
                                                NumberRules rules) const {
  if (!node.is_array())
    fail(&node, key, tr_format("expected an array of numbers, found {}", type_name(node)));
  const toml::array& array = *node.as_array();
  std::vector<WrittenNumber> out;
  out.reserve(array.size());
  std::string error;
  for (const toml::node& item : array) {
    out.push_back(read_number(item, rules, error));
    if (!error.empty()) fail(&item, fmt::format("{}[{}]", key, out.size() - 1), error);
  }
  if (out.empty()) fail(&node, key, tr("the array is empty; give at least one number"));
  return out;
}

std::vector<std::vector<WrittenNumber>> TomlReader::read_matrix(const toml::node& node,
                                                                std::string_view key,
                                                                NumberRules rules) const {
  if (!node.is_array() || node.as_array()->empty() || !node.as_array()->get(0)->is_array())
    fail(&node, key,
         "expected a matrix: an array of rows, e.g. [[1, 0], [0, 1]]" +
             std::string(node.is_string() ? " (or the string \"identity\" for weights)" : ""));
  std::vector<std::vector<WrittenNumber>> rows;
  rows.reserve(node.as_array()->size());
  std::size_t r = 0;
  for (const toml::node& item : *node.as_array()) {
    if (!item.is_array())
      fail(&item, key, tr_format("row {} is {}, not an array of numbers", r, type_name(item)));
    rows.push_back(read_row(item, fmt::format("{}[{}]", key, r), rules));
    if (rows.back().size() != rows.front().size())
      fail(&item, key,
           tr_format("ragged matrix: row {} has {} numbers but row 0 has {}; every row must "
                     "have the same length",
                     r, rows.back().size(), rows.front().size()));
    ++r;
  }
  return rows;
}

arma::mat TomlReader::matrix(const toml::node& node, std::string_view key) const {
  return to_matrix(read_matrix(node, key, {.decimals = false}));
}

arma::rowvec TomlReader::row(const toml::node& node, std::string_view key) const {
  const std::vector<WrittenNumber> numbers = read_row(node, key, {.decimals = false});
  arma::rowvec v(numbers.size());
  for (std::size_t i = 0; i < numbers.size(); ++i) v(i) = numbers[i].value;
  return v;
}

std::vector<std::string> TomlReader::strings(const toml::node& node, std::string_view key) const {
  if (!node.is_array())
    fail(&node, key, tr_format("expected an array of strings, found {}", type_name(node)));
  std::vector<std::string> out;
  for (const toml::node& item : *node.as_array()) out.push_back(string(item, key));
  return out;
}

std::pair<std::size_t, std::size_t> TomlReader::cell(const toml::node& node,
                                                     std::string_view key) const {
  const toml::array* arr = node.as_array();
  if (!arr || arr->size() != 2 || !arr->get(0)->is_integer() || !arr->get(1)->is_integer())
    fail(&node, key, tr("expected [row, col], two integers counted from 0"));
  const long long r = arr->get(0)->as_integer()->get();
  const long long c = arr->get(1)->as_integer()->get();
  if (r < 0 || c < 0)
    fail(&node, key, tr("row and column are counted from 0 and cannot be negative"));
  return {static_cast<std::size_t>(r), static_cast<std::size_t>(c)};
}

StepValues TomlReader::step_values(const toml::node& item, const std::string& where,
                                   bool blanks) const {
  const NumberRules rules{.stated = true, .blank = blanks};
  const toml::table& t = *item.as_table();
  StepValues out;
  out.key = where;
  out.line = line_of(&item);
  const toml::node* step = t.get("step");
  if (!step) fail(&item, where + ".step", tr("missing; name the step id, e.g. \"head0.scores\""));
  out.step = string(*step, where + ".step");
  out.step_line = line_of(step);
  if (const toml::node* n = t.get("tolerance")) {
    out.tolerance = number(*n, where + ".tolerance").value;
    if (*out.tolerance < 0) fail(n, where + ".tolerance", tr("must not be negative"));
  }
  const toml::node* cell = t.get("cell");
  const toml::node* row = t.get("row");
  const toml::node* value = t.get("value");
  const toml::node* values = t.get("values");
  if (cell && row) fail(row, where + ".row", tr("give either cell = [r, c] or row = r, not both"));
  out.values_line = line_of(value ? value : values);
  if (cell) {
    std::tie(out.where.row, out.where.col) = this->cell(*cell, where + ".cell");
    out.where.kind = CellSelector::Kind::cell;
    out.where_line = line_of(cell);
    if (!value)
      fail(&item, where + ".value",
           values ? "a single cell takes value = <number>, not values"
                  : "a single cell needs value = <number>");
    std::string error;
    out.values = {{read_number(*value, rules, error)}};
    if (!error.empty()) fail(value, where + ".value", error);
  } else if (row) {
    const long long r = integer(*row, where + ".row");
    if (r < 0) fail(row, where + ".row", tr("rows are counted from 0"));
    out.where = {CellSelector::Kind::row, static_cast<std::size_t>(r), 0};
    out.where_line = line_of(row);
    if (!values) fail(&item, where + ".values", tr("a row needs values = [...]"));
    out.values = {read_row(*values, where + ".values", rules)};
  } else {
    if (!values)
      fail(&item, where + ".values",
           value ? "a single value needs cell = [r, c] (or give row = r, or the whole matrix "
                   "with values = [[...]])"
                 : "a whole matrix needs values = [[...]]");
    out.values = read_matrix(*values, where + ".values", rules);
  }
  return out;
}

void require_fits(const StepValues& said, const Trace& trace, const std::string& origin,
                  std::string_view noun) {
  auto fail_at = [&](int line, std::string_view key, const std::string& message) {
    throw InputError(tr_format("{}:{}: key '{}.{}': {} on {}: {}", origin, line, said.key, key,
                               noun, said.step, message));
  };
  const Step* step = trace.find(said.step);
  if (!step)
    fail_at(said.step_line, "step",
            tr_format("unknown step id '{}' for lesson {}; valid ids: {}", said.step,
                      trace.lesson_id, fmt::join(trace.ids(), ", ")));
  const std::size_t rows = step->value.n_rows, cols = step->value.n_cols;
  const std::string shape = tr_format("{} is {} (rows 0 to {}, columns 0 to {})", said.step,
                                      shape_str(rows, cols), rows - 1, cols - 1);
  switch (said.where.kind) {
    case CellSelector::Kind::cell:
      if (said.where.row >= rows || said.where.col >= cols)
        fail_at(said.where_line, "cell",
                tr_format("cell [{}, {}] is outside the step: {}", said.where.row, said.where.col,
                          shape));
      break;
    case CellSelector::Kind::row:
      if (said.where.row >= rows)
        fail_at(said.where_line, "row",
                tr_format("row {} is outside the step: {}", said.where.row, shape));
      if (said.values[0].size() != cols)
        fail_at(said.values_line, "values",
                tr_format("a row of {} has {} numbers, but {} were given", said.step, cols,
                          said.values[0].size()));
      break;
    case CellSelector::Kind::matrix:
      if (said.values.size() != rows || said.values[0].size() != cols)
        fail_at(
            said.values_line, "values",
            tr_format("{} is {}, but the values given are {} rows of {}; give every row "
                      "and column",
                      said.step, shape_str(rows, cols), said.values.size(), said.values[0].size()));
      break;
  }
}

}  // namespace attn
