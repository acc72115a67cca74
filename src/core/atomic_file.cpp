// All-or-nothing batches of files (check, temporary files, renames) and
// whole-file reads.
#include "core/atomic_file.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <utility>

#include "core/error.hpp"
#include "core/limits.hpp"
#include "core/read_input.hpp"

namespace attn {

namespace {

namespace fs = std::filesystem;

// The temporary file of `target` for this process: `.NAME.tmp-PID` beside it.
fs::path temporary_of(const fs::path& target) {
  return target.parent_path() / fmt::format(".{}.tmp-{}", target.filename().string(), getpid());
}

// The file and the process id of a temporary file's name (`.FILE.tmp-PID`,
// as temporary_of names them), if it is one.
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

bool process_is_gone(pid_t pid) {
  return kill(pid, 0) != 0 && errno == ESRCH;
}

std::string error_text(int error) {
  return std::strerror(error);
}

// `path` as lstat sees it: nullopt when nothing is there.
std::optional<struct stat> link_status(const fs::path& path) {
  struct stat st {};
  if (lstat(path.c_str(), &st) != 0) return std::nullopt;
  return st;
}

// A symbolic link's text, for messages.
std::string link_text(const fs::path& link) {
  std::error_code ec;
  const fs::path to = fs::read_symlink(link, ec);
  return ec ? std::string("?") : to.string();
}

// One file to write, as the checks found it.
struct Plan {
  std::string_view shown;          // the path as given, for messages
  std::string_view content;        // what to write
  std::string_view source;         // where it comes from, for the error when two share a target
  fs::path target;                 // where the content goes (a symbolic link resolved)
  fs::path folder;                 // its folder ("." for a bare name)
  std::vector<fs::path> missing;   // folders to create, outermost first
  std::optional<struct stat> old;  // the file it replaces: its mode and owner are kept
  FileChange change = FileChange::created;
};

[[noreturn]] void refuse(const std::string& reason) {
  throw InputError(fmt::format("{}; nothing was written", reason));
}

// The folder of `target`: exists as a writable folder, or can be created (its
// nearest existing ancestor is a writable folder). Fills plan.missing.
void check_folder(const std::string& shown, Plan& plan) {
  std::vector<fs::path> missing;
  fs::path folder = plan.folder;
  for (;;) {
    const std::optional<struct stat> st = link_status(folder);
    if (st && S_ISLNK(st->st_mode)) {
      struct stat resolved {};
      if (stat(folder.c_str(), &resolved) != 0)
        refuse(
            fmt::format("{}: the folder {} is a symbolic link to {}, which does not exist; create "
                        "that folder, remove the link, or write elsewhere",
                        shown, folder.string(), link_text(folder)));
      if (!S_ISDIR(resolved.st_mode))
        refuse(fmt::format("{}: {} is a link to a file, not a folder; write elsewhere", shown,
                           folder.string()));
      break;
    }
    if (st) {
      if (!S_ISDIR(st->st_mode))
        refuse(
            fmt::format("{}: {} is a file, not a folder; write elsewhere", shown, folder.string()));
      break;
    }
    missing.push_back(folder);
    const fs::path up = folder.has_parent_path() ? folder.parent_path() : fs::path(".");
    if (up == folder)
      refuse(fmt::format("{}: the folder {} cannot be reached", shown, folder.string()));
    folder = up;
  }
  if (access(folder.c_str(), W_OK | X_OK) != 0)
    refuse(fmt::format("{}: {} the folder {} ({}); choose a folder you can write to", shown,
                       missing.empty() ? "cannot write into" : "cannot create a folder in",
                       folder.string(), error_text(errno)));
  plan.missing.assign(missing.rbegin(), missing.rend());
}

// Where `path` leads and what is there: a folder, a dangling link or an odd
// file are refused; an existing file's content decides created / replaced /
// unchanged.
Plan plan_file(const std::string& path, const std::string& content, const std::string& source,
               std::vector<std::string>& would_change, bool replace) {
  Plan plan;
  plan.shown = path;
  plan.content = content;
  plan.source = source;
  plan.target = fs::path(path);
  if (!plan.target.has_filename())
    refuse(fmt::format("{}: a file path is needed, not a folder path", path));
  std::optional<struct stat> st = link_status(plan.target);
  if (st && S_ISLNK(st->st_mode)) {
    std::error_code ec;
    const fs::path resolved = fs::canonical(plan.target, ec);
    if (ec)
      refuse(
          fmt::format("{}: is a symbolic link to {}, which does not exist; remove the link or "
                      "write elsewhere",
                      path, link_text(plan.target)));
    plan.target = resolved;
    st = link_status(plan.target);
  }
  plan.folder = plan.target.has_parent_path() ? plan.target.parent_path() : fs::path(".");
  if (st && S_ISDIR(st->st_mode))
    refuse(
        fmt::format("{}: is a folder; a file cannot replace it (move the folder away or write "
                    "elsewhere)",
                    path));
  if (st && !S_ISREG(st->st_mode))
    refuse(
        fmt::format("{}: is not a regular file (a pipe, socket or device); write elsewhere", path));
  check_folder(path, plan);
  if (!st) return plan;
  if (static_cast<std::size_t>(st->st_size) == content.size()) {
    std::string old;
    try {
      old = read_file(plan.target.string());
    } catch (const InputError& e) {
      refuse(e.what());
    }
    if (old == content) {
      plan.change = FileChange::unchanged;
      return plan;
    }
  }
  plan.change = FileChange::replaced;
  plan.old = st;
  const bool read_only = (st->st_mode & 0222) == 0;
  if (!replace)
    would_change.push_back(
        read_only ? fmt::format("{} (read-only, mode {:04o})", path, st->st_mode & 07777) : path);
  return plan;
}

// The key two entries share when they write the same file.
std::string same_file_key(const fs::path& target) {
  std::error_code ec;
  const fs::path key = fs::weakly_canonical(fs::absolute(target, ec), ec);
  return (ec ? fs::absolute(target).lexically_normal() : key).string();
}

// Writes `content` to a new temporary file `tmp`, with the mode and owner of
// `old` when it replaces a file; throws InputError naming `shown` on any
// failure, leaving no temporary file.
void write_temporary(const fs::path& tmp, std::string_view shown, std::string_view content,
                     const std::optional<struct stat>& old) {
  constexpr int kFlags = O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC;
  int fd = open(tmp.c_str(), kFlags, 0666);
  // One left by an earlier process with this process id is stale.
  if (fd < 0 && errno == EEXIST && unlink(tmp.c_str()) == 0) fd = open(tmp.c_str(), kFlags, 0666);
  if (fd < 0)
    throw InputError(fmt::format("{}: cannot write ({}); check that the folder is writable", shown,
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
    unlink(tmp.c_str());
    throw InputError(fmt::format("{}: write failed ({})", shown, error_text(error)));
  }
}

// Removes from `folder` the temporary files of `files` (names in it) that
// processes which are gone left; other files are never touched.
void remove_stale_temporaries(const fs::path& folder, const std::set<std::string>& files,
                              std::vector<std::string>& removed) {
  std::error_code ec;
  for (fs::directory_iterator it(folder, ec), end; !ec && it != end; it.increment(ec)) {
    const auto parts = temporary_parts(it->path().filename().string());
    if (!parts || !files.contains(parts->first) || parts->second == getpid() ||
        !process_is_gone(parts->second))
      continue;
    const std::optional<struct stat> st = link_status(it->path());
    if (st && (S_ISREG(st->st_mode) || S_ISLNK(st->st_mode)) && unlink(it->path().c_str()) == 0)
      removed.push_back(it->path().string());
  }
}

// The target of the last of `plans` entered in `by_key` (key -> plan);
// refused when an earlier plan has it: two entries would write one file.
void claim_target(const std::vector<Plan>& plans, std::map<std::string, std::size_t>& by_key) {
  const Plan& plan = plans.back();
  const auto [other, added] = by_key.emplace(same_file_key(plan.target), plans.size() - 1);
  if (added) return;
  const Plan& first = plans[other->second];
  refuse(fmt::format("{}: two files would be written here{}", plan.shown,
                     first.source.empty() && plan.source.empty()
                         ? std::string()
                         : fmt::format(", from {} and from {}", first.source, plan.source)));
}

// Refused when one target (keys of `by_key`, as claim_target enters them) is
// a folder above another.
void refuse_file_and_folder(const std::vector<Plan>& plans,
                            const std::map<std::string, std::size_t>& by_key) {
  for (const auto& [key, i] : by_key)
    for (fs::path up = fs::path(key).parent_path(); up.has_relative_path(); up = up.parent_path())
      if (const auto it = by_key.find(up.string()); it != by_key.end())
        refuse(fmt::format("{}: would be both a file and the folder of {}", plans[it->second].shown,
                           plans[i].shown));
}

// The folders `plan` misses, outermost first; each one made is added to `made`.
void make_folders(const Plan& plan, std::vector<fs::path>& made) {
  for (const fs::path& folder : plan.missing) {
    if (mkdir(folder.c_str(), 0777) == 0)
      made.push_back(folder);
    else if (errno != EEXIST)
      throw InputError(fmt::format("{}: cannot create the folder {} ({})", plan.shown,
                                   folder.string(), error_text(errno)));
  }
}

// The missing folders, then each content that changes in a temporary file
// beside its target: the temporaries, in the order of `plans`. Any failure
// removes the temporaries and the folders made so far, and is refused.
std::vector<fs::path> write_temporaries(const std::vector<Plan>& plans) {
  std::vector<fs::path> made_folders;
  std::vector<fs::path> temporaries;
  const auto undo = [&] {
    for (const fs::path& tmp : temporaries) unlink(tmp.c_str());
    for (auto it = made_folders.rbegin(); it != made_folders.rend(); ++it) rmdir(it->c_str());
  };
  try {
    for (const Plan& plan : plans) {
      if (plan.change == FileChange::unchanged) continue;
      make_folders(plan, made_folders);
      const fs::path tmp = temporary_of(plan.target);
      write_temporary(tmp, plan.shown, plan.content, plan.old);
      temporaries.push_back(tmp);
    }
  } catch (const InputError& e) {
    undo();
    refuse(e.what());
  } catch (...) {
    undo();
    throw;
  }
  return temporaries;
}

// Each temporary renamed over its target, in order. A failed rename removes
// the temporaries left and names the files already written.
CommitResult rename_temporaries(const std::vector<Plan>& plans,
                                const std::vector<fs::path>& temporaries) {
  CommitResult result;
  std::size_t next = 0;
  for (const Plan& plan : plans) {
    result.files.push_back({std::string(plan.shown), plan.change});
    if (plan.change == FileChange::unchanged) continue;
    const fs::path& tmp = temporaries[next];
    if (std::rename(tmp.c_str(), plan.target.c_str()) != 0) {
      const int error = errno;
      for (std::size_t k = next; k < temporaries.size(); ++k) unlink(temporaries[k].c_str());
      std::vector<std::string> done;
      for (const CommittedFile& f : result.files)
        if (f.change != FileChange::unchanged && f.path != plan.shown) done.push_back(f.path);
      throw InputError(fmt::format(
          "{}: cannot replace the file ({}); {} of the other files were written before this "
          "failure ({}), the rest are unchanged",
          plan.shown, error_text(error), done.size(), fmt::join(done, ", ")));
    }
    ++next;
  }
  return result;
}

// The stale temporary files of every folder `plans` write to.
void remove_stale_temporaries(const std::vector<Plan>& plans, std::vector<std::string>& removed) {
  std::map<fs::path, std::set<std::string>> folders;  // folder -> the names written in it
  for (const Plan& plan : plans) folders[plan.folder].insert(plan.target.filename().string());
  for (const auto& [folder, files] : folders) remove_stale_temporaries(folder, files, removed);
}

}  // namespace

void FileBatch::add(std::string path, std::string content, std::string source) {
  entries_.push_back({std::move(path), std::move(content), std::move(source)});
}

CommitResult FileBatch::commit(bool replace, std::string_view refusal_hint) {
  // 1. Check every target; nothing is touched yet.
  std::vector<Plan> plans;
  std::vector<std::string> would_change;
  std::map<std::string, std::size_t> by_key;  // a target's key -> its plan
  for (const Entry& e : entries_) {
    plans.push_back(plan_file(e.path, e.content, e.source, would_change, replace));
    claim_target(plans, by_key);
  }
  refuse_file_and_folder(plans, by_key);
  if (!would_change.empty())
    throw InputError(fmt::format("{} file(s) would change: {}; nothing was written. {}",
                                 would_change.size(), fmt::join(would_change, ", "), refusal_hint));
  // 2. Folders, then every content in a temporary file beside its target.
  const std::vector<fs::path> temporaries = write_temporaries(plans);
  // 3. The renames: each replaces its target whole.
  CommitResult result = rename_temporaries(plans, temporaries);
  // 4. Temporary files that interrupted runs left in these folders.
  remove_stale_temporaries(plans, result.stale_removed);
  entries_.clear();
  return result;
}

void write_file_atomically(const std::string& path, const std::string& content) {
  FileBatch batch;
  batch.add(path, content);
  batch.commit(true, "");
}

std::string read_file(const std::string& path) {
  return read_regular_file(path);
}

}  // namespace attn
