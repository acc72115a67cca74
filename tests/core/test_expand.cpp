// Tests of one cell's arithmetic at every step (core/expand), against plain
// loops and the river-bank numbers known by hand; its printers' tests are in
// tests/render/test_expansion.cpp.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>

#include "core/error.hpp"
#include "core/expand.hpp"
#include "core/lesson_library.hpp"
#include "core/pipeline.hpp"
#include "support/host_backend.hpp"

namespace attn {

namespace {

struct Traced {
  explicit Traced(const char* id) : lesson(find_lesson(id)), trace(run_pipeline(lesson, backend)) {}
  Lesson lesson;
  testing::HostBackend backend;
  Trace trace;
};

}  // namespace

TEST_CASE("expand: head slices, concat and positional encodings say where a value comes from") {
  Traced th("two-heads");
  const CellExpansion slice = expand_cell(th.lesson, th.trace, "head1.Q", 2, 1);
  CHECK(slice.kind == ExpansionKind::slice);
  CHECK(slice.sources.at(0).label == "Q[" + th.lesson.tokens[2] + ",d3]");
  CHECK(slice.value == th.trace.at("Q").value(2, 3));
  const CellExpansion concat = expand_cell(th.lesson, th.trace, "concat", 0, 2);
  CHECK(concat.sources.at(0).step == "head1.context");
  CHECK(concat.value == th.trace.at("head1.context").value(0, 0));

  Traced pe("sinusoidal-pe");
  const CellExpansion p = expand_cell(pe.lesson, pe.trace, "PE", 1, 1);
  CHECK(p.kind == ExpansionKind::positional);
  CHECK(p.cosine);
  CHECK(p.angle == doctest::Approx(1.0));
  CHECK(p.value == doctest::Approx(std::cos(1.0)).epsilon(1e-12));
}

TEST_CASE("expand_all: the cell at every step that has it — none has it is an input error") {
  Traced rb("river-bank");
  const std::vector<CellExpansion> all = expand_all(rb.lesson, rb.trace, 0, 1);
  CHECK(all.size() == rb.trace.steps.size());
  for (std::size_t k = 0; k < all.size(); ++k) CHECK(all[k].step == rb.trace.steps[k].id);
  CHECK_THROWS_WITH_AS(expand_all(rb.lesson, rb.trace, 9, 9), doctest::Contains("4×4"), InputError);
  CHECK_THROWS_AS(expand_cell(rb.lesson, rb.trace, "head0.scores", 0, 4), InputError);
}

}  // namespace attn

TEST_CASE("expand_all: row R of a KV-cache lesson expands decoding step t = R too") {
  const attn::Lesson lesson = attn::find_lesson("kv-cache");
  attn::testing::HostBackend cpu;
  const attn::Trace trace = attn::run_pipeline(lesson, cpu);
  const std::vector<attn::CellExpansion> all = attn::expand_all(lesson, trace, 3, 2);
  const auto find = [&](const std::string& id) {
    return std::find_if(all.begin(), all.end(),
                        [&](const attn::CellExpansion& e) { return e.step == id; });
  };
  // Step 3's query row: its single row, at column 2 (the key "animal").
  const auto weights = find("decode.t3.head0.weights");
  REQUIRE(weights != all.end());
  CHECK(weights->row == 0);
  CHECK(weights->value == trace.at("decode.t3.head0.weights").value(0, 2));
  CHECK(weights->value == doctest::Approx(trace.at("head0.weights").value(3, 2)).epsilon(1e-12));
  // Step 3's cache: the row it adds, row 3.
  const auto cache = find("decode.t3.head0.K_cache");
  REQUIRE(cache != all.end());
  CHECK(cache->row == 3);
  // Other decoding steps are not expanded for row 3.
  CHECK(find("decode.t2.head0.weights") == all.end());
  CHECK(find("decode.t1.head0.K_cache") == all.end());
}
