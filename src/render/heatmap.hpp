// The colours of a heatmap, shared by the pictures (SVG), the page (HTML) and
// the terminal: one perceptual ramp, the ink that stays readable on it, and
// which cells the mask covers.
#pragma once

#include <string>

#include "core/trace.hpp"

namespace attn {

struct Rgb {
  double r, g, b;  // 0..255
};

// A weight in [0, 1] -> its viridis colour (dark is 0, yellow is 1), linear
// between the ramp's eleven stops; outside [0, 1] clamped, NaN as 0.
Rgb ramp(double w);

// "#rrggbb", each channel rounded to the nearest byte.
std::string hex(const Rgb& c);

// Whether dark text reads better than light text on `c` (relative luminance).
bool is_light(const Rgb& c);

// Dark text on light cells, light text on dark ones: "#000000" or "#ffffff".
const char* ink(const Rgb& c);

// The steps drawn as heatmaps: head{h}.weights, heads.mean, heads.max.
bool is_weights(const Step& step);

// Those and a decoding step's weights: every step of attention weights, each
// row one query's distribution over the keys.
bool is_any_weights(const Step& step);

// The steps whose cells the mask covers: the masked scores, their
// exponentials and the weights (not the scores before the mask).
bool shows_mask(const Step& step);

// Whether cell (i, j) of `step` is masked: the step has the trace's mask's
// shape (queries × keys) and the mask covers the cell.
bool masked_at(const Trace& trace, const Step& step, std::size_t i, std::size_t j);
// Why cell (i, j) of the trace's mask is masked, in language(): "window, stride"
// (causal, padding, keep, window, stride); empty when it is kept.
std::string mask_reason_words(const Trace& trace, std::size_t i, std::size_t j);

// Whether a masked cell of `step` kept weight (a fill too small to hide it).
bool leaks(const Trace& trace, const Step& step);

}  // namespace attn
