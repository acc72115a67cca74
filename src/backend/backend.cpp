// Choosing a backend by name.
#include "backend/backend.hpp"

#include <fmt/format.h>

#include "backend/cpu_backend.hpp"
#include "core/error.hpp"
#if ATTN_WITH_CUDA
#include "backend/cuda_backend.hpp"
#endif

namespace attn {

std::unique_ptr<Backend> make_backend(std::string_view name) {
  if (name == "cpu") return std::make_unique<CpuBackend>();
#if ATTN_WITH_CUDA
  if (name == "cuda") return make_cuda_backend();
#else
  if (name == "cuda")
    throw BackendUnavailable(
        "this build has no CUDA backend: it was built without CUDA support. Use --backend cpu");
#endif
  throw InputError(fmt::format("unknown backend '{}'; use cpu or cuda", name));
}

}  // namespace attn
