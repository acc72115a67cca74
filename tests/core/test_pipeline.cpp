// Pipeline steps on small cases known by hand.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "core/lesson.hpp"
#include "core/lesson_library.hpp"
#include "core/pipeline.hpp"
#include "support/host_backend.hpp"

namespace {

constexpr double kTol = 1e-12;

// A lesson from TOML text, for tests.
attn::Lesson lesson(const std::string& body) {
  return attn::parse_lesson(body, "test.toml");
}

attn::Trace trace_of(const attn::Lesson& L) {
  attn::testing::HostBackend cpu;
  return attn::run_pipeline(L, cpu);
}

const arma::mat& step(const attn::Trace& t, const char* id) {
  return t.at(id).value;
}

}  // namespace

TEST_CASE("identity projections give Q = K = V = X and scores = X·Xᵀ") {
  const attn::Trace t = trace_of(lesson(R"(
[input]
X = [[1, 2], [3, 4]]
[weights]
W_Q = "identity"
W_K = "identity"
W_V = "identity"
)"));
  CHECK(arma::approx_equal(step(t, "Q"), step(t, "X"), "absdiff", kTol));
  CHECK(arma::approx_equal(step(t, "V"), step(t, "X"), "absdiff", kTol));
  const arma::mat& S = step(t, "head0.scores");
  CHECK(S(0, 0) == doctest::Approx(5.0).epsilon(kTol));   // 1·1 + 2·2
  CHECK(S(0, 1) == doctest::Approx(11.0).epsilon(kTol));  // 1·3 + 2·4
  CHECK(S(1, 1) == doctest::Approx(25.0).epsilon(kTol));  // 3·3 + 4·4
  CHECK(step(t, "head0.scaled")(0, 1) == doctest::Approx(11.0 / std::sqrt(2.0)).epsilon(kTol));
}

TEST_CASE("a 2×2 softmax by hand") {
  // Scores [[0, ln 3], [0, 0]] with no scaling: weights [[1/4, 3/4], [1/2, 1/2]].
  const attn::Trace t = trace_of(lesson(R"(
[model]
scale = "none"
[input]
X = [[1, 0], [0, 1]]
[weights]
W_Q = [[1, 0], [0, 0]]
W_K = [[0, 0], [1.0986122886681098, 0]]
W_V = [[10, 0], [0, 20]]
)"));
  const arma::mat& A = step(t, "head0.weights");
  CHECK(A(0, 0) == doctest::Approx(0.25).epsilon(kTol));
  CHECK(A(0, 1) == doctest::Approx(0.75).epsilon(kTol));
  CHECK(A(1, 0) == doctest::Approx(0.5).epsilon(kTol));
  CHECK(A(1, 1) == doctest::Approx(0.5).epsilon(kTol));
  CHECK(step(t, "head0.row_sum")(0, 0) == doctest::Approx(4.0).epsilon(kTol));  // e^0 + e^ln3
  CHECK(step(t, "head0.exp")(0, 1) == doctest::Approx(3.0).epsilon(kTol));
  // context = A·V: V rows are [10, 0] and [0, 20].
  CHECK(step(t, "head0.context")(0, 0) == doctest::Approx(2.5).epsilon(kTol));
  CHECK(step(t, "head0.context")(0, 1) == doctest::Approx(15.0).epsilon(kTol));
}

TEST_CASE("causal: the first query sees only itself, so its row is [1, 0, 0]") {
  const attn::Trace t = trace_of(lesson(R"(
[model]
causal = true
[input]
X = [[0.3, 0.1], [0.2, 0.5], [0.9, 0.4]]
[weights]
W_Q = "identity"
W_K = "identity"
W_V = "identity"
)"));
  const arma::mat& A = step(t, "head0.weights");
  CHECK(A(0, 0) == 1.0);
  CHECK(A(0, 1) == 0.0);
  CHECK(A(0, 2) == 0.0);
  CHECK(A(1, 2) == 0.0);
  CHECK(std::isinf(step(t, "head0.masked")(0, 2)));
  CHECK(step(t, "head0.masked")(2, 1) ==
        doctest::Approx(step(t, "head0.scaled")(2, 1)).epsilon(kTol));
  // row 1 sees keys 0 and 1: weights proportional to exp of their scaled scores
  const arma::mat& s = step(t, "head0.scaled");
  const double e0 = std::exp(s(1, 0)), e1 = std::exp(s(1, 1));
  CHECK(A(1, 0) == doctest::Approx(e0 / (e0 + e1)).epsilon(kTol));
  CHECK(arma::approx_equal(step(t, "head0.context").row(0), step(t, "X").row(0), "absdiff", kTol));
}

TEST_CASE("sinusoidal positional encoding: PE(1,0) = sin(1), PE(1,1) = cos(1)") {
  const arma::mat PE = attn::positional_encoding(3, 4);
  CHECK(PE(0, 0) == 0.0);
  CHECK(PE(0, 1) == 1.0);
  CHECK(PE(1, 0) == doctest::Approx(std::sin(1.0)).epsilon(kTol));
  CHECK(PE(1, 1) == doctest::Approx(std::cos(1.0)).epsilon(kTol));
  CHECK(PE(1, 2) == doctest::Approx(std::sin(1.0 / 100.0)).epsilon(kTol));  // 10000^(2/4) = 100
  CHECK(PE(2, 3) == doctest::Approx(std::cos(2.0 / 100.0)).epsilon(kTol));
  const attn::Trace t = trace_of(lesson(R"(
[model]
positional_encoding = "sinusoidal"
[input]
X = [[1, 1, 1, 1], [2, 2, 2, 2]]
[weights]
W_Q = "identity"
W_K = "identity"
W_V = "identity"
)"));
  CHECK(step(t, "X+PE")(1, 0) == doctest::Approx(2.0 + std::sin(1.0)).epsilon(kTol));
  CHECK(step(t, "Q")(1, 1) == doctest::Approx(2.0 + std::cos(1.0)).epsilon(kTol));
}

TEST_CASE("mask sources, alone and combined") {
  const std::string body = R"(
[input]
X = [[1, 0], [0, 1], [1, 1]]
{}
[weights]
W_Q = "identity"
W_K = "identity"
W_V = "identity"
)";
  auto reasons = [&](const std::string& model, const std::string& input) {
    std::string text = body;
    text.replace(text.find("{}"), 2, input);
    return attn::mask_reasons(lesson(model + text));
  };
  SUBCASE("causal") {
    const arma::umat m = reasons("[model]\ncausal = true\n", "");
    CHECK(m(0, 1) == attn::mask_causal);
    CHECK(m(0, 2) == attn::mask_causal);
    CHECK(m(1, 2) == attn::mask_causal);
    CHECK(m(2, 0) == 0u);
    CHECK(m(1, 1) == 0u);
    CHECK(arma::accu(m != 0u) == 3);
  }
  SUBCASE("key padding masks the padded key for every query") {
    const arma::umat m = reasons("", "key_padding = [false, false, true]");
    for (std::size_t i = 0; i < 3; ++i) {
      CHECK(m(i, 2) == attn::mask_padding);
      CHECK(m(i, 0) == 0u);
    }
  }
  SUBCASE("keep: 0 = masked") {
    const arma::umat m = reasons("", "keep = [[1, 1, 0], [0, 1, 1], [1, 1, 1]]");
    CHECK(m(0, 2) == attn::mask_keep);
    CHECK(m(1, 0) == attn::mask_keep);
    CHECK(arma::accu(m != 0u) == 2);
  }
  SUBCASE("combined: a cell is masked if any source masks it, and says which") {
    const arma::umat m =
        reasons("[model]\ncausal = true\n",
                "key_padding = [false, true, false]\nkeep = [[1, 1, 1], [0, 1, 1], [1, 1, 1]]");
    CHECK(m(0, 1) == (attn::mask_causal | attn::mask_padding));
    CHECK(m(1, 0) == attn::mask_keep);
    CHECK(m(2, 1) == attn::mask_padding);
    CHECK(m(1, 2) == attn::mask_causal);
    CHECK(m(2, 0) == 0u);
    CHECK(m(2, 2) == 0u);
  }
}

TEST_CASE("masking replaces the value by the fill — it does not add to it") {
  const arma::mat scaled = {{1.5, -2.0}, {0.25, 4.0}};
  const arma::umat mask = {{0, 1}, {1, 0}};
  const arma::mat masked = attn::apply_mask(scaled, mask, -1e9);
  CHECK(masked(0, 1) == -1e9);
  CHECK(masked(1, 0) == -1e9);
  CHECK(masked(0, 0) == 1.5);
  CHECK(masked(1, 1) == 4.0);
}

TEST_CASE("fully masked rows under each policy and each fill") {
  const std::string body = R"(
[input]
X = [[1, 0], [0, 1]]
keep = [[0, 0], [1, 1]]
[weights]
W_Q = "identity"
W_K = "identity"
W_V = [[2, 0], [0, 4]]
)";
  SUBCASE("nan (default), with a warning naming the row") {
    const attn::Trace t = trace_of(lesson(body));
    CHECK(std::isnan(step(t, "head0.weights")(0, 0)));
    CHECK(std::isnan(step(t, "head0.context")(0, 1)));
    // row 1 = t1 = [0, 1] sees both keys: scores [0, 1] / √2
    const double e = std::exp(1.0 / std::sqrt(2.0));
    CHECK(step(t, "head0.weights")(1, 0) == doctest::Approx(1.0 / (1.0 + e)).epsilon(kTol));
    REQUIRE(t.warnings.size() == 1);
    CHECK(attn::english_warnings(t)[0].find("head0.weights row 0 (t0)") == 0);
  }
  SUBCASE("zero") {
    const attn::Trace t = trace_of(lesson("[model]\nmasked_row = \"zero\"\n" + body));
    CHECK(step(t, "head0.weights")(0, 0) == 0.0);
    CHECK(step(t, "head0.context")(0, 1) == 0.0);
    CHECK(t.warnings.size() == 1);
  }
  SUBCASE("uniform") {
    const attn::Trace t = trace_of(lesson("[model]\nmasked_row = \"uniform\"\n" + body));
    CHECK(step(t, "head0.weights")(0, 1) == 0.5);
    CHECK(step(t, "head0.context")(0, 1) == doctest::Approx(2.0).epsilon(kTol));  // (0 + 4) / 2
  }
  SUBCASE("a finite fill makes the row uniform and the policy is not used") {
    const attn::Trace t =
        trace_of(lesson("[model]\nmask_fill = -1e9\nmasked_row = \"zero\"\n" + body));
    CHECK(step(t, "head0.masked")(0, 0) == -1e9);
    CHECK(step(t, "head0.weights")(0, 0) == doctest::Approx(0.5).epsilon(kTol));
    REQUIRE(t.warnings.size() == 1);
    CHECK(attn::english_warnings(t)[0].find("uniform") != std::string::npos);
  }
}

TEST_CASE("two heads: split into column blocks, attend, concat, project") {
  const attn::Trace t = trace_of(lesson(R"(
[model]
heads = 2
[input]
X = [[1, 2, 3, 4], [5, 6, 7, 8]]
[weights]
W_Q = "identity"
W_K = "identity"
W_V = "identity"
W_O = [[1, 0, 0, 0], [0, 1, 0, 0], [0, 0, 1, 0], [0, 0, 0, 2]]
b_O = [0.5, 0, 0, 0]
)"));
  CHECK(step(t, "head1.Q")(0, 0) == 3.0);
  CHECK(step(t, "head1.Q")(1, 1) == 8.0);
  CHECK(step(t, "head0.K")(1, 1) == 6.0);
  // head 1, d_k = 2: score (0,1) = 3·7 + 4·8 = 53, scaled by √2.
  CHECK(step(t, "head1.scores")(0, 1) == doctest::Approx(53.0).epsilon(kTol));
  CHECK(step(t, "head1.scaled")(0, 1) == doctest::Approx(53.0 / std::sqrt(2.0)).epsilon(kTol));
  const arma::mat& concat = step(t, "concat");
  REQUIRE(concat.n_cols == 4);
  CHECK(arma::approx_equal(concat.cols(0, 1), step(t, "head0.context"), "absdiff", kTol));
  CHECK(arma::approx_equal(concat.cols(2, 3), step(t, "head1.context"), "absdiff", kTol));
  CHECK(step(t, "output")(0, 0) == doctest::Approx(concat(0, 0) + 0.5).epsilon(kTol));
  CHECK(step(t, "output")(1, 3) == doctest::Approx(2.0 * concat(1, 3)).epsilon(kTol));
}

TEST_CASE("cross-attention: queries from X, keys and values from memory") {
  const attn::Trace t = trace_of(lesson(R"(
[input]
tokens = ["je", "t'aime"]
X = [[1, 0], [0, 1]]
memory_tokens = ["I", "love", "you"]
memory = [[1, 0, 0], [0, 1, 0], [0, 0, 1]]
key_padding = [false, false, true]
[weights]
W_Q = "identity"
W_K = [[2, 0], [0, 2], [1, 1]]
W_V = [[1, 0], [0, 1], [5, 5]]
)"));
  CHECK(step(t, "head0.scores").n_rows == 2);
  CHECK(step(t, "head0.scores").n_cols == 3);
  CHECK(t.at("head0.weights").cols == std::vector<std::string>{"I", "love", "you"});
  CHECK(t.at("head0.weights").rows == std::vector<std::string>{"je", "t'aime"});
  // query t'aime = [0, 1]; keys I = [2, 0], love = [0, 2]: scores 0 and 2, scaled by √2.
  const double a = std::exp(2.0 / std::sqrt(2.0));
  CHECK(step(t, "head0.weights")(1, 1) == doctest::Approx(a / (1.0 + a)).epsilon(kTol));
  CHECK(step(t, "head0.weights")(1, 2) == 0.0);  // the padded key
  CHECK(step(t, "head0.context")(1, 1) == doctest::Approx(a / (1.0 + a)).epsilon(kTol));
}

TEST_CASE("biases are added to every row") {
  const attn::Trace t = trace_of(lesson(R"(
[input]
X = [[1, 2], [3, 4]]
[weights]
W_Q = "identity"
W_K = "identity"
W_V = [[1, 0], [0, 1]]
b_Q = [0.5, -1]
b_K = [1, 1]
b_V = [10, 20]
)"));
  CHECK(step(t, "Q")(1, 0) == 3.5);
  CHECK(step(t, "Q")(1, 1) == 3.0);
  CHECK(step(t, "K")(0, 1) == 3.0);
  CHECK(step(t, "V")(0, 1) == 22.0);
  // scores(0,0) = Q0·K0 = [1.5, 1]·[2, 3] = 6
  CHECK(step(t, "head0.scores")(0, 0) == doctest::Approx(6.0).epsilon(kTol));
}

TEST_CASE("scale: sqrt_dk, none, or a number") {
  const std::string body = R"(
[input]
X = [[1, 2, 3, 4]]
[weights]
W_Q = "identity"
W_K = "identity"
W_V = "identity"
)";
  CHECK(trace_of(lesson(body)).scale == 2.0);
  CHECK(step(trace_of(lesson(body)), "head0.scaled")(0, 0) == doctest::Approx(15.0).epsilon(kTol));
  CHECK(step(trace_of(lesson("[model]\nscale = \"none\"\n" + body)), "head0.scaled")(0, 0) == 30.0);
  CHECK(step(trace_of(lesson("[model]\nscale = 8\n" + body)), "head0.scaled")(0, 0) == 3.75);
}

TEST_CASE("scores that overflow double precision: the NaN row is named in a warning") {
  const attn::Trace t = trace_of(lesson(R"(
[input]
X = [[1e200, 1], [1, 2]]
[weights]
W_Q = "identity"
W_K = "identity"
W_V = "identity"
)"));
  CHECK(std::isinf(step(t, "head0.scores")(0, 0)));
  CHECK(std::isnan(step(t, "head0.weights")(0, 0)));
  CHECK(step(t, "head0.weights")(1, 0) == 1.0);  // row t1: scores 1e200 and 5
  REQUIRE(t.warnings.size() == 1);
  CHECK(attn::english_warnings(t)[0].find("head0.weights row 0 (t0): not a number") == 0);
}

TEST_CASE("key-bias: b_K moves each score row by q·b_K and leaves weights and context alone") {
  const attn::Lesson with = attn::find_lesson("key-bias");
  REQUIRE(with.b_K.has_value());
  attn::Lesson without = with;
  without.b_K.reset();
  const attn::Trace a = trace_of(with), b = trace_of(without);
  CHECK(arma::approx_equal(step(a, "head0.weights"), step(b, "head0.weights"), "absdiff", 1e-12));
  CHECK(arma::approx_equal(step(a, "head0.context"), step(b, "head0.context"), "absdiff", 1e-12));
  // The scores do differ: row i by q_i·b_K, the same for every key.
  const arma::vec shift = step(a, "Q") * with.b_K->t();
  const arma::mat diff = step(a, "head0.scores") - step(b, "head0.scores");
  CHECK(arma::abs(shift).max() > 0.1);
  for (arma::uword j = 0; j < diff.n_cols; ++j)
    CHECK(arma::approx_equal(arma::vec(diff.col(j)), shift, "absdiff", 1e-12));
}

TEST_CASE("without positions, permuted tokens give permuted outputs (permutation equivariance)") {
  SUBCASE("word-order and word-order-swapped: the same rows in another order") {
    const attn::Trace a = trace_of(attn::find_lesson("word-order"));
    const attn::Trace b = trace_of(attn::find_lesson("word-order-swapped"));
    const arma::uvec p = {2, 1, 0};  // row i of the swapped sentence is row p[i] of the first
    for (const char* id : {"Q", "K", "V", "head0.context"})
      CHECK(arma::approx_equal(step(b, id), arma::mat(step(a, id).rows(p)), "absdiff", 1e-12));
    for (const char* id : {"head0.scores", "head0.weights"})
      CHECK(arma::approx_equal(step(b, id), arma::mat(step(a, id).submat(p, p)), "absdiff", 1e-12));
  }
  SUBCASE("every permutation of river-bank's tokens") {
    const attn::Lesson base = attn::find_lesson("river-bank");
    const attn::Trace a = trace_of(base);
    arma::uvec p = {0, 1, 2, 3};
    do {
      attn::Lesson permuted = base;
      permuted.X = base.X.rows(p);
      const attn::Trace b = trace_of(permuted);
      CHECK(arma::approx_equal(step(b, "head0.context"),
                               arma::mat(step(a, "head0.context").rows(p)), "absdiff", 1e-12));
      CHECK(arma::approx_equal(step(b, "head0.weights"),
                               arma::mat(step(a, "head0.weights").submat(p, p)), "absdiff", 1e-12));
    } while (std::next_permutation(p.begin(), p.end()));
  }
}

namespace {

// One token [1, 3], identity attention (one key: weight 1, output = X), an FFN
// of width 3: small enough to follow by hand.
const char* kLayer = R"(
[input]
X = [[1, 3]]
[layer]
norm = "{}"
activation = "{}"
[weights]
W_Q = "identity"
W_K = "identity"
W_V = "identity"
W_O = "identity"
W_1 = [[1, 0, 1], [0, 1, 1]]
b_1 = [0, 0, 0.5]
W_2 = [[1, 0], [0, 1], [1, 1]]
)";

attn::Lesson layer_lesson(const char* norm, const char* activation) {
  std::string body = kLayer;
  body.replace(body.find("{}"), 2, norm);
  body.replace(body.find("{}"), 2, activation);
  return lesson(body);
}

std::vector<std::string> ids_from(const attn::Trace& t, const std::string& first) {
  const std::vector<std::string> all = t.ids();
  return {std::find(all.begin(), all.end(), first), all.end()};
}

}  // namespace

TEST_CASE("encoder layer, Post-LN with ReLU: every sub-step by hand") {
  const attn::Trace t = trace_of(layer_lesson("post", "relu"));
  const double eps = 1e-5;
  // residual1 = X + output = [2, 6]: mean 4, biased variance 4.
  CHECK(step(t, "layer.residual1")(0, 1) == 6.0);
  CHECK(step(t, "layer.ln1.mean")(0, 0) == doctest::Approx(4.0).epsilon(kTol));
  CHECK(step(t, "layer.ln1.var")(0, 0) == doctest::Approx(4.0).epsilon(kTol));
  const double a = 2.0 / std::sqrt(4.0 + eps);  // LN1 = [-a, a] (gamma 1, beta 0)
  CHECK(step(t, "layer.ln1.normalised")(0, 0) == doctest::Approx(-a).epsilon(kTol));
  CHECK(step(t, "layer.ln1")(0, 1) == doctest::Approx(a).epsilon(kTol));
  // hidden = [-a, a, 0.5]; ReLU -> [0, a, 0.5]; out = [0.5, a + 0.5]
  CHECK(step(t, "layer.ffn.hidden")(0, 0) == doctest::Approx(-a).epsilon(kTol));
  CHECK(step(t, "layer.ffn.activation")(0, 0) == 0.0);
  CHECK(step(t, "layer.ffn.out")(0, 1) == doctest::Approx(a + 0.5).epsilon(kTol));
  // residual2 = LN1 + FFN = [0.5 − a, 2a + 0.5]: deviations ∓3a/2 from the mean.
  CHECK(step(t, "layer.residual2")(0, 0) == doctest::Approx(0.5 - a).epsilon(kTol));
  const double d = 1.5 * a, y = d / std::sqrt(d * d + eps);
  CHECK(step(t, "layer.ln2.var")(0, 0) == doctest::Approx(d * d).epsilon(kTol));
  CHECK(step(t, "layer.output")(0, 0) == doctest::Approx(-y).epsilon(kTol));
  CHECK(step(t, "layer.output")(0, 1) == doctest::Approx(y).epsilon(kTol));
  CHECK(ids_from(t, "layer.residual1") == std::vector<std::string>{"layer.residual1",
                                                                   "layer.ln1.mean",
                                                                   "layer.ln1.var",
                                                                   "layer.ln1.normalised",
                                                                   "ln1_gamma",
                                                                   "ln1_beta",
                                                                   "layer.ln1",
                                                                   "W_1",
                                                                   "b_1",
                                                                   "layer.ffn.hidden",
                                                                   "layer.ffn.activation",
                                                                   "W_2",
                                                                   "layer.ffn.out",
                                                                   "layer.residual2",
                                                                   "layer.ln2.mean",
                                                                   "layer.ln2.var",
                                                                   "layer.ln2.normalised",
                                                                   "ln2_gamma",
                                                                   "ln2_beta",
                                                                   "layer.ln2",
                                                                   "layer.output"});
  // Each step says what it was made from.
  CHECK(t.at("layer.residual1").made.inputs == std::vector<std::string>{"X", "output"});
  CHECK(t.at("layer.residual2").made.inputs ==
        std::vector<std::string>{"layer.ln1", "layer.ffn.out"});
  CHECK(t.at("layer.ln1.normalised").made.eps == eps);
  CHECK(t.at("layer.output").made.inputs == std::vector<std::string>{"layer.ln2"});
}

TEST_CASE("encoder layer, Pre-LN: LayerNorm first, attention on it, no final LayerNorm") {
  const attn::Trace t = trace_of(layer_lesson("pre", "relu"));
  const std::vector<std::string> ids = t.ids();
  CHECK(ids[1] == "layer.ln1.mean");
  CHECK(t.at("Q").made.inputs.at(0) == "layer.ln1");
  CHECK(t.at("K").made.inputs.at(0) == "layer.ln1");
  CHECK(t.at("layer.residual1").made.inputs == std::vector<std::string>{"X", "output"});
  CHECK(t.at("layer.ln2.mean").made.inputs == std::vector<std::string>{"layer.residual1"});
  CHECK(t.at("layer.ffn.hidden").made.inputs.at(0) == "layer.ln2");
  CHECK(t.at("layer.residual2").made.inputs ==
        std::vector<std::string>{"layer.residual1", "layer.ffn.out"});
  CHECK(t.at("layer.output").made.inputs == std::vector<std::string>{"layer.residual2"});
  // x = [1, 3]: LN1 = [-b, b], b = 1/√(1 + eps); attention of one token gives it back.
  const double b = 1.0 / std::sqrt(1.0 + 1e-5);
  CHECK(step(t, "output")(0, 0) == doctest::Approx(-b).epsilon(kTol));
  CHECK(step(t, "layer.residual1")(0, 1) == doctest::Approx(3.0 + b).epsilon(kTol));
  CHECK(arma::approx_equal(step(t, "layer.output"), step(t, "layer.residual2"), "absdiff", 0.0));
}

TEST_CASE("encoder layer with residual = false: each residual step is the sub-layer's output") {
  for (const char* norm : {"post", "pre"}) {
    std::string body = kLayer;
    body.replace(body.find("{}"), 2, norm);
    body.replace(body.find("{}"), 2, "relu");
    body.replace(body.find("[weights]"), 9, "residual = false\n[weights]");
    const attn::Lesson L = lesson(body);
    REQUIRE_FALSE(L.layer->residual);
    const attn::Trace t = trace_of(L);
    CAPTURE(norm);
    CHECK(t.at("layer.residual1").made.op == attn::Op::identity);
    CHECK(t.at("layer.residual1").made.inputs == std::vector<std::string>{"output"});
    CHECK(t.at("layer.residual2").made.inputs == std::vector<std::string>{"layer.ffn.out"});
    CHECK(arma::approx_equal(step(t, "layer.residual1"), step(t, "output"), "absdiff", 0.0));
    CHECK(arma::approx_equal(step(t, "layer.residual2"), step(t, "layer.ffn.out"), "absdiff", 0.0));
  }
  // Post-LN, x = [1, 3]: the attention of one token gives X back, so
  // residual1 = [1, 3] (not 2·X as with the sum); LN1 = [-b, b].
  const attn::Trace t = trace_of(lesson([] {
    std::string body = kLayer;
    body.replace(body.find("{}"), 2, "post");
    body.replace(body.find("{}"), 2, "relu");
    return body.replace(body.find("[weights]"), 9, "residual = false\n[weights]");
  }()));
  CHECK(step(t, "layer.residual1")(0, 1) == 3.0);
  const double b = 1.0 / std::sqrt(1.0 + 1e-5);
  CHECK(step(t, "layer.ln1")(0, 1) == doctest::Approx(b).epsilon(kTol));
}

TEST_CASE("encoder layer with GELU: x·Φ(x), exact") {
  const attn::Trace t = trace_of(layer_lesson("post", "gelu"));
  const arma::mat& hidden = step(t, "layer.ffn.hidden");
  const arma::mat& act = step(t, "layer.ffn.activation");
  for (arma::uword c = 0; c < hidden.n_cols; ++c) {
    const double x = hidden(0, c);
    CHECK(act(0, c) == doctest::Approx(0.5 * x * std::erfc(-x / std::sqrt(2.0))).epsilon(kTol));
  }
  CHECK(attn::gelu(arma::mat{1.0})(0, 0) == doctest::Approx(0.8413447460685429).epsilon(kTol));
  CHECK(attn::gelu(arma::mat{-1.0})(0, 0) == doctest::Approx(-0.15865525393145705).epsilon(kTol));
  CHECK(t.at("layer.ffn.activation").made.op == attn::Op::gelu);
}

TEST_CASE("a narrower dtype: inputs rounded, the fill rounded, every step in the format") {
  const std::string body = R"(
[input]
X = [[0.1, 0], [0, 1]]
keep = [[0, 0], [1, 0]]
[weights]
W_Q = "identity"
W_K = "identity"
W_V = [[2, 0], [0, 4]]
)";
  SUBCASE("f16: -1e9 becomes -inf, the fully masked row NaN, both warned") {
    const attn::Trace t = trace_of(lesson("[model]\ndtype = \"f16\"\nmask_fill = -1e9\n" + body));
    CHECK(t.dtype == attn::Dtype::f16);
    CHECK(step(t, "X")(0, 0) == 0.0999755859375);
    CHECK(step(t, "head0.masked")(0, 0) == -HUGE_VAL);
    CHECK(std::isnan(step(t, "head0.weights")(0, 1)));
    CHECK(step(t, "head0.weights")(1, 0) == 1.0);
    CHECK(step(t, "head0.weights")(1, 1) == 0.0);
    REQUIRE(t.warnings.size() == 2);
    CHECK(attn::english_warnings(t)[0].find("rounds to -inf") != std::string::npos);
    CHECK(attn::english_warnings(t)[1].find("softmax is 0/0 = NaN") != std::string::npos);
    for (const attn::Step& s : t.steps)
      for (double x : s.value) CHECK((std::isnan(x) || attn::round_to(attn::Dtype::f16, x) == x));
  }
  SUBCASE("f16: -65504 stays finite and the row is uniform, 1/2 each") {
    const attn::Trace t = trace_of(lesson("[model]\ndtype = \"f16\"\nmask_fill = -65504\n" + body));
    CHECK(step(t, "head0.masked")(0, 0) == -65504.0);
    CHECK(step(t, "head0.weights")(0, 1) == 0.5);
  }
  SUBCASE("bf16: -1e9 stays finite") {
    const attn::Trace t = trace_of(lesson("[model]\ndtype = \"bf16\"\nmask_fill = -1e9\n" + body));
    CHECK(step(t, "head0.masked")(0, 0) == -998244352.0);
    CHECK(attn::english_warnings(t).at(0).find("rounds to -998244352") != std::string::npos);
  }
  SUBCASE("f64 is untouched: 0.1 stays 0.1") {
    const attn::Trace t = trace_of(lesson(body));
    CHECK(t.dtype == attn::Dtype::f64);
    CHECK(step(t, "X")(0, 0) == 0.1);
  }
}

TEST_CASE("a fill of 0 is allowed, and the trace says how it fails") {
  // Row 1 sees key 0 and has key 1 masked: with fill 0 the masked key keeps weight.
  const attn::Trace t = trace_of(lesson(R"(
[model]
mask_fill = 0
scale = "none"
[input]
X = [[1, 0], [0, 1]]
keep = [[1, 0], [1, 0]]
[weights]
W_Q = "identity"
W_K = "identity"
W_V = "identity"
)"));
  CHECK(step(t, "head0.masked")(1, 1) == 0.0);
  CHECK(step(t, "head0.weights")(1, 1) == doctest::Approx(0.5).epsilon(kTol));  // exp(0) / 2
  REQUIRE(t.warnings.size() >= 2);
  CHECK(attn::english_warnings(t)[0].find("does not mask") != std::string::npos);
  CHECK(attn::english_warnings(t).back().find("masked keys keep") != std::string::npos);
}

TEST_CASE("kv-cache lesson: each decoding step sees only its query and a growing cache") {
  const attn::Lesson L = attn::find_lesson("kv-cache");
  REQUIRE(L.kv_cache);
  const attn::Trace t = trace_of(L);
  const std::size_t n = L.X.n_rows;
  for (std::size_t s = 0; s < n; ++s) {
    CAPTURE(s);
    const auto at = [&](attn::DecodeStep part) -> const arma::mat& {
      return t.at(attn::decode_step_id(s, 0, part)).value;
    };
    // q is row s of head0.Q; the caches are rows 0..s of head0.K and head0.V.
    CHECK(arma::approx_equal(at(attn::DecodeStep::q), step(t, "head0.Q").row(s), "absdiff", 0.0));
    CHECK(arma::approx_equal(at(attn::DecodeStep::K_cache), step(t, "head0.K").rows(0, s),
                             "absdiff", 0.0));
    CHECK(arma::approx_equal(at(attn::DecodeStep::V_cache), step(t, "head0.V").rows(0, s),
                             "absdiff", 0.0));
    // One row of s + 1 scores, equal to the unmasked part of row s of the full computation.
    const arma::mat& scores = at(attn::DecodeStep::scores);
    REQUIRE(scores.n_rows == 1);
    REQUIRE(scores.n_cols == s + 1);
    CHECK(arma::approx_equal(scores, step(t, "head0.scores").row(s).cols(0, s), "absdiff", kTol));
    const arma::mat& weights = at(attn::DecodeStep::weights);
    CHECK(arma::accu(weights) == doctest::Approx(1.0).epsilon(kTol));
    CHECK(arma::approx_equal(weights, step(t, "head0.weights").row(s).cols(0, s), "absdiff", kTol));
    // The context equals row s of the full causal context, to 1e-12.
    CHECK(arma::approx_equal(at(attn::DecodeStep::context), step(t, "head0.context").row(s),
                             "absdiff", kTol));
    CHECK(step(t, "decode.head0.check")(s, 0) <= kTol);
  }
  // Step 0 attends to <s> alone: its context is <s>'s own value row, 2·x_0.
  CHECK(arma::approx_equal(t.at(attn::decode_step_id(0, 0, attn::DecodeStep::context)).value,
                           2.0 * step(t, "X").row(0), "absdiff", kTol));
  // Adding a token changes nothing before it: rows 0..2 are causal-decoder's.
  const attn::Trace shorter = trace_of(attn::find_lesson("causal-decoder"));
  CHECK(arma::approx_equal(step(t, "head0.context").rows(0, 2), step(shorter, "head0.context"),
                           "absdiff", kTol));
  CHECK(t.warnings.empty());
}

TEST_CASE("kv-cache: the check step warns when a decoding step differs from the full row") {
  // Overriding the full context (as verify does with a learner's numbers) breaks the equality.
  const attn::Lesson L = attn::find_lesson("kv-cache");
  attn::Overrides o;
  attn::StepOverride bad;
  bad.value = arma::mat(4, 4, arma::fill::zeros);
  bad.given = arma::umat(4, 4, arma::fill::zeros);
  bad.value(2, 1) = 5.0;
  bad.given(2, 1) = 1;
  o.emplace("head0.context", bad);
  attn::testing::HostBackend cpu;
  const attn::Trace t = attn::run_pipeline(L, cpu, o);
  CHECK(step(t, "decode.head0.check")(2, 0) > 1.0);
  CHECK(step(t, "decode.head0.check")(1, 0) <= kTol);
  REQUIRE(t.warnings.size() == 1);
  CHECK(attn::english_warnings(t)[0].starts_with("decode.head0.check row 2 (animal)"));
}
