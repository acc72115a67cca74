// Formulas and shapes written from the trace's graph.
#include <doctest/doctest.h>

#include "backend/cpu_backend.hpp"
#include "core/lesson_library.hpp"
#include "core/pipeline.hpp"
#include "render/formula.hpp"
#include "render/render.hpp"

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

TEST_CASE("formula: the encoder layer's steps, Post-LN and Pre-LN") {
  const Traced post("encoder-layer-post-ln");
  CHECK(post("layer.residual1")
            .text.starts_with("layer.residual1 = X + output (dropout is the "
                              "identity at inference"));
  CHECK(post("layer.residual1").latex ==
        "\\mathrm{layer.residual1} = \\mathrm{X} + \\mathrm{output}");
  CHECK(post("layer.residual1").shapes == "4×8 + 4×8 → 4×8");
  CHECK(post("layer.ln1.mean").text.starts_with("μ₁ = Σ_j x[i, j] / d"));
  CHECK(post("layer.ln1.mean").shapes == "4×8 → 4×1");
  CHECK(post("layer.ln2.var").text.find("biased") != std::string::npos);
  CHECK(post("layer.ln1.normalised").text.starts_with("x̂ = (x − μ₁) / √(σ²₁ + ε), ε = 1e-05"));
  CHECK(post("layer.ln1").text.starts_with("layer.ln1 = γ ⊙ x̂ + β"));
  CHECK(post("layer.ln1").latex == "\\mathrm{layer.ln1} = \\gamma_{1} \\odot \\hat x + \\beta_{1}");
  CHECK(post("ln1_gamma").latex == "\\gamma_{1}");
  CHECK(post("layer.ffn.hidden").text == "layer.ffn.hidden = layer.ln1·W_1 + b_1");
  CHECK(post("layer.ffn.hidden").shapes == "(4×8)·(8×32) → 4×32");
  CHECK(post("layer.ffn.activation")
            .text.starts_with(
                "layer.ffn.activation = ReLU(layer.ffn.hidden) = max(0, layer.ffn.hidden)"));
  CHECK(post("layer.ffn.out").text == "layer.ffn.out = layer.ffn.activation·W_2 + b_2");
  CHECK(post("layer.residual2").text.starts_with("layer.residual2 = layer.ln1 + layer.ffn.out"));
  CHECK(post("layer.output").text.starts_with("layer.output = layer.ln2"));
  const Traced pre("encoder-layer-pre-ln");
  CHECK(pre("Q").text == "Q = layer.ln1·W_Q + b_Q");
  CHECK(pre("Q").latex == "Q = \\mathrm{layer.ln1} W_Q + b_Q");
  CHECK(pre("layer.output").text.starts_with("layer.output = layer.residual2"));
  const Traced gelu("encoder-layer-gelu");
  CHECK(gelu("layer.ffn.activation").text.find("GELU(h) = h·Φ(h) = h·(1 + erf(h/√2))/2") !=
        std::string::npos);
}

TEST_CASE("formula: every gradient step of every lesson given an upstream gradient has a "
          "formula naming what it goes back through, and every format renders it") {
  attn::CpuBackend cpu;
  std::size_t steps = 0;
  for (attn::Lesson lesson : attn::all_embedded_lessons()) {
    if (lesson.dtype != attn::Dtype::f64 || lesson.attention != attn::AttentionKind::softmax ||
        lesson.queries() * lesson.keys() > 4096)
      continue;
    const attn::Trace forward = attn::run_pipeline(lesson, cpu);
    const attn::Step* result = forward.find("layer.output");
    if (!result) result = forward.find("output");
    if (!result) result = &forward.at("concat");
    if (!lesson.backward) {
      lesson.backward.emplace();
      lesson.backward->upstream = arma::mat(result->value.n_rows, result->value.n_cols,
                                            arma::fill::ones);
    }
    const attn::Trace trace = attn::run_pipeline(lesson, cpu);
    CAPTURE(lesson.id);
    for (const attn::Step& step : trace.steps) {
      if (step.made.op != attn::Op::backward) continue;
      const attn::StepFormula f = attn::step_formula(lesson, trace, step);
      CHECK(f.text.starts_with(step.id + " = "));
      CHECK(!f.latex.empty());
      for (const attn::Vjp& v : step.made.vjps) CHECK(f.shapes.find(v.of) != std::string::npos);
      ++steps;
    }
    const attn::RenderOptions options;
    CHECK(attn::render_text(lesson, trace, options).find("grad.X") != std::string::npos);
    CHECK(attn::render_latex(lesson, trace, options).find("grad.X") != std::string::npos);
    CHECK(attn::render_html(lesson, trace, options).find("grad.X") != std::string::npos);
    CHECK(attn::render_json(lesson, trace, options).find("\"grad.X\"") != std::string::npos);
  }
  CHECK(steps > 500);
}

TEST_CASE("formula: the backward steps of backward-by-hand, as on paper") {
  const Traced f("backward-by-hand");
  CHECK(f("grad.head0.masked").text ==
        "grad.head0.masked = head0.weights ⊙ (grad.head0.weights − grad.head0.row_dot)");
  CHECK(f("grad.head0.Q").text == "grad.head0.Q = grad.head0.scores·head0.K");
  CHECK(f("grad.head0.K").text == "grad.head0.K = grad.head0.scoresᵀ·head0.Q");
  CHECK(f("grad.X").text == "grad.X = (grad.Q·W_Qᵀ) + (grad.K·W_Kᵀ) + (grad.V·W_Vᵀ)");
  CHECK(f("grad.head0.scores").text == "grad.head0.scores = grad.head0.scaled / 1.73205");
  CHECK(f("grad.head0.weights").shapes == "3×3 (back through head0.context)");
}
