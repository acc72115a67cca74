// Step ids: the one table of their spellings, the one printer and the one
// parser (of ids people write).
#include "core/step_id.hpp"

#include <fmt/format.h>

#include <charconv>
#include <iterator>
#include <stdexcept>

namespace attn {

namespace {

// What a given matrix is to the formulas and the PyTorch script.
enum class GivenRole { input, weight, bias, scale, shift };

struct GivenSpelling {
  const char* id;
  GivenRole role;
  int layer_norm;  // 1 or 2 for a LayerNorm's γ and β; 0 for the others
};

// In the order of enum Given.
constexpr GivenSpelling kGiven[] = {
    {"X", GivenRole::input, 0},         {"memory", GivenRole::input, 0},
    {"W_Q", GivenRole::weight, 0},      {"b_Q", GivenRole::bias, 0},
    {"W_K", GivenRole::weight, 0},      {"b_K", GivenRole::bias, 0},
    {"W_V", GivenRole::weight, 0},      {"b_V", GivenRole::bias, 0},
    {"W_O", GivenRole::weight, 0},      {"b_O", GivenRole::bias, 0},
    {"ln1_gamma", GivenRole::scale, 1}, {"ln1_beta", GivenRole::shift, 1},
    {"ln2_gamma", GivenRole::scale, 2}, {"ln2_beta", GivenRole::shift, 2},
    {"W_1", GivenRole::weight, 0},      {"b_1", GivenRole::bias, 0},
    {"W_2", GivenRole::weight, 0},      {"b_2", GivenRole::bias, 0},
    {"loss.target", GivenRole::input, 0}};
static_assert(std::size(kGiven) == static_cast<std::size_t>(Given::target) + 1);

constexpr const char* kPositionalIds[] = {"PE", "X+PE", "memory+PE"};
static_assert(std::size(kPositionalIds) == static_cast<std::size_t>(Positional::memory_PE) + 1);

constexpr const char* kProjectionIds[] = {"Q", "K", "V", "output"};
static_assert(std::size(kProjectionIds) == static_cast<std::size_t>(Projection::output) + 1);

constexpr const char* kHeadStepNames[] = {"Q",      "K",   "V",       "scores",  "scaled",
                                          "masked", "exp", "row_sum", "weights", "context"};
static_assert(std::size(kHeadStepNames) == static_cast<std::size_t>(HeadStep::context) + 1);

constexpr const char* kHeadSummaryIds[] = {"heads.mean", "heads.max"};
static_assert(std::size(kHeadSummaryIds) == static_cast<std::size_t>(HeadSummary::max) + 1);

struct LayerSpelling {
  const char* id;
  int layer_norm;  // 1 or 2 for the steps of a LayerNorm; 0 for the others
};

// In the order of enum LayerStep.
constexpr LayerSpelling kLayer[] = {{"layer.residual1", 0},
                                    {"layer.ln1.mean", 1},
                                    {"layer.ln1.var", 1},
                                    {"layer.ln1.normalised", 1},
                                    {"layer.ln1", 1},
                                    {"layer.ffn.hidden", 0},
                                    {"layer.ffn.activation", 0},
                                    {"layer.ffn.out", 0},
                                    {"layer.residual2", 0},
                                    {"layer.ln2.mean", 2},
                                    {"layer.ln2.var", 2},
                                    {"layer.ln2.normalised", 2},
                                    {"layer.ln2", 2},
                                    {"layer.output", 0}};
static_assert(std::size(kLayer) == static_cast<std::size_t>(LayerStep::output) + 1);

constexpr const char* kDecodeStepNames[] = {"q",      "K_cache", "V_cache", "scores",
                                            "scaled", "weights", "context"};
static_assert(std::size(kDecodeStepNames) == static_cast<std::size_t>(DecodeStep::context) + 1);

constexpr const char* kPositionStepNames[] = {
    "q_rot",         "k_rot",         "alibi_bias",     "biased",
    "q_rot_shifted", "k_rot_shifted", "scores_shifted", "shift_check"};
static_assert(std::size(kPositionStepNames) ==
              static_cast<std::size_t>(PositionStep::shift_check) + 1);

constexpr const char* kConcatId = "concat";

constexpr const char* kTileStepNames[] = {"scores", "m", "rescale", "l", "acc"};
static_assert(std::size(kTileStepNames) == static_cast<std::size_t>(TileStep::acc) + 1);

constexpr const char* kTiledStepNames[] = {"tiled_context", "tiled_check"};
static_assert(std::size(kTiledStepNames) == static_cast<std::size_t>(TiledStep::check) + 1);

constexpr const char* kLinearStepNames[] = {"phi_q",
                                            "phi_k",
                                            "kv",
                                            "normaliser",
                                            "numerator",
                                            "similarity",
                                            "linear_weights",
                                            "quadratic_numerator",
                                            "linear_check"};
static_assert(std::size(kLinearStepNames) == static_cast<std::size_t>(LinearStep::check) + 1);

constexpr const char* kBackwardStepNames[] = {"row_dot", "jacobian"};
static_assert(std::size(kBackwardStepNames) == static_cast<std::size_t>(BackwardStep::jacobian) + 1);

constexpr std::string_view kGradientPrefix = "grad.";

int number(std::size_t n) {
  return static_cast<int>(n);
}

// The place of `text` in `names` (read by `spelling`), or nullopt.
template <typename Table, typename Spelling>
std::optional<int> index_in(const Table& names, std::string_view text, Spelling spelling) {
  for (std::size_t k = 0; k < std::size(names); ++k)
    if (text == spelling(names[k])) return number(k);
  return std::nullopt;
}

template <std::size_t N>
std::optional<int> index_in(const char* const (&names)[N], std::string_view text) {
  return index_in(names, text, [](const char* name) { return name; });
}

// Removes `prefix` from the start of `text`; false (text unchanged) when it is not there.
bool consume(std::string_view& text, std::string_view prefix) {
  if (!text.starts_with(prefix)) return false;
  text.remove_prefix(prefix.size());
  return true;
}

// The decimal number at the start of `text`, removed; nullopt when there is
// none or it does not fit an int.
std::optional<std::size_t> consume_number(std::string_view& text) {
  int value = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc() || value < 0) return std::nullopt;
  text.remove_prefix(static_cast<std::size_t>(end - text.data()));
  return static_cast<std::size_t>(value);
}

// "t{t}.head{h}.{part}" or "head{h}.check", after "decode.".
std::optional<StepId> read_decode_id(std::string_view rest) {
  if (consume(rest, "head")) {
    const std::optional<std::size_t> head = consume_number(rest);
    if (head && rest == ".check") return StepId::decode_check(*head);
    return std::nullopt;
  }
  if (!consume(rest, "t")) return std::nullopt;
  const std::optional<std::size_t> t = consume_number(rest);
  if (!t || !consume(rest, ".head")) return std::nullopt;
  const std::optional<std::size_t> head = consume_number(rest);
  if (!head || !consume(rest, ".")) return std::nullopt;
  if (const std::optional<int> part = index_in(kDecodeStepNames, rest))
    return StepId::decode(*t, *head, static_cast<DecodeStep>(*part));
  return std::nullopt;
}

// After "head{h}.": "tile{i}_{j}.{part}", a tiled step or a linear step.
std::optional<StepId> read_efficient_id(std::size_t head, std::string_view rest) {
  if (const std::optional<int> k = index_in(kTiledStepNames, rest))
    return StepId::tiled(head, static_cast<TiledStep>(*k));
  if (const std::optional<int> k = index_in(kLinearStepNames, rest))
    return StepId::linear(head, static_cast<LinearStep>(*k));
  if (!consume(rest, "tile")) return std::nullopt;
  const std::optional<std::size_t> i = consume_number(rest);
  if (!i || !consume(rest, "_")) return std::nullopt;
  const std::optional<std::size_t> j = consume_number(rest);
  if (!j || !consume(rest, ".")) return std::nullopt;
  if (const std::optional<int> k = index_in(kTileStepNames, rest))
    return StepId::tile(head, *i, *j, static_cast<TileStep>(*k));
  return std::nullopt;
}

std::optional<StepId> read_step_id(std::string_view text);

// After "grad.": a forward step's id, or "head{h}.row_dot" / "head{h}.jacobian".
std::optional<StepId> read_gradient_id(std::string_view rest) {
  std::string_view head_part = rest;
  if (consume(head_part, "head")) {
    const std::optional<std::size_t> head = consume_number(head_part);
    if (head && consume(head_part, "."))
      if (const std::optional<int> k = index_in(kBackwardStepNames, head_part))
        return StepId::backward(*head, static_cast<BackwardStep>(*k));
  }
  const std::optional<StepId> forward = read_step_id(rest);
  if (!forward || forward->family() == StepFamily::gradient) return std::nullopt;
  return StepId::gradient(*forward);
}

// Any spelling that names a step, "head01.scores" included.
std::optional<StepId> read_step_id(std::string_view text) {
  if (std::string_view rest = text; consume(rest, kGradientPrefix)) return read_gradient_id(rest);
  if (const auto k = index_in(kGiven, text, [](const GivenSpelling& g) { return g.id; }))
    return StepId::given(static_cast<Given>(*k));
  if (const auto k = index_in(kPositionalIds, text))
    return StepId::positional(static_cast<Positional>(*k));
  if (const auto k = index_in(kProjectionIds, text))
    return StepId::projection(static_cast<Projection>(*k));
  if (const auto k = index_in(kHeadSummaryIds, text))
    return StepId::heads(static_cast<HeadSummary>(*k));
  if (const auto k = index_in(kLayer, text, [](const LayerSpelling& l) { return l.id; }))
    return StepId::layer(static_cast<LayerStep>(*k));
  if (text == kConcatId) return StepId::concat();
  std::string_view rest = text;
  if (consume(rest, "decode.")) return read_decode_id(rest);
  if (!consume(rest, "head")) return std::nullopt;
  const std::optional<std::size_t> head = consume_number(rest);
  if (!head || !consume(rest, ".")) return std::nullopt;
  if (const std::optional<HeadStep> part = parse_head_step(rest))
    return StepId::head_step(*head, *part);
  if (const std::optional<int> k = index_in(kPositionStepNames, rest))
    return StepId::position(*head, static_cast<PositionStep>(*k));
  return read_efficient_id(*head, rest);
}

}  // namespace

