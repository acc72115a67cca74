// Loading a lesson file (docs/lesson-format.md): every key read, every shape checked.
#include "core/lesson.hpp"
#include "core/i18n.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <filesystem>

#include "core/error.hpp"
#include "core/limits.hpp"
#include "core/mask_pattern_read.hpp"
#include "core/number_text.hpp"
#include "core/quantity_claim.hpp"
#include "core/read_input.hpp"
#include "core/toml_read.hpp"

namespace attn {

const std::string& Lesson::title_for(Language lang) const {
  return lang == Language::zh && !title_zh.empty() ? title_zh : title;
}

const std::string& Lesson::story_for(Language lang) const {
  return lang == Language::zh && !story_zh.empty() ? story_zh : story;
}

double Lesson::scale_divisor() const {
  switch (scale_kind) {
    case ScaleKind::sqrt_dk:
      return std::sqrt(static_cast<double>(d_k));
    case ScaleKind::none:
      return 1.0;
    case ScaleKind::number:
      return scale_number;
  }
  return 1.0;
}

namespace {

// A weight matrix: a TOML matrix or the string "identity" (square, of `size`).
arma::mat read_weight(const TomlReader& toml, const toml::node& node, std::string_view key,
                      std::size_t size) {
  if (node.is_string()) {
    if (node.as_string()->get() != "identity")
      toml.fail(&node, key,
                tr_format("\"{}\" is not a weight matrix; write a matrix or \"identity\"",
                          node.as_string()->get()));
    return arma::eye(size, size);
  }
  return toml.matrix(node, key);
}

std::vector<std::string> default_tokens(std::size_t n) {
  std::vector<std::string> out;
  for (std::size_t i = 0; i < n; ++i) out.push_back(fmt::format("t{}", i));
  return out;
}

class LessonParser {
 public:
  explicit LessonParser(const TomlReader& toml) : toml_(toml) {}

  Lesson parse() {
    const toml::table& root = toml_.root();
    toml_.require_known_keys(
        root, "", {"lesson", "model", "input", "weights", "layer", "decode", "backward", "exercise",
                "claim"});
    lesson_.origin = toml_.origin();
    read_header(root);
    read_model(root);
    read_input(root);
    read_weights(root);
    read_layer(root);
    read_decode(root);
    read_lesson_mask_pattern(toml_, model_, lesson_);  // needs [input] and [decode]
    check_efficient();
    read_exercise(root);
    read_claims(root);
    check_shapes();
    check_layer_shapes();
    read_backward(root);  // needs the result's shape
    check_lesson_limits(lesson_);  // before a trace allocates anything
    return std::move(lesson_);
  }

 private:
  const toml::node* get(const toml::table* table, std::string_view key) const {
    return table ? table->get(key) : nullptr;
  }

  // One of a few named values: "\"x\" is not a policy; write \"a\", \"b\" or \"c\"".
  template <typename Value>
  Value choice(const toml::node& node, const std::string& key, std::string_view what,
               std::initializer_list<std::pair<std::string_view, Value>> options) const {
    const std::string s = toml_.string(node, key);
    std::string names;
    std::size_t i = 0;
    for (const auto& [name, value] : options) {
      if (s == name) return value;
      names += fmt::format("{}\"{}\"", i == 0 ? "" : i + 1 == options.size() ? " or " : ", ", name);
      ++i;
    }
    const bool vowel =
        !what.empty() && std::string_view("aeiou").find(what[0]) != std::string_view::npos;
    toml_.fail(&node, key,
               tr_format("\"{}\" is not {} {}; write {}", s, vowel ? "an" : "a", what, names));
  }

  void read_header(const toml::table& root) {
    const toml::table* t = toml_.table(root, "lesson");
    if (t)
      toml_.require_known_keys(*t, "lesson",
                               {"id", "title", "title_zh", "source", "story", "story_zh", "level",
                                "after", "variant_of"});
    // The id names files (golden/<id>.toml): letters, digits, '.', '_', '-' only.
    auto file_safe = [](char c) {
      return std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-';
    };
    if (const toml::node* n = get(t, "id")) {
      lesson_.id = toml_.string(*n, "lesson.id");
      if (lesson_.id.empty() || lesson_.id.front() == '.' ||
          !std::all_of(lesson_.id.begin(), lesson_.id.end(), file_safe))
        toml_.fail(n, "lesson.id",
                   tr_format("\"{}\" cannot name a file; use letters, digits, '.', '_' and "
                             "'-' only, not starting with '.', e.g. \"my-lesson\"",
                             lesson_.id));
    } else {  // the file's name, made safe
      lesson_.id = std::filesystem::path(toml_.origin()).stem().string();
      for (char& c : lesson_.id)
        if (!file_safe(c)) c = '-';
      if (lesson_.id.empty() || lesson_.id.front() == '.') lesson_.id = "lesson" + lesson_.id;
    }
    static constexpr std::pair<std::string_view, std::string Lesson::*> kTexts[] = {
        {"title", &Lesson::title},
        {"source", &Lesson::source},
        {"story", &Lesson::story},
        {"title_zh", &Lesson::title_zh},
        {"story_zh", &Lesson::story_zh}};
    for (const auto& [key, text] : kTexts)
      if (const toml::node* n = get(t, key))
        lesson_.*text = toml_.string(*n, fmt::format("lesson.{}", key));
    if (const toml::node* n = get(t, "level")) {
      const long long level = toml_.integer(*n, "lesson.level");
      if (level < kMinLevel || level > kMaxLevel)
        toml_.fail(n, "lesson.level",
                   tr_format("{} is not a level; write {} to {} (1 one head by hand, 2 scaling "
                             "and softmax, 3 masks and positions, 4 several heads and sequences, 5 the "
                             "backward pass)",
                             level, kMinLevel, kMaxLevel));
      lesson_.level = static_cast<int>(level);
    }
    if (const toml::node* n = get(t, "after")) {
      lesson_.after = toml_.strings(*n, "lesson.after");
      for (const std::string& id : lesson_.after)
        if (id == lesson_.id)
          toml_.fail(n, "lesson.after",
                     tr_format("\"{}\" is this lesson itself; list the lessons it builds on", id));
    }
    if (const toml::node* n = get(t, "variant_of")) {
      lesson_.variant_of = toml_.string(*n, "lesson.variant_of");
      if (lesson_.variant_of == lesson_.id)
        toml_.fail(n, "lesson.variant_of",
                   tr("a lesson cannot be a variant of itself; name another"));
    }
  }

