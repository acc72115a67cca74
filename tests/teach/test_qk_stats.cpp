// Sampling q·k (teach/qk_stats): the generator's first numbers, the moments
// against theory within their standard errors, and the option limits.
#include <doctest/doctest.h>

#include <cmath>

#include "core/error.hpp"
#include "teach/qk_stats.hpp"

TEST_CASE("NormalStream: SplitMix64 + Box–Muller gives the documented numbers") {
  // Computed by tests/cli/test_stats.py's independent Python implementation.
  attn::NormalStream z(1);
  CHECK(z.next() == doctest::Approx(-0.028249746095854695).epsilon(1e-14));
  CHECK(z.next() == doctest::Approx(-1.065617648414326).epsilon(1e-14));
  CHECK(z.next() == doctest::Approx(-0.2279195228676347).epsilon(1e-14));
  CHECK(z.next() == doctest::Approx(0.0830941684715009).epsilon(1e-14));
}

TEST_CASE("sample_qk: Var(q·k) = d_k, then 1 after √d_k — unit vectors: 1/d_k, never past ±1") {
  attn::QkSampleSpec spec{64, 20000, 9, attn::QkVectors::unit_variance};
  const attn::QkStats a = attn::sample_qk(spec);
  for (const attn::Estimate* e : {&a.raw.mean, &a.raw.variance, &a.scaled.variance, &a.scaled.std})
    CHECK(std::abs(e->value - e->theory) <= 4 * e->standard_error);
  CHECK(a.raw.variance.theory == 64);
  CHECK(a.scaled.variance.theory == 1);
  CHECK(a.raw.beyond_3.value > 0.6);
  spec.vectors = attn::QkVectors::unit_length;
  const attn::QkStats b = attn::sample_qk(spec);
  CHECK(std::abs(b.raw.std.value - 0.125) <= 4 * b.raw.std.standard_error);
  CHECK(b.raw.beyond_3.value == 0);
  CHECK(attn::sample_qk(spec).raw.variance.value == b.raw.variance.value);  // same seed
}

TEST_CASE("validate: d_k from 1, at least 30 samples, samples × d_k capped") {
  CHECK_THROWS_AS(attn::validate({0, 100, 1, attn::QkVectors::unit_variance}), attn::InputError);
  CHECK_THROWS_AS(attn::validate({4, 1, 1, attn::QkVectors::unit_variance}), attn::InputError);
  CHECK_THROWS_AS(attn::validate({1000, 10000, 1, attn::QkVectors::unit_variance}),
                  attn::InputError);
  CHECK_THROWS_AS(attn::validate({4, 29, 1, attn::QkVectors::unit_variance}), attn::InputError);
  CHECK_NOTHROW(attn::validate({1, 30, 0, attn::QkVectors::unit_length}));
}
