// Loading a lesson file (docs/lesson-format.md): every key read, every shape checked.
#include "core/lesson.hpp"
#include "core/i18n.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <filesystem>

#include "core/atomic_file.hpp"
#include "core/error.hpp"
#include "core/limits.hpp"
#include "core/number_text.hpp"
#include "core/quantity_claim.hpp"
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
  LessonParser(std::string_view text, const std::string& origin) : toml_(text, origin) {}

  Lesson parse() {
    const toml::table& root = toml_.root();
    toml_.require_known_keys(
        root, "", {"lesson", "model", "input", "weights", "layer", "decode", "exercise", "claim"});
    lesson_.origin = toml_.origin();
    read_header(root);
    read_model(root);
    read_input(root);
    read_weights(root);
    read_layer(root);
    read_decode(root);
    read_exercise(root);
    read_claims(root);
    check_shapes();
    check_layer_shapes();
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
    if (const toml::node* n = get(t, "title")) lesson_.title = toml_.string(*n, "lesson.title");
    if (const toml::node* n = get(t, "source")) lesson_.source = toml_.string(*n, "lesson.source");
    if (const toml::node* n = get(t, "story")) lesson_.story = toml_.string(*n, "lesson.story");
    if (const toml::node* n = get(t, "title_zh"))
      lesson_.title_zh = toml_.string(*n, "lesson.title_zh");
    if (const toml::node* n = get(t, "story_zh"))
      lesson_.story_zh = toml_.string(*n, "lesson.story_zh");
    if (const toml::node* n = get(t, "level")) {
      const long long level = toml_.integer(*n, "lesson.level");
      if (level < kMinLevel || level > kMaxLevel)
        toml_.fail(n, "lesson.level",
                   tr_format("{} is not a level; write {} to {} (1 one head by hand, 2 scaling "
                             "and softmax, 3 masks and positions, 4 several heads and sequences)",
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
                              "positional_encoding", "dtype"});
    if (const toml::node* n = get(t, "heads")) {
      const long long h = toml_.integer(*n, "model.heads");
      if (h < 1) toml_.fail(n, "model.heads", tr("must be at least 1"));
      lesson_.heads = static_cast<std::size_t>(h);
    }
    if (const toml::node* n = get(t, "d_k")) {
      const long long d = toml_.integer(*n, "model.d_k");
      if (d < 1) toml_.fail(n, "model.d_k", tr("must be at least 1"));
      d_k_node_ = n;
      lesson_.d_k = static_cast<std::size_t>(d);
    }
    if (const toml::node* n = get(t, "scale")) {
      if (n->is_string()) {
        const std::string s = n->as_string()->get();
        if (s == "sqrt_dk")
          lesson_.scale_kind = ScaleKind::sqrt_dk;
        else if (s == "none")
          lesson_.scale_kind = ScaleKind::none;
        else
          toml_.fail(
              n, "model.scale",
              tr_format("\"{}\" is not a scale; write \"sqrt_dk\", \"none\" or a positive number",
                        s));
      } else {
        const double s = toml_.number(*n, "model.scale").value;
        if (!(s > 0))
          toml_.fail(n, "model.scale",
                     tr_format("{} is not a valid divisor; the scale must be a positive number "
                               "(or \"sqrt_dk\" / \"none\")",
                               s));
        lesson_.scale_kind = ScaleKind::number;
        lesson_.scale_number = s;
      }
    }
    if (const toml::node* n = get(t, "causal")) lesson_.causal = toml_.boolean(*n, "model.causal");
    if (const toml::node* n = get(t, "mask_fill")) {
      if (n->is_string() && n->as_string()->get() == "-inf") {
        lesson_.mask_fill = -arma::datum::inf;
      } else if (n->is_floating_point() && n->as_floating_point()->get() == -arma::datum::inf) {
        lesson_.mask_fill = -arma::datum::inf;
      } else if (n->is_number()) {
        // A fill at or above 0 is allowed, to show that it fails: the trace
        // warns that masked keys keep real weight.
        lesson_.mask_fill = toml_.number(*n, "model.mask_fill").value;
      } else {
        toml_.fail(n, "model.mask_fill", tr("write \"-inf\" or a finite number such as -1e9"));
      }
    }
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
          {{"none", PositionalEncoding::none}, {"sinusoidal", PositionalEncoding::sinusoidal}});
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
    const std::size_t m = lesson_.keys();

    if (const toml::node* n = get(t, "tokens")) {
      lesson_.tokens = toml_.strings(*n, "input.tokens");
      if (lesson_.tokens.size() != lesson_.X.n_rows)
        toml_.fail(n, "input.tokens",
                   tr_format("{} tokens but X has {} rows ({}); give one token per row of X",
                             lesson_.tokens.size(), lesson_.X.n_rows,
                             shape_str(lesson_.X.n_rows, lesson_.X.n_cols)));
    } else {
      lesson_.tokens = default_tokens(lesson_.X.n_rows);
    }
    if (const toml::node* n = get(t, "memory_tokens")) {
      if (!lesson_.memory)
        toml_.fail(n, "input.memory_tokens",
                   tr("given without input.memory; add memory = [[...]] "
                      "(cross-attention) or remove memory_tokens"));
      lesson_.memory_tokens = toml_.strings(*n, "input.memory_tokens");
      if (lesson_.memory_tokens.size() != m)
        toml_.fail(n, "input.memory_tokens",
                   tr_format("{} tokens but memory has {} rows; give one token per row of memory",
                             lesson_.memory_tokens.size(), m));
    } else if (lesson_.memory) {
      for (std::size_t i = 0; i < m; ++i) lesson_.memory_tokens.push_back(fmt::format("m{}", i));
    }

    if (const toml::node* n = get(t, "key_padding")) {
      const toml::array* arr = n->as_array();
      if (!arr)
        toml_.fail(n, "input.key_padding", tr("expected an array of true/false, one per key"));
      for (const toml::node& item : *arr) {
        if (item.is_boolean())
          lesson_.key_padding.push_back(item.as_boolean()->get());
        else if (item.is_integer() &&
                 (item.as_integer()->get() == 0 || item.as_integer()->get() == 1))
          lesson_.key_padding.push_back(item.as_integer()->get() == 1);
        else
          toml_.fail(&item, "input.key_padding", tr("each entry must be true (padded) or false"));
      }
      if (lesson_.key_padding.size() != m)
        toml_.fail(n, "input.key_padding",
                   tr_format("{} entries but there are {} keys ({}); give one entry per key",
                             lesson_.key_padding.size(), m,
                             lesson_.memory ? "rows of memory" : "rows of X"));
    }
    if (const toml::node* n = get(t, "keep")) {
      const arma::mat keep = toml_.matrix(*n, "input.keep");
      if (keep.n_rows != lesson_.X.n_rows || keep.n_cols != m)
        toml_.fail(n, "input.keep",
                   tr_format("keep is {} but the scores are {} (queries × keys); give one row "
                             "per query and one column per key",
                             shape_str(keep.n_rows, keep.n_cols), shape_str(lesson_.X.n_rows, m)));
      if (arma::any(arma::vectorise((keep != 0.0) % (keep != 1.0))))
        toml_.fail(n, "input.keep", tr("entries must be 1 (may attend) or 0 (masked)"));
      lesson_.keep = arma::conv_to<arma::umat>::from(keep);
    }
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
    if (const toml::node* n = get(t, "b_Q")) lesson_.b_Q = toml_.row(*n, "weights.b_Q");
    if (const toml::node* n = get(t, "b_K")) lesson_.b_K = toml_.row(*n, "weights.b_K");
    if (const toml::node* n = get(t, "b_V")) lesson_.b_V = toml_.row(*n, "weights.b_V");
    if (const toml::node* n = get(t, "b_O")) lesson_.b_O = toml_.row(*n, "weights.b_O");
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
    toml_.require_known_keys(*t, "layer", {"kind", "norm", "activation", "eps"});
    EncoderLayer layer;
    if (const toml::node* n = get(t, "kind"))
      choice<int>(*n, "layer.kind", "layer kind", {{"encoder", 0}});
    if (const toml::node* n = get(t, "norm"))
      layer.norm =
          choice<NormPlacement>(*n, "layer.norm", "LayerNorm placement",
                                {{"post", NormPlacement::post}, {"pre", NormPlacement::pre}});
    if (const toml::node* n = get(t, "activation"))
      layer.activation =
          choice<Activation>(*n, "layer.activation", "activation",
                             {{"relu", Activation::relu}, {"gelu", Activation::gelu}});
    if (const toml::node* n = get(t, "eps")) {
      layer.eps = toml_.number(*n, "layer.eps").value;
      if (!(layer.eps > 0))
        toml_.fail(n, "layer.eps",
                   tr_format("{} cannot keep √(var + eps) away from 0; give a small positive "
                             "number such as 1e-5",
                             layer.eps));
    }
    auto required = [&](std::string_view key) {
      const toml::node* n = get(weights_, key);
      if (!n)
        toml_.fail(
            weights_, fmt::format("weights.{}", key),
            tr_format("missing; an encoder layer needs {} ({})", key,
                      key == "W_1" ? dims_text("d_model", "d_ff") + ", the FFN's first layer"
                                   : dims_text("d_ff", "d_model") + ", the FFN's second layer"));
      const arma::mat W = toml_.matrix(*n, fmt::format("weights.{}", key));
      return out_in_ ? arma::mat(W.t()) : W;
    };
    layer.W_1 = required("W_1");
    layer.W_2 = required("W_2");
    auto optional_row = [&](std::string_view key) -> std::optional<arma::rowvec> {
      if (const toml::node* n = get(weights_, key))
        return toml_.row(*n, fmt::format("weights.{}", key));
      return std::nullopt;
    };
    layer.b_1 = optional_row("b_1");
    layer.b_2 = optional_row("b_2");
    const std::size_t d_model = lesson_.X.n_cols;
    const arma::rowvec ones(d_model, arma::fill::ones), zeros(d_model, arma::fill::zeros);
    layer.ln1_gamma = optional_row("ln1_gamma").value_or(ones);
    layer.ln1_beta = optional_row("ln1_beta").value_or(zeros);
    layer.ln2_gamma = optional_row("ln2_gamma").value_or(ones);
    layer.ln2_beta = optional_row("ln2_beta").value_or(zeros);
    lesson_.layer = std::move(layer);
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
    if (!l.key_padding.empty() || l.keep)
      toml_.fail(n, "decode.kv_cache",
                 tr_format("the KV cache steps apply the causal mask only, but the lesson also "
                           "masks by input.{}; remove it or set kv_cache = false",
                           l.keep ? "keep" : "key_padding"));
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
      toml_.require_known_keys(t, where,
                               {"step", "cell", "row", "value", "values", "tolerance", "says"});
      Claim claim;
      static_cast<StepValues&>(claim) = toml_.step_values(item, where);
      if (const toml::node* n = t.get("says")) claim.says = toml_.string(*n, where + ".says");
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
  const char* in_side() const { return out_in_ ? "columns" : "rows"; }
  const char* out_side() const { return out_in_ ? "rows" : "columns"; }
  // Said after a written shape when the file writes weights out × in.
  const char* layout_note() const { return out_in_ ? " (out × in: layout = \"out_in\")" : ""; }
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
    Lesson& l = lesson_;
    const std::string key_source = l.memory ? "memory" : "X";
    const arma::mat& source = l.memory ? *l.memory : l.X;
    auto w = [&](std::string_view key) { return weight_node(key); };
    auto product_rule = [&](const arma::mat& in, const std::string& in_name,
                            const arma::mat& weight, std::string_view weight_key) {
      if (in.n_cols != weight.n_rows)
        toml_.fail(
            w(weight_key), fmt::format("weights.{}", weight_key),
            tr_format("{} is {} and {} is {}{}: the columns of {} ({}) must equal the {} "
                      "of {} ({}) to form {}·{}; give {} {} {}",
                      in_name, shape_str(in.n_rows, in.n_cols), weight_key, written_shape(weight),
                      layout_note(), in_name, in.n_cols, in_side(), weight_key, weight.n_rows,
                      in_name, weight_key, weight_key, in.n_cols, in_side()));
    };
    product_rule(l.X, "X", l.W_Q, "W_Q");
    product_rule(source, key_source, l.W_K, "W_K");
    product_rule(source, key_source, l.W_V, "W_V");
    if (l.W_Q.n_cols != l.W_K.n_cols)
      toml_.fail(w("W_K"), "weights.W_K",
                 tr_format("Q and K must have the same number of columns to form Q·Kᵀ: W_Q is "
                           "{} (Q has {} columns) but W_K is {}{} (K has {}); give W_K {} {}",
                           written_shape(l.W_Q), l.W_Q.n_cols, written_shape(l.W_K), layout_note(),
                           l.W_K.n_cols, l.W_Q.n_cols, out_side()));
    const toml::node* heads_node = get(model_, "heads");
    if (l.W_Q.n_cols % l.heads != 0)
      toml_.fail(heads_node ? heads_node : w("W_Q"), "model.heads",
                 tr_format("heads = {} does not divide the projection width {} (W_Q is {}); "
                           "each head takes an equal block of columns: choose heads dividing {}",
                           l.heads, l.W_Q.n_cols, written_shape(l.W_Q), l.W_Q.n_cols));
    if (l.W_V.n_cols % l.heads != 0)
      toml_.fail(heads_node ? heads_node : w("W_V"), "model.heads",
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

    auto bias_rule = [&](const std::optional<arma::rowvec>& b, std::string_view key,
                         std::size_t width, std::string_view of) {
      if (b && b->n_elem != width)
        toml_.fail(
            w(key), fmt::format("weights.{}", key),
            tr_format("{} has {} entries but {} has {} {}{}; give one bias per {}", key, b->n_elem,
                      of, width, out_side(), layout_note(), out_in_ ? "row" : "column"));
    };
    split_in_proj_bias();
    bias_rule(l.b_Q, "b_Q", l.W_Q.n_cols, "W_Q");
    bias_rule(l.b_K, "b_K", l.W_K.n_cols, "W_K");
    bias_rule(l.b_V, "b_V", l.W_V.n_cols, "W_V");
    const std::size_t concat_width = l.heads * l.d_v;
    if (l.W_O) {
      if (w_o_identity_) l.W_O = arma::eye(concat_width, concat_width);
      if (l.W_O->n_rows != concat_width)
        toml_.fail(w("W_O"), "weights.W_O",
                   tr_format("the concatenated heads are {} wide ({} heads × d_v {}) but W_O is "
                             "{}{}; W_O needs {} {} to form concat·W_O",
                             concat_width, l.heads, l.d_v, written_shape(*l.W_O), layout_note(),
                             concat_width, in_side()));
      bias_rule(l.b_O, "b_O", l.W_O->n_cols, "W_O");
    } else if (l.b_O) {
      toml_.fail(w("b_O"), "weights.b_O", tr("b_O given without W_O; add W_O or remove b_O"));
    }
  }

  // The encoder layer's shape rules: the sub-layers' outputs are added to
  // their inputs, so every width the residual sums meet is d_model.
  void check_layer_shapes() {
    if (!lesson_.layer) return;
    const Lesson& l = lesson_;
    const EncoderLayer& layer = *l.layer;
    const std::size_t d_model = l.X.n_cols;
    const std::string x_shape = shape_str(l.X.n_rows, l.X.n_cols);
    auto w = [&](std::string_view key) { return weight_node(key); };
    if (l.memory)
      toml_.fail(get(toml_.table(toml_.root(), "input"), "memory"), "input.memory",
                 tr("an encoder layer is self-attention: its keys and values come from X; remove "
                    "memory (and memory_tokens) or remove [layer]"));
    if (!l.W_O)
      toml_.fail(
          weights_, "weights.W_O",
          tr_format("missing; an encoder layer adds the attention's output to X ({}), "
                    "so give W_O, {} ({})",
                    x_shape, dims_text(std::to_string(l.heads * l.d_v), std::to_string(d_model)),
                    dims_text("concat width", "d_model")));
    if (l.W_O->n_cols != d_model)
      toml_.fail(w("W_O"), "weights.W_O",
                 tr_format("W_O is {} but X is {}: the residual sum X + output needs output "
                           "as wide as X, so W_O must be {} (d_model = {} {}){}",
                           written_shape(*l.W_O), x_shape,
                           dims_text(std::to_string(l.W_O->n_rows), std::to_string(d_model)),
                           d_model, out_side(), layout_note()));
    const arma::mat& W_1 = layer.W_1;
    const arma::mat& W_2 = layer.W_2;
    if (W_1.n_rows != d_model)
      toml_.fail(w("W_1"), "weights.W_1",
                 tr_format("W_1 is {} but X is {}: the FFN multiplies rows of width d_model = "
                           "{} by W_1, so W_1 must be {}{}; give W_1 {} {}",
                           written_shape(W_1), x_shape, d_model, dims_text("d_model", "d_ff"),
                           layout_note(), d_model, in_side()));
    const std::size_t d_ff = W_1.n_cols;
    if (W_2.n_rows != d_ff || W_2.n_cols != d_model)
      toml_.fail(
          w("W_2"), "weights.W_2",
          tr_format("W_2 is {} but W_1 is {} and X is {}: W_2 must be {} = {}{} (its {} "
                    "take W_1's {} {}, its {} give back d_model for the residual sum)",
                    written_shape(W_2), written_shape(W_1), x_shape, dims_text("d_ff", "d_model"),
                    dims_text(std::to_string(d_ff), std::to_string(d_model), "×"), layout_note(),
                    in_side(), d_ff, out_side(), out_side()));
    auto length_rule = [&](const std::optional<arma::rowvec>& v, std::string_view key,
                           std::size_t width, std::string_view why) {
      if (v && v->n_elem != width)
        toml_.fail(
            w(key), fmt::format("weights.{}", key),
            tr_format("{} has {} entries but {}; give {} entries", key, v->n_elem, why, width));
    };
    length_rule(layer.b_1, "b_1", d_ff,
                tr_format("W_1 is {} (d_ff = {} {})", written_shape(W_1), d_ff, out_side()));
    length_rule(layer.b_2, "b_2", d_model,
                tr_format("W_2 is {} (d_model = {} {})", written_shape(W_2), d_model, out_side()));
    const std::string per_feature =
        tr_format("LayerNorm scales and shifts each of X's d_model = {} features (X is {})",
                  d_model, x_shape);
    length_rule(layer.ln1_gamma, "ln1_gamma", d_model, per_feature);
    length_rule(layer.ln1_beta, "ln1_beta", d_model, per_feature);
    length_rule(layer.ln2_gamma, "ln2_gamma", d_model, per_feature);
    length_rule(layer.ln2_beta, "ln2_beta", d_model, per_feature);
  }

  TomlReader toml_;
  Lesson lesson_;
  const toml::table* model_ = nullptr;
  const toml::table* weights_ = nullptr;
  const toml::node* d_k_node_ = nullptr;
  bool w_o_identity_ = false;
  bool out_in_ = false;  // [weights] layout = "out_in": every W_* written out × in
  const toml::node* in_proj_weight_ = nullptr;  // W_Q, W_K and W_V came from in_proj_weight
  std::optional<arma::rowvec> in_proj_bias_;    // b_Q, b_K and b_V, one after another
};

}  // namespace

Lesson parse_lesson(std::string_view toml_text, const std::string& origin) {
  return LessonParser(toml_text, origin).parse();
}

Lesson load_lesson_file(const std::string& path) {
  return parse_lesson(read_file(path), path);
}

}  // namespace attn
