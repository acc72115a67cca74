// The PyTorch script writer: every step rebuilt and checked, every value it
// carries reads back as the trace's double bit for bit, nn.MultiheadAttention
// only where the lesson fits it (and why not, where not). The scripts are run
// with PyTorch by tests/cli/test_export.py.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "backend/cpu_backend.hpp"
#include "core/lesson_library.hpp"
#include "core/pipeline.hpp"
#include "render/render.hpp"

namespace {

struct Exported {
  attn::Lesson lesson;
  attn::Trace trace;
  std::string script;
  explicit Exported(attn::Lesson l) : lesson(std::move(l)) {
    attn::Lesson in_f64 = lesson;
    in_f64.dtype = attn::Dtype::f64;
    attn::CpuBackend cpu;
    trace = attn::run_pipeline(in_f64, cpu);
    script = attn::render_pytorch(lesson, trace);
  }
  explicit Exported(const char* id) : Exported(attn::find_lesson(id)) {}
  bool has(const std::string& part) const { return script.find(part) != std::string::npos; }
  // A step's Python variable: "head0.scores" -> head0_scores, "X+PE" -> X_plus_PE.
  static std::string var_of(const std::string& id) {
    std::string out;
    for (const char c : id)
      out += c == '.' ? std::string("_") : c == '+' ? "_plus_" : std::string(1, c);
    return out;
  }
  // The script's text with its comments' line breaks joined (comments wrap at 88 columns).
  std::string joined() const {
    std::string out = script;
    for (std::size_t at; (at = out.find("\n    # ")) != std::string::npos;) out.replace(at, 7, " ");
    return out;
  }
};

std::string lesson_text(const std::string& model, const std::string& weights) {
  return "[model]\n" + model +
         "\n[input]\ntokens = [\"a\", \"b\", \"c\"]\nX = [[1, 0.5, -1, 2], [0.25, 2, 1, -1], "
         "[-0.5, 1, 0.75, 0]]\n[weights]\n" +
         weights;
}

const char* kSquare = "W_Q = \"identity\"\nW_K = \"identity\"\nW_V = \"identity\"\n";

// The rows the script's TOOL table holds for `id` (its cells as written).
std::vector<std::vector<std::string>> tool_rows(const std::string& script, const std::string& id) {
  const std::string head = "\n    \"" + id + "\": [\n";
  std::size_t at = script.find(head, script.find("\nTOOL = {"));
  if (at == std::string::npos) throw std::runtime_error("TOOL has no " + id);
  at += head.size();
  std::vector<std::vector<std::string>> rows;
  while (script.compare(at, 6, "    ],") != 0) {
    const std::size_t open = script.find('[', at), close = script.find(']', open);
    std::vector<std::string> cells;
    std::stringstream row(script.substr(open + 1, close - open - 1));
    for (std::string cell; std::getline(row, cell, ',');)
      cells.push_back(cell.substr(cell.find_first_not_of(' ')));
    rows.push_back(cells);
    at = script.find('\n', close) + 1;
  }
  return rows;
}

double python_float(const std::string& text) {
  if (text == "inf") return HUGE_VAL;
  if (text == "-inf") return -HUGE_VAL;
  if (text == "nan") return std::nan("");
  return std::strtod(text.c_str(), nullptr);
}

// Every value of the TOOL table reads back as the trace's double, bit for bit,
// and is written as a float literal (so -0.0 keeps its sign).
void require_exact_values(const Exported& e) {
  for (const attn::Step& step : e.trace.steps) {
    if (step.made.op == attn::Op::given && step.value.n_elem > 4096) continue;
    const auto rows = tool_rows(e.script, step.id);
    REQUIRE(rows.size() == step.value.n_rows);
    for (std::size_t i = 0; i < rows.size(); ++i) {
      REQUIRE(rows[i].size() == step.value.n_cols);
      for (std::size_t j = 0; j < rows[i].size(); ++j) {
        const std::string& text = rows[i][j];
        const double want = step.value(i, j), got = python_float(text);
        INFO(step.id, " cell (", i, ", ", j, ") written ", text);
        CHECK(text.find_first_of(".ein") != std::string::npos);
        if (std::isnan(want))
          CHECK(std::isnan(got));
        else
          CHECK(std::memcmp(&want, &got, sizeof want) == 0);
      }
    }
  }
}

}  // namespace

TEST_CASE("pytorch: every step is rebuilt and checked, its values exact") {
  for (const char* id : {"river-bank", "fill-values", "two-heads", "encoder-layer-pre-ln",
                         "sinusoidal-pe", "kv-cache-two-heads", "cross-attention"}) {
    CAPTURE(id);
    const Exported e(id);
    require_exact_values(e);
    for (const attn::Step& step : e.trace.steps) {
      if (step.decoding >= 0 || step.kind == attn::StepKind::decode_check) continue;
      // A given step is the lesson's own number; a computed one goes on from the
      // tool's value, which check hands back, within its bound.
      const std::string var = step.made.op == attn::Op::given ? "" : e.var_of(step.id) + " = ";
      CHECK(e.has("    " + var + "check(\"" + step.id + "\", "));
    }
    CHECK(e.script.rfind("#!/usr/bin/env python3\n# Written by `attn-trace export ", 0) == 0);
    CHECK(e.has("\nif __name__ == \"__main__\":\n    main()\n"));
  }
}

