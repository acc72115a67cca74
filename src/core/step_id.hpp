// Step ids as a type: which matrix of the trace a step is (its family, head,
// decoding step and part), built and printed here and nowhere else
// (docs/steps.md lists them). parse_step_id is the one reader of an id a
// person wrote: run --step, an answers file, an exercise's --ask, a claim.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace attn {

// What kind of step an id names, and so which enum its part is (in brackets).
enum class StepFamily {
  given,         // [Given] a matrix of the lesson: X, memory, W_Q, b_Q, ..., ln1_gamma, W_1
  positional,    // [Positional] PE, X+PE, memory+PE
  projection,    // [Projection] Q, K, V, and output = concat·W_O
  head,          // [HeadStep] head{h}.Q ... head{h}.context
  heads,         // [HeadSummary] heads.mean, heads.max: the weights summarised over heads
  concat,        // concat: the heads' contexts side by side (no part)
  layer,         // [LayerStep] layer.residual1 ... layer.output: the encoder layer
  decode,        // [DecodeStep] decode.t{t}.head{h}.q ... .context: one KV-cache decoding step
  decode_check,  // decode.head{h}.check: decoding against the full computation (no part)
  head_position,  // [PositionStep] head{h}.q_rot ... head{h}.shift_check: RoPE and ALiBi
  // Efficient attention (docs/steps.md, "Tiled softmax" and "Linear attention"):
  tile,    // [TileStep] head{h}.tile{i}_{j}.scores ... .acc: query block i, key block j
  tiled,   // [TiledStep] head{h}.tiled_context, head{h}.tiled_check
  linear,  // [LinearStep] head{h}.phi_q ... head{h}.linear_check
  // The backward pass (docs/backward.md, lesson [backward]):
  gradient,  // grad.<forward id>: dL/d(that step), the forward step's shape (forward())
  backward,  // [BackwardStep] grad.head{h}.row_dot, grad.head{h}.jacobian: the softmax's helpers
};

// The matrices a lesson gives, in the order a trace records them.
enum class Given {
  X,
  memory,
  W_Q,
  b_Q,
  W_K,
  b_K,
  W_V,
  b_V,
  W_O,
  b_O,
  ln1_gamma,
  ln1_beta,
  ln2_gamma,
  ln2_beta,
  W_1,
  b_1,
  W_2,
  b_2,
  target,  // [backward] loss = "half_sq": the output the loss compares with
};

enum class Positional { PE, X_PE, memory_PE };  // "PE", "X+PE", "memory+PE"

enum class Projection { Q, K, V, output };

// The per-head steps, in pipeline order: head{h}.scores, ...
enum class HeadStep { Q, K, V, scores, scaled, masked, exp, row_sum, weights, context };

enum class HeadSummary { mean, max };  // "heads.mean", "heads.max"

// The encoder layer's own steps (lesson [layer]), in Post-LN order. Pre-LN
// records the same ids in another order (docs/steps.md).
enum class LayerStep {
  residual1,
  ln1_mean,
  ln1_var,
  ln1_normalised,
  ln1,
  ffn_hidden,
  ffn_activation,
  ffn_out,
  residual2,
  ln2_mean,
  ln2_var,
  ln2_normalised,
  ln2,
  output,
};

// The steps of decoding token t with a KV cache (lesson [decode]), per head,
// in the order each decoding step records them.
enum class DecodeStep { q, K_cache, V_cache, scores, scaled, weights, context };

// The per-head steps of rotary (RoPE) and linear-bias (ALiBi) positions, in
// the order a head records them (docs/steps.md): q_rot and k_rot feed
// head{h}.scores; alibi_bias and biased (= scaled + alibi_bias) feed
// head{h}.masked; the shifted steps recompute the scores with every position
// moved by [model] rope_shift, and shift_check is their distance to the scores.
enum class PositionStep {
  q_rot,
  k_rot,
  alibi_bias,
  biased,
  q_rot_shifted,
  k_rot_shifted,
  scores_shifted,
  shift_check,
};

// The online softmax of one query block i over key block j (lesson [model]
// tile): the block's scores, the running max, the rescale factor, the running
// sum and the rescaled accumulator, in the order each block records them.
enum class TileStep { scores, m, rescale, l, acc };

// A head's tiled result, O/ℓ, and its distance from head{h}.context.
enum class TiledStep { context, check };

// Linear attention's steps (lesson [model] attention = "linear"), in the order
// a head records them; head{h}.context is the head's result (a HeadStep).
enum class LinearStep {
  phi_q,                // φ(Q) = elu(Q) + 1
  phi_k,                // φ(K)
  kv,                   // φ(K)ᵀ·V: (d_k, d_v)
  normaliser,           // φ(q_i)·Σ_j φ(k_j): (n, 1)
  numerator,            // φ(Q)·(φ(K)ᵀV): (n, d_v)
  similarity,           // φ(Q)·φ(K)ᵀ: (n, m), the other order
  weights,              // similarity / normaliser: the weights linear attention implies
  quadratic_numerator,  // (φ(Q)φ(K)ᵀ)·V: (n, d_v)
  check,                // per row, max |numerator − quadratic_numerator|
};

