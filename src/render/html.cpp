// HTML: one self-contained page (no network: inline CSS and a little inline
// JS) with every step, its formula in MathML, its shapes and its token-labelled
// values; the attention weights as heatmaps side by side; and the arithmetic
// of every shown cell, readable without JS, brought into view by a click.
#include <fmt/format.h>

#include <cctype>
#include <cmath>

#include "core/error.hpp"
#include "core/expand.hpp"
#include "core/i18n.hpp"
#include "core/lesson_library.hpp"
#include "core/number_text.hpp"
#include "render/escape.hpp"
#include "render/formula.hpp"
#include "render/heatmap.hpp"
#include "render/json_writer.hpp"
#include "render/numbers.hpp"
#include "render/render.hpp"

namespace attn {

namespace {

// ---- The LaTeX of formula.hpp as MathML -----------------------------------
// step_formula writes a small subset of LaTeX math: letters, digits, operators,
// _ and ^, {groups}, \mathrm{} and \text{}, \frac, \tfrac, \sqrt, \hat, Greek
// letters, \sum, \max, \exp, \sin, \cos, \top, \cdot, \odot, \mid, \infty and
// spaces. This reads exactly that; an unknown command is shown as its name.
class MathML {
 public:
  explicit MathML(std::string_view tex) : s_(tex) {}

  std::string convert() {
    std::string out = sequence();
    while (i_ < s_.size()) {  // a stray "}" ends no group: show it and go on
      ++i_;
      out += "<mo>}</mo>" + sequence();
    }
    return out;
  }

 private:
  std::string_view s_;
  std::size_t i_ = 0;

  void skip_spaces() {
    while (i_ < s_.size() && s_[i_] == ' ') ++i_;
  }

  // Atoms with their scripts up to the end or a closing brace (not consumed).
  std::string sequence() {
    std::string out;
    for (skip_spaces(); i_ < s_.size() && s_[i_] != '}'; skip_spaces()) out += scripted();
    return out;
  }

  std::string scripted() {
    std::string base = atom(false);
    std::string sub, sup;
    for (skip_spaces(); i_ < s_.size() && (s_[i_] == '_' || s_[i_] == '^'); skip_spaces()) {
      const char c = s_[i_++];
      (c == '_' ? sub : sup) = argument();
    }
    if (!sub.empty() && !sup.empty())
      return fmt::format("<msubsup>{}{}{}</msubsup>", base, sub, sup);
    if (!sub.empty()) return fmt::format("<msub>{}{}</msub>", base, sub);
    if (!sup.empty()) return fmt::format("<msup>{}{}</msup>", base, sup);
    return base;
  }

  // A command's argument or a script: a {group} or one token.
  std::string argument() {
    skip_spaces();
    return atom(true);
  }

  // The text of a {group} as it is, LaTeX's text escapes undone.
  std::string raw_group() {
    skip_spaces();
    if (i_ >= s_.size() || s_[i_] != '{') return "";
    std::string out;
    int depth = 0;
    for (++i_; i_ < s_.size(); ++i_) {
      const char c = s_[i_];
      if (c == '\\' && i_ + 1 < s_.size() &&
          std::string_view("_{}&%#$ ,").find(s_[i_ + 1]) != std::string_view::npos) {
        out += s_[i_ + 1] == ',' ? ' ' : s_[i_ + 1];
        ++i_;
      } else if (c == '{') {
        ++depth;
      } else if (c == '}') {
        if (depth-- == 0) {
          ++i_;
          break;
        }
      } else {
        out += c;
      }
    }
    return out;
  }

  std::string group() {
    ++i_;  // "{"
    std::string inner = sequence();
    if (i_ < s_.size()) ++i_;  // "}"
    return "<mrow>" + inner + "</mrow>";
  }

