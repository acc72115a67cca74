// Printing one cell's arithmetic: the sum of products written from the
// lesson's numbers, negative factors in parentheses, the softmax line against
// a plain loop, LaTeX for a masked cell, JSON that parses, numbers by hand;
// and each kind of cell expanded (core/expand) and printed, on the lessons.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <string>
#include <vector>

#include "backend/cpu_backend.hpp"
#include "core/expand.hpp"
#include "core/lesson_library.hpp"
#include "core/pipeline.hpp"
#include "render/render.hpp"
#include "support/mini_json.hpp"

namespace {

struct Traced {
  attn::Lesson lesson;
  attn::Trace trace;
  explicit Traced(attn::Lesson l) : lesson(std::move(l)) {
    attn::CpuBackend cpu;
    trace = attn::run_pipeline(lesson, cpu);
  }
  explicit Traced(const char* id) : Traced(attn::find_lesson(id)) {}
  attn::CellExpansion operator()(const char* step, std::size_t r, std::size_t c) const {
    return attn::expand_cell(lesson, trace, step, r, c);
  }
};

// `decimals` places, trailing zeros dropped down to two: the test's own copy of the rule.
std::string by_hand(double v, int decimals) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
  std::string s = buf;
  while (s.size() > s.find('.') + 3 && s.back() == '0') s.pop_back();
  return s;
}

// Q, K and V are X itself, plus a negative bias on Q's first column.
const char* kSigns = R"(
[lesson]
id = "signs"
[input]
tokens = ["a", "b"]
X = [[-0.5, 1.0], [0.2, 0.3]]
[weights]
W_Q = "identity"
W_K = "identity"
W_V = "identity"
b_Q = [-0.1, 0.0]
)";

}  // namespace

TEST_CASE("expansion_text: a score is the sum of the products of its query and key rows") {
  const Traced rb(attn::find_lesson("river-bank"));
  const attn::CellExpansion e = rb("head0.scores", 2, 3);
  // By hand: Q(walk) = [0.4, 0.8, 0.1, 0.5]·W_Q = [0.63, 0.74, 0.64, 0.87],
  // K(by) = [0.9, 0.1, 0.2, 0.6]·W_K = [1.04, 0.38, 0.40, 0.85], and
  // 0.6552 + 0.2812 + 0.2560 + 0.7395 = 1.9319.
  CHECK(attn::expansion_text(e, 4) ==
        "head0.scores[walk,by] = head0.Q[walk,:]·head0.K[by,:] = "
        "0.63×1.04 + 0.74×0.38 + 0.64×0.40 + 0.87×0.85 = 1.9319");
  CHECK(attn::expansion_markdown(e, 4) == "`" + attn::expansion_text(e, 4) + "`");

  // The same line from a plain loop over the lesson's matrices.
  const attn::Lesson& L = rb.lesson;
  std::string terms;
  double total = 0;
  for (std::size_t k = 0; k < 4; ++k) {
    double q = 0, key = 0;
    for (std::size_t i = 0; i < 4; ++i) q += L.X(2, i) * L.W_Q(i, k);
    for (std::size_t i = 0; i < 4; ++i) key += L.X(3, i) * L.W_K(i, k);
    terms += (k ? " + " : "") + by_hand(q, 4) + "×" + by_hand(key, 4);
    total += q * key;
  }
  CHECK(attn::expansion_text(e, 4).ends_with(" = " + terms + " = " + by_hand(total, 4)));
  CHECK(e.value == doctest::Approx(total).epsilon(1e-12));
}

TEST_CASE("expansion_text: negative factors in parentheses unless they open the sum — the bias") {
  const Traced s(attn::parse_lesson(kSigns, "signs.toml"));
  // Q = X + b_Q: Q(a) = [-0.6, 1.0], Q(b) = [0.1, 0.3]; K = X.
  CHECK(attn::expansion_text(s("head0.scores", 0, 1), 4)
            .ends_with(" = -0.60×0.20 + 1.00×0.30 = 0.18"));
  CHECK(attn::expansion_text(s("head0.scores", 1, 0), 4)
            .ends_with(" = 0.10×(-0.50) + 0.30×1.00 = 0.25"));
  const std::string q = attn::expansion_text(s("Q", 0, 0), 4);
  CHECK(q.starts_with("Q[a,d0] = X[a,:]·W_Q[:,d0] + b_Q"));
  CHECK(q.ends_with(" = -0.50×1.00 + 1.00×0.00 + (-0.10) = -0.60"));
}

