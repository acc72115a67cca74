// One step's matrix in the terminal: numbers in column blocks, or a heatmap;
// the perceptual ramp (render/heatmap.hpp) in 256 colours or 24-bit RGB.
#include "render/text_matrix.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <optional>
#include <string_view>
#include <unordered_map>

#include "core/i18n.hpp"
#include "core/number_text.hpp"
#include "render/escape.hpp"
#include "render/heatmap.hpp"
#include "render/numbers.hpp"

namespace attn {

namespace {

// ---- What a cell is, and its colour -------------------------------------

// A cell the mask hides is shown as masked from the masked step on; one that
// still has weight there (a fill too small to hide it) as leaked; NaN and
// ±inf elsewhere as odd. Only `value` cells take part in the scale.
enum class Cell { value, masked, leaked, odd };

Cell classify(const Trace& trace, const Step& step, std::size_t i, std::size_t j) {
  const double v = step.value(i, j);
  if (std::isnan(v)) return Cell::odd;
  if (shows_mask(step) && masked_at(trace, step, i, j))
    return step.kind != StepKind::masked && v > 0.0 ? Cell::leaked : Cell::masked;
  return std::isfinite(v) ? Cell::value : Cell::odd;
}

constexpr Rgb kMaskedBackground{58, 58, 58};
constexpr Rgb kMaskedInk{150, 150, 150};
constexpr Rgb kLeaked{255, 95, 95};
constexpr Rgb kOddBackground{175, 0, 40};
constexpr Rgb kBlack{0, 0, 0};
constexpr Rgb kWhite{255, 255, 255};

// The ends of the scale for every row: the row's lowest and highest value
// (ShadeScale::row) or the step's (global, the same pair for every row). For
// attention weights the low end is 0, no weight: two weights close to each
// other look alike, however the rest of the row lies.
struct Range {
  std::vector<double> lo, hi;
  bool per_row = false;
  bool from_zero = false;

