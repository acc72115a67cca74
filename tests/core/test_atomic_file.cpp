// All-or-nothing writes: every target holds the whole new content or all stay
// as they were, no temporary file is left behind, and every failure names the path.
#include <doctest/doctest.h>

#include <fmt/format.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

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
  SUBCASE("a missing folder is created") {
    const std::string path = dir / "missing/out.txt";
    attn::write_file_atomically(path, "x");
    CHECK(attn::read_file(path) == "x");
  }
  SUBCASE("the target is a folder: refused, the folder and its file stay") {
    const std::string target = dir / "target";
    std::filesystem::create_directories(target + "/inside");
    std::ofstream(target + "/inside/keep.txt") << "kept";
    const std::string message = target + ": is a folder; a file cannot replace it";
    CHECK_THROWS_WITH_AS(attn::write_file_atomically(target, "new content"),
                         doctest::Contains(message.c_str()), attn::InputError);
    CHECK(std::filesystem::is_directory(target));
    CHECK(attn::read_file(target + "/inside/keep.txt") == "kept");
    CHECK(dir.entries() == 1);  // no temporary file
  }
}

namespace {

// Every name in `dir` and below, relative to it, sorted.
std::vector<std::string> tree(const TempDir& dir) {
  std::vector<std::string> out;
  for (const auto& e : std::filesystem::recursive_directory_iterator(dir.path))
    out.push_back(std::filesystem::relative(e.path(), dir.path).string());
  std::sort(out.begin(), out.end());
  return out;
}

// The message of the InputError `commit` throws ("" when it does not throw).
std::string refusal(attn::FileBatch& batch, bool replace = false) {
  try {
    batch.commit(replace, "add --force to replace them");
  } catch (const attn::InputError& e) {
    return e.what();
  }
  return "";
}

std::vector<attn::FileChange> changes(const attn::CommitResult& result) {
  std::vector<attn::FileChange> out;
  for (const attn::CommittedFile& f : result.files) out.push_back(f.change);
  return out;
}

void write(const std::string& path, const std::string& content) {
  std::ofstream(path, std::ios::binary) << content;
}

}  // namespace

TEST_CASE("FileBatch: creates folders and files, leaves an identical file untouched") {
  using attn::FileChange;
  const TempDir dir;
  write(dir / "same.txt", "same");
  const auto inode = [&](const char* name) {
    struct stat st {};
    REQUIRE(::stat((dir / name).c_str(), &st) == 0);
    return st.st_ino;
  };
  const ino_t before = inode("same.txt");
  attn::FileBatch batch;
  batch.add(dir / "a/b/deep.txt", "deep");
  batch.add(dir / "same.txt", "same");
  batch.add(dir / "top.txt", "top");
  const attn::CommitResult result = batch.commit(false, "");
  CHECK(changes(result) ==
        std::vector{FileChange::created, FileChange::unchanged, FileChange::created});
  CHECK(result.files[0].path == dir / "a/b/deep.txt");
  CHECK(attn::read_file(dir / "a/b/deep.txt") == "deep");
  CHECK(attn::read_file(dir / "top.txt") == "top");
  CHECK(inode("same.txt") == before);  // not rewritten
  CHECK(tree(dir) == std::vector<std::string>{"a", "a/b", "a/b/deep.txt", "same.txt", "top.txt"});
}

TEST_CASE("FileBatch: a file that would change needs replace, and keeps its mode and owner") {
  using attn::FileChange;
  const TempDir dir;
  write(dir / "old.txt", "old");
  write(dir / "locked.txt", "locked");
  std::filesystem::permissions(dir / "locked.txt", std::filesystem::perms::owner_read |
                                                       std::filesystem::perms::group_read |
                                                       std::filesystem::perms::others_read);
  // Root can give the file to another owner, and the replacement keeps it.
  const bool root = ::geteuid() == 0;
  if (root) REQUIRE(::chown((dir / "locked.txt").c_str(), 12345, 12345) == 0);
  const auto fill = [&](attn::FileBatch& batch) {
    batch.add(dir / "new/first.txt", "first");
    batch.add(dir / "old.txt", "new");
    batch.add(dir / "locked.txt", "unlocked?");
  };
  attn::FileBatch refused;
  fill(refused);
  const std::string message = refusal(refused);
  CHECK(message == fmt::format("2 file(s) would change: {}, {} (read-only, mode 0444); nothing "
                               "was written. add --force to replace them",
                               dir / "old.txt", dir / "locked.txt"));
  CHECK(tree(dir) == std::vector<std::string>{"locked.txt", "old.txt"});  // no folder "new"
  CHECK(attn::read_file(dir / "old.txt") == "old");

  attn::FileBatch forced;
  fill(forced);
  CHECK(changes(forced.commit(true, "")) ==
        std::vector{FileChange::created, FileChange::replaced, FileChange::replaced});
  CHECK(attn::read_file(dir / "old.txt") == "new");
  CHECK(attn::read_file(dir / "locked.txt") == "unlocked?");
  struct stat st {};
  REQUIRE(::stat((dir / "locked.txt").c_str(), &st) == 0);
  CHECK((st.st_mode & 07777) == 0444);
  if (root) CHECK((st.st_uid == 12345 && st.st_gid == 12345));
  CHECK(tree(dir) == std::vector<std::string>{"locked.txt", "new", "new/first.txt", "old.txt"});
}

