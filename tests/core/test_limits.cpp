// Limits (core/limits): parsing --limit, the lesson and file checks, and the
// trace-size estimate they rest on, against real traces.
#include <doctest/doctest.h>

#include "core/error.hpp"
#include "core/lesson.hpp"
#include "core/lesson_library.hpp"
#include "core/limits.hpp"
#include "core/pipeline.hpp"
#include "support/host_backend.hpp"

namespace {

// Restores the default limits when a test is done with them.
struct DefaultLimits {
  ~DefaultLimits() { attn::limits() = attn::Limits{}; }
};

}  // namespace

TEST_CASE("--limit NAME=VALUE sets one limit — a bad name or value names the fix") {
  DefaultLimits restore;
  attn::set_limit("tokens=20000");
  CHECK(attn::limits().tokens == 20000);
  CHECK(attn::limits().heads == attn::Limits{}.heads);
  CHECK_THROWS_WITH_AS(attn::set_limit("token=5"),
                       doctest::Contains("give NAME=VALUE with one of file_mb=64, tokens=16384"),
                       attn::InputError);
  CHECK_THROWS_WITH_AS(attn::set_limit("tokens=0"),
                       doctest::Contains("'0' is not a whole number from 1 to 2^40"),
                       attn::InputError);
  CHECK_THROWS_AS(attn::set_limit("tokens=1e5"), attn::InputError);
  CHECK_THROWS_AS(attn::set_limit("tokens"), attn::InputError);
}

TEST_CASE("a lesson above a limit is refused when it is read, naming the limit to raise") {
  DefaultLimits restore;
  attn::set_limit("tokens=3");
  CHECK_THROWS_WITH_AS(attn::find_lesson("river-bank"),
                       doctest::Contains("the number of tokens is 4, above the limit of 3; "
                                         "--limit tokens=4 raises it"),
                       attn::InputError);
  attn::limits() = attn::Limits{};
  attn::set_limit("heads=1");
  CHECK_THROWS_WITH_AS(attn::find_lesson("two-heads"),
                       doctest::Contains("the number of heads is 2, above the limit of 1"),
                       attn::InputError);
  attn::limits() = attn::Limits{};
  attn::set_limit("d_model=3");
  CHECK_THROWS_WITH_AS(attn::find_lesson("river-bank"),
                       doctest::Contains("d_model (the columns of X) is 4, above the limit of 3"),
                       attn::InputError);
  attn::limits() = attn::Limits{};
  CHECK_THROWS_WITH_AS(attn::check_file_size("big.toml", 65 * (1ull << 20) + 1),
                       "big.toml: the file is 66 MiB, above the limit of 64 MiB per file; "
                       "--limit file_mb=66 raises it",
                       attn::InputError);
  CHECK_NOTHROW(attn::check_file_size("ok.toml", 64 * (1ull << 20)));
}

TEST_CASE("the trace-size estimate is within 15% of every embedded lesson's real trace") {
  attn::testing::HostBackend cpu;
  for (const attn::Lesson& lesson : attn::all_embedded_lessons()) {
    CAPTURE(lesson.id);
    const attn::Trace trace = attn::run_pipeline(lesson, cpu);
    std::uint64_t cells = 0, largest = 0;
    for (const attn::Step& step : trace.steps) {
      cells += step.value.n_elem;
      largest = std::max<std::uint64_t>(largest, step.value.n_elem);
    }
    const attn::TraceSize estimate = attn::trace_size(lesson);
    CHECK(static_cast<double>(estimate.cells) >= 0.85 * static_cast<double>(cells));
    CHECK(static_cast<double>(estimate.cells) <= 1.15 * static_cast<double>(cells));
    CHECK(estimate.largest_step >= largest);
  }
}

TEST_CASE("the memory of a big trace is refused before anything is computed") {
  DefaultLimits restore;
  attn::set_limit("trace_gb=1");
  // 4096 tokens, 2 heads: 2 × 5 + 2 matrices of 4096² cells, 1.5 GiB.
  std::string X = "[";
  for (int i = 0; i < 4096; ++i) X += i ? ", [0.5, 0.25]" : "[0.5, 0.25]";
  X += "]";
  const std::string text = "[model]\nheads = 2\n[input]\nX = " + X +
                           "\n[weights]\nW_Q = \"identity\"\nW_K = \"identity\"\nW_V = "
                           "\"identity\"\n";
  CHECK_THROWS_WITH_AS(attn::parse_lesson(text, "big.toml"),
                       doctest::Contains("big.toml: its trace would take about 2 GiB of memory, "
                                         "above the limit of 1 GiB"),
                       attn::InputError);
  attn::set_limit("trace_gb=8");
  attn::set_limit("step_mcells=16");
  CHECK_THROWS_WITH_AS(attn::parse_lesson(text, "big.toml"),
                       doctest::Contains("its largest step has 17 million cells, above the limit "
                                         "of 16 million; --limit step_mcells=17 raises it"),
                       attn::InputError);
}