// The backward pass's own per-head steps (docs/backward.md): the row dot
// D_i = Σ_k dA[i,k]·A[i,k] that the softmax's gradient subtracts, and the
// softmax Jacobian of one row, J[i,j] = ∂A[r,i]/∂S[r,j] = A[r,i](δ_ij − A[r,j]).
enum class BackwardStep { row_dot, jacobian };

// One step id. Made by the named constructors only, so that every field agrees
// with the family; read the part with the accessor of the family's enum.
class StepId {
 public:
  StepId() = default;  // X
  static StepId given(Given part);
  static StepId positional(Positional part);
  static StepId projection(Projection part);
  static StepId head_step(std::size_t head, HeadStep part);
  static StepId heads(HeadSummary part);
  static StepId concat();
  static StepId layer(LayerStep part);
  static StepId decode(std::size_t t, std::size_t head, DecodeStep part);
  static StepId decode_check(std::size_t head);
  static StepId position(std::size_t head, PositionStep part);
  static StepId tile(std::size_t head, std::size_t query_block, std::size_t key_block,
                     TileStep part);
  static StepId tiled(std::size_t head, TiledStep part);
  static StepId linear(std::size_t head, LinearStep part);
  // grad.<forward's id>: the gradient of the loss with respect to `forward`.
  static StepId gradient(const StepId& forward);
  static StepId backward(std::size_t head, BackwardStep part);

  StepFamily family() const { return family_; }
  // The head of a head, decode, decode_check or head_position step; -1 for the others.
  int head() const { return head_; }
  // The token t of a decode step; -1 for the others.
  int decoding() const { return decoding_; }
  // The query block i and key block j of a tile step; -1 for the others.
  int query_block() const { return query_block_; }
  int key_block() const { return key_block_; }

  // The part, as its family's enum; std::logic_error for another family.
  Given given_part() const;
  Positional positional_part() const;
  Projection projection_part() const;
  HeadStep head_part() const;
  HeadSummary heads_part() const;
  LayerStep layer_part() const;
  DecodeStep decode_part() const;
  PositionStep position_part() const;
  TileStep tile_part() const;
  TiledStep tiled_part() const;
  LinearStep linear_part() const;
  BackwardStep backward_part() const;
  // The forward step a gradient step is of; std::logic_error for another family.
  StepId forward() const;
  bool is_gradient() const { return family_ == StepFamily::gradient; }

  // The id as the trace, JSON and golden files spell it: "head0.scores".
  std::string str() const;

  bool operator==(const StepId&) const = default;

 private:
  StepId(StepFamily family, int head, int decoding, int part)
      : family_(family), head_(head), decoding_(decoding), part_(part) {}
  int part_in(StepFamily family) const;

  StepFamily family_ = StepFamily::given;
  int head_ = -1;
  int decoding_ = -1;
  int part_ = 0;  // the family's enum as a number; 0 for concat and decode_check
  int query_block_ = -1;  // tile steps: the query block i
  int key_block_ = -1;    // tile steps: the key block j
  StepFamily forward_family_ = StepFamily::given;  // gradient steps: the forward step's family
};

// The id a person wrote, read: "head0.scores", "decode.t2.head1.K_cache", "W_Q";
// nullopt when it is not an id of any lesson (its exact spelling only:
// "head01.scores" and "head0.Scores" are not ids).
std::optional<StepId> parse_step_id(std::string_view text);
// A per-head step's short name ("scores", "row_sum"), as exercise sheets write them.
std::optional<HeadStep> parse_head_step(std::string_view text);
// "head*.scores": every head's step, as a claim of a lesson writes it.
std::optional<HeadStep> parse_every_head_step(std::string_view text);

// b_Q, b_K, b_V, b_O, b_1, b_2: a bias row, added to every row of a product.
bool is_bias(const StepId& id);
// W_Q, W_K, W_V, W_O, W_1, W_2: a weight matrix, in × out.
bool is_weight(const StepId& id);
// ln1_gamma, ln2_gamma: a LayerNorm's scale γ.
bool is_layer_norm_scale(const StepId& id);
// Which LayerNorm (1 or 2) a step belongs to: ln{k}_gamma, ln{k}_beta and
// layer.ln{k}.mean / .var / .normalised and layer.ln{k}; nullopt for the others.
std::optional<int> layer_norm_number(const StepId& id);

// The spellings of the ids the pipeline records most: head_step_id(0,
// HeadStep::scores) == "head0.scores", layer_step_id(LayerStep::ln1_mean) ==
// "layer.ln1.mean", decode_step_id(2, 0, DecodeStep::K_cache) ==
// "decode.t2.head0.K_cache", decode_check_id(0) == "decode.head0.check".
std::string head_step_id(std::size_t head, HeadStep step);
std::string layer_step_id(LayerStep step);
std::string decode_step_id(std::size_t t, std::size_t head, DecodeStep step);
std::string decode_check_id(std::size_t head);
// position_step_id(0, PositionStep::q_rot) == "head0.q_rot".
std::string position_step_id(std::size_t head, PositionStep step);

}  // namespace attn
