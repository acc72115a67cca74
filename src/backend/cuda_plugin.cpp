// The CUDA plugin's entry (libattn-trace-cuda.so, with cuda_device.cu): the
// table of cuda_plugin.hpp over cuda::Device.
#include "backend/cuda_device.hpp"
#include "backend/cuda_plugin_table.hpp"

ATTN_CUDA_PLUGIN_ENTRY(
    &(attn::cuda_plugin::Adapter<attn::cuda::Device, attn::cuda::why_no_device>::table))