  // One element; `single`: a digit alone (the arguments of \tfrac1d).
  std::string atom(bool single) {
    if (i_ >= s_.size()) return "<mrow></mrow>";
    const char c = s_[i_];
    if (c == '{') return group();
    if (c == '\\') return command();
    if (std::isdigit(static_cast<unsigned char>(c))) {
      std::size_t end = i_ + 1;
      if (!single)
        while (end < s_.size() && (std::isdigit(static_cast<unsigned char>(s_[end])) ||
                                   (s_[end] == '.' && end + 1 < s_.size() &&
                                    std::isdigit(static_cast<unsigned char>(s_[end + 1])))))
          ++end;
      const std::string_view digits = s_.substr(i_, end - i_);
      i_ = end;
      return fmt::format("<mn>{}</mn>", digits);
    }
    if (std::isalpha(static_cast<unsigned char>(c))) {
      ++i_;
      return fmt::format("<mi>{}</mi>", c);
    }
    // One UTF-8 character: a letter of some script, or an ASCII operator.
    std::size_t end = i_ + 1;
    while (end < s_.size() && (static_cast<unsigned char>(s_[end]) & 0xC0) == 0x80) ++end;
    const std::string ch = xml_text(s_.substr(i_, end - i_));
    i_ = end;
    if (static_cast<unsigned char>(c) >= 0x80) return fmt::format("<mi>{}</mi>", ch);
    if (c == '(' || c == ')' || c == '[' || c == ']' || c == '|')
      return fmt::format("<mo stretchy=\"false\">{}</mo>", ch);
    return fmt::format("<mo>{}</mo>", ch);
  }

