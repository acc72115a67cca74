// The pipeline against an independent plain-loop implementation (no Armadillo
// arithmetic in the reference: support/plain_reference.hpp, the same loops the
// backend harness compares every backend with) on 200+ seeded random lessons.
// The reference computes each step from the pipeline's own values of the steps
// it reads, so that every operation is compared alone, and each cell must lie
// within what floating point allows two correct results of that operation in
// any summation order (support/fp_bounds.hpp); NaN and ±inf in the same cells.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "core/pipeline.hpp"
#include "support/fp_bounds.hpp"
#include "support/host_backend.hpp"
#include "support/plain_reference.hpp"
#include "support/random_lesson.hpp"

namespace {

using attn::testing::Bound;
using attn::testing::random_lesson;
using attn::testing::random_matrix;
namespace plain = attn::testing::plain;
constexpr double kInf = std::numeric_limits<double>::infinity();

struct RefStep {
  std::string id;
  arma::mat value;
  Bound bound;  // how far the pipeline's value may be from `value`
};

struct RefTrace {
  std::vector<RefStep> steps;
};

// The lesson's mask, straight from docs/lesson-format.md: query i may not see
// key j after it (causal), a padded key, or a 0 of the keep matrix. -> (n,m)
arma::umat lesson_mask(const attn::Lesson& L, std::size_t n, std::size_t m) {
  arma::umat masked(n, m, arma::fill::zeros);
  for (std::size_t i = 0; i < n; ++i)
    for (std::size_t j = 0; j < m; ++j)
      masked(i, j) = (L.causal && j > i) || (!L.key_padding.empty() && L.key_padding[j]) ||
                     (L.keep && (*L.keep)(i, j) == 0);
  return masked;
}

// Attention by the book, loop by loop (support/plain_reference.hpp), straight
// from the conventions of docs/lesson-format.md; each step from `tool`'s
// values of the steps it reads.
RefTrace reference_attention(const attn::Lesson& L, const attn::Trace& tool) {
  using namespace attn::testing;
  RefTrace t;
  const auto in = [&](const std::string& id) -> const arma::mat& { return tool.at(id).value; };
  const auto add = [&](const std::string& id, arma::mat value, Bound bound) {
    t.steps.push_back({id, std::move(value), std::move(bound)});
  };
  const auto exact = [](const arma::mat& g) { return exact_bound(g.n_rows, g.n_cols); };
  add("X", L.X, exact(L.X));
  const bool pe = L.positional_encoding == attn::PositionalEncoding::sinusoidal;
  // The same library sin, cos and pow on the same numbers: the same table;
  // one addition, correctly rounded: the same on both sides.
  std::string x_id = "X", source_id = "X";
  if (pe) {
    const arma::mat P = plain::positions(L.X.n_rows, L.X.n_cols);
    add("PE", P, exact(P));
    const arma::mat XP = plain::add(in("X"), in("PE"));
    add("X+PE", XP, exact(XP));
    x_id = source_id = "X+PE";
  }
  if (L.memory) {
    const arma::mat& M = *L.memory;
    add("memory", M, exact(M));
    source_id = "memory";
    if (pe) {
      const arma::mat MP = plain::add(in("memory"), plain::positions(M.n_rows, M.n_cols));
      add("memory+PE", MP, exact(MP));
      source_id = "memory+PE";
    }
  }
  // The weights as given, then the projection: W_Q, (b_Q), Q, W_K, ...
  auto project = [&](const std::string& from, const char* letter, const arma::mat& W,
                     const std::optional<arma::rowvec>& b) {
    add(std::string("W_") + letter, W, exact(W));
    if (b) add(std::string("b_") + letter, *b, exact_bound(1, b->n_elem));
    const arma::rowvec* bias = b ? &*b : nullptr;
    add(letter, plain::matmul(in(from), W, bias), product_bound(in(from), W, bias));
  };
  project(x_id, "Q", L.W_Q, L.b_Q);
  project(source_id, "K", L.W_K, L.b_K);
  project(source_id, "V", L.W_V, L.b_V);

  const arma::mat &Q = in("Q"), &K = in("K"), &V = in("V");
  const std::size_t n = Q.n_rows, m = K.n_rows, dk = L.W_Q.n_cols / L.heads,
                    dv = L.W_V.n_cols / L.heads;
  const double scale = L.scale_kind == attn::ScaleKind::sqrt_dk ? std::sqrt(static_cast<double>(dk))
                       : L.scale_kind == attn::ScaleKind::none  ? 1.0
                                                                : L.scale_number;
  const arma::umat masked_cells = lesson_mask(L, n, m);
  arma::mat mean = plain::zeros(n, m), most = plain::zeros(n, m);
  std::vector<arma::mat> all_weights;
  std::vector<std::string> contexts;
  for (std::size_t h = 0; h < L.heads; ++h) {
    const std::string p = "head" + std::to_string(h) + ".";
    const arma::mat Qh = plain::columns(Q, h * dk, dk), Kh = plain::columns(K, h * dk, dk),
                    Vh = plain::columns(V, h * dv, dv);
    add(p + "Q", Qh, exact(Qh));
    add(p + "K", Kh, exact(Kh));
    add(p + "V", Vh, exact(Vh));
    const arma::mat &tool_Qh = in(p + "Q"), &tool_Kh = in(p + "K"), &tool_exp = in(p + "exp"),
                    &tool_masked = in(p + "masked");
    add(p + "scores", plain::matmul_transposed(tool_Qh, tool_Kh),
        product_bound(tool_Qh, tool_Kh.t()));
    // a division, or a product by a rounded 1/s
    add(p + "scaled", plain::divide(in(p + "scores"), scale), elementwise_bound(n, m, 2));
    add(p + "masked", plain::mask(in(p + "scaled"), masked_cells, L.mask_fill), exact_bound(n, m));
    add(p + "exp", plain::exp_cells(tool_masked), library_bound(n, m));
    add(p + "row_sum", plain::row_sum(tool_exp), row_sum_bound(tool_exp));
    // rows without a key: NaN, 0 or 1/m on both sides, exactly
    add(p + "weights", plain::row_softmax(tool_masked, L.masked_row), softmax_bound(tool_masked));
    const arma::mat& tool_A = in(p + "weights");
    add(p + "context", plain::matmul(tool_A, Vh), product_bound(tool_A, Vh));
    all_weights.push_back(tool_A);
    for (std::size_t i = 0; i < n; ++i)
      for (std::size_t j = 0; j < m; ++j) {
        mean(i, j) += tool_A(i, j) / static_cast<double>(L.heads);
        most(i, j) = h == 0 ? tool_A(i, j) : std::max(most(i, j), tool_A(i, j));
      }
    contexts.push_back(p + "context");
  }
  if (L.heads > 1) {
    add("heads.mean", mean, mean_bound(all_weights));
    add("heads.max", most, exact(most));
  }
  arma::mat concat = plain::zeros(n, contexts.size() * dv);
  for (std::size_t h = 0; h < contexts.size(); ++h)
    for (std::size_t i = 0; i < n; ++i)
      for (std::size_t j = 0; j < dv; ++j) concat(i, h * dv + j) = in(contexts[h])(i, j);
  add("concat", concat, exact(concat));
  if (L.W_O) {
    add("W_O", *L.W_O, exact(*L.W_O));
    if (L.b_O) add("b_O", *L.b_O, exact_bound(1, L.b_O->n_elem));
    const arma::rowvec* bias = L.b_O ? &*L.b_O : nullptr;
    add("output", plain::matmul(in("concat"), *L.W_O, bias),
        product_bound(in("concat"), *L.W_O, bias));
  }
  return t;
}

// Head h's context computed from the trace's head{h}.Q, .K, .V (causal), with
// a bound on its distance from the exact context that holds for any
// summation order: a decoding step computes the same row.
attn::testing::Carried carried_context(const attn::Trace& trace, std::size_t h) {
  using namespace attn::testing;
  const auto given = [&](attn::HeadStep s) {
    const arma::mat& v = trace.at(attn::head_step_id(h, s)).value;
    return Carried{v, arma::zeros(arma::size(v))};
  };
  const Carried Q = given(attn::HeadStep::Q), K = given(attn::HeadStep::K),
                V = given(attn::HeadStep::V);
  // the scale: the sum, then a division by s (or a product by a rounded 1/s)
  Carried scaled = carried_product(Q, {K.value.t(), K.error.t()}, trace.scale, 2);
  for (std::size_t i = 0; i < scaled.value.n_rows; ++i)
    for (std::size_t j = i + 1; j < scaled.value.n_cols; ++j) {
      scaled.value(i, j) = -kInf;  // causal: exactly -inf, no error
      scaled.error(i, j) = 0.0;
    }
  return carried_product(carried_softmax(scaled), V);
}

}  // namespace