StepId StepId::given(Given part) {
  return {StepFamily::given, -1, -1, static_cast<int>(part)};
}

StepId StepId::positional(Positional part) {
  return {StepFamily::positional, -1, -1, static_cast<int>(part)};
}

StepId StepId::projection(Projection part) {
  return {StepFamily::projection, -1, -1, static_cast<int>(part)};
}

StepId StepId::head_step(std::size_t head, HeadStep part) {
  return {StepFamily::head, number(head), -1, static_cast<int>(part)};
}

StepId StepId::heads(HeadSummary part) {
  return {StepFamily::heads, -1, -1, static_cast<int>(part)};
}

StepId StepId::concat() {
  return {StepFamily::concat, -1, -1, 0};
}

StepId StepId::layer(LayerStep part) {
  return {StepFamily::layer, -1, -1, static_cast<int>(part)};
}

StepId StepId::decode(std::size_t t, std::size_t head, DecodeStep part) {
  return {StepFamily::decode, number(head), number(t), static_cast<int>(part)};
}

StepId StepId::decode_check(std::size_t head) {
  return {StepFamily::decode_check, number(head), -1, 0};
}

StepId StepId::position(std::size_t head, PositionStep part) {
  return {StepFamily::head_position, number(head), -1, static_cast<int>(part)};
}

