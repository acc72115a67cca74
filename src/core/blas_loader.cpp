// The BLAS functions the program calls (Armadillo's products and cpu_forward's
// cblas_dgemm), bound to OpenBLAS when the first of them is called instead of
// by the dynamic loader at every start. A command that multiplies nothing big
// (--help, lessons, most small traces) never maps OpenBLAS, relocates its
// 15,000 symbols or starts its threads; and since OpenBLAS reads its settings
// when it is opened, they are set just before, in this process, with no
// restart:
//
//  - Kernels. OpenBLAS 0.3.21 (Debian 12) knows CPUs by model number; on one
//    newer than itself (an Emerald Rapids Xeon) it falls back to its generic
//    Prescott (SSE3) kernels though the CPU has AVX-512, and DGEMM runs 3
//    times slower. So OPENBLAS_CORETYPE is set from the CPU's own features:
//    SkylakeX with AVX-512 (F, DQ, BW, VL, CD), Haswell with AVX2 and FMA, the
//    double-precision kernels OpenBLAS itself picks for every newer CPU.
//  - Threads. The pipeline computes the heads side by side and `bench` runs its
//    heads on every core: OpenBLAS's own threads would spin against them for
//    the same cores. OPENBLAS_NUM_THREADS=1.
//
//  - Memory. OpenBLAS takes a work buffer of 128 MiB of address space for
//    each thread that calls a level-2 or level-3 routine, and when malloc
//    cannot give it one (under `ulimit -v`) it retries forever. So when the
//    process has an address-space or data limit, each such call first checks
//    that a buffer's worth of address space is still there, and throws
//    std::bad_alloc (exit 4, out of memory) when it is not. Without a limit
//    nothing is checked.
//
// Whatever the user has set (OPENBLAS_CORETYPE, OPENBLAS_NUM_THREADS,
// GOTO_NUM_THREADS, OMP_NUM_THREADS) is left alone. The library is the one
// CMake found at build time (ATTN_BLAS_LIBRARY, its soname); it stays open for
// the life of the process.
#include <armadillo>  // first, as Armadillo asks: it declares the functions defined here

#include <cblas.h>
#include <dlfcn.h>
#include <sys/resource.h>

#include <cstdio>
#include <cstdlib>
#include <new>

#ifndef ATTN_BLAS_LIBRARY
#error "ATTN_BLAS_LIBRARY (the BLAS library's soname) is set by CMakeLists.txt"
#endif

