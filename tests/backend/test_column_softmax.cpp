// The column softmax kernels (backend/column_softmax) against a plain loop,
// every kernel this CPU can run, on columns of every length around the
// vector widths, within what two correct softmaxes may differ by
// (support/fp_bounds.hpp: SLEEF's exp and the vector's order of the sum).
#include <doctest/doctest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "backend/column_softmax.hpp"
#include "support/fp_bounds.hpp"

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
      // the columns as rows (b,m), for the bound of a row softmax
      arma::mat rows(b, m);
      for (std::size_t j = 0; j < b; ++j) {
        double max = -inf, sum = 0.0;
        for (std::size_t i = 0; i < m; ++i) max = std::max(max, S[j * ld + i]);
        for (std::size_t i = 0; i < m; ++i) sum += std::exp(S[j * ld + i] - max);
        for (std::size_t i = 0; i < m; ++i) {
          expected[j * ld + i] = std::exp(S[j * ld + i] - max) / sum;
          rows(j, i) = S[j * ld + i];
        }
      }
      const attn::testing::Bound bound = attn::testing::softmax_bound(rows);
      kernel.run(S.data(), m, b, ld);
      for (std::size_t j = 0; j < b; ++j)
        for (std::size_t k = j * ld; k < (j + 1) * ld; ++k) {
          CAPTURE(k);
          if (k - j * ld >= m) {
            CHECK(S[k] == 42.0);  // between columns: left alone
            continue;
          }
          const double limit = bound.limit(j, k - j * ld, S[k], expected[k]);
          CHECK(std::abs(S[k] - expected[k]) <= limit);
        }
      if (m > 2) CHECK(S[2 * ld + m / 2] == 0.0);
    }
  }
}