  void read_model(const toml::table& root) {
    const toml::table* t = toml_.table(root, "model");
    model_ = t;
    if (!t) return;
    toml_.require_known_keys(*t, "model",
                             {"heads", "d_k", "scale", "causal", "mask_fill", "masked_row",
                              "positional_encoding", "dtype", "kv_heads", "rope_shift", "window",
                              "global", "stride", "tile", "attention"});
    if (const toml::node* n = get(t, "heads")) lesson_.heads = at_least_one(*n, "model.heads");
    if (const toml::node* n = get(t, "d_k")) {
      lesson_.d_k = at_least_one(*n, "model.d_k");
      d_k_node_ = n;
    }
    if (const toml::node* n = get(t, "scale")) read_scale(*n);
    if (const toml::node* n = get(t, "causal")) lesson_.causal = toml_.boolean(*n, "model.causal");
    if (const toml::node* n = get(t, "mask_fill")) lesson_.mask_fill = mask_fill(*n);
    if (const toml::node* n = get(t, "masked_row"))
      lesson_.masked_row = choice<MaskedRowPolicy>(*n, "model.masked_row", "policy",
                                                   {{"nan", MaskedRowPolicy::nan},
                                                    {"zero", MaskedRowPolicy::zero},
                                                    {"uniform", MaskedRowPolicy::uniform}});
    if (const toml::node* n = get(t, "dtype"))
      lesson_.dtype = choice<Dtype>(
          *n, "model.dtype", "number format",
          {{"f64", Dtype::f64}, {"f32", Dtype::f32}, {"f16", Dtype::f16}, {"bf16", Dtype::bf16}});
    if (const toml::node* n = get(t, "positional_encoding"))
      lesson_.positional_encoding = choice<PositionalEncoding>(
          *n, "model.positional_encoding", "positional encoding",
          {{"none", PositionalEncoding::none},
           {"sinusoidal", PositionalEncoding::sinusoidal},
           {"rope", PositionalEncoding::rope},
           {"alibi", PositionalEncoding::alibi}});
    read_heads_and_positions(*t);
    read_efficient(*t);
  }

  // kv_heads and rope_shift (their shapes are checked with the heads').
  void read_heads_and_positions(const toml::table& t) {
    if (const toml::node* n = get(&t, "kv_heads")) {
      lesson_.kv_heads = at_least_one(*n, "model.kv_heads");
      kv_heads_node_ = n;
    }
    if (const toml::node* n = get(&t, "rope_shift")) {
      if (lesson_.positional_encoding != PositionalEncoding::rope)
        toml_.fail(n, "model.rope_shift",
                   tr("rope_shift checks rotary positions; set positional_encoding = \"rope\" "
                      "or remove rope_shift"));
      lesson_.rope_shift = at_least_one(*n, "model.rope_shift");
    }
  }

  // model.tile = [Bq, Bk] and model.attention (checked against the input in
  // check_efficient, once the tokens and masks are read).
  void read_efficient(const toml::table& t) {
    if (const toml::node* n = get(&t, "attention"))
      lesson_.attention = choice<AttentionKind>(
          *n, "model.attention", "attention",
          {{"softmax", AttentionKind::softmax}, {"linear", AttentionKind::linear}});
    const toml::node* n = get(&t, "tile");
    if (!n) return;
    const toml::array* sizes = n->as_array();
    if (!sizes || sizes->size() != 2)
      toml_.fail(n, "model.tile",
                 tr("write tile = [Bq, Bk]: the rows of a query block and the columns of a key "
                    "block, e.g. tile = [2, 2]"));
    lesson_.tile = TileSizes{at_least_one(*sizes->get(0), "model.tile"),
                             at_least_one(*sizes->get(1), "model.tile")};
  }

  // A count such as model.heads: an integer, at least 1.
  std::size_t at_least_one(const toml::node& node, std::string_view key) const {
    const long long count = toml_.integer(node, key);
    if (count < 1) toml_.fail(&node, key, tr("must be at least 1"));
    return static_cast<std::size_t>(count);
  }

  // model.scale: "sqrt_dk", "none" or a positive divisor.
  void read_scale(const toml::node& n) {
    if (n.is_string()) {
      const std::string s = n.as_string()->get();
      if (s == "sqrt_dk")
        lesson_.scale_kind = ScaleKind::sqrt_dk;
      else if (s == "none")
        lesson_.scale_kind = ScaleKind::none;
      else
        toml_.fail(
            &n, "model.scale",
            tr_format("\"{}\" is not a scale; write \"sqrt_dk\", \"none\" or a positive number",
                      s));
      return;
    }
    const double s = toml_.number(n, "model.scale").value;
    if (!(s > 0))
      toml_.fail(&n, "model.scale",
                 tr_format("{} is not a valid divisor; the scale must be a positive number "
                           "(or \"sqrt_dk\" / \"none\")",
                           s));
    lesson_.scale_kind = ScaleKind::number;
    lesson_.scale_number = s;
  }

  // model.mask_fill: -inf (the string or a TOML float) or a number.
  double mask_fill(const toml::node& n) const {
    if (n.is_string() && n.as_string()->get() == "-inf") return -arma::datum::inf;
    if (n.is_floating_point() && n.as_floating_point()->get() == -arma::datum::inf)
      return -arma::datum::inf;
    // A fill at or above 0 is allowed, to show that it fails: the trace
    // warns that masked keys keep real weight.
    if (n.is_number()) return toml_.number(n, "model.mask_fill").value;
    toml_.fail(&n, "model.mask_fill", tr("write \"-inf\" or a finite number such as -1e9"));
  }

  void read_input(const toml::table& root) {
    const toml::table* t = toml_.table(root, "input");
    if (!t)
      throw InputError(
          tr_format("{}: missing table [input]; a lesson needs at least "
                    "[input] X = [[...]]",
                    toml_.origin()));
    toml_.require_known_keys(*t, "input",
                             {"tokens", "X", "memory_tokens", "memory", "key_padding", "keep"});
    const toml::node* x = get(t, "X");
    if (!x) toml_.fail(t, "input.X", tr("missing; give the input embeddings, one row per token"));
    lesson_.X = toml_.matrix(*x, "input.X");

    if (const toml::node* n = get(t, "memory")) lesson_.memory = toml_.matrix(*n, "input.memory");
    read_tokens(get(t, "tokens"));
    read_memory_tokens(get(t, "memory_tokens"));
    if (const toml::node* n = get(t, "key_padding")) lesson_.key_padding = padded_keys(*n);
    if (const toml::node* n = get(t, "keep")) lesson_.keep = keep_matrix(*n);
  }

