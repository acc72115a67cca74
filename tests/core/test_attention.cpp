// Tests of attention's step functions and their composition (core/attention):
// numbers worked by hand, and every step of two causal heads against the
// plain loops of support/plain_reference.hpp within support/fp_bounds.hpp.
#include "core/attention.hpp"

#include <doctest/doctest.h>

#include <cmath>
#include <limits>
#include <random>

#include "support/fp_bounds.hpp"
#include "support/plain_reference.hpp"
#include "support/random_lesson.hpp"

namespace {

using attn::HeadStep;
using attn::MaskedRowPolicy;
namespace plain = attn::testing::plain;
constexpr double kInf = std::numeric_limits<double>::infinity();

}  // namespace

TEST_CASE("split_head: head h's columns h·w to (h+1)·w − 1, the values unchanged") {
  const arma::mat M = {{1, 2, 3, 4, 5, 6}, {7, 8, 9, 10, 11, 12}};
  const arma::mat h1 = attn::split_head(M, 1, 2);
  CHECK(arma::approx_equal(h1, arma::mat{{3, 4}, {9, 10}}, "absdiff", 0.0));
  CHECK(arma::approx_equal(attn::split_head(M, 2, 2), arma::mat{{5, 6}, {11, 12}}, "absdiff", 0.0));
  CHECK(arma::approx_equal(attn::split_head(M, 5, 1), arma::mat(arma::colvec{6, 12}), "absdiff",
                           0.0));
}

TEST_CASE("scale_scores and apply_mask: a division per cell, masked cells replaced by the fill") {
  const arma::mat scores = {{1.0, -3.0}, {0.5, 8.0}};
  const arma::mat scaled = attn::scale_scores(scores, 2.0);
  CHECK(arma::approx_equal(scaled, arma::mat{{0.5, -1.5}, {0.25, 4.0}}, "absdiff", 0.0));
  const arma::umat mask = {{0, attn::mask_causal}, {attn::mask_padding | attn::mask_keep, 0}};
  const arma::mat masked = attn::apply_mask(scaled, mask, -kInf);
  CHECK(masked(0, 0) == 0.5);
  CHECK(masked(0, 1) == -kInf);
  CHECK(masked(1, 0) == -kInf);
  CHECK(masked(1, 1) == 4.0);
  const arma::mat filled = attn::apply_mask(scaled, mask, -1e9);
  CHECK(filled(0, 1) == -1e9);
  CHECK(filled(1, 1) == 4.0);
}

TEST_CASE("attention_weights: the row softmax by hand, stable for huge scores, each policy") {
  const attn::Arithmetic& f64 = attn::f64_arithmetic();
  // exp(0) : exp(ln 3) = 1 : 3
  const arma::mat w = attn::attention_weights(f64, {{0.0, std::log(3.0)}}, MaskedRowPolicy::nan);
  CHECK(w(0, 0) == doctest::Approx(0.25).epsilon(1e-15));
  CHECK(w(0, 1) == doctest::Approx(0.75).epsilon(1e-15));
  // 1000 would overflow exp without the row max subtracted.
  const arma::mat big =
      attn::attention_weights(f64, {{1000.0, 1000.0 - std::log(3.0)}}, MaskedRowPolicy::nan);
  CHECK(big(0, 0) == doctest::Approx(0.75).epsilon(1e-13));
  CHECK(big(0, 1) == doctest::Approx(0.25).epsilon(1e-13));
  // A masked key weighs 0; a row with no key: NaN, 0 or 1/m by the policy.
  const arma::mat rows = {{2.0, -kInf, 2.0}, {-kInf, -kInf, -kInf}};
  const arma::mat nan = attn::attention_weights(f64, rows, MaskedRowPolicy::nan);
  CHECK(nan(0, 0) == doctest::Approx(0.5).epsilon(1e-15));
  CHECK(nan(0, 1) == 0.0);
  CHECK(std::isnan(nan(1, 0)));
  CHECK(std::isnan(nan(1, 2)));
  const arma::mat zero = attn::attention_weights(f64, rows, MaskedRowPolicy::zero);
  CHECK(zero(1, 1) == 0.0);
  CHECK(zero(0, 2) == doctest::Approx(0.5).epsilon(1e-15));
  const arma::mat uniform = attn::attention_weights(f64, rows, MaskedRowPolicy::uniform);
  CHECK(uniform(1, 0) == 1.0 / 3.0);
  CHECK(uniform(1, 2) == 1.0 / 3.0);
}

