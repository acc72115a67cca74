// The arithmetic of one cell at a step, as a structure (no text): what
// `run --expand R,C` shows at every step, verify shows for a wrong answer, and
// an answer key shows for a worked cell. Printers: render/render.hpp's
// expansion_text / expansion_markdown / expansion_latex / expansion_json.
//
// Usage:
//   const CellExpansion e = expand_cell(lesson, trace, "head0.scores", 0, 1);
//   std::string line = expansion_text(e, 4);   // "0.69×0.66 + 0.50×0.54 + … = 1.6755"
//   for (const CellExpansion& e : expand_all(lesson, trace, 0, 1)) ...
//
// What each kind fills in (besides step, row, col, labels and value):
//   input       nothing more: a number of the lesson (X, memory)
//   positional  position, pair_index (i), width (d), cosine, angle = pos / 10000^(2i/d)
//   add         sources = {X[r,c], PE[r,c]} (or memory and its PE), source_values
//   product     sum: the sum of products of core/cell_arithmetic.hpp
//   slice       sources = {the projection's cell}, source_values (head{h}.Q/K/V)
//   divide      sources = {head{h}.scores[r,c]}, source_values, scale_kind, d_k, divisor
//   mask        sources = {head{h}.scaled[r,c]}, source_values, mask_reasons (0 = kept), fill
//   exp         sources = {head{h}.masked[r,c]}, source_values
//   row_sum     row_values = the row's exponentials (head{h}.exp), value = their sum
//   softmax     row_values = the masked row, row_max, exps = the row of head{h}.exp and
//               denominator = head{h}.row_sum, as on paper (value = exps[col] / denominator);
//               shifted when exp() overflows or underflows: exps = exp(x_k − row_max);
//               note says why the stable shift changes nothing (or why a masked row is
//               not a softmax)
//   concat      sources = {head{h}.context[r,c']}, source_values
//   add         (a residual sum, Op::add) sources = {input[r,c], sub-layer output[r,c]}
//   row_mean    row_values = the row of the LayerNorm's input, value = their mean
//   row_var     row_values = that row, mean = its row mean
//   normalise   sources = {x[r,c], mean[r], var[r]}, source_values, eps
//   scale_shift sources = {x̂[r,c], γ[c], β[c]}, source_values
//   activation  sources = {layer.ffn.hidden[r,c]}, source_values, gelu (false: ReLU)
//   copy        sources = {the step it names[r,c]}, source_values (layer.output; a decoding
//               step's query or cache: the row of head{h}.Q, .K or .V it is)
//   max_abs_diff row_values = decoding step r's context, compare_values = row r of
//               head{h}.context, sources = their first cells; value = max_j |difference|
//               (head{h}.shift_check: row r of scores_shifted against row r of scores)
//   rotate      sources = {x[r,2i], x[r,2i+1]}, source_values, position (p + shift),
//               pair_index (i), width (d_k), cosine (true: the second of the pair),
//               angle = position·10000^(−2i/d_k)
//   alibi       slope (m_h), position (the query i); col is the key j
//   expression  expression = the cell's arithmetic as pieces (numbers, operators, the
//               cells it reads, words), first by name then by number (tiles and linear
//               attention: core/ops/tiles.cpp, core/ops/linear.cpp); sources = the cells read
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/cell_arithmetic.hpp"
#include "core/lesson.hpp"
#include "core/trace.hpp"

