// The CPU forward plan (backend/cpu_forward) against the traced pipeline: the
// same X and weights, W_Q, W_K, W_V the column blocks of W_QKV, give the
// trace's `output` step within twice the error a forward pass can make in any
// summation order (support/fp_bounds.hpp: the plan's blocked products and
// SLEEF exp, the trace's own, whichever OpenBLAS kernel runs).
#include <doctest/doctest.h>

#include <cmath>
#include <string>
#include <vector>

#include "backend/backend.hpp"
#include "backend/cpu_backend.hpp"
#include "backend/cpu_forward.hpp"
#include "core/error.hpp"
#include "core/parallel.hpp"
#include "core/pipeline.hpp"
#include "support/fp_bounds.hpp"

namespace {

// A fixed matrix with entries in [-scale, scale], different for each `seed`.
arma::mat wavy(std::size_t rows, std::size_t cols, double seed, double scale) {
  arma::mat M(rows, cols);
  for (std::size_t r = 0; r < rows; ++r)
    for (std::size_t c = 0; c < cols; ++c)
      M(r, c) = scale * std::sin(1.7 * static_cast<double>(r) + 0.37 * static_cast<double>(c) +
                                 0.11 * static_cast<double>(r * c) + seed);
  return M;
}

struct Case {
  std::size_t n, d, h;
  double x_scale;  // larger: sharper softmax rows
};

// What the trace's pipeline makes of X:(n,d) with W_QKV:(d,3d) and W_O:(d,d).
arma::mat traced_output(const Case& c, const arma::mat& X, const arma::mat& W_QKV,
                        const arma::mat& W_O) {
  attn::Lesson lesson;
  lesson.X = X;
  for (std::size_t i = 0; i < c.n; ++i) lesson.tokens.push_back("t" + std::to_string(i));
  lesson.heads = c.h;
  lesson.d_k = lesson.d_v = c.d / c.h;
  lesson.W_Q = W_QKV.cols(0, c.d - 1);
  lesson.W_K = W_QKV.cols(c.d, 2 * c.d - 1);
  lesson.W_V = W_QKV.cols(2 * c.d, 3 * c.d - 1);
  lesson.W_O = W_O;
  attn::CpuBackend cpu;
  return attn::run_pipeline(lesson, cpu).at("output").value;
}

// The plan's output against the trace's: cells beyond twice forward_error's
// bound (both are within it of the exact forward pass), as doctest shows them.
std::string beyond_forward_bound(const arma::mat& planned, const arma::mat& traced,
                                 const arma::mat& X, const arma::mat& W_QKV, const arma::mat& W_O,
                                 std::size_t heads) {
  const attn::testing::Carried exact = attn::testing::forward_error(X, W_QKV, W_O, heads);
  const attn::testing::Bound bound{2.0 * exact.error, arma::zeros(arma::size(exact.error))};
  const attn::testing::Excess excess =
      attn::testing::beyond_bound(planned, traced, bound, "the trace's");
  MESSAGE("largest |plan − trace| " << excess.worst << " of the bound");
  return excess.first;
}

arma::mat planned_output(attn::ForwardPlan& plan, const arma::mat& X) {
  arma::mat out(X.n_rows, X.n_cols, arma::fill::value(arma::datum::nan));
  plan.upload(X.memptr());
  plan.compute();
  plan.download(out.memptr());
  return out;
}

}  // namespace

