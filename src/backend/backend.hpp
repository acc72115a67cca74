// Choosing a compute backend by name: the implementations of core/backend.hpp.
#pragma once

#include <memory>
#include <string_view>

#include "core/backend.hpp"

namespace attn {

// "cpu" or "cuda". Throws BackendUnavailable (exit 3) saying why a backend
// cannot be used (a build without CUDA; no usable device, in the driver's
// words), InputError for an unknown name.
std::unique_ptr<Backend> make_backend(std::string_view name);

}  // namespace attn
