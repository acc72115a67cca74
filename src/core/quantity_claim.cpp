// [[claim]] tables with `shape` or `quantity`: shape, bytes, flops and
// sampled statistics of q·k, checked key by key.
#include "core/quantity_claim.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <utility>

#include "core/i18n.hpp"
#include "core/mask_pattern_read.hpp"

namespace attn {

namespace {

// Sequence lengths beyond this are not a cost anyone computes by hand.
constexpr long long kMaxClaimSeq = 10000000;

// The most layers a stack_grad_norm claim builds (BERT-base's 12; teach/stack_grad.hpp).
constexpr long long kMaxClaimLayers = 12;

// Bytes per unit, decimal (KB = 1000) and binary (KiB = 1024).
constexpr std::pair<std::string_view, double> kByteUnits[] = {
    {"B", 1.0},      {"KB", 1e3},        {"MB", 1e6},          {"GB", 1e9},
    {"KiB", 1024.0}, {"MiB", 1048576.0}, {"GiB", 1073741824.0}};

constexpr std::string_view kSampled[] = {"qk_mean", "qk_variance", "qk_std", "qk_beyond_3"};

// Sampled statistics of the softmax's gradient (teach/softmax_grad_stats.hpp).
constexpr std::string_view kSoftmaxGrad[] = {"softmax_grad_median", "softmax_grad_vanished"};

// Rows a softmax-gradient claim samples unless it says (each row draws
// (keys + 1)·d_k numbers, so fewer than the 20000 pairs of a qk_* claim).
constexpr std::uint64_t kSoftmaxGradSamples = 2000;

// The most keys a softmax-gradient sample draws per query.
constexpr long long kMaxSampledKeys = 4096;

class QuantityClaimReader {
 public:
  QuantityClaimReader(const TomlReader& toml, const toml::node& item, const std::string& where)
      : toml_(toml), item_(item), t_(*item.as_table()), where_(where) {}

  QuantityClaim read() {
    toml_.require_known_keys(
        t_, where_,
        {"step", "shape", "quantity", "value", "unit", "tolerance", "batch", "seq", "dtype", "d_k",
         "samples", "seed", "vectors", "scaled", "says", "says_zh", "derived", "per",
         "kv_heads", "window", "global", "stride", "causal", "chunk", "overlap", "keys",
         "layers", "at", "residual"});
    c_.key = where_;
    c_.line = toml_.line_of(&item_);
    if (const toml::node* n = t_.get("says")) c_.says = toml_.string(*n, key("says"));
    if (const toml::node* n = t_.get("says_zh")) c_.says_zh = toml_.string(*n, key("says_zh"));
    if (const toml::node* n = t_.get("derived")) c_.derived = toml_.boolean(*n, key("derived"));
    if (const toml::node* n = t_.get("step")) {
      c_.step = toml_.string(*n, key("step"));
      c_.step_line = toml_.line_of(n);
    }
    const toml::node* shape = t_.get("shape");
    const toml::node* quantity = t_.get("quantity");
    if (shape && quantity)
      toml_.fail(
          quantity, key("quantity"),
          tr("a claim states a shape or a quantity, not both; split it into two [[claim]]s"));
    if (!quantity || !is_attended(toml_.string(*quantity, key("quantity"))))
      refuse({"window", "global", "stride", "causal", "chunk", "overlap"},
             tr("only an attended-cells claim (quantity = \"attended\" or "
                "\"attended_fraction\") describes a mask pattern"));
    if (!quantity || toml_.string(*quantity, key("quantity")) != "stack_grad_norm")
      refuse({"layers", "at", "residual"},
             tr("only a stack claim (quantity = \"stack_grad_norm\") builds layers"));
    if (shape)
      read_shape(*shape);
    else
      read_quantity(*quantity);
    return std::move(c_);
  }

 private:
  std::string key(std::string_view name) const { return fmt::format("{}.{}", where_, name); }

  // Keys that mean nothing for this kind of claim are errors, not ignored.
  void refuse(std::initializer_list<std::string_view> names, std::string_view why) const {
    for (std::string_view name : names)
      if (const toml::node* n = t_.get(name))
        toml_.fail(n, key(name), tr_format("{} (remove it)", why));
  }

  std::uint64_t positive(std::string_view name, long long max) const {
    const toml::node* n = t_.get(name);
    const long long v = toml_.integer(*n, key(name));
    if (v < 1 || v > max)
      toml_.fail(n, key(name),
                 tr_format("{} is out of range; give a whole number from 1 to {}", v, max));
    return static_cast<std::uint64_t>(v);
  }

