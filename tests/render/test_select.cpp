// Which steps a render shows: all in trace order, --step and --head filters,
// and errors that say what would have been valid.
#include <doctest/doctest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "backend/cpu_backend.hpp"
#include "core/error.hpp"
#include "core/lesson_library.hpp"
#include "core/pipeline.hpp"
#include "render/render.hpp"

namespace {

attn::Trace two_heads() {
  attn::CpuBackend cpu;
  return attn::run_pipeline(attn::find_lesson("two-heads"), cpu);
}

std::vector<std::string> ids(const std::vector<const attn::Step*>& steps) {
  std::vector<std::string> out;
  for (const attn::Step* s : steps) out.push_back(s->id);
  return out;
}

// The message of the InputError select_steps throws ("" if none).
std::string error_of(const attn::Trace& t, const attn::RenderOptions& o) {
  try {
    attn::select_steps(t, o);
  } catch (const attn::InputError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("select_steps: no filter is every step, pointing into the trace") {
  const attn::Trace t = two_heads();
  const std::vector<const attn::Step*> all = attn::select_steps(t, {});
  REQUIRE(all.size() == t.steps.size());
  for (std::size_t k = 0; k < all.size(); ++k) CHECK(all[k] == &t.steps[k]);
}

TEST_CASE("select_steps: --step keeps trace order, whatever order the ids were given in") {
  const attn::Trace t = two_heads();
  attn::RenderOptions o;
  o.steps = {"head1.weights", "Q", "head0.scores"};
  CHECK(ids(attn::select_steps(t, o)) ==
        std::vector<std::string>{"Q", "head0.scores", "head1.weights"});
}

TEST_CASE("select_steps: --head keeps that head's steps and every shared step") {
  const attn::Trace t = two_heads();
  attn::RenderOptions o;
  o.head = 1;
  std::vector<std::string> expected;  // by a plain loop over the trace
  for (const attn::Step& s : t.steps)
    if (s.head != 0) expected.push_back(s.id);
  const std::vector<std::string> got = ids(attn::select_steps(t, o));
  CHECK(got == expected);
  CHECK(std::find(got.begin(), got.end(), "head1.context") != got.end());
  CHECK(std::find(got.begin(), got.end(), "head0.context") == got.end());
  CHECK(std::find(got.begin(), got.end(), "concat") != got.end());

  o.steps = {"head1.scores", "head0.scores"};
  CHECK(ids(attn::select_steps(t, o)) == std::vector<std::string>{"head1.scores"});
}

TEST_CASE("select_steps: errors name the valid ids or heads") {
  const attn::Trace t = two_heads();
  attn::RenderOptions o;
  o.steps = {"head0.nope"};
  const std::string unknown = error_of(t, o);
  CHECK(unknown.starts_with("unknown step id 'head0.nope' for lesson two-heads; valid ids: "));
  for (const attn::Step& s : t.steps) CHECK(unknown.find(s.id) != std::string::npos);

  o.steps.clear();
  o.head = 2;
  CHECK(error_of(t, o) == "--head 2: lesson two-heads has 2 head(s), numbered 0 to 1");

  o.steps = {"head0.scores"};
  o.head = 1;
  const std::string none = error_of(t, o);
  CHECK(none.find("--step head0.scores and --head 1 select no step") != std::string::npos);
}
