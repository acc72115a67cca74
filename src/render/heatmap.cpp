// The heatmap colours (render/heatmap.hpp): viridis, its ink, the mask's cells.
#include "render/heatmap.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>

namespace attn {

namespace {

// Viridis at 0, 0.1, ..., 1: perceptually uniform, readable in grey and by
// the colour-blind; dark is 0, yellow is 1.
constexpr std::array<Rgb, 11> kViridis{{{68, 1, 84},
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

}  // namespace

Rgb ramp(double w) {
  const double x = (std::isnan(w) ? 0.0 : std::clamp(w, 0.0, 1.0)) * 10.0;
  const std::size_t i = std::min<std::size_t>(static_cast<std::size_t>(x), 9);
  const double t = x - static_cast<double>(i);
  const Rgb& a = kViridis[i];
  const Rgb& b = kViridis[i + 1];
  return {a.r + (b.r - a.r) * t, a.g + (b.g - a.g) * t, a.b + (b.b - a.b) * t};
}

std::string hex(const Rgb& c) {
  const auto byte = [](double v) {
    return static_cast<int>(std::lround(std::clamp(v, 0.0, 255.0)));
  };
  return fmt::format("#{:02x}{:02x}{:02x}", byte(c.r), byte(c.g), byte(c.b));
}

bool is_light(const Rgb& c) {
  return 0.2126 * c.r + 0.7152 * c.g + 0.0722 * c.b > 140;
}

const char* ink(const Rgb& c) {
  return is_light(c) ? "#000000" : "#ffffff";
}

bool is_weights(const Step& step) {
  return step.kind == StepKind::weights || step.kind == StepKind::head_summary;
}

bool is_any_weights(const Step& step) {
  return is_weights(step) || step.kind == StepKind::decode_weights;
}

bool shows_mask(const Step& step) {
  return step.kind == StepKind::masked || step.kind == StepKind::exp || is_weights(step);
}

bool masked_at(const Trace& trace, const Step& step, std::size_t i, std::size_t j) {
  return trace.mask.n_rows == step.value.n_rows && trace.mask.n_cols == step.value.n_cols &&
         trace.mask(i, j) != 0u;
}

bool leaks(const Trace& trace, const Step& step) {
  for (std::size_t i = 0; i < step.value.n_rows; ++i)
    for (std::size_t j = 0; j < step.value.n_cols; ++j)
      if (masked_at(trace, step, i, j) && step.value(i, j) > 0.0) return true;
  return false;
}

std::string mask_reason_words(const Trace& trace, std::size_t i, std::size_t j) {
  static const std::pair<unsigned, const char*> kWords[] = {
      {mask_causal, N_("causal")}, {mask_padding, N_("padding")}, {mask_keep, N_("keep")},
      {mask_window, N_("window")}, {mask_stride, N_("stride")}};
  if (i >= trace.mask.n_rows || j >= trace.mask.n_cols) return "";
  std::string out;
  for (const auto& [bit, word] : kWords)
    if (trace.mask(i, j) & bit)
      out += std::string(out.empty() ? "" : tr(", ")) + std::string(tr(word));
  return out;
}

}  // namespace attn
