// Where the program is (install_paths.hpp).
#include "core/install_paths.hpp"

#include <system_error>

namespace attn {

std::optional<std::filesystem::path> program_folder() {
  std::error_code error;
  const std::filesystem::path program = std::filesystem::read_symlink("/proc/self/exe", error);
  if (error) return std::nullopt;
  return program.parent_path();
}

}  // namespace attn
