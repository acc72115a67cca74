// The attention pipeline: numbered passes, each a named function, each
// recorded in the trace under its stable step id.
#include "core/pipeline.hpp"

#include <fmt/format.h>

#include <cmath>
#include <functional>
#include <optional>

#include "core/efficient.hpp"
#include "core/error.hpp"
#include "core/format_arithmetic.hpp"
#include "core/i18n.hpp"
#include "core/number_text.hpp"

namespace attn {

namespace {

std::string dims(const arma::mat& M) {
  return shape_str(M.n_rows, M.n_cols);
}

// The decoding step that records a head step of one query (none for the
// masked scores, exponentials and row sums: nothing is masked in decoding).
std::optional<DecodeStep> decode_step_of(HeadStep part) {
  switch (part) {
    case HeadStep::Q:
      return DecodeStep::q;
    case HeadStep::K:
      return DecodeStep::K_cache;
    case HeadStep::V:
      return DecodeStep::V_cache;
    case HeadStep::scores:
      return DecodeStep::scores;
    case HeadStep::scaled:
      return DecodeStep::scaled;
    case HeadStep::weights:
      return DecodeStep::weights;
    case HeadStep::context:
      return DecodeStep::context;
    case HeadStep::masked:
    case HeadStep::exp:
    case HeadStep::row_sum:
      return std::nullopt;
  }
  return std::nullopt;
}

// An operation of the tiles or of linear attention (Op::efficient).
Operation efficient(EfficientOp which, std::vector<std::string> inputs) {
  Operation made{Op::efficient, std::move(inputs)};
  made.efficient = which;
  return made;
}

// The ids of `steps`, as Operation::inputs names them.
std::vector<std::string> ids_of(std::initializer_list<StepId> steps) {
  std::vector<std::string> out;
  for (const StepId& step : steps) out.push_back(step.str());
  return out;
}

}  // namespace

arma::mat with_overrides(const Overrides& overrides, const std::string& id, arma::mat computed) {
  const auto it = overrides.find(id);
  if (it == overrides.end()) return computed;
  const StepOverride& o = it->second;
  if (o.value.n_rows != computed.n_rows || o.value.n_cols != computed.n_cols ||
      o.given.n_rows != computed.n_rows || o.given.n_cols != computed.n_cols)
    throw InputError(fmt::format("values given for step {} are {}, but the step is {}", id,
                                 dims(o.value), dims(computed)));
  const arma::uvec cells = arma::find(o.given);
  computed.elem(cells) = o.value.elem(cells);
  return computed;
}

std::vector<std::string> feature_labels(std::size_t count) {
  std::vector<std::string> out;
  for (std::size_t i = 0; i < count; ++i) out.push_back(fmt::format("d{}", i));
  return out;
}

namespace {

// One forward pass being recorded: one member function per step id (or family
// of ids), each computing its step from the steps it names as inputs and
// recording how. Values replace computed cells where the caller overrides them.
class Forward {
 public:
  Forward(const Lesson& lesson, Backend& backend, const Overrides& overrides)
      : lesson_(lesson), backend_(backend), overrides_(overrides) {
    trace_.lesson_id = lesson.id;
    trace_.backend = std::string(backend.name());
    trace_.scale = lesson.scale_divisor();
    trace_.mask = mask_reasons(lesson);
    trace_.mask_pattern = lesson.mask_pattern();
    trace_.dtype = lesson.dtype;
    if (lesson.dtype != Dtype::f64) {
      if (backend.name() != "cpu")
        throw BackendUnavailable(fmt::format(
            "dtype {} is emulated exactly on the CPU only; use --backend cpu (or --dtype f64)",
            dtype_name(lesson.dtype)));
      format_.emplace(lesson.dtype);
    }
    // Every step's place at once: a growing vector would copy every matrix
    // already recorded (Armadillo's move is not noexcept).
    trace_.steps.reserve(24 + 16 * lesson.heads + (lesson.layer ? 24 : 0) +
                         (lesson.kv_cache ? lesson.heads * (7 * lesson.queries() + 1) : 0) +
                         efficient_steps(lesson));
  }

  Trace finish() { return std::move(trace_); }

  // X:(n,d), and with positions PE:(n,d), X+PE:(n,d). -> the step queries come from.
  StepId queries_input() {
    const StepId X = StepId::given(Given::X), PE = StepId::positional(Positional::PE);
    record(X, N_("Input embeddings"), StepKind::input, {}, lesson_.X, lesson_.tokens);
    if (!positions()) return X;
    record(PE, N_("Positional encoding"), StepKind::positional, {Op::positional, {}},
           positional_encoding(lesson_.X.n_rows, lesson_.X.n_cols), lesson_.tokens);
    const StepId sum = StepId::positional(Positional::X_PE);
    record(sum, N_("Input plus positions"), StepKind::positional,
           {Op::add_positions, ids_of({X, PE})}, value(X) + value(PE), lesson_.tokens);
    return sum;
  }

  // memory:(m,d_mem), and with positions memory+PE:(m,d_mem); without memory
  // (self-attention) `queries`. -> the step keys and values come from.
  StepId keys_input(const StepId& queries) {
    if (!lesson_.memory) return queries;
    const arma::mat& M = *lesson_.memory;
    const StepId memory = StepId::given(Given::memory);
    record(memory, N_("Memory (encoder output)"), StepKind::input, {}, M, lesson_.key_tokens());
    if (!positions()) return memory;
    const StepId sum = StepId::positional(Positional::memory_PE);
    record(sum, N_("Memory plus positions"), StepKind::positional,
           {Op::add_positions, ids_of({memory})}, M + positional_encoding(M.n_rows, M.n_cols),
           lesson_.key_tokens());
    return sum;
  }

  // The weight and bias steps of a product, and what the lesson gives for them.
  struct Parameters {
    Given weight, bias;
    const arma::mat& W;                    // (d,p)
    const std::optional<arma::rowvec>& b;  // (p)
  };

  // W:(d,p), b:(p) as the lesson gives them, then id:(rows,p) = in·W (+ b).
  void projection(const StepId& id, Message name, StepKind kind, const StepId& in,
                  const Parameters& p, const std::vector<std::string>& rows) {
    const StepId weight = StepId::given(p.weight);
    record(weight, Message(N_("Weights {}"), {weight.str()}), StepKind::input, {}, p.W,
           feature_labels(p.W.n_rows));
    Operation made{Op::matmul, ids_of({in, weight})};
    // The product reads the weights as recorded (rounded to the format).
    std::optional<arma::rowvec> bias;
    if (p.b) {
      const StepId b = StepId::given(p.bias);
      record(b, Message(N_("Bias {}"), {b.str()}), StepKind::input, {}, arma::mat(*p.b), {b.str()});
      made.inputs.push_back(b.str());
      bias = arma::rowvec(value(b));
    }
    record(id, std::move(name), kind, made, project(value(in), value(weight), bias), rows);
  }

