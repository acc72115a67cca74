// Choosing a backend by name: the CPU backend, working; CUDA unavailable in
// this build; an unknown name refused with the names that exist.
#include <doctest/doctest.h>

#include <cmath>
#include <memory>

#include "backend/backend.hpp"
#include "core/error.hpp"

TEST_CASE("make_backend: cpu by name, and it computes") {
  const std::unique_ptr<attn::Backend> cpu = attn::make_backend("cpu");
  CHECK(cpu->name() == "cpu");
  // By hand: [1 2; 3 4]·[0.5 0; 0 2] = [0.5 4; 1.5 8], and [1 2]·[3 4]ᵀ = 11.
  const arma::mat product = cpu->matmul({{1, 2}, {3, 4}}, {{0.5, 0}, {0, 2}});
  CHECK(arma::approx_equal(product, arma::mat{{0.5, 4}, {1.5, 8}}, "absdiff", 0.0));
  CHECK(cpu->matmul_transposed({{1, 2}}, {{3, 4}})(0, 0) == 11.0);
  const arma::mat weights = cpu->row_softmax({{0.0, std::log(3.0)}});
  CHECK(weights(0, 0) == doctest::Approx(0.25).epsilon(1e-15));
  CHECK(weights(0, 1) == doctest::Approx(0.75).epsilon(1e-15));
}

TEST_CASE("make_backend: cuda unavailable in this build, an unknown name refused") {
  CHECK_THROWS_WITH_AS(attn::make_backend("cuda"), doctest::Contains("Use --backend cpu"),
                       attn::BackendUnavailable);
  CHECK_THROWS_WITH_AS(attn::make_backend("tpu"), "unknown backend 'tpu'; use cpu or cuda",
                       attn::InputError);
  CHECK_THROWS_AS(attn::make_backend("CPU"), attn::InputError);  // names are lower case
}
