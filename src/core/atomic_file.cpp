// Atomic file writes (temporary file + rename) and whole-file reads.
#include "core/atomic_file.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "core/error.hpp"
#include "core/limits.hpp"

namespace attn {

void write_file_atomically(const std::string& path, const std::string& content) {
  const std::filesystem::path target(path);
  const std::filesystem::path tmp =
      target.parent_path() / fmt::format(".{}.tmp-{}", target.filename().string(), getpid());
  std::FILE* f = std::fopen(tmp.c_str(), "wb");
  if (!f)
    throw InputError(
        fmt::format("{}: cannot write ({}); check that the folder exists and is "
                    "writable",
                    path, std::strerror(errno)));
  const bool written = std::fwrite(content.data(), 1, content.size(), f) == content.size();
  const bool flushed = std::fflush(f) == 0 && fsync(fileno(f)) == 0;
  const bool closed = std::fclose(f) == 0;
  if (!written || !flushed || !closed) {
    const int err = errno;
    std::error_code ignored;
    std::filesystem::remove(tmp, ignored);
    throw InputError(fmt::format("{}: write failed ({}); the old file, if any, is unchanged", path,
                                 std::strerror(err)));
  }
  if (std::rename(tmp.c_str(), target.c_str()) != 0) {
    const int err = errno;
    std::error_code ignored;
    std::filesystem::remove(tmp, ignored);
    throw InputError(
        fmt::format("{}: cannot replace the file ({}); the old file, if any, is "
                    "unchanged",
                    path, std::strerror(err)));
  }
}

std::string read_file(const std::string& path) {
  std::error_code error;  // the non-throwing overloads: an odd path is an InputError
  if (std::filesystem::is_directory(path, error))
    throw InputError(fmt::format("{}: is a folder, not a file", path));
  if (const std::uintmax_t bytes = std::filesystem::file_size(path, error); !error)
    check_file_size(path, bytes);
  std::ifstream in(path, std::ios::binary);
  if (!in)
    throw InputError(
        fmt::format("{}: cannot open ({}); check the path", path,
                    std::filesystem::exists(path, error) ? "permission denied" : "no such file"));
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

}  // namespace attn