  // input.tokens, one per row of X; t0, t1, ... when not given.
  void read_tokens(const toml::node* n) {
    if (!n) {
      lesson_.tokens = default_tokens(lesson_.X.n_rows);
      return;
    }
    lesson_.tokens = toml_.strings(*n, "input.tokens");
    if (lesson_.tokens.size() != lesson_.X.n_rows)
      toml_.fail(n, "input.tokens",
                 tr_format("{} tokens but X has {} rows ({}); give one token per row of X",
                           lesson_.tokens.size(), lesson_.X.n_rows,
                           shape_str(lesson_.X.n_rows, lesson_.X.n_cols)));
  }

  // input.memory_tokens, one per row of memory; m0, m1, ... when not given.
  void read_memory_tokens(const toml::node* n) {
    const std::size_t m = lesson_.keys();
    if (!n) {
      if (lesson_.memory)
        for (std::size_t i = 0; i < m; ++i) lesson_.memory_tokens.push_back(fmt::format("m{}", i));
      return;
    }
    if (!lesson_.memory)
      toml_.fail(n, "input.memory_tokens",
                 tr("given without input.memory; add memory = [[...]] "
                    "(cross-attention) or remove memory_tokens"));
    lesson_.memory_tokens = toml_.strings(*n, "input.memory_tokens");
    if (lesson_.memory_tokens.size() != m)
      toml_.fail(n, "input.memory_tokens",
                 tr_format("{} tokens but memory has {} rows; give one token per row of memory",
                           lesson_.memory_tokens.size(), m));
  }

  // input.key_padding: true (padded) or false, one per key.
  std::vector<bool> padded_keys(const toml::node& n) const {
    const toml::array* arr = n.as_array();
    if (!arr)
      toml_.fail(&n, "input.key_padding", tr("expected an array of true/false, one per key"));
    std::vector<bool> padded;
    for (const toml::node& item : *arr) {
      if (item.is_boolean())
        padded.push_back(item.as_boolean()->get());
      else if (item.is_integer() &&
               (item.as_integer()->get() == 0 || item.as_integer()->get() == 1))
        padded.push_back(item.as_integer()->get() == 1);
      else
        toml_.fail(&item, "input.key_padding", tr("each entry must be true (padded) or false"));
    }
    const std::size_t m = lesson_.keys();
    if (padded.size() != m)
      toml_.fail(&n, "input.key_padding",
                 tr_format("{} entries but there are {} keys ({}); give one entry per key",
                           padded.size(), m, lesson_.memory ? "rows of memory" : "rows of X"));
    return padded;
  }

  // input.keep:(n,m) of 1 (may attend) and 0 (masked).
  arma::umat keep_matrix(const toml::node& n) const {
    const std::size_t m = lesson_.keys();
    const arma::mat keep = toml_.matrix(n, "input.keep");
    if (keep.n_rows != lesson_.X.n_rows || keep.n_cols != m)
      toml_.fail(&n, "input.keep",
                 tr_format("keep is {} but the scores are {} (queries × keys); give one row "
                           "per query and one column per key",
                           shape_str(keep.n_rows, keep.n_cols), shape_str(lesson_.X.n_rows, m)));
    if (arma::any(arma::vectorise((keep != 0.0) % (keep != 1.0))))
      toml_.fail(&n, "input.keep", tr("entries must be 1 (may attend) or 0 (masked)"));
    return arma::conv_to<arma::umat>::from(keep);
  }

  void read_weights(const toml::table& root) {
    const toml::table* t = toml_.table(root, "weights");
    if (!t)
      throw InputError(
          tr_format("{}: missing table [weights]; give W_Q, W_K and W_V "
                    "(a matrix each, or \"identity\")",
                    toml_.origin()));
    weights_ = t;
    toml_.require_known_keys(*t, "weights",
                             {"layout", "W_Q", "W_K", "W_V", "W_O", "b_Q", "b_K", "b_V", "b_O",
                              "in_proj_weight", "in_proj_bias", "W_1", "b_1", "W_2", "b_2",
                              "ln1_gamma", "ln1_beta", "ln2_gamma", "ln2_beta"});
    if (const toml::node* n = get(t, "layout"))
      out_in_ = choice<bool>(*n, "weights.layout", "weight layout",
                             {{"in_out", false}, {"out_in", true}});
    const std::size_t d_model = lesson_.X.n_cols;
    const std::size_t d_mem = lesson_.memory ? lesson_.memory->n_cols : d_model;
    auto required = [&](std::string_view key, std::size_t size) {
      const toml::node* n = get(t, key);
      if (!n)
        toml_.fail(t, fmt::format("weights.{}", key),
                   tr("missing; give a matrix or \"identity\" (or W_Q, W_K and W_V together as "
                      "in_proj_weight)"));
      return weight(*n, fmt::format("weights.{}", key), size);
    };
    if (const toml::node* packed = get(t, "in_proj_weight")) {
      read_in_proj_weight(*packed);
    } else {
      lesson_.W_Q = required("W_Q", d_model);
      lesson_.W_K = required("W_K", d_mem);
      lesson_.W_V = required("W_V", d_mem);
    }
    if (const toml::node* n = get(t, "W_O")) {
      // identity W_O is sized once the concat width is known (check_shapes).
      if (n->is_string() && n->as_string()->get() == "identity") w_o_identity_ = true;
      lesson_.W_O = weight(*n, "weights.W_O", 0);
    }
    if (const toml::node* n = get(t, "in_proj_bias")) {
      for (std::string_view key : {"b_Q", "b_K", "b_V"})
        if (get(t, key))
          toml_.fail(n, "weights.in_proj_bias",
                     tr_format("given together with {}: in_proj_bias already holds b_Q, b_K "
                               "and b_V one after another; remove {} or in_proj_bias",
                               key, key));
      in_proj_bias_ = toml_.row(*n, "weights.in_proj_bias");  // split in check_shapes
    }
    static constexpr std::pair<std::string_view, std::optional<arma::rowvec> Lesson::*> kBiases[] =
        {{"b_Q", &Lesson::b_Q},
         {"b_K", &Lesson::b_K},
         {"b_V", &Lesson::b_V},
         {"b_O", &Lesson::b_O}};
    for (const auto& [key, bias] : kBiases)
      if (const toml::node* n = get(t, key))
        lesson_.*bias = toml_.row(*n, fmt::format("weights.{}", key));
  }

