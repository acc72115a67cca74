// All-or-nothing batches of files (check, temporary files, journal, renames),
// never through a symbolic link below the root, and whole-file reads.
#include "core/atomic_file.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <limits.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <utility>

#include "core/error.hpp"
#include "core/folder_lock.hpp"
#include "core/i18n.hpp"
#include "core/limits.hpp"
#include "core/read_input.hpp"

namespace attn {

namespace {

namespace fs = std::filesystem;

// A file descriptor, closed when it goes.
class Fd {
 public:
  Fd() = default;
  explicit Fd(int fd) : fd_(fd) {}
  Fd(Fd&& other) noexcept : fd_(std::exchange(other.fd_, -1)) {}
  Fd& operator=(Fd&& other) noexcept {
    if (this != &other) {
      reset();
      fd_ = std::exchange(other.fd_, -1);
    }
    return *this;
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  ~Fd() { reset(); }
  int get() const { return fd_; }
  explicit operator bool() const { return fd_ >= 0; }
  void reset() {
    if (fd_ >= 0) close(fd_);
    fd_ = -1;
  }

 private:
  int fd_ = -1;
};

// A journal is at most this long (a commit of 1000 students' files is well under 1 MB).
constexpr std::size_t kMaxJournalBytes = std::size_t{64} << 20;

// A folder opened below another: never through a symbolic link.
constexpr int kFolderFlags = O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC;

// The temporary file's name of the file `name` for process `pid`: `.NAME.tmp-PID`.
std::string temporary_name(const std::string& name, long pid) {
  return fmt::format(".{}.tmp-{}", name, pid);
}

// The file and the process id of a temporary file's name (`.FILE.tmp-PID`,
// as temporary_name names them), if it is one.
std::optional<std::pair<std::string, pid_t>> temporary_parts(const std::string& name) {
  const std::size_t at = name.rfind(".tmp-");
  if (name.size() < 2 || name.front() != '.' || at == std::string::npos || at < 2) return {};
  const char* first = name.data() + at + 5;
  const char* last = name.data() + name.size();
  pid_t pid = 0;
  const auto [end, error] = std::from_chars(first, last, pid);
  if (first == last || error != std::errc() || end != last || pid <= 0) return {};
  return std::pair(name.substr(1, at - 1), pid);
}

bool process_is_gone(long pid) {
  return kill(static_cast<pid_t>(pid), 0) != 0 && errno == ESRCH;
}

// `path` as lstat sees it: nullopt when nothing is there.
std::optional<struct stat> link_status(const fs::path& path) {
  struct stat st {};
  if (lstat(path.c_str(), &st) != 0) return std::nullopt;
  return st;
}

// `name` in the folder `dir` as lstat sees it: nullopt when nothing is there
// (errno then says why).
std::optional<struct stat> status_at(int dir, const std::string& name) {
  struct stat st {};
  if (fstatat(dir, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) return std::nullopt;
  return st;
}

// A symbolic link's text, for messages.
std::string link_text(const fs::path& link) {
  std::error_code ec;
  const fs::path to = fs::read_symlink(link, ec);
  return ec ? std::string("?") : to.string();
}

std::string link_text_at(int dir, const std::string& name) {
  char text[PATH_MAX];
  const ssize_t n = readlinkat(dir, name.c_str(), text, sizeof text);
  return n < 0 ? std::string("?") : std::string(text, static_cast<std::size_t>(n));
}

// `relative` (a path below `root`) as the user would write it.
fs::path under(const fs::path& root, const fs::path& relative) {
  return relative.empty() ? root : root / relative;
}

[[noreturn]] void refuse(const std::string& reason) {
  throw InputError(tr_format("{}; nothing was written", reason));
}

[[noreturn]] void refuse_link(std::string_view shown, const fs::path& link, std::string_view to) {
  if (shown == link.string())
    refuse(
        tr_format("{}: is a symbolic link to {}, and attn-trace never writes through a link: "
                  "remove the link (or write elsewhere) and run again",
                  shown, to));
  refuse(
      tr_format("{}: the folder {} is a symbolic link to {}, and attn-trace never writes "
                "through a link: remove the link (or write elsewhere) and run again",
                shown, link.string(), to));
}

// The folders of `folder` (a path the user gave, links followed) that do not
// exist, outermost first; refused when its nearest existing ancestor is a
// dangling link, a file or not writable. `shown` names the file for messages.
std::vector<fs::path> missing_folders(const fs::path& start, std::string_view shown) {
  std::vector<fs::path> missing;
  fs::path folder = start;
  for (;;) {
    const std::optional<struct stat> st = link_status(folder);
    if (st && S_ISLNK(st->st_mode)) {
      struct stat resolved {};
      if (stat(folder.c_str(), &resolved) != 0)
        refuse(
            tr_format("{}: the folder {} is a symbolic link to {}, which does not exist; create "
                      "that folder, remove the link, or write elsewhere",
                      shown, folder.string(), link_text(folder)));
      if (!S_ISDIR(resolved.st_mode))
        refuse(tr_format("{}: {} is a link to a file, not a folder; write elsewhere", shown,
                         folder.string()));
      break;
    }
    if (st) {
      if (!S_ISDIR(st->st_mode))
        refuse(
            tr_format("{}: {} is a file, not a folder; write elsewhere", shown, folder.string()));
      break;
    }
    missing.push_back(folder);
    const fs::path up = folder.has_parent_path() ? folder.parent_path() : fs::path(".");
    if (up == folder)
      refuse(tr_format("{}: the folder {} cannot be reached", shown, folder.string()));
    folder = up;
  }
  if (access(folder.c_str(), W_OK | X_OK) != 0)
    refuse(tr_format(missing.empty()
                         ? N_("{}: cannot write into the folder {} ({}); choose a folder "
                              "you can write to")
                         : N_("{}: cannot create a folder in the folder {} ({}); choose a "
                              "folder you can write to"),
                     shown, folder.string(), error_text(errno)));
  return {missing.rbegin(), missing.rend()};
}

// The root of a batch: the folder the user named, its missing folders, and
// (once it exists) the folder open.
struct Root {
  fs::path path;
  std::vector<fs::path> missing;  // the root and the folders above it to make, outermost first
  Fd fd;
};

Root open_root(const std::string& root) {
  Root out;
  out.path = root.empty() ? fs::path(".") : fs::path(root);
  out.missing = missing_folders(out.path, out.path.string());
  if (out.missing.empty()) {
    out.fd = Fd(open(out.path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (!out.fd)
      refuse(tr_format("{}: cannot open the folder ({})", out.path.string(), error_text(errno)));
  }
  return out;
}

// A folder below the root, as far as it exists: the deepest existing one
// open, and how many of its parts exist.
struct Reached {
  Fd fd;
  std::size_t existing = 0;
};

// Walks `folder` (relative to the root open as `root_fd`) part by part: each
// must be a real folder, never a symbolic link; stops at the first missing one.
Reached reach_folder(int root_fd, const fs::path& root, const fs::path& folder,
                     std::string_view shown) {
  Reached reached{Fd(openat(root_fd, ".", kFolderFlags)), 0};
  if (!reached.fd)
    refuse(
        tr_format("{}: cannot open the folder {} ({})", shown, root.string(), error_text(errno)));
  fs::path at = root;
  for (const fs::path& part : folder) {
    const std::string name = part.string();
    at /= part;
    const std::optional<struct stat> st = status_at(reached.fd.get(), name);
    if (!st && errno == ENOENT) break;
    if (!st)
      refuse(
          tr_format("{}: cannot reach the folder {} ({})", shown, at.string(), error_text(errno)));
    if (S_ISLNK(st->st_mode)) refuse_link(shown, at, link_text_at(reached.fd.get(), name));
    if (!S_ISDIR(st->st_mode))
      refuse(tr_format("{}: {} is a file, not a folder; write elsewhere", shown, at.string()));
    Fd next(openat(reached.fd.get(), name.c_str(), kFolderFlags));
    if (!next)
      refuse(
          tr_format("{}: cannot open the folder {} ({})", shown, at.string(), error_text(errno)));
    reached.fd = std::move(next);
    ++reached.existing;
  }
  return reached;
}

// `folder` below the root open, its missing parts made (each one added to
// `made`, relative to the root, outermost first); none a symbolic link.
Fd open_folder(int root_fd, const fs::path& root, const fs::path& folder, std::string_view shown,
               std::vector<fs::path>& made) {
  Reached reached = reach_folder(root_fd, root, folder, shown);
  fs::path relative;
  std::size_t index = 0;
  for (const fs::path& part : folder) {
    relative /= part;
    if (index++ < reached.existing) continue;
    const std::string name = part.string();
    if (mkdirat(reached.fd.get(), name.c_str(), 0777) == 0)
      made.push_back(relative);
    else if (errno != EEXIST)
      throw InputError(tr_format("{}: cannot create the folder {} ({})", shown,
                                 under(root, relative).string(), error_text(errno)));
    Fd next(openat(reached.fd.get(), name.c_str(), kFolderFlags));
    if (!next)
      throw InputError(tr_format("{}: cannot open the folder {} ({})", shown,
                                 under(root, relative).string(), error_text(errno)));
    reached.fd = std::move(next);
  }
  return std::move(reached.fd);
}

// The last folder opened below the root, kept for the next file in it
// (a batch lists the files of one folder together).
class FolderCache {
 public:
  FolderCache(int root_fd, const fs::path& root) : root_fd_(root_fd), root_(root) {}
  int get(const fs::path& folder, std::string_view shown, std::vector<fs::path>& made) {
    if (!fd_ || folder != folder_) {
      fd_.reset();
      fd_ = open_folder(root_fd_, root_, folder, shown, made);
      folder_ = folder;
    }
    return fd_.get();
  }

 private:
  int root_fd_;
  fs::path root_;
  fs::path folder_;
  Fd fd_;
};

// A file's whole content, read from the folder `dir` without following a link.
std::optional<std::string> read_at(int dir, const std::string& name, std::size_t limit) {
  const Fd fd(openat(dir, name.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC));
  if (!fd) return std::nullopt;
  std::string text;
  char buffer[65536];
  for (;;) {
    const ssize_t n = read(fd.get(), buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return std::nullopt;
    if (n == 0) return text;
    text.append(buffer, static_cast<std::size_t>(n));
    if (text.size() > limit) return std::nullopt;
  }
}

// One file to write, as the checks found it.
struct Plan {
  std::string_view shown;          // the path as given, for messages
  std::string_view content;        // what to write
  std::string_view source;         // where it comes from, for the error when two share a target
  fs::path relative;               // below the root, lexically normal: no link below the root,
                                   // so this is where the file is
  std::optional<struct stat> old;  // the file it replaces: its mode and owner are kept
  FileChange change = FileChange::created;
  fs::path folder() const { return relative.parent_path(); }
  std::string name() const { return relative.filename().string(); }
};

// `path` relative to `root`, "." and ".." resolved as written (exact: no
// folder below the root may be a link); refused when it leads out of the
// root, is the root itself, or is the name of the root's lock or journal.
fs::path relative_to_root(const fs::path& root, const std::string& path) {
  if (!fs::path(path).has_filename())
    refuse(tr_format("{}: a file path is needed, not a folder path", path));
  const fs::path relative = fs::path(path).lexically_relative(root).lexically_normal();
  if (relative.empty() || *relative.begin() == ".." || relative.is_absolute())
    refuse(tr_format("{}: is outside the folder {} that this command writes; write inside it", path,
                     root.string()));
  if (relative == ".")
    refuse(
        tr_format("{}: is a folder; a file cannot replace it (move the folder away or write "
                  "elsewhere)",
                  path));
  if (relative == kJournalName || relative == kFolderLockName)
    refuse(
        tr_format("{}: this name is attn-trace's own (a folder's journal or lock); write "
                  "elsewhere",
                  path));
  return relative;
}

// What is at the target (in the folder `dir`): a link, a folder or an odd
// file are refused; an existing file's content decides created / replaced /
// unchanged.
void check_target(int dir, Plan& plan, std::vector<std::string>& would_change, bool replace) {
  const std::string name = plan.name();
  const std::optional<struct stat> st = status_at(dir, name);
  if (!st && errno != ENOENT)
    refuse(tr_format("{}: cannot reach the file ({})", plan.shown, error_text(errno)));
  if (!st) return;
  if (S_ISLNK(st->st_mode)) refuse_link(plan.shown, fs::path(plan.shown), link_text_at(dir, name));
  if (S_ISDIR(st->st_mode))
    refuse(
        tr_format("{}: is a folder; a file cannot replace it (move the folder away or write "
                  "elsewhere)",
                  plan.shown));
  if (!S_ISREG(st->st_mode))
    refuse(tr_format("{}: is not a regular file (a pipe, socket or device); write elsewhere",
                     plan.shown));
  if (static_cast<std::size_t>(st->st_size) == plan.content.size()) {
    const std::optional<std::string> old = read_at(dir, name, plan.content.size());
    if (!old) refuse(tr_format("{}: cannot read the file ({})", plan.shown, error_text(errno)));
    if (*old == plan.content) {
      plan.change = FileChange::unchanged;
      return;
    }
  }
  plan.change = FileChange::replaced;
  plan.old = st;
  const bool read_only = (st->st_mode & 0222) == 0;
  if (!replace)
    would_change.push_back(
        read_only ? tr_format("{} (read-only, mode {:04o})", plan.shown, st->st_mode & 07777)
                  : std::string(plan.shown));
}

// Where `path` leads and what is there. Folders below the root are walked
// without following links; the deepest that exists must be writable.
Plan plan_file(const Root& root, const std::string& path, const std::string& content,
               const std::string& source, std::vector<std::string>& would_change, bool replace) {
  Plan plan;
  plan.shown = path;
  plan.content = content;
  plan.source = source;
  plan.relative = relative_to_root(root.path, path);
  if (!root.fd) return plan;  // the root is made: so is everything in it
  const Reached reached = reach_folder(root.fd.get(), root.path, plan.folder(), path);
  const std::size_t parts =
      static_cast<std::size_t>(std::distance(plan.folder().begin(), plan.folder().end()));
  fs::path deepest = root.path;
  std::size_t index = 0;
  for (const fs::path& part : plan.folder())
    if (index++ < reached.existing) deepest /= part;
  if (faccessat(reached.fd.get(), ".", W_OK | X_OK, 0) != 0)
    refuse(tr_format(reached.existing == parts ? N_("{}: cannot write into the folder {} ({}); "
                                                    "choose a folder you can write to")
                                               : N_("{}: cannot create a folder in the folder {} "
                                                    "({}); choose a folder you can write to"),
                     path, deepest.string(), error_text(errno)));
  if (reached.existing == parts) check_target(reached.fd.get(), plan, would_change, replace);
  return plan;
}

// The target of the last of `plans` entered in `by_key` (its path below the
// root -> plan); refused when an earlier plan has it: two entries would write
// one file.
void claim_target(const std::vector<Plan>& plans, std::map<std::string, std::size_t>& by_key) {
  const Plan& plan = plans.back();
  const auto [other, added] = by_key.emplace(plan.relative.string(), plans.size() - 1);
  if (added) return;
  const Plan& first = plans[other->second];
  refuse(tr_format("{}: two files would be written here{}", plan.shown,
                   first.source.empty() && plan.source.empty()
                       ? std::string()
                       : tr_format(", from {} and from {}", first.source, plan.source)));
}

// Refused when one target (keys of `by_key`, as claim_target enters them) is
// a folder above another.
void refuse_file_and_folder(const std::vector<Plan>& plans,
                            const std::map<std::string, std::size_t>& by_key) {
  for (const auto& [key, i] : by_key)
    for (fs::path up = fs::path(key).parent_path(); !up.empty(); up = up.parent_path())
      if (const auto it = by_key.find(up.string()); it != by_key.end())
        refuse(tr_format("{}: would be both a file and the folder of {}", plans[it->second].shown,
                         plans[i].shown));
}

// Writes `content` to a new temporary file `name` in the folder `dir`, with
// the mode and owner of `old` when it replaces a file; throws InputError
// naming `shown` on any failure, leaving no temporary file.
void write_temporary(int dir, const std::string& name, std::string_view shown,
                     std::string_view content, const std::optional<struct stat>& old) {
  constexpr int kFlags = O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC;
  int fd = openat(dir, name.c_str(), kFlags, 0666);
  // One left by an earlier process with this process id is stale.
  if (fd < 0 && errno == EEXIST && unlinkat(dir, name.c_str(), 0) == 0)
    fd = openat(dir, name.c_str(), kFlags, 0666);
  if (fd < 0)
    throw InputError(tr_format("{}: cannot write ({}); check that the folder is writable", shown,
                               error_text(errno)));
  int error = 0;
  for (std::size_t done = 0; done < content.size() && !error;) {
    const ssize_t n = write(fd, content.data() + done, content.size() - done);
    if (n < 0 && errno != EINTR) error = errno;
    if (n > 0) done += static_cast<std::size_t>(n);
  }
  // Only root may give a file to another owner: anyone else writes it as their
  // own, as an editor would (EPERM is that case, not a failure).
  if (!error && old && (old->st_uid != geteuid() || old->st_gid != getegid()) &&
      fchown(fd, old->st_uid, old->st_gid) != 0 && errno != EPERM)
    error = errno;
  // After the owner: a change of owner may clear the set-user-id bits.
  if (!error && old && fchmod(fd, old->st_mode & 07777) != 0) error = errno;
  if (!error && fsync(fd) != 0) error = errno;
  if (close(fd) != 0 && !error) error = errno;
  if (error) {
    unlinkat(dir, name.c_str(), 0);
    throw InputError(tr_format("{}: write failed ({})", shown, error_text(error)));
  }
}

// What the writing of the temporaries made: to be renamed, or undone.
struct Written {
  std::vector<fs::path> root_made;   // the root and folders above it, outermost first
  std::vector<fs::path> made;        // folders below the root, outermost first
  std::vector<const Plan*> pending;  // plans whose temporary is written, in order
};

// Removes `name` in `folder` below the root (unlinkat `flags`), reached
// without following a link; quietly, for an undo.
void remove_below(const Root& root, const fs::path& folder, const std::string& name,
                  int flags) noexcept {
  try {
    const Reached reached = reach_folder(root.fd.get(), root.path, folder, root.path.string());
    if (reached.existing == static_cast<std::size_t>(std::distance(folder.begin(), folder.end())))
      unlinkat(reached.fd.get(), name.c_str(), flags);
  } catch (...) {
  }
}

// Removes the temporaries and the folders `written` made.
void undo(const Root& root, const Written& written) noexcept {
  for (const Plan* plan : written.pending)
    remove_below(root, plan->folder(), temporary_name(plan->name(), getpid()), 0);
  for (auto it = written.made.rbegin(); it != written.made.rend(); ++it)
    remove_below(root, it->parent_path(), it->filename().string(), AT_REMOVEDIR);
  for (auto it = written.root_made.rbegin(); it != written.root_made.rend(); ++it)
    rmdir(it->c_str());
}

// Makes the root when it is missing, and opens it.
void make_root(Root& root, Written& written) {
  for (const fs::path& folder : root.missing) {
    if (mkdir(folder.c_str(), 0777) == 0)
      written.root_made.push_back(folder);
    else if (errno != EEXIST)
      throw InputError(
          tr_format("{}: cannot create the folder ({})", folder.string(), error_text(errno)));
  }
  root.fd = Fd(open(root.path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!root.fd)
    throw InputError(
        tr_format("{}: cannot open the folder ({})", root.path.string(), error_text(errno)));
}

// The missing folders, then each content that changes in a temporary file
// beside its target, in the order of `plans`. Any failure removes the
// temporaries and the folders made so far, and is refused. (Each temporary is
// synced; its folder is not: on ext4, XFS and btrfs the fsync of a new file
// makes its name durable too, and a sync of every student's folder cost a
// third more time than the whole mark of a class.)
Written write_temporaries(Root& root, const std::vector<Plan>& plans) {
  Written written;
  try {
    if (!root.fd) make_root(root, written);
    FolderCache folders(root.fd.get(), root.path);
    for (const Plan& plan : plans) {
      if (plan.change == FileChange::unchanged) continue;
      const int dir = folders.get(plan.folder(), plan.shown, written.made);
      write_temporary(dir, temporary_name(plan.name(), getpid()), plan.shown, plan.content,
                      plan.old);
      written.pending.push_back(&plan);
    }
  } catch (const InputError& e) {
    undo(root, written);
    refuse(e.what());
  } catch (...) {
    undo(root, written);
    throw;
  }
  return written;
}

// A journal's text: its process and the targets (paths below the root), one a
// line, a backslash and a line end escaped.
std::string journal_text(const std::vector<const Plan*>& pending) {
  std::string out = fmt::format("attn-trace journal 1\npid {}\n", getpid());
  for (const Plan* plan : pending) {
    for (const char c : plan->relative.string())
      out += c == '\\' ? std::string("\\\\") : c == '\n' ? std::string("\\n") : std::string(1, c);
    out += '\n';
  }
  return out + "end\n";
}

// Writes the journal of `written` into the root, whole and synced, before the
// first rename.
void write_journal(const Root& root, const Written& written) {
  const std::string tmp = temporary_name(kJournalName, getpid());
  const std::string shown = (root.path / kJournalName).string();
  write_temporary(root.fd.get(), tmp, shown, journal_text(written.pending), std::nullopt);
  if (renameat(root.fd.get(), tmp.c_str(), root.fd.get(), kJournalName) != 0 ||
      fsync(root.fd.get()) != 0) {
    const int error = errno;
    unlinkat(root.fd.get(), tmp.c_str(), 0);
    throw InputError(tr_format("{}: cannot write the journal ({})", shown, error_text(error)));
  }
}

// The number of renames after which the testing hook kills this process, if set.
std::optional<std::size_t> kill_after_renames() {
  const char* text = std::getenv("ATTN_TRACE_TEST_KILL_AFTER_RENAMES");
  if (text == nullptr) return std::nullopt;
  std::size_t count = 0;
  const char* last = text + std::strlen(text);
  const auto [end, error] = std::from_chars(text, last, count);
  if (error != std::errc() || end != last) return std::nullopt;
  return count;
}

// Renames the temporary of `plan` over its target, in folders reached
// without following a link; the error number when it cannot.
int rename_temporary(FolderCache& folders, const Plan& plan) {
  std::vector<fs::path> unused;  // no folder is made here: they all exist
  try {
    const int dir = folders.get(plan.folder(), plan.shown, unused);
    const std::string tmp = temporary_name(plan.name(), getpid());
    return renameat(dir, tmp.c_str(), dir, plan.name().c_str()) == 0 ? 0 : errno;
  } catch (const InputError&) {
    return ELOOP;  // a folder on its way became a link since the checks
  }
}

// Each temporary renamed over its target, in order. A failed rename removes
// the temporaries left and names the files already written.
CommitResult rename_temporaries(const Root& root, const std::vector<Plan>& plans,
                                const Written& written, std::optional<std::size_t> kill_after) {
  CommitResult result;
  for (const Plan& plan : plans) result.files.push_back({std::string(plan.shown), plan.change});
  FolderCache folders(root.fd.get(), root.path);
  for (std::size_t i = 0; i < written.pending.size(); ++i) {
    const Plan& plan = *written.pending[i];
    if (const int error = rename_temporary(folders, plan); error != 0) {
      for (std::size_t k = i; k < written.pending.size(); ++k)
        remove_below(root, written.pending[k]->folder(),
                     temporary_name(written.pending[k]->name(), getpid()), 0);
      std::vector<std::string> done;
      for (std::size_t k = 0; k < i; ++k) done.emplace_back(written.pending[k]->shown);
      throw InputError(tr_format(
          "{}: cannot replace the file ({}); {} of the other files were written before this "
          "failure ({}), the rest are unchanged",
          plan.shown, error_text(error), done.size(), fmt::join(done, ", ")));
    }
    if (kill_after && i + 1 == *kill_after) raise(SIGKILL);
  }
  return result;
}

// Removes from the folder `dir` the temporary files of `files` (names in it)
// that processes which are gone left; other files are never touched.
void remove_stale_temporaries(int dir, const fs::path& shown_folder,
                              const std::set<std::string>& files,
                              std::vector<std::string>& removed) {
  DIR* listing = fdopendir(dup(dir));
  if (listing == nullptr) return;
  while (const dirent* entry = readdir(listing)) {
    const std::string name = entry->d_name;
    const auto parts = temporary_parts(name);
    if (!parts || !files.contains(parts->first) || parts->second == getpid() ||
        !process_is_gone(parts->second))
      continue;
    const std::optional<struct stat> st = status_at(dir, name);
    if (st && (S_ISREG(st->st_mode) || S_ISLNK(st->st_mode)) && unlinkat(dir, name.c_str(), 0) == 0)
      removed.push_back((shown_folder / name).string());
  }
  closedir(listing);
}

// The stale temporary files of every folder `plans` write to.
void remove_stale_temporaries(const Root& root, const std::vector<Plan>& plans,
                              std::vector<std::string>& removed) {
  std::map<fs::path, std::set<std::string>> folders;  // folder -> the names written in it
  for (const Plan& plan : plans) folders[plan.folder()].insert(plan.name());
  for (const auto& [folder, files] : folders) {
    const Reached reached = reach_folder(root.fd.get(), root.path, folder, root.path.string());
    remove_stale_temporaries(reached.fd.get(), under(root.path, folder), files, removed);
  }
}

// A journal as read: its process and its targets, each checked to be a plain
// relative path (no "", ".", ".." or absolute part) that is not the journal
// or the lock.
struct Journal {
  long pid = 0;
  std::vector<fs::path> files;
};

[[noreturn]] void refuse_journal(const std::string& shown, std::string_view why) {
  throw InputError(
      tr_format("{}: {}; it is not a journal attn-trace can complete: if no attn-trace run was "
                "interrupted in this folder, remove the file and run again; nothing was written",
                shown, why));
}

// One journal line's path, its escapes undone and checked.
fs::path journal_path(const std::string& line, const std::string& shown, std::size_t number) {
  std::string text;
  for (std::size_t i = 0; i < line.size(); ++i) {
    if (line[i] != '\\') {
      text += line[i];
      continue;
    }
    const char next = i + 1 < line.size() ? line[++i] : '\0';
    if (next != '\\' && next != 'n')
      refuse_journal(shown, tr_format("line {}: an unknown escape", number));
    text += next == 'n' ? '\n' : '\\';
  }
  const fs::path path(text);
  bool plain = !text.empty() && text.size() < PATH_MAX && text.find('\0') == std::string::npos &&
               path.is_relative() && text.back() != '/';
  for (const fs::path& part : path) plain = plain && part != "." && part != ".." && !part.empty();
  if (!plain || path == kJournalName || path == kFolderLockName)
    refuse_journal(shown,
                   tr_format("line {}: not a plain path inside the folder: {}", number, text));
  return path;
}

Journal parse_journal(const std::string& text, const std::string& shown) {
  std::istringstream in(text);
  std::string line;
  Journal journal;
  if (!std::getline(in, line) || line != "attn-trace journal 1")
    refuse_journal(shown, tr("line 1 is not 'attn-trace journal 1'"));
  if (!std::getline(in, line) || !line.starts_with("pid "))
    refuse_journal(shown, tr("line 2 is not 'pid N'"));
  const char* last = line.data() + line.size();
  const auto [end, error] = std::from_chars(line.data() + 4, last, journal.pid);
  if (error != std::errc() || end != last || journal.pid <= 0)
    refuse_journal(shown, tr("line 2 is not 'pid N'"));
  for (std::size_t number = 3; std::getline(in, line); ++number) {
    if (line == "end") {
      if (std::getline(in, line)) refuse_journal(shown, tr("lines after 'end'"));
      return journal;
    }
    journal.files.push_back(journal_path(line, shown, number));
  }
  refuse_journal(shown, tr("no 'end' line: it is cut short"));
}

// Puts one file of an interrupted commit in place: its temporary (a regular
// file, in folders reached without following a link) renamed over it.
void finish_file(int root_fd, const fs::path& root, const fs::path& file, long pid,
                 FinishedCommit& done) {
  const std::string shown = (root / file).string();
  try {
    const Reached reached = reach_folder(root_fd, root, file.parent_path(), shown);
    const std::size_t parts = static_cast<std::size_t>(
        std::distance(file.parent_path().begin(), file.parent_path().end()));
    if (reached.existing == parts) {
      const int dir = reached.fd.get();
      const std::string name = file.filename().string();
      const std::string tmp = temporary_name(name, pid);
      const std::optional<struct stat> st = status_at(dir, tmp);
      if (st && S_ISREG(st->st_mode) && renameat(dir, tmp.c_str(), dir, name.c_str()) == 0)
        return done.renamed.push_back(shown);
      const std::optional<struct stat> target = status_at(dir, name);
      if (!st && target && S_ISREG(target->st_mode)) {
        ++done.in_place;
        return;
      }
    }
  } catch (const InputError&) {
    // A folder on its way is a link or a file: nothing is followed.
  }
  done.lost.push_back(shown);
}

}  // namespace

std::optional<FinishedCommit> finish_interrupted_commit(const std::string& folder, bool lock_held) {
  const fs::path root = folder.empty() ? fs::path(".") : fs::path(folder);
  const Fd root_fd(open(root.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!root_fd) return std::nullopt;
  const std::string shown = (root / kJournalName).string();
  const std::optional<struct stat> st = status_at(root_fd.get(), kJournalName);
  if (!st) return std::nullopt;
  if (S_ISLNK(st->st_mode))
    refuse_journal(
        shown, tr_format("is a symbolic link to {}", link_text_at(root_fd.get(), kJournalName)));
  if (!S_ISREG(st->st_mode)) refuse_journal(shown, tr("is not a regular file"));
  const std::optional<std::string> text = read_at(root_fd.get(), kJournalName, kMaxJournalBytes);
  if (!text) refuse_journal(shown, tr_format("cannot be read ({})", error_text(errno)));
  const Journal journal = parse_journal(*text, shown);
  if (!lock_held && !process_is_gone(journal.pid)) return std::nullopt;
  FinishedCommit done{shown, journal.pid, {}, 0, {}};
  for (const fs::path& file : journal.files)
    finish_file(root_fd.get(), root, file, journal.pid, done);
  if (unlinkat(root_fd.get(), kJournalName, 0) != 0 || fsync(root_fd.get()) != 0)
    throw InputError(tr_format("{}: cannot remove the journal ({}); remove it and run again", shown,
                               error_text(errno)));
  return done;
}

std::string describe(const FinishedCommit& finished) {
  std::string out = tr_format(
      "attn-trace: completed the interrupted run (pid {}) that {} names: {} file(s) it had "
      "written put in place, {} it had put in place itself",
      finished.pid, finished.journal, finished.renamed.size(), finished.in_place);
  if (!finished.lost.empty())
    out += tr_format("; {} file(s) it named were neither written nor left to rename: {}",
                     finished.lost.size(), fmt::join(finished.lost, ", "));
  return out;
}

std::vector<std::string> make_folder(const std::string& folder) {
  std::vector<std::string> made;
  for (const fs::path& missing : missing_folders(folder, folder)) {
    if (mkdir(missing.c_str(), 0777) != 0 && errno != EEXIST) {
      const int error = errno;
      for (auto it = made.rbegin(); it != made.rend(); ++it) rmdir(it->c_str());
      throw InputError(tr_format("{}: cannot create the folder {} ({})", folder, missing.string(),
                                 error_text(error)));
    }
    made.push_back(missing.string());
  }
  return made;
}

FileBatch::FileBatch(std::string root) : root_(std::move(root)) {}

FileBatch::FileBatch(const FolderLock& lock) : root_(lock.folder()), journaled_(lock.held()) {}

void FileBatch::add(std::string path, std::string content, std::string source) {
  entries_.push_back({std::move(path), std::move(content), std::move(source)});
}

CommitResult FileBatch::commit(bool replace, std::string_view refusal_hint) {
  if (entries_.empty()) return {};
  // 1. Check every target; nothing is touched yet.
  Root root = open_root(root_);
  std::vector<Plan> plans;
  std::vector<std::string> would_change;
  std::map<std::string, std::size_t> by_key;  // a target's path below the root -> its plan
  for (const Entry& e : entries_) {
    plans.push_back(plan_file(root, e.path, e.content, e.source, would_change, replace));
    claim_target(plans, by_key);
  }
  refuse_file_and_folder(plans, by_key);
  if (!would_change.empty())
    throw InputError(tr_format("{} file(s) would change: {}; nothing was written. {}",
                               would_change.size(), fmt::join(would_change, ", "), refusal_hint));
  // 2. Folders, then every content in a temporary file beside its target.
  const Written written = write_temporaries(root, plans);
  // 3. The journal, when several files change: from here on, a killed run is
  //    completed by the next one (finish_interrupted_commit).
  const bool journal = journaled_ && written.pending.size() > 1;
  if (journal) {
    try {
      write_journal(root, written);
    } catch (const InputError& e) {
      undo(root, written);
      refuse(e.what());
    }
  }
  // 4. The renames: each replaces its target whole.
  const auto remove_journal = [&] {
    if (!journal) return;
    unlinkat(root.fd.get(), kJournalName, 0);
    fsync(root.fd.get());
  };
  CommitResult result;
  try {
    result =
        rename_temporaries(root, plans, written, journal ? kill_after_renames() : std::nullopt);
  } catch (const InputError&) {
    remove_journal();
    throw;
  }
  remove_journal();
  // 5. Temporary files that interrupted runs left in these folders.
  try {
    remove_stale_temporaries(root, plans, result.stale_removed);
  } catch (const InputError&) {
    // A folder replaced by a link since the renames: nothing in it is removed.
  }
  entries_.clear();
  return result;
}

void write_file_atomically(const std::string& path, const std::string& content) {
  FileBatch batch(fs::path(path).parent_path().string());
  batch.add(path, content);
  batch.commit(true, "");
}

std::string read_file(const std::string& path) {
  return read_regular_file(path);
}

}  // namespace attn