TEST_CASE("expansion_text: the softmax line as on paper, E / Σ, against a plain loop") {
  const Traced rb(attn::find_lesson("river-bank"));
  const attn::Lesson& L = rb.lesson;
  // The river row of head0.scaled by plain loops: Q(river)·K(j) / √4.
  auto project = [&](const arma::mat& W, std::size_t row, std::size_t col) {
    double s = 0;
    for (std::size_t i = 0; i < 4; ++i) s += L.X(row, i) * W(i, col);
    return s;
  };
  std::vector<double> scaled(4);
  for (std::size_t j = 0; j < 4; ++j) {
    for (std::size_t k = 0; k < 4; ++k) scaled[j] += project(L.W_Q, 0, k) * project(L.W_K, j, k);
    scaled[j] /= 2.0;
  }
  std::string denominator;
  double sum = 0;
  for (double x : scaled) {
    denominator += (denominator.empty() ? "" : " + ") + ("exp(" + by_hand(x, 3) + ")");
    sum += std::exp(x);
  }
  const double numerator = std::exp(scaled[1]);
  const std::string expected = "head0.weights[river,bank] = exp(" + by_hand(scaled[1], 3) +
                               ") / (" + denominator + ") = " + by_hand(numerator, 3) + " / " +
                               by_hand(sum, 3) + " = " + by_hand(numerator / sum, 3);
  const attn::CellExpansion e = rb("head0.weights", 0, 1);
  CHECK_FALSE(e.shifted);
  // The note on the stable shift is the caller's to print once, not part of the line.
  CHECK(attn::expansion_text(e, 3) == expected);
  CHECK(e.note.find("cancels") != std::string::npos);
  CHECK(by_hand(numerator / sum, 4) == "0.2352");  // the story's river row: 0.2356, 0.2352, …
}

TEST_CASE("expansion_latex and expansion_json: a masked cell is -infinity, named as such") {
  const Traced cd(attn::find_lesson("causal-decoder"));
  const attn::CellExpansion e = cd("head0.masked", 0, 2);
  const std::string tex = attn::expansion_latex(e, 4);
  CHECK(tex.starts_with(
      "\\mathrm{head0.masked}[\\text{\\textless{}s\\textgreater{}},\\text{animal}] = "
      "\\text{the fill} = -\\infty\\allowbreak\\quad \\text{(masked, causal: "));
  CHECK(tex.find("−") == std::string::npos);  // no Unicode minus in LaTeX

  const testjson::Value json = testjson::parse(attn::expansion_json(e, 4));
  CHECK(json["step"].text == "head0.masked");
  CHECK(json["cell"][0].number == 0);
  CHECK(json["cell"][1].number == 2);
  CHECK(json["value"].text == "-inf");
  CHECK(json["fill"].text == "-inf");
  CHECK(json["masked"].boolean);
  CHECK(json["text"].text == attn::expansion_text(e, 4));
}

TEST_CASE("expansion_json: every term's product and the value, to the bit") {
  const Traced rb(attn::find_lesson("river-bank"));
  const attn::CellExpansion e = rb("head0.context", 1, 2);
  const testjson::Value json = testjson::parse(attn::expansion_json(e, 4));
  CHECK(json["kind"].text == "product");
  CHECK(json["value"].number == rb.trace.at("head0.context").value(1, 2));
  CHECK(json["bias"].is_null());
  const arma::mat& A = rb.trace.at("head0.weights").value;
  const arma::mat& V = rb.trace.at("head0.V").value;
  REQUIRE(json["terms"].size() == 4);
  double sum = 0;
  for (std::size_t k = 0; k < 4; ++k) {
    const testjson::Value& t = json["terms"][k];
    CHECK(t["left"].number == A(1, k));
    CHECK(t["right"].number == V(k, 2));
    CHECK(t["product"].number == doctest::Approx(A(1, k) * V(k, 2)).epsilon(1e-15));
    sum += t["product"].number;
  }
  CHECK(sum == doctest::Approx(json["value"].number).epsilon(1e-12));
}

TEST_CASE("expansion_text: a lesson without scaling divides by 1 and says so") {
  const Traced raw(attn::find_lesson("raw-similarity"));
  const attn::CellExpansion e = raw("head0.scaled", 0, 1);
  const double score = raw.trace.at("head0.scores").value(0, 1);
  CHECK(attn::expansion_text(e, 4).ends_with(" / 1 (no scaling) = " + by_hand(score, 4) +
                                             " / 1.00 = " + by_hand(score, 4)));
}

TEST_CASE("format_by_hand: decimals as written by hand") {
  CHECK(attn::format_by_hand(0.5, 4) == "0.50");
  CHECK(attn::format_by_hand(1.67550, 4) == "1.6755");
  CHECK(attn::format_by_hand(2.0, 4) == "2.00");
  CHECK(attn::format_by_hand(0.123456, 4) == "0.1235");
  CHECK(attn::format_by_hand(-0.00001, 4) == "0.00");
  CHECK(attn::format_by_hand(-std::numeric_limits<double>::infinity(), 4) == "-inf");
  CHECK(attn::format_by_hand(-1e9, 4) == "-1.0000e+09");
}

// BUG (src/render/expansion.cpp, hand_number): the trailing zeros of a number in
// scientific notation are dropped from its exponent: 1e10 prints "1.0000e+1"
// (ten). A lesson with mask_fill = -1e10 shows `= the fill = -1.0000e+1`.
TEST_CASE("format_by_hand: a huge number keeps its exponent") {
  for (const double v : {1e10, -1e10, 2e20}) {
    CAPTURE(v);
    CHECK(std::strtod(attn::format_by_hand(v, 4).c_str(), nullptr) == v);
  }
}

// Cells of the lessons, expanded and printed.
namespace attn {

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