  // A weight matrix as the lesson uses it, in × out: the file's matrix, or
  // its transpose under layout = "out_in" (PyTorch's nn.Linear.weight).
  arma::mat weight(const toml::node& node, std::string_view key, std::size_t identity_size) const {
    const arma::mat W = read_weight(toml_, node, key, identity_size);
    return out_in_ ? arma::mat(W.t()) : W;
  }

  // in_proj_weight:(3·d, d), nn.MultiheadAttention's W_q, W_k and W_v
  // (each out × in) stacked: W_Q, W_K and W_V are its transposed thirds,
  // whatever `layout` says (it is PyTorch's tensor, so PyTorch's layout).
  void read_in_proj_weight(const toml::node& packed) {
    for (std::string_view key : {"W_Q", "W_K", "W_V"})
      if (get(weights_, key))
        toml_.fail(&packed, "weights.in_proj_weight",
                   tr_format("given together with {}: in_proj_weight already holds W_Q, W_K "
                             "and W_V (nn.MultiheadAttention's packed projection); remove {} "
                             "or in_proj_weight",
                             key, key));
    in_proj_weight_ = &packed;
    const std::size_t d = lesson_.X.n_cols;
    if (lesson_.memory && lesson_.memory->n_cols != d)
      toml_.fail(&packed, "weights.in_proj_weight",
                 tr_format("X is {} and memory is {}: in_proj_weight projects queries, keys "
                           "and values of one width, but here they differ (PyTorch then keeps "
                           "q_proj_weight, k_proj_weight and v_proj_weight apart); give W_Q, "
                           "W_K and W_V instead, with layout = \"out_in\" to write them as "
                           "PyTorch stores them",
                           shape_str(lesson_.X.n_rows, d),
                           shape_str(lesson_.memory->n_rows, lesson_.memory->n_cols)));
    const arma::mat P = toml_.matrix(packed, "weights.in_proj_weight");
    if (P.n_rows != 3 * d || P.n_cols != d)
      toml_.fail(
          &packed, "weights.in_proj_weight",
          tr_format("in_proj_weight is {} and X is {}: it stacks W_Q, W_K and W_V, "
                    "each embed_dim × embed_dim (out × in) with embed_dim = the columns "
                    "of X = {}, so it must be {} ({}·{} rows, {} columns)",
                    shape_str(P.n_rows, P.n_cols), shape_str(lesson_.X.n_rows, lesson_.X.n_cols), d,
                    shape_str(3 * d, d), 3, d, d));
    lesson_.W_Q = P.rows(0, d - 1).t();
    lesson_.W_K = P.rows(d, 2 * d - 1).t();
    lesson_.W_V = P.rows(2 * d, 3 * d - 1).t();
  }

  // [layer] and the layer's weights; without [layer] those weights are an error.
  void read_layer(const toml::table& root) {
    static constexpr std::string_view kLayerWeights[] = {
        "W_1", "b_1", "W_2", "b_2", "ln1_gamma", "ln1_beta", "ln2_gamma", "ln2_beta"};
    const toml::table* t = toml_.table(root, "layer");
    if (!t) {
      for (std::string_view key : kLayerWeights)
        if (const toml::node* n = get(weights_, key))
          toml_.fail(n, fmt::format("weights.{}", key),
                     tr_format("{} belongs to an encoder layer, but the lesson has no [layer]; "
                               "add [layer] kind = \"encoder\" or remove {}",
                               key, key));
      return;
    }
    toml_.require_known_keys(*t, "layer", {"kind", "norm", "activation", "eps", "residual"});
    EncoderLayer layer = layer_options(*t);
    layer.W_1 = layer_weight("W_1");
    layer.W_2 = layer_weight("W_2");
    layer.b_1 = optional_weight_row("b_1");
    layer.b_2 = optional_weight_row("b_2");
    const std::size_t d_model = lesson_.X.n_cols;
    const arma::rowvec ones(d_model, arma::fill::ones), zeros(d_model, arma::fill::zeros);
    layer.ln1_gamma = optional_weight_row("ln1_gamma").value_or(ones);
    layer.ln1_beta = optional_weight_row("ln1_beta").value_or(zeros);
    layer.ln2_gamma = optional_weight_row("ln2_gamma").value_or(ones);
    layer.ln2_beta = optional_weight_row("ln2_beta").value_or(zeros);
    lesson_.layer = std::move(layer);
  }

  // [layer] kind, norm, activation and eps; the weights are read apart.
  EncoderLayer layer_options(const toml::table& t) const {
    EncoderLayer layer;
    if (const toml::node* n = get(&t, "kind"))
      choice<int>(*n, "layer.kind", "layer kind", {{"encoder", 0}});
    if (const toml::node* n = get(&t, "norm"))
      layer.norm =
          choice<NormPlacement>(*n, "layer.norm", "LayerNorm placement",
                                {{"post", NormPlacement::post}, {"pre", NormPlacement::pre}});
    if (const toml::node* n = get(&t, "activation"))
      layer.activation =
          choice<Activation>(*n, "layer.activation", "activation",
                             {{"relu", Activation::relu}, {"gelu", Activation::gelu}});
    if (const toml::node* n = get(&t, "eps")) {
      layer.eps = toml_.number(*n, "layer.eps").value;
      if (!(layer.eps > 0))
        toml_.fail(n, "layer.eps",
                   tr_format("{} cannot keep √(var + eps) away from 0; give a small positive "
                             "number such as 1e-5",
                             layer.eps));
    }
    if (const toml::node* n = get(&t, "residual"))
      layer.residual = toml_.boolean(*n, "layer.residual");
    return layer;
  }

  // W_1 or W_2 of the layer's FFN, in × out.
  arma::mat layer_weight(std::string_view key) const {
    const toml::node* n = get(weights_, key);
    if (!n)
      toml_.fail(
          weights_, fmt::format("weights.{}", key),
          tr_format("missing; an encoder layer needs {} ({})", key,
                    key == "W_1" ? dims_text("d_model", "d_ff") + ", the FFN's first layer"
                                 : dims_text("d_ff", "d_model") + ", the FFN's second layer"));
    const arma::mat W = toml_.matrix(*n, fmt::format("weights.{}", key));
    return out_in_ ? arma::mat(W.t()) : W;
  }

