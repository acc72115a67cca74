// The seam between attn-trace and its CUDA plugin (libattn-trace-cuda.so): a
// table of plain functions that the plugin exports under one C name, opened
// with dlopen only when `--backend cuda` is asked, so that the program itself
// links no CUDA library and every other command starts in milliseconds (the
// way ggml and PyTorch load their device backends).
//
// Only plain types cross the seam: pointers, sizes, and the layout structs of
// attention_layout.hpp. No exception crosses it: every call returns a status,
// and the plugin keeps the message of its last failure (per thread).
//
// Shape key: n queries, m keys, h heads, d model width.
#pragma once

#include <cstddef>

#include "backend/attention_layout.hpp"

namespace attn::cuda_plugin {

// Raised whenever the table or a struct crossing the seam changes, so that a
// plugin from another build is refused instead of misread.
inline constexpr int abi_version = 1;

// The plugin's file name; where it is looked for: cuda_backend.cpp.
inline constexpr const char* file_name = "libattn-trace-cuda.so";
// The one symbol the plugin exports: `const Table* attn_cuda_plugin_table()`.
inline constexpr const char* entry_symbol = "attn_cuda_plugin_table";

enum class Status : int {
  ok = 0,
  unavailable = 1,    // a CUDA or cuBLAS failure, or no usable device: exit 3
  out_of_memory = 2,  // the host ran out of memory: std::bad_alloc
};

struct Device;       // cuda::Device behind the seam
struct ForwardPlan;  // cuda::DeviceForward behind the seam

struct Table {
  int abi_version;
  std::size_t shape_size;    // sizeof(AttentionShape) as the plugin was built
  std::size_t buffers_size;  // sizeof(AttentionBuffers)

  // The message of this thread's last failed call.
  const char* (*last_error)();
  // Why no device can be used here, in the driver's words; "" when one can.
  const char* (*why_no_device)();

  Status (*create_device)(Device** out);
  void (*destroy_device)(Device* device);
  // A:(n,k) B:(k,p) -> C:(n,p), host pointers
  Status (*matmul)(Device* device, const double* A, const double* B, double* C, std::size_t n,
                   std::size_t k, std::size_t p);
  Status (*attend)(Device* device, const AttentionShape* shape, const AttentionBuffers* host);

  // W_QKV:(d,3d) W_O:(d,d), host pointers, copied to the device
  Status (*plan_forward)(Device* device, std::size_t n, std::size_t d, std::size_t heads,
                         const double* W_QKV, const double* W_O, ForwardPlan** out);
  void (*destroy_plan)(ForwardPlan* plan);
  Status (*upload)(ForwardPlan* plan, const double* X);  // X:(n,d)
  Status (*compute)(ForwardPlan* plan);
  Status (*download)(ForwardPlan* plan, double* output);  // output:(n,d)
  std::size_t (*bytes)(const ForwardPlan* plan);
};

}  // namespace attn::cuda_plugin

extern "C" {
// The plugin's entry (cuda_plugin.cpp): its table, the same on every call.
using attn_cuda_plugin_table_fn = const attn::cuda_plugin::Table* (*)();
}
