// The embedded lessons and how a LESSON argument finds one: by id, by path,
// or an error that lists the ids.
#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <unistd.h>

#include "core/error.hpp"
#include "core/lesson_library.hpp"

namespace {

const std::filesystem::path kLessons = std::filesystem::path(ATTN_SOURCE_DIR) / "lessons";

// The ids of lessons/*.toml in the source tree, sorted.
std::vector<std::string> lesson_files() {
  std::vector<std::string> ids;
  for (const auto& entry : std::filesystem::directory_iterator(kLessons))
    if (entry.path().extension() == ".toml") ids.push_back(entry.path().stem().string());
  std::sort(ids.begin(), ids.end());
  return ids;
}

std::string slurp(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

}  // namespace

TEST_CASE("every lessons/*.toml is embedded, with its text as built") {
  const std::vector<std::string> ids = lesson_files();
  const std::vector<attn::EmbeddedLesson>& embedded = attn::embedded_lessons();
  std::vector<std::string> embedded_ids;
  for (const attn::EmbeddedLesson& e : embedded) {
    CAPTURE(e.id);
    embedded_ids.push_back(e.id);
    CHECK(std::string(e.path) == "lessons/" + std::string(e.id) + ".toml");
    CHECK(e.text == slurp(kLessons / (std::string(e.id) + ".toml")));
  }
  std::sort(embedded_ids.begin(), embedded_ids.end());
  CHECK(embedded_ids == ids);
  const std::vector<attn::Lesson> all = attn::all_embedded_lessons();
  REQUIRE(all.size() == embedded.size());
  for (std::size_t i = 0; i < all.size(); ++i) CHECK(all[i].id == embedded[i].id);
}

// In the order of their file names, as cmake/embed_lessons.cmake sorts them
// ("fill-values-1e9.toml" before "fill-values.toml": '-' sorts before '.').
TEST_CASE("embedded lessons come in the order of their file names") {
  std::vector<std::string> files;
  for (const attn::EmbeddedLesson& e : attn::embedded_lessons()) files.push_back(e.path);
  std::vector<std::string> sorted = files;
  std::sort(sorted.begin(), sorted.end());
  CHECK(files == sorted);
}

TEST_CASE("find_lesson by id: the embedded lesson, its numbers as in the file") {
  const attn::Lesson L = attn::find_lesson("river-bank");
  CHECK(L.id == "river-bank");
  CHECK(L.origin == "lessons/river-bank.toml (embedded)");
  CHECK(L.tokens == std::vector<std::string>{"river", "bank", "walk", "by"});
  REQUIRE(L.X.n_rows == 4);
  CHECK(L.X(2, 1) == 0.8);    // X = [..., [0.4, 0.8, 0.1, 0.5], ...]
  CHECK(L.W_K(3, 3) == 0.9);  // W_K's last row [0.3, 0.1, 0.2, 0.9]
  CHECK(std::string(attn::kDefaultLesson) == "river-bank");
  CHECK(attn::find_lesson(attn::kDefaultLesson).id == "river-bank");
}

TEST_CASE("find_lesson by path: a file outside the library, with its own id") {
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / fmt::format("attn-library-{}", ::getpid());
  std::filesystem::create_directories(dir);
  const std::string path = (dir / "tiny.toml").string();
  std::ofstream(path) << "[lesson]\nid = \"tiny\"\n[input]\ntokens = [\"a\", \"b\"]\n"
                         "X = [[1.0, 0.0], [0.0, 2.0]]\n[weights]\n"
                         "W_Q = [[1.0, 0.0], [0.0, 1.0]]\nW_K = [[1.0, 0.0], [0.0, 1.0]]\n"
                         "W_V = [[1.0, 0.0], [0.0, 1.0]]\n";
  const attn::Lesson L = attn::find_lesson(path);
  CHECK(L.id == "tiny");
  CHECK(L.origin == path);
  CHECK(L.X(1, 1) == 2.0);
  // The source tree's copy of an embedded lesson loads as a path too.
  const std::string source_copy = (kLessons / "two-heads.toml").string();
  CHECK(attn::find_lesson(source_copy).origin == source_copy);
  CHECK(attn::find_lesson(source_copy).heads == 2);
  std::filesystem::remove_all(dir);
}

TEST_CASE("an unknown name is an InputError listing every embedded id") {
  try {
    attn::find_lesson("river-bnak");
    FAIL("no error for an unknown lesson");
  } catch (const attn::InputError& e) {
    const std::string what = e.what();
    CHECK(what.starts_with("unknown lesson 'river-bnak'"));
    for (const std::string& id : lesson_files()) CHECK(what.find(id) != std::string::npos);
  }
  // A name that looks like a path is read as one: the error names the file.
  CHECK_THROWS_WITH_AS(attn::find_lesson("no-such-lesson.toml"),
                       doctest::Contains("no-such-lesson.toml"), attn::InputError);
}

namespace {

// A lesson of the course with only what the order reads.
attn::Lesson course_lesson(const std::string& id, int level, std::vector<std::string> after = {},
                           std::string variant_of = "") {
  attn::Lesson l;
  l.id = id;
  l.origin = id + ".toml";
  l.level = level;
  l.after = std::move(after);
  l.variant_of = std::move(variant_of);
  return l;
}

std::vector<std::string> order_ids(const std::vector<attn::CourseEntry>& course) {
  std::vector<std::string> ids;
  for (const attn::CourseEntry& e : course) {
    ids.push_back(e.lesson.id);
    for (const attn::Lesson& v : e.variants) ids.push_back(v.id);
  }
  return ids;
}

}  // namespace

TEST_CASE("teaching order: after first, then level, then id, variants on their lesson's line") {
  std::vector<attn::Lesson> lessons = {
      course_lesson("masks", 3, {"basics"}),    course_lesson("basics", 1),
      course_lesson("zeta", 1, {"scale"}),      course_lesson("scale", 2, {"basics"}),
      course_lesson("masks-b", 3, {}, "masks"), course_lesson("masks-a", 3, {"scale"}, "masks"),
      course_lesson("alpha", 2, {"basics"})};
  const std::vector<attn::CourseEntry> course = attn::teaching_order(lessons);
  // zeta (level 1) waits for scale; alpha and scale tie on level 2, by id.
  CHECK(order_ids(course) == std::vector<std::string>{"basics", "alpha", "scale", "zeta", "masks",
                                                      "masks-a", "masks-b"});
  REQUIRE(course.size() == 5);
  CHECK(course[4].variants.size() == 2);
  // A variant's own `after` holds back its whole entry.
  lessons.push_back(course_lesson("late", 4, {"basics"}));
  lessons[5].after = {"late"};
  const std::vector<std::string> ids = order_ids(attn::teaching_order(lessons));
  CHECK(std::find(ids.begin(), ids.end(), "late") < std::find(ids.begin(), ids.end(), "masks"));
}

TEST_CASE("teaching order: an unknown name, a variant of a variant or a cycle is an InputError") {
  CHECK_THROWS_WITH_AS(attn::teaching_order({course_lesson("a", 1, {"nope"})}),
                       doctest::Contains("a.toml: [lesson] after names 'nope'"), attn::InputError);
  CHECK_THROWS_WITH_AS(attn::teaching_order({course_lesson("a", 1), course_lesson("b", 1, {}, "a"),
                                             course_lesson("c", 1, {}, "b")}),
                       doctest::Contains("itself a variant"), attn::InputError);
  CHECK_THROWS_WITH_AS(attn::teaching_order({course_lesson("a", 1, {"b"}),
                                             course_lesson("b", 1, {"a"}), course_lesson("c", 1)}),
                       doctest::Contains("cycle among: a, b"), attn::InputError);
}

TEST_CASE("the embedded course: every lesson after the ones it builds on, at no lower a level") {
  const std::vector<attn::Lesson> all = attn::all_embedded_lessons();
  const std::vector<attn::CourseEntry> course = attn::teaching_order(all);
  const std::vector<std::string> ids = order_ids(course);
  REQUIRE(ids.size() == all.size());
  auto position = [&](const std::string& id) {
    return std::find(ids.begin(), ids.end(), id) - ids.begin();
  };
  for (const attn::Lesson& l : all) {
    CAPTURE(l.id);
    for (const std::string& before : l.after) {
      CHECK(position(before) < position(l.id));
      CHECK(attn::find_lesson(before).level <= l.level);
    }
    if (!l.variant_of.empty()) CHECK(position(l.variant_of) < position(l.id));
  }
  CHECK(ids.front() == "raw-similarity");
  // The fill-values lessons (five fills, three formats) are one entry.
  const auto fill = std::find_if(course.begin(), course.end(), [](const attn::CourseEntry& e) {
    return e.lesson.id == "fill-values";
  });
  REQUIRE(fill != course.end());
  CHECK(fill->variants.size() == 8);
}

TEST_CASE("embedded_lesson: the text as embedded, an unknown id lists the ids") {
  CHECK(std::string(attn::embedded_lesson("river-bank").text) ==
        slurp(kLessons / "river-bank.toml"));
  CHECK_THROWS_WITH_AS(attn::embedded_lesson("nope"), doctest::Contains("river-bank"),
                       attn::InputError);
}

TEST_CASE("an unknown lesson id near an embedded one is named in the error") {
  CHECK_THROWS_WITH_AS(attn::find_lesson("river-bnk"),
                       doctest::Contains("unknown lesson 'river-bnk': not an embedded lesson and "
                                         "no such file (did you mean 'river-bank'?)"),
                       attn::InputError);
  CHECK_THROWS_WITH_AS(attn::embedded_lesson("whyscale"),
                       doctest::Contains("(did you mean 'why-scale'?)"), attn::InputError);
  // Nothing within two edits: no guess.
  CHECK_THROWS_WITH_AS(attn::embedded_lesson("zzzzzzzz"),
                       doctest::Contains("unknown lesson 'zzzzzzzz'. Embedded"), attn::InputError);
}

TEST_CASE("source_text: each cited section with the document's own heading under zh") {
  using attn::Language;
  const std::string kv =
      "003_87eaca95f9b8aedb.txt, section 4.4 (KV cache for incremental decoding)";
  CHECK(attn::source_text(kv, Language::en) == kv);
  CHECK(attn::source_text(kv, Language::zh) ==
        "003_87eaca95f9b8aedb.txt 第 4.4 节（解码器的“自回归诅咒”为什么生成速度慢得像蜗牛）");
  // A ';' inside a gloss does not split; a range is each of its sections; parts join with '；'.
  CHECK(attn::source_text("002_51c47c7950c6e523.txt, section 3.1 (fill -1e9; -65504 under FP16)",
                          Language::zh) ==
        "002_51c47c7950c6e523.txt 第 3.1 节（先写一个通用点积注意力函数）");
  CHECK(attn::source_text("003_87eaca95f9b8aedb.txt, sections 2.4-2.5 (FFN, LayerNorm) and 5 (x); "
                          "000_0ccc5db2bedb29fc.txt, section 6.1",
                          Language::zh) ==
        "003_87eaca95f9b8aedb.txt 第 2.4 "
        "节（为什么FFN层用ReLU且维度先升后降——非线性能力的杠杆效应）、"
        "第 2.5 节（为什么用LayerNorm而不是BatchNorm——小批量训练的稳定性刚需）、"
        "第 5 节（精读后的实战检验用30行代码复现Encoder核心）；"
        "000_0ccc5db2bedb29fc.txt 第 6.1 节（BERT Encoder的完整流水线不只是QKV）");
  // A section or a file the table lacks: the source as written.
  CHECK(attn::source_text("003_87eaca95f9b8aedb.txt, section 9.9", Language::zh) ==
        "003_87eaca95f9b8aedb.txt, section 9.9");
  CHECK(attn::source_text("my notes, page 3", Language::zh) == "my notes, page 3");
  // Every embedded lesson's source is shown in Chinese.
  for (const attn::Lesson& l : attn::all_embedded_lessons())
    CHECK_MESSAGE(attn::source_text(l.source, Language::zh).find("section") == std::string::npos,
                  l.id);
}
