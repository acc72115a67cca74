// Tests of interval bounds through the trace (core/bounds): each rule against
// numbers worked by hand, against every corner of its input intervals, and
// trace_bounds on a lesson whose one step is known only to ±0.005.
#include "core/bounds.hpp"

#include <doctest/doctest.h>

#include <cmath>
#include <limits>

#include "core/lesson_library.hpp"
#include "core/pipeline.hpp"
#include "support/host_backend.hpp"

namespace {

using attn::Bounds;
constexpr double kInf = std::numeric_limits<double>::infinity();

// The interval mid ± radius, cell by cell.
Bounds around(const arma::mat& mid, const arma::mat& radius) {
  return {mid - radius, mid + radius};
}

// Every matrix whose cells are each at one end of B's interval, the k-th of 2^cells.
arma::mat corner(const Bounds& B, unsigned k) {
  arma::mat M = B.lo;
  for (arma::uword c = 0; c < M.n_elem; ++c)
    if ((k >> c) & 1u) M(c) = B.hi(c);
  return M;
}

}  // namespace

TEST_CASE("exact_bounds and transposed_bounds: lo = hi = the matrix, transposed cell for cell") {
  const arma::mat M = {{1.0, -2.0, 3.5}, {0.25, 0.0, -7.0}};
  const Bounds e = attn::exact_bounds(M);
  CHECK(arma::approx_equal(e.lo, M, "absdiff", 0.0));
  CHECK(arma::approx_equal(e.hi, M, "absdiff", 0.0));
  const Bounds t = attn::transposed_bounds({M, M + 1.0});
  REQUIRE(t.lo.n_rows == 3);
  REQUIRE(t.lo.n_cols == 2);
  CHECK(t.lo(2, 1) == -7.0);
  CHECK(t.hi(2, 1) == -6.0);
  CHECK(t.lo(0, 1) == 0.25);
  CHECK(t.hi(1, 0) == -1.0);
}

TEST_CASE("product_bounds: midpoint and radius worked by hand, and every corner inside") {
  // A = [1 ± 0.5, -2], B = [[3], [0.5 ± 0.25]]: the product 1·3 + (-2)·0.5 = 2,
  // radius |1|·0 + 0.5·|3| + |-2|·0.25 + 0.5·0 + 0·0.25 + 0 = 1.5 + 0.5 = 2.
  const Bounds A = around({{1.0, -2.0}}, {{0.5, 0.0}});
  const Bounds B = around(arma::mat(arma::colvec{3.0, 0.5}), arma::mat(arma::colvec{0.0, 0.25}));
  const Bounds P = attn::product_bounds(A, B);
  CHECK(P.lo(0, 0) == doctest::Approx(0.0));
  CHECK(P.hi(0, 0) == doctest::Approx(4.0));
  // The true range by the corners: 0.5·3 − 2·0.75 = 0 to 1.5·3 − 2·0.25 = 4.
  // A 2×2 by 2×2 product with every cell uncertain: all 2^8 corner pairs inside.
  const Bounds C = around({{0.5, -1.0}, {2.0, 0.25}}, {{0.1, 0.2}, {0.05, 0.3}});
  const Bounds D = around({{-0.75, 1.5}, {1.0, -0.5}}, {{0.25, 0.1}, {0.0, 0.4}});
  const Bounds CD = attn::product_bounds(C, D);
  arma::mat lowest(2, 2, arma::fill::value(kInf)), highest(2, 2, arma::fill::value(-kInf));
  for (unsigned i = 0; i < 16; ++i)
    for (unsigned j = 0; j < 16; ++j) {
      const arma::mat R = corner(C, i) * corner(D, j);
      lowest = arma::min(lowest, R);
      highest = arma::max(highest, R);
    }
  for (arma::uword c = 0; c < 4; ++c) {
    CAPTURE(c);
    CHECK(CD.lo(c) <= lowest(c) + 1e-15);
    CHECK(CD.hi(c) >= highest(c) - 1e-15);
  }
  // Cell (0,0) by hand: mid 0.5·-0.75 + -1·1 = -1.375; radius
  // |0.5|·0.25 + 0.1·0.75 + |-1|·0 + 0.2·1 + 0.1·0.25 + 0.2·0 = 0.125 + 0.075 + 0.2 + 0.025.
  CHECK(CD.lo(0, 0) == doctest::Approx(-1.375 - 0.425).epsilon(1e-14));
  CHECK(CD.hi(0, 0) == doctest::Approx(-1.375 + 0.425).epsilon(1e-14));
}

