// Choosing a backend by name: the CPU backend, working; CUDA working or
// unavailable with the reason; an unknown name refused with the names that exist.
#include <doctest/doctest.h>

#include <cmath>
#include <memory>
#include <string>

#include "backend/backend.hpp"
#include "core/error.hpp"

TEST_CASE("make_backend: cpu by name, and it computes") {
  const std::unique_ptr<attn::Backend> cpu = attn::make_backend("cpu");
  CHECK(cpu->name() == "cpu");
  // By hand: [1 2; 3 4]·[0.5 0; 0 2] = [0.5 4; 1.5 8], and [1 2]·[3 4]ᵀ = 11.
  const arma::mat product = cpu->matmul({{1, 2}, {3, 4}}, {{0.5, 0}, {0, 2}});
  CHECK(arma::approx_equal(product, arma::mat{{0.5, 4}, {1.5, 8}}, "absdiff", 0.0));
  // One head, one query, two keys: q·k = [ln 3, 0], divided by 1, so the
  // weights are [3/4, 1/4] and the context 3/4·1 + 1/4·5 = 2.
  const arma::mat Q = {{std::log(3.0), 0.0}}, K = {{1.0, 0.0}, {0.0, 1.0}};
  const arma::mat V = arma::colvec{1.0, 5.0};
  const arma::umat open(1, 2, arma::fill::zeros);
  attn::AttentionInput in{Q, K, V, open};
  in.d_k = 2;
  in.d_v = 1;
  const std::vector<attn::HeadAttention> heads = cpu->attend(in);
  REQUIRE(heads.size() == 1);
  CHECK(heads[0][attn::HeadStep::scores](0, 0) == std::log(3.0));
  CHECK(heads[0][attn::HeadStep::weights](0, 0) == doctest::Approx(0.75).epsilon(1e-15));
  CHECK(heads[0][attn::HeadStep::weights](0, 1) == doctest::Approx(0.25).epsilon(1e-15));
  CHECK(heads[0][attn::HeadStep::row_sum](0, 0) == doctest::Approx(4.0).epsilon(1e-15));
  CHECK(heads[0][attn::HeadStep::context](0, 0) == doctest::Approx(2.0).epsilon(1e-15));
}

TEST_CASE("make_backend: cuda works or says why not, and an unknown name is refused") {
  // No plugin found (a build without CUDA; this test program has none beside
  // it): where it was looked for. A plugin but no usable device (CI): the
  // driver's reason. Either way exit 3 and a pointer to the CPU.
  try {
    const std::unique_ptr<attn::Backend> cuda = attn::make_backend("cuda");
    CHECK(cuda->name() == "cuda");
  } catch (const attn::BackendUnavailable& e) {
    const std::string why = e.what();
    CAPTURE(why);
    CHECK(
        (why.starts_with("no CUDA plugin: ") || why.starts_with("no CUDA device: ")));
    CHECK(why.find("--backend cpu") != std::string::npos);
  }
  CHECK_THROWS_WITH_AS(attn::make_backend("tpu"), "unknown backend 'tpu'; use cpu or cuda",
                       attn::InputError);
  CHECK_THROWS_AS(attn::make_backend("CPU"), attn::InputError);  // names are lower case
}
