// The trace: every intermediate matrix of one attention forward pass, named
// by its stable step id (docs/steps.md). Renderers and teachers only read it.
#pragma once

#include <armadillo>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/dtype.hpp"
#include "core/i18n.hpp"
#include "core/mask_pattern.hpp"
#include "core/step_id.hpp"

namespace attn {

enum class StepKind {
  input,       // X, memory
  positional,  // PE, X+PE, memory+PE
  projection,  // Q, K, V
  head_slice,  // head{h}.Q / .K / .V
  scores,
  scaled,
  masked,
  exp,      // head{h}.exp: exp of the masked scores, as on paper
  row_sum,  // head{h}.row_sum: (n,1) sums of the exponentials
  weights,
  context,
  head_summary,  // heads.mean, heads.max: the weights summarised over heads
  concat,
  output,
  residual,      // layer.residual1, layer.residual2: a sub-layer's input plus its output
  norm,          // layer.ln{1,2}.mean / .var / .normalised, and layer.ln{1,2} (γ ⊙ x̂ + β)
  ffn,           // layer.ffn.hidden, layer.ffn.activation, layer.ffn.out
  layer_output,  // layer.output: the encoder layer's result
  // Decoding with a KV cache (lesson [decode] kv_cache = true), step t, head h:
  decode_query,    // decode.t{t}.head{h}.q: row t of head{h}.Q
  decode_cache,    // decode.t{t}.head{h}.K_cache / .V_cache: rows 0..t of head{h}.K / .V
  decode_scores,   // decode.t{t}.head{h}.scores: q·K_cacheᵀ
  decode_scaled,   // decode.t{t}.head{h}.scaled: scores / s
  decode_weights,  // decode.t{t}.head{h}.weights: softmax(scaled), nothing to mask
  decode_context,  // decode.t{t}.head{h}.context: weights·V_cache
  decode_check,    // decode.head{h}.check: per step, max |decode context − head{h}.context row t|
  // Rotary and linear-bias positions (RoPE, ALiBi), head h:
  rope_rotated,      // head{h}.q_rot / .k_rot (and their _shifted copies): pairs of columns rotated
  alibi_bias,        // head{h}.alibi_bias: −m_h·|i − j|
  alibi_biased,      // head{h}.biased: scaled + alibi_bias
  rope_shift_scores, // head{h}.scores_shifted: the scores with every position shifted
  rope_shift_check,  // head{h}.shift_check: per row, max |scores_shifted − scores|
  // Efficient attention (lesson [model] tile, attention = "linear"):
  tile,    // head{h}.tile{i}_{j}.*: one block of the tiled (online) softmax
  tiled,   // head{h}.tiled_context, head{h}.tiled_check
  linear,  // head{h}.phi_q ... head{h}.linear_check: linear attention's steps
  // The backward pass (lesson [backward], docs/backward.md):
  gradient,  // grad.<id>: dL/d(a forward step); grad.head{h}.row_dot
  jacobian,  // grad.head{h}.jacobian: the softmax Jacobian of one row
};

// What made a step, so that whatever explains a cell (--expand, errata,
// diagnoses) reads the dataflow instead of knowing it by heart. `inputs` are
// ids of earlier steps of the same trace, in operand order. What each one
// means is its row of the op table (core/ops/op.hpp, which says how to add
// one); backward stays last (kOpCount counts up to it).
enum class Op {
  given,          // read from the lesson: X, memory, W_Q, b_Q, ...; no inputs
  positional,     // PE(pos, 2i) = sin(pos / 10000^(2i/d)), PE(pos, 2i+1) = cos(same)
  add_positions,  // inputs[0] + PE of its size; inputs[1] is the PE step when recorded
  matmul,         // inputs[0]·inputs[1] (+ inputs[2], a bias row added to every row)
  matmul_t,       // inputs[0]·inputs[1]ᵀ
  slice,          // columns [offset, offset + width) of inputs[0]
  rows,           // rows [offset, offset + the step's rows) of inputs[0] (a KV cache, a query)
  divide,         // inputs[0] / divisor, cell by cell
  mask,           // inputs[0] with the cells of Trace::mask replaced by fill
  exp,            // exp(inputs[0]), cell by cell
  row_sum,        // Σ_j inputs[0][i, j]: one column
  softmax,        // row softmax of inputs[0]; = inputs[1] / inputs[2] (exp, row_sum) when the
                  // trace records those (head{h}.weights; a decoding step's weights do not)
  mean,           // the inputs' mean, cell by cell
  max,            // the inputs' max, cell by cell
  concat,         // the inputs side by side
  add,            // inputs[0] + inputs[1], cell by cell (a residual connection)
  row_mean,       // the mean of each row of inputs[0]: one column
  row_var,        // the biased variance of each row of inputs[0] about inputs[1] (its row mean)
  normalise,      // (inputs[0] − inputs[1]) / √(inputs[2] + eps): row, mean, variance
  scale_shift,    // inputs[1] ⊙ inputs[0] + inputs[2]: each column scaled by γ, shifted by β
  relu,           // max(0, inputs[0]), cell by cell
  gelu,           // inputs[0]·Φ(inputs[0]) = x·(1 + erf(x/√2))/2, cell by cell (exact GELU)
  identity,       // inputs[0] as it is (layer.output names the layer's result)
  efficient,      // tiles and linear attention: Operation::efficient says which
  max_abs_diff,   // row t: max_j |inputs[1 + t][0, j] − inputs[0][t, j]|: one column
  // RoPE and ALiBi (docs/steps.md); kOpCount counts up to the last of these.
  rotate,         // pairs (2i, 2i+1) of inputs[0]'s row p rotated by (p + offset)·10000^(−2i/d)
  alibi,          // −slope·|i − j|: no inputs
  row_max_abs_diff,  // row i: max_j |inputs[1][i, j] − inputs[0][i, j]|: one column
  backward,       // a gradient step: Σ of Operation::vjps, each reading its own inputs
};

// One term of a gradient step (Op::backward): the part of dL/dx that flows
// back through one consumer y = f(x, …) of x, as a vector-Jacobian product.
// It reads Operation::inputs[first], [first + 1], … in the order listed; G is
// dL/dy (the consumer's gradient step). core/ops/backward.cpp defines each.
enum class VjpKind {
  matmul_left,     // y = x·B (+ b):   G, B     -> G·Bᵀ
  matmul_right,    // y = A·x (+ b):   A, G     -> Aᵀ·G
  bias,            // y = A·B + x, y = γ⊙x̂ + x: G -> Σ_i G[i, c] (one row)
  matmul_t_left,   // y = x·Bᵀ:        G, B     -> G·B
  matmul_t_right,  // y = A·xᵀ:        G, A     -> Gᵀ·A
  unslice,         // y = x[:, offset:]: G      -> G in columns [offset, offset + width), 0 elsewhere
  concat_part,     // y = [… | x | …]: G        -> G[:, offset:offset + width]
  divide,          // y = x / divisor: G        -> G / divisor
  mask,            // y = x masked:    G        -> G, 0 at masked cells (Trace::mask)
  softmax,         // y = softmax(x):  G, y, D  -> y ⊙ (G − D) (D = grad.head{h}.row_dot)
  same,            // y = x + z, y = x: G       -> G
  row_mean,        // y = mean of x's row: G    -> G[r] / divisor (divisor = the row's width)
  row_var_x,       // y = Σ(x − μ)²/d about μ: G, x, μ -> 2(x − μ)/d · G[r]
  row_var_mean,    //                  G, x, μ  -> −2 Σ_j (x[r,j] − μ[r])/d · G[r]
  normalise_x,     // x̂ = (x − μ)/√(v + eps): G, v -> G / √(v + eps)
  normalise_mean,  //                  G, v     -> −Σ_j G[r,j] / √(v + eps)
  normalise_var,   //                  G, x, μ, v -> −½ Σ_j G[r,j](x[r,j] − μ[r])(v + eps)^(−3/2)
  scale_x,         // y = γ ⊙ x + β:   G, γ     -> G ⊙ γ
  scale_gamma,     //                  G, x     -> Σ_i G[i,c]·x[i,c] (one row)
  relu,            // y = max(0, x):   G, x     -> G where x > 0, else 0
  gelu,            // y = x·Φ(x):      G, x     -> G·(Φ(x) + x·φ(x))
  rotate,          // y = x rotated:   G        -> G rotated back (−angle), offset as forward
  half_sq,         // L = ½‖y − T‖²:   y, T     -> y − T (the seed of the backward pass)
  row_dot,         // D = Σ_k G[r,k]·A[r,k]:   G, A -> one column
  jacobian,        // J of row `offset`:        A    -> A[r,i](δ_ij − A[r,j])
};

struct Vjp {
  VjpKind kind = VjpKind::same;
  std::size_t first = 0;     // its first input in Operation::inputs
  std::size_t offset = 0;    // unslice, concat_part: the column; rotate: the position shift;
                             // jacobian: the row
  double divisor = 1.0;      // divide: the scale; row_mean, row_var_*: the row's width
  double eps = 0.0;          // normalise_*
  std::size_t inner = 0;     // a product's or a sum's length per cell (its FLOPs)
  std::string of{};          // the forward step it goes back through ("Q", "head0.weights")
};

// The operations of the tiled (online) softmax, one query block i and key
// block j at a time (core/ops/tiles.cpp), and of linear attention
// (core/ops/linear.cpp): all Op::efficient, told apart here. m_old, ℓ_old,
// O_old are the previous key block's (absent for key block 0: −inf, 0, 0).
enum class EfficientOp {
  tile_block,    // rows [offset, +r), columns [col_offset, +c) of inputs[0] (a block of scores)
  running_max,   // max(inputs[1][i] (m_old), max_j inputs[0][i, j]): one column
  rescale,       // exp(inputs[1] (m_old) − inputs[0] (m_new)); 1 where m_new = −inf
  running_sum,   // α·ℓ_old + Σ_j exp(S[i,j] − m[i]): inputs S, m, α [, ℓ_old]
  running_acc,   // α·O_old + Σ_j exp(S[i,j] − m[i])·V[col_offset + j, c]: S, m, α, V [, O_old]
  divide_rows,   // row i of inputs[2b] / inputs[2b+1][i], the pairs' rows stacked
  row_diff,      // max_j |inputs[0][i, j] − inputs[1][i, j]|: one column
  elu_plus_one,  // elu(x) + 1 = x + 1 for x > 0, exp(x) otherwise, cell by cell
  matmul_tn,     // inputs[0]ᵀ·inputs[1]
  normaliser,    // φ(q_i)·Σ_j φ(k_j): inputs φ(Q), φ(K); one column
};

struct Operation {
  Op op = Op::given;
  std::vector<std::string> inputs;
  std::size_t offset = 0;  // slice: the first column taken; rows: the first row taken
  double divisor = 1.0;    // divide
  double fill = 0.0;       // mask: the value a masked cell gets
  double eps = 0.0;        // normalise: added to the variance under the root
  double slope = 0.0;      // alibi: the head's slope m_h
  std::size_t col_offset = 0;  // tile_block: the first column; running_acc: V's first row
  EfficientOp efficient = EfficientOp::tile_block;  // Op::efficient: which of them
  std::vector<Vjp> vjps{};  // Op::backward: the terms summed, in order (one per consumer)
};

struct Step {
  StepId step_id;    // which step: family, head, decoding step, part
  std::string id;    // step_id printed, stable: "head0.scores" (JSON, lookups)
  std::string name;  // for people, in English (JSON): "Scores"
  Message title;     // the same, to show in either language (step_display_name)
  StepKind kind = StepKind::input;
  int head = -1;      // step_id.head(): -1 for steps that are not per head
  int decoding = -1;  // step_id.decoding(): a KV-cache decoding step's token t; -1 for the others
  Operation made;     // how it was computed, from which steps
  arma::mat value;
  std::vector<std::string> rows;  // one label per row (tokens)
  std::vector<std::string> cols;  // one label per column (tokens or d0, d1, ...)
};

// A given one-row parameter (b_Q, ln1_gamma, ...): its cells are named by
// column only, "b_Q[d1]".
bool is_row_parameter(const Step& step);

// The step's name in the process-wide language (--lang): "Scores", "分数".
std::string step_display_name(const Step& step);

// Why a score cell is masked: bit flags, several may be set.
enum MaskReason : unsigned {
  mask_causal = 1u,   // key after the query
  mask_padding = 2u,  // the key is padding
  mask_keep = 4u,     // the keep matrix has 0 there
  // Mask patterns ([model] window, global, stride; core/mask_pattern.hpp):
  mask_window = 8u,   // the key is farther from the query than the window
  mask_stride = 16u,  // the key is not a stride key (and outside the window)
};

// Something about a trace a person should know: a fully masked row, a fill
// that does not mask. Shown in either language (text.shown()); JSON and the
// documents write it in English (text.in(Language::en)).
struct Warning {
  std::optional<StepId> step;  // the step it is about; none for the whole lesson
  Message text;
};

bool operator==(const Warning& a, const Warning& b);

struct Trace {
  std::string lesson_id;
  std::string backend;
  std::vector<std::string> host_steps;  // steps computed on the host although the backend is another
  std::vector<Step> steps;
  std::vector<Warning> warnings;
  arma::umat mask;           // (n, m) MaskReason bits; 0 = may attend
  MaskPattern mask_pattern;  // the lesson's window, global, stride (and causal) that made it
  double scale = 1.0;        // the divisor of head{h}.scaled
  Dtype dtype = Dtype::f64;  // the number format it ran in (docs/numerics.md)

  const Step* find(std::string_view id) const;
  const Step* find(const StepId& id) const;
  // The step id a person means by `name` (parse_step_id): an id as it is, or
  // a per-head step's short name for head 0 ("weights" -> "head0.weights", as
  // exercise sheets write them). `name` itself when no step has it.
  std::string id_of(std::string_view name) const;
  // The step `step` read as its input number `i` (Operation::inputs).
  const Step& input(const Step& step, std::size_t i) const { return at(step.made.inputs.at(i)); }
  // Throws InputError listing the valid ids when `id` is not a step.
  const Step& at(std::string_view id) const;
  std::vector<std::string> ids() const;
};

// The trace's warnings in the process-wide language, in the order of `warnings`.
std::vector<std::string> shown_warnings(const Trace& trace);
// The same in English: what JSON and the documents write.
std::vector<std::string> english_warnings(const Trace& trace);

}  // namespace attn
