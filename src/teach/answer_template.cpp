// answers.toml: the grids of the sheet as TOML a student can fill in.
#include "teach/answer_template.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "core/error.hpp"
#include "core/i18n.hpp"
#include "core/toml_read.hpp"
#include "render/json_writer.hpp"
#include "render/numbers.hpp"

namespace attn {

namespace {

// values = [ ... ] with every cell "", one row per line, each row's token in a
// comment and the columns' labels above them.
std::string blank_grid(const SheetMatrix& m) {
  std::size_t width = 3;  // a blank cell and its comma, "",
  for (const std::string& col : m.cols) width = std::max(width, col.size());
  std::string header, row;
  for (std::size_t c = 0; c < m.cols.size(); ++c) {
    const bool last = c + 1 == m.cols.size();
    header += last ? m.cols[c] : fmt::format("{:<{}}", m.cols[c], width + 1);
    row += last ? "\"\"" : fmt::format("{:<{}}", "\"\",", width + 1);
  }
  std::string out = fmt::format("values = [\n  #{}\n", header);
  for (const std::string& token : m.rows) out += fmt::format("  [{}],  # {}\n", row, token);
  return out + "]\n";
}

// Whether a value of an [[answer]] is blank: "" (or spaces), or arrays of them.
bool blank_value(const toml::node& node) {
  if (const toml::value<std::string>* text = node.as_string())
    return text->get().find_first_not_of(" \t") == std::string::npos;
  if (const toml::array* items = node.as_array())
    return std::all_of(items->begin(), items->end(),
                       [](const toml::node& item) { return blank_value(item); });
  return false;
}

// Whether every value of every [[answer]] of an answers file is blank.
bool blank_answers(const toml::table& root) {
  const toml::node* answers = root.get("answer");
  if (!answers) return true;
  const toml::array* items = answers->as_array();
  if (!items) return false;
  for (const toml::node& item : *items) {
    const toml::table* answer = item.as_table();
    if (!answer) return false;
    for (const char* key : {"value", "values"})
      if (const toml::node* value = answer->get(key); value && !blank_value(*value)) return false;
  }
  return true;
}

// The top-level `variant` of an answers file, "" when it has none.
std::string variant_of(const toml::table& root) {
  const toml::node* node = root.get("variant");
  return node && node->is_string() ? node->as_string()->get() : std::string();
}

}  // namespace

bool blank_answers_text(std::string_view text) {
  try {
    const TomlReader file(text, "answers.toml");
    // Only the template's keys: anything else is for the answers' reader to name.
    for (const auto& [key, node] : file.root())
      if (key.str() != "student" && key.str() != "variant" && key.str() != "answer") return false;
    return blank_answers(file.root());
  } catch (const InputError&) {
    return false;
  }
}

std::string kept_answers_note(std::string_view existing, const std::string& path,
                              std::string_view fresh) {
  const std::string fix(tr("delete it (or move it away) and run again to get a blank template"));
  std::string old_variant;
  try {
    const TomlReader file(existing, path);
    if (blank_answers(file.root())) return "";
    old_variant = variant_of(file.root());
  } catch (const InputError&) {
    return tr_format("kept {}: it is not valid TOML, so it may hold a student's work; {}", path,
                     fix);
  }
  const std::string new_variant = variant_of(TomlReader(fresh, path).root());
  if (!old_variant.empty() && old_variant != new_variant)
    return tr_format(
        "kept {}: it holds answers to variant {}, but the new lesson.toml beside it is variant "
        "{}, so mark will refuse it; {} of the new variant, or run exercise with the old "
        "--seed and roster",
        path, old_variant, new_variant, fix);
  return tr_format("kept {}: it holds answers typed in (not the blank template); {}", path, fix);
}

std::string answers_template(const SheetModel& model) {
  const int d = model.answer_decimals;
  // No line end can break the comment: rosters refuse control characters.
  const std::string who = model.student_id.empty()
                              ? model.student
                              : tr_format("{}, ID {}", model.student, model.student_id);
  std::string out =
      d == 1 ? tr_format(
                   "# Answers of {} (variant {}). Write each number you computed between its "
                   "quotes,\n# with {} decimal as the sheet asks (\"{}\"); a cell left \"\" counts "
                   "as not answered.\n",
                   who, model.variant, d, format_fixed(0.25, d))
             : tr_format(
                   "# Answers of {} (variant {}). Write each number you computed between its "
                   "quotes,\n# with {} decimals as the sheet asks (\"{}\"); a cell left \"\" "
                   "counts as not answered.\n",
                   who, model.variant, d, format_fixed(0.25, d));
  out += tr("# Marked with: attn-trace mark FOLDER (the whole class), or\n"
            "#              attn-trace verify lesson.toml --answers answers.toml (this student)\n");
  out += fmt::format("\nstudent = {}\nvariant = {}\n", json_string(model.student),
                     json_string(model.variant));
  for (std::size_t i = 0; i < model.asked.size(); ++i) {
    const SheetMatrix& m = model.asked[i];
    out += fmt::format("\n# {}. {}\n[[answer]]\nstep = {}\n", i + 1,
                       tr_format("{}: {} ({})", m.name, m.formula, m.shapes), json_string(m.id));
    out += blank_grid(m);
  }
  return out;
}

}  // namespace attn
