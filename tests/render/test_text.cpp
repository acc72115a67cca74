// The text renderer: labels, formulas, shapes, filters, heatmap, summary.
#include <doctest/doctest.h>

#include "backend/cpu_backend.hpp"
#include "core/error.hpp"
#include "core/lesson_library.hpp"
#include "core/pipeline.hpp"
#include "render/render.hpp"
#include "support/hostile_lesson.hpp"

namespace {

bool has(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

}  // namespace

TEST_CASE("text: steps numbered and named, formula, shapes, token labels") {
  const attn::Lesson L = attn::find_lesson("river-bank");
  attn::CpuBackend cpu;
  const attn::Trace t = attn::run_pipeline(L, cpu);
  attn::RenderOptions o;
  const std::string out = attn::render_text(L, t, o);
  CHECK(has(out, "Step 3 · Q · Queries"));
  CHECK(has(out, "Q = X·W_Q"));
  CHECK(has(out, "shapes: (4×4)·(4×4) → 4×4"));
  CHECK(has(out, "shapes: (4×4)·(4×4)ᵀ → 4×4"));
  // Q(river) by hand: [0.6, 0.2, 0.7, 0.1]·W_Q = [0.69, 0.50, 0.86, 0.85]
  CHECK(has(out, "river  0.6900  0.5000  0.8600  0.8500"));
  CHECK(has(out, "          river    bank    walk      by"));
  CHECK_FALSE(has(out, "\x1b["));

  SUBCASE("--step and --head filter") {
    o.steps = {"head0.weights"};
    const std::string one = attn::render_text(L, t, o);
    CHECK(has(one, "head0.weights"));
    CHECK_FALSE(has(one, "Step 3 · Q"));
    o.steps = {"head0.nope"};
    CHECK_THROWS_AS(attn::render_text(L, t, o), attn::InputError);
    o.steps.clear();
    o.head = 1;
    CHECK_THROWS_WITH_AS(attn::render_text(L, t, o),
                         "--head 1: lesson river-bank has 1 head(s), numbered 0 to 0",
                         attn::InputError);
  }
  SUBCASE("--precision") {
    o.precision = 2;
    CHECK(has(attn::render_text(L, t, o), "river  0.69  0.50  0.86  0.85"));
  }
  SUBCASE("--summary prints statistics and corners") {
    o.summary = attn::Summary::on;
    o.steps = {"head0.scores"};
    const std::string s = attn::render_text(L, t, o);
    CHECK(has(s, "summary: 4×4 · min "));
  }
}

TEST_CASE("text: a 512-token lesson prints a page, not megabytes") {
  attn::Lesson L;
  L.id = "big";
  L.X = arma::mat(512, 8);
  for (std::size_t i = 0; i < L.X.n_elem; ++i) L.X(i) = static_cast<double>(i % 7) * 0.1;
  for (std::size_t i = 0; i < 512; ++i) L.tokens.push_back("w" + std::to_string(i));
  L.W_Q = L.W_K = L.W_V = arma::eye(8, 8);
  L.d_k = L.d_v = 8;
  L.causal = true;
  attn::CpuBackend cpu;
  const attn::Trace t = attn::run_pipeline(L, cpu);
  attn::RenderOptions o;
  o.width = 200;  // each summary on one line
  const std::string out = attn::render_text(L, t, o);
  CHECK(out.size() < 20000);
  CHECK(has(out, "summary: 512×512"));
  CHECK(has(out, "130816 cells -inf"));  // 512·511/2 future cells masked
  CHECK(has(out, "w511"));
  CHECK(has(out, "…"));
}

TEST_CASE("text: a token's newline or escape code is shown as a control picture, one line a row") {
  const attn::Lesson L = testsupport::hostile_lesson();
  attn::CpuBackend cpu;
  attn::RenderOptions o;
  o.width = 200;  // the title and source on one line each
  const std::string text = attn::render_text(L, attn::run_pipeline(L, cpu), o);
  CHECK_FALSE(testsupport::has_raw_control(text));  // no escape code reaches the terminal
  CHECK(text.starts_with(
      "attn-trace · hostile — Line one␊line two␊␊after a blank␉tab ␁ ␡ | # \\ { $ % & _ ^ ~\n"
      "source: a source␊with ␛[31m colour\n"));
  // The story keeps its lines (its blank line too); other controls are pictures.
  CHECK(has(text, "\nFirst | # \\ { } $ % & _ ^ ~\n\nSecond␉with ␁ and ␡.\nThird\n"));
  // X's rows: a label each, padded to the widest (blank␊␊line, 11 columns).
  CHECK(has(text,
            "  new␊line     1.0000   0.0000\n  blank␊␊line  0.0000   1.0000\n"
            "  tab␉|#       1.0000   1.0000\n  ␁\\{$         0.5000   0.5000\n"
            "  %&_^~␡`      1.0000  -1.0000\n"));
}
