// One writer per folder: an exclusive flock on FOLDER/.attn-trace.lock, taken
// without waiting, then a commit that a killed run left half done completed.
#include "core/folder_lock.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstring>
#include <utility>

#include "core/error.hpp"
#include "core/i18n.hpp"
#include "core/read_input.hpp"

namespace attn {

namespace {

// The process id a lock file holds, 0 when it holds none. The run that holds
// it writes its id just after taking the lock: an empty file is read again
// for up to 50 ms.
long holder_of(int fd) {
  for (int attempt = 0; attempt < 50; ++attempt) {
    char text[32] = {};
    const ssize_t n = pread(fd, text, sizeof text - 1, 0);
    long pid = 0;
    if (n > 0) std::from_chars(text, text + n, pid);
    if (pid > 0) return pid;
    usleep(1000);
  }
  return 0;
}

[[noreturn]] void refuse_busy(const std::string& folder, long pid) {
  if (pid > 0)
    throw InputError(
        tr_format("another attn-trace run (pid {}) is writing {}; wait for it to "
                  "finish, then run again; nothing was written",
                  pid, folder));
  throw InputError(
      tr_format("another attn-trace run is writing {}; wait for it to finish, then "
                "run again; nothing was written",
                folder));
}

// Opens (or makes) the lock file in the folder `dir`, never through a link.
int open_lock_file(int dir, const std::string& shown) {
  const int fd =
      openat(dir, kFolderLockName, O_RDWR | O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0644);
  if (fd < 0 && errno == ELOOP)
    throw InputError(tr_format(
        "{}: is a symbolic link, and attn-trace never writes through a link: remove it and run "
        "again; nothing was written",
        shown));
  if (fd < 0)
    throw InputError(tr_format(
        "{}: cannot create the lock file ({}); choose a folder you can write to; nothing was "
        "written",
        shown, error_text(errno)));
  struct stat st {};
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    close(fd);
    throw InputError(tr_format(
        "{}: is not a regular file, so it cannot be attn-trace's lock: remove it and run again; "
        "nothing was written",
        shown));
  }
  return fd;
}

// Whether `fd` is still the file named `kFolderLockName` in `dir`: a run that
// ends removes its lock file, so the one opened may be gone or replaced.
bool still_named(int dir, int fd) {
  struct stat opened {
  }, named{};
  return fstat(fd, &opened) == 0 &&
         fstatat(dir, kFolderLockName, &named, AT_SYMLINK_NOFOLLOW) == 0 &&
         opened.st_dev == named.st_dev && opened.st_ino == named.st_ino;
}

}  // namespace

FolderLock::FolderLock(std::string folder, Missing missing) : folder_(std::move(folder)) {
  struct stat st {};
  const bool found = stat(folder_.c_str(), &st) == 0;
  // Not a folder (or not there): nothing to lock; the command says why.
  if ((!found || !S_ISDIR(st.st_mode)) && missing == Missing::skip) return;
  if (found && !S_ISDIR(st.st_mode))
    throw InputError(
        tr_format("{}: is a file, not a folder; write elsewhere; nothing was written", folder_));
  if (!found) made_ = make_folder(folder_);
  try {
    acquire();
    finished_ = finish_interrupted_commit(folder_, true);
  } catch (...) {
    release();
    throw;
  }
}

FolderLock::~FolderLock() {
  release();
}

void FolderLock::acquire() {
  folder_fd_ = open(folder_.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (folder_fd_ < 0)
    throw InputError(tr_format("{}: cannot open the folder ({}); nothing was written", folder_,
                               error_text(errno)));
  const std::string shown = folder_ + "/" + kFolderLockName;
  for (int attempt = 0; attempt < 100; ++attempt) {
    const int fd = open_lock_file(folder_fd_, shown);
    if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
      const int error = errno;
      const long pid = holder_of(fd);
      close(fd);
      if (error == EWOULDBLOCK) refuse_busy(folder_, pid);
      throw InputError(
          tr_format("{}: cannot lock ({}); nothing was written", shown, error_text(error)));
    }
    if (!still_named(folder_fd_, fd)) {
      close(fd);  // the run that held it removed it meanwhile: take the new one
      continue;
    }
    lock_fd_ = fd;
    const std::string pid = fmt::format("{}\n", getpid());
    if (ftruncate(lock_fd_, 0) != 0 ||
        pwrite(lock_fd_, pid.data(), pid.size(), 0) != static_cast<ssize_t>(pid.size()))
      throw InputError(
          tr_format("{}: cannot write ({}); nothing was written", shown, error_text(errno)));
    return;
  }
  refuse_busy(folder_, 0);
}

void FolderLock::release() noexcept {
  // Removed while still held, so that no run can lock the file on its way out.
  if (lock_fd_ >= 0) {
    unlinkat(folder_fd_, kFolderLockName, 0);
    close(lock_fd_);
    lock_fd_ = -1;
  }
  if (folder_fd_ >= 0) close(folder_fd_);
  folder_fd_ = -1;
  // The folders it made, if nothing was written into them.
  for (auto it = made_.rbegin(); it != made_.rend(); ++it) rmdir(it->c_str());
  made_.clear();
}

}  // namespace attn
