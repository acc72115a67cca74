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