TEST_CASE("the pipeline matches a plain-loop reference on 240 random lessons") {
  attn::testing::HostBackend cpu;
  std::size_t cells = 0, cross = 0, masked_lessons = 0;
  double worst = 0.0;
  for (std::uint64_t seed = 1; seed <= 240; ++seed) {
    const attn::Lesson L = random_lesson(seed);
    const attn::Trace trace = attn::run_pipeline(L, cpu);
    const RefTrace ref = reference_attention(L, trace);
    CAPTURE(seed);
    REQUIRE(trace.ids().size() == ref.steps.size());
    cross += L.memory.has_value();
    masked_lessons += L.causal || !L.key_padding.empty() || L.keep.has_value();
    for (std::size_t s = 0; s < ref.steps.size(); ++s) {
      const attn::Step& step = trace.steps[s];
      const RefStep& want = ref.steps[s];
      CAPTURE(step.id);
      REQUIRE(step.id == want.id);
      const attn::testing::Excess excess =
          attn::testing::beyond_bound(step.value, want.value, want.bound);
      CHECK_MESSAGE(excess.cells == 0, excess.first);
      worst = std::max(worst, excess.worst);
      cells += step.value.n_elem;
    }
  }
  MESSAGE("largest |pipeline − reference| " << worst << " of its bound");
  // The random lessons really cover the features.
  CHECK(cross > 40);
  CHECK(masked_lessons > 80);
  CHECK(cells > 20000);
}

