// Shapes, FLOPs and bytes of a trace's steps (core/costs), counted by hand.
#include <doctest/doctest.h>

#include "core/costs.hpp"
#include "core/lesson.hpp"
#include "core/pipeline.hpp"
#include "support/host_backend.hpp"

namespace {

using Shape = std::pair<std::size_t, std::size_t>;

// Cross-attention: 2 queries of width 3, 5 memory keys of width 3, 1 head, d_k 2, bias on Q.
attn::Trace cross_trace() {
  const attn::Lesson lesson = attn::parse_lesson(R"(
[input]
X = [[1, 0, 0], [0, 1, 0]]
memory = [[1, 0, 0], [0, 1, 0], [0, 0, 1], [1, 1, 0], [0, 1, 1]]
[weights]
W_Q = [[1, 0], [0, 1], [1, 1]]
W_K = [[1, 0], [0, 1], [1, 1]]
W_V = [[1, 0, 0], [0, 1, 0], [0, 0, 1]]
b_Q = [0.5, 0.5]
)",
                                                 "test.toml");
  attn::testing::HostBackend cpu;
  return attn::run_pipeline(lesson, cpu);
}

}  // namespace

TEST_CASE("step FLOPs: 2·n·k·m per matmul, one per cell for divide, exp and softmax") {
  const attn::Trace t = cross_trace();
  const auto flops = [&](const char* id) { return attn::step_flops(t, t.at(id)); };
  CHECK(flops("Q") == 2 * 2 * 3 * 2 + 2 * 2);  // bias: one addition per cell
  CHECK(flops("K") == 2 * 5 * 3 * 2);
  CHECK(flops("head0.scores") == 2 * 2 * 2 * 5);
  CHECK(flops("head0.scaled") == 2 * 5);
  CHECK(flops("head0.masked") == 0);
  CHECK(flops("head0.exp") == 2 * 5);
  CHECK(flops("head0.row_sum") == 2 * 4);
  CHECK(flops("head0.weights") == 2 * 5);
  CHECK(flops("head0.context") == 2 * 2 * 5 * 3);
  CHECK(flops("head0.Q") == 0);
  CHECK(flops("W_Q") == 0);
  CHECK(attn::flops_formula(t, t.at("head0.scores")) == "2·n·d_k·m = 2·2·2·5");
}

TEST_CASE("shapes at another sequence length: queries and keys change, widths stay") {
  const attn::Trace t = cross_trace();
  const attn::CostSizes sizes{512, 7};
  CHECK(attn::step_shape(t, t.at("head0.scores"), sizes) == Shape{512, 7});
  CHECK(attn::step_shape(t, t.at("K"), sizes) == Shape{7, 2});
  CHECK(attn::step_shape(t, t.at("W_Q"), sizes) == Shape{3, 2});
  CHECK(attn::step_flops(t, t.at("head0.scores"), sizes) == 2 * 512 * 2 * 7);
  CHECK(attn::step_flops(t, t.at("head0.row_sum"), sizes) == 512 * 6);
}

TEST_CASE("bytes: rows × cols × batch × the dtype's size — the pass leaves out the weights") {
  const attn::Trace t = cross_trace();
  CHECK(attn::step_bytes(t, t.at("head0.scores"), attn::Dtype::f32, 16) == 2 * 5 * 16 * 4);
  CHECK(attn::step_bytes(t, t.at("head0.scores"), attn::Dtype::bf16, 1) == 2 * 5 * 2);
  CHECK_FALSE(attn::counts_in_pass(t, t.at("W_Q")));
  CHECK_FALSE(attn::counts_in_pass(t, t.at("b_Q")));
  CHECK(attn::counts_in_pass(t, t.at("X")));
  CHECK(attn::counts_in_pass(t, t.at("memory")));
  std::uint64_t cells = 0, flops = 0;
  for (const attn::Step& s : t.steps)
    if (s.id.rfind("W_", 0) != 0 && s.id.rfind("b_", 0) != 0 && s.id.rfind("heads.", 0) != 0) {
      cells += s.value.n_elem;
      flops += attn::step_flops(t, s);
    }
  CHECK(attn::pass_bytes(t, attn::Dtype::f64, 2) == cells * 8 * 2);
  CHECK(attn::pass_flops(t) == flops);
  CHECK(attn::parse_dtype("bf16") == attn::Dtype::bf16);
  CHECK_FALSE(attn::parse_dtype("f8").has_value());
}

TEST_CASE("a decoding step's softmax counts its exp, sum and division: the full pass's per row") {
  const attn::Lesson lesson = attn::parse_lesson(R"(
[model]
causal = true
[input]
X = [[1, 0], [0, 1], [1, 1]]
[weights]
W_Q = "identity"
W_K = "identity"
W_V = "identity"
[decode]
kv_cache = true
)",
                                                 "test.toml");
  attn::testing::HostBackend cpu;
  const attn::Trace t = attn::run_pipeline(lesson, cpu);
  // Step t = 2 attends over 3 keys: 3 exponentials, 2 additions, 3 divisions.
  const attn::Step& weights = t.at("decode.t2.head0.weights");
  CHECK(attn::step_flops(t, weights) == 3 + 2 + 3);
  CHECK(attn::flops_formula(t, weights) == "exp, sum and divide: 2·n·m + n·(m−1) = 2·1·3 + 1·2");
  // The full pass counts the same per row (masked cells too): 3 rows of 3 + 2 + 3.
  const std::uint64_t full = attn::step_flops(t, t.at("head0.exp")) +
                             attn::step_flops(t, t.at("head0.row_sum")) +
                             attn::step_flops(t, t.at("head0.weights"));
  CHECK(full == 3 * (3 + 2 + 3));
}

TEST_CASE("forward_flops (bench's count) is pass_flops of the same self-attention's trace") {
  // 3 tokens, d_model 6, 2 heads of 3, W_O, no mask, no biases.
  attn::Lesson lesson;
  lesson.tokens = {"a", "b", "c"};
  lesson.X = arma::mat(3, 6, arma::fill::value(0.25));
  lesson.heads = 2;
  lesson.d_k = lesson.d_v = 3;
  lesson.W_Q = lesson.W_K = lesson.W_V = arma::mat(6, 6, arma::fill::eye);
  lesson.W_O = arma::mat(6, 6, arma::fill::eye);
  attn::testing::HostBackend cpu;
  const attn::Trace t = attn::run_pipeline(lesson, cpu);
  CHECK(attn::forward_flops(3, 6, 2).total() == attn::pass_flops(t));
  for (std::size_t n : {1, 2, 128, 4096}) {
    CAPTURE(n);
    const attn::ForwardFlops f = attn::forward_flops(n, 6, 2);
    CHECK(f.total() == attn::pass_flops(t, {n, n}));
    CHECK(f.qkv == 3 * 2 * n * 6 * 6);
    CHECK(f.scores == 2 * n * n * 6);
    CHECK(f.softmax == 2 * (4 * n * n - n));
    CHECK(f.context == 2 * n * n * 6);
    CHECK(f.output == 2 * n * 6 * 6);
  }
}
