// Choosing a backend by name.
#include "backend/backend.hpp"

#include <fmt/format.h>

#include "backend/cpu_backend.hpp"
#include "backend/cuda_backend.hpp"
#include "core/error.hpp"
#include "core/i18n.hpp"

namespace attn {

std::unique_ptr<Backend> make_backend(std::string_view name) {
  if (name == "cpu") return std::make_unique<CpuBackend>();
  if (name == "cuda") return make_cuda_backend();  // the plugin, opened now
  throw InputError(tr_format("unknown backend '{}'; use cpu or cuda", name));
}

}  // namespace attn
