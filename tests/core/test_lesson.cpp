// The lesson loader: every key of docs/lesson-format.md read, every bad input an
// InputError naming the file, the key, the line, both shapes and the fix.
#include <doctest/doctest.h>

#include <fmt/format.h>

#include <cmath>
#include <string>

#include "core/error.hpp"
#include "core/golden.hpp"
#include "core/lesson.hpp"
#include "core/pipeline.hpp"
#include "support/host_backend.hpp"

namespace {

const char* kWeights = R"(
[weights]
W_Q = "identity"
W_K = "identity"
W_V = "identity"
)";

// The message of the InputError that loading `text` throws ("" if none).
std::string error_of(const std::string& text) {
  try {
    attn::parse_lesson(text, "bad.toml");
  } catch (const attn::InputError& e) {
    return e.what();
  }
  return "";
}

bool has(const std::string& message, const std::string& part) {
  return message.find(part) != std::string::npos;
}

}  // namespace

TEST_CASE("every key of a lesson is read") {
  const attn::Lesson L = attn::parse_lesson(R"(
[lesson]
id = "all-keys"
title = "T"
source = "S"
story = "story"
[model]
heads = 2
d_k = 1
scale = 3
causal = true
mask_fill = -1e9
masked_row = "uniform"
positional_encoding = "sinusoidal"
[input]
tokens = ["a", "b"]
X = [[1, 2], [3, 4]]
memory_tokens = ["x", "y", "z"]
memory = [[1, 0], [0, 1], [1, 1]]
key_padding = [false, true, false]
keep = [[1, 1, 0], [1, 1, 1]]
[weights]
W_Q = "identity"
W_K = [[1, 0], [0, 1]]
W_V = "identity"
W_O = "identity"
b_Q = [1, 2]
b_K = [0, 0]
b_V = [0.5, 0.25]
b_O = [1, 1]
[[claim]]
step = "head0.scores"
cell = [0, 1]
value = 1.70
says = "q·k"
[[claim]]
step = "Q"
row = 1
values = [1, 2.5]
tolerance = 0.1
derived = true
)",
                                            "all.toml");
  CHECK(L.id == "all-keys");
  CHECK(L.title == "T");
  CHECK(L.heads == 2);
  CHECK(L.d_k == 1);
  CHECK(L.d_v == 1);
  CHECK(L.scale_kind == attn::ScaleKind::number);
  CHECK(L.scale_divisor() == 3.0);
  CHECK(L.causal);
  CHECK(L.mask_fill == -1e9);
  CHECK(L.masked_row == attn::MaskedRowPolicy::uniform);
  CHECK(L.positional_encoding == attn::PositionalEncoding::sinusoidal);
  CHECK(L.tokens == std::vector<std::string>{"a", "b"});
  CHECK(L.X(1, 0) == 3.0);  // integers accepted as numbers
  REQUIRE(L.memory);
  CHECK(L.keys() == 3);
  CHECK(L.memory_tokens[2] == "z");
  CHECK(L.key_padding == std::vector<bool>{false, true, false});
  CHECK((*L.keep)(0, 2) == 0u);
  CHECK(L.W_Q(0, 0) == 1.0);
  CHECK(L.W_Q(0, 1) == 0.0);
  REQUIRE(L.W_O);
  CHECK(L.W_O->n_rows == 2);  // identity sized to the concat width
  CHECK((*L.b_Q)(1) == 2.0);
  CHECK((*L.b_V)(0) == 0.5);
  REQUIRE(L.claims.size() == 2);
  CHECK(L.claims[0].where.kind == attn::CellSelector::Kind::cell);
  CHECK(L.claims[0].where.col == 1);
  CHECK(L.claims[0].values[0][0].value == 1.7);
  CHECK(L.claims[0].values[0][0].decimals == 2);  // "1.70" as written
  CHECK(L.claims[0].says == "q·k");
  CHECK(L.claims[1].where.kind == attn::CellSelector::Kind::row);
  CHECK(L.claims[1].values[0][1].value == 2.5);
  CHECK(*L.claims[1].tolerance == 0.1);
  CHECK_FALSE(L.claims[0].derived);  // stated by a document unless marked
  CHECK(L.claims[1].derived);
}