  // 3. Attention of every head: head{h}.Q, .K, .V (slices), .scores, .scaled,
  // .masked, .exp, .row_sum, .weights, .context (core/attention.hpp), by the
  // backend in one call, or composed here step by step when the caller
  // replaces cells of a head's step or a narrower format is emulated (each
  // step then feeds the next as recorded). Recorded in head order.
  // With kv_heads = g, query head h reads K/V head h ÷ (heads/g): the backend
  // gets K and V with each K/V head repeated per group. With RoPE it gets q
  // and k rotated here (head{h}.q_rot, .k_rot); with ALiBi the steps from the
  // masked scores on are recomputed here from scaled + alibi_bias.
  void attention() {
    const StepId Q = StepId::projection(Projection::Q), K = StepId::projection(Projection::K),
                 V = StepId::projection(Projection::V);
    const std::size_t heads = lesson_.heads;
    arma::mat Q_in = value(Q), K_in = repeat_heads(value(K), lesson_.d_k, heads);
    const arma::mat V_in = repeat_heads(value(V), lesson_.d_v, heads);
    std::vector<Rotated> rotated;
    if (rope()) rotated = rotate_heads(Q_in, K_in);
    const AttentionInput in = attention_input(Q_in, K_in, V_in, trace_.mask, heads);
    std::vector<HeadAttention> out =
        attend(in, [this](std::size_t h, HeadStep part) { return attended_id(h, part); });
    for (std::size_t h = 0; h < heads; ++h) {
      std::optional<Biased> biased;
      if (alibi()) biased = alibi_head(h, out[h]);
      record_head(h, out[h], rope() ? &rotated[h] : nullptr, biased ? &*biased : nullptr);
      if (lesson_.rope_shift) shift_check(h, *lesson_.rope_shift);
      if (lesson_.tile) tiled_softmax(h);
      if (lesson_.attention == AttentionKind::linear) linear_attention(h);
    }
    if (backend_.name() != "cpu") note_host_steps();
  }

  // The step a head step of the attention computed is recorded as: with RoPE,
  // its Q and K are the rotated ones.
  StepId attended_id(std::size_t h, HeadStep part) const {
    if (rope() && part == HeadStep::Q) return StepId::position(h, PositionStep::q_rot);
    if (rope() && part == HeadStep::K) return StepId::position(h, PositionStep::k_rot);
    return StepId::head_step(h, part);
  }

  // One head's slices before and after RoPE's rotation.
  struct Rotated {
    arma::mat Q, K, q_rot, k_rot;
  };

  // Q:(n,h·d_k) K:(m,h·d_k) (K/V heads repeated) -> every head's slices and
  // their rotations, each finished as recorded; Q and K become the rotated
  // heads side by side, what attention reads.
  std::vector<Rotated> rotate_heads(arma::mat& Q, arma::mat& K) const {
    const std::size_t d_k = lesson_.d_k;
    std::vector<Rotated> out(lesson_.heads);
    for (std::size_t h = 0; h < lesson_.heads; ++h) {
      Rotated& r = out[h];
      r.Q = finished(head_step_id(h, HeadStep::Q), Op::slice, split_head(Q, h, d_k));
      r.K = finished(head_step_id(h, HeadStep::K), Op::slice, split_head(K, h, d_k));
      r.q_rot = finished(position_step_id(h, PositionStep::q_rot), Op::rotate, rope_rotate(r.Q, 0));
      r.k_rot = finished(position_step_id(h, PositionStep::k_rot), Op::rotate, rope_rotate(r.K, 0));
    }
    for (std::size_t h = 0; h < lesson_.heads; ++h) {
      Q.cols(h * d_k, (h + 1) * d_k - 1) = out[h].q_rot;
      K.cols(h * d_k, (h + 1) * d_k - 1) = out[h].k_rot;
    }
    return out;
  }

  // ALiBi's two steps of head h.
  struct Biased {
    arma::mat bias, biased;
  };

  // Head h with ALiBi, on the host: alibi_bias:(n,m) = −m_h·|i − j|, biased =
  // scaled + alibi_bias, then masked = the mask of biased and every step after
  // it (core/attention.hpp finish_head) replace what `a` holds.
  Biased alibi_head(std::size_t h, HeadAttention& a) const {
    const double slope = alibi_slope(h, lesson_.heads);
    Biased out;
    out.bias = finished(position_step_id(h, PositionStep::alibi_bias), Op::alibi,
                        alibi_bias(slope, lesson_.queries(), lesson_.keys()));
    out.biased = finished(position_step_id(h, PositionStep::biased), Op::add,
                          a[HeadStep::scaled] + out.bias);
    const auto set = [&](HeadStep part, arma::mat v) -> const arma::mat& {
      a[part] = finished(head_step_id(h, part), Op::slice, std::move(v));
      return a[part];
    };
    const auto replaced = [&](HeadStep part) { return overrides_.contains(head_step_id(h, part)); };
    const arma::mat& masked = set(HeadStep::masked, apply_mask(out.biased, trace_.mask, fill()));
    finish_head(masked, a[HeadStep::V], lesson_.masked_row, arithmetic(), set, replaced);
    return out;
  }

  // Records head h's steps from `a` (and RoPE's rotations, ALiBi's bias).
  void record_head(std::size_t h, HeadAttention& a, const Rotated* rotated, const Biased* biased) {
    const auto step = [&](HeadStep part, Message name, StepKind kind, Operation made,
                          const std::vector<std::string>& rows,
                          const std::vector<std::string>& cols = {}) {
      record(StepId::head_step(h, part), std::move(name), kind, std::move(made),
             std::move(a[part]), rows, cols);
    };
    const auto id = [h](HeadStep part) { return head_step_id(h, part); };
    const std::vector<std::string>& queries = lesson_.tokens;
    const std::vector<std::string>& keys = lesson_.key_tokens();
    if (rotated) {
      a[HeadStep::Q] = rotated->Q;
      a[HeadStep::K] = rotated->K;
    }
    record_slices(h, a, rotated);
    const bool rope = rotated != nullptr;
    step(HeadStep::scores, N_("Scores"), StepKind::scores,
         {Op::matmul_t, rope ? std::vector<std::string>{position_step_id(h, PositionStep::q_rot),
                                                        position_step_id(h, PositionStep::k_rot)}
                             : std::vector<std::string>{id(HeadStep::Q), id(HeadStep::K)}},
         queries, keys);
    Operation divide{Op::divide, {id(HeadStep::scores)}};
    divide.divisor = trace_.scale;
    step(HeadStep::scaled, N_("Scaled scores"), StepKind::scaled, divide, queries, keys);
    if (biased) record_bias(h, *biased);
    Operation mask{Op::mask, {biased ? position_step_id(h, PositionStep::biased)
                                     : id(HeadStep::scaled)}};
    mask.fill = fill();
    step(HeadStep::masked, N_("Masked scores"), StepKind::masked, mask, queries, keys);
    step(HeadStep::exp, N_("Exponentials"), StepKind::exp, {Op::exp, {id(HeadStep::masked)}},
         queries, keys);
    step(HeadStep::row_sum, N_("Row sums"), StepKind::row_sum, {Op::row_sum, {id(HeadStep::exp)}},
         queries, {"sum"});
    step(HeadStep::weights, N_("Attention weights"), StepKind::weights,
         {Op::softmax, {id(HeadStep::masked), id(HeadStep::exp), id(HeadStep::row_sum)}}, queries,
         keys);
    // Linear attention records the softmax's weights beside its own, and its
    // own context (linear_attention).
    if (lesson_.attention == AttentionKind::softmax)
      step(HeadStep::context, N_("Context"), StepKind::context,
           {Op::matmul, {id(HeadStep::weights), id(HeadStep::V)}}, queries);
    warn_about_rows(h, value(StepId::head_step(h, HeadStep::masked)),
                    value(StepId::head_step(h, HeadStep::weights)));
  }