  // A bias or LayerNorm row of [weights], when given.
  std::optional<arma::rowvec> optional_weight_row(std::string_view key) const {
    if (const toml::node* n = get(weights_, key))
      return toml_.row(*n, fmt::format("weights.{}", key));
    return std::nullopt;
  }

  // A tile no larger than the queries and keys; linear attention without
  // masks other than none (causal included: this tool does not trace the
  // prefix sums of causal linear attention) and without tiles.
  void check_efficient() {
    const Lesson& l = lesson_;
    const toml::table* t = model_;
    if (l.tile && (l.tile->queries > l.queries() || l.tile->keys > l.keys()))
      toml_.fail(
          get(t, "tile"), "model.tile",
          tr_format("tile = [{}, {}] is larger than the lesson's {} queries × {} keys; "
                    "choose Bq ≤ {} and Bk ≤ {}",
                    l.tile->queries, l.tile->keys, l.queries(), l.keys(), l.queries(), l.keys()));
    if (l.attention != AttentionKind::linear) return;
    const toml::node* n = get(t, "attention");
    if (l.tile)
      toml_.fail(n, "model.attention",
                 tr("linear attention has no softmax to tile; remove model.tile or write "
                    "attention = \"softmax\""));
    if (l.causal)
      toml_.fail(n, "model.attention",
                 tr("causal linear attention (a prefix sum of φ(k_j)ᵀv_j per query) is not "
                    "traced; remove causal = true or write attention = \"softmax\""));
    if (!l.key_padding.empty() || l.keep)
      toml_.fail(n, "model.attention",
                 tr_format("linear attention sums over every key, so it cannot mask by "
                           "input.{}; remove it or write attention = \"softmax\"",
                           l.keep ? "keep" : "key_padding"));
  }

  // [exercise]: what a sheet asks of this lesson (written by `exercise`).
  // [decode] kv_cache = true: only where decoding token by token means
  // something, causal self-attention whose only mask is the causal one.
  void read_decode(const toml::table& root) {
    const toml::table* t = toml_.table(root, "decode");
    if (!t) return;
    toml_.require_known_keys(*t, "decode", {"kv_cache"});
    const toml::node* n = t->get("kv_cache");
    if (!n) return;
    lesson_.kv_cache = toml_.boolean(*n, "decode.kv_cache");
    if (!lesson_.kv_cache) return;
    const Lesson& l = lesson_;
    if (l.memory)
      toml_.fail(n, "decode.kv_cache",
                 tr("a KV cache keeps the keys and values of the tokens decoded so far, but this "
                    "lesson is cross-attention (input.memory): its keys and values do not grow. "
                    "Remove input.memory or set kv_cache = false"));
    if (!l.causal)
      toml_.fail(n, "decode.kv_cache",
                 tr("decoding token by token needs causal attention (a token may not see later "
                    "tokens, which are not generated yet); add causal = true under [model] or set "
                    "kv_cache = false"));
    if (l.positional_encoding == PositionalEncoding::rope ||
        l.positional_encoding == PositionalEncoding::alibi)
      toml_.fail(n, "decode.kv_cache",
                 tr_format("the KV cache steps read head{{h}}.Q and .K as they are, without the "
                           "rotation or the bias of positional_encoding = \"{}\"; set kv_cache = "
                           "false or positional_encoding = \"none\"",
                           l.positional_encoding == PositionalEncoding::rope ? "rope" : "alibi"));
    if (!l.key_padding.empty() || l.keep)
      toml_.fail(n, "decode.kv_cache",
                 tr_format("the KV cache steps apply the causal mask only, but the lesson also "
                           "masks by input.{}; remove it or set kv_cache = false",
                           l.keep ? "keep" : "key_padding"));
  }

  // The shape of the step a [backward] loss is taken of (its `result`).
  std::pair<std::size_t, std::size_t> result_shape() const {
    const Lesson& l = lesson_;
    if (l.layer) return {l.queries(), l.X.n_cols};
    if (l.W_O) return {l.queries(), l.W_O->n_cols};
    return {l.queries(), l.heads * l.d_v};
  }

  // [backward]: upstream = [[...]] or loss = "half_sq" with target = [[...]],
  // the result's shape; jacobian_row < n. In f64 softmax attention only.
  void read_backward(const toml::table& root) {
    const toml::table* t = toml_.table(root, "backward");
    if (!t) return;
    toml_.require_known_keys(*t, "backward", {"upstream", "loss", "target", "jacobian_row"});
    const Lesson& l = lesson_;
    const char* result = l.layer ? "layer.output" : l.W_O ? "output" : "concat";
    if (l.attention == AttentionKind::linear)
      toml_.fail(t, "backward", tr("the backward pass is traced through softmax attention only; "
                                   "remove [backward] or write attention = \"softmax\""));
    if (l.dtype != Dtype::f64)
      toml_.fail(t, "backward", tr("the backward pass is traced in f64 only; remove [backward] or "
                                   "write dtype = \"f64\""));
    BackwardPass pass;
    const toml::node* upstream = t->get("upstream");
    const toml::node* loss = t->get("loss");
    const toml::node* target = t->get("target");
    if ((upstream != nullptr) == (loss != nullptr))
      toml_.fail(t, "backward",
                 tr_format("give either upstream = [[...]] (dL/d{}, its shape) or loss = "
                           "\"half_sq\" with target = [[...]]",
                           result));
    if (upstream) {
      if (target)
        toml_.fail(target, "backward.target", tr("a target goes with loss = \"half_sq\"; remove "
                                                 "it or write loss instead of upstream"));
      pass.upstream = backward_matrix(*upstream, "backward.upstream", result);
    } else {
      choice<int>(*loss, "backward.loss", "loss", {{"half_sq", 0}});
      if (!target)
        toml_.fail(t, "backward.target",
                   tr_format("missing; loss = \"half_sq\" is ½‖{} − target‖², so give the "
                             "target, {}'s shape",
                             result, result));
      pass.target = backward_matrix(*target, "backward.target", result);
    }
    if (const toml::node* n = t->get("jacobian_row")) {
      const long long r = toml_.integer(*n, "backward.jacobian_row");
      if (r < 0 || static_cast<std::size_t>(r) >= l.queries())
        toml_.fail(n, "backward.jacobian_row",
                   tr_format("{} is not a row of the weights; give a query row from 0 to {}", r,
                             l.queries() - 1));
      pass.jacobian_row = static_cast<std::size_t>(r);
    }
    lesson_.backward = std::move(pass);
  }

