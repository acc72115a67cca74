// The tiled softmax and linear attention (issue 26): the steps another backend
// leaves to the host are listed, the tiles' bounds hold a perturbed input, a
// narrower format shows its own difference, and the ids read back.
#include <doctest/doctest.h>

#include <cmath>
#include <string>
#include <vector>

#include "core/attention.hpp"
#include "core/backend.hpp"
#include "core/bounds.hpp"
#include "core/error.hpp"
#include "core/lesson_library.hpp"
#include "core/pipeline.hpp"
#include "core/step_id.hpp"
#include "support/host_backend.hpp"

namespace attn {

namespace {

Trace trace_of(const Lesson& lesson) {
  testing::HostBackend cpu;
  return run_pipeline(lesson, cpu);
}

}  // namespace

TEST_CASE(
    "efficient: another backend's trace lists the tile and linear steps it computed on the host") {
  for (const char* id : {"flash-tiles", "linear-attention"}) {
    const Lesson lesson = find_lesson(id);
    testing::HostBackend other("other");  // what a CUDA backend looks like
    const Trace theirs = run_pipeline(lesson, other);
    const Trace ours = trace_of(lesson);
    CHECK(ours.host_steps.empty());
    std::vector<std::string> expected;
    for (const Step& step : theirs.steps)
      if (step.step_id.family() == StepFamily::tile || step.step_id.family() == StepFamily::tiled ||
          step.step_id.family() == StepFamily::linear ||
          (step.made.op == Op::efficient && step.step_id.family() == StepFamily::head))
        expected.push_back(step.id);
    CHECK(!expected.empty());
    CHECK(theirs.host_steps == expected);
  }
}

TEST_CASE("efficient: the ids of tiles and linear attention print and read back") {
  const StepId tile = StepId::tile(1, 2, 3, TileStep::rescale);
  CHECK(tile.str() == "head1.tile2_3.rescale");
  CHECK(parse_step_id("head1.tile2_3.rescale") == tile);
  CHECK(tile.query_block() == 2);
  CHECK(tile.key_block() == 3);
  CHECK(tile.tile_part() == TileStep::rescale);
  CHECK(StepId::tiled(0, TiledStep::check).str() == "head0.tiled_check");
  CHECK(StepId::linear(0, LinearStep::weights).str() == "head0.linear_weights");
  CHECK(parse_step_id("head0.quadratic_numerator") ==
        StepId::linear(0, LinearStep::quadratic_numerator));
  CHECK_FALSE(parse_step_id("head0.tile02_1.m"));
  CHECK_FALSE(parse_step_id("head0.tile0_1"));
  CHECK_FALSE(parse_step_id("head0.tile0-1.m"));
  CHECK_THROWS_AS((void)tile.head_part(), std::logic_error);
}

TEST_CASE("efficient: the tiles' bounds hold every score within ±0.005 of the masked one") {
  const Lesson lesson = find_lesson("flash-tiles");
  const Trace trace = trace_of(lesson);
  const std::string masked = "head0.masked";
  StepOverride o{
      trace.at(masked).value,
      arma::umat(trace.at(masked).value.n_rows, trace.at(masked).value.n_cols, arma::fill::zeros)};
  o.given(3, 1) = 1;
  Overrides overrides{{masked, o}};
  const arma::mat centre = trace.at(masked).value;
  BoundsMap given{{masked, {centre, centre}}};
  given[masked].lo(3, 1) -= 0.005;
  given[masked].hi(3, 1) += 0.005;
  const BoundsMap b = trace_bounds(trace, overrides, given);
  for (const double shift : {-0.005, 0.005}) {
    o.value(3, 1) = centre(3, 1) + shift;
    testing::HostBackend cpu;
    const Trace moved = run_pipeline(lesson, cpu, Overrides{{masked, o}});
    for (const char* id : {"head0.tile1_0.m", "head0.tile1_1.rescale", "head0.tile1_1.l",
                           "head0.tile1_2.acc", "head0.tiled_context"}) {
      const arma::mat& v = moved.at(id).value;
      CHECK(arma::all(arma::vectorise(v >= b.at(id).lo - 1e-12)));
      CHECK(arma::all(arma::vectorise(v <= b.at(id).hi + 1e-12)));
    }
  }
}

TEST_CASE("efficient: f64 tiles agree to 1e-12, f32 tiles show their own rounding") {
  Lesson lesson = find_lesson("flash-tiles");
  CHECK(trace_of(lesson).at("head0.tiled_check").value.max() <= 1e-12);
  lesson.dtype = Dtype::f32;
  const double f32 = trace_of(lesson).at("head0.tiled_check").value.max();
  CHECK(f32 > 0.0);
  CHECK(f32 < 1e-6);
}

}  // namespace attn
