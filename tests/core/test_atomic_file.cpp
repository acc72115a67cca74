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
#include "core/folder_lock.hpp"

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
  attn::FileBatch batch(dir.path.string());
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
  attn::FileBatch refused(dir.path.string());
  fill(refused);
  const std::string message = refusal(refused);
  CHECK(message == fmt::format("2 file(s) would change: {}, {} (read-only, mode 0444); nothing "
                               "was written. add --force to replace them",
                               dir / "old.txt", dir / "locked.txt"));
  CHECK(tree(dir) == std::vector<std::string>{"locked.txt", "old.txt"});  // no folder "new"
  CHECK(attn::read_file(dir / "old.txt") == "old");

  attn::FileBatch forced(dir.path.string());
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
  attn::FileBatch batch(dir.path.string());
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
  SUBCASE("a dangling symbolic link as a folder below the root: refused as a link") {
    std::filesystem::create_symlink("/nonexistent-attn-folder", dir / "link");
    batch.add(dir / "link/x.txt", "x");
    expected = fmt::format(
        "{}: the folder {} is a symbolic link to /nonexistent-attn-folder, and attn-trace never "
        "writes through a link: remove the link (or write elsewhere) and run again; nothing was "
        "written",
        dir / "link/x.txt", dir / "link");
  }
  SUBCASE("a dangling symbolic link as the file") {
    std::filesystem::create_symlink("/nonexistent-attn-folder/x", dir / "dangling.txt");
    batch.add(dir / "dangling.txt", "x");
    expected = dir / "dangling.txt" +
               ": is a symbolic link to /nonexistent-attn-folder/x, and attn-trace never writes "
               "through a link: remove the link (or write elsewhere) and run again; nothing was "
               "written";
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
  attn::FileBatch batch(dir.path.string());
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
  attn::FileBatch batch(dir.path.string());
  batch.add(dir / "old.txt", "whole");
  const attn::CommitResult result = batch.commit(false, "");
  CHECK(result.stale_removed == std::vector<std::string>{dir / stale.c_str()});
  std::vector<std::string> expected = {".old.txt.tmp-draft", alive, other, "old.txt"};
  std::sort(expected.begin(), expected.end());
  CHECK(tree(dir) == expected);
}

TEST_CASE("FileBatch: never writes through a symbolic link below the root, replace or not") {
  const TempDir dir;
  const TempDir elsewhere;
  write(elsewhere / "victim.txt", "the victim");
  std::string target;
  std::string expected;
  SUBCASE("a link as the file, to a file elsewhere") {
    std::filesystem::create_symlink(elsewhere / "victim.txt", dir / "marks.csv");
    target = dir / "marks.csv";
    expected = fmt::format(
        "{}: is a symbolic link to {}, and attn-trace never writes through a link: remove the "
        "link (or write elsewhere) and run again; nothing was written",
        target, elsewhere / "victim.txt");
  }
  SUBCASE("a link as a folder below the root (a student's folder)") {
    std::filesystem::create_symlink(elsewhere.path, dir / "s2");
    target = dir / "s2/victim.txt";
    expected = fmt::format(
        "{}: the folder {} is a symbolic link to {}, and attn-trace never writes through a "
        "link: remove the link (or write elsewhere) and run again; nothing was written",
        target, dir / "s2", elsewhere.path.string());
  }
  for (const bool replace : {false, true}) {
    CAPTURE(replace);
    attn::FileBatch batch(dir.path.string());
    batch.add(dir / "fine.txt", "fine");
    batch.add(target, "new marks");
    CHECK(refusal(batch, replace) == expected);
    CHECK(attn::read_file(elsewhere / "victim.txt") == "the victim");
    CHECK(elsewhere.entries() == 1);
    CHECK(!std::filesystem::exists(dir / "fine.txt"));
  }
}

TEST_CASE("FileBatch: the root may be a link, a path that leads out of it is refused") {
  const TempDir dir;
  std::filesystem::create_directories(dir.path / "real");
  std::filesystem::create_symlink(dir.path / "real", dir / "classes");
  SUBCASE("the folder the user named is a link: written into the folder it leads to") {
    attn::FileBatch batch(dir / "classes");
    batch.add(dir / "classes/s1/feedback.md", "feedback");
    batch.commit(false, "");
    CHECK(attn::read_file(dir / "real/s1/feedback.md") == "feedback");
  }
  SUBCASE("a path with '..' that leaves the root") {
    attn::FileBatch batch(dir / "real");
    batch.add(dir / "real/s1/../../outside.txt", "x");
    CHECK(refusal(batch, true) ==
          fmt::format("{}: is outside the folder {} that this command writes; write inside it; "
                      "nothing was written",
                      dir / "real/s1/../../outside.txt", dir / "real"));
    CHECK(!std::filesystem::exists(dir / "outside.txt"));
  }
  SUBCASE("an absolute path elsewhere") {
    attn::FileBatch batch(dir / "real");
    batch.add("/tmp/attn-never-written.txt", "x");
    CHECK(refusal(batch, true).starts_with("/tmp/attn-never-written.txt: is outside the folder"));
    CHECK(!std::filesystem::exists("/tmp/attn-never-written.txt"));
  }
}