TEST_CASE("FileBatch: every target is checked before anything is written") {
  const TempDir dir;
  write(dir / "keep.txt", "keep");
  attn::FileBatch batch;
  batch.add(dir / "fine.txt", "fine");
  batch.add(dir / "made/also-fine.txt", "fine");
  std::string expected;
  SUBCASE("a folder where a file goes") {
    std::filesystem::create_directories(dir / "folder/inside");
    batch.add(dir / "folder", "x");
    expected = dir / "folder" +
               ": is a folder; a file cannot replace it (move the folder away or write "
               "elsewhere); nothing was written";
  }
  SUBCASE("a file where a folder goes") {
    batch.add(dir / "keep.txt/x.txt", "x");
    expected = fmt::format("{}: {} is a file, not a folder; write elsewhere; nothing was written",
                           dir / "keep.txt/x.txt", dir / "keep.txt");
  }
  SUBCASE("a dangling symbolic link as the folder: named as such, not 'File exists'") {
    std::filesystem::create_symlink("/nonexistent-attn-folder", dir / "link");
    batch.add(dir / "link/x.txt", "x");
    expected = fmt::format(
        "{}: the folder {} is a symbolic link to /nonexistent-attn-folder, which does not "
        "exist; create that folder, remove the link, or write elsewhere; nothing was written",
        dir / "link/x.txt", dir / "link");
  }
  SUBCASE("a dangling symbolic link as the file") {
    std::filesystem::create_symlink("/nonexistent-attn-folder/x", dir / "dangling.txt");
    batch.add(dir / "dangling.txt", "x");
    expected = dir / "dangling.txt" +
               ": is a symbolic link to /nonexistent-attn-folder/x, which does not exist; "
               "remove the link or write elsewhere; nothing was written";
  }
  SUBCASE("two entries with one target, however the path is written") {
    batch.add(dir / "made/twice.txt", "1", "a.toml");
    batch.add(dir / "made/../made/./twice.txt", "2", "b.toml");
    expected = dir / "made/../made/./twice.txt" +
               ": two files would be written here, from a.toml and from b.toml; nothing was "
               "written";
  }
  SUBCASE("a file that is also another file's folder") {
    batch.add(dir / "both", "x");
    batch.add(dir / "both/inner.txt", "y");
    expected = fmt::format("{}: would be both a file and the folder of {}; nothing was written",
                           dir / "both", dir / "both/inner.txt");
  }
  CHECK(refusal(batch, true) == expected);
  CHECK(!std::filesystem::exists(dir / "fine.txt"));
  CHECK(!std::filesystem::exists(dir / "made"));
  CHECK(attn::read_file(dir / "keep.txt") == "keep");
}

TEST_CASE("FileBatch: a write that fails removes its temporaries and the folders it made") {
  const TempDir dir;
  attn::FileBatch batch;
  batch.add(dir / "made/first.txt", "first");
  // A name of 250 bytes is allowed, but its temporary `.NAME.tmp-PID` is too long.
  batch.add(dir / ("made/" + std::string(250, 'n')).c_str(), "second");
  const std::string message = refusal(batch, true);
  INFO(message);
  CHECK(message.find("cannot write (File name too long)") != std::string::npos);
  CHECK(message.ends_with("; nothing was written"));
  CHECK(tree(dir).empty());  // neither the temporary of first.txt nor the folder "made"
}

TEST_CASE("FileBatch: stale temporaries of its files, of processes that are gone, are removed") {
  const TempDir dir;
  const pid_t child = ::fork();
  if (child == 0) ::_exit(0);
  REQUIRE(child > 0);
  REQUIRE(::waitpid(child, nullptr, 0) == child);  // a process id that is gone
  const std::string stale = fmt::format(".old.txt.tmp-{}", child);
  const std::string alive = fmt::format(".old.txt.tmp-{}", ::getppid());
  write(dir / stale.c_str(), "half a file");
  write(dir / alive.c_str(), "being written");
  // Not of a file this batch writes: left alone, whatever the process.
  const std::string other = fmt::format(".other.txt.tmp-{}", child);
  write(dir / other.c_str(), "another program's");
  write(dir / ".old.txt.tmp-draft", "not a process id");
  attn::FileBatch batch;
  batch.add(dir / "old.txt", "whole");
  const attn::CommitResult result = batch.commit(false, "");
  CHECK(result.stale_removed == std::vector<std::string>{dir / stale.c_str()});
  std::vector<std::string> expected = {".old.txt.tmp-draft", alive, other, "old.txt"};
  std::sort(expected.begin(), expected.end());
  CHECK(tree(dir) == expected);
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