  std::string command() {
    ++i_;  // "\"
    if (i_ >= s_.size()) return "<mo>\\</mo>";
    if (!std::isalpha(static_cast<unsigned char>(s_[i_]))) {
      const char c = s_[i_++];
      if (c == ',') return "<mspace width=\"0.17em\"></mspace>";
      if (c == ' ' || c == ';') return "<mspace width=\"0.28em\"></mspace>";
      if (c == '!') return "";
      return fmt::format("<mo>{}</mo>", xml_text(std::string(1, c)));
    }
    std::size_t end = i_;
    while (end < s_.size() && std::isalpha(static_cast<unsigned char>(s_[end]))) ++end;
    const std::string name(s_.substr(i_, end - i_));
    i_ = end;
    static const std::pair<const char*, const char*> letters[] = {
        {"alpha", "α"}, {"beta", "β"},  {"gamma", "γ"}, {"delta", "δ"},  {"varepsilon", "ε"},
        {"mu", "μ"},    {"sigma", "σ"}, {"Sigma", "Σ"}, {"Phi", "Φ"},    {"pi", "π"},
        {"infty", "∞"}, {"top", "⊤"},   {"theta", "θ"}, {"lambda", "λ"}, {"epsilon", "ϵ"},
        {"ell", "ℓ"},   {"varphi", "φ"}};
    static const std::pair<const char*, const char*> operators[] = {
        {"cdot", "·"}, {"times", "×"}, {"odot", "⊙"},  {"mid", "∣"},    {"to", "→"},
        {"dots", "…"}, {"ldots", "…"}, {"cdots", "⋯"}, {"approx", "≈"}, {"le", "≤"},
        {"ge", "≥"},   {"sum", "∑"},   {"in", "∈"}};
    for (const auto& [tex, glyph] : letters)
      if (name == tex) return fmt::format("<mi>{}</mi>", glyph);
    for (const auto& [tex, glyph] : operators)
      if (name == tex) return fmt::format("<mo>{}</mo>", glyph);
    if (name == "max" || name == "min" || name == "exp" || name == "sin" || name == "cos" ||
        name == "log")
      return fmt::format("<mi>{}</mi>", name);
    if (name == "mathrm")
      return fmt::format("<mi mathvariant=\"normal\">{}</mi>", xml_text(raw_group()));
    if (name == "text") return fmt::format("<mtext>{}</mtext>", xml_text(raw_group()));
    if (name == "frac" || name == "tfrac") {
      std::string numerator = argument();
      return fmt::format("<mfrac>{}{}</mfrac>", numerator, argument());
    }
    if (name == "sqrt") return fmt::format("<msqrt>{}</msqrt>", argument());
    if (name == "hat")
      return fmt::format("<mover accent=\"true\">{}<mo>^</mo></mover>", argument());
    if (name == "textstyle" || name == "displaystyle") return "";
    if (name == "quad") return "<mspace width=\"1em\"></mspace>";
    return fmt::format("<mtext>\\{}</mtext>", name);
  }
};

std::string mathml(std::string_view tex) {
  return "<p class=\"formula\"><math>" + MathML(tex).convert() + "</math></p>";
}

// ---- The page --------------------------------------------------------------

// Text of several lines (a story, a softmax's note) with <br> between lines.
std::string lines_html(std::string_view s) {
  std::string out;
  for (const std::string_view line : text_lines(s))
    out += (out.empty() ? "" : "<br>") + xml_text(line);
  return out;
}

// A story as paragraphs, as Markdown reads it: a blank line starts a new one,
// the lines of one paragraph flow together.
std::string paragraphs_html(std::string_view s) {
  std::string out, paragraph;
  const auto flush = [&] {
    if (!paragraph.empty()) out += "<p>" + paragraph + "</p>";
    paragraph.clear();
  };
  for (const std::string_view line : text_lines(s)) {
    if (line.find_first_not_of(" \t") == std::string_view::npos)
      flush();
    else
      paragraph += (paragraph.empty() ? "" : "\n") + xml_text(line);
  }
  flush();
  return out;
}

// The id of the element holding the arithmetic of `step`[row, col].
std::string arithmetic_id(const std::string& step, std::size_t row, std::size_t col) {
  return fmt::format("x:{}:{},{}", step, row, col);
}

// One cell <td>: its value, and for a step of weights its colour; masked and NaN marked.
std::string cell(const Trace& trace, const Step& step, std::size_t i, std::size_t j,
                 int precision) {
  const double v = step.value(i, j);
  const bool masked = shows_mask(step) && masked_at(trace, step, i, j);
  std::string cls = masked ? "masked" : "";
  std::string style;
  if (std::isnan(v)) {
    cls += cls.empty() ? "nan" : " nan";
  } else if (is_any_weights(step) && !(masked && v == 0.0)) {
    const Rgb c = ramp(v);
    style = fmt::format(" style=\"background:{};color:{}\"", hex(c), ink(c));
    if (masked) cls += " leaked";  // a masked key that kept weight: the fill is too small
  }
  return fmt::format("<td data-row=\"{}\" data-col=\"{}\"{}{}>{}</td>", i, j,
                     cls.empty() ? "" : " class=\"" + cls + "\"", style,
                     format_fixed(v, precision));
}

// The step's values as a table, rows and columns labelled by token.
std::string values_table(const Trace& trace, const Step& step, const RenderOptions& options,
                         const char* table_class) {
  const arma::mat& M = step.value;
  const bool summarised = should_summarise(M, options.summary);
  const auto rows = visible_indices(M.n_rows, summarised);
  const auto cols = visible_indices(M.n_cols, summarised);
  std::string out = fmt::format("<table class=\"{}\" data-step=\"{}\"><thead><tr><th></th>",
                                table_class, xml_text(step.id));
  for (const auto& c : cols)
    out += c ? fmt::format("<th scope=\"col\">{}</th>", xml_text(step.cols[*c]))
             : std::string("<th class=\"gap\">…</th>");
  out += "</tr></thead><tbody>";
  for (const auto& r : rows) {
    out += r ? fmt::format("<tr><th scope=\"row\">{}</th>", xml_text(step.rows[*r]))
             : std::string("<tr class=\"gap\"><th>⋮</th>");
    for (const auto& c : cols)
      out += r && c ? cell(trace, step, *r, *c, options.precision)
                    : std::string("<td class=\"gap\">") + (r ? "…" : "⋮") + "</td>";
    out += "</tr>";
  }
  return out + "</tbody></table>\n";
}

// A cell's arithmetic with more numbers than this (a sum over 768 features)
// is not written into the page, which would grow by megabytes; its item says
// how to see it.
constexpr std::size_t kMaxNumbers = 48;

std::size_t numbers_in(const CellExpansion& e) {
  return (e.sum ? e.sum->terms.size() : 0) + e.row_values.size() + e.exps.size() +
         e.compare_values.size();
}

std::string too_long(const Lesson& lesson, const CellExpansion& e, int precision) {
  return xml_text(
      tr_format("{}[{},{}] = {} — {} numbers, too many for this page: attn-trace run {} --step {} "
                "--expand {},{} writes them out",
                e.step, show_controls(e.row_label), show_controls(e.col_label),
                format_fixed(e.value, precision), numbers_in(e), lesson.id, e.step, e.row, e.col));
}

// The arithmetic of every cell the table shows, one list item each.
std::string arithmetic_list(const Lesson& lesson, const Trace& trace, const Step& step,
                            const RenderOptions& options) {
  const arma::mat& M = step.value;
  const bool summarised = should_summarise(M, options.summary);
  std::string items;
  for (const auto& r : visible_indices(M.n_rows, summarised))
    for (const auto& c : visible_indices(M.n_cols, summarised)) {
      if (!r || !c || !has_cell(step, *r, *c)) continue;
      const CellExpansion e = expand_cell(lesson, trace, step.id, *r, *c);
      items += fmt::format("<li id=\"{}\">{}</li>\n", xml_text(arithmetic_id(step.id, *r, *c)),
                           numbers_in(e) <= kMaxNumbers
                               ? lines_html(expansion_text(e, options.precision))
                               : too_long(lesson, e, options.precision));
    }
  if (items.empty()) return "";
  return fmt::format(
      "<div class=\"arithmetic\"><h3>{}</h3><p class=\"hint\">{}</p>"
      "<ol class=\"cells\">\n{}</ol></div>\n",
      xml_text(tr("The arithmetic of each cell")),
      xml_text(tr("Click a cell of the table to see its arithmetic here.")), items);
}

// The colour scale with ticks, and the masked, leaked and NaN swatches.
std::string legend(bool any_leak, bool any_nan) {
  std::string stops;
  for (int k = 0; k <= 10; ++k) stops += fmt::format(",{} {}%", hex(ramp(0.1 * k)), 10 * k);
  std::string out = fmt::format(
      "<div class=\"legend\"><span>{}</span><div class=\"scale\"><div class=\"bar\" "
      "style=\"background:linear-gradient(to right{})\"></div><div class=\"ticks\">"
      "<span>0</span><span>0.25</span><span>0.5</span><span>0.75</span><span>1</span></div>"
      "</div><span class=\"swatch masked\"></span><span>{}</span>",
      xml_text(tr("weight")), stops, xml_text(tr("masked (weight 0)")));
  if (any_leak)
    out += fmt::format("<span class=\"swatch leaked\"></span><span>{}</span>",
                       xml_text(tr("masked, yet weighted (the fill is too small)")));
  if (any_nan)
    out += fmt::format("<span class=\"swatch nan\"></span><span>{}</span>",
                       xml_text(tr("NaN (0/0: every key masked)")));
  return out + "</div>\n";
}

constexpr const char* kStyle = R"(
:root{color-scheme:light;--ink:#1d1d1f;--muted:#5f6368;--line:#d7d9de;--accent:#3b5bdb}
*{box-sizing:border-box}
body{margin:0;font:15px/1.5 system-ui,"DejaVu Sans","Noto Sans",sans-serif;color:var(--ink);background:#fafafa}
header,main,nav{max-width:1200px;margin:0 auto;padding:0 20px}
header{padding-top:20px}
h1{font-size:1.6em;margin:0 0 4px}
h2{font-size:1.2em;margin:0 0 6px}
h3{font-size:1em;margin:12px 0 4px}
code,.cells,td,th{font-family:"DejaVu Sans Mono","Noto Sans Mono",ui-monospace,monospace}
.meta,.source,.hint{color:var(--muted);margin:2px 0}
.story{border-left:4px solid var(--line);margin:12px 0;padding:2px 14px;background:#fff;max-width:80ch}
.story p{margin:6px 0}
.warnings{background:#fff4e5;border:1px solid #f0b46a;border-radius:6px;padding:8px 12px 8px 28px}
nav ol{columns:3 220px;font-size:.9em;padding-left:2.5em}
section{background:#fff;border:1px solid var(--line);border-radius:8px;margin:16px 0;padding:14px 18px}
.num{color:var(--muted)}
.formula{margin:8px 0 2px}
math{font-size:1.35em}
.formula-text{color:var(--muted);margin:2px 0}
.shapes{margin:2px 0 8px}
.table-wrap{overflow-x:auto}
table{border-collapse:collapse;font-size:13px;font-variant-numeric:tabular-nums}
th{font-weight:600;padding:3px 8px;color:#333;white-space:pre}
thead th{border-bottom:1px solid var(--line);text-align:right}
tbody th{text-align:left;border-right:1px solid var(--line)}
td{padding:3px 8px;text-align:right;cursor:pointer;border:1px solid transparent}
td:hover{outline:2px solid var(--accent);outline-offset:-2px}
td.selected{outline:3px solid #e8590c;outline-offset:-3px}
table.heat td{min-width:4.6em;padding:7px 9px;border:1px solid #fff}
td.masked{background:repeating-linear-gradient(135deg,#ececec 0 4px,#d2d2d2 4px 6px);color:#777}
td.leaked{outline:2px solid #b00020;outline-offset:-2px}
td.nan{background:#fff;color:#b00020;outline:2px solid #b00020;outline-offset:-2px}
td.gap,th.gap,tr.gap th{color:var(--muted);cursor:default;text-align:center}
.maps{display:flex;flex-wrap:wrap;gap:18px 28px;align-items:flex-start}
figure{margin:0}
figcaption{font-weight:600;margin-bottom:4px}
.legend{display:flex;flex-wrap:wrap;align-items:center;gap:6px 10px;margin-top:12px;font-size:13px}
.scale{width:240px}
.bar{height:14px;border-radius:2px}
.ticks{display:flex;justify-content:space-between;font-size:11px;color:var(--muted)}
.swatch{display:inline-block;width:16px;height:16px;margin-left:14px}
.swatch.masked{background:repeating-linear-gradient(135deg,#ececec 0 4px,#d2d2d2 4px 6px)}
.swatch.leaked{background:#fff;outline:2px solid #b00020;outline-offset:-2px}
.swatch.nan{background:#fff;outline:2px solid #b00020;outline-offset:-2px}
.cells{font-size:12.5px;padding-left:0;list-style:none;margin:4px 0}
.cells li{padding:3px 6px;border-bottom:1px dotted var(--line);overflow-wrap:anywhere}
.warning{color:#8a4b00}
.expanded{font-family:"DejaVu Sans Mono",monospace;font-size:12.5px;background:#fff3bf;padding:4px 8px}
#picked{display:none}
.js #picked{display:block;position:sticky;bottom:0;max-width:1200px;margin:0 auto;background:#1d1d1f;color:#fff;padding:8px 20px;font:13px/1.5 "DejaVu Sans Mono",monospace;overflow-wrap:anywhere;max-height:40vh;overflow-y:auto}
.js .cells li{display:none}
.js .cells li.shown{display:block;background:#fff3bf}
.js .arithmetic .hint{display:block}
.arithmetic .hint{display:none}
)";

constexpr const char* kScript = R"(
(function () {
  document.documentElement.classList.add("js");
  var picked = document.getElementById("picked");
  function show(step, row, col) {
    var item = document.getElementById("x:" + step + ":" + row + "," + col);
    document.querySelectorAll("td.selected").forEach(function (e) { e.classList.remove("selected"); });
    document.querySelectorAll("table[data-step]").forEach(function (t) {
      if (t.dataset.step !== step) return;
      t.querySelectorAll("td[data-row=\"" + row + "\"][data-col=\"" + col + "\"]")
        .forEach(function (e) { e.classList.add("selected"); });
    });
    if (!item) {
      picked.textContent = step + "[" + row + "," + col + "]: not written out in this page";
      return;
    }
    item.parentNode.querySelectorAll("li.shown").forEach(function (e) { e.classList.remove("shown"); });
    item.classList.add("shown");
    picked.innerHTML = item.innerHTML;
  }
  document.addEventListener("click", function (ev) {
    var td = ev.target.closest("td[data-row]");
    if (!td) return;
    show(td.closest("table").dataset.step, td.dataset.row, td.dataset.col);
  });
  var m = /^#click=(.+):(\d+),(\d+)$/.exec(decodeURIComponent(location.hash));
  if (m) show(m[1], m[2], m[3]);
})();
)";

// The script, its one message in language(): a JSON string is a JavaScript one.
std::string page_script() {
  std::string script = kScript;
  const std::string_view english = R"("]: not written out in this page")";
  // TRANSLATORS: after a cell's name, step[row,col], in the page's bar.
  const std::string shown = json_string("]" + std::string(tr(": not written out in this page")));
  return script.replace(script.find(english), english.size(), shown);
}

// The page's start: <head> with the style, then the lesson's title, source,
// sizes, story and the trace's warnings.
std::string page_header(const Lesson& lesson, const Trace& trace, const RenderOptions& options) {
  const std::string& title = lesson.title_for(language());
  const std::string heading = lesson.id + (title.empty() ? "" : " — " + title);
  std::string out = fmt::format(
      "<!DOCTYPE html>\n<html lang=\"{}\">\n<head>\n<meta charset=\"utf-8\">\n"
      "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
      "<meta name=\"generator\" content=\"attn-trace\">\n<title>{}</title>\n<style>{}</style>\n"
      "</head>\n<body>\n<header>\n<h1>{}</h1>\n",
      language() == Language::zh ? "zh-CN" : "en", xml_text(heading), kStyle, xml_text(heading));
  if (!lesson.source.empty())
    out += fmt::format("<p class=\"source\">{}</p>\n",
                       xml_text(tr_format("Source: {}", source_text(lesson.source, language()))));
  out += fmt::format(
      "<p class=\"meta\">{}</p>\n",
      xml_text(tr_format(
          "{} queries × {} keys{} · d_model {} · heads {} · d_k {} · d_v {} · backend {}{}",
          lesson.queries(), lesson.keys(), lesson.is_cross() ? tr(" (cross-attention)") : "",
          lesson.X.n_cols, lesson.heads, lesson.d_k, lesson.d_v, trace.backend,
          trace.dtype != Dtype::f64 ? tr_format(" · numbers: {}", dtype_summary(trace.dtype))
                                    : "")));
  const std::string& story = lesson.story_for(language());
  if (!story.empty() && options.steps.empty())
    out += fmt::format("<blockquote class=\"story\">{}</blockquote>\n", paragraphs_html(story));
  if (!trace.warnings.empty()) {
    out += "<ul class=\"warnings\">";
    for (const std::string& w : shown_warnings(trace))
      out += fmt::format("<li>{}</li>", xml_text(tr_format("Warning: {}", w)));
    out += "</ul>\n";
  }
  return out + "</header>\n";
}

// The step's number in the whole trace, from 1.
std::size_t step_number(const Trace& trace, const Step& step) {
  return static_cast<std::size_t>(&step - trace.steps.data()) + 1;
}

// The list of the steps shown, each a link to its section; opens <main>.
std::string steps_nav(const Trace& trace, const std::vector<const Step*>& steps) {
  std::string out = fmt::format("<nav><h2>{}</h2><ol>", xml_text(tr("Steps")));
  for (const Step* step : steps)
    out += fmt::format("<li value=\"{}\"><a href=\"#step-{}\">{}</a> — {}</li>",
                       step_number(trace, *step), xml_text(step->id), xml_text(step->id),
                       xml_text(step_display_name(*step)));
  return out + "</ol></nav>\n<main>\n";
}

// The weights of every head, side by side, with the legend; nothing when no
// weights are shown.
std::string heatmaps_section(const Trace& trace, const std::vector<const Step*>& steps,
                             const RenderOptions& options) {
  std::string maps;
  bool any_leak = false, any_nan = false, any_max = false;
  for (const Step* step : steps)
    if (is_any_weights(*step)) {
      any_max = any_max || (step->kind == StepKind::head_summary && step->made.op == Op::max);
      maps += fmt::format("<figure><figcaption><a href=\"#step-{0}\">{0}</a></figcaption>{1}",
                          xml_text(step->id), values_table(trace, *step, options, "heat"));
      maps += "</figure>\n";
      any_leak = any_leak || leaks(trace, *step);
      any_nan = any_nan || step->value.has_nan();
    }
  if (maps.empty()) return "";
  const std::string hint = tr_format(
      "Row: the query token; column: the key token it attends to; each row sums to 1{}. Click a "
      "cell for its arithmetic.",
      any_max ? tr(" (heads.max: the largest weight of any head, so its rows do not)") : "");
  return fmt::format(
      "<section class=\"heatmaps\" id=\"heatmaps\"><h2>{}</h2><p class=\"hint\">{}</p>\n<div "
      "class=\"maps\">\n{}</div>\n{}</section>\n",
      xml_text(tr("Attention weights")), xml_text(hint), maps, legend(any_leak, any_nan));
}

// One step: its formula in MathML and as text, its shapes, its values (or
// their summary), its warnings, an --expand cell and the arithmetic of its cells.
std::string step_section(const Lesson& lesson, const Trace& trace, const Step& step,
                         const RenderOptions& options) {
  const StepFormula f = step_formula(lesson, trace, step, language());
  std::string out = fmt::format(
      "<section class=\"step\" id=\"step-{0}\" data-step=\"{0}\">\n<h2><span "
      "class=\"num\">{1}.</span> <code>{0}</code> — {2}</h2>\n{3}\n<p "
      "class=\"formula-text\">{4}</p>\n<p class=\"shapes\">{5}</p>\n",
      xml_text(step.id), step_number(trace, step), xml_text(step_display_name(step)),
      mathml(f.latex), xml_text(f.text), xml_text(tr_format("Shapes: {}", f.shapes)));
  if (should_summarise(step.value, options.summary))
    out += fmt::format(
        "<p class=\"summary\">{}</p>\n",
        xml_text(tr_format("Summary: {} · {}", shape_str(step.value.n_rows, step.value.n_cols),
                           format_stats(matrix_stats(step.value), options.precision))));
  out += "<div class=\"table-wrap\">" +
         values_table(trace, step, options, is_any_weights(step) ? "values heat" : "values") +
         "</div>\n";
  for (const Warning& w : trace.warnings)
    if (w.step == step.step_id)
      out += fmt::format("<p class=\"warning\">{}</p>\n",
                         xml_text(tr_format("Warning: {}", w.text.shown())));
  if (const CellExpansion* e = expansion_for(options, step.id))
    out += fmt::format("<p class=\"expanded\">{}</p>\n",
                       lines_html(expansion_text(*e, options.precision)));
  out += arithmetic_list(lesson, trace, step, options);
  return out + "</section>\n";
}

}  // namespace

std::string render_html(const Lesson& lesson, const Trace& trace, const RenderOptions& options) {
  const std::vector<const Step*> steps = select_steps(trace, options);
  std::string out = page_header(lesson, trace, options);
  out += steps_nav(trace, steps);
  out += heatmaps_section(trace, steps, options);
  for (const Step* step : steps) out += step_section(lesson, trace, *step, options);
  return out + fmt::format(
                   "</main>\n<div id=\"picked\" aria-live=\"polite\">{}</div>\n<script>{}</script>"
                   "\n</body>\n</html>\n",
                   xml_text(tr("Click any cell to see its arithmetic.")), page_script());
}

}  // namespace attn
