// The lesson model: everything a lesson file (docs/lesson-format.md) says, checked
// for consistency when it is loaded, so the pipeline can trust its shapes.
#pragma once

#include <armadillo>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/costs.hpp"
#include "core/i18n.hpp"
#include "core/mask_pattern.hpp"
#include "core/masked_row.hpp"

namespace attn {

enum class ScaleKind { sqrt_dk, none, number };
// none; sinusoidal: PE added to X; rope: q and k rotated per head; alibi: a
// per-head linear bias added to the scaled scores.
enum class PositionalEncoding { none, sinusoidal, rope, alibi };
enum class NormPlacement {
  post,
  pre
};  // LayerNorm after each residual sum, or before each sub-layer
enum class Activation { relu, gelu };  // gelu: exact, x·Φ(x) with Φ by erf
// [model] attention: the softmax of the scaled scores, or linear attention
// with the feature map elu(x) + 1 (docs/lesson-format.md).
enum class AttentionKind { softmax, linear };

// [model] tile = [Bq, Bk]: the query and key blocks of the tiled softmax.
struct TileSizes {
  std::size_t queries = 0;  // Bq
  std::size_t keys = 0;     // Bk
};

// [layer] kind = "encoder": the attention becomes the first sub-layer of a
// Transformer encoder layer (docs/lesson-format.md). Shapes are checked on load.
struct EncoderLayer {
  NormPlacement norm = NormPlacement::post;
  Activation activation = Activation::relu;
  double eps = 1e-5;
  arma::mat W_1;                     // (d_model, d_ff)
  arma::mat W_2;                     // (d_ff, d_model)
  std::optional<arma::rowvec> b_1;   // (d_ff)
  std::optional<arma::rowvec> b_2;   // (d_model)
  arma::rowvec ln1_gamma, ln1_beta;  // (d_model): default 1 and 0, as PyTorch starts them
  arma::rowvec ln2_gamma, ln2_beta;  // (d_model)
  // false: no residual sums; layer.residual1/2 are the sub-layer's output alone
  // (a stack without residual connections, 000 section 6.1).
  bool residual = true;
};

// [backward]: the scalar loss whose gradient the trace follows back through
// every step (docs/backward.md). Exactly one of `upstream` (dL/d(result),
// given) and `target` (L = ½‖result − target‖²) is set; both the result's shape.
// The result is layer.output with [layer], else output with W_O, else concat.
struct BackwardPass {
  std::optional<arma::mat> upstream;
  std::optional<arma::mat> target;
  std::size_t jacobian_row = 0;  // the row whose softmax Jacobian is its own step
};

// A number as the document or the learner wrote it: the value and how many
// decimals were written (the default tolerance is half a unit in the last one).
struct WrittenNumber {
  double value = 0.0;
  int decimals = 0;
  bool blank = false;       // "" in an answers file: not answered (value is NaN)
  bool unreadable = false;  // an answer that is no number (value NaN; the Answer says why)
};

// Half a unit in the last written decimal: 1.68 -> 0.005, 2 -> 0.5.
double half_unit(int decimals);
// What verify allows a number written with `decimals` decimals: half a unit in
// its last decimal plus half a unit two decimals further (a learner who keeps
// two more decimals and rounds what they write rounds twice): 3 -> 0.000505.
double written_tolerance(int decimals);

// What part of a step a claim or an answer is about.
struct CellSelector {
  enum class Kind { cell, row, matrix };
  Kind kind = Kind::matrix;
  std::size_t row = 0;
  std::size_t col = 0;
};

// Values said about one step of a trace — a cell, a row or the whole matrix —
// as a lesson's claims and a learner's answers both say them:
//   step = "head0.scores", cell = [r, c] | row = r | neither,
//   value = x | values = [...] | [[...]], tolerance = t (optional)
struct StepValues {
  std::string step;
  CellSelector where;
  std::vector<std::vector<WrittenNumber>> values;  // 1x1 cell, 1xm row, or the full matrix
  std::optional<double> tolerance;                 // default: half a unit in the last decimal
  std::string key;                                 // its table in the file, e.g. "answer[2]"
  int line = 0;                                    // where the table starts in its file
  int step_line = 0;                               // line of step = ...
  int where_line = 0;   // line of cell = ... or row = ... (0: whole matrix)
  int values_line = 0;  // line of value(s) = ...

