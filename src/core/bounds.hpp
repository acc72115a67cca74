// Where each cell of a trace may lie when some of its cells are known only to
// within ± a radius (a learner's written 0.45 stands for any value in
// [0.445, 0.455]): interval bounds carried through the trace's graph.
//
// Sound for the operations of the pipeline, up to floating-point rounding:
// products by midpoint-radius interval multiplication, exp and the division
// by a scale by monotonicity, and the softmax cell by cell from the lowest
// and highest values of its row (a weight grows with its own score and falls
// with every other score of its row).
#pragma once

#include <map>
#include <string>

#include "core/pipeline.hpp"
#include "core/trace.hpp"

namespace attn {

struct Bounds {
  arma::mat lo;  // the step's shape
  arma::mat hi;
};

// Step id -> the radius of each cell given (0 where none is given). Every step
// in it must also be in `overrides`, whose values are the midpoints.
using Radii = std::map<std::string, arma::mat, std::less<>>;

// The bounds of every step of `trace`, which run_pipeline computed with
// `overrides`; the cells given in `overrides` lie within `radii` of their value.
std::map<std::string, Bounds, std::less<>> trace_bounds(const Trace& trace,
                                                        const Overrides& overrides,
                                                        const Radii& radii);

}  // namespace attn
