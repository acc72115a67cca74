// The readers of read_input.hpp: look at what a path is before opening it,
// open without blocking, look again at what was opened, and read at most one
// byte beyond the limit.
#include "core/read_input.hpp"

#include <fcntl.h>
#include <poll.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>

#include "core/error.hpp"
#include "core/i18n.hpp"
#include "core/limits.hpp"

namespace attn {

namespace {

// glibc's words for the errors a read or write meets, marked for the catalog
// (error_text translates strerror's text; another error stays in English).
[[maybe_unused]] constexpr const char* kErrorTexts[] = {N_("No such file or directory"),
                                                        N_("Permission denied"),
                                                        N_("No space left on device"),
                                                        N_("Read-only file system"),
                                                        N_("Is a directory"),
                                                        N_("Not a directory"),
                                                        N_("Disk quota exceeded"),
                                                        N_("Input/output error"),
                                                        N_("Broken pipe"),
                                                        N_("File exists"),
                                                        N_("Too many levels of symbolic links"),
                                                        N_("File name too long"),
                                                        N_("Operation not permitted"),
                                                        N_("Too many open files"),
                                                        N_("Device or resource busy"),
                                                        N_("Resource temporarily unavailable"),
                                                        N_("Bad file descriptor"),
                                                        N_("Cannot allocate memory"),
                                                        N_("File too large"),
                                                        N_("Directory not empty")};

// Closes its descriptor when it goes out of scope.
struct Descriptor {
  int fd = -1;
  ~Descriptor() {
    if (fd >= 0) close(fd);
  }
};

[[noreturn]] void refuse_open(const std::string& path, int error) {
  const std::string why = error == ENOENT || error == ENOTDIR ? std::string(tr("no such file"))
                          : error == EACCES                   ? std::string(tr("permission denied"))
                                                              : error_text(error);
  throw InputError(tr_format("{}: cannot open ({}); check the path", path, why));
}

bool is_standard_input(const struct stat& st) {
  struct stat in {};
  return fstat(STDIN_FILENO, &in) == 0 && in.st_dev == st.st_dev && in.st_ino == st.st_ino;
}

// Refuses what `st` says is not a regular file, naming `path` and what it is.
void require_regular(const std::string& path, const struct stat& st) {
  if (S_ISREG(st.st_mode)) return;
  if (S_ISDIR(st.st_mode)) throw InputError(tr_format("{}: is a folder, not a file", path));
  if (S_ISFIFO(st.st_mode) && is_standard_input(st))
    throw InputError(
        tr_format("{}: is standard input, a pipe; give - instead to read standard input", path));
  if (S_ISFIFO(st.st_mode))
    throw InputError(tr_format(
        "{}: is a pipe (FIFO), not a regular file; attn-trace reads only regular files, so "
        "that it never waits for a writer. Save the data to a file and give that (or, where "
        "the command takes -, send it to standard input)",
        path));
  if (S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode))
    throw InputError(tr_format("{}: is a device, not a regular file; give a regular file", path));
  throw InputError(tr_format("{}: is a socket, not a regular file; give a regular file", path));
}

// Waits until `fd`, which reported EAGAIN (standard input left non-blocking by
// whoever started us), can be read.
void wait_readable(int fd) {
  pollfd p{fd, POLLIN, 0};
  while (poll(&p, 1, -1) < 0 && errno == EINTR) {
  }
}

// All that `fd` holds, read to one byte beyond file_mb; `expected` bytes (its
// size, when known) are read in one call.
std::string read_to_limit(int fd, const std::string& shown, std::uint64_t expected) {
  const std::uint64_t limit = limits().file_mb << 20;
  constexpr std::uint64_t kChunk = 1 << 16;
  std::string text;
  text.reserve(std::min(expected, limit) + 1);
  while (text.size() <= limit) {
    const std::size_t before = text.size();
    const std::uint64_t room = std::max<std::uint64_t>(kChunk, text.capacity() - before);
    text.resize(before + std::min(room, limit + 1 - before));
    const ssize_t n = read(fd, text.data() + before, text.size() - before);
    const int error = errno;
    text.resize(before + static_cast<std::size_t>(std::max<ssize_t>(n, 0)));
    if (n == 0) return text;
    if (n < 0 && error == EAGAIN) wait_readable(fd);
    if (n < 0 && error != EINTR && error != EAGAIN)
      throw InputError(tr_format("{}: cannot read ({})", shown, error_text(error)));
  }
  throw InputError(tr_format(
      "{}: more than {} MiB, above the limit of {} MiB per file; --limit file_mb=N raises it "
      "(N in MiB, above its size)",
      shown, limits().file_mb, limits().file_mb));
}

}  // namespace

std::string read_regular_file(const std::string& path) {
  // What the path names, before opening it: a device or a pipe is never opened.
  struct stat st {};
  if (stat(path.c_str(), &st) != 0) refuse_open(path, errno);
  require_regular(path, st);
  check_file_size(path, static_cast<std::uint64_t>(st.st_size));
  // O_NONBLOCK: should it have become a pipe since, opening it does not wait.
  const Descriptor file{open(path.c_str(), O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC)};
  if (file.fd < 0) refuse_open(path, errno);
  if (fstat(file.fd, &st) != 0)
    throw InputError(tr_format("{}: cannot read ({})", path, error_text(errno)));
  require_regular(path, st);
  check_file_size(path, static_cast<std::uint64_t>(st.st_size));
  const int flags = fcntl(file.fd, F_GETFL);
  if (flags >= 0) fcntl(file.fd, F_SETFL, flags & ~O_NONBLOCK);
  return read_to_limit(file.fd, path, static_cast<std::uint64_t>(st.st_size));
}

std::string read_input(const std::string& path) {
  if (path != kStandardInput) return read_regular_file(path);
  static bool read_already = false;  // a second "-" would read nothing
  if (read_already)
    throw InputError(std::string(
        tr("stdin: standard input was read already for another file of this command; give a "
           "file for one of them")));
  read_already = true;
  return read_to_limit(STDIN_FILENO, input_name(path), 0);
}

std::string input_name(const std::string& path) {
  return path == kStandardInput ? "stdin" : path;
}

std::string error_text(int error) {
  return std::string(tr(std::strerror(error)));
}

}  // namespace attn
