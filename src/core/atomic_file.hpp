// Writing output files so that a failure never leaves half a file: write a
// temporary file beside the target, then rename it over the target.
#pragma once

#include <string>

namespace attn {

// Writes `content` to `path` atomically. Throws InputError naming the path and
// the reason when the folder is missing or not writable.
void write_file_atomically(const std::string& path, const std::string& content);

// Reads a whole file; throws InputError naming the path when it cannot.
std::string read_file(const std::string& path);

}  // namespace attn
