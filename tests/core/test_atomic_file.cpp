// Atomic writes: the target holds the whole new content or stays as it was,
// no temporary file is left behind, and every failure names the path.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include <fmt/format.h>
#include <unistd.h>

#include "core/atomic_file.hpp"
#include "core/error.hpp"

namespace {

// A fresh folder under /tmp, removed with everything in it at the end of the test.
struct TempDir {
  std::filesystem::path path = std::filesystem::temp_directory_path() /
                               fmt::format("attn-atomic-{}-{}", ::getpid(), counter()++);
  TempDir() { std::filesystem::create_directories(path); }
  ~TempDir() { std::filesystem::remove_all(path); }
  std::string operator/(const char* name) const { return (path / name).string(); }
  std::size_t entries() const {
    std::size_t n = 0;
    for ([[maybe_unused]] const auto& e : std::filesystem::directory_iterator(path)) ++n;
    return n;
  }
  static int& counter() {
    static int n = 0;
    return n;
  }
};

}  // namespace

TEST_CASE("write_file_atomically: new files and replacements hold exactly the content") {
  const TempDir dir;
  const std::string path = dir / "out.txt";
  std::string binary = "line 1\nπ ≈ 3.14\n";
  binary += '\0';
  binary += "\xff after a NUL byte";
  attn::write_file_atomically(path, binary);
  CHECK(attn::read_file(path) == binary);
  CHECK(std::filesystem::file_size(path) == binary.size());

  // A shorter content replaces a longer file whole: nothing of the old tail remains.
  attn::write_file_atomically(path, "short");
  CHECK(attn::read_file(path) == "short");
  attn::write_file_atomically(path, "");
  CHECK(attn::read_file(path).empty());
  CHECK(dir.entries() == 1);  // no temporary file beside it
}

TEST_CASE("write_file_atomically: a failure leaves the old file whole and no temporary") {
  const TempDir dir;
  SUBCASE("the folder does not exist") {
    const std::string path = dir / "missing/out.txt";
    const std::string message = path + ": cannot write";
    CHECK_THROWS_WITH_AS(attn::write_file_atomically(path, "x"), doctest::Contains(message.c_str()),
                         attn::InputError);
    CHECK(dir.entries() == 0);
  }
  SUBCASE("the target is a folder: the rename fails, the folder and its file stay") {
    const std::string target = dir / "target";
    std::filesystem::create_directories(target + "/inside");
    std::ofstream(target + "/inside/keep.txt") << "kept";
    const std::string message = target + ": cannot replace the file";
    CHECK_THROWS_WITH_AS(attn::write_file_atomically(target, "new content"),
                         doctest::Contains(message.c_str()), attn::InputError);
    CHECK(std::filesystem::is_directory(target));
    CHECK(attn::read_file(target + "/inside/keep.txt") == "kept");
    CHECK(dir.entries() == 1);  // the temporary file was removed
  }
}

TEST_CASE("read_file: a folder or a missing file is an InputError naming the path") {
  const TempDir dir;
  const std::string folder = dir.path.string();
  const std::string folder_message = folder + ": is a folder, not a file";
  CHECK_THROWS_WITH_AS(attn::read_file(folder), folder_message.c_str(), attn::InputError);
  const std::string missing = dir / "nope.toml";
  const std::string missing_message = missing + ": cannot open (no such file); check the path";
  CHECK_THROWS_WITH_AS(attn::read_file(missing), missing_message.c_str(), attn::InputError);
}