  // Where `v` of row `i` lies on the ramp: 0 the lowest, 1 the highest (also
  // when every value is the same: each is the highest).
  double at(std::size_t i, double v) const {
    return hi[i] > lo[i] ? (v - lo[i]) / (hi[i] - lo[i]) : 1.0;
  }
};

Range range_of(const Trace& trace, const Step& step, ShadeScale scale) {
  const arma::mat& M = step.value;
  Range r{std::vector<double>(M.n_rows, 0.0), std::vector<double>(M.n_rows, 0.0)};
  bool any = false;
  double lo = 0, hi = 0;
  for (std::size_t i = 0; i < M.n_rows; ++i) {
    bool row_any = false;
    for (std::size_t j = 0; j < M.n_cols; ++j) {
      if (classify(trace, step, i, j) != Cell::value) continue;
      const double v = M(i, j);
      r.lo[i] = row_any ? std::min(r.lo[i], v) : v;
      r.hi[i] = row_any ? std::max(r.hi[i], v) : v;
      row_any = true;
      lo = any ? std::min(lo, v) : v;
      hi = any ? std::max(hi, v) : v;
      any = true;
    }
  }
  r.per_row = scale == ShadeScale::row || (scale == ShadeScale::automatic && is_any_weights(step));
  if (!r.per_row) {
    std::fill(r.lo.begin(), r.lo.end(), lo);
    std::fill(r.hi.begin(), r.hi.end(), hi);
  }
  r.from_zero = is_any_weights(step);
  if (r.from_zero)
    for (double& l : r.lo) l = std::min(l, 0.0);
  return r;
}

// The nearest colour of the 256-colour palette: the 6×6×6 cube (16–231) or
// the grey ramp (232–255).
int palette_index(const Rgb& c) {
  constexpr std::array<int, 6> kLevels{0, 95, 135, 175, 215, 255};
  const auto nearest_level = [&](double v) {
    std::size_t best = 0;
    for (std::size_t k = 1; k < kLevels.size(); ++k)
      if (std::abs(v - kLevels[k]) < std::abs(v - kLevels[best])) best = k;
    return best;
  };
  const std::size_t r = nearest_level(c.r), g = nearest_level(c.g), b = nearest_level(c.b);
  const auto distance = [&](double x, double y, double z) {
    return (c.r - x) * (c.r - x) + (c.g - y) * (c.g - y) + (c.b - z) * (c.b - z);
  };
  const double cube = distance(kLevels[r], kLevels[g], kLevels[b]);
  const double mean = (c.r + c.g + c.b) / 3.0;
  const int grey = std::clamp(static_cast<int>(std::lround((mean - 8.0) / 10.0)), 0, 23);
  const double level = 8.0 + 10.0 * grey;
  return distance(level, level, level) < cube ? 232 + grey
                                              : 16 + static_cast<int>(36 * r + 6 * g + b);
}

// An SGR parameter that sets the foreground (38) or background (48) colour.
std::string sgr(const Rgb& c, ColorDepth depth, bool background) {
  const int which = background ? 48 : 38;
  if (depth == ColorDepth::truecolor)
    return fmt::format("{};2;{};{};{}", which, std::lround(c.r), std::lround(c.g),
                       std::lround(c.b));
  return fmt::format("{};5;{}", which, palette_index(c));
}

std::string paint(const std::string& text, const Rgb& background, const Rgb& ink,
                  ColorDepth depth) {
  return fmt::format("\x1b[{};{}m{}\x1b[0m", sgr(background, depth, true), sgr(ink, depth, false),
                     text);
}

// A cell's text in its colours.
std::string paint_cell(const std::string& text, Cell kind, double t, ColorDepth depth) {
  switch (kind) {
    case Cell::value: {
      const Rgb c = ramp(t);
      return paint(text, c, is_light(c) ? kBlack : kWhite, depth);
    }
    case Cell::masked:
      return paint(text, kMaskedBackground, kMaskedInk, depth);
    case Cell::leaked:
      return paint(text, kLeaked, kBlack, depth);
    case Cell::odd:
      return paint(text, kOddBackground, kWhite, depth);
  }
  return text;
}

// The one colour a heatmap cell shows.
Rgb heat_colour(Cell kind, double t) {
  switch (kind) {
    case Cell::value:
      return ramp(t);
    case Cell::masked:
      return kMaskedBackground;
    case Cell::leaked:
      return kLeaked;
    case Cell::odd:
      return kOddBackground;
  }
  return kBlack;
}

// Without colour, a heatmap cell is a glyph: five levels of the scale, and
// marks for the cells that are not on it.
std::string heat_glyph(Cell kind, double t) {
  static constexpr std::array<const char*, 5> kLevels{" ", "░", "▒", "▓", "█"};
  switch (kind) {
    case Cell::value:
      return kLevels[std::min<std::size_t>(4, static_cast<std::size_t>(std::max(0.0, t) * 5.0))];
    case Cell::masked:
      return "·";
    case Cell::leaked:
      return "!";
    case Cell::odd:
      return "?";
  }
  return " ";
}

// ---- The legend ------------------------------------------------------------

// Columns `text` takes on the terminal, its colour codes left out.
std::size_t visible_width(const std::string& text) {
  std::string plain;
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '\x1b') {
      i = text.find('m', i);
      if (i == std::string::npos) break;
      continue;
    }
    plain += text[i];
  }
  return display_width(plain);
}

// One entry of a legend: a coloured swatch (or none) and its plain text.
struct Piece {
  std::string swatch;
  std::string text;
};