namespace {

// The kernel this CPU should have, or nullptr to leave the choice to OpenBLAS.
const char* kernel_for_this_cpu() {
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

// A BLAS library that cannot be opened is a broken install (it is a package
// the program depends on): say so, and stop as main's internal errors do.
[[noreturn]] void broken_install(const char* what) {
  std::fprintf(stderr,
               "attn-trace: internal error: the BLAS library %s could not be used: %s (reinstall "
               "Debian's libopenblas0)\n",
               ATTN_BLAS_LIBRARY, what);
  std::_Exit(4);
}

struct Blas {
  bool memory_capped;  // an address-space or data limit is set
  decltype(&arma::dgemm_) dgemm;
  decltype(&arma::dgemv_) dgemv;
  decltype(&arma::dsyrk_) dsyrk;
  decltype(&arma::ddot_) ddot;
  decltype(&::cblas_dgemm) cblas_dgemm;
};

template <typename Function>
void bind(void* library, const char* name, Function& function) {
  function = reinterpret_cast<Function>(dlsym(library, name));
  if (!function) broken_install(dlerror());
}

bool memory_is_capped() {
  for (const int resource : {RLIMIT_AS, RLIMIT_DATA}) {
    rlimit limit{};
    if (getrlimit(resource, &limit) == 0 && limit.rlim_cur != RLIM_INFINITY) return true;
  }
  return false;
}

Blas open_blas() {
  if (!std::getenv("OPENBLAS_CORETYPE"))
    if (const char* kernel = kernel_for_this_cpu()) setenv("OPENBLAS_CORETYPE", kernel, 1);
  if (!threads_chosen_by_user()) setenv("OPENBLAS_NUM_THREADS", "1", 1);
  Blas blas{};
  blas.memory_capped = memory_is_capped();
  void* library = dlopen(ATTN_BLAS_LIBRARY, RTLD_NOW | RTLD_LOCAL);
  // Under a memory limit the likely reason is the limit ("failed to map
  // segment"): out of memory, exit 4, as any other allocation.
  if (!library && blas.memory_capped) throw std::bad_alloc();
  if (!library) broken_install(dlerror());
  bind(library, "dgemm_", blas.dgemm);
  bind(library, "dgemv_", blas.dgemv);
  bind(library, "dsyrk_", blas.dsyrk);
  bind(library, "ddot_", blas.ddot);
  bind(library, "cblas_dgemm", blas.cblas_dgemm);
  return blas;
}

// Opened by the first call, from whichever thread makes it (a static's
// initialisation runs once, the other threads waiting for it).
const Blas& blas() {
  static const Blas opened = open_blas();
  return opened;
}

// OpenBLAS's work buffer (BUFFER_SIZE of its x86-64 build, and a page).
constexpr std::size_t kWorkBuffer = (std::size_t{128} << 20) + 4096;

// The BLAS for a routine that takes a work buffer: under a memory limit, one
// that fails with bad_alloc rather than spin when no buffer can be had.
const Blas& blas_with_buffer() {
  const Blas& b = blas();
  if (b.memory_capped) {
    void* room = std::malloc(kWorkBuffer);
    if (!room) throw std::bad_alloc();
    std::free(room);
  }
  return b;
}

}  // namespace

// Armadillo's declarations (def_blas.hpp, with Fortran's hidden string lengths)
// and OpenBLAS's cblas.h: a definition that differs from them does not compile.
extern "C" {

void dgemm_(const char* transA, const char* transB, const arma::blas_int* m,
            const arma::blas_int* n, const arma::blas_int* k, const double* alpha, const double* A,
            const arma::blas_int* ldA, const double* B, const arma::blas_int* ldB,
            const double* beta, double* C, const arma::blas_int* ldC, arma::blas_len transA_len,
            arma::blas_len transB_len) {
  blas_with_buffer().dgemm(transA, transB, m, n, k, alpha, A, ldA, B, ldB, beta, C, ldC, transA_len,
                           transB_len);
}

void dgemv_(const char* transA, const arma::blas_int* m, const arma::blas_int* n,
            const double* alpha, const double* A, const arma::blas_int* ldA, const double* x,
            const arma::blas_int* incx, const double* beta, double* y, const arma::blas_int* incy,
            arma::blas_len transA_len) {
  blas_with_buffer().dgemv(transA, m, n, alpha, A, ldA, x, incx, beta, y, incy, transA_len);
}

void dsyrk_(const char* uplo, const char* transA, const arma::blas_int* n, const arma::blas_int* k,
            const double* alpha, const double* A, const arma::blas_int* ldA, const double* beta,
            double* C, const arma::blas_int* ldC, arma::blas_len uplo_len,
            arma::blas_len transA_len) {
  blas_with_buffer().dsyrk(uplo, transA, n, k, alpha, A, ldA, beta, C, ldC, uplo_len, transA_len);
}

double ddot_(const arma::blas_int* n, const double* x, const arma::blas_int* incx, const double* y,
             const arma::blas_int* incy) {
  return blas().ddot(n, x, incx, y, incy);
}

void cblas_dgemm(OPENBLAS_CONST enum CBLAS_ORDER Order, OPENBLAS_CONST enum CBLAS_TRANSPOSE TransA,
                 OPENBLAS_CONST enum CBLAS_TRANSPOSE TransB, OPENBLAS_CONST blasint M,
                 OPENBLAS_CONST blasint N, OPENBLAS_CONST blasint K, OPENBLAS_CONST double alpha,
                 OPENBLAS_CONST double* A, OPENBLAS_CONST blasint lda, OPENBLAS_CONST double* B,
                 OPENBLAS_CONST blasint ldb, OPENBLAS_CONST double beta, double* C,
                 OPENBLAS_CONST blasint ldc) {
  blas_with_buffer().cblas_dgemm(Order, TransA, TransB, M, N, K, alpha, A, lda, B, ldb, beta, C,
                                 ldc);
}

}  // extern "C"
