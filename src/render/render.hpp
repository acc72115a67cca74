// Renderers read a trace and write it out; they never compute attention.
// A new output format is one new file here plus one line in run.cpp.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "core/expand.hpp"
#include "core/lesson.hpp"
#include "core/trace.hpp"
#include "render/numbers.hpp"

namespace attn {

// Colour in the terminal: none, the 256-colour palette, or 24-bit RGB
// (where COLORTERM says the terminal has it).
enum class ColorDepth { none, palette256, truecolor };

// What a heatmap colour spans: the step's lowest to highest value, or each
// row's own (the masked cells and non-finite values left out); automatic is
// row for attention weights (each row is one query's distribution over the
// keys) and global for every other step.
enum class ShadeScale { automatic, global, row };

// Text shows every step's numbers, or (heatmap) one shaded cell per
// attention weight, so a 64- or 128-token pattern fits on a screen.
enum class TextView { numbers, heatmap };

struct RenderOptions {
  int precision = 4;                         // decimals shown in text, markdown, latex
  ColorDepth color = ColorDepth::none;       // text: shade the cells
  ShadeScale scale = ShadeScale::automatic;  // text: what a colour spans
  TextView view = TextView::numbers;         // text
  std::size_t width = 80;                    // text: no line is wider (in columns)
  Summary summary = Summary::automatic;      // on: also the FLOPs of every step
  std::vector<std::string> steps;            // only these step ids (empty: all)
  std::optional<std::size_t> head;           // only this head's per-head steps
  std::vector<CellExpansion> expansions;     // run --expand: one cell at every step
};

// Matrices with more rows or columns than this are summarised automatically.
inline constexpr std::size_t kSummaryThreshold = 16;

// The steps to show, in trace order. Throws InputError for an unknown step
// id (listing the valid ones) or a head the lesson does not have.
std::vector<const Step*> select_steps(const Trace& trace, const RenderOptions& options);

std::string render_text(const Lesson& lesson, const Trace& trace, const RenderOptions& options);
std::string render_json(const Lesson& lesson, const Trace& trace, const RenderOptions& options);
std::string render_markdown(const Lesson& lesson, const Trace& trace, const RenderOptions& options);
std::string render_latex(const Lesson& lesson, const Trace& trace, const RenderOptions& options);
// The weights steps among the chosen ones as SVG heatmaps (InputError when
// none is a weights step).
std::string render_svg(const Lesson& lesson, const Trace& trace, const RenderOptions& options);
// One self-contained HTML page (docs/html.md): every step with its formula in
// MathML and its values, the weights as heatmaps, and every shown cell's
// arithmetic, readable without JS and shown by a click with it.
std::string render_html(const Lesson& lesson, const Trace& trace, const RenderOptions& options);
// One runnable Python script that rebuilds every step of `trace` with
// PyTorch in float64 and asserts each equals the trace's value (docs/pytorch.md);
// also through nn.MultiheadAttention where the lesson fits it. `trace` must be
// computed in f64; `lesson` is the lesson as written (its dtype is named).
std::string render_pytorch(const Lesson& lesson, const Trace& trace);

// One cell's arithmetic (render/expansion.cpp), numbers to `precision` decimals:
// text "head0.scores[river,bank] = … = 0.69×0.66 + … = 1.6755" (a softmax adds a
// second line with its note); Markdown in a code span; LaTeX as math without
// delimiters (the caller sets it inline or shrunk to the line);
// JSON an object {"step", "cell", "kind", "value", "text", and the kind's numbers}.
std::string expansion_text(const CellExpansion& e, int precision);
std::string expansion_markdown(const CellExpansion& e, int precision);
std::string expansion_latex(const CellExpansion& e, int precision);
std::string expansion_json(const CellExpansion& e, int precision);
// A number as one writes it by hand: up to `max_decimals`, trailing zeros
// dropped but two decimals kept (0.5 -> "0.50", 1.67550 -> "1.6755").
std::string format_by_hand(double value, int max_decimals);
// The expansion of `step_id` among options.expansions, or null.
const CellExpansion* expansion_for(const RenderOptions& options, const std::string& step_id);

}  // namespace attn