// The pieces left to right, a new line where the next one would pass the
// width; a piece wider than a line of its own has its text wrapped.
void write_pieces(std::string& out, const std::vector<Piece>& pieces, std::size_t width) {
  std::string line;
  std::size_t column = 0;
  for (const Piece& p : pieces) {
    const std::size_t lead =
        p.swatch.empty() ? 0 : visible_width(p.swatch) + (p.text.empty() ? 0 : 1);
    const std::size_t columns = lead + display_width(p.text);
    if (column > 0 && column + 2 + columns > width) {
      out += line + "\n";
      line.clear();
      column = 0;
    }
    if (2 + columns > width && !p.text.empty()) {
      // Wrapped after an indent as wide as "  swatch ", which then takes its place.
      const std::string wrapped = wrap_text(p.text, width, std::string(2 + lead, ' '), "    ");
      out += "  " + (p.swatch.empty() ? "" : p.swatch + " ") + wrapped.substr(2 + lead);
      continue;
    }
    line += "  " + p.swatch + (p.swatch.empty() || p.text.empty() ? "" : " ") + p.text;
    column += 2 + columns;
  }
  if (column > 0) out += line + "\n";
}

// What the colours (or glyphs) mean: the scale with its ends, then the marks
// of the cells off the scale that this step has.
void write_legend(std::string& out, const Trace& trace, const Step& step, const Range& range,
                  const RenderOptions& options, bool glyphs) {
  bool present[4] = {false, false, false, false};
  for (std::size_t i = 0; i < step.value.n_rows; ++i)
    for (std::size_t j = 0; j < step.value.n_cols; ++j)
      present[static_cast<int>(classify(trace, step, i, j))] = true;
  const ColorDepth depth = options.color;
  const auto swatch = [&](Cell kind, double t) {
    return glyphs ? heat_glyph(kind, t) : paint("  ", heat_colour(kind, t), kBlack, depth);
  };

  // The scale line: its message, with the swatches in the place of {} (the
  // global one also names its two ends).
  const std::string lo = format_fixed(range.lo.front(), options.precision);
  const std::string hi = format_fixed(range.hi.front(), options.precision);
  const auto scale_line = [&](const std::string& swatches) {
    if (!range.per_row) return tr_format("scale: {} {} {}", lo, swatches, hi);
    return range.from_zero ? tr_format("scale: 0 {} the row's highest", swatches)
                           : tr_format("scale: lowest {} highest", swatches);
  };
  // Glyphs in brackets, so that the lowest level (a space) shows; colour
  // swatches, ten where the line has room for them (the swatches on a line of
  // their own where even two do not fit).
  const std::size_t label = display_width(scale_line(""));
  const std::size_t room = options.width > label + 2 ? (options.width - label - 2) / 2 : 0;
  const bool scale_apart = !glyphs && room < 2;
  std::string scale = glyphs ? "[" : "";
  const int steps = glyphs ? 5 : static_cast<int>(std::clamp<std::size_t>(room, 2, 10));
  for (int k = 0; k < steps; ++k)
    scale += swatch(Cell::value, (k + 0.5) / static_cast<double>(steps));
  if (glyphs) scale += "]";

  std::vector<Piece> pieces;
  if (!present[static_cast<int>(Cell::value)]) {
    pieces.push_back({"", std::string(tr("scale: no cell on it"))});
  } else {
    if (scale_apart) {
      pieces.push_back({"", scale_line("…")});
      pieces.push_back({scale, ""});
    } else {
      pieces.push_back({scale_line(scale), ""});
    }
    pieces.push_back({"", std::string(range.per_row     ? tr("(each row on its own)")
                                      : range.from_zero ? tr("(from 0, no weight, to the "
                                                             "highest in this step)")
                                                        : tr("(lowest to highest in this step)"))});
  }
  if (present[static_cast<int>(Cell::masked)])
    pieces.push_back({swatch(Cell::masked, 0), std::string(tr("masked"))});
  if (present[static_cast<int>(Cell::leaked)])
    pieces.push_back(
        {swatch(Cell::leaked, 0), std::string(tr("masked, yet weighted (the fill is too small)"))});
  if (present[static_cast<int>(Cell::odd)])
    pieces.push_back({swatch(Cell::odd, 0), std::string(tr("nan or inf"))});
  write_pieces(out, pieces, options.width);
}

// ---- Labels ----------------------------------------------------------------

// A token as one line of the terminal, at most `width` columns.
std::string label(const std::string& token, std::size_t width) {
  return clip_to_width(show_controls(token), width);
}