namespace {

// A process id that is gone.
pid_t gone_pid() {
  const pid_t child = ::fork();
  if (child == 0) ::_exit(0);
  REQUIRE(child > 0);
  REQUIRE(::waitpid(child, nullptr, 0) == child);
  return child;
}

// A class folder, and elsewhere a victim file with a temporary beside it as a
// process that is gone would have left it: what a crafted journal aims at.
struct PlantedVictim {
  TempDir dir;
  TempDir elsewhere;
  pid_t pid = gone_pid();
  PlantedVictim() {
    write(elsewhere / "victim.txt", "the victim");
    write(elsewhere / fmt::format(".victim.txt.tmp-{}", pid).c_str(), "planted");
  }
};

}  // namespace

TEST_CASE("finish_interrupted_commit: a journal whose process is gone is rolled forward") {
  const TempDir dir;
  const pid_t pid = gone_pid();
  // As a run killed after its first rename leaves the folder: a.txt renamed,
  // s1/b.txt and s1/c.txt still temporaries, d.txt's temporary gone too.
  std::filesystem::create_directories(dir.path / "s1");
  write(dir / "a.txt", "new a");
  write(dir / "s1/b.txt", "old b");
  write(dir / fmt::format("s1/.b.txt.tmp-{}", pid).c_str(), "new b");
  write(dir / fmt::format("s1/.c.txt.tmp-{}", pid).c_str(), "new c");
  write(dir / attn::kJournalName,
        fmt::format("attn-trace journal 1\npid {}\na.txt\ns1/b.txt\ns1/c.txt\nd.txt\nend\n", pid));
  const std::optional<attn::FinishedCommit> done =
      attn::finish_interrupted_commit(dir.path.string(), false);
  REQUIRE(done);
  CHECK(done->pid == pid);
  CHECK(done->journal == dir / attn::kJournalName);
  CHECK(done->renamed == std::vector<std::string>{dir / "s1/b.txt", dir / "s1/c.txt"});
  CHECK(done->in_place == 1);
  CHECK(done->lost == std::vector<std::string>{dir / "d.txt"});
  CHECK(attn::read_file(dir / "s1/b.txt") == "new b");
  CHECK(attn::read_file(dir / "s1/c.txt") == "new c");
  CHECK(tree(dir) == std::vector<std::string>{"a.txt", "s1", "s1/b.txt", "s1/c.txt"});
  CHECK(attn::describe(*done) ==
        fmt::format("attn-trace: completed the interrupted run (pid {}) that {} names: 2 file(s) "
                    "it had written put in place, 1 it had put in place itself; 1 file(s) it "
                    "named were neither written nor left to rename: {}",
                    pid, dir / attn::kJournalName, dir / "d.txt"));
  // Nothing left to do.
  CHECK(!attn::finish_interrupted_commit(dir.path.string(), false));
}

TEST_CASE("finish_interrupted_commit: a live run's journal is left alone unless the lock is held") {
  const TempDir dir;
  const std::string journal =
      fmt::format("attn-trace journal 1\npid {}\na.txt\nend\n", ::getppid());
  write(dir / attn::kJournalName, journal);
  write(dir / fmt::format(".a.txt.tmp-{}", ::getppid()).c_str(), "new a");
  CHECK(!attn::finish_interrupted_commit(dir.path.string(), false));
  CHECK(attn::read_file(dir / attn::kJournalName) == journal);
  // Holding the folder's lock, no other run can be writing it: the journal is stale.
  const std::optional<attn::FinishedCommit> done =
      attn::finish_interrupted_commit(dir.path.string(), true);
  REQUIRE(done);
  CHECK(attn::read_file(dir / "a.txt") == "new a");
  CHECK(tree(dir) == std::vector<std::string>{"a.txt"});
}

