// Choosing a backend by name.
#include "backend/backend.hpp"

#include <fmt/format.h>

#include "backend/cpu_backend.hpp"
#include "core/error.hpp"

namespace attn {

std::unique_ptr<Backend> make_backend(std::string_view name) {
  if (name == "cpu") return std::make_unique<CpuBackend>();
  if (name == "cuda")
    throw BackendUnavailable(
        "this build has no CUDA backend: it was built without CUDA support. Use --backend cpu");
  throw InputError(fmt::format("unknown backend '{}'; use cpu or cuda", name));
}

}  // namespace attn
