// One step's matrix for the terminal (render/text.cpp): its numbers in
// column blocks that fit the width, or a heatmap of one shaded cell per
// value; shaded with the perceptual ramp when colour is on, with a legend.
#pragma once

#include <string>

#include "core/trace.hpp"
#include "render/render.hpp"

namespace attn {

// Token-labelled numbers (statistics and corners when summarised), split into
// blocks of columns that fit options.width, each with the row labels again.
void write_numbers(std::string& out, const Trace& trace, const Step& step,
                   const RenderOptions& options);

// One shaded cell per value: 2 columns a cell where the width allows, else 1,
// else (with colour) two cells per column as the halves of "▌"; column blocks
// when even that is too wide. Queries down, keys across, listed below.
void write_heatmap(std::string& out, const Trace& trace, const Step& step,
                   const RenderOptions& options);

}  // namespace attn