StepId StepId::tile(std::size_t head, std::size_t query_block, std::size_t key_block,
                    TileStep part) {
  StepId id{StepFamily::tile, number(head), -1, static_cast<int>(part)};
  id.query_block_ = number(query_block);
  id.key_block_ = number(key_block);
  return id;
}

StepId StepId::tiled(std::size_t head, TiledStep part) {
  return {StepFamily::tiled, number(head), -1, static_cast<int>(part)};
}

StepId StepId::linear(std::size_t head, LinearStep part) {
  return {StepFamily::linear, number(head), -1, static_cast<int>(part)};
}

StepId StepId::gradient(const StepId& forward) {
  if (forward.family_ == StepFamily::gradient || forward.family_ == StepFamily::backward)
    throw std::logic_error(fmt::format("StepId::gradient: {} is not a forward step", forward.str()));
  StepId id = forward;
  id.forward_family_ = forward.family_;
  id.family_ = StepFamily::gradient;
  return id;
}

StepId StepId::backward(std::size_t head, BackwardStep part) {
  return {StepFamily::backward, number(head), -1, static_cast<int>(part)};
}

StepId StepId::forward() const {
  if (family_ != StepFamily::gradient)
    throw std::logic_error(fmt::format("step {}: not a gradient step", str()));
  StepId id = *this;
  id.family_ = forward_family_;
  id.forward_family_ = StepFamily::given;
  return id;
}

BackwardStep StepId::backward_part() const {
  return static_cast<BackwardStep>(part_in(StepFamily::backward));
}

int StepId::part_in(StepFamily family) const {
  if (family_ != family)
    throw std::logic_error(fmt::format("step {}: its part is read as another family's", str()));
  return part_;
}

Given StepId::given_part() const {
  return static_cast<Given>(part_in(StepFamily::given));
}

Positional StepId::positional_part() const {
  return static_cast<Positional>(part_in(StepFamily::positional));
}

Projection StepId::projection_part() const {
  return static_cast<Projection>(part_in(StepFamily::projection));
}

