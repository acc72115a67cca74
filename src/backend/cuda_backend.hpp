// The CUDA backend: cuBLAS for the products, CUDA kernels for the other steps,
// IEEE double, in a plugin (libattn-trace-cuda.so, built when ATTN_CUDA is on)
// that is opened only when this backend is asked for. This is the program's
// side: it finds the plugin and turns matrices into the plain column-major
// pointers of cuda_plugin.hpp.
#pragma once

#include <memory>

#include "core/backend.hpp"

namespace attn {

// The CUDA backend on device 0. BackendUnavailable (exit 3), each message
// ending "use --backend cpu", where the plugin is not found ("no CUDA plugin:
// ... looked for ..."), cannot be loaded (the loader's message, e.g. a missing
// libcublas), is from another build, or no device can be used ("no CUDA
// device: <the driver's message>").
std::unique_ptr<Backend> make_cuda_backend();

}  // namespace attn
