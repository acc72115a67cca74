// [model] window / global / stride and the same keys of an "attended" claim.
#include "core/mask_pattern_read.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "core/i18n.hpp"

namespace attn {

namespace {

std::string key_of(std::string_view where, std::string_view name) {
  return fmt::format("{}.{}", where, name);
}

std::uint64_t read_window(const TomlReader& toml, const toml::node& n, const std::string& key) {
  const long long w = toml.integer(n, key);
  if (w < 0)
    toml.fail(&n, key,
              tr_format("window = {} cannot be negative; give how many positions a query sees on "
                        "each side of itself (0 = only itself, 2 = two before and two after)",
                        w));
  return static_cast<std::uint64_t>(w);
}

std::uint64_t read_stride(const TomlReader& toml, const toml::node& n, const std::string& key) {
  const long long s = toml.integer(n, key);
  if (s < 1)
    toml.fail(&n, key,
              tr_format("stride = {} keeps no keys; give a whole number of at least 1 (stride = "
                        "s keeps keys s − 1, 2s − 1, …: every s-th key)",
                        s));
  return static_cast<std::uint64_t>(s);
}

std::vector<std::uint64_t> read_global(const TomlReader& toml, const toml::node& n,
                                       const std::string& key, std::uint64_t tokens) {
  const toml::array* list = n.as_array();
  if (!list)
    toml.fail(&n, key, tr("expected a list of token indices, e.g. global = [0] (counted from 0)"));
  std::vector<std::pair<std::uint64_t, const toml::node*>> read;  // index, where it is written
  for (const toml::node& item : *list) {
    const long long g = toml.integer(item, key);
    if (g < 0 || static_cast<std::uint64_t>(g) >= tokens)
      toml.fail(&item, key,
                tr_format("token {} is out of range: the sequence has {} tokens, indices 0 to {}; "
                          "give indices counted from 0",
                          g, tokens, tokens - 1));
    read.emplace_back(static_cast<std::uint64_t>(g), &item);
  }
  std::stable_sort(read.begin(), read.end(),
                   [](const auto& x, const auto& y) { return x.first < y.first; });
  std::vector<std::uint64_t> out;
  for (const auto& [g, item] : read) {
    if (!out.empty() && out.back() == g)
      toml.fail(item, key, tr_format("token {} is listed twice; list each global token once", g));
    out.push_back(g);
  }
  return out;
}

}  // namespace

MaskPattern read_mask_pattern(const TomlReader& toml, const toml::table& t,
                              std::string_view where, std::uint64_t n, bool causal) {
  MaskPattern p;
  p.causal = causal;
  if (const toml::node* w = t.get("window")) p.window = read_window(toml, *w, key_of(where, "window"));
  if (const toml::node* s = t.get("stride")) p.stride = read_stride(toml, *s, key_of(where, "stride"));
  if (const toml::node* g = t.get("global")) {
    p.global = read_global(toml, *g, key_of(where, "global"), n);
    if (!p.sparse())
      toml.fail(g, key_of(where, "global"),
                tr("global tokens are the exceptions to a window or a stride; without either "
                   "every token already attends everywhere: add window = w or stride = s, or "
                   "remove global"));
  }
  return p;
}

void read_lesson_mask_pattern(const TomlReader& toml, const toml::table* model, Lesson& lesson) {
  if (!model) return;
  const MaskPattern p = read_mask_pattern(toml, *model, "model", lesson.queries(), lesson.causal);
  if (!p.sparse()) return;
  const toml::node* first = model->get("window") ? model->get("window") : model->get("stride");
  const std::string key = model->get("window") ? "model.window" : "model.stride";
  if (lesson.is_cross())
    toml.fail(first, key,
              tr("a window or a stride compares a query's position with a key's, but this "
                 "lesson is cross-attention (input.memory): its keys are another sequence's "
                 "positions. Remove input.memory or the pattern"));
  if (lesson.kv_cache)
    toml.fail(first, key,
              tr("the KV cache steps apply the causal mask only; remove the pattern or set "
                 "[decode] kv_cache = false"));
  lesson.window = p.window;
  lesson.stride = p.stride;
  lesson.global_tokens = p.global;
}

}  // namespace attn
