// The CUDA side of the CUDA backend (cuda_device.cu, compiled by nvcc only when
// ATTN_CUDA is on): a device with its cuBLAS handle, attention's steps on it,
// and a forward pass kept on it. Plain column-major host pointers in and out,
// no Armadillo and no CUDA types here; cuda_backend.cpp adapts it to the
// Backend interface. Every CUDA or cuBLAS failure is a BackendUnavailable
// naming the file, line and call.
//
// Shape key: n queries, m keys, h heads, d_k, d_v per-head widths, d model width.
#pragma once

#include <cstddef>
#include <memory>
#include <string>

#include "backend/attention_layout.hpp"

namespace attn::cuda {

// Why no CUDA device can be used here, in the driver's words (cudaGetDeviceCount
// failing, or finding none); empty when one can.
std::string why_no_device();

struct Context;  // the cuBLAS handle, shared by a device and its plans

// A forward pass resident on the device (core/backend.hpp's ForwardPlan):
// weights uploaded and every buffer allocated when it is made.
class DeviceForward {
 public:
  // W_QKV:(d,3d) W_O:(d,d), host pointers, copied to the device now.
  DeviceForward(std::shared_ptr<Context> context, const ForwardLayout& layout, std::size_t d,
                const double* W_QKV, const double* W_O);
  ~DeviceForward();
  DeviceForward(const DeviceForward&) = delete;
  DeviceForward& operator=(const DeviceForward&) = delete;

  void upload(const double* X);   // X:(n,d)
  void compute();                 // returns when the device is done
  void download(double* output);  // output:(n,d)
  std::size_t bytes() const;      // device memory held

 private:
  struct Buffers;
  std::shared_ptr<Context> context_;
  ForwardLayout layout_;
  std::unique_ptr<Buffers> buffers_;
};

class Device {
 public:
  // Device 0 and a cuBLAS handle on it; BackendUnavailable when there is none.
  Device();
  ~Device();

  // A:(n,k) B:(k,p) -> C:(n,p), host pointers
  void matmul(const double* A, const double* B, double* C, std::size_t n, std::size_t k,
              std::size_t p);

  // Every step of every head: the inputs and mask uploaded once, the scores and
  // contexts by strided-batched cuBLAS products over the heads, the rest by
  // kernels over attention_rows.hpp; every step downloaded once.
  void attend(const AttentionShape& shape, const AttentionBuffers& host);

  // A forward pass of n tokens, width d, `heads` heads, ready to run.
  std::unique_ptr<DeviceForward> plan_forward(std::size_t n, std::size_t d, std::size_t heads,
                                              const double* W_QKV, const double* W_O);

 private:
  std::shared_ptr<Context> context_;
};

}  // namespace attn::cuda