  // A matrix of [backward] with the result's shape and finite numbers.
  arma::mat backward_matrix(const toml::node& n, const char* key, const char* result) const {
    const arma::mat M = toml_.matrix(n, key);
    const auto [rows, cols] = result_shape();
    if (M.n_rows != rows || M.n_cols != cols)
      toml_.fail(&n, key,
                 tr_format("is {}, but {} is {}; give one number per cell of {}",
                           shape_str(M.n_rows, M.n_cols), result, shape_str(rows, cols), result));
    return M;
  }

  void read_exercise(const toml::table& root) {
    const toml::table* t = toml_.table(root, "exercise");
    if (!t) return;
    toml_.require_known_keys(*t, "exercise", {"ask", "answer_decimals", "student", "variant"});
    if (const toml::node* n = t->get("student"))
      lesson_.student = toml_.string(*n, "exercise.student");
    if (const toml::node* n = t->get("variant"))
      lesson_.variant = toml_.string(*n, "exercise.variant");
    if (const toml::node* n = t->get("ask")) lesson_.asked = toml_.strings(*n, "exercise.ask");
    if (const toml::node* n = t->get("answer_decimals")) {
      const long long d = toml_.integer(*n, "exercise.answer_decimals");
      if (d < 0 || d > 17)
        toml_.fail(n, "exercise.answer_decimals", tr("must be between 0 and 17 decimals"));
      lesson_.answer_decimals = static_cast<int>(d);
    }
  }

  void read_claims(const toml::table& root) {
    const toml::node* node = root.get("claim");
    if (!node) return;
    const toml::array* claims = node->as_array();
    if (!claims || !claims->is_array_of_tables())
      toml_.fail(node, "claim", tr("write each claim as a [[claim]] table"));
    std::size_t i = 0;
    for (const toml::node& item : *claims) {
      const toml::table& t = *item.as_table();
      const std::string where = fmt::format("claim[{}]", i++);
      if (is_quantity_claim(t)) {  // a shape or a cost, not values
        lesson_.quantity_claims.push_back(read_quantity_claim(toml_, item, where));
        continue;
      }
      toml_.require_known_keys(
          t, where, {"step", "cell", "row", "value", "values", "tolerance", "says", "says_zh", "derived"});
      Claim claim;
      static_cast<StepValues&>(claim) = toml_.step_values(item, where);
      if (const toml::node* n = t.get("says")) claim.says = toml_.string(*n, where + ".says");
      if (const toml::node* n = t.get("says_zh"))
        claim.says_zh = toml_.string(*n, where + ".says_zh");
      if (const toml::node* n = t.get("derived"))
        claim.derived = toml_.boolean(*n, where + ".derived");
      lesson_.claims.push_back(std::move(claim));
    }
  }

  // How the file writes a weight's shape: in × out, or out × in under
  // layout = "out_in" (W holds in × out either way).
  std::string written_shape(const arma::mat& W) const {
    return out_in_ ? shape_str(W.n_cols, W.n_rows) : shape_str(W.n_rows, W.n_cols);
  }
  // A weight's two sizes in the file's order: "d_model × d_ff" (in × out),
  // "d_ff × d_model" under layout = "out_in".
  std::string dims_text(const std::string& in, const std::string& out,
                        std::string_view times = " × ") const {
    return out_in_ ? fmt::format("{}{}{}", out, times, in) : fmt::format("{}{}{}", in, times, out);
  }
  // The side of a written weight that meets the input features, and the other one.
  std::string_view in_side() const { return out_in_ ? tr(N_("columns")) : tr(N_("rows")); }
  std::string_view out_side() const { return out_in_ ? tr(N_("rows")) : tr(N_("columns")); }
  // Said after a written shape when the file writes weights out × in.
  std::string_view layout_note() const {
    return out_in_ ? tr(N_(" (out × in: layout = \"out_in\")")) : "";
  }
  // The node a weight's error points at: W_Q, W_K and W_V read from
  // in_proj_weight point at it.
  const toml::node* weight_node(std::string_view key) const {
    if (in_proj_weight_ && (key == "W_Q" || key == "W_K" || key == "W_V")) return in_proj_weight_;
    if (in_proj_bias_ && (key == "b_Q" || key == "b_K" || key == "b_V"))
      return get(weights_, "in_proj_bias");
    return get(weights_, key);
  }

  // in_proj_bias:(p_Q + p_K + p_V) -> b_Q, b_K, b_V, each as wide as its projection.
  void split_in_proj_bias() {
    if (!in_proj_bias_) return;
    Lesson& l = lesson_;
    const std::size_t q = l.W_Q.n_cols, k = l.W_K.n_cols, v = l.W_V.n_cols;
    if (in_proj_bias_->n_elem != q + k + v)
      toml_.fail(get(weights_, "in_proj_bias"), "weights.in_proj_bias",
                 tr_format("in_proj_bias has {} entries but W_Q, W_K and W_V give {} + {} + {} "
                           "= {} outputs: it holds b_Q, b_K and b_V one after another; give {} "
                           "entries",
                           in_proj_bias_->n_elem, q, k, v, q + k + v, q + k + v));
    l.b_Q = in_proj_bias_->cols(0, q - 1);
    l.b_K = in_proj_bias_->cols(q, q + k - 1);
    l.b_V = in_proj_bias_->cols(q + k, q + k + v - 1);
  }

  // Every shape rule of docs/lesson-format.md, each error naming both shapes.
  void check_shapes() {
    check_projection_shapes();
    check_heads();
    split_in_proj_bias();
    const Lesson& l = lesson_;
    check_bias(l.b_Q, "b_Q", l.W_Q.n_cols, "W_Q");
    check_bias(l.b_K, "b_K", l.W_K.n_cols, "W_K");
    check_bias(l.b_V, "b_V", l.W_V.n_cols, "W_V");
    check_output_projection();
  }

