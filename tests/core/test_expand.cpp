// Tests of one cell's arithmetic at every step (teach/expand) and of its
// printers, against plain loops and the river-bank numbers known by hand.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <memory>

#include "backend/backend.hpp"
#include "core/error.hpp"
#include "core/expand.hpp"
#include "core/lesson_library.hpp"
#include "core/pipeline.hpp"
#include "render/render.hpp"

namespace attn {

namespace {

struct Traced {
  explicit Traced(const char* id)
      : lesson(find_lesson(id)), trace(run_pipeline(lesson, *backend)) {}
  Lesson lesson;
  std::unique_ptr<Backend> backend = make_backend("cpu");
  Trace trace;
};

}  // namespace

TEST_CASE(
    "expand: the score as the dot product of the query and key rows, as the documents write it") {
  Traced rb("river-bank");
  const CellExpansion e = expand_cell(rb.lesson, rb.trace, "head0.scores", 0, 1);
  CHECK(e.kind == ExpansionKind::product);
  CHECK(e.row_label == "river");
  CHECK(e.col_label == "bank");
  REQUIRE(e.sum);
  CHECK(e.value == doctest::Approx(1.6755).epsilon(1e-12));
  const std::string text = expansion_text(e, 4);
  CHECK(text.find("0.69×0.66 + 0.50×0.54 + 0.86×0.66 + 0.85×0.45 = 1.6755") != std::string::npos);
  CHECK(expansion_latex(e, 4).find("0.69 \\times 0.66") != std::string::npos);
  CHECK(expansion_markdown(e, 4).starts_with("`head0.scores[river,bank] = "));
  const std::string json = expansion_json(e, 4);
  CHECK(json.find("\"kind\": \"product\"") != std::string::npos);
  CHECK(json.find("\"right_label\": \"head0.K[bank,d3]\"") != std::string::npos);
}

TEST_CASE("expand: scale, mask decision, exp, row sum and softmax, checked by plain loops") {
  Traced rb("river-bank");
  const arma::mat& masked = rb.trace.at("head0.masked").value;

  const CellExpansion scaled = expand_cell(rb.lesson, rb.trace, "head0.scaled", 0, 1);
  CHECK(scaled.kind == ExpansionKind::divide);
  CHECK(scaled.source_values.at(0) == doctest::Approx(1.6755));
  CHECK(scaled.divisor == doctest::Approx(2.0));
  CHECK(scaled.value == doctest::Approx(1.6755 / 2).epsilon(1e-12));
  CHECK(expansion_text(scaled, 4).find("/ √4 = 1.6755 / 2.00 = 0.8378") != std::string::npos);

  const CellExpansion kept = expand_cell(rb.lesson, rb.trace, "head0.masked", 0, 1);
  CHECK(kept.kind == ExpansionKind::mask);
  CHECK(kept.mask_reasons == 0u);
  CHECK(expansion_text(kept, 4).find("kept: no mask covers key bank for query river") !=
        std::string::npos);

  const CellExpansion row_sum = expand_cell(rb.lesson, rb.trace, "head0.row_sum", 2, 3);
  CHECK(row_sum.col == 0);  // a one-column step is expanded at column 0
  double loop_sum = 0;
  for (std::size_t j = 0; j < masked.n_cols; ++j) loop_sum += std::exp(masked(2, j));
  CHECK(row_sum.value == doctest::Approx(loop_sum).epsilon(1e-12));
  REQUIRE(row_sum.row_values.size() == 4);

  const CellExpansion w = expand_cell(rb.lesson, rb.trace, "head0.weights", 1, 2);
  CHECK(w.kind == ExpansionKind::softmax);
  // As on paper: E[bank,walk] / Σ[bank], with no shift (nothing overflows here).
  double row_max = masked(1, 0), denominator = 0;
  for (std::size_t j = 0; j < masked.n_cols; ++j) row_max = std::max(row_max, masked(1, j));
  for (std::size_t j = 0; j < masked.n_cols; ++j) denominator += std::exp(masked(1, j));
  CHECK_FALSE(w.shifted);
  CHECK(w.row_max == doctest::Approx(row_max).epsilon(1e-12));
  CHECK(w.denominator == doctest::Approx(denominator).epsilon(1e-12));
  CHECK(w.exps.at(2) == doctest::Approx(std::exp(masked(1, 2))).epsilon(1e-12));
  CHECK(w.exps.at(2) / w.denominator == doctest::Approx(w.value).epsilon(1e-12));
  CHECK(w.value == doctest::Approx(std::exp(masked(1, 2)) / denominator).epsilon(1e-12));
  CHECK(w.note.find("cancels") != std::string::npos);
  CHECK(expansion_text(w, 4).find("exp(0.9002) / (exp(") != std::string::npos);

  const CellExpansion ctx = expand_cell(rb.lesson, rb.trace, "head0.context", 1, 2);
  REQUIRE(ctx.sum);
  CHECK(ctx.sum->terms.at(3).left_ref.label == "head0.weights[bank,by]");
  CHECK(ctx.sum->terms.at(3).right_ref.label == "head0.V[by,d2]");
}

TEST_CASE("expand: the causal mask decision names its reason — a masked-out row is not a softmax") {
  Traced cd("causal-decoder");
  const CellExpansion masked = expand_cell(cd.lesson, cd.trace, "head0.masked", 0, 2);
  CHECK(masked.mask_reasons == static_cast<unsigned>(mask_causal));
  CHECK(std::isinf(masked.value));
  CHECK(expansion_text(masked, 4).find("causal: key animal comes after query <s>") !=
        std::string::npos);
  CHECK(expansion_json(masked, 4).find("\"reasons\": [\"causal\"]") != std::string::npos);

  Traced mp("mask-polarity");
  const CellExpansion dead = expand_cell(mp.lesson, mp.trace, "head0.weights", 2, 0);
  CHECK(dead.exps.empty());
  CHECK(dead.note.find("masked_row") != std::string::npos);
}

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

namespace attn {

TEST_CASE("expand: the encoder layer's cells, from the graph, checked by plain loops") {
  const Traced post("encoder-layer-post-ln");
  const Lesson& L = post.lesson;
  const Trace& t = post.trace;
  const arma::mat& r1 = t.at("layer.residual1").value;
  const CellExpansion sum = expand_cell(L, t, "layer.residual1", 2, 3);
  CHECK(sum.kind == ExpansionKind::add);
  CHECK(sum.sources.at(0).label == "X[sat,d3]");
  CHECK(sum.sources.at(1).label == "output[sat,d3]");
  CHECK(sum.source_values[0] + sum.source_values[1] == doctest::Approx(sum.value).epsilon(1e-12));
  const CellExpansion mean = expand_cell(L, t, "layer.ln1.mean", 2, 5);  // one column: col 0
  CHECK(mean.kind == ExpansionKind::row_mean);
  CHECK(mean.col == 0);
  double total = 0;
  for (double v : mean.row_values) total += v;
  CHECK(mean.row_values.size() == 8);
  CHECK(total / 8 == doctest::Approx(mean.value).epsilon(1e-12));
  CHECK(mean.row_values[3] == r1(2, 3));
  const CellExpansion var = expand_cell(L, t, "layer.ln1.var", 2, 0);
  CHECK(var.kind == ExpansionKind::row_var);
  double squares = 0;
  for (double v : var.row_values) squares += (v - var.mean) * (v - var.mean);
  CHECK(squares / 8 == doctest::Approx(var.value).epsilon(1e-12));
  const CellExpansion x_hat = expand_cell(L, t, "layer.ln1.normalised", 2, 3);
  CHECK(x_hat.kind == ExpansionKind::normalise);
  CHECK(x_hat.eps == 1e-5);
  CHECK((x_hat.source_values[0] - x_hat.source_values[1]) /
            std::sqrt(x_hat.source_values[2] + x_hat.eps) ==
        doctest::Approx(x_hat.value).epsilon(1e-12));
  const CellExpansion affine = expand_cell(L, t, "layer.ln1", 2, 3);
  CHECK(affine.kind == ExpansionKind::scale_shift);
  CHECK(affine.sources.at(1).label == "ln1_gamma[d3]");
  CHECK(affine.source_values[1] * affine.source_values[0] + affine.source_values[2] ==
        doctest::Approx(affine.value).epsilon(1e-12));
  const CellExpansion relu = expand_cell(L, t, "layer.ffn.activation", 0, 0);
  CHECK(relu.kind == ExpansionKind::activation);
  CHECK(!relu.gelu);
  CHECK(relu.value == std::max(0.0, relu.source_values[0]));
  const CellExpansion hidden = expand_cell(L, t, "layer.ffn.hidden", 1, 4);
  REQUIRE(hidden.sum);
  CHECK(hidden.sum->terms.size() == 8);
  CHECK(hidden.sum->bias_ref.label == "b_1[d4]");
  CHECK(expand_cell(L, t, "layer.output", 3, 7).kind == ExpansionKind::copy);
  CHECK(expansion_text(affine, 4).starts_with("layer.ln1[sat,d3] = ln1_gamma[d3]×"));
  CHECK(expansion_text(sum, 4).ends_with("(dropout is the identity at inference)"));
}

}  // namespace attn

TEST_CASE("expand_all: row R of a KV-cache lesson expands decoding step t = R too") {
  const attn::Lesson lesson = attn::find_lesson("kv-cache");
  const std::unique_ptr<attn::Backend> cpu = attn::make_backend("cpu");
  const attn::Trace trace = attn::run_pipeline(lesson, *cpu);
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
