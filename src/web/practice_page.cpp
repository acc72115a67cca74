// The practice page (practice_page.hpp): the sheet in HTML, the lesson and a
// new session's answers file as data, the engine and the page's script.
#include "web/practice_page.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <vector>

#include "core/error.hpp"
#include "core/i18n.hpp"
#include "render/escape.hpp"
#include "render/formula.hpp"
#include "render/json_writer.hpp"
#include "render/render.hpp"
#include "teach/exercise.hpp"

namespace attn {

namespace {

constexpr int kGivenDecimals = 4;
// Steps (and given matrices) with more rows or columns are not drawn as grids.
constexpr std::size_t kGridMax = 32;

// `json` inside a <script>: "</" written "<\/", which JSON and JavaScript read
// as "</" and which cannot end the script element.
std::string script_safe(std::string json) {
  for (std::size_t at = 0; (at = json.find("</", at)) != std::string::npos; at += 3)
    json.replace(at, 2, "<\\/");
  return json;
}

std::string header_row(const std::vector<std::string>& cols) {
  std::string out = "<tr><th></th>";
  for (const std::string& c : cols) out += fmt::format("<th scope=\"col\">{}</th>", xml_text(c));
  return out + "</tr>";
}

// A given matrix, its numbers as the lesson writes them (a large one: its shape).
std::string given_table(const Step& step) {
  if (step.value.n_rows > kGridMax || step.value.n_cols > kGridMax)
    return fmt::format(
        "<figure class=\"given\" data-step=\"{}\"><figcaption><b>{}</b> · {} · {}×{}"
        "</figcaption></figure>",
        xml_text(step.id), xml_text(step.id), xml_text(step_display_name(step)), step.value.n_rows,
        step.value.n_cols);
  std::string out = fmt::format(
      "<figure class=\"given\" data-step=\"{}\"><figcaption><b>{}</b> · {}</figcaption><table>"
      "<thead>{}</thead><tbody>",
      xml_text(step.id), xml_text(step.id), xml_text(step_display_name(step)),
      header_row(step.cols));
  for (std::size_t r = 0; r < step.value.n_rows; ++r) {
    out += fmt::format("<tr><th scope=\"row\">{}</th>", xml_text(step.rows[r]));
    for (std::size_t c = 0; c < step.value.n_cols; ++c)
      out += fmt::format("<td data-cell=\"{}:{}:{}\">{}</td>", xml_text(step.id), r, c,
                         format_by_hand(step.value(r, c), kGivenDecimals));
    out += "</tr>";
  }
  return out + "</tbody></table></figure>";
}

// Which query may attend to which key: the mask as the steps apply it.
std::string mask_table(const Trace& truth, const Step& shaped) {
  if (truth.mask.n_rows > kGridMax || truth.mask.n_cols > kGridMax)
    return fmt::format(
        "<figure class=\"given mask\"><figcaption><b>mask</b> · {}</figcaption></figure>",
        xml_text(tr_format("{} of {}×{} cells masked", arma::accu(truth.mask != 0u),
                           truth.mask.n_rows, truth.mask.n_cols)));
  std::string out = fmt::format(
      "<figure class=\"given mask\"><figcaption><b>mask</b> · {}</figcaption><table><thead>{}"
      "</thead><tbody>",
      xml_text(tr("✕ = masked: the query (row) may not attend to the key (column)")),
      header_row(shaped.cols));
  for (std::size_t r = 0; r < truth.mask.n_rows; ++r) {
    out += fmt::format("<tr><th scope=\"row\">{}</th>", xml_text(shaped.rows.at(r)));
    for (std::size_t c = 0; c < truth.mask.n_cols; ++c)
      out += truth.mask(r, c) ? "<td class=\"masked\">✕</td>" : "<td></td>";
    out += "</tr>";
  }
  return out + "</tbody></table></figure>";
}

std::string given_section(const PracticeSession& s) {
  std::string out = fmt::format("<section id=\"given\"><h2>{}</h2>", xml_text(tr("What is given")));
  const Step* attention = nullptr;
  for (const Step& step : s.truth().steps) {
    if (step.made.op == Op::given) out += given_table(step);
    if (!attention && step.kind == StepKind::scores) attention = &step;
  }
  if (attention && arma::any(arma::vectorise(s.truth().mask)) &&
      attention->value.n_rows == s.truth().mask.n_rows &&
      attention->value.n_cols == s.truth().mask.n_cols)
    out += mask_table(s.truth(), *attention);
  return out + "</section>";
}

// A step to work out: its formula, its shapes and a blank grid, the cells
// practice asks marked (their order in the session as a small number).
std::string step_section(const PracticeSession& s, const Step& step) {
  const StepFormula f = step_formula(s.lesson(), s.truth(), step, language());
  std::string out = fmt::format(
      "<section class=\"step\" data-step=\"{}\"><h3><b>{}</b> · {}</h3><p class=\"formula\">{}</p>"
      "<p class=\"shapes\">{}</p>",
      xml_text(step.id), xml_text(step.id), xml_text(step_display_name(step)), xml_text(f.text),
      xml_text(tr_format("shapes: {}", f.shapes)));
  if (step.value.n_rows > kGridMax || step.value.n_cols > kGridMax)
    return out +
           fmt::format("<p class=\"large\">{}</p></section>",
                       xml_text(tr_format("{} is {}×{}, too large for a grid here: its cells are "
                                          "asked one at a time at the prompt above.",
                                          step.id, step.value.n_rows, step.value.n_cols)));
  out += fmt::format("<table class=\"grid\"><thead>{}</thead><tbody>", header_row(step.cols));
  for (std::size_t r = 0; r < step.value.n_rows; ++r) {
    out += fmt::format("<tr><th scope=\"row\">{}</th>", xml_text(step.rows[r]));
    for (std::size_t c = 0; c < step.value.n_cols; ++c) {
      const PracticeCell cell{step.id, r, c};
      std::size_t order = 0;
      for (std::size_t k = 0; k < s.records().size() && !order; ++k)
        if (s.records()[k].cell == cell) order = k + 1;
      out += fmt::format(
          "<td data-cell=\"{}:{}:{}\"{}>{}<input inputmode=\"decimal\" autocomplete=\"off\" "
          "aria-label=\"{}\"></td>",
          xml_text(step.id), r, c, order ? " class=\"asked\"" : "",
          order ? fmt::format("<sup>{}</sup>", order) : "", xml_text(cell_name(s.truth(), cell)));
    }
    out += "</tr>";
  }
  return out + "</tbody></table></section>";
}

// The lesson's story as paragraphs: in English a blank line ends one (its
// lines are wrapped in the file), in Chinese every line is one.
std::string story_html(std::string_view story, Language lang) {
  std::string out, paragraph;
  const auto end_paragraph = [&] {
    if (!paragraph.empty()) out += "<p>" + xml_text(paragraph) + "</p>";
    paragraph.clear();
  };
  for (const std::string_view line : text_lines(story)) {
    if (line.find_first_not_of(' ') == std::string_view::npos) {
      end_paragraph();
      continue;
    }
    paragraph += (paragraph.empty() ? "" : " ") + std::string(line);
    if (lang == Language::zh) end_paragraph();
  }
  end_paragraph();
  return out;
}

// The words the script shows, in the page's language.
std::string page_words() {
  const std::vector<std::pair<const char*, std::string_view>> words = {
      {"loading", tr("Loading the engine…")},
      {"ready", tr("Type the value of the highlighted cell and press Enter; any other cell of "
                   "a grid may be filled too.")},
      {"failed", tr("The engine could not start in this browser; the page still prints as a "
                    "sheet.")},
      {"done", tr("cells done: {} of {}")},
      {"hint", tr("Hint")},
      {"skip", tr("Skip")},
      {"back", tr("Back")},
      {"download", tr("Download the answers file")},
      {"restart", tr("Start over")},
      {"restart_sure", tr("Start over? Every answer on this page is cleared.")},
      {"summary", tr("Summary")},
      {"finished", tr("Every cell asked has been answered or skipped.")},
      {"explore", tr("Explore")},
      {"explore_how", tr("Change any given number and every step is recomputed at once. The "
                         "changed lesson can be downloaded; attn-trace run traces it.")},
      {"recomputed", tr("recomputed in {} ms")},
      {"corner", tr("the first {} rows and {} columns of {}×{}")},
      {"download_lesson", tr("Download the lesson")},
      {"reset_lesson", tr("Back to the lesson as given")},
      {"saved_in", tr("Your progress is kept in this browser.")},
      {"wrote", tr(" (you wrote {})")},
      {"try_again", tr("Try again, or: h a hint · s skip · ? help")},
      {"help", tr("Type the cell's value as you worked it out (keep the decimals you mean: 0.50 "
                  "is not 0.5; a masked score is -inf) and press Enter. Or type: ? this help · h "
                  "a hint (three, each more: the formula with your numbers, the terms, the worked "
                  "value) · s skip this cell · b back to the cell before.")},
  };
  std::vector<std::string> items;
  for (const auto& [key, text] : words)
    items.push_back(fmt::format("{}: {}", json_string(key), json_string(text)));
  return "{" + fmt::format("{}", fmt::join(items, ", ")) + "}";
}

// RFC 4648 base64, with padding.
std::string base64(std::string_view bytes) {
  static constexpr char kDigits[] =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  out.reserve((bytes.size() + 2) / 3 * 4);
  for (std::size_t i = 0; i < bytes.size(); i += 3) {
    const std::size_t n = std::min<std::size_t>(3, bytes.size() - i);
    std::uint32_t v = 0;
    for (std::size_t k = 0; k < 3; ++k)
      v = v << 8 | (k < n ? static_cast<unsigned char>(bytes[i + k]) : 0u);
    for (std::size_t k = 0; k < 4; ++k) out += k <= n ? kDigits[(v >> (18 - 6 * k)) & 63] : '=';
  }
  return out;
}

// The data the script starts from.
std::string page_data(const PracticeSession& s, const PracticePageParts& parts) {
  const std::string saved = s.answers_toml();
  return fmt::format(
      "window.ATTN = {{\"lesson\": {}, \"id\": {}, \"saved\": {}, \"lang\": \"{}\", \"key\": "
      "\"attn-trace/practice/{}/{}/{:016x}\", \"words\": {}, \"engine\": \"{}\"}};",
      script_safe(json_string(parts.lesson_text)), script_safe(json_string(s.lesson().id)),
      script_safe(json_string(saved)), language() == Language::zh ? "zh" : "en",
      language() == Language::zh ? "zh" : "en", fnv1a64(s.lesson().id),
      fnv1a64(parts.lesson_text + saved), script_safe(page_words()),
      base64(parts.engine_module_gz));
}

}  // namespace

std::string practice_page(const PracticeSession& s, const PracticePageParts& parts) {
  if (parts.engine_script.find("</script") != std::string::npos ||
      parts.page_script.find("</script") != std::string::npos)
    throw InputError("practice --format html: a script holds \"</script\"; rebuild the engine");
  const Lesson& lesson = s.lesson();
  const Language lang = language();
  std::string steps;
  for (const Step* step : s.steps()) steps += step_section(s, *step);
  const std::string story = story_html(lesson.story_for(lang), lang);
  return fmt::format(
      "<!DOCTYPE html>\n<html lang=\"{}\"><head><meta charset=\"utf-8\"><meta name=\"viewport\" "
      "content=\"width=device-width, initial-scale=1\"><title>{}</title><style>{}</style></head>"
      "<body><header><h1>{}</h1><details class=\"story\"><summary>{}</summary>{}</details><p "
      "class=\"how\">{}</p>"
      "<p id=\"status\" class=\"needs-js\"></p></header><main>{}<section id=\"practice\"><h2>{}"
      "</h2><div id=\"bar\" class=\"needs-js\"><div class=\"controls\"></div><div id=\"feedback\" "
      "aria-live=\"polite\"></div></div>{}<section id=\"summary\" class=\"needs-js\">"
      "</section></section><details id=\"explore-box\" class=\"needs-js\"><summary>{}</summary>"
      "<section id=\"explore\"></section></details></main>"
      "<script>{}</script><script>{}</script><script>{}</script></body></html>\n",
      lang == Language::zh ? "zh-CN" : "en",
      xml_text(tr_format("Practice · {}", lesson.title_for(lang))), parts.page_style,
      xml_text(lesson.title_for(lang)),
      xml_text(
          tr("About this lesson (read it after practising: it gives some of the values away)")),
      story,
      xml_text(tr("Work each step out by hand, cell by cell. Without JavaScript (or printed) "
                  "this page is a sheet: the given numbers and a blank grid for each step.")),
      given_section(s), xml_text(tr("Work it out")), steps,
      xml_text(tr("Explore: change a given number, see every step recomputed (it shows every "
                  "value: open it after practising)")),
      page_data(s, parts), parts.engine_script, parts.page_script);
}

}  // namespace attn