namespace attn {

enum class ExpansionKind {
  input,
  positional,
  add,
  product,
  slice,
  divide,
  mask,
  exp,
  row_sum,
  softmax,
  concat,
  head_mean,     // heads.mean: (A₀ + …) / h of one cell
  head_max,      // heads.max: max(A₀, …) of one cell
  row_mean,      // layer.ln{k}.mean
  row_var,       // layer.ln{k}.var
  normalise,     // layer.ln{k}.normalised
  scale_shift,   // layer.ln{k}: γ × x̂ + β
  activation,    // layer.ffn.activation: ReLU or GELU of one cell
  copy,          // layer.output: the cell of the step it names
  max_abs_diff,  // decode.head{h}.check: max_j |decoded[j] − full[j]| of one row
  rotate,        // head{h}.q_rot / .k_rot: one cell of a rotated pair
  alibi,         // head{h}.alibi_bias: −m_h·|i − j|
  expression,    // tiled softmax and linear attention: the arithmetic as ExprPiece's
};

// One piece of an `expression` expansion: a number, an operator or function
// symbol, a cell it reads, or words. The printers choose the notation.
struct ExprPiece {
  enum class Kind { number, symbol, ref, words };
  Kind kind = Kind::number;
  double value = 0.0;  // number
  // symbol: one of "+", "−", "×", "/", "(", ")", ",", "=", "|", "exp(", "max(",
  // "elu(", "Σ"; words: an English msgid, translated when printed.
  std::string text;
  OperandRef ref;  // ref
};

// "input", "positional", ... : the JSON name of a kind.
std::string_view expansion_kind_name(ExpansionKind kind);

struct CellExpansion {
  ExpansionKind kind = ExpansionKind::input;
  std::string step;
  StepId step_id;  // the same step, as a type
  std::size_t row = 0;
  std::size_t col = 0;
  std::string row_label;  // token of the row
  std::string col_label;  // key token or feature label (d0, ...)
  double value = 0.0;     // the step's cell, as the trace has it

  std::optional<CellSum> sum;         // product
  std::vector<OperandRef> sources;    // add, slice, divide, mask, exp, concat
  std::vector<double> source_values;  // one per source

  ScaleKind scale_kind = ScaleKind::sqrt_dk;  // divide
  std::size_t d_k = 0;                        // divide
  double divisor = 1.0;                       // divide

  unsigned mask_reasons = 0;  // mask: MaskReason bits; 0 = kept
  MaskPattern pattern;        // mask: the window / stride the reasons mask_window, mask_stride name
  double fill = 0.0;          // mask: the value a masked cell gets

  std::size_t position = 0;    // positional: the token's position
  std::size_t pair_index = 0;  // positional: i of 2i / 2i+1
  std::size_t width = 0;       // positional: d
  bool cosine = false;         // positional: odd column -> cos
  double angle = 0.0;          // positional: pos / 10000^(2i/d); rotate: p·θ_i
  double slope = 0.0;          // alibi: m_h

  std::vector<double> row_values;      // row_sum, softmax, max_abs_diff (the decoded row)
  std::vector<double> compare_values;  // max_abs_diff: the full computation's row
  double row_max = 0.0;                // softmax
  std::vector<double> exps;            // softmax: the exponentials divided
  bool shifted = false;                // softmax: exps are exp(x − row_max)
  bool given_exps = false;             // softmax: E and Σ are given, not exp(x): sources = {E, Σ}
  double denominator = 0.0;            // softmax
  std::string note;                    // softmax: a remark for people, or empty (English; tr() it)

  double mean = 0.0;  // row_var: the row mean the squares are taken about
  double eps = 0.0;   // normalise
  bool gelu = false;  // activation: GELU (else ReLU)

  std::vector<ExprPiece> expression;  // expression
  // expression, when it is a sum: each summed term's value, in order (a
  // gradient step's terms), so that a hint can multiply them out.
  std::vector<double> term_values;
};

// Builders of an `expression` expansion (core/ops/tiles.cpp, linear.cpp).
void add_number(CellExpansion& e, double value);
void add_symbol(CellExpansion& e, std::string symbol);
void add_words(CellExpansion& e, std::string msgid);
// The cell (row, col) of `step` as a name, also added to e.sources.
void add_ref(CellExpansion& e, const Step& step, std::size_t row, std::size_t col);

// The arithmetic of `step`[row, col]. A step with one column (head{h}.row_sum)
// is expanded at column 0 whatever `col` is. Throws InputError for an unknown
// step or a cell outside the step (the message gives the shape).
CellExpansion expand_cell(const Lesson& lesson, const Trace& trace, std::string_view step,
                          std::size_t row, std::size_t col);

// The cell (row, col) at every step of the trace that has it, in trace order
// (steps too small for it are skipped). Throws InputError when no step has it.
std::vector<CellExpansion> expand_all(const Lesson& lesson, const Trace& trace, std::size_t row,
                                      std::size_t col);

// True when `step` has the cell (row, col) as expand_cell reads it.
bool has_cell(const Step& step, std::size_t row, std::size_t col);

}  // namespace attn
