// SVG: the attention weights of every head (and their mean over heads) as
// heatmap pictures, token-labelled, with a colour scale and a legend. One
// self-contained file; nothing is computed here but colours and positions.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "core/error.hpp"
#include "core/i18n.hpp"
#include "render/escape.hpp"
#include "render/heatmap.hpp"
#include "render/json_writer.hpp"
#include "render/numbers.hpp"
#include "render/render.hpp"

namespace attn {

namespace {

// 17 significant digits, or nan, inf, -inf: an attribute value, unquoted.
std::string attribute_number(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v < 0 ? "-inf" : "inf";
  return json_number(v);
}

constexpr double kMargin = 16;
constexpr double kTitle = 22;     // the panel's title line
constexpr double kGap = 28;       // between panels
constexpr double kCharWidth = 7;  // an estimate of one label character at 12 px

struct Layout {
  double cell = 36;
  double row_labels = 0;         // width of the query labels
  double col_labels = 0;         // height of the rotated key labels
  double width = 0, height = 0;  // one panel
  bool values = true;            // numbers inside the cells
};

Layout layout(const Step& step) {
  Layout l;
  const std::size_t n = step.value.n_rows, m = step.value.n_cols;
  l.cell = std::clamp(480.0 / static_cast<double>(std::max(n, m)), 6.0, 40.0);
  l.values = l.cell >= 30;
  std::size_t longest_row = 1, longest_col = 1;
  for (const std::string& t : step.rows) longest_row = std::max(longest_row, display_width(t));
  for (const std::string& t : step.cols) longest_col = std::max(longest_col, display_width(t));
  l.row_labels = kCharWidth * static_cast<double>(std::min<std::size_t>(longest_row, 24)) + 8;
  l.col_labels =
      0.72 * kCharWidth * static_cast<double>(std::min<std::size_t>(longest_col, 24)) + 14;
  l.width = l.row_labels + l.cell * static_cast<double>(m);
  l.height = kTitle + l.col_labels + l.cell * static_cast<double>(n);
  return l;
}

// A label no longer than 24 characters (a longer one ends in "…").
std::string label(const std::string& token) {
  return xml_text(clip_to_width(token, 24));
}

// One heatmap at (x, y): title, key labels, query labels, cells.
std::string panel(const Trace& trace, const Step& step, const Layout& l, double x, double y,
                  int precision) {
  std::string out =
      fmt::format("<g class=\"panel\" data-step=\"{}\" transform=\"translate({:g} {:g})\">\n",
                  xml_text(step.id), x, y);
  out += fmt::format("<text class=\"title\" x=\"0\" y=\"14\">{} ({}×{})</text>\n",
                     xml_text(step.id), step.value.n_rows, step.value.n_cols);
  const double top = kTitle + l.col_labels;
  for (std::size_t j = 0; j < step.value.n_cols; ++j) {
    const double cx = l.row_labels + l.cell * (static_cast<double>(j) + 0.5);
    out += fmt::format(
        "<text class=\"key\" transform=\"translate({:g} {:g}) rotate(-45)\">{}</text>\n", cx,
        top - 4, label(step.cols.at(j)));
  }
  for (std::size_t i = 0; i < step.value.n_rows; ++i) {
    const double cy = top + l.cell * (static_cast<double>(i) + 0.5);
    out += fmt::format("<text class=\"query\" x=\"{:g}\" y=\"{:g}\">{}</text>\n", l.row_labels - 6,
                       cy + 4, label(step.rows.at(i)));
    for (std::size_t j = 0; j < step.value.n_cols; ++j) {
      const double v = step.value(i, j);
      const bool masked = masked_at(trace, step, i, j);
      const double cx = l.row_labels + l.cell * static_cast<double>(j);
      const double cyt = top + l.cell * static_cast<double>(i);
      const std::string where = fmt::format(
          "x=\"{:g}\" y=\"{:g}\" width=\"{:g}\" height=\"{:g}\" data-row=\"{}\" data-col=\"{}\" "
          "data-value=\"{}\"",
          cx, cyt, l.cell, l.cell, i, j, attribute_number(v));
      const std::string tip =
          fmt::format("<title>{}[{},{}] = {}{}</title>", xml_text(step.id),
                      xml_text(step.rows.at(i)), xml_text(step.cols.at(j)),
                      format_fixed(v, precision),
                      masked ? tr_format(" (masked: {})", mask_reason_words(trace, i, j)) : "");
      if (std::isnan(v)) {
        out += fmt::format(
            "<rect class=\"cell nan\" {} fill=\"#ffffff\" style=\"stroke:#b00020\">{}</rect>\n",
            where, tip);
        if (l.values)
          out += fmt::format(
              "<text class=\"value\" x=\"{:g}\" y=\"{:g}\" fill=\"#b00020\">NaN</text>\n",
              cx + l.cell / 2, cyt + l.cell / 2 + 4);
        continue;
      }
      if (masked && v == 0.0) {
        out += fmt::format("<rect class=\"cell masked\" {} fill=\"url(#masked)\">{}</rect>\n",
                           where, tip);
        continue;
      }
      // A masked key that kept weight (a fill too small to hide it) is drawn
      // in its colour, outlined in red: the mask did not work there.
      const Rgb c = ramp(v);
      out += fmt::format("<rect class=\"cell{}\" {} fill=\"{}\"{}>{}</rect>\n",
                         masked ? " masked leaked" : "", where, hex(c),
                         masked ? " style=\"stroke:#b00020;stroke-width:2\"" : "", tip);
      if (l.values)
        out += fmt::format("<text class=\"value\" x=\"{:g}\" y=\"{:g}\" fill=\"{}\">{}</text>\n",
                           cx + l.cell / 2, cyt + l.cell / 2 + 4, ink(c), format_fixed(v, 2));
    }
  }
  return out + "</g>\n";
}

// The colour scale from 0 to 1 with ticks, and the masked and NaN swatches.
std::string legend(double x, double y, bool any_nan, bool any_leak) {
  std::string out = fmt::format("<g class=\"legend\" transform=\"translate({:g} {:g})\">\n", x, y);
  out += fmt::format("<text x=\"0\" y=\"12\">{}</text>\n", xml_text(tr("weight")));
  out += "<rect x=\"52\" y=\"2\" width=\"220\" height=\"12\" fill=\"url(#scale)\"/>\n";
  for (int k = 0; k <= 4; ++k)
    out += fmt::format("<text class=\"tick\" x=\"{:g}\" y=\"28\">{:g}</text>\n", 52 + 55.0 * k,
                       0.25 * k);
  out += fmt::format(
      "<rect class=\"swatch masked\" x=\"296\" y=\"2\" width=\"12\" height=\"12\" "
      "fill=\"url(#masked)\"/>\n<text x=\"314\" y=\"12\">{}</text>\n",
      xml_text(tr("masked (weight 0)")));
  double next = 440;
  if (any_leak) {
    out += fmt::format(
        "<rect class=\"swatch leaked\" x=\"{:g}\" y=\"2\" width=\"12\" height=\"12\" "
        "fill=\"#ffffff\" style=\"stroke:#b00020;stroke-width:2\"/>\n<text x=\"{:g}\" "
        "y=\"12\">{}</text>\n",
        next, next + 18, xml_text(tr("masked, yet weighted (the fill is too small)")));
    next += 330;
  }
  if (any_nan)
    out += fmt::format(
        "<rect class=\"swatch nan\" x=\"{:g}\" y=\"2\" width=\"12\" height=\"12\" fill=\"#ffffff\" "
        "stroke=\"#b00020\"/>\n<text x=\"{:g}\" y=\"12\">{}</text>\n",
        next, next + 18, xml_text(tr("NaN (0/0: every key masked)")));
  return out + "</g>\n";
}

}  // namespace

std::string render_svg(const Lesson& lesson, const Trace& trace, const RenderOptions& options) {
  std::vector<const Step*> steps;
  for (const Step* step : select_steps(trace, options))
    if (is_weights(*step)) steps.push_back(step);
  if (steps.empty())
    throw InputError(std::string(
        tr("--format svg draws attention weights (head{h}.weights, heads.mean, heads.max), and "
           "none of the steps chosen is one; choose one with --step, or leave --step out")));

  // Panels left to right, four to a row.
  constexpr std::size_t kPerRow = 4;
  std::string body;
  double y = kMargin + 30, width = 0;
  bool any_nan = false, any_leak = false;
  for (std::size_t start = 0; start < steps.size(); start += kPerRow) {
    double x = kMargin, row_height = 0;
    for (std::size_t k = start; k < std::min(steps.size(), start + kPerRow); ++k) {
      const Layout l = layout(*steps[k]);
      body += panel(trace, *steps[k], l, x, y, options.precision);
      any_nan = any_nan || steps[k]->value.has_nan();
      any_leak = any_leak || leaks(trace, *steps[k]);
      x += l.width + kGap;
      row_height = std::max(row_height, l.height);
    }
    width = std::max(width, x - kGap + kMargin);
    y += row_height + kGap;
  }
  body += legend(kMargin, y, any_nan, any_leak);
  const double height = y + 40;
  const std::string heading = lesson.id + " — " + lesson.title_for(language());
  width = std::max({width, 460.0 + (any_leak ? 330.0 : 0.0) + (any_nan ? 240.0 : 0.0),
                    2 * kMargin + 8.0 * static_cast<double>(display_width(heading))});

  std::string scale;
  for (int k = 0; k <= 10; ++k)
    scale += fmt::format("<stop offset=\"{:g}\" stop-color=\"{}\"/>", 0.1 * k, hex(ramp(0.1 * k)));
  return fmt::format(
      "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{0:g}\" height=\"{1:g}\" "
      "viewBox=\"0 0 {0:g} {1:g}\" font-family=\"DejaVu Sans, Noto Sans, sans-serif\" "
      "font-size=\"12\">\n"
      "<title>{2}</title>\n"
      "<defs>\n<linearGradient id=\"scale\">{3}</linearGradient>\n"
      "<pattern id=\"masked\" width=\"6\" height=\"6\" patternUnits=\"userSpaceOnUse\">"
      "<rect width=\"6\" height=\"6\" fill=\"#e6e6e6\"/>"
      "<path d=\"M0,6 L6,0\" stroke=\"#9a9a9a\" stroke-width=\"1\"/></pattern>\n"
      "<style>.title{{font-weight:bold}} .query{{text-anchor:end}} .value{{text-anchor:middle;"
      "font-size:10px}} .tick{{text-anchor:middle;font-size:10px}} .cell{{stroke:#ffffff;"
      "stroke-width:0.5}}</style>\n</defs>\n"
      "<rect width=\"100%\" height=\"100%\" fill=\"#ffffff\"/>\n"
      "<text x=\"{4:g}\" y=\"{5:g}\" font-size=\"14\">{6}</text>\n{7}</svg>\n",
      width, height, xml_text(tr_format("{}: attention weights", lesson.id)), scale, kMargin,
      kMargin + 10, xml_text(heading), body);
}

}  // namespace attn