  // The cell of the step that values[r][c] is about.
  std::size_t step_row(std::size_t r) const {
    return where.kind == CellSelector::Kind::matrix ? r : where.row;
  }
  std::size_t step_col(std::size_t c) const {
    return where.kind == CellSelector::Kind::cell ? where.col : c;
  }
  double tolerance_for(const WrittenNumber& n) const {
    return tolerance.value_or(half_unit(n.decimals));
  }
};

// A value a source document states, attached to a step of the trace.
struct Claim : StepValues {
  std::string says;
  std::string says_zh;  // optional: the label in Simplified Chinese (--lang zh)
  // `derived = true`: a number the lesson computed itself, not one a document
  // states (counted apart in the errata).
  bool derived = false;
  // The label to show in `lang`: the Chinese one when the claim has it.
  const std::string& says_for(Language lang) const {
    return lang == Language::zh && !says_zh.empty() ? says_zh : says;
  }
};

// The levels of the course: [lesson] level is one of these.
inline constexpr int kMinLevel = 1;
inline constexpr int kMaxLevel = 5;

// A shape or a quantity a source document states (docs/lesson-format.md,
// "Shape and quantity claims"): a [[claim]] with `shape` or `quantity`.
struct QuantityClaim {
  enum class Kind {
    shape,    // shape = [rows, cols] of a step ([batch, ...] with batch; [.., heads, ..] for head*)
    bytes,    // bytes of a step or the whole pass
    flops,    // FLOPs of a step or the whole pass
    sampled,  // a statistic of q·k by sampling: qk_mean, qk_variance, qk_std, qk_beyond_3
    kv_cache_bytes,  // the bytes a KV cache holds: g·(d_k + d_v) per token, × keys per sequence
    attended,  // cells a mask pattern lets attend: "attended" (a count) or "attended_fraction"
    step_size,     // the size of a step's cells: "max_abs" (largest |cell|) or "norm" (Frobenius)
    softmax_grad,  // the softmax's largest |∂a_i/∂s_j| by sampling: "softmax_grad_median",
                   // "softmax_grad_vanished" (the share of rows below kVanishedGrad)
    stack_grad_norm,  // ‖dL/d(input of layer at)‖ / ‖dL/d(input of layer k)‖ in a seeded stack
  };
  Kind kind = Kind::shape;
  std::string quantity;             // "shape", "bytes", "flops", "qk_variance", ...
  std::string step;                 // "" = the whole pass; "head*.scores" = that step of every head
  std::vector<std::size_t> shape;   // shape claims
  WrittenNumber value;              // the other kinds, in `unit`
  std::string unit;                 // bytes: "B", "KB", "MB", "GB", "KiB", "MiB", "GiB"
  double unit_size = 1.0;           // bytes per unit
  std::optional<double> tolerance;  // default: half a unit in the last decimal written
  std::optional<std::uint64_t> batch;  // sequences in a batch (default 1)
  std::optional<std::size_t> seq;      // cost at this many queries and keys, not the lesson's
  Dtype dtype = Dtype::f64;            // bytes: the number format
  // sampled: q·k of `samples` pairs of `d_k`-component vectors from `seed`,
  // divided by √d_k when `scaled`; vectors "unit_variance" or "unit_length".
  std::uint64_t d_k = 0;
  std::uint64_t samples = 20000;
  std::uint64_t seed = 1;
  bool unit_length = false;
  bool scaled = false;
  // kv_cache_bytes: per token (else per sequence: × seq or the lesson's keys,
  // × batch), at `kv_heads` K/V heads (default: the lesson's).
  bool per_token = false;
  std::optional<std::size_t> kv_heads;
  // attended: the claim's own pattern (window, global, stride, causal keys of
  // the claim; needs seq), or 003's chunking (chunk, overlap); neither: the
  // lesson's mask. `fraction`: the value is the count over seq² (n·m).
  std::optional<MaskPattern> pattern;
  std::uint64_t chunk = 0;
  std::uint64_t overlap = 0;
  bool fraction = false;
  // softmax_grad: each sample is one query against `keys` keys (the sampled
  // keys share d_k, samples, seed, vectors and scaled above).
  std::uint64_t keys = 9;
  // stack_grad_norm: `layers` encoder layers shaped like the lesson's, weights
  // from `seed` (teach/stack_grad.hpp), with or without the residual sums; the
  // gradient's norm at the input of layer `at` over the one at layer `layers`.
  std::uint64_t layers = 0;
  std::uint64_t at = 0;
  bool residual = true;
  std::string says;
  std::string says_zh;  // optional: the label in Simplified Chinese (--lang zh)
  bool derived = false;  // the lesson's own number, not a document's (Claim::derived)
  const std::string& says_for(Language lang) const {
    return lang == Language::zh && !says_zh.empty() ? says_zh : says;
  }
  std::string key;  // "claim[3]"
  int line = 0;
  int step_line = 0;
};

struct Lesson {
  // [lesson]
  std::string id;
  std::string title;
  std::string source;
  std::string story;
  std::string title_zh;  // optional: the title and story in Simplified Chinese (--lang zh)
  std::string story_zh;
  std::string origin;  // file path, or "lessons/<id>.toml (embedded)"
  // Where it sits in the course (docs/lesson-format.md): 1 one head by hand,
  // 2 scaling and softmax, 3 masks and positions, 4 several heads and
  // sequences, 5 the backward pass; the lessons it builds on; the lesson it varies (one setting
  // changed), listed on that lesson's line.
  int level = 1;
  std::vector<std::string> after;
  std::string variant_of;

