// The choice of softmax kernel by the CPU's features, and the portable kernel.
#include "backend/column_softmax.hpp"

#include <cmath>
#include <limits>

namespace attn {

namespace {

bool has_avx512() {
#if defined(__x86_64__) && defined(__GNUC__)
  return __builtin_cpu_supports("avx512f");
#else
  return false;
#endif
}

bool has_avx2() {
#if defined(__x86_64__) && defined(__GNUC__)
  return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
#else
  return false;
#endif
}

}  // namespace

std::vector<SoftmaxKernel> column_softmax_kernels() {
  std::vector<SoftmaxKernel> kernels;
  if (has_avx512()) kernels.push_back({"avx512", column_softmax_avx512});
  if (has_avx2()) kernels.push_back({"avx2", column_softmax_avx2});
  kernels.push_back({"portable", column_softmax_portable});
  return kernels;
}

SoftmaxKernel column_softmax_kernel() {
  return column_softmax_kernels().front();
}

// S:(m,b) -> weights:(m,b), one column at a time
void column_softmax_portable(double* S, std::size_t m, std::size_t b, std::size_t ld) {
  for (std::size_t j = 0; j < b; ++j) {
    double* s = S + j * ld;
    double max = -std::numeric_limits<double>::infinity();
    for (std::size_t i = 0; i < m; ++i) max = std::fmax(max, s[i]);
    double sum = 0.0;
    for (std::size_t i = 0; i < m; ++i) sum += (s[i] = std::exp(s[i] - max));
    const double inverse = 1.0 / sum;
    for (std::size_t i = 0; i < m; ++i) s[i] *= inverse;
  }
}

}  // namespace attn