  // head{h}.Q, .K, .V: the head's columns of Q and of its K/V head's columns
  // of K and V; with RoPE then head{h}.q_rot and .k_rot.
  void record_slices(std::size_t h, HeadAttention& a, const Rotated* rotated) {
    const StepId Q = StepId::projection(Projection::Q), K = StepId::projection(Projection::K),
                 V = StepId::projection(Projection::V);
    const std::size_t kv = h / (lesson_.heads / lesson_.kv_head_count());  // the K/V head it reads
    const std::string head = std::to_string(h);
    const std::vector<std::string>& queries = lesson_.tokens;
    const std::vector<std::string>& keys = lesson_.key_tokens();
    record(StepId::head_step(h, HeadStep::Q), Message(N_("Head {} Q"), {head}),
           StepKind::head_slice, {Op::slice, ids_of({Q}), h * lesson_.d_k},
           std::move(a[HeadStep::Q]), queries);
    record(StepId::head_step(h, HeadStep::K), Message(N_("Head {} K"), {head}),
           StepKind::head_slice, {Op::slice, ids_of({K}), kv * lesson_.d_k},
           std::move(a[HeadStep::K]), keys);
    record(StepId::head_step(h, HeadStep::V), Message(N_("Head {} V"), {head}),
           StepKind::head_slice, {Op::slice, ids_of({V}), kv * lesson_.d_v},
           std::move(a[HeadStep::V]), keys);
    if (!rotated) return;
    record(StepId::position(h, PositionStep::q_rot), Message(N_("Head {} q rotated (RoPE)"), {head}),
           StepKind::rope_rotated, {Op::rotate, {head_step_id(h, HeadStep::Q)}, 0},
           rotated->q_rot, queries);
    record(StepId::position(h, PositionStep::k_rot), Message(N_("Head {} k rotated (RoPE)"), {head}),
           StepKind::rope_rotated, {Op::rotate, {head_step_id(h, HeadStep::K)}, 0},
           rotated->k_rot, keys);
  }

  // head{h}.alibi_bias and head{h}.biased (ALiBi).
  void record_bias(std::size_t h, const Biased& b) {
    Operation bias{Op::alibi, {}};
    bias.slope = alibi_slope(h, lesson_.heads);
    record(StepId::position(h, PositionStep::alibi_bias),
           Message(N_("Head {} ALiBi bias"), {std::to_string(h)}), StepKind::alibi_bias, bias,
           b.bias, lesson_.tokens, lesson_.key_tokens());
    record(StepId::position(h, PositionStep::biased), N_("Scaled scores plus the ALiBi bias"),
           StepKind::alibi_biased,
           {Op::add, {head_step_id(h, HeadStep::scaled), position_step_id(h, PositionStep::alibi_bias)}},
           b.biased, lesson_.tokens, lesson_.key_tokens());
  }

  // RoPE's relative property, head h: q and k rotated with every position
  // moved by `shift`, their scores, and row i = max_j |scores_shifted −
  // scores|; above kShiftTolerance is a warning.
  void shift_check(std::size_t h, std::size_t shift) {
    const auto pid = [h](PositionStep part) { return StepId::position(h, part); };
    const StepId Qh = StepId::head_step(h, HeadStep::Q), Kh = StepId::head_step(h, HeadStep::K);
    const StepId scores = StepId::head_step(h, HeadStep::scores);
    record(pid(PositionStep::q_rot_shifted),
           Message(N_("Head {} q rotated at positions + {}"), {std::to_string(h), std::to_string(shift)}),
           StepKind::rope_rotated, {Op::rotate, ids_of({Qh}), shift}, rope_rotate(value(Qh), shift),
           lesson_.tokens);
    record(pid(PositionStep::k_rot_shifted),
           Message(N_("Head {} k rotated at positions + {}"), {std::to_string(h), std::to_string(shift)}),
           StepKind::rope_rotated, {Op::rotate, ids_of({Kh}), shift}, rope_rotate(value(Kh), shift),
           lesson_.key_tokens());
    const StepId shifted = pid(PositionStep::scores_shifted);
    record(shifted, N_("Scores with every position shifted"), StepKind::rope_shift_scores,
           {Op::matmul_t, ids_of({pid(PositionStep::q_rot_shifted), pid(PositionStep::k_rot_shifted)})},
           arithmetic().matmul_transposed(value(pid(PositionStep::q_rot_shifted)),
                                          value(pid(PositionStep::k_rot_shifted))),
           lesson_.tokens, lesson_.key_tokens());
    const StepId id = pid(PositionStep::shift_check);
    const arma::mat& check =
        record(id, N_("RoPE shift check: shifted scores vs the scores"), StepKind::rope_shift_check,
               {Op::row_max_abs_diff, ids_of({scores, shifted})},
               row_max_abs_difference(value(scores), value(shifted)), lesson_.tokens,
               {"max |diff|"});
    for (std::size_t i = 0; i < check.n_rows; ++i)
      if (!(check(i, 0) <= kShiftTolerance))
        warn(id, {N_("{0} row {1} ({2}): with every position shifted by {3} the scores move by "
                     "{4}, more than {5}"),
                  {id.str(), std::to_string(i), lesson_.tokens.at(i), std::to_string(shift),
                   fmt::format("{:g}", check(i, 0)), fmt::format("{:g}", kShiftTolerance)}});
  }

  // The steps this pass computed on the host although the backend is another.
  void note_host_steps() {
    for (std::size_t h = 0; h < lesson_.heads; ++h) {
      std::vector<StepId> host;
      if (rope()) host = {StepId::position(h, PositionStep::q_rot), StepId::position(h, PositionStep::k_rot)};
      if (alibi())
        host = {StepId::position(h, PositionStep::alibi_bias), StepId::position(h, PositionStep::biased),
                StepId::head_step(h, HeadStep::masked), StepId::head_step(h, HeadStep::exp),
                StepId::head_step(h, HeadStep::row_sum), StepId::head_step(h, HeadStep::weights),
                StepId::head_step(h, HeadStep::context)};
      if (lesson_.rope_shift)
        for (PositionStep p : {PositionStep::q_rot_shifted, PositionStep::k_rot_shifted,
                               PositionStep::scores_shifted, PositionStep::shift_check})
          host.push_back(StepId::position(h, p));
      for (const StepId& id : host) trace_.host_steps.push_back(id.str());
    }
  }

  // The steps the lesson's tiles and linear attention add (to reserve them).
  static std::size_t efficient_steps(const Lesson& lesson) {
    std::size_t per_head = lesson.attention == AttentionKind::linear ? 10 : 0;
    if (lesson.tile) {
      const std::size_t bq = (lesson.queries() + lesson.tile->queries - 1) / lesson.tile->queries;
      const std::size_t bk = (lesson.keys() + lesson.tile->keys - 1) / lesson.tile->keys;
      per_head += 5 * bq * bk + 2;
    }
    return per_head * lesson.heads;
  }

  // The tiled (online) softmax of head h, FlashAttention's arithmetic: per
  // query block i (Bq rows, fewer at the edge) and key block j, the block's
  // masked scores, the running max m, the rescale exp(m_old − m), the running
  // sum ℓ and the rescaled accumulator O; then head{h}.tiled_context = O/ℓ and
  // head{h}.tiled_check against head{h}.context. On the host, in the lesson's
  // format (each operation rounded to f32 when the format is narrower).
  void tiled_softmax(std::size_t h) {
    const std::size_t n = lesson_.queries(), bq = lesson_.tile->queries;
    std::vector<std::string> pairs;  // acc and l of each query block's last key block
    for (std::size_t i0 = 0, i = 0; i0 < n; i0 += bq, ++i) {
      const auto [acc, l] = tile_row(h, i, i0, std::min(bq, n - i0));
      pairs.push_back(acc.str());
      pairs.push_back(l.str());
    }
    const StepId context = StepId::tiled(h, TiledStep::context);
    arma::mat O;
    for (std::size_t b = 0; b < pairs.size(); b += 2)
      O = arma::join_cols(
          O, divide_by_rows(trace_.at(pairs[b]).value, trace_.at(pairs[b + 1]).value, rounding()));
    apply_masked_row_policy(h, O);
    host_record(context, N_("Tiled context: O / l, block by block"), StepKind::tiled,
                efficient(EfficientOp::divide_rows, pairs), std::move(O), lesson_.tokens);
    check_against(StepId::tiled(h, TiledStep::check), N_("Tiled check: max |tiled − ordinary|"),
                  StepKind::tiled, context, StepId::head_step(h, HeadStep::context));
  }

