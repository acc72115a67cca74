// Formulas and shapes written from the trace's graph.
#include <doctest/doctest.h>

#include "backend/cpu_backend.hpp"
#include "core/lesson_library.hpp"
#include "core/pipeline.hpp"
#include "render/formula.hpp"

namespace {

struct Traced {
  attn::Lesson lesson;
  attn::Trace trace;
  explicit Traced(const char* id) : lesson(attn::find_lesson(id)) {
    attn::CpuBackend cpu;
    trace = attn::run_pipeline(lesson, cpu);
  }
  attn::StepFormula operator()(const char* step) const {
    return attn::step_formula(lesson, trace, trace.at(step));
  }
};

}  // namespace

TEST_CASE("formula: river-bank, one head, from X to the context") {
  const Traced f("river-bank");
  CHECK(f("X").text == "X: one row per token");
  CHECK(f("Q").text == "Q = X·W_Q");
  CHECK(f("Q").latex == "Q = X W_Q");
  CHECK(f("Q").shapes == "(4×4)·(4×4) → 4×4");
  CHECK(f("head0.K").text == "K₀ = K[:, 0:4]");
  CHECK(f("head0.scores").text == "S₀ = Q₀·K₀ᵀ");
  CHECK(f("head0.scores").shapes == "(4×4)·(4×4)ᵀ → 4×4");
  CHECK(f("head0.scaled").text == "S₀ / √d_k, with √d_k = √4 = 2");
  CHECK(f("head0.masked").text == "nothing is masked: masked = scaled");
  CHECK(f("head0.row_sum").shapes == "4×4 → 4×1");
  // The weights step is the softmax, and says so.
  CHECK(f("head0.weights").text.starts_with("A₀ = softmax(masked) = E₀ / Σ₀"));
  CHECK(f("head0.weights").latex.find("\\mathrm{softmax}") != std::string::npos);
  CHECK(f("head0.context").text == "C₀ = A₀·V₀");
}

TEST_CASE("formula: two heads, a causal mask, cross-attention") {
  const Traced two("two-heads");
  CHECK(two("head1.Q").text == "Q₁ = Q[:, 2:4]");
  CHECK(two("concat").text == "concat = [C₀ | C₁]");
  CHECK(two("heads.mean").text == "mean of A₀, A₁, cell by cell (each row still sums to 1)");
  CHECK(two("concat").shapes == "2 × (3×2) → 3×4");

  const Traced causal("causal-decoder");
  CHECK(causal("head0.masked").text ==
        "masked cells := -inf (causal: key after the query, 3 cells); the others are unchanged");

  const Traced cross("cross-attention");
  CHECK(cross("K").text == "K = M·W_K");
  CHECK(cross("memory").latex == "M");
}

TEST_CASE("subscript writes every digit of a head number") {
  CHECK(attn::subscript(0) == "₀");
  CHECK(attn::subscript(12) == "₁₂");
}