TEST_CASE("cpu forward plan: output equals the traced pipeline's output step, within the bound") {
  // n = 1; d_k = 1; one head; blocks of 256 queries with a short last one
  // (300, and 513 = 2·256 + 1).
  const Case cases[] = {{1, 4, 2, 1.0},    {5, 3, 3, 1.0},   {37, 24, 3, 1.0}, {8, 8, 1, 4.0},
                        {130, 16, 4, 2.0}, {64, 32, 8, 3.0}, {300, 8, 2, 2.0}, {513, 4, 1, 1.0}};
  for (const Case& c : cases) {
    CAPTURE(c.n);
    CAPTURE(c.d);
    CAPTURE(c.h);
    const arma::mat X = wavy(c.n, c.d, 0.3, c.x_scale);
    const arma::mat W_QKV = wavy(c.d, 3 * c.d, 1.1, 1.0 / std::sqrt(static_cast<double>(c.d)));
    const arma::mat W_O = wavy(c.d, c.d, 2.9, 1.0 / std::sqrt(static_cast<double>(c.d)));
    const arma::mat expected = traced_output(c, X, W_QKV, W_O);
    auto plan = attn::plan_cpu_forward({c.n, c.d, c.h}, W_QKV, W_O);
    const arma::mat got = planned_output(*plan, X);
    REQUIRE(got.n_rows == c.n);
    CHECK(beyond_forward_bound(got, expected, X, W_QKV, W_O, c.h) == "");
    // Run again on other input: nothing of the first run is left in the plan.
    const arma::mat X2 = wavy(c.n, c.d, 5.0, c.x_scale);
    CHECK(beyond_forward_bound(planned_output(*plan, X2), traced_output(c, X2, W_QKV, W_O), X2,
                               W_QKV, W_O, c.h) == "");
    CHECK(plan->bytes() == attn::cpu_forward_bytes({c.n, c.d, c.h}, attn::parallel_threads()));
  }
}

TEST_CASE("cpu forward plan: a cell moved past the bound fails, and the bound is small") {
  const Case c{37, 24, 3, 1.0};
  const arma::mat X = wavy(c.n, c.d, 0.3, c.x_scale);
  const arma::mat W_QKV = wavy(c.d, 3 * c.d, 1.1, 1.0 / std::sqrt(static_cast<double>(c.d)));
  const arma::mat W_O = wavy(c.d, c.d, 2.9, 1.0 / std::sqrt(static_cast<double>(c.d)));
  const attn::testing::Carried exact = attn::testing::forward_error(X, W_QKV, W_O, c.h);
  // Far below what a wrong step would change, far above double's rounding.
  CHECK(exact.error.max() < 1e-13);
  CHECK(exact.error.max() > 1e-16);
  auto plan = attn::plan_cpu_forward({c.n, c.d, c.h}, W_QKV, W_O);
  arma::mat got = planned_output(*plan, X);
  got(5, 7) = exact.value(5, 7) + 1.5 * 2.0 * exact.error(5, 7);
  const std::string found =
      beyond_forward_bound(got, traced_output(c, X, W_QKV, W_O), X, W_QKV, W_O, c.h);
  CHECK(found.rfind("cell (5,7) is ", 0) == 0);
}

TEST_CASE("cpu forward plan: bytes are the weights, activations and one scores block a thread") {
  const std::size_t n = 300, d = 16, threads = 2, b = attn::attention_block(n);
  CHECK(b <= n);
  CHECK(attn::cpu_forward_bytes({n, d, 4}, threads) ==
        8 * (3 * d * d + d * d + n * d + 3 * n * d + n * d + n * d + threads * n * b));
  CHECK(attn::attention_block(3) == 3);  // never more queries than there are
}

TEST_CASE("cpu forward plan: through the backend seam, and shapes it refuses") {
  const std::unique_ptr<attn::Backend> cpu = attn::make_backend("cpu");
  const arma::mat W_QKV = wavy(6, 18, 0.5, 0.4), W_O = wavy(6, 6, 0.7, 0.4);
  const arma::mat X = wavy(3, 6, 0.1, 1.0);
  auto plan = cpu->plan_forward({3, 6, 2}, W_QKV, W_O);
  CHECK(beyond_forward_bound(planned_output(*plan, X), traced_output({3, 6, 2, 1.0}, X, W_QKV, W_O),
                             X, W_QKV, W_O, 2) == "");
  CHECK_THROWS_AS(cpu->plan_forward({3, 6, 4}, W_QKV, W_O), attn::InputError);  // 4 ∤ 6
  CHECK_THROWS_AS(cpu->plan_forward({0, 6, 2}, W_QKV, W_O), attn::InputError);
  CHECK_THROWS_AS(cpu->plan_forward({3, 6, 2}, W_O, W_O), attn::InputError);
  CHECK_THROWS_AS(cpu->plan_forward({3, 6, 2}, W_QKV, W_QKV), attn::InputError);
  CHECK_THROWS_WITH_AS(cpu->plan_forward({3, 6, 4}, W_QKV, W_O),
                       doctest::Contains("not divisible by heads = 4"), attn::InputError);
}