  // Query block i of head h (rows i0 .. i0 + r − 1) over every key block. -> its last acc and l
  std::pair<StepId, StepId> tile_row(std::size_t h, std::size_t i, std::size_t i0, std::size_t r) {
    const std::size_t m = lesson_.keys(), bk = lesson_.tile->keys;
    const std::vector<std::string> rows(lesson_.tokens.begin() + i0,
                                        lesson_.tokens.begin() + i0 + r);
    std::optional<StepId> old_m, old_l, old_acc;
    for (std::size_t j0 = 0, j = 0; j0 < m; j0 += bk, ++j) {
      const std::size_t c = std::min(bk, m - j0);
      const auto id = [&](TileStep part) { return StepId::tile(h, i, j, part); };
      const std::vector<std::string> cols(lesson_.key_tokens().begin() + j0,
                                          lesson_.key_tokens().begin() + j0 + c);
      const StepId masked = StepId::head_step(h, HeadStep::masked);
      Operation block = efficient(EfficientOp::tile_block, ids_of({masked}));
      block.offset = i0;
      block.col_offset = j0;
      host_record(id(TileStep::scores), N_("Tile: block of masked scores"), StepKind::tile, block,
                  value(masked).submat(i0, j0, i0 + r - 1, j0 + c - 1), rows, cols);
      tile_updates(h, i, j, j0, {old_m, old_l, old_acc}, rows);
      old_m = id(TileStep::m);
      old_l = id(TileStep::l);
      old_acc = id(TileStep::acc);
    }
    return {*old_acc, *old_l};
  }

  // The previous key block's m, ℓ and O (none before key block 0).
  struct TileState {
    std::optional<StepId> m, l, acc;
  };

  // Block (i, j) of head h after its scores: m, rescale, l and acc.
  void tile_updates(std::size_t h, std::size_t i, std::size_t j, std::size_t j0,
                    const TileState& old, const std::vector<std::string>& rows) {
    const auto id = [&](TileStep part) { return StepId::tile(h, i, j, part); };
    const auto old_value = [&](const std::optional<StepId>& step) {
      return step ? value(*step) : arma::mat();
    };
    const auto with_old = [](std::vector<std::string> ids, const std::optional<StepId>& step) {
      if (step) ids.push_back(step->str());
      return ids;
    };
    const StepId S = id(TileStep::scores), m = id(TileStep::m), alpha = id(TileStep::rescale);
    host_record(m, N_("Tile: running max m"), StepKind::tile,
                efficient(EfficientOp::running_max, with_old(ids_of({S}), old.m)),
                tile_running_max(value(S), old_value(old.m)), rows, {"m"});
    host_record(alpha, N_("Tile: rescale exp(m_old − m)"), StepKind::tile,
                efficient(EfficientOp::rescale, with_old(ids_of({m}), old.m)),
                tile_rescale_factors(value(m), old_value(old.m), rounding()), rows, {"rescale"});
    host_record(id(TileStep::l), N_("Tile: running sum l"), StepKind::tile,
                efficient(EfficientOp::running_sum, with_old(ids_of({S, m, alpha}), old.l)),
                tile_running_sum(value(S), value(m), value(alpha), old_value(old.l), rounding()),
                rows, {"l"});
    const StepId V = StepId::head_step(h, HeadStep::V);
    Operation acc =
        efficient(EfficientOp::running_acc, with_old(ids_of({S, m, alpha, V}), old.acc));
    acc.col_offset = j0;
    const arma::mat V_block = value(V).rows(j0, j0 + value(S).n_cols - 1);
    host_record(
        id(TileStep::acc), N_("Tile: rescaled accumulator O"), StepKind::tile, acc,
        tile_running_acc(value(S), value(m), value(alpha), V_block, old_value(old.acc), rounding()),
        rows);
  }

  // Rows of the tiled context whose ℓ is 0 (every key masked): what the
  // lesson's masked_row policy makes of the weights, times V (NaN, 0, or the
  // mean of V's rows).
  void apply_masked_row_policy(std::size_t h, arma::mat& O) const {
    const arma::rowvec mean_V = arma::mean(value(StepId::head_step(h, HeadStep::V)), 0);
    for (arma::uword i = 0; i < O.n_rows; ++i) {
      if (!O.row(i).has_nan()) continue;
      switch (lesson_.masked_row) {
        case MaskedRowPolicy::nan:
          break;
        case MaskedRowPolicy::zero:
          O.row(i).zeros();
          break;
        case MaskedRowPolicy::uniform:
          O.row(i) = mean_V;
          break;
      }
    }
  }

  // Linear attention of head h (φ = elu + 1, no scaling, no softmax): φ(Q),
  // φ(K), kv = φ(K)ᵀV, the normaliser, the numerator φ(Q)·kv and the head's
  // context (head{h}.context); then the other order, φ(Q)φ(K)ᵀ, the weights
  // it implies, (φ(Q)φ(K)ᵀ)V and the check that both orders agree.
  void linear_attention(std::size_t h) {
    const StepId Q = StepId::head_step(h, HeadStep::Q), K = StepId::head_step(h, HeadStep::K),
                 V = StepId::head_step(h, HeadStep::V);
    const auto id = [h](LinearStep part) { return StepId::linear(h, part); };
    const std::vector<std::string>& queries = lesson_.tokens;
    const std::vector<std::string>& keys = lesson_.key_tokens();
    const StepId phi_q = id(LinearStep::phi_q), phi_k = id(LinearStep::phi_k),
                 kv = id(LinearStep::kv), norm = id(LinearStep::normaliser),
                 numerator = id(LinearStep::numerator);
    host_record(phi_q, N_("Linear: φ(Q) = elu(Q) + 1"), StepKind::linear,
                efficient(EfficientOp::elu_plus_one, ids_of({Q})),
                elu_plus_one(value(Q), rounding()), queries);
    host_record(phi_k, N_("Linear: φ(K) = elu(K) + 1"), StepKind::linear,
                efficient(EfficientOp::elu_plus_one, ids_of({K})),
                elu_plus_one(value(K), rounding()), keys);
    host_record(kv, N_("Linear: φ(K)ᵀ·V"), StepKind::linear,
                efficient(EfficientOp::matmul_tn, ids_of({phi_k, V})),
                arithmetic().matmul(value(phi_k).t(), value(V)), feature_labels(lesson_.d_k));
    host_record(norm, N_("Linear: normaliser φ(q_i)·Σ_j φ(k_j)"), StepKind::linear,
                efficient(EfficientOp::normaliser, ids_of({phi_q, phi_k})),
                linear_normaliser(value(phi_q), value(phi_k), rounding()), queries, {"sum"});
    host_record(numerator, N_("Linear: numerator φ(Q)·(φ(K)ᵀV)"), StepKind::linear,
                {Op::matmul, ids_of({phi_q, kv})}, arithmetic().matmul(value(phi_q), value(kv)),
                queries);
    host_record(StepId::head_step(h, HeadStep::context), N_("Context (linear attention)"),
                StepKind::context, efficient(EfficientOp::divide_rows, ids_of({numerator, norm})),
                divide_by_rows(value(numerator), value(norm), rounding()), queries);
    linear_other_order(h, queries, keys);
  }

