// How the CPU backend's BLAS library (OpenBLAS on Debian) runs in this
// program. OpenBLAS chooses its kernels and its threads when it is loaded;
// two of its choices are wrong here:
//
//  - Kernels. OpenBLAS 0.3.21 (Debian 12) knows CPUs by model number. On one
//    newer than itself (an Emerald Rapids Xeon, model 207) it falls back to
//    its Prescott (SSE3) kernels though the CPU has AVX-512: DGEMM runs 3
//    times slower. The right kernel is SkylakeX (AVX-512) or Haswell (AVX2 and
//    FMA), and it can only be set before OpenBLAS loads.
//  - Threads. The pipeline computes the heads side by side and the text
//    renderer writes the steps side by side; OpenBLAS's own threads would spin
//    against them for the same cores. One BLAS thread is faster.
//
// Whatever the user has set (OPENBLAS_CORETYPE, OPENBLAS_NUM_THREADS,
// GOTO_NUM_THREADS, OMP_NUM_THREADS) is left alone, and so is any other BLAS.
#pragma once

namespace attn {

// Call first in main. When OpenBLAS has fallen back to Prescott on a CPU with
// AVX2 or AVX-512, starts this program again (execv of /proc/self/exe with
// argv) with OPENBLAS_CORETYPE set, and one thread; does not return then,
// unless the exec fails (the program goes on, slower). Otherwise asks the
// loaded OpenBLAS for one thread.
void tune_blas(char** argv);

}  // namespace attn