// The labels, each with its number in front ("12 the") when another label is
// the same token: a sentence that repeats a word keeps its rows apart.
std::vector<std::string> numbered(const std::vector<std::string>& labels) {
  std::unordered_map<std::string_view, std::size_t> count;
  for (const std::string& l : labels) ++count[l];
  std::vector<std::string> out;
  out.reserve(labels.size());
  for (std::size_t i = 0; i < labels.size(); ++i)
    out.push_back(count[labels[i]] > 1 ? fmt::format("{} {}", i, labels[i]) : labels[i]);
  return out;
}

// Split `columns` (each with its width, gaps included) into runs whose widths
// add up to at most `room`; every run has at least one column.
template <typename T>
std::vector<std::vector<T>> blocks_of(const std::vector<T>& columns,
                                      const std::vector<std::size_t>& widths, std::size_t room) {
  std::vector<std::vector<T>> blocks(1);
  std::size_t used = 0;
  for (std::size_t k = 0; k < columns.size(); ++k) {
    if (!blocks.back().empty() && used + widths[k] > room) {
      blocks.emplace_back();
      used = 0;
    }
    blocks.back().push_back(columns[k]);
    used += widths[k];
  }
  return blocks;
}

// ---- Numbers -------------------------------------------------------------

using Indices = std::vector<std::optional<std::size_t>>;  // shown rows or columns, a gap nullopt

// The shown columns of numbers and their labels: each column as wide as its
// widest number or label, the labels cut to fit.
struct NumberLayout {
  std::vector<std::size_t> width;  // per column of the matrix; 0 where not shown
  std::vector<std::string> row_labels, col_labels;
  std::size_t label_width = 0;  // of the row labels
};

NumberLayout number_layout(const Step& step, const Indices& rows, const Indices& cols,
                           const RenderOptions& options) {
  const arma::mat& M = step.value;
  NumberLayout l;
  // Cells are never cut; the row labels give way (to 4 columns at the least)
  // so that one column of numbers always fits.
  std::size_t widest_number = 0;
  l.width.assign(M.n_cols, 0);
  for (const auto& c : cols) {
    if (!c) continue;
    for (const auto& r : rows)
      if (r) l.width[*c] = std::max(l.width[*c], format_fixed(M(*r, *c), options.precision).size());
    widest_number = std::max(widest_number, l.width[*c]);
  }
  const std::size_t room = options.width > 4 ? options.width - 4 : 0;  // less the two gaps
  const std::size_t label_cap = std::max<std::size_t>(
      4, std::min(options.width / 3, room > widest_number ? room - widest_number : std::size_t{4}));
  l.row_labels.resize(M.n_rows);
  l.col_labels.resize(M.n_cols);
  const std::vector<std::string> row_names = numbered(step.rows), col_names = numbered(step.cols);
  for (const auto& r : rows)
    if (r) {
      l.row_labels[*r] = label(row_names[*r], label_cap);
      l.label_width = std::max(l.label_width, display_width(l.row_labels[*r]));
    }
  for (const auto& c : cols)
    if (c) {
      l.col_labels[*c] = label(col_names[*c], std::max<std::size_t>(l.width[*c], 10));
      l.width[*c] = std::max(l.width[*c], display_width(l.col_labels[*c]));
    }
  return l;
}

// "  columns 3–5 of 12:" over a block of columns; nothing over a gap alone.
std::string columns_heading(const Indices& block, std::size_t count) {
  const auto first = std::find_if(block.begin(), block.end(), [](auto c) { return c; });
  const auto last = std::find_if(block.rbegin(), block.rend(), [](auto c) { return c; });
  if (first == block.end()) return "";
  return "  " + tr_format("columns {}–{} of {}:", **first, **last, count) + "\n";
}

