// answers.toml: the grids of the sheet as TOML a student can fill in.
#include "teach/answer_template.hpp"

#include <fmt/format.h>

#include <algorithm>

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

}  // namespace

std::string answers_template(const SheetModel& model) {
  const int d = model.answer_decimals;
  std::string out = fmt::format(
      "# Answers of {} (variant {}). Write each number you computed between its quotes,\n"
      "# with {} decimal{} as the sheet asks (\"{}\"); a cell left \"\" counts as not "
      "answered.\n"
      "# Marked with: attn-trace mark FOLDER (the whole class), or\n"
      "#              attn-trace verify lesson.toml --answers answers.toml (this student)\n\n"
      "student = {}\nvariant = {}\n",
      model.student, model.variant, d, d == 1 ? "" : "s", format_fixed(0.25, d),
      json_string(model.student), json_string(model.variant));
  for (std::size_t i = 0; i < model.asked.size(); ++i) {
    const SheetMatrix& m = model.asked[i];
    out += fmt::format("\n# {}. {}: {} ({})\n[[answer]]\nstep = {}\n", i + 1, m.name, m.formula,
                       m.shapes, json_string(m.id));
    out += blank_grid(m);
  }
  return out;
}

}  // namespace attn
