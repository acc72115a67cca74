// The row functions the CUDA kernels share (backend/attention_rows.hpp) against
// the CPU's step functions (core/attention.hpp): the same operations in the same
// order, so equal bit for bit on the host, on rows read from column-major
// matrices with a stride.
#include <doctest/doctest.h>

#include <cmath>
#include <limits>
#include <random>

#include "backend/attention_rows.hpp"
#include "core/attention.hpp"

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

// Equal bit for bit, NaN equal to NaN.
bool identical(double a, double b) {
  return (std::isnan(a) && std::isnan(b)) || a == b;
}

// (n,m) cells of widely different magnitudes, where the order of a sum matters.
arma::mat uneven(std::size_t n, std::size_t m, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  arma::mat M(n, m);
  for (double& v : M)
    v = std::ldexp(static_cast<double>(rng() >> 11) * 0x1.0p-53, -int(rng() % 40));
  return M;
}

}  // namespace

TEST_CASE("attention rows: scale and mask equal scale_scores and apply_mask") {
  const arma::mat scores = uneven(3, 4, 1) * 7.0 - 2.0;
  arma::umat mask(3, 4, arma::fill::zeros);
  mask(0, 2) = attn::mask_causal;
  mask(2, 0) = attn::mask_keep | attn::mask_padding;
  const double divisor = std::sqrt(3.0);
  for (const double fill : {-kInf, -1e9}) {
    const arma::mat scaled = attn::scale_scores(scores, divisor);
    const arma::mat masked = attn::apply_mask(scaled, mask, fill);
    for (std::size_t c = 0; c < scores.n_elem; ++c) {
      CHECK(attn::rows::scale_score(scores(c), divisor) == scaled(c));
      CHECK(attn::rows::mask_cell(scaled(c), mask(c) != 0, fill) == masked(c));
    }
  }
}

TEST_CASE("attention rows: a row's sum is arma::sum's, left to right, bit for bit") {
  const arma::mat E = uneven(5, 9, 2);
  const arma::mat sums = attn::f64_arithmetic().row_sum(E);
  for (std::size_t i = 0; i < E.n_rows; ++i)
    CHECK(attn::rows::row_sum(E.memptr() + i, E.n_rows, E.n_cols) == sums(i, 0));
  CHECK(attn::rows::row_sum(E.memptr(), 1, 0) == 0.0);  // no keys
}

TEST_CASE("attention rows: softmax and its masked-row policy equal attention_weights") {
  // Row 0 open, row 1 partly -inf, row 2 all -inf, row 3 huge (exp overflows
  // without the max subtracted), row 4 all one finite fill.
  arma::mat masked = uneven(5, 6, 3) * 5.0;
  masked(1, 0) = masked(1, 4) = -kInf;
  masked.row(2).fill(-kInf);
  masked.row(3) += 800.0;
  masked.row(4).fill(-1e9);
  for (const attn::MaskedRowPolicy policy :
       {attn::MaskedRowPolicy::nan, attn::MaskedRowPolicy::zero, attn::MaskedRowPolicy::uniform}) {
    CAPTURE(static_cast<int>(policy));
    const arma::mat want = attn::attention_weights(attn::f64_arithmetic(), masked, policy);
    arma::mat got(masked.n_rows, masked.n_cols);
    for (std::size_t i = 0; i < masked.n_rows; ++i)
      attn::rows::row_softmax(masked.memptr() + i, got.memptr() + i, masked.n_rows, masked.n_cols,
                              policy);
    for (std::size_t c = 0; c < want.n_elem; ++c) CHECK(identical(got(c), want(c)));
    CHECK(got(4, 0) == doctest::Approx(1.0 / 6.0));  // a finite fill: uniform, no policy
  }
  CHECK(std::isnan(attn::rows::row_max(masked.memptr(), 5, 0)) == false);
  CHECK(attn::rows::row_max(masked.memptr() + 2, 5, 6) == -kInf);
}

TEST_CASE("attention rows: the kernels' cell and row steps fill every head's stacked blocks") {
  // Two heads of (2,3) scores, stacked; the mask shared by both heads.
  std::vector<double> scores = {1, 2, 3, 4, 5, 6, -1, -2, -3, -4, -5, -6};
  const std::vector<unsigned char> mask = {0, 0, 1, 1, 1, 1};  // keys 1 and 2, both rows
  std::vector<double> scaled(12), masked(12), exp(12), weights(12), sums(4);
  attn::rows::AttentionSteps a;
  a.n = 2;
  a.m = 3;
  a.heads = 2;
  a.divisor = 2.0;
  a.fill = -kInf;
  a.mask = mask.data();
  a.scores = scores.data();
  a.scaled = scaled.data();
  a.masked = masked.data();
  a.exp = exp.data();
  a.row_sum = sums.data();
  a.weights = weights.data();
  for (std::size_t c = 0; c < 12; ++c) attn::rows::scale_mask_exp_cell(a, c);
  for (std::size_t r = 0; r < 4; ++r) attn::rows::weights_row(a, r);
  CHECK(scaled[7] == -1.0);   // head 1, cell (1,0): -2 / 2
  CHECK(masked[8] == -kInf);  // head 1, cell (0,1): masked
  CHECK(exp[8] == 0.0);
  CHECK(sums[2] == std::exp(-0.5));  // head 1, row 0: only key 0 open
  CHECK(weights[6] == 1.0);
  CHECK(weights[2] == 0.0);
  // scores / divisor, then the softmax, in place: the forward plan's row step.
  std::vector<double> plan = {2, 0, 0, 2};  // one head of (2,2)
  attn::rows::scaled_softmax_row(plan.data(), 2, 2, 2.0, 0);
  CHECK(plan[0] == doctest::Approx(std::exp(1.0) / (std::exp(1.0) + 1.0)));
  CHECK(plan[2] == doctest::Approx(1.0 / (std::exp(1.0) + 1.0)));
  CHECK(plan[3] == 2.0);  // row 1 untouched
}