TEST_CASE("[[claim]] derived: a boolean, on value and quantity claims alike") {
  const std::string base = std::string("[input]\nX = [[1, 2], [3, 4]]\n") + kWeights;
  const attn::Lesson L = attn::parse_lesson(
      base + "[[claim]]\nstep = \"Q\"\nshape = [2, 2]\nderived = true\n", "q.toml");
  REQUIRE(L.quantity_claims.size() == 1);
  CHECK(L.quantity_claims[0].derived);
  CHECK_THROWS_WITH_AS(
      attn::parse_lesson(base + "[[claim]]\nstep = \"Q\"\nrow = 0\nvalues = [1, 2]\n"
                                "derived = \"yes\"\n",
                         "bad.toml"),
      doctest::Contains("claim[0].derived"), attn::InputError);
}

TEST_CASE("defaults: t0.. tokens, one head, sqrt_dk, -inf fill, nan policy") {
  const attn::Lesson L = attn::parse_lesson(
      std::string("[input]\nX = [[1, 2], [3, 4], [5, 6]]\n") + kWeights, "dir/plain.toml");
  CHECK(L.id == "plain");
  CHECK(L.tokens == std::vector<std::string>{"t0", "t1", "t2"});
  CHECK(L.heads == 1);
  CHECK(L.d_k == 2);
  CHECK(L.scale_divisor() == doctest::Approx(std::sqrt(2.0)));
  CHECK(std::isinf(L.mask_fill));
  CHECK(L.masked_row == attn::MaskedRowPolicy::nan);
}

