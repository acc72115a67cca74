// Markdown sheet and key: plain pipe tables (blank cells on the sheet), for a
// learning platform or a plain-text hand-out.
#include <fmt/format.h>

#include <string_view>

#include "core/i18n.hpp"
#include "render/escape.hpp"
#include "render/numbers.hpp"
#include "render/render.hpp"
#include "teach/exercise_sheets.hpp"

namespace attn {

namespace {

// A table with labelled rows and columns; `cell` gives the text of (r, c).
template <typename CellText>
std::string md_table(const SheetMatrix& m, CellText cell) {
  std::string out = "| |";
  for (const std::string& c : m.cols) out += fmt::format(" {} |", md_text(c));
  out += "\n|---|";
  for (std::size_t c = 0; c < m.cols.size(); ++c) out += "---:|";
  out += "\n";
  for (std::size_t r = 0; r < m.rows.size(); ++r) {
    out += fmt::format("| **{}** |", md_text(m.rows[r]));
    for (std::size_t c = 0; c < m.cols.size(); ++c) out += fmt::format(" {} |", cell(r, c));
    out += "\n";
  }
  return out + "\n";
}

std::string md_given(const SheetModel& model) {
  std::string out = fmt::format("## {}\n\n", tr("Given"));
  for (const SheetMatrix& m : model.inputs)
    out += fmt::format("**{}** — {}\n\n", md_text(m.id), tr_format("{} ({})", m.name, m.shapes)) +
           md_table(m, [&](std::size_t r, std::size_t c) {
             return format_fixed(m.value(r, c), model.input_decimals);
           });
  return out;
}

}  // namespace

std::string render_sheet_markdown(const SheetModel& model, bool key) {
  std::string out =
      fmt::format("# {}\n\n{}\n\n", md_text(sheet_title(model, key)), md_text(sheet_meta(model)));
  if (key) out += md_text(key_note(model)) + "\n\n";
  out += fmt::format("## {}\n\n", tr("Convention"));
  for (const ConventionLine& line : model.convention)
    out += fmt::format("- {}\n", md_text(line.text));
  out += "\n" + md_given(model);
  if (!key) {
    out += fmt::format("## {}\n\n", tr("To compute"));
    for (std::size_t i = 0; i < model.asked.size(); ++i) {
      const SheetMatrix& m = model.asked[i];
      out += fmt::format("### {}. `{}` — {}\n\n`{}` · {}\n\n", i + 1, m.id, m.name, m.formula,
                         tr_format("shapes: {}", m.shapes));
      out += md_table(m, [](std::size_t, std::size_t) { return std::string(" "); });
    }
    return out;
  }
  out += fmt::format("## {}\n\n", tr("Every step"));
  for (const SheetMatrix& m : model.key) {
    out += fmt::format("### `{}` — {}{}\n\n`{}` · {}\n\n", m.id, m.name, m.asked ? " ★" : "",
                       m.formula, tr_format("shapes: {}", m.shapes));
    out += md_table(m, [&](std::size_t r, std::size_t c) {
      return format_fixed(m.value(r, c), model.answer_decimals);
    });
  }
  if (!model.worked.empty()) {
    out += fmt::format("## {}\n\n", tr("Worked cells"));
    for (const CellExpansion& e : model.worked)
      out += fmt::format("### `{}` [{}, {}] ({}, {})\n\n{}\n\n", e.step, e.row, e.col,
                         md_text(e.row_label), md_text(e.col_label),
                         expansion_markdown(e, model.answer_decimals + 2));
  }
  return out;
}

}  // namespace attn
