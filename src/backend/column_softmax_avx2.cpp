// The softmax kernel for CPUs with AVX2 and FMA: 4 doubles at a time, exp by
// SLEEF (Sleef_expd4_u10avx2, 1 ulp). CMakeLists.txt compiles this file alone
// with -mavx2 -mfma, and column_softmax_kernels() calls it only on a CPU that
// has both; like column_softmax_avx512.cpp it includes no C++ header, so that
// no shared inline function is compiled here with AVX2 instructions.
#include <immintrin.h>
#include <sleef.h>

#include <cstddef>

namespace attn {

// S:(m,b) -> weights:(m,b), one column at a time; the last m mod 4 keys of a
// column through a padded copy.
void column_softmax_avx2(double* S, std::size_t m, std::size_t b, std::size_t ld) {
  const std::size_t whole = m - m % 4;
  const double minus_inf = -__builtin_inf();
  for (std::size_t j = 0; j < b; ++j) {
    double* s = S + j * ld;
    double rest[4] = {minus_inf, minus_inf, minus_inf, minus_inf};
    for (std::size_t i = whole; i < m; ++i) rest[i - whole] = s[i];

    __m256d max4 = _mm256_loadu_pd(rest);
    for (std::size_t i = 0; i < whole; i += 4) max4 = _mm256_max_pd(max4, _mm256_loadu_pd(s + i));
    double lanes[4];
    _mm256_storeu_pd(lanes, max4);
    double top = lanes[0];
    for (double lane : lanes) top = lane > top ? lane : top;
    const __m256d max = _mm256_set1_pd(top);

    __m256d sum4 = _mm256_setzero_pd();
    for (std::size_t i = 0; i < whole; i += 4) {
      const __m256d e = Sleef_expd4_u10avx2(_mm256_sub_pd(_mm256_loadu_pd(s + i), max));
      _mm256_storeu_pd(s + i, e);
      sum4 = _mm256_add_pd(sum4, e);
    }
    // The padding of `rest` is -inf: its exp is 0 and adds nothing.
    const __m256d e_rest = Sleef_expd4_u10avx2(_mm256_sub_pd(_mm256_loadu_pd(rest), max));
    _mm256_storeu_pd(rest, e_rest);
    for (std::size_t i = whole; i < m; ++i) s[i] = rest[i - whole];
    sum4 = _mm256_add_pd(sum4, e_rest);
    _mm256_storeu_pd(lanes, sum4);
    const __m256d inverse = _mm256_set1_pd(1.0 / (lanes[0] + lanes[1] + lanes[2] + lanes[3]));

    for (std::size_t i = 0; i < whole; i += 4)
      _mm256_storeu_pd(s + i, _mm256_mul_pd(_mm256_loadu_pd(s + i), inverse));
    for (std::size_t i = whole; i < m; ++i) s[i] *= _mm256_cvtsd_f64(inverse);
  }
}

}  // namespace attn