  // X·W_Q, source·W_K and source·W_V can be formed (source: memory or X),
  // and Q·Kᵀ too.
  void check_projection_shapes() const {
    const Lesson& l = lesson_;
    const std::string key_source = l.memory ? "memory" : "X";
    const arma::mat& source = l.memory ? *l.memory : l.X;
    check_product(l.X, "X", l.W_Q, "W_Q");
    check_product(source, key_source, l.W_K, "W_K");
    check_product(source, key_source, l.W_V, "W_V");
    if (l.W_Q.n_cols != l.W_K.n_cols && !kv_heads_node_)  // kv_heads: check_kv_heads()
      toml_.fail(weight_node("W_K"), "weights.W_K",
                 tr_format("Q and K must have the same number of columns to form Q·Kᵀ: W_Q is "
                           "{} (Q has {} columns) but W_K is {}{} (K has {}); give W_K {} {}",
                           written_shape(l.W_Q), l.W_Q.n_cols, written_shape(l.W_K), layout_note(),
                           l.W_K.n_cols, l.W_Q.n_cols, out_side()));
  }

  // in:(r, c) · weight:(c, p): the columns of `in` meet the rows of `weight`.
  void check_product(const arma::mat& in, const std::string& in_name, const arma::mat& weight,
                     std::string_view weight_key) const {
    if (in.n_cols != weight.n_rows)
      toml_.fail(
          weight_node(weight_key), fmt::format("weights.{}", weight_key),
          tr_format("{} is {} and {} is {}{}: the columns of {} ({}) must equal the {} "
                    "of {} ({}) to form {}·{}; give {} {} {}",
                    in_name, shape_str(in.n_rows, in.n_cols), weight_key, written_shape(weight),
                    layout_note(), in_name, in.n_cols, in_side(), weight_key, weight.n_rows,
                    in_name, weight_key, weight_key, in.n_cols, in_side()));
  }

  // The heads split W_Q's and W_V's columns evenly; d_k, when given, agrees.
  // Sets d_k and d_v.
  void check_heads() {
    Lesson& l = lesson_;
    const toml::node* heads_node = get(model_, "heads");
    if (l.W_Q.n_cols % l.heads != 0)
      toml_.fail(heads_node ? heads_node : weight_node("W_Q"), "model.heads",
                 tr_format("heads = {} does not divide the projection width {} (W_Q is {}); "
                           "each head takes an equal block of columns: choose heads dividing {}",
                           l.heads, l.W_Q.n_cols, written_shape(l.W_Q), l.W_Q.n_cols));
    if (kv_heads_node_) return check_kv_heads();
    if (l.W_V.n_cols % l.heads != 0)
      toml_.fail(heads_node ? heads_node : weight_node("W_V"), "model.heads",
                 tr_format("heads = {} does not divide the value width {} (W_V is {}); choose "
                           "heads dividing {}",
                           l.heads, l.W_V.n_cols, written_shape(l.W_V), l.W_V.n_cols));
    const std::size_t d_k = l.W_Q.n_cols / l.heads;
    if (l.d_k != 0 && l.d_k != d_k)
      toml_.fail(
          d_k_node_, "model.d_k",
          tr_format("d_k = {} but W_Q is {} with {} head(s), so d_k = {} / {} = {}; fix "
                    "d_k or the {} of W_Q",
                    l.d_k, written_shape(l.W_Q), l.heads, l.W_Q.n_cols, l.heads, d_k, out_side()));
    l.d_k = d_k;
    l.d_v = l.W_V.n_cols / l.heads;
    l.kv_heads = l.heads;
    check_rope_width();
  }

  // kv_heads = g: g divides heads; W_K has g·d_k columns and W_V g·d_v.
  // Sets d_k, d_v (d_k from W_Q as without kv_heads).
  void check_kv_heads() {
    Lesson& l = lesson_;
    const std::size_t g = l.kv_heads;
    if (l.heads % g != 0)
      toml_.fail(kv_heads_node_, "model.kv_heads",
                 tr_format("kv_heads = {} does not divide heads = {}: each K/V head serves an "
                           "equal group of query heads; choose kv_heads dividing {} (1 = one K/V "
                           "head for all, {} = one per query head)",
                           g, l.heads, l.heads, l.heads));
    const std::size_t d_k = l.W_Q.n_cols / l.heads;
    if (l.d_k != 0 && l.d_k != d_k)
      toml_.fail(d_k_node_, "model.d_k",
                 tr_format("d_k = {} but W_Q is {} with {} head(s), so d_k = {} / {} = {}; fix "
                           "d_k or the {} of W_Q",
                           l.d_k, written_shape(l.W_Q), l.heads, l.W_Q.n_cols, l.heads, d_k,
                           out_side()));
    l.d_k = d_k;
    if (l.W_K.n_cols != g * d_k)
      toml_.fail(weight_node("W_K"), "weights.W_K",
                 tr_format("with kv_heads = {} and d_k = {}, W_K needs kv_heads·d_k = {} {}, "
                           "one block of d_k per K/V head, but it is {}{}; give W_K {} {}",
                           g, d_k, g * d_k, out_side(), written_shape(l.W_K), layout_note(),
                           g * d_k, out_side()));
    if (l.W_V.n_cols % g != 0)
      toml_.fail(weight_node("W_V"), "weights.W_V",
                 tr_format("kv_heads = {} does not divide the value width {} (W_V is {}); give "
                           "W_V kv_heads·d_v {}",
                           g, l.W_V.n_cols, written_shape(l.W_V), out_side()));
    l.d_v = l.W_V.n_cols / g;
    check_rope_width();
  }

  // RoPE turns pairs of columns: d_k must be even.
  void check_rope_width() const {
    const Lesson& l = lesson_;
    if (l.positional_encoding == PositionalEncoding::rope && l.d_k % 2 != 0)
      toml_.fail(get(model_, "positional_encoding"), "model.positional_encoding",
                 tr_format("RoPE rotates pairs of columns (2i, 2i+1) of each head's q and k, but "
                           "d_k = {} is odd; give each head an even d_k, or choose another "
                           "positional_encoding",
                           l.d_k));
  }

  // A bias, when given, has one entry per output of its weight `of`.
  void check_bias(const std::optional<arma::rowvec>& b, std::string_view key, std::size_t width,
                  std::string_view of) const {
    if (b && b->n_elem != width)
      toml_.fail(
          weight_node(key), fmt::format("weights.{}", key),
          tr_format("{} has {} entries but {} has {} {}{}; give one bias per {}", key, b->n_elem,
                    of, width, out_side(), layout_note(), out_in_ ? tr(N_("row")) : tr(N_("column"))));
  }