TEST_CASE("softmax_bounds: a weight is lowest with its score low and the others high") {
  // Row [0 ± 0.1, 1]: w_0 ∈ [1/(1 + e^1.1), 1/(1 + e^0.9)], w_1 the complement.
  const arma::mat weights = {{1.0 / (1.0 + std::exp(1.0)), 1.0 / (1.0 + std::exp(-1.0))}};
  const Bounds W = attn::softmax_bounds(around({{0.0, 1.0}}, {{0.1, 0.0}}), weights);
  CHECK(W.lo(0, 0) == doctest::Approx(1.0 / (1.0 + std::exp(1.1))).epsilon(1e-14));
  CHECK(W.hi(0, 0) == doctest::Approx(1.0 / (1.0 + std::exp(0.9))).epsilon(1e-14));
  CHECK(W.lo(0, 1) == doctest::Approx(1.0 / (1.0 + std::exp(-0.9))).epsilon(1e-14));
  CHECK(W.hi(0, 1) == doctest::Approx(1.0 / (1.0 + std::exp(-1.1))).epsilon(1e-14));
  // The midpoint weights lie inside.
  CHECK(W.lo(0, 0) < weights(0, 0));
  CHECK(weights(0, 0) < W.hi(0, 0));

  // A masked key (-inf) weighs exactly 0 and leaves the others' bounds alone;
  // a row whose every key is masked keeps the weights given for it (NaN here).
  const arma::mat S = {{0.5, -kInf}, {-kInf, -kInf}};
  const arma::mat given = {{1.0, 0.0}, {std::nan(""), std::nan("")}};
  const Bounds M = attn::softmax_bounds({S, S}, given);
  CHECK(M.lo(0, 0) == 1.0);
  CHECK(M.hi(0, 0) == 1.0);
  CHECK(M.lo(0, 1) == 0.0);
  CHECK(M.hi(0, 1) == 0.0);
  CHECK(std::isnan(M.lo(1, 0)));
  CHECK(std::isnan(M.hi(1, 1)));
}

TEST_CASE("trace_bounds: one score known to ±0.005 widens only the cells computed from it") {
  const attn::Lesson lesson = attn::find_lesson("river-bank");
  attn::testing::HostBackend cpu;
  const attn::Trace plain = attn::run_pipeline(lesson, cpu);
  // head0.scores[0,1] written as 1.68 (the trace's value is 1.6755...).
  arma::mat scores = plain.at("head0.scores").value;
  arma::umat given_cells(arma::size(scores), arma::fill::zeros);
  scores(0, 1) = 1.68;
  given_cells(0, 1) = 1;
  const attn::Overrides overrides{{"head0.scores", {scores, given_cells}}};
  const attn::Trace trace = attn::run_pipeline(lesson, cpu, overrides);
  Bounds written = attn::exact_bounds(scores);
  written.lo(0, 1) = 1.675;
  written.hi(0, 1) = 1.685;
  const attn::BoundsMap bounds = attn::trace_bounds(trace, overrides, {{"head0.scores", written}});

  const Bounds& s = bounds.at("head0.scores");
  CHECK(s.lo(0, 1) == 1.675);
  CHECK(s.hi(0, 1) == 1.685);
  CHECK(s.lo(1, 1) == s.hi(1, 1));  // a cell not given is exact
  // Every step before the scores is exact: its value, lo and hi equal.
  for (const char* id : {"X", "Q", "K", "V", "head0.Q", "head0.K"}) {
    CAPTURE(id);
    CHECK(arma::approx_equal(bounds.at(id).lo, trace.at(id).value, "absdiff", 0.0));
    CHECK(arma::approx_equal(bounds.at(id).hi, trace.at(id).value, "absdiff", 0.0));
  }
  // The scale (√4 = 2) divides the ends; exp is monotone.
  const Bounds& scaled = bounds.at("head0.scaled");
  CHECK(scaled.lo(0, 1) == doctest::Approx(1.675 / 2).epsilon(1e-15));
  CHECK(scaled.hi(0, 1) == doctest::Approx(1.685 / 2).epsilon(1e-15));
  const Bounds& e = bounds.at("head0.exp");
  CHECK(e.lo(0, 1) == doctest::Approx(std::exp(1.675 / 2)).epsilon(1e-14));
  CHECK(e.hi(0, 1) == doctest::Approx(std::exp(1.685 / 2)).epsilon(1e-14));
  // Row 0's weights widen, row 1's (another query) stay exact.
  const Bounds& w = bounds.at("head0.weights");
  CHECK(w.lo(0, 1) < trace.at("head0.weights").value(0, 1));
  CHECK(w.hi(0, 1) > trace.at("head0.weights").value(0, 1));
  CHECK(w.hi(0, 0) < plain.at("head0.weights").value(0, 0) + 1e-2);
  CHECK(w.lo(1, 2) == w.hi(1, 2));
  // And every value of the trace lies within its bounds.
  for (const attn::Step& step : trace.steps) {
    CAPTURE(step.id);
    const Bounds& b = bounds.at(step.id);
    CHECK(arma::all(arma::vectorise(b.lo <= step.value + 1e-12)));
    CHECK(arma::all(arma::vectorise(step.value <= b.hi + 1e-12)));
  }
}