  void read_batch_and_seq() {
    if (t_.get("batch")) c_.batch = positive("batch", 1LL << 31);
    if (t_.get("seq")) c_.seq = positive("seq", kMaxClaimSeq);
  }

  void read_shape(const toml::node& node) {
    c_.kind = QuantityClaim::Kind::shape;
    c_.quantity = "shape";
    refuse({"value", "unit", "tolerance", "dtype", "d_k", "samples", "seed", "vectors", "scaled"},
           tr("a shape claim states only shape (and step, batch, seq)"));
    if (c_.step.empty())
      toml_.fail(&item_, key("step"), tr("a shape claim needs step = \"<step id>\""));
    read_batch_and_seq();
    const toml::array* dims = node.as_array();
    if (!dims || dims->empty())
      toml_.fail(&node, key("shape"), tr("expected [rows, cols], whole numbers"));
    for (const toml::node& d : *dims) {
      const long long v = toml_.integer(d, key("shape"));
      if (v < 1)
        toml_.fail(&d, key("shape"), tr("every dimension is a whole number of at least 1"));
      c_.shape.push_back(static_cast<std::size_t>(v));
    }
    const bool heads = c_.step.starts_with("head*.");
    const std::size_t expected = 2 + (c_.batch ? 1 : 0) + (heads ? 1 : 0);
    if (c_.shape.size() != expected)
      toml_.fail(&node, key("shape"),
                 tr_format("{} dimensions given but this claim has {}: write [{}rows, cols]",
                           c_.shape.size(), expected,
                           std::string(c_.batch ? "batch, " : "") + (heads ? "heads, " : "")));
  }

  void read_quantity(const toml::node& node) {
    c_.quantity = toml_.string(node, key("quantity"));
    const toml::node* value = t_.get("value");
    if (!value)
      toml_.fail(
          &item_, key("value"),
          tr_format("a {} claim needs value = <the number the document states>", c_.quantity));
    if (c_.quantity != "kv_cache_bytes")
      refuse({"per", "kv_heads"}, tr("only a KV-cache claim (quantity = \"kv_cache_bytes\") has it"));
    if (!is_one_of(kSoftmaxGrad, c_.quantity))
      refuse({"keys"}, tr("only a sampled softmax-gradient claim (quantity = "
                          "\"softmax_grad_median\" or \"softmax_grad_vanished\") has it"));
    if (c_.quantity == "max_abs" || c_.quantity == "norm") {
      read_step_size();
    } else if (is_one_of(kSoftmaxGrad, c_.quantity)) {
      c_.kind = QuantityClaim::Kind::softmax_grad;
      refuse({"step", "batch", "seq", "dtype", "unit"},
             tr("a sampled statistic is about random vectors, not a step of the lesson"));
      c_.samples = kSoftmaxGradSamples;
      read_sampling();
      if (t_.get("keys")) c_.keys = positive("keys", kMaxSampledKeys);
    } else if (c_.quantity == "stack_grad_norm") {
      read_stack();
    } else if (c_.quantity == "kv_cache_bytes") {
      read_kv_cache_keys();
    } else if (c_.quantity == "bytes" || c_.quantity == "flops") {
      c_.kind = c_.quantity == "bytes" ? QuantityClaim::Kind::bytes : QuantityClaim::Kind::flops;
      refuse({"d_k", "samples", "seed", "vectors", "scaled"},
             tr("only a sampled statistic (quantity = \"qk_...\") draws samples"));
      read_batch_and_seq();
      if (c_.kind == QuantityClaim::Kind::flops)
        refuse({"unit", "dtype"}, tr("FLOPs are a count: they have no unit or dtype"));
      else
        read_bytes_keys();
    } else if (is_attended(c_.quantity)) {
      read_attended();
    } else if (is_one_of(kSampled, c_.quantity)) {
      c_.kind = QuantityClaim::Kind::sampled;
      refuse({"step", "batch", "seq", "dtype", "unit"},
             tr("a sampled statistic is about random vectors, not a step of the lesson"));
      read_sampling();
    } else {
      toml_.fail(&node, key("quantity"),
                 tr_format("\"{}\" is not a quantity; write \"bytes\", \"flops\", "
                           "\"kv_cache_bytes\", \"qk_mean\", \"qk_variance\", \"qk_std\", "
                           "\"qk_beyond_3\", \"attended\", \"attended_fraction\", \"max_abs\", "
                           "\"norm\", \"softmax_grad_median\", \"softmax_grad_vanished\" or "
                           "\"stack_grad_norm\" (or shape = [rows, cols] instead)",
                           c_.quantity));
    }
    c_.value = toml_.number(*value, key("value"));
    if (const toml::node* n = t_.get("tolerance")) {
      c_.tolerance = toml_.number(*n, key("tolerance")).value;
      if (*c_.tolerance < 0) toml_.fail(n, key("tolerance"), tr("must not be negative"));
    }
  }

