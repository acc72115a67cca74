// Finding a lesson by embedded id or by path, and the source documents'
// sections that lessons cite, with their own Chinese headings.
#include "core/lesson_library.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <optional>
#include <regex>
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

// `text` without its parenthesised parts (nested ones too): the English
// glosses of a `source`, whose numbers are not section numbers.
std::string without_glosses(std::string_view text) {
  std::string out;
  int depth = 0;
  for (const char c : text) {
    if (c == '(') ++depth;
    if (depth == 0) out += c;
    if (c == ')' && depth > 0) --depth;
  }
  return out;
}

// The section numbers one part of a `source` cites ("sections 2.4-2.5 and 5",
// "section 4.3 and section 1.1"), a range as each of its sections.
std::vector<std::string> cited_sections(const std::string& part) {
  static const std::regex cited(
      R"(sections?\s+(\d[\d.\-]*(?:\s*(?:and|,)\s*(?:section\s+)?\d[\d.\-]*)*))");
  static const std::regex number(R"((\d+(?:\.\d+)*)(?:-(\d+(?:\.\d+)*))?)");
  std::vector<std::string> out;
  for (auto m = std::sregex_iterator(part.begin(), part.end(), cited); m != std::sregex_iterator();
       ++m) {
    const std::string list = (*m)[1].str();
    for (auto n = std::sregex_iterator(list.begin(), list.end(), number);
         n != std::sregex_iterator(); ++n) {
      const std::string first = (*n)[1].str(), last = (*n)[2].str();
      out.push_back(first);
      // "2.4-2.5": every section from the first to the last of one chapter.
      const std::size_t dot = first.rfind('.');
      if (last.empty() || dot == std::string::npos || !last.starts_with(first.substr(0, dot + 1)))
        continue;
      const int from = std::stoi(first.substr(dot + 1)), to = std::stoi(last.substr(dot + 1));
      for (int k = from + 1; k <= to && k <= from + 20; ++k)
        out.push_back(first.substr(0, dot + 1) + std::to_string(k));
    }
  }
  return out;
}

const char* section_heading(std::string_view file, std::string_view number) {
  for (const SourceSection& s : source_sections())
    if (file == s.file && number == s.number) return s.heading;
  return nullptr;
}

// One part of a `source` ("003_….txt, section 4.4 (…)") in Chinese, or
// nullopt when its file or one of its sections is not in the table.
std::optional<std::string> source_part_zh(const std::string& part) {
  static const std::regex file(R"(^\s*(\d{3}_[0-9a-f]{16}\.txt)\b)");
  std::smatch m;
  if (!std::regex_search(part, m, file)) return std::nullopt;
  const std::string name = m[1].str();
  std::vector<std::string> sections;
  for (const std::string& number : cited_sections(without_glosses(part))) {
    const char* heading = section_heading(name, number);
    if (!heading) return std::nullopt;
    sections.push_back(fmt::format("第 {} 节（{}）", number, heading));
  }
  if (sections.empty()) return name;
  return fmt::format("{} {}", name, fmt::join(sections, "、"));
}

}  // namespace

std::string source_text(const std::string& source, Language lang) {
  if (lang != Language::zh || source.empty()) return source;
  // The parts are separated by ';' outside parentheses (a gloss may hold one).
  std::vector<std::string> parts(1);
  int depth = 0;
  for (const char c : source) {
    depth += c == '(' ? 1 : c == ')' && depth > 0 ? -1 : 0;
    if (c == ';' && depth == 0)
      parts.emplace_back();
    else
      parts.back() += c;
  }
  for (std::string& part : parts) {
    const std::optional<std::string> zh = source_part_zh(part);
    if (!zh) return source;
    part = *zh;
  }
  return fmt::format("{}", fmt::join(parts, "；"));
}

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