TEST_CASE("bad lessons: one clear message each") {
  SUBCASE("TOML syntax error names the line") {
    const std::string m = error_of("[input]\nX = [[1, 2]\n");
    CHECK(has(m, "bad.toml:"));
    CHECK(has(m, "TOML syntax error"));
  }
  SUBCASE("ragged matrix") {
    const std::string m = error_of(std::string("[input]\nX = [[1, 2], [3]]\n") + kWeights);
    CHECK(has(m, "bad.toml:2: key 'input.X'"));
    CHECK(has(m, "row 1 has 1 numbers but row 0 has 2"));
  }
  SUBCASE("X columns differ from W_Q rows") {
    const std::string m = error_of(
        "[input]\nX = [[1, 2, 3]]\n[weights]\nW_Q = [[1, 0], [0, 1]]\nW_K = \"identity\"\nW_V = "
        "\"identity\"\n");
    CHECK(has(m, "bad.toml:4: key 'weights.W_Q'"));
    CHECK(has(m, "X is 1×3 and W_Q is 2×2"));
    CHECK(has(m, "give W_Q 3 rows"));
  }
  SUBCASE("Q and K with different column counts") {
    const std::string m = error_of(
        "[input]\nX = [[1, 2]]\n[weights]\nW_Q = \"identity\"\nW_K = [[1], [0]]\nW_V = "
        "\"identity\"\n");
    CHECK(has(m, "key 'weights.W_K'"));
    CHECK(has(m, "Q and K must have the same number of columns to form Q·Kᵀ"));
    CHECK(has(m, "W_Q is 2×2"));
    CHECK(has(m, "W_K is 2×1"));
  }
  SUBCASE("heads not dividing the projection width") {
    const std::string m =
        error_of(std::string("[model]\nheads = 3\n[input]\nX = [[1, 2, 3, 4]]\n") + kWeights);
    CHECK(has(m, "bad.toml:2: key 'model.heads'"));
    CHECK(has(m, "heads = 3 does not divide the projection width 4"));
  }
  SUBCASE("token list of the wrong length") {
    const std::string m =
        error_of(std::string("[input]\ntokens = [\"a\"]\nX = [[1, 2], [3, 4]]\n") + kWeights);
    CHECK(has(m, "key 'input.tokens'"));
    CHECK(has(m, "1 tokens but X has 2 rows (2×2)"));
  }
  SUBCASE("key_padding of the wrong size") {
    const std::string m =
        error_of(std::string("[input]\nX = [[1, 2], [3, 4]]\nkey_padding = [true]\n") + kWeights);
    CHECK(has(m, "key 'input.key_padding'"));
    CHECK(has(m, "1 entries but there are 2 keys"));
  }
  SUBCASE("keep of the wrong shape") {
    const std::string m = error_of(
        std::string("[input]\nX = [[1, 2], [3, 4]]\nkeep = [[1, 1, 1], [1, 1, 1]]\n") + kWeights);
    CHECK(has(m, "key 'input.keep'"));
    CHECK(has(m, "keep is 2×3 but the scores are 2×2"));
  }
  SUBCASE("NaN or infinity in an input matrix") {
    CHECK(has(error_of(std::string("[input]\nX = [[1, nan]]\n") + kWeights), "NaN is not allowed"));
    CHECK(has(error_of(std::string("[input]\nX = [[1, 2]]\n[weights]\nW_Q = [[inf, 0], [0, "
                                   "1]]\nW_K = \"identity\"\nW_V = \"identity\"\n")),
              "key 'weights.W_Q[0][0]': infinity is not allowed"));
  }
  SUBCASE("a zero or negative scale") {
    CHECK(has(error_of(std::string("[model]\nscale = 0\n[input]\nX = [[1, 2]]\n") + kWeights),
              "bad.toml:2: key 'model.scale'"));
    CHECK(has(error_of(std::string("[model]\nscale = -2\n[input]\nX = [[1, 2]]\n") + kWeights),
              "must be a positive number"));
  }
  SUBCASE("an unknown key is never silently ignored") {
    const std::string m = error_of(
        "[input]\nX = [[1, 2]]\n[weights]\nW_Q = \"identity\"\nW_q = \"identity\"\nW_K = "
        "\"identity\"\nW_V = \"identity\"\n");
    CHECK(has(m, "bad.toml:5: key 'weights.W_q'"));
    CHECK(has(m, "did you mean 'W_Q'?"));
  }
  SUBCASE("an unknown section") {
    CHECK(has(error_of(std::string("[inputs]\nX = [[1]]\n") + kWeights), "did you mean 'input'?"));
  }
  SUBCASE("missing X and missing weights") {
    CHECK(has(error_of(std::string("[input]\ntokens = [\"a\"]\n") + kWeights),
              "key 'input.X': missing"));
    CHECK(has(error_of("[input]\nX = [[1]]\n"), "missing table [weights]"));
  }
  SUBCASE("a bad enum value lists the valid ones") {
    CHECK(has(
        error_of(std::string("[model]\nmasked_row = \"none\"\n[input]\nX = [[1]]\n") + kWeights),
        "write \"nan\", \"zero\" or \"uniform\""));
  }
  SUBCASE("W_O rows must match the concat width") {
    const std::string m = error_of(
        "[input]\nX = [[1, 2]]\n[weights]\nW_Q = \"identity\"\nW_K = \"identity\"\nW_V = "
        "\"identity\"\nW_O = [[1, 0]]\n");
    CHECK(has(m, "key 'weights.W_O'"));
    CHECK(has(m, "W_O is 1×2"));
  }
  SUBCASE("an id that cannot name a file") {
    const std::string m =
        error_of(std::string("[lesson]\nid = \"../escape\"\n[input]\nX = [[1]]\n") + kWeights);
    CHECK(has(m, "bad.toml:2: key 'lesson.id'"));
    CHECK(has(m, "cannot name a file"));
    CHECK(attn::parse_lesson(std::string("[input]\nX = [[1]]\n") + kWeights, "my lesson.toml").id ==
          "my-lesson");
  }
  SUBCASE("a bias of the wrong length") {
    const std::string m =
        error_of(std::string("[input]\nX = [[1, 2]]\n[weights]\nW_Q = \"identity\"\nW_K = "
                             "\"identity\"\nW_V = \"identity\"\nb_V = [1, 2, 3]\n"));
    CHECK(has(m, "b_V has 3 entries but W_V has 2 columns"));
  }
}

TEST_CASE("[lesson] level, after and variant_of: read, defaulted, checked") {
  const std::string input = "[input]\nX = [[1, 2]]\n";
  const attn::Lesson plain = attn::parse_lesson(input + kWeights, "plain.toml");
  CHECK(plain.level == 1);
  CHECK(plain.after.empty());
  CHECK(plain.variant_of.empty());
  const attn::Lesson L = attn::parse_lesson(
      "[lesson]\nid = \"b\"\nlevel = 3\nafter = [\"a\", \"c\"]\nvariant_of = \"a\"\n" + input +
          kWeights,
      "b.toml");
  CHECK(L.level == 3);
  CHECK(L.after == std::vector<std::string>{"a", "c"});
  CHECK(L.variant_of == "a");
  SUBCASE("a level outside 1 to 5") {
    const std::string m = error_of("[lesson]\nlevel = 6\n" + input + kWeights);
    CHECK(has(m, "bad.toml:2: key 'lesson.level'"));
    CHECK(has(m, "write 1 to 5"));
  }
  SUBCASE("after naming the lesson itself, or not a list of strings") {
    CHECK(has(error_of("[lesson]\nid = \"x\"\nafter = [\"x\"]\n" + input + kWeights),
              "is this lesson itself"));
    CHECK(has(error_of("[lesson]\nafter = \"a\"\n" + input + kWeights), "lesson.after"));
  }
  SUBCASE("a variant of itself") {
    CHECK(has(error_of("[lesson]\nid = \"x\"\nvariant_of = \"x\"\n" + input + kWeights),
              "variant of itself"));
  }
}