TEST_CASE("attend_steps: every step of two causal heads against the plain loops") {
  using namespace attn::testing;
  std::mt19937_64 rng(11);
  const std::size_t n = 4, m = 4, heads = 2, d_k = 3, d_v = 2;
  const arma::mat Q = random_matrix(rng, n, heads * d_k), K = random_matrix(rng, m, heads * d_k),
                  V = random_matrix(rng, m, heads * d_v);
  arma::umat mask(n, m, arma::fill::zeros);
  for (std::size_t i = 0; i < n; ++i)
    for (std::size_t j = i + 1; j < m; ++j) mask(i, j) = attn::mask_causal;
  attn::AttentionInput in{Q, K, V, mask};
  in.heads = heads;
  in.d_k = d_k;
  in.d_v = d_v;
  in.divisor = std::sqrt(3.0);
  in.fill = -kInf;
  const std::vector<attn::HeadAttention> got = attn::attend_steps(in, attn::f64_arithmetic());
  REQUIRE(got.size() == heads);
  for (std::size_t h = 0; h < heads; ++h) {
    CAPTURE(h);
    const attn::HeadAttention& a = got[h];
    const auto within = [&](HeadStep s, const arma::mat& want, const Bound& bound) {
      CAPTURE(attn::head_step_id(h, s));
      const Excess e = beyond_bound(a[s], want, bound);
      CHECK_MESSAGE(e.cells == 0, e.first);
    };
    const arma::mat Qh = plain::columns(Q, h * d_k, d_k), Kh = plain::columns(K, h * d_k, d_k),
                    Vh = plain::columns(V, h * d_v, d_v);
    within(HeadStep::Q, Qh, exact_bound(n, d_k));
    within(HeadStep::K, Kh, exact_bound(m, d_k));
    within(HeadStep::V, Vh, exact_bound(m, d_v));
    within(HeadStep::scores, plain::matmul_transposed(Qh, Kh), product_bound(Qh, Kh.t()));
    within(HeadStep::scaled, plain::divide(a[HeadStep::scores], in.divisor),
           elementwise_bound(n, m, 2));
    within(HeadStep::masked, plain::mask(a[HeadStep::scaled], mask, -kInf), exact_bound(n, m));
    within(HeadStep::exp, plain::exp_cells(a[HeadStep::masked]), library_bound(n, m));
    within(HeadStep::row_sum, plain::row_sum(a[HeadStep::exp]), row_sum_bound(a[HeadStep::exp]));
    within(HeadStep::weights, plain::row_softmax(a[HeadStep::masked], MaskedRowPolicy::nan),
           softmax_bound(a[HeadStep::masked]));
    within(HeadStep::context, plain::matmul(a[HeadStep::weights], Vh),
           product_bound(a[HeadStep::weights], Vh));
    // Causal by hand: query 0 sees key 0 alone, with weight 1 and V's row 0.
    CHECK(a[HeadStep::masked](0, 1) == -kInf);
    CHECK(a[HeadStep::exp](0, 3) == 0.0);
    CHECK(a[HeadStep::weights](0, 0) == 1.0);
    CHECK(a[HeadStep::context](0, 1) == doctest::Approx(Vh(0, 1)).epsilon(1e-15));
  }
}

TEST_CASE("attend_steps: given exponentials make the weights exp / row_sum, as on paper") {
  const arma::mat Q(arma::colvec{1.0, 0.0}), K(arma::colvec{1.0, 2.0}), V(arma::colvec{10.0, 20.0});
  const arma::umat mask(2, 2, arma::fill::zeros);
  attn::AttentionInput in{Q, K, V, mask};
  in.d_k = 1;
  in.d_v = 1;
  attn::StepHook hook;
  // A learner wrote exp = 1 and 3 in row 0: the sum is 4, the weights 1/4 and 3/4.
  hook.computed = [](std::size_t, HeadStep step, arma::mat& value) {
    if (step != HeadStep::exp) return;
    value(0, 0) = 1.0;
    value(0, 1) = 3.0;
  };
  hook.replaced = [](std::size_t, HeadStep step) { return step == HeadStep::exp; };
  const attn::HeadAttention a = attn::attend_steps(in, attn::f64_arithmetic(), &hook).at(0);
  CHECK(a[HeadStep::row_sum](0, 0) == 4.0);
  CHECK(a[HeadStep::weights](0, 0) == 0.25);
  CHECK(a[HeadStep::weights](0, 1) == 0.75);
  CHECK(a[HeadStep::context](0, 0) == doctest::Approx(0.25 * 10 + 0.75 * 20).epsilon(1e-15));
  // Row 1 (scores 0 and 0) is untouched: exp 1 and 1, weights 1/2 each.
  CHECK(a[HeadStep::row_sum](1, 0) == 2.0);
  CHECK(a[HeadStep::weights](1, 1) == 0.5);
}