  // (φ(Q)φ(K)ᵀ)V, the quadratic order, beside φ(Q)(φ(K)ᵀV), and their check.
  void linear_other_order(std::size_t h, const std::vector<std::string>& queries,
                          const std::vector<std::string>& keys) {
    const auto id = [h](LinearStep part) { return StepId::linear(h, part); };
    const StepId similarity = id(LinearStep::similarity), weights = id(LinearStep::weights),
                 product = id(LinearStep::quadratic_numerator),
                 V = StepId::head_step(h, HeadStep::V);
    host_record(
        similarity, N_("Linear: φ(Q)·φ(K)ᵀ, the n × m order"), StepKind::linear,
        {Op::matmul_t, ids_of({id(LinearStep::phi_q), id(LinearStep::phi_k)})},
        arithmetic().matmul_transposed(value(id(LinearStep::phi_q)), value(id(LinearStep::phi_k))),
        queries, keys);
    host_record(
        weights, N_("Linear: implied weights φ(q_i)·φ(k_j) / normaliser"), StepKind::linear,
        efficient(EfficientOp::divide_rows, ids_of({similarity, id(LinearStep::normaliser)})),
        divide_by_rows(value(similarity), value(id(LinearStep::normaliser)), rounding()), queries,
        keys);
    host_record(product, N_("Linear: (φ(Q)·φ(K)ᵀ)·V"), StepKind::linear,
                {Op::matmul, ids_of({similarity, V})},
                arithmetic().matmul(value(similarity), value(V)), queries);
    check_against(id(LinearStep::check), N_("Linear check: max |φ(Q)(φ(K)ᵀV) − (φ(Q)φ(K)ᵀ)V|"),
                  StepKind::linear, id(LinearStep::numerator), product);
  }

  // id:(n,1) = max_j |a − b| per row; above kDecodeTolerance in f64, a warning.
  void check_against(const StepId& id, const char* name, StepKind kind, const StepId& a,
                     const StepId& b) {
    host_record(id, name, kind, efficient(EfficientOp::row_diff, ids_of({a, b})),
                max_abs_row_diff(value(a), value(b)), lesson_.tokens, {"max |diff|"});
    if (format_) return;  // a narrower format shows its own difference
    const arma::mat& check = value(id);
    for (arma::uword i = 0; i < check.n_rows; ++i)
      if (!(check(i, 0) <= kDecodeTolerance) && !std::isnan(check(i, 0)))
        warn(id, {N_("{0} row {1} ({2}): {3} and {4} differ by {5}, more than {6}"),
                  {id.str(), std::to_string(i), lesson_.tokens.at(i), a.str(), b.str(),
                   fmt::format("{:g}", check(i, 0)), fmt::format("{:g}", kDecodeTolerance)}});
  }

  // A step of tiles or linear attention: recorded, and listed among the steps
  // computed on the host when the backend is another.
  void host_record(const StepId& id, Message name, StepKind kind, Operation made, arma::mat value,
                   std::vector<std::string> rows, std::vector<std::string> cols = {}) {
    record(id, std::move(name), kind, std::move(made), std::move(value), std::move(rows),
           std::move(cols));
    if (trace_.backend != "cpu") trace_.host_steps.push_back(id.str());
  }

  // heads.mean, heads.max:(n,m): the weights of every head, cell by cell.
  void head_summaries() {
    std::vector<std::string> ids;
    MatrixRefs weights;
    for (std::size_t h = 0; h < lesson_.heads; ++h) {
      const StepId head = StepId::head_step(h, HeadStep::weights);
      ids.push_back(head.str());
      weights.push_back(std::cref(value(head)));
    }
    record(StepId::heads(HeadSummary::mean), N_("Mean of the weights over heads"),
           StepKind::head_summary, {Op::mean, ids}, mean_over_heads(weights), lesson_.tokens,
           lesson_.key_tokens());
    record(StepId::heads(HeadSummary::max), N_("Max of the weights over heads"),
           StepKind::head_summary, {Op::max, ids}, max_over_heads(weights), lesson_.tokens,
           lesson_.key_tokens());
  }

  // concat:(n,h·d_v) = [C_0 | C_1 | ...]
  void concat() {
    std::vector<std::string> ids;
    std::vector<arma::mat> contexts;
    for (std::size_t h = 0; h < lesson_.heads; ++h) {
      const StepId head = StepId::head_step(h, HeadStep::context);
      ids.push_back(head.str());
      contexts.push_back(value(head));
    }
    record(StepId::concat(), N_("Concatenated heads"), StepKind::concat, {Op::concat, ids},
           concat_heads(contexts), lesson_.tokens);
  }

  // The encoder layer's sub-steps (lesson [layer]), each recorded under its
  // layer_step_id. Dropout is the identity at inference: no step for it.

  // layer.residual1 / layer.residual2:(n,d) = input + sub-layer output, or
  // the sub-layer's output alone with [layer] residual = false. -> its id
  StepId residual(LayerStep which, const StepId& input, const StepId& sublayer) {
    const StepId id = StepId::layer(which);
    const bool first = which == LayerStep::residual1;
    if (!lesson_.layer->residual) {
      record(id,
             first ? N_("Attention's output, no residual connection")
                   : N_("Feed-forward output, no residual connection"),
             StepKind::residual, {Op::identity, ids_of({sublayer})}, value(sublayer),
             lesson_.tokens);
      return id;
    }
    record(id,
           first ? N_("Residual sum around attention")
                 : N_("Residual sum around the feed-forward network"),
           StepKind::residual, {Op::add, ids_of({input, sublayer})}, value(input) + value(sublayer),
           lesson_.tokens);
    return id;
  }

  // LayerNorm number `which` (1 or 2) of x:(n,d): layer.ln{k}.mean:(n,1),
  // .var:(n,1), .normalised:(n,d), then its γ and β (given) and
  // layer.ln{k}:(n,d) = γ ⊙ normalised + β. -> layer.ln{k}
  StepId layer_norm(int which, const StepId& x) {
    const EncoderLayer& layer = *lesson_.layer;
    const bool first = which == 1;
    const StepId mean = StepId::layer(first ? LayerStep::ln1_mean : LayerStep::ln2_mean);
    const StepId var = StepId::layer(first ? LayerStep::ln1_var : LayerStep::ln2_var);
    const StepId normalised =
        StepId::layer(first ? LayerStep::ln1_normalised : LayerStep::ln2_normalised);
    const StepId out = StepId::layer(first ? LayerStep::ln1 : LayerStep::ln2);
    const std::string k = std::to_string(which);
    record(mean, Message(N_("LayerNorm {}: row means"), {k}), StepKind::norm,
           {Op::row_mean, ids_of({x})}, row_mean(value(x)), lesson_.tokens, {"mean"});
    record(var, Message(N_("LayerNorm {}: row variances"), {k}), StepKind::norm,
           {Op::row_var, ids_of({x, mean})}, row_variance(value(x), value(mean)), lesson_.tokens,
           {"var"});
    Operation made{Op::normalise, ids_of({x, mean, var})};
    made.eps = layer.eps;
    record(normalised, Message(N_("LayerNorm {}: normalised rows"), {k}), StepKind::norm, made,
           normalise_rows(value(x), value(mean), value(var), layer.eps), lesson_.tokens);
    const StepId gamma = StepId::given(first ? Given::ln1_gamma : Given::ln2_gamma);
    const StepId beta = StepId::given(first ? Given::ln1_beta : Given::ln2_beta);
    record(gamma, Message(N_("LayerNorm {} scale γ"), {k}), StepKind::input, {},
           arma::mat(first ? layer.ln1_gamma : layer.ln2_gamma), {gamma.str()});
    record(beta, Message(N_("LayerNorm {} shift β"), {k}), StepKind::input, {},
           arma::mat(first ? layer.ln1_beta : layer.ln2_beta), {beta.str()});
    record(out, Message(N_("LayerNorm {}"), {k}), StepKind::norm,
           {Op::scale_shift, ids_of({normalised, gamma, beta})},
           scale_shift(value(normalised), value(gamma).row(0), value(beta).row(0)), lesson_.tokens);
    return out;
  }

