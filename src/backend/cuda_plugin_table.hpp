// The plugin's side of the seam (cuda_plugin.hpp), written once over any
// device class with cuda::Device's interface: the CUDA plugin instantiates it
// with cuda::Device (cuda_plugin.cpp), and the tests with a host twin that runs
// the same layout and row functions in loops (tests/backend/host_kernels_plugin.cpp),
// so that the seam itself is tested on every machine. Every exception is
// turned into a status and a message: none may cross into the program.
//
// A Device has: Device() (throws where none can be used), matmul, attend, and
// plan_forward returning a std::unique_ptr to a plan with upload, compute,
// download and bytes, as in cuda_device.hpp.
#pragma once

#include <exception>
#include <memory>
#include <new>
#include <string>
#include <utility>

#include "backend/cuda_plugin.hpp"

namespace attn::cuda_plugin {

template <typename DeviceType>
struct DeviceHolder {
  DeviceType device;
};
template <typename PlanType>
struct PlanHolder {
  std::unique_ptr<PlanType> plan;
};

// The message of this thread's last failed call, shared by every table.
inline std::string& last_error_message() {
  thread_local std::string message;
  return message;
}

// Runs `call`, keeping the message of what it throws.
template <typename Call>
Status guarded(Call&& call) {
  try {
    call();
    return Status::ok;
  } catch (const std::bad_alloc&) {
    last_error_message() = "out of host memory";
    return Status::out_of_memory;
  } catch (const std::exception& e) {
    last_error_message() = e.what();
    return Status::unavailable;
  } catch (...) {
    last_error_message() = "an unknown error in the CUDA plugin";
    return Status::unavailable;
  }
}

// The table's functions over DeviceType; `why_no_device` says why none can be
// used ("" when one can). Device and ForwardPlan are opaque names on the
// program's side, the holders here.
template <typename DeviceType, std::string (*why_no_device)()>
struct Adapter {
  using Holder = DeviceHolder<DeviceType>;
  using Plan = typename decltype(std::declval<DeviceType&>().plan_forward(
      0, 0, 0, nullptr, nullptr))::element_type;
  using Planned = PlanHolder<Plan>;

  static DeviceType& device(Device* d) { return reinterpret_cast<Holder*>(d)->device; }
  static Plan& plan(ForwardPlan* p) { return *reinterpret_cast<Planned*>(p)->plan; }

  static const char* last_error() { return last_error_message().c_str(); }
  static const char* why_not() {
    thread_local std::string why;
    if (guarded([&] { why = why_no_device(); }) != Status::ok) why = last_error_message();
    return why.c_str();
  }
  static Status create_device(Device** out) {
    return guarded([&] { *out = reinterpret_cast<Device*>(new Holder); });
  }
  static void destroy_device(Device* d) { delete reinterpret_cast<Holder*>(d); }
  // A:(n,k) B:(k,p) -> C:(n,p)
  static Status matmul(Device* d, const double* A, const double* B, double* C, std::size_t n,
                       std::size_t k, std::size_t p) {
    return guarded([&] { device(d).matmul(A, B, C, n, k, p); });
  }
  static Status attend(Device* d, const AttentionShape* shape, const AttentionBuffers* host) {
    return guarded([&] { device(d).attend(*shape, *host); });
  }
  static Status plan_forward(Device* d, std::size_t n, std::size_t width, std::size_t heads,
                             const double* W_QKV, const double* W_O, ForwardPlan** out) {
    return guarded([&] {
      *out = reinterpret_cast<ForwardPlan*>(
          new Planned{device(d).plan_forward(n, width, heads, W_QKV, W_O)});
    });
  }
  static void destroy_plan(ForwardPlan* p) { delete reinterpret_cast<Planned*>(p); }
  static Status upload(ForwardPlan* p, const double* X) {
    return guarded([&] { plan(p).upload(X); });
  }
  static Status compute(ForwardPlan* p) {
    return guarded([&] { plan(p).compute(); });
  }
  static Status download(ForwardPlan* p, double* output) {
    return guarded([&] { plan(p).download(output); });
  }
  static std::size_t bytes(const ForwardPlan* p) {
    return reinterpret_cast<const Planned*>(p)->plan->bytes();
  }

  static constexpr Table table{abi_version,  sizeof(AttentionShape), sizeof(AttentionBuffers),
                               last_error,   why_not,                create_device,
                               destroy_device, matmul,               attend,
                               plan_forward, destroy_plan,           upload,
                               compute,      download,               bytes};
};

}  // namespace attn::cuda_plugin

// Defines the plugin's one exported symbol, the entry cuda_backend.cpp looks for.
#define ATTN_CUDA_PLUGIN_ENTRY(table_expression)                                             \
  extern "C" __attribute__((visibility("default"))) const attn::cuda_plugin::Table*          \
  attn_cuda_plugin_table() {                                                                 \
    return table_expression;                                                                 \
  }
