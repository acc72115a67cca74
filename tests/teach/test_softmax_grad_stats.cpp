// Sampling the softmax's largest gradient entry (teach/softmax_grad_stats):
// a plain loop over the same draws, the two-key case against its closed form,
// and the documents' claim that the gradient vanishes as d_k grows unscaled.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "core/error.hpp"
#include "teach/softmax_grad_stats.hpp"

namespace {

// The rows' max a_i(1 − a_i), recomputed with plain loops from the same
// stream: q first, then each key, unit-variance components.
std::vector<double> plain_rows(std::uint64_t d_k, std::uint64_t keys, std::uint64_t rows,
                               std::uint64_t seed, bool scaled) {
  attn::NormalStream z(seed);
  std::vector<double> out;
  for (std::uint64_t r = 0; r < rows; ++r) {
    std::vector<double> q(d_k), s(keys);
    for (double& x : q) x = z.next();
    for (double& score : s) {
      score = 0;
      for (std::uint64_t i = 0; i < d_k; ++i) score += q[i] * z.next();
      if (scaled) score /= std::sqrt(static_cast<double>(d_k));
    }
    const double top = *std::max_element(s.begin(), s.end());
    double sum = 0;
    for (double score : s) sum += std::exp(score - top);
    double largest = 0;
    for (double score : s) {
      const double a = std::exp(score - top) / sum;
      largest = std::max(largest, a * (1 - a));
    }
    out.push_back(largest);
  }
  return out;
}

}  // namespace

TEST_CASE("sample_softmax_grad: the median and the vanished share of a plain loop's rows") {
  for (const bool scaled : {false, true}) {
    std::vector<double> rows = plain_rows(8, 3, 31, 5, scaled);
    std::sort(rows.begin(), rows.end());
    const double vanished = static_cast<double>(std::count_if(
                                rows.begin(), rows.end(), [](double x) { return x < 0.0025; })) /
                            31.0;
    const attn::SoftmaxGradStats s =
        attn::sample_softmax_grad({{8, 31, 5, attn::QkVectors::unit_variance}, 3, scaled});
    CHECK(s.median == doctest::Approx(rows[15]).epsilon(1e-12));
    CHECK(s.vanished == vanished);
    CHECK(s.median_error > 0);
  }
}

TEST_CASE("sample_softmax_grad: two keys, scaled: the median is 1/(4 cosh²(0.6745·√2/2))") {
  // s1 − s2 = q·(k1 − k2)/√d_k is close to N(0, 2) at d_k 400, and
  // a(1 − a) = 1/(4 cosh²(Δ/2)): its median is at |Δ| = √2·0.67449 = 0.95387.
  const double median = 1.0 / (4.0 * std::pow(std::cosh(0.95387 / 2.0), 2));
  const attn::SoftmaxGradStats s =
      attn::sample_softmax_grad({{400, 4000, 3, attn::QkVectors::unit_variance}, 2, true});
  CHECK(median == doctest::Approx(0.200763).epsilon(1e-5));
  CHECK(std::abs(s.median - median) < 0.006);
  CHECK(s.vanished <= 0.001);  // P(|Δ| > 5.99) ≈ 2e-5
}

TEST_CASE(
    "sample_softmax_grad: scaled, the typical row keeps ~0.21 at any d_k, unscaled it vanishes") {
  const auto stats = [](std::uint64_t d_k, bool scaled) {
    return attn::sample_softmax_grad({{d_k, 1500, 1, attn::QkVectors::unit_variance}, 9, scaled});
  };
  for (const std::uint64_t d_k : {4u, 64u, 256u}) {
    CHECK(std::abs(stats(d_k, true).median - 0.21) < 0.02);
    CHECK(stats(d_k, true).vanished == 0);
  }
  const attn::SoftmaxGradStats d4 = stats(4, false), d64 = stats(64, false),
                               d256 = stats(256, false);
  CHECK(d4.median > 0.2);
  CHECK(d64.median < 0.06);
  CHECK(d256.median < 0.0025);  // more than half the rows have vanished
  CHECK(d256.vanished > 0.5);
  CHECK(d64.vanished > 0.2);
}

TEST_CASE("sample_softmax_grad: validate: samples × (keys + 1) × d_k is capped") {
  CHECK_THROWS_AS(attn::validate(attn::SoftmaxGradSpec{
                      {256, 2000, 1, attn::QkVectors::unit_variance}, 9, false}),
                  attn::InputError);
  CHECK_NOTHROW(attn::validate(
      attn::SoftmaxGradSpec{{256, 1900, 1, attn::QkVectors::unit_variance}, 9, false}));
  CHECK_THROWS_AS(
      attn::validate(attn::SoftmaxGradSpec{{4, 100, 1, attn::QkVectors::unit_variance}, 0, false}),
      attn::InputError);
}