  // The position-wise feed-forward network on x:(n,d): layer.ffn.hidden:(n,d_ff)
  // = x·W_1 + b_1, layer.ffn.activation:(n,d_ff) = act(hidden),
  // layer.ffn.out:(n,d) = activation·W_2 + b_2. -> layer.ffn.out
  StepId feed_forward(const StepId& x) {
    const EncoderLayer& layer = *lesson_.layer;
    const StepId hidden = StepId::layer(LayerStep::ffn_hidden);
    const StepId activation = StepId::layer(LayerStep::ffn_activation);
    const StepId out = StepId::layer(LayerStep::ffn_out);
    projection(hidden, N_("Feed-forward hidden layer"), StepKind::ffn, x,
               {Given::W_1, Given::b_1, layer.W_1, layer.b_1}, lesson_.tokens);
    const bool gelu_on = layer.activation == Activation::gelu;
    record(activation, gelu_on ? "GELU" : "ReLU", StepKind::ffn,
           {gelu_on ? Op::gelu : Op::relu, ids_of({hidden})},
           gelu_on ? gelu(value(hidden)) : relu(value(hidden)), lesson_.tokens);
    projection(out, N_("Feed-forward output"), StepKind::ffn, activation,
               {Given::W_2, Given::b_2, layer.W_2, layer.b_2}, lesson_.tokens);
    return out;
  }

  // layer.output:(n,d): the layer's result, the input of a next layer.
  void layer_output(const StepId& result) {
    record(StepId::layer(LayerStep::output), N_("Encoder layer output"), StepKind::layer_output,
           {Op::identity, ids_of({result})}, value(result), lesson_.tokens);
  }

  // The fill as the lesson asks for it, and what the format makes of it: a
  // fill at or above 0 masks nothing (002 section 3.1); -1e9 is -inf in f16.
  void warn_about_fill() {
    const double asked = lesson_.mask_fill;
    const std::string asked_text = fmt::format("{:g}", asked);
    if (asked >= 0)
      warn(std::nullopt,
           {N_("mask_fill = {0} does not mask: a masked score becomes {0}, and exp({0} − row max) "
               "is not 0, so masked keys keep real weight (a fill of 0 fails, as 002 section 3.1 "
               "says); use -inf or a large negative number"),
            {asked_text}});
    if (fill() == asked) return;
    const std::string format(dtype_name(trace_.dtype));
    if (std::isinf(fill()))
      warn(std::nullopt,
           {N_("mask_fill = {} is not a number of {}: it rounds to {} (the largest finite {} "
               "number is {}), so masked scores are -inf and a row with every key masked is 0/0 = "
               "NaN unless masked_row says otherwise; -{} stays finite"),
            {asked_text, format, fmt::format("{}", fill()), format,
             fmt::format("{:g}", dtype_max(trace_.dtype)),
             fmt::format("{:g}", dtype_max(trace_.dtype))}});
    else
      warn(std::nullopt, {N_("mask_fill = {} is not a number of {}: it rounds to {}"),
                          {asked_text, format, fmt::format("{}", fill())}});
  }

  // Decoding token t with a KV cache (lesson [decode]), head h: the query of
  // token t and the keys and values of tokens 0..t, nothing later, so nothing
  // is masked. The cache is read from head{h}.K and .V: row t of K = x_t·W_K
  // is what step t would compute and append, the earlier rows are cached.
  void decode_step(std::size_t t, std::size_t h) {
    const auto id = [&](DecodeStep part) { return decode_step_id(t, h, part); };
    const StepId Q = StepId::head_step(h, HeadStep::Q), K = StepId::head_step(h, HeadStep::K),
                 V = StepId::head_step(h, HeadStep::V);
    const std::vector<std::string> token{lesson_.tokens.at(t)};
    const std::vector<std::string> cached(lesson_.tokens.begin(),
                                          lesson_.tokens.begin() + static_cast<long>(t) + 1);
    // q:(1,d_k), K_cache:(t+1,d_k), V_cache:(t+1,d_v): one head of one query,
    // nothing masked; its scores, scaled scores, weights and context.
    const arma::mat q = value(Q).rows(t, t), K_cache = value(K).rows(0, t),
                    V_cache = value(V).rows(0, t);
    const arma::umat open(1, t + 1, arma::fill::zeros);
    const AttentionInput in = attention_input(q, K_cache, V_cache, open, 1);
    const HeadAttention a = attend(in, [&](std::size_t, HeadStep part) -> std::optional<StepId> {
      const std::optional<DecodeStep> d = decode_step_of(part);
      if (d) return StepId::decode(t, h, *d);
      return std::nullopt;
    })[0];
    // Records decoding step `part` of head h, labelled by `cols` (features when empty).
    const auto step = [&](DecodeStep part, const char* name, StepKind kind, Operation made,
                          HeadStep computed, std::vector<std::string> rows,
                          std::vector<std::string> cols = {}) {
      record(StepId::decode(t, h, part), Message(name, {std::to_string(t), token[0]}), kind,
             std::move(made), a[computed], std::move(rows), std::move(cols));
    };
    step(DecodeStep::q, N_("Decoding t{}: query of {}"), StepKind::decode_query,
         {Op::rows, ids_of({Q}), t}, HeadStep::Q, token);
    step(DecodeStep::K_cache, N_("Decoding t{}: key cache"), StepKind::decode_cache,
         {Op::rows, ids_of({K}), 0}, HeadStep::K, cached);
    step(DecodeStep::V_cache, N_("Decoding t{}: value cache"), StepKind::decode_cache,
         {Op::rows, ids_of({V}), 0}, HeadStep::V, cached);
    // scores:(1,t+1) = q·K_cacheᵀ, scaled:(1,t+1) = scores / s
    step(DecodeStep::scores, N_("Decoding t{}: scores"), StepKind::decode_scores,
         {Op::matmul_t, {id(DecodeStep::q), id(DecodeStep::K_cache)}}, HeadStep::scores, token,
         cached);
    Operation divide{Op::divide, {id(DecodeStep::scores)}};
    divide.divisor = trace_.scale;
    step(DecodeStep::scaled, N_("Decoding t{}: scaled scores"), StepKind::decode_scaled, divide,
         HeadStep::scaled, token, cached);
    // weights:(1,t+1) = softmax(scaled), context:(1,d_v) = weights·V_cache
    step(DecodeStep::weights, N_("Decoding t{}: attention weights"), StepKind::decode_weights,
         {Op::softmax, {id(DecodeStep::scaled)}}, HeadStep::weights, token, cached);
    step(DecodeStep::context, N_("Decoding t{}: context"), StepKind::decode_context,
         {Op::matmul, {id(DecodeStep::weights), id(DecodeStep::V_cache)}}, HeadStep::context,
         token);
  }

