// Tests of the single-term slips that explain a wrong sum of products, on the
// river-bank lesson (document 000, section 3) and its real mistakes.
#include <doctest/doctest.h>

#include <memory>

#include "backend/backend.hpp"
#include "core/error.hpp"
#include "core/lesson_library.hpp"
#include "core/pipeline.hpp"
#include "teach/slips.hpp"

namespace attn {

namespace {

struct RiverBank {
  Lesson lesson = find_lesson("river-bank");
  std::unique_ptr<Backend> backend = make_backend("cpu");
  Trace trace = run_pipeline(lesson, *backend);
};

}  // namespace

TEST_CASE("single_term_slips finds the document's K(bank) slip: 0.6×0.1 written as 0.12") {
  RiverBank rb;
  const CellSum sum = *cell_sum(rb.trace, "K", 1, 3);
  const std::vector<TermSlip> slips = single_term_slips(rb.trace, sum, 0.51, 0.005);
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
  CHECK(slips.front().cause.in(attn::Language::en).find("instead of") != std::string::npos);
}

TEST_CASE("single_term_slips: the document's 1.727 carries its own K(bank)[d3] = 0.51") {
  RiverBank rb;
  const CellSum sum = *cell_sum(rb.trace, "head0.scores", 0, 1);
  const std::vector<StatedValue> stated = {{"K", 1, 3, 0.51, "the document's K(bank)"}};
  const std::vector<TermSlip> slips = single_term_slips(rb.trace, sum, 1.727, 0.0005, stated);
  REQUIRE_FALSE(slips.empty());
  CHECK(slips.front().kind == SlipKind::stated_value);
  CHECK(slips.front().term == 3);
  CHECK(slips.front().true_product == doctest::Approx(0.85 * 0.45));
  CHECK(slips.front().written_product == doctest::Approx(0.85 * 0.51));
  CHECK(slips.front().cause.in(attn::Language::en).find("head0.K[bank,d3] = 0.51") != std::string::npos);
}

TEST_CASE("single_term_slips: right values and unrelated values get no explanation") {
  RiverBank rb;
  const CellSum sum = *cell_sum(rb.trace, "head0.scores", 0, 1);
  CHECK(single_term_slips(rb.trace, sum, 1.676, 0.0005).empty());
  CHECK(single_term_slips(rb.trace, sum, 7.3, 0.05).empty());
  CHECK(single_term_slips(rb.trace, sum, -2.5, 0.05).empty());
}

TEST_CASE("single_term_slips: dropped term, sign flip, decimal shift, digit slip") {
  RiverBank rb;
  const CellSum sum = *cell_sum(rb.trace, "head0.scores", 0, 1);
  const double p3 = 0.85 * 0.45;  // 0.3825
  auto first_kind = [&](double written, double tol) {
    const std::vector<TermSlip> slips = single_term_slips(rb.trace, sum, written, tol);
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
    const std::vector<TermSlip> slips = single_term_slips(rb.trace, sum, 1.7755, 0.00005);
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
