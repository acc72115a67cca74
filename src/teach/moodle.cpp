// Moodle XML question bank: the sheet model of each variant as a Cloze
// question, its asked cells as NUMERICAL sub-questions with verify's tolerance.
#include "teach/moodle.hpp"

#include <fmt/format.h>

#include <cmath>
#include <cstdint>
#include <string_view>

#include "core/i18n.hpp"
#include "core/lesson.hpp"
#include "render/escape.hpp"
#include "render/numbers.hpp"
#include "render/render.hpp"

namespace attn {

namespace {

// A category path names its levels with '/'; a '/' inside a name is doubled.
std::string category_level(std::string_view name) {
  std::string out;
  for (char c : name) out += c == '/' ? std::string("//") : std::string(1, c);
  return out;
}

// A table with labelled rows and columns; `cell` gives the <td> content of (r, c).
template <typename Cell>
std::string html_table(const SheetMatrix& m, Cell cell) {
  std::string out = "<table border=\"1\" cellpadding=\"4\" style=\"border-collapse: collapse\">\n";
  out += "<tr><th></th>";
  for (const std::string& c : m.cols) out += fmt::format("<th>{}</th>", cloze_html_text(c));
  out += "</tr>\n";
  for (std::size_t r = 0; r < m.rows.size(); ++r) {
    out += fmt::format("<tr><th>{}</th>", cloze_html_text(m.rows[r]));
    for (std::size_t c = 0; c < m.cols.size(); ++c)
      out += fmt::format("<td style=\"text-align: right\">{}</td>", cell(r, c));
    out += "</tr>\n";
  }
  return out + "</table>\n";
}

std::string values_table(const SheetMatrix& m, int decimals) {
  return html_table(m, [&](std::size_t r, std::size_t c) {
    return cloze_html_text(format_fixed(m.value(r, c), decimals));
  });
}

std::string step_heading(const SheetMatrix& m, std::size_t number) {
  return fmt::format("<p>{}. <b>{}</b> — {} · {}</p>\n", number, cloze_html_text(m.id),
                     cloze_html_text(tr_format("{}: {}", m.name, m.formula)),
                     cloze_html_text(tr_format("shapes: {}", m.shapes)));
}

bool has_masked_cell(const SheetMatrix& m) {
  return m.value.has_inf();
}

// The question: the convention, the inputs, and a cloze cell in every asked cell.
std::string question_html(const SheetModel& model) {
  std::string out =
      fmt::format("<p>{}</p>\n<p><b>{}</b></p>\n<ul>\n", cloze_html_text(sheet_meta(model)),
                  cloze_html_text(tr("Convention")));
  for (const ConventionLine& line : model.convention)
    out += fmt::format("<li>{}</li>\n", cloze_html_text(line.text));
  out += fmt::format("</ul>\n<p><b>{}</b></p>\n", cloze_html_text(tr("Given")));
  for (const SheetMatrix& m : model.inputs)
    out += fmt::format("<p><b>{}</b> — {}</p>\n", cloze_html_text(m.id),
                       cloze_html_text(tr_format("{} ({})", m.name, m.shapes))) +
           values_table(m, model.input_decimals);
  out += fmt::format(
      "<p><b>{}</b>{}", cloze_html_text(tr("To compute")),
      cloze_html_text(tr_format(": every cell to {} decimals.", model.answer_decimals)));
  for (const SheetMatrix& m : model.asked)
    if (has_masked_cell(m)) {
      out += cloze_html_text(tr(" Write a masked score (−∞) as -inf."));
      break;
    }
  out += "</p>\n";
  for (std::size_t i = 0; i < model.asked.size(); ++i) {
    const SheetMatrix& m = model.asked[i];
    out += step_heading(m, i + 1) + html_table(m, [&](std::size_t r, std::size_t c) {
             return cloze_cell(m.value(r, c), model.answer_decimals);
           });
  }
  return out;
}

// The general feedback: the key of the asked steps and their worked cells.
std::string feedback_html(const SheetModel& model) {
  std::string out =
      fmt::format("<p><b>{}</b>{}</p>\n", cloze_html_text(tr("Answer key")),
                  cloze_html_text(tr_format(", to {} decimals.", model.answer_decimals)));
  for (std::size_t i = 0; i < model.asked.size(); ++i)
    out +=
        step_heading(model.asked[i], i + 1) + values_table(model.asked[i], model.answer_decimals);
  for (const CellExpansion& e : model.worked)
    out += fmt::format("<p>{} <b>{}</b> [{}, {}] ({}, {})</p>\n<pre>{}</pre>\n",
                       cloze_html_text(tr("Worked cell")), cloze_html_text(e.step), e.row, e.col,
                       cloze_html_text(e.row_label), cloze_html_text(e.col_label),
                       cloze_html_text(expansion_text(e, model.answer_decimals + 2)));
  return out;
}

}  // namespace

std::string cloze_html_text(std::string_view s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '{':
        out += "&#123;";
        break;
      case '}':
        out += "&#125;";
        break;
      case '#':
        out += "&#35;";
        break;
      case '~':
        out += "&#126;";
        break;
      case '\\':
        out += "&#92;";
        break;
      default:
        out += xml_text(std::string_view(&c, 1));
    }
  }
  return out;
}