namespace {

// A small valid encoder layer: d_model 2, d_ff 3; `extra` is added to [weights].
std::string layer_lesson(const std::string& layer, const std::string& extra,
                         const std::string& w_1 = "[[1, 0, 1], [0, 1, 1]]",
                         const std::string& w_2 = "[[1, 0], [0, 1], [1, 1]]") {
  return "[input]\nX = [[1, 2], [3, 5]]\n[layer]\n" + layer +
         "\n[weights]\nW_Q = \"identity\"\nW_K = \"identity\"\nW_V = \"identity\"\nW_O = "
         "\"identity\"\nW_1 = " +
         w_1 + "\nW_2 = " + w_2 + "\n" + extra;
}

}  // namespace

TEST_CASE("[layer]: an encoder layer is read, with PyTorch's defaults") {
  const attn::Lesson L = attn::parse_lesson(layer_lesson("kind = \"encoder\"", ""), "ok.toml");
  REQUIRE(L.layer);
  CHECK(L.layer->norm == attn::NormPlacement::post);
  CHECK(L.layer->activation == attn::Activation::relu);
  CHECK(L.layer->eps == 1e-5);
  CHECK(L.layer->W_1.n_cols == 3);
  CHECK(!L.layer->b_1);
  CHECK(arma::all(L.layer->ln1_gamma == 1.0));
  CHECK(arma::all(L.layer->ln2_beta == 0.0));
  const attn::Lesson P = attn::parse_lesson(
      layer_lesson("norm = \"pre\"\nactivation = \"gelu\"\neps = 1e-6",
                   "b_1 = [1, 2, 3]\nb_2 = [0.5, 0.5]\nln1_gamma = [2, 3]\nln2_beta = [1, -1]"),
      "ok.toml");
  CHECK(P.layer->norm == attn::NormPlacement::pre);
  CHECK(P.layer->activation == attn::Activation::gelu);
  CHECK(P.layer->eps == 1e-6);
  CHECK((*P.layer->b_1)(2) == 3.0);
  CHECK(P.layer->ln1_gamma(1) == 3.0);
  CHECK(P.layer->ln2_beta(1) == -1.0);
}