  // [model]
  std::size_t heads = 1;
  std::size_t d_k = 0;  // columns of W_Q / heads unless the file sets it
  std::size_t d_v = 0;  // columns of W_V / heads
  // K/V heads (grouped-query attention): query head h reads K/V head
  // h ÷ (heads / kv_heads); set to heads on load when the file does not say.
  std::size_t kv_heads = 0;
  // positional_encoding = "rope": also trace the scores with every position
  // moved by this many (head{h}.shift_check); none: no such steps.
  std::optional<std::size_t> rope_shift;
  ScaleKind scale_kind = ScaleKind::sqrt_dk;
  double scale_number = 1.0;  // used when scale_kind == number
  bool causal = false;
  double mask_fill = -arma::datum::inf;
  MaskedRowPolicy masked_row = MaskedRowPolicy::nan;
  PositionalEncoding positional_encoding = PositionalEncoding::none;
  Dtype dtype = Dtype::f64;  // the number format the pass runs in (run --dtype overrides it)
  // Mask patterns (self-attention only; checked on load): keys within `window`
  // positions, `global_tokens` (sorted) exempt from window and stride, keys j
  // with j mod stride = stride − 1 kept. mask_pattern() gathers them.
  std::optional<std::uint64_t> window;
  std::vector<std::uint64_t> global_tokens;
  std::optional<std::uint64_t> stride;
  std::optional<TileSizes> tile;  // also trace the tiled (FlashAttention) softmax
  AttentionKind attention = AttentionKind::softmax;

  // [input]
  std::vector<std::string> tokens;         // one per row of X
  arma::mat X;                             // (n, d_model)
  std::optional<arma::mat> memory;         // (m, d_mem): cross-attention keys and values
  std::vector<std::string> memory_tokens;  // one per row of memory
  std::vector<bool> key_padding;           // empty, or one per key (true = padded)
  std::optional<arma::umat> keep;          // (n, m): 1 = may attend, 0 = masked

  // [weights]
  arma::mat W_Q, W_K, W_V;  // (d_model, h*d_k), (d_mem, h*d_k), (d_mem, h*d_v)
  std::optional<arma::mat> W_O;
  std::optional<arma::rowvec> b_Q, b_K, b_V, b_O;

  // [layer] (and its weights in [weights]); absent: attention alone.
  std::optional<EncoderLayer> layer;

  // [decode] kv_cache = true: the trace also decodes token by token with a KV
  // cache (causal self-attention only, no other mask; checked on load).
  bool kv_cache = false;

  // [backward]: also trace the gradient of a loss back through every step.
  std::optional<BackwardPass> backward;

  // [exercise] (a lesson written by `exercise`): the steps its sheet asks for,
  // the decimals answers are to be written with, and whose variant it is.
  std::vector<std::string> asked;
  std::optional<int> answer_decimals;
  std::string student;  // "" when not an exercise
  std::string variant;  // the student's stream, 16 hex digits

  std::vector<Claim> claims;
  std::vector<QuantityClaim> quantity_claims;

  std::size_t queries() const { return X.n_rows; }
  // The K/V heads: kv_heads, or heads where nothing set it (a lesson built in code).
  std::size_t kv_head_count() const { return kv_heads ? kv_heads : heads; }
  std::size_t keys() const { return memory ? memory->n_rows : X.n_rows; }
  bool is_cross() const { return memory.has_value(); }
  const std::vector<std::string>& key_tokens() const { return memory ? memory_tokens : tokens; }
  // The divisor of the scaled scores: √d_k, 1, or the lesson's number.
  double scale_divisor() const;
  // The title and story to show in `lang`: the Chinese ones when the lesson
  // has them, the English otherwise.
  const std::string& title_for(Language lang) const;
  // causal, window, global and stride as one pattern (not padding, not keep).
  MaskPattern mask_pattern() const { return {causal, window, global_tokens, stride}; }
  const std::string& story_for(Language lang) const;
};

// Parses and checks a lesson. `origin` names it in every error message.
// Throws InputError naming the origin, the key (and line) and the fix.
Lesson parse_lesson(std::string_view toml_text, const std::string& origin);
// The same, from TOML already read (the practice page's engine reads a
// lesson's text once for the lesson and for where its numbers are written).
class TomlReader;
Lesson parse_lesson(const TomlReader& toml);

// Reads and parses a lesson file.
Lesson load_lesson_file(const std::string& path);

}  // namespace attn
