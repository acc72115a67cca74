// One writer per folder: a second lock on a held folder is refused at once,
// naming the process that holds it; a lock leaves the folder as it found it.
#include <doctest/doctest.h>

#include <fmt/format.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "core/error.hpp"
#include "core/folder_lock.hpp"

namespace {

std::filesystem::path fresh_folder(const char* what) {
  static int counter = 0;
  return std::filesystem::temp_directory_path() /
         fmt::format("attn-lock-{}-{}-{}", ::getpid(), what, counter++);
}

}  // namespace

TEST_CASE("FolderLock: a second lock on a held folder is refused, naming the holder") {
  const std::filesystem::path dir = fresh_folder("held");
  std::filesystem::create_directories(dir);
  {
    const attn::FolderLock first(dir.string(), attn::FolderLock::Missing::skip);
    CHECK(first.held());
    std::ifstream lock_file(dir / attn::kFolderLockName);
    std::string pid;
    std::getline(lock_file, pid);
    CHECK(pid == std::to_string(::getpid()));
    const std::string message = fmt::format(
        "another attn-trace run (pid {}) is writing {}; wait for it to finish, then run again; "
        "nothing was written",
        ::getpid(), dir.string());
    CHECK_THROWS_WITH_AS(attn::FolderLock(dir.string(), attn::FolderLock::Missing::skip),
                         message.c_str(), attn::InputError);
    CHECK(std::filesystem::exists(dir / attn::kFolderLockName));  // the first still holds it
  }
  // Released: the lock file is gone and the folder can be locked again.
  CHECK(std::filesystem::is_empty(dir));
  { const attn::FolderLock again(dir.string(), attn::FolderLock::Missing::skip); }
  std::filesystem::remove_all(dir);
}

TEST_CASE("FolderLock: a missing folder is made and removed again when nothing was written") {
  const std::filesystem::path dir = fresh_folder("missing");
  SUBCASE("skip: no folder, no lock") {
    const attn::FolderLock lock((dir / "class").string(), attn::FolderLock::Missing::skip);
    CHECK(!lock.held());
    CHECK(!std::filesystem::exists(dir));
  }
  SUBCASE("create: made for the run, removed when it stays empty") {
    {
      const attn::FolderLock lock((dir / "out/new").string(), attn::FolderLock::Missing::create);
      CHECK(lock.held());
      CHECK(std::filesystem::exists(dir / "out/new" / attn::kFolderLockName));
    }
    CHECK(!std::filesystem::exists(dir));
  }
  SUBCASE("create: kept when the run wrote into it") {
    {
      const attn::FolderLock lock((dir / "out").string(), attn::FolderLock::Missing::create);
      std::ofstream(dir / "out/index.md") << "written";
    }
    CHECK(std::filesystem::exists(dir / "out/index.md"));
    CHECK(!std::filesystem::exists(dir / "out" / attn::kFolderLockName));
  }
  std::filesystem::remove_all(dir);
}

TEST_CASE("FolderLock: a lock file that is a symbolic link is refused, never followed") {
  const std::filesystem::path dir = fresh_folder("link");
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "victim.txt") << "the victim";
  std::filesystem::create_symlink(dir / "victim.txt", dir / attn::kFolderLockName);
  const std::string message = fmt::format(
      "{}/{}: is a symbolic link, and attn-trace never writes through a link: remove it and run "
      "again; nothing was written",
      dir.string(), attn::kFolderLockName);
  CHECK_THROWS_WITH_AS(attn::FolderLock(dir.string(), attn::FolderLock::Missing::skip),
                       message.c_str(), attn::InputError);
  std::ifstream victim(dir / "victim.txt");
  std::string text;
  std::getline(victim, text);
  CHECK(text == "the victim");
  CHECK(std::filesystem::is_symlink(dir / attn::kFolderLockName));
  std::filesystem::remove_all(dir);
}
