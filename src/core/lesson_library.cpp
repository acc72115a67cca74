// Finding a lesson by embedded id or by path.
#include "core/lesson_library.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <set>

#include "core/error.hpp"
#include "core/i18n.hpp"
#include "core/read_input.hpp"
#include "core/toml_read.hpp"

namespace attn {

namespace {

// " (did you mean 'river-bank'?)" for a near miss, else empty.
std::string did_you_mean(const std::string& id) {
  std::vector<std::string_view> ids;
  for (const EmbeddedLesson& e : embedded_lessons()) ids.push_back(e.id);
  const std::string_view best = nearest_name(id, ids);
  return best.empty() ? "" : tr_format(" (did you mean '{}'?)", best);
}

std::string embedded_ids() {
  std::string known;
  for (const EmbeddedLesson& e : embedded_lessons())
    known += fmt::format("{}{}", known.empty() ? "" : ", ", e.id);
  return known;
}

}  // namespace

const EmbeddedLesson& embedded_lesson(const std::string& id) {
  for (const EmbeddedLesson& e : embedded_lessons())
    if (id == e.id) return e;
  throw InputError(tr_format("unknown lesson '{}'{}. Embedded lessons: {}", id, did_you_mean(id),
                             embedded_ids()));
}

Lesson find_lesson(const std::string& name_or_path) {
  for (const EmbeddedLesson& e : embedded_lessons())
    if (name_or_path == e.id) return parse_lesson(e.text, fmt::format("{} (embedded)", e.path));
  std::error_code error;  // a name too long for a path is simply not a file
  const bool looks_like_path =
      name_or_path == kStandardInput || name_or_path.find('/') != std::string::npos ||
      name_or_path.ends_with(".toml") || std::filesystem::exists(name_or_path, error);
  if (looks_like_path) return load_lesson_file(name_or_path);
  throw InputError(
      tr_format("unknown lesson '{}': not an embedded lesson and no such file{}. "
                "Embedded lessons: {}. Give one of these or a path to a .toml file",
                name_or_path, did_you_mean(name_or_path), embedded_ids()));
}

std::vector<Lesson> all_embedded_lessons() {
  std::vector<Lesson> out;
  for (const EmbeddedLesson& e : embedded_lessons())
    out.push_back(parse_lesson(e.text, fmt::format("{} (embedded)", e.path)));
  return out;
}

std::vector<CourseEntry> teaching_order(std::vector<Lesson> lessons) {
  std::map<std::string, std::size_t> index;  // id -> position in `lessons`
  for (std::size_t i = 0; i < lessons.size(); ++i) index.emplace(lessons[i].id, i);
  auto require = [&](const Lesson& l, const std::string& id, const char* key) {
    if (!index.contains(id))
      throw InputError(
          fmt::format("{}: [lesson] {} names '{}', which is not a lesson here", l.origin, key, id));
  };
  // Each lesson's entry: its own, or the lesson it is a variant of.
  std::map<std::string, std::string> entry_of;
  for (const Lesson& l : lessons) {
    for (const std::string& id : l.after) require(l, id, "after");
    entry_of[l.id] = l.id;
    if (l.variant_of.empty()) continue;
    require(l, l.variant_of, "variant_of");
    if (!lessons[index.at(l.variant_of)].variant_of.empty())
      throw InputError(
          fmt::format("{}: [lesson] variant_of names '{}', itself a variant; name "
                      "the lesson it varies",
                      l.origin, l.variant_of));
    entry_of[l.id] = l.variant_of;
  }
  // The entries each entry waits for: every `after` of its members.
  std::map<std::string, std::set<std::string>> waits;
  for (const Lesson& l : lessons) {
    std::set<std::string>& w = waits[entry_of.at(l.id)];
    for (const std::string& id : l.after)
      if (entry_of.at(id) != entry_of.at(l.id)) w.insert(entry_of.at(id));
  }
  std::vector<CourseEntry> out;
  std::map<std::string, std::size_t> placed;  // entry id -> position in `out`
  while (placed.size() < waits.size()) {
    const std::string* next = nullptr;
    for (const auto& [id, w] : waits) {
      if (placed.contains(id)) continue;
      if (!std::all_of(w.begin(), w.end(),
                       [&](const std::string& p) { return placed.contains(p); }))
        continue;
      const int level = lessons[index.at(id)].level;
      if (!next || level < lessons[index.at(*next)].level) next = &id;  // ties: by id (map order)
    }
    if (!next) {
      std::string stuck;
      for (const auto& [id, w] : waits)
        if (!placed.contains(id)) stuck += fmt::format("{}{}", stuck.empty() ? "" : ", ", id);
      throw InputError(fmt::format(
          "the lessons' [lesson] after lists form a cycle among: {}; remove one of them", stuck));
    }
    placed.emplace(*next, out.size());
    out.push_back({lessons[index.at(*next)], {}});
  }
  for (Lesson& l : lessons)
    if (!l.variant_of.empty()) out[placed.at(l.variant_of)].variants.push_back(std::move(l));
  for (CourseEntry& e : out)
    std::sort(e.variants.begin(), e.variants.end(),
              [](const Lesson& a, const Lesson& b) { return a.id < b.id; });
  return out;
}

const std::vector<SourceDocument>& source_documents() {
  static const std::vector<SourceDocument> documents = {
      {"000_0ccc5db2bedb29fc.txt", "Self-attention from QKV to contextual vectors (\"river bank\")",
       "从“bank”这个词开始，真正看懂自注意力怎么工作"},
      {"001_ac27b42bbe3ea7c7.txt", "Attention principles and Transformer practice",
       "注意力机制原理与Transformer实战解析"},
      {"002_51c47c7950c6e523.txt", "Attention from principle to code (masks, cross, PE)",
       "（无标题；首段：从原理到代码实战）"},
      {"003_87eaca95f9b8aedb.txt", "A close reading of \"Attention Is All You Need\"",
       "这篇论文为什么值得“精读”而不是“略读”"},
      {"004_da6ac7aced185275.txt", "Multi-head attention from principle to PyTorch",
       "从“注意力”到“多头”的进化之路"},
  };
  return documents;
}

}  // namespace attn
