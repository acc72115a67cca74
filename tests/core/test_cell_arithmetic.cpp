// Tests of the on-paper arithmetic of one cell (a sum of products read from the
// trace's dataflow), on the river-bank lesson (document 000, section 3).
#include <doctest/doctest.h>

#include "core/cell_arithmetic.hpp"
#include "core/error.hpp"
#include "core/lesson_library.hpp"
#include "core/pipeline.hpp"
#include "support/host_backend.hpp"

namespace attn {

namespace {

struct RiverBank {
  Lesson lesson = find_lesson("river-bank");
  testing::HostBackend backend;
  Trace trace = run_pipeline(lesson, backend);
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
  const std::optional<CellSum> sum = cell_sum(rb.trace, "K", 1, 3);
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
    const std::optional<CellSum> slice = cell_sum(rb.trace, "head0.K", 1, 3);
    REQUIRE(slice);
    CHECK(slice->step == "head0.K");
    CHECK(slice->terms[2].right_ref.label == "W_K[d2,d3]");
    CHECK(slice->value == doctest::Approx(0.45).epsilon(1e-12));
  }
}

TEST_CASE("cell_sum writes scores and context as dot products, matching a plain loop") {
  RiverBank rb;
  const std::optional<CellSum> score = cell_sum(rb.trace, "head0.scores", 0, 1);
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
    const std::optional<CellSum> ctx = cell_sum(rb.trace, "head0.context", 2, c);
    REQUIRE(ctx);
    double loop = 0;
    for (std::size_t j = 0; j < A.n_cols; ++j) loop += A(2, j) * V(j, c);
    CHECK(total(*ctx) == doctest::Approx(loop).epsilon(1e-12));
    CHECK(ctx->value == doctest::Approx(loop).epsilon(1e-12));
  }
}

TEST_CASE("cell_sum: steps that are not sums of products, and cells outside the matrix") {
  RiverBank rb;
  CHECK_FALSE(cell_sum(rb.trace, "head0.weights", 0, 0));
  CHECK_FALSE(cell_sum(rb.trace, "head0.scaled", 0, 0));
  CHECK_THROWS_AS(cell_sum(rb.trace, "head0.scores", 4, 0), InputError);
  CHECK_THROWS_WITH_AS(cell_sum(rb.trace, "head0.nope", 0, 0), doctest::Contains("valid ids"),
                       InputError);
}

}  // namespace attn
