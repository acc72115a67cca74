// The arithmetic of one cell of a product step, as one writes it on paper: a
// sum of products (plus a bias), read from the trace's dataflow.
//
// A step made by Op::matmul (Q, K, V, head{h}.context, output) has cell (i,c) =
// Σ_k in0[i,k] × in1[k,c] (+ in2[c], the bias); Op::matmul_t (head{h}.scores)
// has Σ_k in0[i,k] × in1[c,k]. A head slice (head{h}.Q/K/V) is its
// projection's cell at column offset + c. Every other step is not a sum of
// products: cell_sum returns nullopt for it. Operands are read from the trace,
// so a trace run with overrides (carried-forward credit) gives the arithmetic
// on the overridden values.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/trace.hpp"

namespace attn {

// One number used in a sum: where it lives. `step` is a step id of the trace
// ("X", "W_K", "head0.K", "b_Q"); row/col index that matrix (a bias is row 0).
struct OperandRef {
  std::string step;
  std::size_t row = 0;
  std::size_t col = 0;
  std::string label;  // for people: "head0.K[bank,d3]", "W_K[d2,d3]", "b_Q[d1]"
};

// left × right, e.g. head0.Q[river,d0] × head0.K[bank,d0].
struct ProductTerm {
  double left = 0.0;
  double right = 0.0;
  OperandRef left_ref;
  OperandRef right_ref;
  double product() const { return left * right; }
};

// The cell `step`[row, col] = Σ terms (+ bias) = value (the trace's value).
struct CellSum {
  std::string step;
  std::size_t row = 0;
  std::size_t col = 0;
  bool transposed = false;  // right operand read by rows (Q·Kᵀ)
  std::vector<ProductTerm> terms;
  std::optional<double> bias;
  OperandRef bias_ref;  // meaningful only when `bias` is set
  double value = 0.0;
};

// The sum of products behind `step`[row, col]; nullopt when the step is not a
// product step (see above). Throws InputError for an unknown step id or a cell
// outside the step's matrix (the message gives its shape).
std::optional<CellSum> cell_sum(const Trace& trace, std::string_view step, std::size_t row,
                                std::size_t col);

// `step`[row, col] as people read it: "head0.K[bank,d3]"; a one-row parameter
// (a bias, a LayerNorm γ or β) "b_Q[d1]".
OperandRef operand_ref(const Step& step, std::size_t row, std::size_t col);

// Throws InputError "cell [r, c] is outside step S, which is 4×4 (rows 0 to 3, ...)".
void require_cell(const Step& step, std::size_t row, std::size_t col);

}  // namespace attn
