// The .mo reader and the language setting (src/core/i18n.cpp).
#include "core/i18n.hpp"

#include <doctest/doctest.h>

#include "core/lesson_library.hpp"
#include "core/pipeline.hpp"
#include "support/host_backend.hpp"

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace attn {

namespace {

// A little-endian GNU .mo file of `pairs`, sorted by msgid as msgfmt writes it.
std::string mo_file(std::vector<std::pair<std::string, std::string>> pairs) {
  std::sort(pairs.begin(), pairs.end());
  const std::uint32_t n = static_cast<std::uint32_t>(pairs.size());
  std::string out;
  const auto word = [&](std::uint32_t v) {
    for (int k = 0; k < 4; ++k) out += static_cast<char>((v >> (8 * k)) & 0xffu);
  };
  const std::uint32_t originals = 28, translations = originals + 8 * n;
  std::uint32_t at = translations + 8 * n;
  word(0x950412de);
  word(0);
  word(n);
  word(originals);
  word(translations);
  word(0);  // no hash table
  word(0);
  std::string strings;
  std::vector<std::uint32_t> table;
  for (int side = 0; side < 2; ++side)
    for (const auto& [from, to] : pairs) {
      const std::string& s = side == 0 ? from : to;
      table.push_back(static_cast<std::uint32_t>(s.size()));
      table.push_back(at + static_cast<std::uint32_t>(strings.size()));
      strings += s + '\0';
    }
  for (const std::uint32_t v : table) word(v);
  return out + strings;
}

}  // namespace

TEST_CASE("MoCatalog finds each translation by binary search and nothing else") {
  const MoCatalog catalog(
      mo_file({{"Scores", "分数"}, {"Context", "上下文"}, {"{} ok", "{} 个正确"}}));
  REQUIRE(catalog.valid());
  CHECK(catalog.size() == 3);
  CHECK(catalog.find("Scores") == std::optional<std::string_view>("分数"));
  CHECK(catalog.find("Context") == std::optional<std::string_view>("上下文"));
  CHECK(catalog.find("{} ok") == std::optional<std::string_view>("{} 个正确"));
  CHECK_FALSE(catalog.find("Scaled scores").has_value());
  CHECK_FALSE(catalog.find("").has_value());  // the header is not a message
}

TEST_CASE("MoCatalog reads a truncated or corrupt catalog as empty, without crashing") {
  const std::string good = mo_file({{"Scores", "分数"}, {"Context", "上下文"}});
  SUBCASE("every truncation") {
    // (The file's last byte is the last string's NUL, outside every string:
    // without it the catalog is whole.)
    for (std::size_t size = 0; size + 1 < good.size(); ++size) {
      const MoCatalog cut(good.substr(0, size));
      CHECK_FALSE(cut.find("Scores").has_value());
    }
  }
  SUBCASE("a wrong magic number") {
    std::string bad = good;
    bad[0] = 'x';
    CHECK_FALSE(MoCatalog(bad).valid());
  }
  SUBCASE("a string offset past the end") {
    std::string bad = good;
    bad[28 + 4] = '\xff';  // the first original's offset
    bad[28 + 7] = '\x7f';
    CHECK_FALSE(MoCatalog(bad).valid());
  }
  SUBCASE("a count far larger than the file") {
    std::string bad = good;
    bad[11] = '\x7f';
    CHECK_FALSE(MoCatalog(bad).valid());
  }
}

TEST_CASE("translate: the embedded zh_CN catalog, and English as it is") {
  CHECK(translate(Language::en, "Scores") == "Scores");
  CHECK(translate(Language::zh, "Scores") == "注意力分数");
  CHECK(translate(Language::zh, "Attention weights") == "注意力权重");
  // A message the catalog does not have comes back in English.
  CHECK(translate(Language::zh, "no such message in the catalog") ==
        "no such message in the catalog");
}

TEST_CASE("Message keeps its values and shows them in either language") {
  const Message m(N_("Decoding t{}: key cache"), {"2"});
  CHECK(m.in(Language::en) == "Decoding t2: key cache");
  CHECK(m.in(Language::zh) == "解码步 t2：键缓存");
  CHECK(Message("Scores").in(Language::zh) == "注意力分数");
}

TEST_CASE("language_named accepts en and zh only") {
  CHECK(language_named("en") == Language::en);
  CHECK(language_named("zh") == Language::zh);
  CHECK_FALSE(language_named("fr").has_value());
  CHECK_FALSE(language_named("").has_value());
}

TEST_CASE("step names and warnings shown in the terminal's language, English kept for JSON") {
  const Lesson lesson = find_lesson("fill-zero-fails");
  testing::HostBackend cpu;
  const Trace trace = run_pipeline(lesson, cpu);
  REQUIRE_FALSE(trace.warnings.empty());
  const Step& weights = trace.at("head0.weights");
  set_languages(Language::zh, Language::en);
  CHECK(step_display_name(weights) == "注意力权重");
  CHECK(step_display_name(trace.at("head0.Q")) == "第 0 个头的 Q");
  const std::vector<std::string> shown = shown_warnings(trace);
  set_languages(Language::en, Language::en);
  CHECK(weights.name == "Attention weights");
  CHECK(step_display_name(weights) == "Attention weights");
  REQUIRE(shown.size() == trace.warnings.size());
  CHECK(english_warnings(trace)[0].starts_with("mask_fill = 0 does not mask"));
  CHECK(shown[0].starts_with("mask_fill = 0 起不到掩码作用：被掩码的注意力分数变成 0"));
  CHECK(shown_warnings(trace) == english_warnings(trace));
}

TEST_CASE("a DocumentScope writes in the document language and gives the terminal's back") {
  SUBCASE("LANG=zh_CN.UTF-8 without --lang: the terminal in Chinese, documents in English") {
    set_languages(Language::zh, Language::en);
    CHECK(terminal_language() == Language::zh);
    CHECK(document_language() == Language::en);
    CHECK(tr("Scores") == "注意力分数");
    {
      const DocumentScope document;
      CHECK(language() == Language::en);
      CHECK(tr("Scores") == "Scores");
      CHECK(Message("Scores").shown() == "Scores");
      {
        const DocumentScope nested;
        CHECK(tr("Scores") == "Scores");
      }
      CHECK(tr("Scores") == "Scores");
    }
    CHECK(language() == Language::zh);
    CHECK(tr("Scores") == "注意力分数");
  }
  SUBCASE("--lang zh: both in Chinese, whatever the environment") {
    set_languages(Language::zh, Language::zh);
    const DocumentScope document;
    CHECK(tr("Scores") == "注意力分数");
    CHECK(tr_format("Decoding t{}: key cache", 2) == "解码步 t2：键缓存");
  }
  set_languages(Language::en, Language::en);
  CHECK(tr("Scores") == "Scores");
}

}  // namespace attn