  // decode.head{h}.check:(n,1): row t = max_j |decode.t{t}.head{h}.context[j]
  // − head{h}.context[t, j]|, the proof that the cache changes nothing; a row
  // above kDecodeTolerance is a warning.
  void decode_check(std::size_t h) {
    const StepId full = StepId::head_step(h, HeadStep::context);
    Operation made{Op::max_abs_diff, ids_of({full})};
    std::vector<arma::mat> rows;
    for (std::size_t t = 0; t < lesson_.queries(); ++t) {
      const StepId decoded = StepId::decode(t, h, DecodeStep::context);
      made.inputs.push_back(decoded.str());
      rows.push_back(value(decoded));
    }
    const StepId id = StepId::decode_check(h);
    const arma::mat& check =
        record(id, N_("KV cache check: each decoding step vs the full computation"),
               StepKind::decode_check, made, max_abs_row_difference(value(full), rows),
               lesson_.tokens, {"max |diff|"});
    for (std::size_t t = 0; t < check.n_rows; ++t)
      if (!(check(t, 0) <= kDecodeTolerance))
        warn(id, {N_("{0} row {1} ({2}): decoding step {1} with the KV cache differs from row {1} "
                     "of {3} by {4}, more than {5}"),
                  {id.str(), std::to_string(t), lesson_.tokens.at(t), full.str(),
                   fmt::format("{:g}", check(t, 0)), fmt::format("{:g}", kDecodeTolerance)}});
  }

 private:
  bool positions() const { return lesson_.positional_encoding == PositionalEncoding::sinusoidal; }
  bool rope() const { return lesson_.positional_encoding == PositionalEncoding::rope; }
  bool alibi() const { return lesson_.positional_encoding == PositionalEncoding::alibi; }

  // What attention reads: Q:(n,h·d_k) K:(m,h·d_k) V:(m,h·d_v) mask:(n,m).
  AttentionInput attention_input(const arma::mat& Q, const arma::mat& K, const arma::mat& V,
                                 const arma::umat& mask, std::size_t heads) const {
    AttentionInput in{Q, K, V, mask};
    in.heads = heads;
    in.d_k = lesson_.d_k;
    in.d_v = lesson_.d_v;
    in.divisor = divisor();
    in.fill = fill();
    in.policy = lesson_.masked_row;
    return in;
  }

  // Attention of every head of `in`: by the backend, in f64 with nothing
  // replaced; otherwise composed on the host in the lesson's format, each
  // step finished as record() finishes it (`id_of` names a head's step; none
  // for a step that is not recorded) before the next reads it.
  std::vector<HeadAttention> attend(
      const AttentionInput& in,
      const std::function<std::optional<StepId>(std::size_t, HeadStep)>& id_of) {
    const auto overridden = [&](std::size_t h, HeadStep part) {
      const std::optional<StepId> id = id_of(h, part);
      return id && overrides_.contains(id->str());
    };
    bool replaced = false;
    for (std::size_t h = 0; h < in.heads && !replaced; ++h)
      for (std::size_t s = 0; s < kHeadSteps && !replaced; ++s)
        replaced = overridden(h, static_cast<HeadStep>(s));
    if (!format_ && !replaced) return backend_.attend(in);
    StepHook hook;
    hook.computed = [&](std::size_t h, HeadStep part, arma::mat& v) {
      if (const std::optional<StepId> id = id_of(h, part))
        v = finished(id->str(), Op::slice, std::move(v));
    };
    hook.replaced = overridden;
    return attend_steps(in, arithmetic(), &hook);
  }

  // One operation's rounding in the lesson's format: f32 when it is narrower.
  Round rounding() const {
    if (!format_) return [](double x) { return x; };
    return [](double x) { return round_to(Dtype::f32, x); };
  }

  // The host arithmetic of the lesson's format.
  const Arithmetic& arithmetic() const {
    return format_ ? static_cast<const Arithmetic&>(*format_) : f64_arithmetic();
  }

  // X·W (+ b): the backend's in f64, the emulated format's otherwise.
  arma::mat project(const arma::mat& X, const arma::mat& W, const std::optional<arma::rowvec>& b) {
    arma::mat P = format_ ? format_->matmul(X, W) : backend_.matmul(X, W);
    if (b) P.each_row() += *b;
    return P;
  }

  // The scale as the computation holds it: in a narrower format an f32
  // number, as a kernel holds it.
  double divisor() const { return format_ ? round_to(Dtype::f32, trace_.scale) : trace_.scale; }

  // The fill as the format holds it: -1e9 is -inf in f16.
  double fill() const { return round_to(trace_.dtype, lesson_.mask_fill); }

  const arma::mat& value(const StepId& id) const { return trace_.at(id.str()).value; }

  // A warning about step `step` (none: about the whole lesson).
  void warn(std::optional<StepId> step, Message message) {
    trace_.warnings.push_back({std::move(step), std::move(message)});
  }

  // Records step `id`, finished: a computed step's cells replaced where the
  // caller overrides them, and rounded to the format.
  const arma::mat& record(const StepId& id, Message name, StepKind kind, Operation made,
                          arma::mat value, std::vector<std::string> rows,
                          std::vector<std::string> cols = {}) {
    Step step;
    step.step_id = id;
    step.id = id.str();
    step.head = id.head();
    step.decoding = id.decoding();
    value = finished(step.id, made.op, std::move(value));
    step.name = name.in(Language::en);
    step.title = std::move(name);
    step.kind = kind;
    step.made = std::move(made);
    step.value = std::move(value);
    step.rows = std::move(rows);
    step.cols = cols.empty() ? feature_labels(step.value.n_cols) : std::move(cols);
    trace_.steps.push_back(std::move(step));
    return trace_.steps.back().value;
  }

  // Step `id` as the trace holds it: a computed step's cells replaced where
  // the caller overrides them (a given step is the lesson's, never replaced);
  // in a narrower format the lesson's numbers rounded to it, and a computed
  // step stored in it (computed in f32 first). Finishing twice changes nothing.
  arma::mat finished(const std::string& id, Op op, arma::mat value) const {
    if (op != Op::given) value = overridden(id, std::move(value));
    if (!format_) return value;
    return op == Op::given ? round_to(trace_.dtype, value) : store_in(trace_.dtype, value);
  }

  // `computed`, with the cells the caller overrides for step `id` replaced.
  arma::mat overridden(const std::string& id, arma::mat computed) const {
    return with_overrides(overrides_, id, std::move(computed));
  }

  // Rows of head h's weights that are not what they seem: every key masked,
  // NaN from an overflowing score, or the work of a finite fill.
  void warn_about_rows(std::size_t h, const arma::mat& masked, const arma::mat& weights) {
    const StepId step = StepId::head_step(h, HeadStep::weights);
    const arma::vec masked_max = arma::max(masked, 1);  // by columns: contiguous in memory
    warn_about_masked_rows(step, masked_max);
    if (!weights.is_finite()) warn_about_non_finite_rows(step, masked_max, weights);
    if (std::isfinite(fill())) warn_about_finite_fill(step, weights);
  }

  // "h", "i", "token i": where a row warning about head h's step is.
  std::vector<std::string> row_of(const StepId& step, std::size_t i) const {
    return {std::to_string(step.head()), std::to_string(i), lesson_.tokens.at(i)};
  }

  // masked_max:(n,1): a row whose every key is masked (its max is -inf), and
  // what masked_row made of it.
  void warn_about_masked_rows(const StepId& step, const arma::vec& masked_max) {
    for (std::size_t i = 0; i < masked_max.n_rows; ++i) {
      if (masked_max(i) != -arma::datum::inf) continue;  // at least one key is open
      switch (lesson_.masked_row) {
        case MaskedRowPolicy::nan:
          warn(step, {N_("head{}.weights row {} ({}): every key is masked, softmax is 0/0 = NaN "
                         "(masked_row = \"nan\", as PyTorch's plain softmax)"),
                      row_of(step, i)});
          break;
        case MaskedRowPolicy::zero:
          warn(step, {N_("head{}.weights row {} ({}): every key is masked; the row is set to 0 "
                         "(masked_row = \"zero\")"),
                      row_of(step, i)});
          break;
        case MaskedRowPolicy::uniform:
          warn(step, {N_("head{}.weights row {} ({}): every key is masked; the row is set to 1/m "
                         "(masked_row = \"uniform\")"),
                      row_of(step, i)});
          break;
      }
    }
  }