TEST_CASE("pytorch: the code of each operation, named like the step ids") {
  const Exported two("two-heads");
  CHECK(two.has("Q = F.linear(X, W_Q.T)  # = X @ W_Q"));
  CHECK(two.has("Q_heads = Q.view(n, heads, d_k).transpose(0, 1)"));
  CHECK(two.has("head1_Q = Q_heads[1]  # = Q[:, 2:4]"));
  CHECK(two.has("head1_scores = head1_Q @ head1_K.T"));
  CHECK(two.has("head0_masked = head0_scaled.masked_fill(blocked, fill)"));
  CHECK(two.has("heads_mean = torch.stack([head0_weights, head1_weights]).mean(dim=0)"));
  CHECK(two.has("concat = torch.cat([head0_context, head1_context], dim=-1)"));
  CHECK(two.has("mha.out_proj.weight.copy_(W_O.T)"));
  const Exported pe("sinusoidal-pe");
  CHECK(pe.has("X_plus_PE = X + PE"));
  const Exported layer("encoder-layer-gelu");
  CHECK(layer.has("layer_ffn_activation = F.gelu(layer_ffn_hidden)"));
  CHECK(
      layer.has("layer_ln1 = F.layer_norm(layer_residual1, (d_model,), ln1_gamma, ln1_beta, "
                "eps=1e-05)"));
  CHECK(layer.has("encoder = torch.nn.TransformerEncoderLayer(d_model, heads"));
  const Exported kv("kv-cache");
  CHECK(kv.has("K_cache[h] = torch.cat([K_cache[h], k_t[:, kk]])"));
  CHECK(kv.has("check(f\"decode.head{h}.check\", diff.unsqueeze(1))"));
}

TEST_CASE("pytorch: each step within the bound of its own operation, from the tool's inputs") {
  const Exported two("two-heads");
  CHECK(two.has("U = 2.0 ** -53"));
  CHECK(two.has("Q = check(\"Q\", Q, product(X, W_Q))"));
  CHECK(
      two.has("head1_scores = check(\"head1.scores\", head1_scores, product(head1_Q, head1_K.T))"));
  CHECK(two.has("head0_scaled = check(\"head0.scaled\", head0_scaled, rounded(head0_scaled, 2))"));
  CHECK(two.has("head0_masked = check(\"head0.masked\", head0_masked)\n"));  // exactly
  CHECK(two.has("head0_exp = check(\"head0.exp\", head0_exp, library(head0_exp))"));
  CHECK(two.has("head0_row_sum = check(\"head0.row_sum\", head0_row_sum, sums(head0_exp))"));
  CHECK(two.has(
      "check(\"head0.weights\", head0_weights, softmax_bound(head0_masked, head0_weights))"));
  CHECK(two.has("check(\"head0.context\", head0_context, product(head0_weights, head0_V))"));
  CHECK(two.has("2 * output_error)"));
  CHECK(two.has("\"heads.mean\", 2 * mean_error)"));
  CHECK_FALSE(two.has("TOL"));
  CHECK_FALSE(two.has("def carried_layer_norm"));  // no layer, no layer helpers
  const Exported pe("sinusoidal-pe");
  CHECK(pe.has("PE = check(\"PE\", PE, positions(n, d_model))"));
  const Exported layer("encoder-layer-gelu");
  CHECK(layer.has("layer_norm_bound(layer_residual1, ln1_gamma, ln1_beta, 1e-05))"));
  CHECK(layer.has("gelu_bound(layer_ffn_hidden, layer_ffn_activation))"));
  CHECK(layer.has("_, layer_error = carried_encoder_layer(X, parts)"));
  CHECK(layer.has("\"layer.output\", 2 * layer_error)"));
  const Exported raw("raw-similarity");  // no nn.MultiheadAttention: no carried helpers
  CHECK_FALSE(raw.has("def carried_attention"));
}

TEST_CASE("pytorch: masks turned to PyTorch's polarity, the masked-row policy kept") {
  const std::string keep_input = "keep = [[0, 1, 1], [1, 1, 0], [1, 0, 1]]\n";
  std::string text = lesson_text("causal = true\nmasked_row = \"zero\"", kSquare);
  text.insert(text.find("[weights]"), keep_input);
  const Exported e(attn::parse_lesson(text, "policy.toml"));
  CHECK(e.has("causal_blocked = torch.ones(n, m, dtype=torch.bool).triu(diagonal=1)"));
  CHECK(e.has("blocked = causal_blocked | (keep == 0)"));
  CHECK(e.has("head0_weights = head0_weights.masked_fill(no_key, 0.0)"));
  CHECK(e.joined().find("nn.MultiheadAttention is not run here: a query with every key masked "
                        "gets NaN weights there, but this lesson sets them to 0") !=
        std::string::npos);
  require_exact_values(e);
}