  // quantity = "kv_cache_bytes": per = "token" | "sequence", kv_heads = g,
  // and the bytes keys (dtype, unit, batch, seq).
  void read_kv_cache_keys() {
    c_.kind = QuantityClaim::Kind::kv_cache_bytes;
    refuse({"step", "d_k", "samples", "seed", "vectors", "scaled"},
           tr("a KV-cache claim is about K and V of the whole lesson, not one step"));
    if (const toml::node* n = t_.get("per")) {
      const std::string per = toml_.string(*n, key("per"));
      if (per != "token" && per != "sequence")
        toml_.fail(n, key("per"),
                   tr_format("\"{}\" is not what a KV cache is counted per; write \"token\" or "
                             "\"sequence\"",
                             per));
      c_.per_token = per == "token";
    }
    if (t_.get("kv_heads")) c_.kv_heads = positive("kv_heads", 1LL << 20);
    read_batch_and_seq();
    if (c_.per_token && (c_.batch || c_.seq))
      toml_.fail(t_.get(c_.batch ? "batch" : "seq"), key(c_.batch ? "batch" : "seq"),
                 tr("a per-token count has no batch or seq; remove it or write per = \"sequence\""));
    read_bytes_keys();
  }

  template <std::size_t N>
  static bool is_one_of(const std::string_view (&names)[N], std::string_view quantity) {
    return std::find(std::begin(names), std::end(names), quantity) != std::end(names);
  }

  // quantity = "max_abs" | "norm": the size of one step's cells (or of every
  // head's, with step = "head*.<step>"); nothing but step, value, tolerance.
  void read_step_size() {
    c_.kind = QuantityClaim::Kind::step_size;
    refuse({"batch", "seq", "dtype", "unit", "d_k", "samples", "seed", "vectors", "scaled"},
           tr("the size of a step is read from the lesson's own trace; it takes step, value "
              "and tolerance"));
    if (c_.step.empty())
      toml_.fail(&item_, key("step"),
                 tr_format("a {} claim needs step = \"<step id>\", e.g. \"grad.head0.jacobian\"",
                           c_.quantity));
  }

  // quantity = "stack_grad_norm": layers = k (1..12), at = l (1..k), seed,
  // residual = true | false; nothing of a step or of sampling.
  void read_stack() {
    c_.kind = QuantityClaim::Kind::stack_grad_norm;
    refuse({"step", "batch", "seq", "dtype", "unit", "d_k", "samples", "vectors", "scaled"},
           tr("a stack claim builds its own layers from the lesson's shape; it takes layers, "
              "at, seed, residual, value and tolerance"));
    for (const char* name : {"layers", "at"})
      if (!t_.get(name))
        toml_.fail(&item_, key(name),
                   tr("a stack_grad_norm claim needs layers = <k, 1 to 12> and at = <the layer "
                      "whose input gradient is compared with layer k's, 1 to k>"));
    c_.layers = positive("layers", kMaxClaimLayers);
    c_.at = positive("at", static_cast<long long>(c_.layers));
    if (const toml::node* n = t_.get("seed")) {
      const long long s = toml_.integer(*n, key("seed"));
      if (s < 0) toml_.fail(n, key("seed"), tr("a seed is a whole number of at least 0"));
      c_.seed = static_cast<std::uint64_t>(s);
    }
    if (const toml::node* n = t_.get("residual"))
      c_.residual = toml_.boolean(*n, key("residual"));
  }

  static bool is_attended(std::string_view quantity) {
    return quantity == "attended" || quantity == "attended_fraction";
  }

