// The CUDA backend (built when ATTN_CUDA is on): cuBLAS for the products, CUDA
// kernels for the other steps, IEEE double. This is the Armadillo side: it
// turns matrices into the plain column-major pointers of cuda_device.hpp.
#pragma once

#include <memory>

#include "core/backend.hpp"

namespace attn {

// The CUDA backend on device 0. Where no device can be used, BackendUnavailable:
// "no CUDA device: <the driver's message>; use --backend cpu" (exit 3).
std::unique_ptr<Backend> make_cuda_backend();

}  // namespace attn