TEST_CASE("[layer]: bad encoder layers, one clear message each") {
  SUBCASE("unknown key in [layer], with a suggestion") {
    const std::string m = error_of(layer_lesson("activaton = \"relu\"", ""));
    CHECK(has(m, "bad.toml:4: key 'layer.activaton'"));
    CHECK(has(m, "did you mean 'activation'?"));
  }
  SUBCASE("unknown norm placement") {
    const std::string m = error_of(layer_lesson("norm = \"middle\"", ""));
    CHECK(has(m, "key 'layer.norm'"));
    CHECK(has(m, "write \"post\" or \"pre\""));
  }
  SUBCASE("unknown activation and kind") {
    CHECK(has(error_of(layer_lesson("activation = \"tanh\"", "")), "write \"relu\" or \"gelu\""));
    CHECK(has(error_of(layer_lesson("kind = \"decoder\"", "")), "write \"encoder\""));
  }
  SUBCASE("eps must be positive") {
    CHECK(has(error_of(layer_lesson("eps = 0", "")), "key 'layer.eps'"));
  }
  SUBCASE("W_1 with the wrong number of rows") {
    const std::string m = error_of(layer_lesson("", "", "[[1, 0, 1], [0, 1, 1], [1, 1, 1]]"));
    CHECK(has(m, "bad.toml:10: key 'weights.W_1'"));
    CHECK(has(m, "W_1 is 3×3 but X is 2×2"));
    CHECK(has(m, "W_1 must be d_model × d_ff; give W_1 2 rows"));
  }
  SUBCASE("W_2 not d_ff × d_model") {
    const std::string m =
        error_of(layer_lesson("", "", "[[1, 0, 1], [0, 1, 1]]", "[[1, 0], [0, 1]]"));
    CHECK(has(m, "key 'weights.W_2'"));
    CHECK(has(m, "W_2 is 2×2 but W_1 is 2×3 and X is 2×2"));
    CHECK(has(m, "W_2 must be d_ff × d_model = 3×2"));
  }
  SUBCASE("b_1 of the wrong length") {
    const std::string m = error_of(layer_lesson("", "b_1 = [1, 2]"));
    CHECK(has(m, "key 'weights.b_1'"));
    CHECK(has(m, "b_1 has 2 entries but W_1 is 2×3 (d_ff = 3 columns); give 3 entries"));
  }
  SUBCASE("a LayerNorm gamma of the wrong length") {
    const std::string m = error_of(layer_lesson("", "ln2_gamma = [1, 1, 1]"));
    CHECK(has(m, "key 'weights.ln2_gamma'"));
    CHECK(has(m,
              "ln2_gamma has 3 entries but LayerNorm scales and shifts each of X's d_model = "
              "2 features (X is 2×2); give 2 entries"));
  }
  SUBCASE("W_1 is required") {
    const std::string m = error_of(
        "[input]\nX = [[1, 2]]\n[layer]\n[weights]\nW_Q = \"identity\"\nW_K = \"identity\"\nW_V = "
        "\"identity\"\nW_O = \"identity\"\nW_2 = [[1, 0], [0, 1]]\n");
    CHECK(has(m, "key 'weights.W_1'"));
    CHECK(has(m, "missing; an encoder layer needs W_1 (d_model × d_ff"));
  }
  SUBCASE("W_O is required, and must give d_model columns") {
    const std::string missing = error_of(
        "[input]\nX = [[1, 2]]\n[layer]\n[weights]\nW_Q = \"identity\"\nW_K = \"identity\"\nW_V = "
        "\"identity\"\nW_1 = [[1], [1]]\nW_2 = [[1, 1]]\n");
    CHECK(has(missing, "key 'weights.W_O'"));
    CHECK(has(missing, "so give W_O, 2 × 2"));
    const std::string narrow = error_of(
        "[input]\nX = [[1, 2]]\n[layer]\n[weights]\nW_Q = \"identity\"\nW_K = \"identity\"\nW_V = "
        "\"identity\"\nW_O = [[1], [1]]\nW_1 = [[1], [1]]\nW_2 = [[1, 1]]\n");
    CHECK(has(narrow, "W_O is 2×1 but X is 1×2"));
    CHECK(has(narrow, "W_O must be 2 × 2"));
  }
  SUBCASE("layer weights without [layer]") {
    const std::string m =
        error_of(std::string("[input]\nX = [[1, 2]]\n") + kWeights + "W_1 = [[1], [1]]\n");
    CHECK(has(m, "key 'weights.W_1'"));
    CHECK(has(m, "add [layer] kind = \"encoder\" or remove W_1"));
  }
  SUBCASE("an encoder layer is self-attention") {
    const std::string m = error_of(layer_lesson("", "").replace(0, std::string("[input]\n").size(),
                                                                "[input]\nmemory = [[1, 1]]\n"));
    CHECK(has(m, "key 'input.memory'"));
    CHECK(has(m, "an encoder layer is self-attention"));
  }
}

TEST_CASE("[decode] kv_cache: only on causal self-attention with no other mask") {
  const std::string causal = "[model]\ncausal = true\n";
  const std::string input = "[input]\nX = [[1, 0], [0, 1]]\n";
  const std::string decode = "[decode]\nkv_cache = true\n";
  CHECK(attn::parse_lesson(causal + input + kWeights + decode, "ok.toml").kv_cache);
  CHECK_FALSE(
      attn::parse_lesson(input + kWeights + "[decode]\nkv_cache = false\n", "ok.toml").kv_cache);
  SUBCASE("not causal") {
    const std::string m = error_of(input + kWeights + decode);
    CHECK(has(m, "bad.toml"));
    CHECK(has(m, "decode.kv_cache"));
    CHECK(has(m, "causal = true"));
  }
  SUBCASE("cross-attention") {
    const std::string m =
        error_of(causal + input + "memory = [[1, 0], [0, 1], [1, 1]]\n" + kWeights + decode);
    CHECK(has(m, "decode.kv_cache"));
    CHECK(has(m, "Remove input.memory"));
  }
  SUBCASE("another mask") {
    CHECK(has(error_of(causal + input + "key_padding = [false, true]\n" + kWeights + decode),
              "input.key_padding"));
    CHECK(has(error_of(causal + input + "keep = [[1, 0], [1, 1]]\n" + kWeights + decode),
              "input.keep"));
  }
  SUBCASE("a typo and a wrong type") {
    CHECK(has(error_of(causal + input + kWeights + "[decode]\nkv_cahce = true\n"), "kv_cahce"));
    CHECK(has(error_of(causal + input + kWeights + "[decode]\nkv_cache = 1\n"), "decode.kv_cache"));
  }
}