// A block of columns: their labels, then every shown row's numbers, shaded
// on `range` when there is colour.
void write_number_block(std::string& out, const Trace& trace, const Step& step,
                        const NumberLayout& l, const Indices& rows, const Indices& block,
                        const Range& range, const RenderOptions& options) {
  const arma::mat& M = step.value;
  const bool shade = options.color != ColorDepth::none;
  out += "  " + std::string(l.label_width, ' ');
  for (const auto& c : block) out += "  " + (c ? pad_left(l.col_labels[*c], l.width[*c]) : "…");
  out += '\n';
  for (const auto& r : rows) {
    out += "  " + pad_right(r ? l.row_labels[*r] : "⋮", l.label_width);
    for (const auto& c : block) {
      if (!r || !c) {
        out += "  " + (c ? pad_left("⋮", l.width[*c]) : "…");
        continue;
      }
      const std::string cell = pad_left(format_fixed(M(*r, *c), options.precision), l.width[*c]);
      out += "  " + (shade ? paint_cell(cell, classify(trace, step, *r, *c),
                                        range.at(*r, M(*r, *c)), options.color)
                           : cell);
    }
    out += '\n';
  }
}

// ---- Heatmap -------------------------------------------------------------

// Where a heatmap's parts go: the row labels, the columns of the terminal a
// key takes (or, `half`, two keys to a column, in colour only), the keys of a
// block, and how often the ruler numbers a key.
struct HeatmapLayout {
  std::vector<std::string> labels;
  std::size_t label_width = 0;
  std::size_t chars = 1;
  bool half = false;
  std::size_t per_block = 1;
  std::size_t tick = 10;
};

HeatmapLayout heatmap_layout(const Step& step, const RenderOptions& options) {
  const std::size_t n = step.value.n_rows, m = step.value.n_cols;
  HeatmapLayout l;
  // Row labels "12 token", the token cut to leave the cells at least half the width.
  const std::size_t index_width = fmt::format("{}", n > 0 ? n - 1 : 0).size();
  const std::size_t label_cap = std::max<std::size_t>(index_width + 2, options.width / 4);
  l.labels.resize(n);
  for (std::size_t i = 0; i < n; ++i) {
    l.labels[i] = clip_to_width(
        fmt::format("{:>{}} {}", i, index_width, show_controls(step.rows[i])), label_cap);
    l.label_width = std::max(l.label_width, display_width(l.labels[i]));
  }
  const std::size_t room =
      options.width > l.label_width + 3 ? options.width - l.label_width - 3 : 1;
  // Columns a cell takes, or (half) two cells to a column.
  if (2 * m <= room)
    l.chars = 2;
  else if (m > room && options.color != ColorDepth::none)
    l.half = true;
  l.per_block = std::max<std::size_t>(1, l.half ? 2 * room : room / l.chars);
  l.tick = l.half ? 20 : l.chars == 2 ? 5 : 10;
  return l;
}

// A ruler over keys [start, end): the key numbers every `tick` keys, where they fit.
std::string key_ruler(const HeatmapLayout& l, std::size_t start, std::size_t end) {
  const std::size_t span = l.half ? (end - start + 1) / 2 : (end - start) * l.chars;
  std::string ruler(span, ' ');
  for (std::size_t j = start; j < end; ++j) {
    if (j % l.tick != 0) continue;
    const std::string number = fmt::format("{}", j);
    const std::size_t at = l.half ? (j - start) / 2 : (j - start) * l.chars;
    if (at + number.size() <= span) ruler.replace(at, number.size(), number);
  }
  while (!ruler.empty() && ruler.back() == ' ') ruler.pop_back();
  return ruler;
}