HeadStep StepId::head_part() const {
  return static_cast<HeadStep>(part_in(StepFamily::head));
}

HeadSummary StepId::heads_part() const {
  return static_cast<HeadSummary>(part_in(StepFamily::heads));
}

LayerStep StepId::layer_part() const {
  return static_cast<LayerStep>(part_in(StepFamily::layer));
}

DecodeStep StepId::decode_part() const {
  return static_cast<DecodeStep>(part_in(StepFamily::decode));
}

PositionStep StepId::position_part() const {
  return static_cast<PositionStep>(part_in(StepFamily::head_position));
}

TileStep StepId::tile_part() const {
  return static_cast<TileStep>(part_in(StepFamily::tile));
}

TiledStep StepId::tiled_part() const {
  return static_cast<TiledStep>(part_in(StepFamily::tiled));
}

LinearStep StepId::linear_part() const {
  return static_cast<LinearStep>(part_in(StepFamily::linear));
}

std::string StepId::str() const {
  switch (family_) {
    case StepFamily::given:
      return kGiven[part_].id;
    case StepFamily::positional:
      return kPositionalIds[part_];
    case StepFamily::projection:
      return kProjectionIds[part_];
    case StepFamily::head:
      return fmt::format("head{}.{}", head_, kHeadStepNames[part_]);
    case StepFamily::heads:
      return kHeadSummaryIds[part_];
    case StepFamily::concat:
      return kConcatId;
    case StepFamily::layer:
      return kLayer[part_].id;
    case StepFamily::decode:
      return fmt::format("decode.t{}.head{}.{}", decoding_, head_, kDecodeStepNames[part_]);
    case StepFamily::decode_check:
      return fmt::format("decode.head{}.check", head_);
    case StepFamily::head_position:
      return fmt::format("head{}.{}", head_, kPositionStepNames[part_]);
    case StepFamily::tile:
      return fmt::format("head{}.tile{}_{}.{}", head_, query_block_, key_block_,
                         kTileStepNames[part_]);
    case StepFamily::tiled:
      return fmt::format("head{}.{}", head_, kTiledStepNames[part_]);
    case StepFamily::linear:
      return fmt::format("head{}.{}", head_, kLinearStepNames[part_]);
    case StepFamily::gradient:
      return std::string(kGradientPrefix) + forward().str();
    case StepFamily::backward:
      return fmt::format("{}head{}.{}", kGradientPrefix, head_, kBackwardStepNames[part_]);
  }
  return "";
}

std::optional<StepId> parse_step_id(std::string_view text) {
  const std::optional<StepId> id = read_step_id(text);
  if (id && id->str() == text) return id;  // the exact spelling only
  return std::nullopt;
}

std::optional<HeadStep> parse_head_step(std::string_view text) {
  if (const std::optional<int> k = index_in(kHeadStepNames, text)) return static_cast<HeadStep>(*k);
  return std::nullopt;
}

std::optional<HeadStep> parse_every_head_step(std::string_view text) {
  return consume(text, "head*.") ? parse_head_step(text) : std::nullopt;
}

bool is_bias(const StepId& id) {
  return id.family() == StepFamily::given &&
         kGiven[static_cast<int>(id.given_part())].role == GivenRole::bias;
}

bool is_weight(const StepId& id) {
  return id.family() == StepFamily::given &&
         kGiven[static_cast<int>(id.given_part())].role == GivenRole::weight;
}

bool is_layer_norm_scale(const StepId& id) {
  return id.family() == StepFamily::given &&
         kGiven[static_cast<int>(id.given_part())].role == GivenRole::scale;
}

std::optional<int> layer_norm_number(const StepId& id) {
  int k = 0;
  if (id.family() == StepFamily::given) k = kGiven[static_cast<int>(id.given_part())].layer_norm;
  if (id.family() == StepFamily::layer) k = kLayer[static_cast<int>(id.layer_part())].layer_norm;
  return k ? std::optional<int>(k) : std::nullopt;
}

std::string head_step_id(std::size_t head, HeadStep step) {
  return StepId::head_step(head, step).str();
}

std::string layer_step_id(LayerStep step) {
  return StepId::layer(step).str();
}

std::string decode_step_id(std::size_t t, std::size_t head, DecodeStep step) {
  return StepId::decode(t, head, step).str();
}

std::string decode_check_id(std::size_t head) {
  return StepId::decode_check(head).str();
}

}  // namespace attn

namespace attn {

std::string position_step_id(std::size_t head, PositionStep step) {
  return StepId::position(head, step).str();
}

}  // namespace attn