TEST_CASE("the plain-loop comparison notices a value moved past its bound") {
  attn::testing::HostBackend cpu;
  const attn::Lesson L = random_lesson(7);
  attn::Trace trace = attn::run_pipeline(L, cpu);
  RefTrace ref = reference_attention(L, trace);
  for (const RefStep& want : ref.steps) {
    if (want.id != "head0.context") continue;
    arma::mat moved = trace.at(want.id).value;
    moved(0, 0) =
        want.value(0, 0) + 1.5 * want.bound.limit(0, 0, moved(0, 0), want.value(0, 0)) + 1e-300;
    const attn::testing::Excess excess = attn::testing::beyond_bound(moved, want.value, want.bound);
    CHECK(excess.cells == 1);
    CHECK(excess.first.rfind("cell (0,0) is ", 0) == 0);
  }
}

// Decoding token by token with a KV cache (lesson [decode]): every decoding
// step against the plain-loop reference from the trace's own inputs, and each
// step's context within the bound of row t of the full causal computation
// (both within carried_context's error of the exact row), which is below the
// trace's own warning threshold, on random causal self-attention lessons.
TEST_CASE("KV cache decoding equals the full causal rows on 120 random lessons") {
  using attn::DecodeStep;
  using attn::testing::beyond_bound;
  attn::testing::HostBackend cpu;
  std::size_t rows = 0, multi_head = 0, quiet = 0;
  for (std::uint64_t seed = 1001; seed <= 1120; ++seed) {
    attn::Lesson L = random_lesson(seed);
    L.memory.reset();  // causal self-attention, the causal mask alone
    L.memory_tokens.clear();
    L.key_padding.clear();
    L.keep.reset();
    std::mt19937_64 rng(seed);  // keys and values from X now: d_model rows
    L.W_K = random_matrix(rng, L.X.n_cols, L.heads * L.d_k);
    L.W_V = random_matrix(rng, L.X.n_cols, L.heads * L.d_v);
    L.causal = true;
    L.kv_cache = true;
    CAPTURE(seed);
    const attn::Trace trace = attn::run_pipeline(L, cpu);
    multi_head += L.heads > 1;
    bool within_tolerance = true;  // every row's bound below the trace's warning threshold
    for (std::size_t h = 0; h < L.heads; ++h) {
      const attn::testing::Carried full = carried_context(trace, h);
      within_tolerance &= 2.0 * full.error.max() < attn::kDecodeTolerance;
      const arma::mat& check = trace.at(attn::decode_check_id(h)).value;
      const arma::mat& Q = trace.at(attn::head_step_id(h, attn::HeadStep::Q)).value;
      const arma::mat& K = trace.at(attn::head_step_id(h, attn::HeadStep::K)).value;
      const arma::mat& V = trace.at(attn::head_step_id(h, attn::HeadStep::V)).value;
      for (std::size_t t = 0; t < L.X.n_rows; ++t) {
        CAPTURE(h);
        CAPTURE(t);
        const auto at = [&](DecodeStep s) -> const arma::mat& {
          return trace.at(attn::decode_step_id(t, h, s)).value;
        };
        // the cache grows by one row per step: rows 0..t of the head's K and V
        CHECK(arma::approx_equal(at(DecodeStep::q), Q.rows(t, t), "absdiff", 0.0));
        CHECK(arma::approx_equal(at(DecodeStep::K_cache), K.rows(0, t), "absdiff", 0.0));
        CHECK(arma::approx_equal(at(DecodeStep::V_cache), V.rows(0, t), "absdiff", 0.0));
        // the decoding step's row by the book, from its own q, cache and values
        const arma::mat want_scores =
            plain::matmul_transposed(at(DecodeStep::q), at(DecodeStep::K_cache));
        const arma::mat want_scaled = plain::divide(at(DecodeStep::scores), trace.scale);
        const arma::mat want_weights =
            plain::row_softmax(at(DecodeStep::scaled), attn::MaskedRowPolicy::nan);
        const arma::mat want_context =
            plain::matmul(at(DecodeStep::weights), at(DecodeStep::V_cache));
        CHECK(beyond_bound(
                  at(DecodeStep::scores), want_scores,
                  attn::testing::product_bound(at(DecodeStep::q), at(DecodeStep::K_cache).t()))
                  .first == "");
        CHECK(beyond_bound(at(DecodeStep::scaled), want_scaled,
                           attn::testing::elementwise_bound(1, t + 1, 2))
                  .first == "");
        CHECK(beyond_bound(at(DecodeStep::weights), want_weights,
                           attn::testing::softmax_bound(at(DecodeStep::scaled)))
                  .first == "");
        CHECK(beyond_bound(
                  at(DecodeStep::context), want_context,
                  attn::testing::product_bound(at(DecodeStep::weights), at(DecodeStep::V_cache)))
                  .first == "");
        // Row t of the full computation: both within full.error of the exact row.
        const arma::rowvec twice = 2.0 * full.error.row(t);
        const attn::testing::Bound row_bound{twice, arma::zeros(arma::size(twice))};
        const arma::mat& full_context =
            trace.at(attn::head_step_id(h, attn::HeadStep::context)).value;
        CHECK(beyond_bound(at(DecodeStep::context), full_context.rows(t, t), row_bound).first ==
              "");
        double largest = 0.0;
        for (std::size_t j = 0; j < full_context.n_cols; ++j)
          largest = std::max(largest, std::abs(at(DecodeStep::context)(0, j) - full_context(t, j)));
        CHECK(check(t, 0) == largest);  // the trace's own check says so
        ++rows;
      }
    }
    // Where the bound is below the trace's warning threshold (kDecodeTolerance),
    // no machine can warn; above it, a BLAS kernel could, rightly or not.
    if (within_tolerance) CHECK(trace.warnings.empty());
    quiet += within_tolerance;
  }
  CHECK(quiet > 80);
  CHECK(multi_head > 40);
  CHECK(rows > 300);
}