  // weights:(n,m) with a NaN or infinite cell in a row that has an open key:
  // a score overflowed the format.
  void warn_about_non_finite_rows(const StepId& step, const arma::vec& masked_max,
                                  const arma::mat& weights) {
    std::vector<bool> reported(weights.n_rows, false);
    const arma::uvec bad = arma::find_nonfinite(weights);
    for (const arma::uword cell : bad) {
      const std::size_t i = cell % weights.n_rows;
      if (masked_max(i) != -arma::datum::inf) reported[i] = true;
    }
    for (std::size_t i = 0; i < weights.n_rows; ++i) {
      if (!reported[i]) continue;
      std::vector<std::string> args = row_of(step, i);
      args.emplace_back(dtype_name(trace_.dtype));
      warn(step, {format_ ? N_("head{0}.weights row {1} ({2}): not a number — a score of this row "
                               "is infinite or NaN (head{0}.scores overflowed {3}); use smaller "
                               "inputs")
                          : N_("head{0}.weights row {1} ({2}): not a number — a score of this row "
                               "is infinite or NaN (head{0}.scores overflowed double precision); "
                               "use smaller inputs"),
                  std::move(args)});
    }
  }

  // A finite fill: a row with every key masked comes out uniform, and masked
  // keys may keep weight when the fill is not far enough below the scores.
  void warn_about_finite_fill(const StepId& step, const arma::mat& weights) {
    const std::string fill_text = fmt::format("{:g}", fill());
    const arma::uvec open_keys = arma::sum(arma::umat(trace_.mask == 0u), 1);
    for (std::size_t i = 0; i < trace_.mask.n_rows; ++i) {
      std::vector<std::string> args = row_of(step, i);
      if (open_keys(i) == 0) {
        args.push_back(fill_text);
        if (store_in(trace_.dtype, std::exp(fill())) != 0.0)
          warn(step, {N_("head{}.weights row {} ({}): every key is masked, but the fill {} is "
                         "finite, so the softmax is defined and the row comes out uniform "
                         "(masked_row is not used)."),
                      std::move(args)});
        else
          warn(
              step,
              {N_("head{0}.weights row {1} ({2}): every key is masked, but the fill {3} is finite, "
                  "so the softmax is defined and the row comes out uniform (masked_row is not "
                  "used). On paper exp({3}) underflows to 0, so head{0}.exp and head{0}.row_sum "
                  "show 0 and E/Σ would be 0/0; only the row-max shift, exp(fill − fill) = 1 per "
                  "key, gives 1/m"),
               std::move(args)});
        continue;
      }
      double leaked = 0.0;  // the weight the masked keys of this row kept
      for (std::size_t j = 0; j < trace_.mask.n_cols; ++j)
        if (trace_.mask(i, j) != 0) leaked += weights(i, j);
      if (!(leaked > 0.0)) continue;  // NaN too: no warning
      args.push_back(fmt::format("{:.4g}", leaked));
      args.push_back(fill_text);
      warn(step, {N_("head{}.weights row {} ({}): the masked keys keep {} of the weight: the fill "
                     "{} is not far enough below the row's scores for exp(fill − row max) to "
                     "vanish; use -inf, or a large negative number the format can hold (-65504 in "
                     "f16)"),
                  std::move(args)});
    }
  }

  const Lesson& lesson_;
  Backend& backend_;
  std::optional<FormatArithmetic> format_;  // set when the lesson's dtype is not f64
  const Overrides& overrides_;
  Trace trace_;
};

}  // namespace

// Shape key: n queries, m keys, d model width, h heads, d_k and d_v per head.
Trace run_pipeline(const Lesson& lesson, Backend& backend, const Overrides& overrides) {
  Forward pass(lesson, backend, overrides);
  const std::vector<std::string>& queries = lesson.tokens;
  const std::vector<std::string>& keys = lesson.key_tokens();
  // 1. Inputs: X:(n,d) (+ PE), and memory:(m,d_mem) (+ PE) for cross-attention.
  pass.warn_about_fill();
  const StepId x = pass.queries_input();
  // An encoder layer placed Pre-LN normalises X before attention: layer.ln1:(n,d).
  const bool pre_ln = lesson.layer && lesson.layer->norm == NormPlacement::pre;
  const StepId attended = pre_ln ? pass.layer_norm(1, x) : x;
  const StepId source = pass.keys_input(attended);

  // 2. Projections: Q:(n,h·d_k) from the queries, K:(m,h·d_k) and V:(m,h·d_v) from the source.
  pass.projection(StepId::projection(Projection::Q), N_("Queries"), StepKind::projection, attended,
                  {Given::W_Q, Given::b_Q, lesson.W_Q, lesson.b_Q}, queries);
  pass.projection(StepId::projection(Projection::K), N_("Keys"), StepKind::projection, source,
                  {Given::W_K, Given::b_K, lesson.W_K, lesson.b_K}, keys);
  pass.projection(StepId::projection(Projection::V), N_("Values"), StepKind::projection, source,
                  {Given::W_V, Given::b_V, lesson.W_V, lesson.b_V}, keys);

  // 3. Attention, head by head (the heads are independent: computed side by side).
  //    head{h}.Q:(n,d_k) K:(m,d_k) V:(m,d_v) sliced; scores:(n,m) = Q_h·K_hᵀ;
  //    scaled = scores / s; masked: masked cells := fill; exp = exp(masked);
  //    row_sum:(n,1) = Σ_j exp; weights = softmax(masked); context:(n,d_v) = weights·V_h.
  pass.attention();

  // 4. How the heads compare (004 section 5.3): heads.mean, heads.max:(n,m).
  if (lesson.heads > 1) pass.head_summaries();

  // 5. Heads side by side, concat:(n,h·d_v), then output:(n,d_out) = concat·W_O (+ b_O).
  pass.concat();
  const StepId output = StepId::projection(Projection::output);
  if (lesson.W_O)
    pass.projection(output, N_("Output projection"), StepKind::output, StepId::concat(),
                    {Given::W_O, Given::b_O, *lesson.W_O, lesson.b_O}, queries);

  // 6. Encoder layer (003 section 5): residual sums, LayerNorms and the FFN.
  //    Post-LN: h = LN1(x + output), y = LN2(h + FFN(h)).
  //    Pre-LN:  h = x + output (output from LN1(x) above), y = h + FFN(LN2(h)).
  if (lesson.layer) {
    const StepId h = pass.residual(LayerStep::residual1, x, output);  // (n,d)
    const StepId ffn_in = pre_ln ? pass.layer_norm(2, h) : pass.layer_norm(1, h);
    const StepId ffn_out = pass.feed_forward(ffn_in);  // (n,d)
    const StepId y = pass.residual(LayerStep::residual2, pre_ln ? h : ffn_in, ffn_out);
    pass.layer_output(pre_ln ? y : pass.layer_norm(2, y));  // (n,d)
  }

  // 7. Decoding with a KV cache (003 section 4.4), token by token: step t
  //    attends from q_t:(1,d_k) over the cache of tokens 0..t, (t+1,d_k) and
  //    (t+1,d_v); its context:(1,d_v) must be row t of head{h}.context.
  if (lesson.kv_cache) {
    for (std::size_t t = 0; t < lesson.queries(); ++t)
      for (std::size_t h = 0; h < lesson.heads; ++h) pass.decode_step(t, h);
    for (std::size_t h = 0; h < lesson.heads; ++h) pass.decode_check(h);  // (n,1)
  }

  Trace trace = pass.finish();  // 8. [backward]: dL/d(every step), in reverse order
  if (lesson.backward) run_backward(lesson, trace, overrides);
  return trace;
}

}  // namespace attn
