// read_regular_file: regular files whole, to the file_mb limit; a folder, a
// device, a named pipe without a writer and a socket refused at once with a
// message naming what it is. (Standard input, "-": tests/cli/test_inputs.py.)
#include <doctest/doctest.h>
#include <fmt/format.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>

#include "core/error.hpp"
#include "core/limits.hpp"
#include "core/read_input.hpp"

namespace {

namespace fs = std::filesystem;

// A fresh folder under /tmp, removed with everything in it at the end of the test.
struct TempDir {
  fs::path path = fs::temp_directory_path() / fmt::format("attn-read-{}-{}", ::getpid(), next()++);
  TempDir() { fs::create_directories(path); }
  ~TempDir() { fs::remove_all(path); }
  std::string operator/(const char* name) const { return (path / name).string(); }
  static int& next() {
    static int n = 0;
    return n;
  }
};

// The message of the InputError that read_regular_file(path) throws ("" if none).
std::string read_error(const std::string& path) {
  try {
    (void)attn::read_regular_file(path);
  } catch (const attn::InputError& e) {
    return e.what();
  }
  return "";
}

void write(const std::string& path, const std::string& content) {
  std::ofstream(path, std::ios::binary) << content;
}

// Restores the limits when the test ends.
struct LimitsKept {
  attn::Limits kept = attn::limits();
  ~LimitsKept() { attn::limits() = kept; }
};

}  // namespace

TEST_CASE("read_regular_file: a regular file, every byte") {
  const TempDir dir;
  const std::string bytes("a\0b\xff\r\n", 6);
  write(dir / "f.toml", bytes);
  CHECK(attn::read_regular_file(dir / "f.toml") == bytes);
  write(dir / "empty", "");
  CHECK(attn::read_regular_file(dir / "empty").empty());
  CHECK(attn::input_name("-") == "stdin");
  CHECK(attn::input_name("f.toml") == "f.toml");
}

TEST_CASE("read_regular_file: a folder, a missing file, a device") {
  const TempDir dir;
  CHECK(read_error(dir.path.string()) == dir.path.string() + ": is a folder, not a file");
  CHECK(read_error(dir / "nope.toml") ==
        dir / "nope.toml" + std::string(": cannot open (no such file); check the path"));
  CHECK(read_error("/dev/zero") ==
        "/dev/zero: is a device, not a regular file; give a regular file");
  CHECK(read_error("/dev/null") ==
        "/dev/null: is a device, not a regular file; give a regular file");
}

TEST_CASE("read_regular_file: a named pipe without a writer is refused at once") {
  const TempDir dir;
  const std::string fifo = dir / "fifo";
  REQUIRE(mkfifo(fifo.c_str(), 0600) == 0);
  const auto started = std::chrono::steady_clock::now();
  CHECK(read_error(fifo) ==
        fifo +
            ": is a pipe (FIFO), not a regular file; attn-trace reads only regular files, so that "
            "it never waits for a writer. Save the data to a file and give that (or, where the "
            "command takes -, send it to standard input)");
  CHECK(std::chrono::steady_clock::now() - started < std::chrono::seconds(1));
}

TEST_CASE("read_regular_file: a socket is refused") {
  const TempDir dir;
  const std::string path = dir / "socket";
  const int fd = socket(AF_UNIX, SOCK_STREAM, 0);
  REQUIRE(fd >= 0);
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  REQUIRE(path.size() < sizeof(address.sun_path));
  std::memcpy(address.sun_path, path.c_str(), path.size() + 1);
  REQUIRE(bind(fd, reinterpret_cast<const sockaddr*>(&address), sizeof(address)) == 0);
  CHECK(read_error(path) == path + ": is a socket, not a regular file; give a regular file");
  close(fd);
}

TEST_CASE("read_regular_file: file_mb bounds a regular file") {
  const LimitsKept kept;
  attn::limits().file_mb = 1;
  const TempDir dir;
  write(dir / "exact", std::string(1 << 20, 'x'));
  CHECK(attn::read_regular_file(dir / "exact").size() == 1u << 20);
  write(dir / "over", std::string((1 << 20) + 1, 'x'));
  CHECK(read_error(dir / "over") ==
        dir / "over" + std::string(": the file is 2 MiB, above the limit of 1 MiB per file; "
                                   "--limit file_mb=2 raises it"));
}
