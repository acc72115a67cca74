// Golden files: exact round trip at 17 digits (with -inf and nan), the
// comparison that finds the first differing cell, and readable errors.
#include <doctest/doctest.h>

#include <cmath>
#include <limits>

#include "core/error.hpp"
#include "core/golden.hpp"
#include "core/lesson_library.hpp"
#include "core/pipeline.hpp"
#include "support/host_backend.hpp"

namespace {

// A two-step trace with awkward numbers: thirds, a tiny value, -inf and NaN.
attn::Trace awkward_trace() {
  attn::Trace trace;
  trace.lesson_id = "awkward";
  attn::Step scores;
  scores.id = "head0.masked";
  scores.value = {{1.0 / 3.0, -std::numeric_limits<double>::infinity()}, {2.0, 1e-300}};
  attn::Step weights;
  weights.id = "head0.weights";
  weights.value = {{std::nan(""), 0.1 + 0.2}};
  trace.steps = {scores, weights};
  return trace;
}

attn::Trace river_bank() {
  attn::testing::HostBackend cpu;
  return attn::run_pipeline(attn::find_lesson("river-bank"), cpu);
}

}  // namespace

TEST_CASE("a golden file round-trips every value bit for bit") {
  const attn::Trace trace = awkward_trace();
  const std::string text = attn::golden_toml(trace);
  CHECK(text.find("0.33333333333333331") != std::string::npos);
  CHECK(text.find("-inf") != std::string::npos);
  CHECK(text.find("nan") != std::string::npos);
  CHECK(text.find("2.0,") != std::string::npos);  // whole numbers stay TOML floats

  const attn::Golden golden = attn::parse_golden(text, "awkward.toml");
  CHECK(golden.lesson_id == "awkward");
  REQUIRE(golden.steps.size() == 2);
  CHECK(golden.steps[0].id == "head0.masked");
  CHECK(golden.steps[0].value(0, 0) == 1.0 / 3.0);
  CHECK(golden.steps[0].value(0, 1) == -std::numeric_limits<double>::infinity());
  CHECK(golden.steps[0].value(1, 1) == 1e-300);
  CHECK(std::isnan(golden.steps[1].value(0, 0)));
  CHECK(golden.steps[1].value(0, 1) == 0.1 + 0.2);
  CHECK(attn::compare_with_golden(golden, trace, 0.0).empty());
}

TEST_CASE("compare_with_golden names the step and the first differing cell") {
  const attn::Trace trace = river_bank();
  attn::Golden golden = attn::parse_golden(attn::golden_toml(trace), "river-bank.toml");
  REQUIRE(attn::compare_with_golden(golden, trace, attn::kGoldenTolerance).empty());

  SUBCASE("a value off by more than the tolerance") {
    for (attn::GoldenStep& s : golden.steps)
      if (s.id == "head0.scores") s.value(2, 1) += 2e-12;
    const auto mismatches = attn::compare_with_golden(golden, trace, attn::kGoldenTolerance);
    REQUIRE(mismatches.size() == 1);
    CHECK(mismatches[0].step == "head0.scores");
    REQUIRE(mismatches[0].cell.has_value());
    CHECK(mismatches[0].cell->first == 2);
    CHECK(mismatches[0].cell->second == 1);
    CHECK(mismatches[0].computed == doctest::Approx(1.6293));
    CHECK(attn::compare_with_golden(golden, trace, 1e-11).empty());  // --tol widens it
  }
  SUBCASE("NaN against a number, and a missing step") {
    for (attn::GoldenStep& s : golden.steps)
      if (s.id == "head0.weights") s.value(0, 3) = std::nan("");
    std::erase_if(golden.steps, [](const attn::GoldenStep& s) { return s.id == "V"; });
    const auto mismatches = attn::compare_with_golden(golden, trace, attn::kGoldenTolerance);
    REQUIRE(mismatches.size() == 2);
    CHECK(mismatches[0].step == "V");
    CHECK_FALSE(mismatches[0].cell.has_value());
    CHECK(mismatches[1].step == "head0.weights");
    CHECK(mismatches[1].cell->second == 3);
  }
  SUBCASE("a golden file of another lesson") {
    golden.lesson_id = "animal";
    const auto mismatches = attn::compare_with_golden(golden, trace, attn::kGoldenTolerance);
    REQUIRE(mismatches.size() == 1);
    CHECK(mismatches[0].reason.in(attn::Language::en).find("'animal'") != std::string::npos);
  }
}

TEST_CASE("same_number: NaN equals NaN, infinities equal themselves only") {
  const double inf = std::numeric_limits<double>::infinity();
  CHECK(attn::same_number(std::nan(""), std::nan(""), 0));
  CHECK_FALSE(attn::same_number(std::nan(""), 0.0, 1.0));
  CHECK(attn::same_number(-inf, -inf, 0));
  CHECK_FALSE(attn::same_number(-inf, -1e300, 1e300));
  CHECK(attn::same_number(1.0, 1.0 + 1e-13, 1e-12));
  CHECK_FALSE(attn::same_number(1.0, 1.0 + 1e-11, 1e-12));
  // Above 1 the tolerance is relative: e^10.49 in two summation orders.
  CHECK(attn::same_number(35789.148073566685, 35789.148073566619, 1e-12));
  CHECK_FALSE(attn::same_number(35789.148, 35789.149, 1e-12));
  CHECK(attn::tolerance_at(0.5, 1e-12) == 1e-12);
  CHECK(attn::tolerance_at(-2e4, 1e-12) == 2e-8);
}

TEST_CASE("the committed golden file of river-bank matches a fresh trace") {
  const std::optional<attn::Golden> golden =
      attn::read_golden_file(std::string(ATTN_SOURCE_DIR) + "/golden/river-bank.toml");
  REQUIRE(golden.has_value());
  CHECK(attn::compare_with_golden(*golden, river_bank(), attn::kGoldenTolerance).empty());
  CHECK_FALSE(attn::read_golden_file(std::string(ATTN_SOURCE_DIR) + "/golden/no-such.toml"));
}

TEST_CASE("a malformed golden file is an InputError naming the file and line") {
  const std::string bad =
      "[golden]\nlesson = \"x\"\n\n[[step]]\nid = \"Q\"\nshape = [1, 2]\n"
      "data = [[1.0, \"one\"]]\n";
  CHECK_THROWS_WITH_AS(attn::parse_golden(bad, "bad.toml"), doctest::Contains("bad.toml:7"),
                       attn::InputError);
  CHECK_THROWS_WITH_AS(attn::parse_golden("[golden]\nlesson = \"x\"\n[[step]]\nid = \"Q\"\n"
                                          "shape = [2, 1]\ndata = [[1.0]]\n",
                                          "short.toml"),
                       doctest::Contains("expected 2 rows"), attn::InputError);
  CHECK_THROWS_AS(attn::parse_golden("lesson = 1\n", "none.toml"), attn::InputError);
  // A shape that does not fit its data is an error before any matrix is made.
  CHECK_THROWS_WITH_AS(attn::parse_golden("[golden]\nlesson = \"x\"\n[[step]]\nid = \"Q\"\n"
                                          "shape = [1, 99999999999999]\ndata = [[1.0]]\n",
                                          "huge.toml"),
                       doctest::Contains("must hold 99999999999999 numbers"), attn::InputError);
}