  // W_O:(h·d_v, d_out) takes the concatenated heads; an identity W_O is sized
  // here; b_O needs W_O.
  void check_output_projection() {
    Lesson& l = lesson_;
    const std::size_t concat_width = l.heads * l.d_v;
    if (!l.W_O) {
      if (l.b_O)
        toml_.fail(weight_node("b_O"), "weights.b_O",
                   tr("b_O given without W_O; add W_O or remove b_O"));
      return;
    }
    if (w_o_identity_) l.W_O = arma::eye(concat_width, concat_width);
    if (l.W_O->n_rows != concat_width)
      toml_.fail(weight_node("W_O"), "weights.W_O",
                 tr_format("the concatenated heads are {} wide ({} heads × d_v {}) but W_O is "
                           "{}{}; W_O needs {} {} to form concat·W_O",
                           concat_width, l.heads, l.d_v, written_shape(*l.W_O), layout_note(),
                           concat_width, in_side()));
    check_bias(l.b_O, "b_O", l.W_O->n_cols, "W_O");
  }

  // The encoder layer's shape rules: the sub-layers' outputs are added to
  // their inputs, so every width the residual sums meet is d_model.
  void check_layer_shapes() const {
    if (!lesson_.layer) return;
    check_layer_attention();
    check_ffn_shapes();
    check_layer_rows();
  }

  std::string x_shape() const { return shape_str(lesson_.X.n_rows, lesson_.X.n_cols); }

  // The layer's attention: self-attention, with a W_O that gives back d_model.
  void check_layer_attention() const {
    const Lesson& l = lesson_;
    const std::size_t d_model = l.X.n_cols;
    if (l.memory)
      toml_.fail(get(toml_.table(toml_.root(), "input"), "memory"), "input.memory",
                 tr("an encoder layer is self-attention: its keys and values come from X; remove "
                    "memory (and memory_tokens) or remove [layer]"));
    if (!l.W_O)
      toml_.fail(
          weights_, "weights.W_O",
          tr_format("missing; an encoder layer adds the attention's output to X ({}), "
                    "so give W_O, {} ({})",
                    x_shape(), dims_text(std::to_string(l.heads * l.d_v), std::to_string(d_model)),
                    dims_text("concat width", "d_model")));
    if (l.W_O->n_cols != d_model)
      toml_.fail(weight_node("W_O"), "weights.W_O",
                 tr_format("W_O is {} but X is {}: the residual sum X + output needs output "
                           "as wide as X, so W_O must be {} (d_model = {} {}){}",
                           written_shape(*l.W_O), x_shape(),
                           dims_text(std::to_string(l.W_O->n_rows), std::to_string(d_model)),
                           d_model, out_side(), layout_note()));
  }

  // W_1:(d_model, d_ff) and W_2:(d_ff, d_model).
  void check_ffn_shapes() const {
    const std::size_t d_model = lesson_.X.n_cols;
    const arma::mat& W_1 = lesson_.layer->W_1;
    const arma::mat& W_2 = lesson_.layer->W_2;
    if (W_1.n_rows != d_model)
      toml_.fail(weight_node("W_1"), "weights.W_1",
                 tr_format("W_1 is {} but X is {}: the FFN multiplies rows of width d_model = "
                           "{} by W_1, so W_1 must be {}{}; give W_1 {} {}",
                           written_shape(W_1), x_shape(), d_model, dims_text("d_model", "d_ff"),
                           layout_note(), d_model, in_side()));
    const std::size_t d_ff = W_1.n_cols;
    if (W_2.n_rows != d_ff || W_2.n_cols != d_model)
      toml_.fail(
          weight_node("W_2"), "weights.W_2",
          tr_format("W_2 is {} but W_1 is {} and X is {}: W_2 must be {} = {}{} (its {} "
                    "take W_1's {} {}, its {} give back d_model for the residual sum)",
                    written_shape(W_2), written_shape(W_1), x_shape(), dims_text("d_ff", "d_model"),
                    dims_text(std::to_string(d_ff), std::to_string(d_model), "×"), layout_note(),
                    in_side(), d_ff, out_side(), out_side()));
  }

  // b_1:(d_ff), b_2:(d_model) and the LayerNorms' gamma and beta:(d_model).
  void check_layer_rows() const {
    const EncoderLayer& layer = *lesson_.layer;
    const std::size_t d_model = lesson_.X.n_cols, d_ff = layer.W_1.n_cols;
    check_length(layer.b_1, "b_1", d_ff,
                 tr_format("W_1 is {} (d_ff = {} {})", written_shape(layer.W_1), d_ff, out_side()));
    check_length(
        layer.b_2, "b_2", d_model,
        tr_format("W_2 is {} (d_model = {} {})", written_shape(layer.W_2), d_model, out_side()));
    const std::string per_feature =
        tr_format("LayerNorm scales and shifts each of X's d_model = {} features (X is {})",
                  d_model, x_shape());
    check_length(layer.ln1_gamma, "ln1_gamma", d_model, per_feature);
    check_length(layer.ln1_beta, "ln1_beta", d_model, per_feature);
    check_length(layer.ln2_gamma, "ln2_gamma", d_model, per_feature);
    check_length(layer.ln2_beta, "ln2_beta", d_model, per_feature);
  }

  // A row of the layer, when given, has `width` entries (`why` says why).
  void check_length(const std::optional<arma::rowvec>& v, std::string_view key, std::size_t width,
                    std::string_view why) const {
    if (v && v->n_elem != width)
      toml_.fail(
          weight_node(key), fmt::format("weights.{}", key),
          tr_format("{} has {} entries but {}; give {} entries", key, v->n_elem, why, width));
  }

  const TomlReader& toml_;
  Lesson lesson_;
  const toml::table* model_ = nullptr;
  const toml::table* weights_ = nullptr;
  const toml::node* d_k_node_ = nullptr;
  bool w_o_identity_ = false;
  bool out_in_ = false;  // [weights] layout = "out_in": every W_* written out × in
  const toml::node* kv_heads_node_ = nullptr;  // model.kv_heads, when the file gives it
  const toml::node* in_proj_weight_ = nullptr;  // W_Q, W_K and W_V came from in_proj_weight
  std::optional<arma::rowvec> in_proj_bias_;    // b_Q, b_K and b_V, one after another
};

}  // namespace

Lesson parse_lesson(std::string_view toml_text, const std::string& origin) {
  return parse_lesson(TomlReader(toml_text, origin));
}

Lesson parse_lesson(const TomlReader& toml) { return LessonParser(toml).parse(); }

Lesson load_lesson_file(const std::string& path) {
  return parse_lesson(read_input(path), input_name(path));
}

}  // namespace attn