namespace {

// A TOML matrix literal: [[1, 0.5], [2, 3]]; with `transposed`, of Mᵀ.
std::string toml_matrix(const arma::mat& M, bool transposed = false) {
  const arma::mat A = transposed ? arma::mat(M.t()) : M;
  std::string out = "[";
  for (arma::uword i = 0; i < A.n_rows; ++i) {
    out += i ? ", [" : "[";
    for (arma::uword j = 0; j < A.n_cols; ++j) out += fmt::format("{}{}", j ? ", " : "", A(i, j));
    out += "]";
  }
  return out + "]";
}

std::string toml_row(const arma::rowvec& v) {
  std::string out = "[";
  for (arma::uword j = 0; j < v.n_elem; ++j) out += fmt::format("{}{}", j ? ", " : "", v(j));
  return out + "]";
}

// Every step of the lesson's trace, 17 digits, as its golden file writes it.
std::string trace_text(const std::string& lesson_text) {
  attn::testing::HostBackend cpu;
  return attn::golden_toml(attn::run_pipeline(attn::parse_lesson(lesson_text, "same.toml"), cpu));
}

}  // namespace

TEST_CASE("[weights] layout = \"out_in\": PyTorch's out × in weights give the same trace") {
  // Nothing square, so a weight read the wrong way round cannot fit: d_model 3,
  // 2 heads of d_k 2 and d_v 1, d_ff 5, an encoder layer.
  const arma::mat W_Q = {{0.1, -0.2, 0.3, 0.4}, {0.5, 0.6, -0.7, 0.8}, {0.9, 0.15, 0.25, -0.35}};
  const arma::mat W_K = {{0.2, 0.1, -0.4, 0.3}, {-0.6, 0.5, 0.8, 0.7}, {0.05, 0.95, 0.45, 0.55}};
  const arma::mat W_V = {{0.3, -0.1}, {0.7, 0.2}, {-0.5, 0.6}};
  const arma::mat W_O = {{1, 0.5, -0.25}, {0.125, -1, 2}};
  const arma::mat W_1 = {{0.1, 0.2, 0.3, 0.4, 0.5}, {-0.1, 0.3, -0.5, 0.7, 0.9}, {1, -1, 0, 2, 1}};
  const arma::mat W_2 = {
      {0.2, -0.3, 0.1}, {0.4, 0.5, -0.6}, {0.7, 0.1, 0.2}, {-0.8, 0.9, 0.3}, {0.6, 0.05, -0.4}};
  const std::string head =
      "[model]\nheads = 2\ncausal = true\n[input]\nX = [[1, 0.5, -1], [0.25, 2, 1], [-0.5, 1, "
      "0.75]]\n[layer]\nnorm = \"pre\"\nactivation = \"gelu\"\n[weights]\n";
  auto weights = [&](bool out_in) {
    return fmt::format(
        "W_Q = {}\nW_K = {}\nW_V = {}\nW_O = {}\nW_1 = {}\nW_2 = {}\nb_Q = [1, 2, 3, "
        "4]\nb_O = [0.5, 0.25, 0.125]\n",
        toml_matrix(W_Q, out_in), toml_matrix(W_K, out_in), toml_matrix(W_V, out_in),
        toml_matrix(W_O, out_in), toml_matrix(W_1, out_in), toml_matrix(W_2, out_in));
  };
  const std::string in_out = head + weights(false);
  const std::string out_in = head + "layout = \"out_in\"\n" + weights(true);
  const attn::Lesson L = attn::parse_lesson(out_in, "same.toml");
  CHECK(arma::approx_equal(L.W_Q, W_Q, "absdiff", 0.0));
  CHECK(arma::approx_equal(L.W_V, W_V, "absdiff", 0.0));
  CHECK(arma::approx_equal(*L.W_O, W_O, "absdiff", 0.0));
  CHECK(arma::approx_equal(L.layer->W_2, W_2, "absdiff", 0.0));
  const std::string expected = trace_text(in_out);
  CHECK(expected.find("layer.output") != std::string::npos);
  CHECK(trace_text(out_in) == expected);
  // "identity" is square, the same either way round.
  const std::string identity = "[input]\nX = [[1, 2], [3, 4]]\n[weights]\n";
  CHECK(trace_text(identity + "layout = \"out_in\"\n" + std::string(kWeights).substr(11)) ==
        trace_text(identity + std::string(kWeights).substr(11)));
  // The default is "in_out", the documents' X·W.
  CHECK(trace_text(head + "layout = \"in_out\"\n" + weights(false)) == expected);
}

