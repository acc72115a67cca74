// The softmax kernel for CPUs with AVX-512: 8 doubles at a time, exp by SLEEF
// (Sleef_expd8_u10avx512f, 1 ulp). CMakeLists.txt compiles this file alone
// with -mavx512f, and column_softmax_kernels() calls it only on a CPU that has
// AVX-512. So that no inline function of a shared header is compiled here
// with AVX-512 instructions (the linker could keep that copy for every
// caller), this file includes no C++ header: column_softmax.hpp declares the
// function, and a mismatch would fail to link.
// GCC 12's AVX-512 intrinsics start their results from _mm512_undefined_pd(),
// a variable initialised with itself, which -Wmaybe-uninitialized reports
// inside the header as soon as they are inlined; it is not a fault of ours.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>
#include <sleef.h>

#include <cstddef>

namespace attn {

// S:(m,b) -> weights:(m,b), one column at a time; the last m mod 8 keys of a
// column through masked loads and stores.
void column_softmax_avx512(double* S, std::size_t m, std::size_t b, std::size_t ld) {
  const std::size_t whole = m - m % 8;
  const __mmask8 tail = static_cast<__mmask8>((1u << (m % 8)) - 1);
  const __m512d minus_inf = _mm512_set1_pd(-__builtin_inf());
  for (std::size_t j = 0; j < b; ++j) {
    double* s = S + j * ld;
    __m512d max8 = minus_inf;
    for (std::size_t i = 0; i < whole; i += 8) max8 = _mm512_max_pd(max8, _mm512_loadu_pd(s + i));
    max8 = _mm512_max_pd(max8, _mm512_mask_loadu_pd(minus_inf, tail, s + whole));
    const __m512d max = _mm512_set1_pd(_mm512_reduce_max_pd(max8));

    __m512d sum8 = _mm512_setzero_pd();
    for (std::size_t i = 0; i < whole; i += 8) {
      const __m512d e = Sleef_expd8_u10avx512f(_mm512_sub_pd(_mm512_loadu_pd(s + i), max));
      _mm512_storeu_pd(s + i, e);
      sum8 = _mm512_add_pd(sum8, e);
    }
    if (tail) {
      const __m512d x = _mm512_mask_loadu_pd(max, tail, s + whole);  // padding: exp(0)
      const __m512d e = Sleef_expd8_u10avx512f(_mm512_sub_pd(x, max));
      _mm512_mask_storeu_pd(s + whole, tail, e);
      sum8 = _mm512_mask_add_pd(sum8, tail, sum8, e);
    }
    const __m512d inverse = _mm512_set1_pd(1.0 / _mm512_reduce_add_pd(sum8));

    for (std::size_t i = 0; i < whole; i += 8)
      _mm512_storeu_pd(s + i, _mm512_mul_pd(_mm512_loadu_pd(s + i), inverse));
    _mm512_mask_storeu_pd(s + whole, tail,
                          _mm512_mul_pd(_mm512_maskz_loadu_pd(tail, s + whole), inverse));
  }
}

}  // namespace attn