  // attended / attended_fraction: the lesson's mask, the claim's own pattern
  // (window, global, stride, causal; at seq), or 003's chunking (chunk, overlap).
  void read_attended() {
    c_.kind = QuantityClaim::Kind::attended;
    c_.fraction = c_.quantity == "attended_fraction";
    refuse({"step", "batch", "unit", "dtype", "d_k", "samples", "seed", "vectors", "scaled"},
           tr("an attended-cells claim counts the cells of the score matrix a mask lets "
              "attend; it takes seq, window, global, stride, causal, chunk and overlap"));
    read_batch_and_seq();
    const bool own = t_.get("window") || t_.get("global") || t_.get("stride") || t_.get("causal");
    if (const toml::node* n = t_.get("chunk")) {
      read_chunking(*n, own);
      return;
    }
    if (const toml::node* n = t_.get("overlap"))
      toml_.fail(n, key("overlap"), tr("overlap needs chunk = <tokens per chunk>"));
    if (!own) return;  // the lesson's mask
    if (!c_.seq)
      toml_.fail(&item_, key("seq"),
                 tr("a claim with its own pattern needs seq = <tokens> (the document's length)"));
    const toml::node* causal = t_.get("causal");
    c_.pattern = read_mask_pattern(toml_, t_, where_, *c_.seq,
                                   causal && toml_.boolean(*causal, key("causal")));
  }

  void read_chunking(const toml::node& chunk, bool own) {
    if (own)
      toml_.fail(&chunk, key("chunk"),
                 tr("chunking cuts the sequence into pieces, each with full attention; it does "
                    "not combine with window, global, stride or causal in one claim"));
    if (!c_.seq) toml_.fail(&item_, key("seq"), tr("chunking needs seq = <tokens in the text>"));
    c_.chunk = positive("chunk", kMaxClaimSeq);
    if (const toml::node* n = t_.get("overlap")) {
      const long long o = toml_.integer(*n, key("overlap"));
      if (o < 0 || static_cast<std::uint64_t>(o) >= c_.chunk)
        toml_.fail(n, key("overlap"),
                   tr_format("overlap = {} must be from 0 to chunk − 1 = {} (each chunk starts "
                             "chunk − overlap tokens after the one before)",
                             o, c_.chunk - 1));
      c_.overlap = static_cast<std::uint64_t>(o);
    }
  }

  void read_bytes_keys() {
    if (const toml::node* n = t_.get("dtype")) {
      const std::string name = toml_.string(*n, key("dtype"));
      const std::optional<Dtype> dtype = parse_dtype(name);
      if (!dtype)
        toml_.fail(n, key("dtype"),
                   tr_format("\"{}\" is not a dtype; write \"f64\", \"f32\", \"f16\" or "
                             "\"bf16\"",
                             name));
      c_.dtype = *dtype;
    }
    c_.unit = "B";
    if (const toml::node* n = t_.get("unit")) {
      c_.unit = toml_.string(*n, key("unit"));
      const auto* found = std::find_if(std::begin(kByteUnits), std::end(kByteUnits),
                                       [&](const auto& u) { return u.first == c_.unit; });
      if (found == std::end(kByteUnits))
        toml_.fail(n, key("unit"),
                   tr_format("\"{}\" is not a unit of bytes; write \"B\", \"KB\", \"MB\", "
                             "\"GB\" (powers of 1000) or \"KiB\", \"MiB\", \"GiB\" (of 1024)",
                             c_.unit));
      c_.unit_size = found->second;
    }
  }

  void read_sampling() {
    if (!t_.get("d_k"))
      toml_.fail(&item_, key("d_k"), tr("a sampled statistic needs d_k = <components per vector>"));
    c_.d_k = positive("d_k", 1LL << 31);
    if (t_.get("samples")) c_.samples = positive("samples", 1LL << 31);
    if (const toml::node* n = t_.get("seed")) {
      const long long s = toml_.integer(*n, key("seed"));
      if (s < 0) toml_.fail(n, key("seed"), tr("a seed is a whole number of at least 0"));
      c_.seed = static_cast<std::uint64_t>(s);
    }
    if (const toml::node* n = t_.get("vectors")) {
      const std::string v = toml_.string(*n, key("vectors"));
      if (v != "unit_variance" && v != "unit_length")
        toml_.fail(n, key("vectors"),
                   tr_format("\"{}\" is not a kind of vectors; write \"unit_variance\" "
                             "(components N(0, 1)) or \"unit_length\"",
                             v));
      c_.unit_length = v == "unit_length";
    }
    if (const toml::node* n = t_.get("scaled")) c_.scaled = toml_.boolean(*n, key("scaled"));
  }

  const TomlReader& toml_;
  const toml::node& item_;
  const toml::table& t_;
  const std::string& where_;
  QuantityClaim c_;
};

}  // namespace

bool is_quantity_claim(const toml::table& claim) {
  return claim.contains("shape") || claim.contains("quantity");
}

QuantityClaim read_quantity_claim(const TomlReader& toml, const toml::node& item,
                                  const std::string& where) {
  return QuantityClaimReader(toml, item, where).read();
}

}  // namespace attn
