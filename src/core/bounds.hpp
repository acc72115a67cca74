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

// Step id -> bounds; for the steps of `overrides`, the bounds of the cells given.
using BoundsMap = std::map<std::string, Bounds, std::less<>>;

// The bounds of every step of `trace`, which run_pipeline computed with
// `overrides`: a cell given in `overrides` lies within its `given` bounds (or
// is exact when its step has none there), every other cell within the bounds
// its operation gives from the bounds of its inputs.
BoundsMap trace_bounds(const Trace& trace, const Overrides& overrides, const BoundsMap& given);

// M exactly: lo = hi = M.
Bounds exact_bounds(const arma::mat& M);
// [A]·[B] by midpoints and radii: A·B ⊆ Am·Bm ± (|Am|·Br + Ar·|Bm| + Ar·Br).
Bounds product_bounds(const Bounds& A, const Bounds& B);
Bounds transposed_bounds(const Bounds& B);
// The row softmax of scores within S; `weights` (the softmax at the
// midpoints) stands for rows that are not a softmax (every key masked, NaN).
Bounds softmax_bounds(const Bounds& S, const arma::mat& weights);
// Each cell's square: [lo, hi] -> [lo², hi²] ordered, 0 when the interval holds 0.
Bounds square_bounds(const Bounds& B);
// A cell-by-cell product of intervals.
Bounds times_bounds(const Bounds& A, const Bounds& B);

}  // namespace attn