TEST_CASE("finish_interrupted_commit: a crafted journal moves nothing outside its folder") {
  const PlantedVictim planted;
  const TempDir& dir = planted.dir;
  const TempDir& elsewhere = planted.elsewhere;
  const pid_t pid = planted.pid;
  const std::string tail =
      "; it is not a journal attn-trace can complete: if no attn-trace run was interrupted in "
      "this folder, remove the file and run again; nothing was written";
  const std::string shown = dir / attn::kJournalName;
  std::string expected;
  SUBCASE("a path out of the folder") {
    write(shown, fmt::format("attn-trace journal 1\npid {}\n../{}/victim.txt\nend\n", pid,
                             elsewhere.path.filename().string()));
    expected = fmt::format("{}: line 3: not a plain path inside the folder: ../{}/victim.txt{}",
                           shown, elsewhere.path.filename().string(), tail);
  }
  SUBCASE("an absolute path") {
    write(shown,
          fmt::format("attn-trace journal 1\npid {}\n{}\nend\n", pid, elsewhere / "victim.txt"));
    expected = fmt::format("{}: line 3: not a plain path inside the folder: {}{}", shown,
                           elsewhere / "victim.txt", tail);
  }
  SUBCASE("the journal is a symbolic link") {
    write(elsewhere / "journal", fmt::format("attn-trace journal 1\npid {}\nend\n", pid));
    std::filesystem::create_symlink(elsewhere / "journal", shown);
    expected = fmt::format("{}: is a symbolic link to {}{}", shown, elsewhere / "journal", tail);
  }
  SUBCASE("cut short") {
    write(shown, fmt::format("attn-trace journal 1\npid {}\na.txt\n", pid));
    expected = shown + ": no 'end' line: it is cut short" + tail;
  }
  CHECK_THROWS_WITH_AS(attn::finish_interrupted_commit(dir.path.string(), true), expected.c_str(),
                       attn::InputError);
  CHECK(attn::read_file(elsewhere / "victim.txt") == "the victim");
  CHECK(std::filesystem::exists(std::filesystem::symlink_status(shown)));  // left for the user
}

TEST_CASE("finish_interrupted_commit: a folder that became a link is not followed") {
  const PlantedVictim planted;
  const TempDir& dir = planted.dir;
  const TempDir& elsewhere = planted.elsewhere;
  const pid_t pid = planted.pid;
  std::filesystem::create_symlink(elsewhere.path, dir / "s2");
  write(dir / attn::kJournalName,
        fmt::format("attn-trace journal 1\npid {}\ns2/victim.txt\nend\n", pid));
  const std::optional<attn::FinishedCommit> done =
      attn::finish_interrupted_commit(dir.path.string(), true);
  REQUIRE(done);
  CHECK(done->renamed.empty());
  CHECK(done->lost == std::vector<std::string>{dir / "s2/victim.txt"});
  CHECK(attn::read_file(elsewhere / "victim.txt") == "the victim");
  CHECK(elsewhere.entries() == 2);
}

TEST_CASE("FileBatch: a commit killed during its renames is completed by the next lock") {
  const TempDir dir;
  const auto fill = [&](attn::FileBatch& batch, const char* run) {
    for (const char* name : {"s1/lesson.toml", "s1/answers.toml", "s2/lesson.toml", "index.md"})
      batch.add(dir / name, fmt::format("{} of run {}", name, run));
  };
  {
    const attn::FolderLock lock(dir.path.string(), attn::FolderLock::Missing::create);
    attn::FileBatch batch(lock);
    fill(batch, "1");
    batch.commit(false, "");
  }
  const pid_t child = ::fork();
  if (child == 0) {
    ::setenv("ATTN_TRACE_TEST_KILL_AFTER_RENAMES", "2", 1);
    const attn::FolderLock lock(dir.path.string(), attn::FolderLock::Missing::create);
    attn::FileBatch batch(lock);
    fill(batch, "2");
    batch.commit(true, "");
    ::_exit(0);  // not reached: killed after its second rename
  }
  int status = 0;
  REQUIRE(::waitpid(child, &status, 0) == child);
  REQUIRE(WIFSIGNALED(status));
  CHECK(WTERMSIG(status) == SIGKILL);
  // Killed half way: two files of run 2, two of run 1, and the journal.
  CHECK(attn::read_file(dir / "s1/lesson.toml") == "s1/lesson.toml of run 2");
  CHECK(attn::read_file(dir / "s2/lesson.toml") == "s2/lesson.toml of run 1");
  CHECK(std::filesystem::exists(dir / attn::kJournalName));
  const attn::FolderLock next(dir.path.string(), attn::FolderLock::Missing::create);
  REQUIRE(next.finished());
  CHECK(next.finished()->pid == child);
  CHECK(next.finished()->renamed ==
        std::vector<std::string>{dir / "s2/lesson.toml", dir / "index.md"});
  CHECK(next.finished()->in_place == 2);
  for (const char* name : {"s1/lesson.toml", "s1/answers.toml", "s2/lesson.toml", "index.md"})
    CHECK(attn::read_file(dir / name) == fmt::format("{} of run 2", name));
  // The lock file (the killed run's, taken over) and nothing else beside the files.
  CHECK(tree(dir) == std::vector<std::string>{attn::kFolderLockName, "index.md", "s1",
                                              "s1/answers.toml", "s1/lesson.toml", "s2",
                                              "s2/lesson.toml"});
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
