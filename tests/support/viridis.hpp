// The heatmap colour of a weight, written here apart from src/render/heatmap.cpp
// for the tests of the SVG, HTML and terminal renderers (the C++ twin of
// tests/cli/reference.py): viridis at 0, 0.1, ..., 1, linear between the stops.
#pragma once

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <string>

namespace attn::testing {

// t in [0, 1] (clamped) -> its colour {r, g, b}, each channel rounded half up.
inline std::array<int, 3> viridis_rgb(double t) {
  static constexpr std::array<std::array<double, 3>, 11> kStops{{{68, 1, 84},
                                                                 {72, 36, 117},
                                                                 {65, 68, 135},
                                                                 {53, 95, 141},
                                                                 {42, 120, 142},
                                                                 {33, 145, 140},
                                                                 {34, 168, 132},
                                                                 {68, 191, 112},
                                                                 {122, 209, 81},
                                                                 {189, 223, 38},
                                                                 {253, 231, 37}}};
  const double x = std::clamp(t, 0.0, 1.0) * 10;
  const int i = std::min(static_cast<int>(x), 9);
  const double f = x - i;
  std::array<int, 3> rgb{};
  for (int c = 0; c < 3; ++c)
    rgb[c] =
        static_cast<int>(std::floor(kStops[i][c] + (kStops[i + 1][c] - kStops[i][c]) * f + 0.5));
  return rgb;
}

// The same as "#rrggbb".
inline std::string viridis_hex(double t) {
  const std::array<int, 3> rgb = viridis_rgb(t);
  char text[8];
  std::snprintf(text, sizeof text, "#%02x%02x%02x", rgb[0], rgb[1], rgb[2]);
  return text;
}

}  // namespace attn::testing
