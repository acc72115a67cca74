// Reading the files a user names: only regular files, or standard input for
// an explicit "-", never more than the file_mb limit (docs/limits.md), and
// never waiting on a named pipe without a writer.
#pragma once

#include <string>
#include <string_view>

namespace attn {

// The name that stands for standard input where a command reads a file.
inline constexpr std::string_view kStandardInput = "-";

// A regular file at `path`, whole. A folder, a device (/dev/zero), a named
// pipe (FIFO, /dev/stdin as a pipe) or a socket is refused at once without
// blocking, with exit 2; so is a file above file_mb, by its size first and
// again while it is read (one that grows is stopped at the limit).
std::string read_regular_file(const std::string& path);

// `path`, or standard input when it is "-" (whatever it is: a pipe, a file,
// a terminal), read to at most file_mb. Standard input is read once: a second
// "-" of one command is an InputError.
std::string read_input(const std::string& path);

// How messages and lessons name what read_input read: "stdin" for "-".
std::string input_name(const std::string& path);

// The C library's words for `error` (an errno value), in language(): glibc's
// English (strerror in the "C" locale) as the msgid, so that the catalog
// translates the common ones (kErrorTexts in read_input.cpp).
std::string error_text(int error);

}  // namespace attn
