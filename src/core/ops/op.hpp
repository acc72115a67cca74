// What one operation of the trace means, written once: its inputs, the
// arithmetic of one cell, the terms of one cell as a person would write them,
// where its cells lie when its inputs are known only to within bounds, and its
// FLOPs. One file per op family (src/core/ops/*.cpp); op_facets() is the table.
//
// To add an operation: a value in Op (core/trace.hpp), its facets in the
// family's file, its row in op_table.cpp, and its case in every exhaustive
// switch over Op (render's formula, LaTeX and PyTorch lines, teach's errata):
// each of those fails to compile (-Werror=switch) until it is written.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

#include "core/bounds.hpp"
#include "core/expand.hpp"
#include "core/lesson.hpp"
#include "core/trace.hpp"

namespace attn {

inline constexpr std::size_t kOpCount = static_cast<std::size_t>(Op::backward) + 1;

// Cell (row, col) of the step's input number i (Operation::inputs[i]): the
// trace's own value, or a number someone wrote for it (errata, practice).
using ReadInput = std::function<double(std::size_t input, std::size_t row, std::size_t col)>;

// One cell of a step, computed from its inputs' cells.
struct CellContext {
  const Trace& trace;
  const Step& step;
  const ReadInput& read;
};

// One cell of a step, written out as its terms.
struct ExpandContext {
  const Lesson& lesson;
  const Trace& trace;
  const Step& step;
};

// The bounds of a step from the bounds of its inputs.
struct BoundsContext {
  const Trace& trace;
  const Step& step;
  const Overrides& overrides;  // the cells someone gave (verify: the learner's)
  const BoundsMap& bounds;     // of every earlier step
  const Bounds& in(std::size_t i) const { return bounds.at(step.made.inputs.at(i)); }
};

// The sizes a FLOP count is written with: the output (n×m) and the first
// input's columns k (the inner width of a product, the width of a row reduced).
struct FlopSizes {
  std::uint64_t n = 0, k = 0, m = 0;
  // The rows of the first and second inputs (the inner width of inputs[0]ᵀ·inputs[1],
  // the keys a normaliser sums over).
  std::uint64_t rows_in = 0, rows_in2 = 0;
};

struct FlopCount {
  std::uint64_t flops = 0;
  std::string formula;  // for people: "2·n·k·m = 2·5·64·7", or "no arithmetic"
};

struct OpFacets {
  Op op;
  std::string_view name;    // "matmul_t", as docs/steps.md and JSON name it
  std::string_view inputs;  // what Operation::inputs holds, in order
  // step[row, col] from its inputs' cells, as on paper.
  double (*cell)(const CellContext& c, std::size_t row, std::size_t col);
  // Fills in e's kind and terms (e.step, row, col, labels and value are set).
  void (*expand)(const ExpandContext& c, CellExpansion& e);
  // Where every cell of the step lies.
  Bounds (*bounds)(const BoundsContext& c);
  // The FLOPs that made the step, counted as on paper.
  FlopCount (*flops)(const Step& step, const FlopSizes& s);
};

// The facets of `op`.
const OpFacets& op_facets(Op op);

}  // namespace attn