const std::vector<SourceSection>& source_sections() {
  // Each heading as the document writes it (../shared/seeds), cut where its
  // text begins; the file name and the number say where to find it.
  static const std::vector<SourceSection> sections = {
      {"000_0ccc5db2bedb29fc.txt", "2.1", "问题根源原始词向量的“语义失焦”现象"},
      {"000_0ccc5db2bedb29fc.txt", "2.3", "缩放因子√d_k防止Softmax饱和的救命稻草"},
      {"000_0ccc5db2bedb29fc.txt", "3",
       "核心细节解析手把手拆解“It’s a pleasant walk by the river bank”全程计算"},
      {"000_0ccc5db2bedb29fc.txt", "3.1", "数据准备从句子到向量矩阵的完整链路"},
      {"000_0ccc5db2bedb29fc.txt", "4", "实操过程在PyTorch中从零实现单头自注意力含可运行代码"},
      {"000_0ccc5db2bedb29fc.txt", "4.2", "关键参数调试指南d_k为什么常设为64"},
      {"000_0ccc5db2bedb29fc.txt", "5.1", "问题速查表从现象反推根本原因"},
      {"000_0ccc5db2bedb29fc.txt", "6.1", "BERT Encoder的完整流水线不只是QKV"},
      {"001_ac27b42bbe3ea7c7.txt", "2.1", "Query-Key-Value三元组揭秘"},
      {"001_ac27b42bbe3ea7c7.txt", "2.2", "位置编码的魔法"},
      {"001_ac27b42bbe3ea7c7.txt", "5.1", "高效注意力最新进展"},
      {"002_51c47c7950c6e523.txt", "1.1", "从固定向量到动态对齐注意力机制出现之前的痛点"},
      {"002_51c47c7950c6e523.txt", "2.2", "点积之后为什么要除以sqrt(dk)"},
      {"002_51c47c7950c6e523.txt", "3.1", "先写一个通用点积注意力函数"},
      {"002_51c47c7950c6e523.txt", "3.3", "Maskpadding mask和causal mask"},
      {"002_51c47c7950c6e523.txt", "4.3", "交叉注意力业务项目中的常客"},
      {"002_51c47c7950c6e523.txt", "5.1", "不带位置信息的自注意力无法区分语序"},
      {"002_51c47c7950c6e523.txt", "5.2", "正弦位置编码的直觉与代码"},
      {"002_51c47c7950c6e523.txt", "5.3", "位置编码在实际工程中的选型"},
      {"003_87eaca95f9b8aedb.txt", "2.1", "为什么抛弃RNN/CNN——序列建模的本质矛盾"},
      {"003_87eaca95f9b8aedb.txt", "2.2",
       "为什么是Multi-Head而不是Single-Head——注意力的“多视角”本质"},
      {"003_87eaca95f9b8aedb.txt", "2.4", "为什么FFN层用ReLU且维度先升后降——非线性能力的杠杆效应"},
      {"003_87eaca95f9b8aedb.txt", "2.5",
       "为什么用LayerNorm而不是BatchNorm——小批量训练的稳定性刚需"},
      {"003_87eaca95f9b8aedb.txt", "3.1", "Q/K/V的线性变换为什么需要三个独立矩阵"},
      {"003_87eaca95f9b8aedb.txt", "3.2", "计算注意力分数QK^T / √d_k 的物理意义"},
      {"003_87eaca95f9b8aedb.txt", "3.3", "Masking与Softmax如何让Decoder“看不见未来”"},
      {"003_87eaca95f9b8aedb.txt", "4.2", "Multi-Head Attention的显存黑洞为什么你的GPU总OOM"},
      {"003_87eaca95f9b8aedb.txt", "4.4", "解码器的“自回归诅咒”为什么生成速度慢得像蜗牛"},
      {"003_87eaca95f9b8aedb.txt", "5", "精读后的实战检验用30行代码复现Encoder核心"},
      {"004_da6ac7aced185275.txt", "2.2", "从单头到多头为什么需要多个“头”"},
      {"004_da6ac7aced185275.txt", "2.3", "数学形式与计算图"},
      {"004_da6ac7aced185275.txt", "3.2", "关键变体与改进"},
      {"004_da6ac7aced185275.txt", "4.1", "模块化实现详解"},
      {"004_da6ac7aced185275.txt", "4.2", "测试与验证"},
      {"004_da6ac7aced185275.txt", "5.3", "注意力权重的平均与聚合"},
      {"004_da6ac7aced185275.txt", "6.1", "计算效率与内存优化"},
      {"004_da6ac7aced185275.txt", "6.2", "稳定训练与初始化技巧"},
      {"004_da6ac7aced185275.txt", "7.1", "训练不稳定或损失为NaN"},
      // Cited by the lessons of issue 26 item 7 (stories and masks).
      {"002_51c47c7950c6e523.txt", "2.3", "软注意力与硬注意力的取舍"},
      {"002_51c47c7950c6e523.txt", "4.2", "PyTorch实现多头注意力"},
      {"003_87eaca95f9b8aedb.txt", "3.4", "加权求和V矩阵如何被“重写”"},
      {"004_da6ac7aced185275.txt", "6.3", "注意力机制中的Dropout"},
      // Mask patterns (sliding-window-global, strided-sparse):
      {"000_0ccc5db2bedb29fc.txt", "6.3", "自注意力的边界它不能做什么"},
      {"001_ac27b42bbe3ea7c7.txt", "4.1", "长序列处理技巧"},
      {"003_87eaca95f9b8aedb.txt", "4.1", "Positional Encoding的“长度诅咒”训练时128上线时2048怎么办"},
      {"004_da6ac7aced185275.txt", "3.2", "关键变体与改进"},
  };
  return sections;
}

}  // namespace attn
