// Tests of the on-paper arithmetic of one cell and of the single-term slips,
// on the river-bank lesson (document 000, section 3) and its real mistakes.
#include <doctest/doctest.h>

#include <memory>

#include "backend/backend.hpp"
#include "core/error.hpp"
#include "core/lesson_library.hpp"
#include "core/pipeline.hpp"
#include "teach/cell_arithmetic.hpp"

namespace attn {

namespace {

struct RiverBank {
  Lesson lesson = find_lesson("river-bank");
  std::unique_ptr<Backend> backend = make_backend("cpu");
  Trace trace = run_pipeline(lesson, *backend);
};

double total(const CellSum& sum) {
  double s = sum.bias.value_or(0.0);
  for (const ProductTerm& t : sum.terms) s += t.product();
  return s;
}

}  // namespace

TEST_CASE("cell_sum writes a projection cell as X row times W column") {
  RiverBank rb;
  // K(bank)[d3] = 0.5×0.3 + 0.3×0.2 + 0.6×0.1 + 0.2×0.9 = 0.15 + 0.06 + 0.06 + 0.18 = 0.45
  const std::optional<CellSum> sum = cell_sum(rb.lesson, rb.trace, "K", 1, 3);
  REQUIRE(sum);
  REQUIRE(sum->terms.size() == 4);
  const double products[] = {0.15, 0.06, 0.06, 0.18};
  for (std::size_t k = 0; k < 4; ++k)
    CHECK(sum->terms[k].product() == doctest::Approx(products[k]));
  CHECK(sum->terms[2].left_ref.label == "X[bank,d2]");
  CHECK(sum->terms[2].right_ref.label == "W_K[d2,d3]");
  CHECK(sum->value == doctest::Approx(0.45).epsilon(1e-12));
  CHECK(total(*sum) == doctest::Approx(sum->value).epsilon(1e-12));
  CHECK_FALSE(sum->bias);

  SUBCASE("a head slice is the same column of the projection") {
    const std::optional<CellSum> slice = cell_sum(rb.lesson, rb.trace, "head0.K", 1, 3);
    REQUIRE(slice);
    CHECK(slice->step == "head0.K");
    CHECK(slice->terms[2].right_ref.label == "W_K[d2,d3]");
    CHECK(slice->value == doctest::Approx(0.45).epsilon(1e-12));
  }
}

TEST_CASE("cell_sum writes scores and context as dot products, matching a plain loop") {
  RiverBank rb;
  const std::optional<CellSum> score = cell_sum(rb.lesson, rb.trace, "head0.scores", 0, 1);
  REQUIRE(score);
  // Q(river)·K(bank) = 0.69×0.66 + 0.50×0.54 + 0.86×0.66 + 0.85×0.45 = 1.6755
  CHECK(score->value == doctest::Approx(1.6755).epsilon(1e-12));
  CHECK(score->terms[3].left == doctest::Approx(0.85));
  CHECK(score->terms[3].right == doctest::Approx(0.45));
  CHECK(score->terms[3].left_ref.label == "head0.Q[river,d3]");
  CHECK(score->terms[3].right_ref.label == "head0.K[bank,d3]");

  const arma::mat& A = rb.trace.at("head0.weights").value;
  const arma::mat& V = rb.trace.at("head0.V").value;
  for (std::size_t c = 0; c < V.n_cols; ++c) {
    const std::optional<CellSum> ctx = cell_sum(rb.lesson, rb.trace, "head0.context", 2, c);
    REQUIRE(ctx);
    double loop = 0;
    for (std::size_t j = 0; j < A.n_cols; ++j) loop += A(2, j) * V(j, c);
    CHECK(total(*ctx) == doctest::Approx(loop).epsilon(1e-12));
    CHECK(ctx->value == doctest::Approx(loop).epsilon(1e-12));
  }
}

TEST_CASE("cell_sum: steps that are not sums of products, and cells outside the matrix") {
  RiverBank rb;
  CHECK_FALSE(cell_sum(rb.lesson, rb.trace, "head0.weights", 0, 0));
  CHECK_FALSE(cell_sum(rb.lesson, rb.trace, "head0.scaled", 0, 0));
  CHECK_THROWS_AS(cell_sum(rb.lesson, rb.trace, "head0.scores", 4, 0), InputError);
  CHECK_THROWS_WITH_AS(cell_sum(rb.lesson, rb.trace, "head0.nope", 0, 0),
                       doctest::Contains("valid ids"), InputError);
}

TEST_CASE("single_term_slips finds the document's K(bank) slip: 0.6×0.1 written as 0.12") {
  RiverBank rb;
  const CellSum sum = *cell_sum(rb.lesson, rb.trace, "K", 1, 3);
  const std::vector<TermSlip> slips = single_term_slips(rb.lesson, rb.trace, sum, 0.51, 0.005);
  REQUIRE_FALSE(slips.empty());
  bool third_term = false;
  for (const TermSlip& s : slips) {
    CHECK(s.kind == SlipKind::wrong_entry);
    if (s.term == 2) {
      third_term = true;
      CHECK(s.true_product == doctest::Approx(0.06));
      CHECK(s.written_product == doctest::Approx(0.12));
    }
  }
  CHECK(third_term);
  CHECK(slips.front().cause.find("instead of") != std::string::npos);
}

TEST_CASE("single_term_slips: the document's 1.727 carries its own K(bank)[d3] = 0.51") {
  RiverBank rb;
  const CellSum sum = *cell_sum(rb.lesson, rb.trace, "head0.scores", 0, 1);
  const std::vector<StatedValue> stated = {{"K", 1, 3, 0.51, "the document's K(bank)"}};
  const std::vector<TermSlip> slips =
      single_term_slips(rb.lesson, rb.trace, sum, 1.727, 0.0005, stated);
  REQUIRE_FALSE(slips.empty());
  CHECK(slips.front().kind == SlipKind::stated_value);
  CHECK(slips.front().term == 3);
  CHECK(slips.front().true_product == doctest::Approx(0.85 * 0.45));
  CHECK(slips.front().written_product == doctest::Approx(0.85 * 0.51));
  CHECK(slips.front().cause.find("head0.K[bank,d3] = 0.51") != std::string::npos);
}

TEST_CASE("single_term_slips: right values and unrelated values get no explanation") {
  RiverBank rb;
  const CellSum sum = *cell_sum(rb.lesson, rb.trace, "head0.scores", 0, 1);
  CHECK(single_term_slips(rb.lesson, rb.trace, sum, 1.676, 0.0005).empty());
  CHECK(single_term_slips(rb.lesson, rb.trace, sum, 7.3, 0.05).empty());
  CHECK(single_term_slips(rb.lesson, rb.trace, sum, -2.5, 0.05).empty());
}

TEST_CASE("single_term_slips: dropped term, sign flip, decimal shift, digit slip") {
  RiverBank rb;
  const CellSum sum = *cell_sum(rb.lesson, rb.trace, "head0.scores", 0, 1);
  const double p3 = 0.85 * 0.45;  // 0.3825
  auto first_kind = [&](double written, double tol) {
    const std::vector<TermSlip> slips = single_term_slips(rb.lesson, rb.trace, sum, written, tol);
    REQUIRE_FALSE(slips.empty());
    return slips.front();
  };
  SUBCASE("dropped") {
    const TermSlip s = first_kind(1.6755 - p3, 0.00005);
    CHECK(s.kind == SlipKind::dropped_term);
    CHECK(s.term == 3);
  }
  SUBCASE("sign flipped") {
    const TermSlip s = first_kind(1.6755 - 2 * p3, 0.00005);
    CHECK(s.kind == SlipKind::sign_flip);
    CHECK(s.written_product == doctest::Approx(-p3));
  }
  SUBCASE("decimal shifted") {
    const TermSlip s = first_kind(1.6755 - p3 + 10 * p3, 0.00005);
    CHECK(s.kind == SlipKind::decimal_shift);
    CHECK(s.written_product == doctest::Approx(3.825));
  }
  SUBCASE("leading digit miscopied: 0.3825 as 0.4825 (any term off by 0.1 fits too)") {
    const std::vector<TermSlip> slips =
        single_term_slips(rb.lesson, rb.trace, sum, 1.7755, 0.00005);
    bool term3 = false;
    for (const TermSlip& s : slips) {
      CHECK(s.kind == SlipKind::digit_slip);
      if (s.term == 3) term3 = s.written_product == doctest::Approx(0.4825);
    }
    CHECK(term3);
  }
}

TEST_CASE("matches_written counts exactly half a unit as a match") {
  CHECK(matches_written(0.69 * 0.66 + 0.5 * 0.54 + 0.86 * 0.66 + 0.85 * 0.51, 1.727, 0.0005));
  CHECK_FALSE(matches_written(1.6755, 1.727, 0.0005));
  CHECK(matches_written(-arma::datum::inf, -arma::datum::inf, 0.005));
  CHECK(matches_written(arma::datum::nan, arma::datum::nan, 0.005));  // a fully masked row
  CHECK_FALSE(matches_written(arma::datum::nan, 0.0, 0.005));
  CHECK_FALSE(matches_written(-arma::datum::inf, -1e9, 0.005));
}

}  // namespace attn