TEST_CASE("in_proj_weight and in_proj_bias: nn.MultiheadAttention's packed projection") {
  // d_model 4, 2 heads: in_proj_weight is (3·4)×4, W_q, W_k, W_v stacked, each out × in.
  const arma::mat W_Q = {
      {0.1, -0.2, 0.3, 0.4}, {0.5, 0.6, -0.7, 0.8}, {0.9, 0.15, 0.25, -0.35}, {1, 0, 0.5, 2}};
  const arma::mat W_K = {
      {0.2, 0.1, -0.4, 0.3}, {-0.6, 0.5, 0.8, 0.7}, {0.05, 0.95, 0.45, 0.55}, {0, 1, 1, 0}};
  const arma::mat W_V = {
      {0.3, -0.1, 0.2, 0.4}, {0.7, 0.2, -0.3, 0.1}, {-0.5, 0.6, 0.9, 0.8}, {1, 2, 3, 4}};
  const arma::rowvec b = {0.1, 0.2, 0.3, 0.4, -0.1, -0.2, -0.3, -0.4, 1, 2, 3, 4};
  const std::string head =
      "[model]\nheads = 2\n[input]\nX = [[1, 0.5, -1, 2], [0.25, 2, 1, -1], [-0.5, 1, 0.75, "
      "0]]\nkey_padding = [false, false, true]\n[weights]\n";
  const std::string separate =
      head + fmt::format("W_Q = {}\nW_K = {}\nW_V = {}\nb_Q = {}\nb_K = {}\nb_V = {}\n",
                         toml_matrix(W_Q), toml_matrix(W_K), toml_matrix(W_V),
                         toml_row(b.cols(0, 3)), toml_row(b.cols(4, 7)), toml_row(b.cols(8, 11)));
  const arma::mat packed = arma::join_cols(arma::join_cols(W_Q.t(), W_K.t()), W_V.t());
  const std::string in_proj = head + fmt::format("in_proj_weight = {}\nin_proj_bias = {}\n",
                                                 toml_matrix(packed), toml_row(b));
  const attn::Lesson L = attn::parse_lesson(in_proj, "same.toml");
  CHECK(arma::approx_equal(L.W_K, W_K, "absdiff", 0.0));
  CHECK((*L.b_V)(3) == 4.0);
  CHECK(trace_text(in_proj) == trace_text(separate));
  // in_proj_bias with separate weights (PyTorch's kdim ≠ embed_dim keeps the
  // weights apart but the bias packed), and layout = "out_in" does not turn
  // in_proj_weight: it is PyTorch's tensor either way.
  CHECK(trace_text(head + fmt::format("W_Q = {}\nW_K = {}\nW_V = {}\nin_proj_bias = {}\n",
                                      toml_matrix(W_Q), toml_matrix(W_K), toml_matrix(W_V),
                                      toml_row(b))) == trace_text(separate));
  CHECK(
      trace_text(head + fmt::format("layout = \"out_in\"\nin_proj_weight = {}\nin_proj_bias = {}\n",
                                    toml_matrix(packed), toml_row(b))) == trace_text(separate));
}

