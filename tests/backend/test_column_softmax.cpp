// The column softmax kernels (backend/column_softmax) against a plain loop,
// every kernel this CPU can run, on columns of every length around the
// vector widths.
#include <doctest/doctest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "backend/column_softmax.hpp"

TEST_CASE("column softmax: every kernel equals exp(s − max) / Σ, column by column") {
  const double inf = std::numeric_limits<double>::infinity();
  const std::vector<attn::SoftmaxKernel> kernels = attn::column_softmax_kernels();
  REQUIRE(kernels.back().name == "portable");
  CHECK(attn::column_softmax_kernel().name == kernels.front().name);
  for (const attn::SoftmaxKernel& kernel : kernels) {
    CAPTURE(kernel.name);
    for (std::size_t m : {1, 2, 3, 4, 5, 7, 8, 9, 15, 16, 17, 64, 101}) {
      CAPTURE(m);
      const std::size_t b = 3, ld = m + 2;  // two cells between columns, left alone
      std::vector<double> S(ld * b, 42.0);
      for (std::size_t j = 0; j < b; ++j)
        for (std::size_t i = 0; i < m; ++i)
          S[j * ld + i] = (j == 1 ? 800.0 : 0.0) + 3.0 * std::sin(0.9 * i + 2.1 * j);
      if (m > 2) S[2 * ld + m / 2] = -inf;  // a masked-like key weighs 0
      std::vector<double> expected = S;
      for (std::size_t j = 0; j < b; ++j) {
        double max = -inf, sum = 0.0;
        for (std::size_t i = 0; i < m; ++i) max = std::max(max, S[j * ld + i]);
        for (std::size_t i = 0; i < m; ++i) sum += std::exp(S[j * ld + i] - max);
        for (std::size_t i = 0; i < m; ++i)
          expected[j * ld + i] = std::exp(S[j * ld + i] - max) / sum;
      }
      kernel.run(S.data(), m, b, ld);
      for (std::size_t k = 0; k < S.size(); ++k) {
        CAPTURE(k);
        CHECK(S[k] == doctest::Approx(expected[k]).epsilon(1e-14));
      }
      if (m > 2) CHECK(S[2 * ld + m / 2] == 0.0);
    }
  }
}
