// OpenBLAS's kernels and threads, asked of it by name at run time (dlsym), so
// that the program runs the same on any other BLAS.
#include "backend/blas_setup.hpp"

#include <dlfcn.h>
#include <unistd.h>

#include <cstdlib>
#include <string_view>

namespace attn {

namespace {

template <typename Function>
Function* openblas_function(const char* name) {
  return reinterpret_cast<Function*>(dlsym(RTLD_DEFAULT, name));
}

// The kernel this CPU should have, or nullptr when OpenBLAS's choice stands.
const char* better_kernel() {
  if (std::getenv("OPENBLAS_CORETYPE")) return nullptr;
  const auto corename = openblas_function<char*()>("openblas_get_corename");
  if (!corename || std::string_view(corename()) != "Prescott") return nullptr;
#if defined(__x86_64__) && defined(__GNUC__)
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq") &&
      __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl") &&
      __builtin_cpu_supports("avx512cd"))
    return "SkylakeX";
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return "Haswell";
#endif
  return nullptr;
}

bool threads_chosen_by_user() {
  for (const char* name : {"OPENBLAS_NUM_THREADS", "GOTO_NUM_THREADS", "OMP_NUM_THREADS"})
    if (std::getenv(name)) return true;
  return false;
}

}  // namespace

void tune_blas(char** argv) {
  const bool own_threads = !threads_chosen_by_user();
  if (const char* kernel = better_kernel()) {
    // The variable now set keeps the new process from starting a third.
    setenv("OPENBLAS_CORETYPE", kernel, 1);
    if (own_threads) setenv("OPENBLAS_NUM_THREADS", "1", 1);
    execv("/proc/self/exe", argv);
  }
  if (!own_threads) return;
  if (const auto set_threads = openblas_function<void(int)>("openblas_set_num_threads"))
    set_threads(1);
}

}  // namespace attn