// Row `i` over keys [start, end): its label, then its cells as half blocks,
// coloured spaces or (without colour) glyphs.
std::string heatmap_row(const Trace& trace, const Step& step, const Range& range,
                        const HeatmapLayout& l, std::size_t i, std::size_t start, std::size_t end,
                        ColorDepth depth) {
  std::string line = "  " + pad_right(l.labels[i], l.label_width) + " ";
  const auto kind = [&](std::size_t j) { return classify(trace, step, i, j); };
  const auto t = [&](std::size_t j) { return range.at(i, step.value(i, j)); };
  if (l.half) {
    for (std::size_t j = start; j < end; j += 2) {
      const std::string left = sgr(heat_colour(kind(j), t(j)), depth, false);
      line += j + 1 < end ? fmt::format("\x1b[{};{}m▌", left,
                                        sgr(heat_colour(kind(j + 1), t(j + 1)), depth, true))
                          : fmt::format("\x1b[0;{}m▌", left);
    }
    return line + "\x1b[0m";
  }
  if (depth != ColorDepth::none) {
    for (std::size_t j = start; j < end; ++j)
      line += fmt::format("\x1b[{}m{}", sgr(heat_colour(kind(j), t(j)), depth, true),
                          std::string(l.chars, ' '));
    return line + "\x1b[0m";
  }
  for (std::size_t j = start; j < end; ++j) {
    const std::string glyph = heat_glyph(kind(j), t(j));
    for (std::size_t k = 0; k < l.chars; ++k) line += glyph;
  }
  while (!line.empty() && line.back() == ' ') line.pop_back();
  return line;
}

// The keys by number (queries are the rows, labelled above).
std::string keys_by_number(const Step& step, std::size_t width) {
  if (step.cols == step.rows)
    return wrap_text(tr("queries down, keys across: the same tokens, numbered as the rows"), width,
                     "  ", "  ");
  std::vector<std::string> keys;
  for (std::size_t j = 0; j < step.value.n_cols; ++j)
    keys.push_back(fmt::format("{} {}", j, clip_to_width(show_controls(step.cols[j]), 24)));
  return wrap_text(
      tr_format("queries down; keys across: {}", fmt::format("{}", fmt::join(keys, ", "))), width,
      "  ", "    ");
}

}  // namespace

void write_numbers(std::string& out, const Trace& trace, const Step& step,
                   const RenderOptions& options) {
  const arma::mat& M = step.value;
  const bool summarised = should_summarise(M, options.summary);
  const Indices rows = visible_indices(M.n_rows, summarised);
  const Indices cols = visible_indices(M.n_cols, summarised);
  const bool shade = options.color != ColorDepth::none;
  const Range range = shade ? range_of(trace, step, options.scale) : Range{};
  const NumberLayout layout = number_layout(step, rows, cols, options);

  if (summarised)
    out += wrap_text(tr_format("summary: {} · {}", shape_str(M.n_rows, M.n_cols),
                               format_stats(matrix_stats(M), options.precision)),
                     options.width, "  ", "    ");

  std::vector<std::size_t> gaps_and_widths;
  for (const auto& c : cols) gaps_and_widths.push_back(2 + (c ? layout.width[*c] : 1));
  const std::size_t left = 2 + layout.label_width;
  const auto blocks =
      blocks_of(cols, gaps_and_widths, options.width > left ? options.width - left : 1);
  for (const Indices& block : blocks) {
    if (blocks.size() > 1) out += columns_heading(block, M.n_cols);
    write_number_block(out, trace, step, layout, rows, block, range, options);
  }
  if (shade) write_legend(out, trace, step, range, options, false);
}

void write_heatmap(std::string& out, const Trace& trace, const Step& step,
                   const RenderOptions& options) {
  const std::size_t n = step.value.n_rows, m = step.value.n_cols;
  const Range range = range_of(trace, step, options.scale);
  const HeatmapLayout layout = heatmap_layout(step, options);
  for (std::size_t start = 0; start < m; start += layout.per_block) {
    const std::size_t end = std::min(m, start + layout.per_block);
    if (layout.per_block < m)
      out += "  " + tr_format("keys {}–{} of {}:", start, end - 1, m) + "\n";
    out += "  " + std::string(layout.label_width, ' ') + " " + key_ruler(layout, start, end) + "\n";
    for (std::size_t i = 0; i < n; ++i)
      out += heatmap_row(trace, step, range, layout, i, start, end, options.color) + "\n";
  }
  out += keys_by_number(step, options.width);
  write_legend(out, trace, step, range, options, options.color == ColorDepth::none);
}

}  // namespace attn
