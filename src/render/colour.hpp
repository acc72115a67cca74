// Colours shared by the renderers that draw heatmaps (SVG, the terminal):
// one perceptual ramp, and which cells of a step the mask hides.
#pragma once

#include <string>

#include "core/trace.hpp"

namespace attn {

struct Rgb {
  double r, g, b;  // 0..255
};

// Viridis from t = 0 (dark purple) to t = 1 (yellow), linear between eleven
// stops: perceptually uniform, readable in grey and by the colour-blind.
// t outside [0, 1] is clamped.
Rgb ramp(double t);

// "#rrggbb"
std::string hex(const Rgb& c);

// Whether dark text reads better than light text on `c` (relative luminance).
bool is_light(const Rgb& c);

// Whether cell (i, j) of `step` is one the mask hides: the step is
// queries × keys (the shape of Trace::mask) and the mask is set there.
bool masked_at(const Trace& trace, const Step& step, std::size_t i, std::size_t j);

}  // namespace attn