TEST_CASE("pytorch: nn.MultiheadAttention only where the lesson fits it, else why not") {
  SUBCASE("fits: self-attention, no W_O (an identity out_proj), biases") {
    const Exported e(attn::parse_lesson(
        lesson_text("heads = 2", std::string(kSquare) + "b_K = [1, 2, 3, 4]\n"), "fits.toml"));
    CHECK(e.has("mha = torch.nn.MultiheadAttention(4, 2, batch_first=True)"));
    CHECK(e.has("mha.in_proj_bias.copy_(torch.cat([torch.zeros(4), b_K, torch.zeros(4)]))"));
    CHECK(e.has("mha.out_proj.weight.copy_(torch.eye(4))"));
    CHECK(e.has("compare(\"nn.MultiheadAttention: attn_output = concat\""));
    CHECK(e.has("\"heads.mean\", 2 * mean_error)"));
  }
  SUBCASE("fits: a memory narrower than the queries, kdim and vdim") {
    std::string text = lesson_text(
        "",
        "W_Q = \"identity\"\nW_K = [[1, 0, 0, 1], [0, 1, 0, 1], [0, 0, 1, 1]]\nW_V = [[1, 0, "
        "0, 1], [0, 1, 0, 1], [0, 0, 1, 1]]\n");
    text.insert(text.find("[weights]"), "memory = [[1, 2, 3], [0, 1, 0]]\n");
    const Exported e(attn::parse_lesson(text, "kdim.toml"));
    CHECK(e.has("torch.nn.MultiheadAttention(4, 1, kdim=3, vdim=3, batch_first=True)"));
    CHECK(e.has("mha.k_proj_weight.copy_(W_K.T)"));
  }
  const auto why_not = [](const std::string& model, const std::string& weights) {
    return Exported(attn::parse_lesson(lesson_text(model, weights), "no.toml")).joined();
  };
  const std::string not_run = "nn.MultiheadAttention is not run here: ";
  CHECK(why_not("scale = \"none\"", kSquare)
            .find(not_run + "it always divides the scores by "
                            "√head_dim = √4, but this lesson "
                            "divides by 1") != std::string::npos);
  CHECK(why_not("causal = true\nmask_fill = -1e9", kSquare)
            .find("replaces masked scores by the fill -1e+09") != std::string::npos);
  CHECK(why_not("", "W_Q = \"identity\"\nW_K = \"identity\"\nW_V = [[1], [0], [0], [1]]\n")
            .find("d_k = 4 and d_v = 1") != std::string::npos);
  CHECK(why_not("", std::string(kSquare) + "W_O = [[1], [0], [0], [1]]\n")
            .find("its out_proj is embed_dim × embed_dim (4×4), but this lesson's W_O is 4×1") !=
        std::string::npos);
}

TEST_CASE("pytorch: a lesson in a narrower format is exported in float64, and says so") {
  const Exported e("fill-values-1e9-f16");
  CHECK(e.lesson.dtype == attn::Dtype::f16);
  CHECK(e.joined().find("the lesson asks for float16 ([model] dtype = \"f16\")") !=
        std::string::npos);
  CHECK(e.has("fill_in_format = torch.tensor(-1000000000.0).to(torch.float16).item()"));
  CHECK(e.has("if fill_in_format != -inf:"));
  require_exact_values(e);  // the f64 trace's values
  attn::Trace f16 = e.trace;
  f16.dtype = attn::Dtype::f16;
  CHECK_THROWS_AS(attn::render_pytorch(e.lesson, f16), std::logic_error);
}

TEST_CASE("pytorch: text from the lesson cannot break the script") {
  std::string text = lesson_text("", kSquare);
  text.replace(text.find("tokens = [\"a\", \"b\", \"c\"]"), 24,
               "tokens = [\"line\\nbreak\", \"quote\\\"\", \"back\\\\slash\"]");
  text = "[lesson]\ntitle = \"positional encoding: the\\nsecond line\"\n" + text;
  const Exported e(attn::parse_lesson(text, "odd.toml"));
  CHECK(e.has("[1.0, 0.5, -1.0, 2.0],  # line break\n"));
  CHECK(e.has("# quote\"\n"));
  // The title is on line 3, where Python does not look for an encoding declaration.
  CHECK(e.script.find("encoding: the") > e.script.find('\n', e.script.find('\n') + 1));
  CHECK(e.has("# odd — positional encoding: the second line\n"));
}
