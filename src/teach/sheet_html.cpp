// HTML sheets and keys: one self-contained printable file (inline CSS, no
// scripts, fonts or images fetched), A4 pages, each heading kept with its
// table, a page break after each student.
#include <fmt/format.h>

#include <string_view>
#include <vector>

#include "core/i18n.hpp"
#include "render/escape.hpp"
#include "render/numbers.hpp"
#include "render/render.hpp"
#include "teach/exercise_sheets.hpp"

namespace attn {

namespace {

constexpr std::string_view kStyle =
    R"(body { font-family: Georgia, "Times New Roman", serif; margin: 2em auto; max-width: 52em; color: #111; }
h1 { font-size: 1.5em; margin-bottom: .2em; }
h2 { font-size: 1.15em; border-bottom: 1px solid #999; margin-top: 1.4em; }
h3 { font-size: 1em; margin: 1.1em 0 .3em; }
code, pre, .id { font-family: "DejaVu Sans Mono", Consolas, monospace; }
.meta { color: #444; }
.formula { margin: .2em 0 .4em; }
table { border-collapse: collapse; margin: .3em 0 .8em; page-break-inside: avoid; break-inside: avoid; }
th, td { border: 1px solid #555; padding: .15em .5em; }
th { background: #eee; font-weight: normal; }
td { text-align: right; font-variant-numeric: tabular-nums; }
td.blank { min-width: 5.5em; height: 2.2em; }
pre { background: #f6f6f6; padding: .5em; white-space: pre-wrap; }
h1, h2, h3 { page-break-after: avoid; break-after: avoid; }
div.block { page-break-inside: avoid; break-inside: avoid; }
section.student { page-break-after: always; break-after: page; }
section.student:last-child { page-break-after: auto; break-after: auto; }
@page { size: A4; margin: 15mm 15mm 18mm; }
@media print { body { margin: 0; max-width: none; font-size: 10.5pt; } th { background: none; } }
)";

// A table with labelled rows and columns; `cell` gives the <td> of (r, c).
template <typename Cell>
std::string html_table(const SheetMatrix& m, Cell cell) {
  std::string out = "<table>\n<tr><th></th>";
  for (const std::string& c : m.cols) out += fmt::format("<th>{}</th>", xml_text(c));
  out += "</tr>\n";
  for (std::size_t r = 0; r < m.rows.size(); ++r) {
    out += fmt::format("<tr><th>{}</th>", xml_text(m.rows[r]));
    for (std::size_t c = 0; c < m.cols.size(); ++c) out += cell(r, c);
    out += "</tr>\n";
  }
  return out + "</table>\n";
}

// A text of several lines for <pre>: each line escaped, the line breaks kept.
std::string html_lines(std::string_view text) {
  const std::vector<std::string_view> lines = text_lines(text);
  std::string out;
  for (std::size_t i = 0; i < lines.size(); ++i) out += (i ? "\n" : "") + xml_text(lines[i]);
  return out;
}

std::string html_values(const SheetMatrix& m, int decimals) {
  return html_table(m, [&](std::size_t r, std::size_t c) {
    return fmt::format("<td>{}</td>", xml_text(format_fixed(m.value(r, c), decimals)));
  });
}

std::string html_step_heading(const SheetMatrix& m, const std::string& prefix, bool star) {
  return fmt::format(
      "<h3>{}<span class=\"id\">{}</span> — {}{}</h3>\n<p class=\"formula\">{} · {}</p>\n",
      prefix, xml_text(m.id), xml_text(m.name), star && m.asked ? " ★" : "", xml_text(m.formula),
      xml_text(tr_format("shapes: {}", m.shapes)));
}

std::string html_student(const SheetModel& model, bool key) {
  std::string out =
      fmt::format("<section class=\"student\">\n<h1>{}</h1>\n<p class=\"meta\">{}</p>\n",
                  xml_text(sheet_title(model, key)), xml_text(sheet_meta(model)));
  if (key) out += fmt::format("<p>{}</p>\n", xml_text(key_note(model)));
  out += fmt::format("<h2>{}</h2>\n<ul>\n", xml_text(tr("Convention")));
  for (const ConventionLine& line : model.convention)
    out += fmt::format("<li>{}</li>\n", xml_text(line.text));
  out += fmt::format("</ul>\n<h2>{}</h2>\n", xml_text(tr("Given")));
  for (const SheetMatrix& m : model.inputs)
    out += fmt::format("<div class=\"block\">\n<h3><span class=\"id\">{}</span> — {}</h3>\n",
                       xml_text(m.id), xml_text(tr_format("{} ({})", m.name, m.shapes))) +
           html_values(m, model.input_decimals) + "</div>\n";
  if (!key) {
    out += fmt::format("<h2>{}</h2>\n", xml_text(tr("To compute")));
    for (std::size_t i = 0; i < model.asked.size(); ++i) {
      const SheetMatrix& m = model.asked[i];
      out += "<div class=\"block\">\n" + html_step_heading(m, fmt::format("{}. ", i + 1), false) +
             html_table(m, [](std::size_t,
                              std::size_t) { return std::string("<td class=\"blank\"></td>"); }) +
             "</div>\n";
    }
    return out + "</section>\n";
  }
  out += fmt::format("<h2>{}</h2>\n", xml_text(tr("Every step")));
  for (const SheetMatrix& m : model.key)
    out += "<div class=\"block\">\n" + html_step_heading(m, "", true) +
           html_values(m, model.answer_decimals) + "</div>\n";
  if (!model.worked.empty()) {
    out += fmt::format("<h2>{}</h2>\n", xml_text(tr("Worked cells")));
    for (const CellExpansion& e : model.worked)
      out += fmt::format(
          "<div class=\"block\">\n<h3><span class=\"id\">{}</span> [{}, {}] ({}, {})</h3>\n"
          "<pre>{}</pre>\n</div>\n",
          xml_text(e.step), e.row, e.col, xml_text(e.row_label), xml_text(e.col_label),
          html_lines(expansion_text(e, model.answer_decimals + 2)));
  }
  return out + "</section>\n";
}

}  // namespace

std::string render_sheet_html(const std::vector<SheetModel>& models, bool key) {
  const std::string title =
      models.size() == 1 ? sheet_title(models.front(), key)
      : key              ? tr_format("Answer keys ({} students)", models.size())
                         : tr_format("Attention exercises ({} students)", models.size());
  std::string out = fmt::format(
      "<!DOCTYPE html>\n<html lang=\"{}\">\n<head>\n<meta charset=\"utf-8\">\n<title>{}</title>\n"
      "<style>\n{}</style>\n</head>\n<body>\n",
      language() == Language::zh ? "zh-CN" : "en", xml_text(title), kStyle);
  for (const SheetModel& model : models) out += html_student(model, key);
  return out + "</body>\n</html>\n";
}

}  // namespace attn