std::string cloze_answer_text(std::string_view s) {
  std::string out;
  for (char c : s) {
    if (std::string_view("}#~/\"\\").find(c) != std::string_view::npos) out += '\\';
    out += c;
  }
  return out;
}

std::string cloze_cell(double value, int decimals) {
  if (std::isinf(value) && value < 0) {
    std::string alternatives;
    for (std::string_view text : {"-inf", "−∞", "-∞", "-infinity"})
      alternatives +=
          fmt::format("{}={}", alternatives.empty() ? "" : "~", cloze_answer_text(text));
    return fmt::format("{{1:SHORTANSWER:{}}}", alternatives);
  }
  // Moodle accepts |x - answer| <= tolerance; verify accepts a number written
  // with `decimals` decimals when |x - true| <= written_tolerance(decimals)
  // (teach/verify.cpp). So the answer is the true value itself, not the key's
  // rounding of it (0.8654987 keyed 0.865 ± 0.000505 would refuse 0.866, which
  // verify accepts): written to 9 more decimals than asked, enough that Moodle's
  // interval and verify's differ by under 10^-9 of a unit. Exercise values are
  // far below 1e9, so both are plain decimals.
  std::string answer = fmt::format("{:.{}f}", value, decimals + 9);
  const std::size_t shortest = answer.find('.') + 1 + static_cast<std::size_t>(decimals);
  while (answer.size() > shortest && answer.back() == '0') answer.pop_back();
  if (answer.find_first_not_of("-0.") == std::string::npos) answer = format_fixed(0.0, decimals);
  return fmt::format("{{1:NUMERICAL:={}:{:.{}f}}}", answer, written_tolerance(decimals),
                     decimals + 3);
}

namespace {

// The longest category name Moodle keeps (question_categories.name), in characters.
constexpr std::size_t kMaxCategoryChars = 255;

std::size_t characters(std::string_view text) {
  std::size_t count = 0;
  for (char c : text) count += (static_cast<unsigned char>(c) & 0xC0) != 0x80;
  return count;
}

}  // namespace

std::string moodle_category(const ExerciseSpec& spec) {
  std::string name = tr_format(N_("seed {}"), spec.seed) + " · " +
                     tr_counted(spec.tokens, N_("{} token"), N_("{} tokens"));
  if (spec.memory_tokens > 0) name += " · " + tr_format(N_("cross {}"), spec.memory_tokens);
  name += fmt::format(" · d_model {} · d_k {} · {}", spec.d_model, spec.d_k,
                      tr_counted(spec.heads, N_("{} head"), N_("{} heads")));
  if (spec.causal) name += " · " + std::string(tr(N_("causal")));
  if (spec.key_padding) name += " · " + std::string(tr(N_("key padding")));
  name +=
      " · " +
      tr_format(N_("inputs {}"), tr_counted(spec.decimals, N_("{} decimal"), N_("{} decimals"))) +
      " · " +
      tr_format(N_("answers {}"),
                tr_counted(spec.answer_decimals, N_("{} decimal"), N_("{} decimals"))) +
      " · ";
  // Every asked step when they fit Moodle's column; else how many, and a hash
  // of their list, so that other lists still get other categories.
  const std::string asked = fmt::format("{}", fmt::join(spec.ask, " "));
  if (characters(category_level(name + asked)) <= kMaxCategoryChars)
    name += asked;
  else
    name += tr_format(N_("{} asked steps ({:08x})"), spec.ask.size(),
                      static_cast<std::uint32_t>(fnv1a64(asked) >> 32));
  return "$course$/top/attn-trace/" + category_level(name);
}

std::string render_moodle_xml(const ExerciseSpec& spec, const std::vector<SheetModel>& models) {
  std::string out = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<quiz>\n";
  out += fmt::format(
      "<question type=\"category\">\n<category><text>{}</text></category>\n"
      "<info format=\"html\"><text>{}</text></info>\n</question>\n",
      xml_text(moodle_category(spec)),
      xml_cdata(fmt::format("<p>{} <code>{} --out {}</code></p>",
                            xml_text(tr("Attention exercises, one variant per question. Regenerate "
                                        "with:")),
                            xml_text(spec.command), xml_text(tr(N_("DIR"))))));
  for (const SheetModel& model : models)
    out += fmt::format(
        "<question type=\"cloze\">\n<name><text>{}</text></name>\n"
        "<questiontext format=\"html\"><text>{}</text></questiontext>\n"
        "<generalfeedback format=\"html\"><text>{}</text></generalfeedback>\n"
        "<penalty>0</penalty>\n<hidden>0</hidden>\n</question>\n",
        xml_text(tr_format("Attention exercise, variant {}", model.variant)),
        xml_cdata(question_html(model)), xml_cdata(feedback_html(model)));
  return out + "</quiz>\n";
}

}  // namespace attn