TEST_CASE("PyTorch's layouts: bad shapes and mixtures refused, each message naming both") {
  const std::string input = "[input]\nX = [[1, 2]]\n[weights]\n";
  SUBCASE("an unknown layout") {
    const std::string m =
        error_of(input + "layout = \"sideways\"\n" + std::string(kWeights).substr(11));
    CHECK(has(m, "bad.toml:4: key 'weights.layout'"));
    CHECK(has(m, "\"sideways\" is not a weight layout; write \"in_out\" or \"out_in\""));
  }
  SUBCASE("out_in: W_Q whose columns are not X's features") {
    const std::string m = error_of(input +
                                   "layout = \"out_in\"\nW_Q = [[1, 0, 1], [0, 1, 1]]\nW_K = "
                                   "\"identity\"\nW_V = \"identity\"\n");
    CHECK(has(m, "bad.toml:5: key 'weights.W_Q'"));
    CHECK(has(m,
              "X is 1×2 and W_Q is 2×3 (out × in: layout = \"out_in\"): the columns of X (2) "
              "must equal the columns of W_Q (3) to form X·W_Q; give W_Q 2 columns"));
  }
  SUBCASE("out_in: a bias as long as W_Q's columns, not its rows") {
    const std::string m = error_of(input +
                                   "layout = \"out_in\"\nW_Q = [[1, 0], [0, 1], [1, 1]]\nW_K = "
                                   "[[1, 0], [0, 1], [1, 1]]\nW_V = \"identity\"\nb_Q = [1, 2]\n");
    CHECK(has(m, "key 'weights.b_Q'"));
    CHECK(has(m,
              "b_Q has 2 entries but W_Q has 3 rows (out × in: layout = \"out_in\"); give "
              "one bias per row"));
  }
  SUBCASE("out_in: an encoder layer's W_1 the wrong way round") {
    const std::string m = error_of(layer_lesson(
        "", "layout = \"out_in\"\n", "[[1, 0, 1], [0, 1, 1]]", "[[1, 0, 1], [0, 1, 1]]"));
    CHECK(has(m, "key 'weights.W_1'"));
    CHECK(has(m, "W_1 is 2×3 but X is 2×2"));
    CHECK(has(m, "W_1 must be d_ff × d_model (out × in: layout = \"out_in\"); give W_1 2 columns"));
  }
  SUBCASE("in_proj_weight together with W_Q") {
    const std::string m =
        error_of(input +
                 "in_proj_weight = [[1, 0], [0, 1], [1, 0], [0, 1], [1, 0], [0, 1]]\nW_Q "
                 "= \"identity\"\n");
    CHECK(has(m, "bad.toml:4: key 'weights.in_proj_weight'"));
    CHECK(has(m, "given together with W_Q: in_proj_weight already holds W_Q, W_K and W_V"));
    CHECK(has(m, "remove W_Q or in_proj_weight"));
  }
  SUBCASE("in_proj_weight of the wrong shape") {
    const std::string m = error_of(input + "in_proj_weight = [[1, 0], [0, 1], [1, 0], [0, 1]]\n");
    CHECK(has(m, "bad.toml:4: key 'weights.in_proj_weight'"));
    CHECK(has(m, "in_proj_weight is 4×2 and X is 1×2"));
    CHECK(has(m, "so it must be 6×2 (3·2 rows, 2 columns)"));
    CHECK(has(error_of(input + "in_proj_weight = [[1, 0, 1], [0, 1, 1], [1, 0, 1]]\n"),
              "in_proj_weight is 3×3 and X is 1×2"));
  }
  SUBCASE("in_proj_weight when memory is not as wide as X") {
    const std::string m = error_of(
        "[input]\nX = [[1, 2]]\nmemory = [[1, 2, 3]]\n[weights]\nin_proj_weight = [[1, "
        "0], [0, 1], [1, 0], [0, 1], [1, 0], [0, 1]]\n");
    CHECK(has(m, "key 'weights.in_proj_weight'"));
    CHECK(has(m, "X is 1×2 and memory is 1×3"));
    CHECK(has(m, "give W_Q, W_K and W_V instead"));
  }
  SUBCASE("in_proj_bias of the wrong length, or with b_K") {
    const std::string packed =
        input + "in_proj_weight = [[1, 0], [0, 1], [1, 0], [0, 1], [1, 0], [0, 1]]\n";
    const std::string m = error_of(packed + "in_proj_bias = [1, 2, 3, 4, 5]\n");
    CHECK(has(m, "bad.toml:5: key 'weights.in_proj_bias'"));
    CHECK(has(m, "in_proj_bias has 5 entries but W_Q, W_K and W_V give 2 + 2 + 2 = 6 outputs"));
    CHECK(has(m, "give 6 entries"));
    const std::string both = error_of(packed + "in_proj_bias = [1, 2, 3, 4, 5, 6]\nb_K = [1, 2]\n");
    CHECK(has(both, "key 'weights.in_proj_bias'"));
    CHECK(has(both, "given together with b_K"));
  }
  SUBCASE("W_V missing names in_proj_weight as the other way") {
    CHECK(has(error_of(input + "W_Q = \"identity\"\nW_K = \"identity\"\n"),
              "missing; give a matrix or \"identity\" (or W_Q, W_K and W_V together as "
              "in_proj_weight)"));
  }
}
