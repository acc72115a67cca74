// Where the program's companions are, found from where the program is: the
// CUDA plugin and the golden files, beside it in a build folder or under
// <prefix>/lib/attn-trace and <prefix>/share/attn-trace when `cmake --install`
// put the program in <prefix>/bin.
#pragma once

#include <filesystem>
#include <optional>

namespace attn {

// The folder of the running program (/proc/self/exe); nullopt where it cannot be read.
std::optional<std::filesystem::path> program_folder();

}  // namespace attn
