// The softmax of the CPU forward plan (backend/cpu_forward.hpp): scores kept
// one query per column, so that each query's softmax runs down contiguous
// memory, with a vectorised exp from SLEEF chosen by the CPU's features.
//
// Shape key: m keys (the rows), b queries (the columns), ld the distance in
// doubles from one column to the next (ld >= m).
#pragma once

#include <cstddef>
#include <string_view>
#include <vector>

namespace attn {

// S:(m,b) -> weights:(m,b) in place: each column becomes its stable softmax,
// exp(s − max) / Σ exp(s − max) (the running max starts at -inf; the sum is
// divided once and multiplied in). A column of -inf only becomes NaN (0/0).
using ColumnSoftmax = void (*)(double* S, std::size_t m, std::size_t b, std::size_t ld);

struct SoftmaxKernel {
  std::string_view name;  // "avx512" (SLEEF expd8), "avx2" (SLEEF expd4), "portable" (std::exp)
  ColumnSoftmax run = nullptr;
};

// The kernels this CPU can run, fastest first; the last, "portable", runs
// on every CPU.
std::vector<SoftmaxKernel> column_softmax_kernels();

// The fastest kernel this CPU can run.
SoftmaxKernel column_softmax_kernel();

// The kernels themselves, one arithmetic in three instruction sets: each of
// the first two needs its instruction set (column_softmax_kernels() lists them
// only where the CPU has it); the portable one is their fallback, the same
// steps with std::exp.
void column_softmax_avx512(double* S, std::size_t m, std::size_t b, std::size_t ld);
void column_softmax_avx2(double* S, std::size_t m, std::size_t b, std::size_t ld);
void column_softmax_portable(double* S, std::size_t m, std::size_t b, std::size_t ld);

}  // namespace attn
