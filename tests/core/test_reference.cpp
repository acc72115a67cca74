// The pipeline against an independent plain-loop implementation (no
// Armadillo in the reference) on 200+ seeded random lessons. The reference
// computes each step from the pipeline's own values of the steps it reads, so
// that every operation is compared alone, and each cell must lie within what
// floating point allows two correct results of that operation in any
// summation order (support/fp_bounds.hpp); NaN and ±inf in the same cells.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "backend/cpu_backend.hpp"
#include "core/pipeline.hpp"
#include "support/fp_bounds.hpp"
#include "support/random_lesson.hpp"

namespace {

using attn::testing::Bound;
using attn::testing::random_lesson;
using attn::testing::random_matrix;
using Grid = std::vector<std::vector<double>>;
constexpr double kInf = std::numeric_limits<double>::infinity();

Grid zeros(std::size_t r, std::size_t c) {
  return Grid(r, std::vector<double>(c, 0.0));
}

Grid from_arma(const arma::mat& M) {
  Grid g = zeros(M.n_rows, M.n_cols);
  for (std::size_t r = 0; r < M.n_rows; ++r)
    for (std::size_t c = 0; c < M.n_cols; ++c) g[r][c] = M(r, c);
  return g;
}

// A:(n,k) B:(k,p) -> (n,p), with an optional bias row.
Grid ref_matmul(const Grid& A, const Grid& B, const std::vector<double>* bias = nullptr) {
  Grid out = zeros(A.size(), B[0].size());
  for (std::size_t i = 0; i < A.size(); ++i)
    for (std::size_t j = 0; j < B[0].size(); ++j) {
      double s = bias ? (*bias)[j] : 0.0;
      for (std::size_t k = 0; k < B.size(); ++k) s += A[i][k] * B[k][j];
      out[i][j] = s;
    }
  return out;
}

Grid columns(const Grid& M, std::size_t from, std::size_t count) {
  Grid out = zeros(M.size(), count);
  for (std::size_t i = 0; i < M.size(); ++i)
    for (std::size_t j = 0; j < count; ++j) out[i][j] = M[i][from + j];
  return out;
}

arma::mat to_arma(const Grid& g) {
  arma::mat M(g.size(), g.empty() ? 0 : g[0].size());
  for (std::size_t r = 0; r < M.n_rows; ++r)
    for (std::size_t c = 0; c < M.n_cols; ++c) M(r, c) = g[r][c];
  return M;
}

struct RefStep {
  std::string id;
  Grid value;
  Bound bound;  // how far the pipeline's value may be from `value`
};

struct RefTrace {
  std::vector<RefStep> steps;
};

// Attention by the book, loop by loop, straight from the conventions of
// docs/lesson-format.md; each step from `tool`'s values of the steps it reads.
RefTrace reference_attention(const attn::Lesson& L, const attn::Trace& tool) {
  using namespace attn::testing;
  RefTrace t;
  const auto in = [&](const std::string& id) { return from_arma(tool.at(id).value); };
  const auto add = [&](const std::string& id, Grid value, Bound bound) {
    t.steps.push_back({id, std::move(value), std::move(bound)});
  };
  const auto exact = [](const Grid& g) {
    return exact_bound(g.size(), g.empty() ? 0 : g[0].size());
  };
  Grid X = from_arma(L.X);
  add("X", X, exact(X));
  const bool pe = L.positional_encoding == attn::PositionalEncoding::sinusoidal;
  // The same library sin, cos and pow on the same numbers: the same table.
  auto positions = [](std::size_t n, std::size_t d) {
    Grid P = zeros(n, d);
    for (std::size_t pos = 0; pos < n; ++pos)
      for (std::size_t j = 0; j < d; ++j) {
        const double angle =
            static_cast<double>(pos) /
            std::pow(10000.0, static_cast<double>(2 * (j / 2)) / static_cast<double>(d));
        P[pos][j] = (j % 2 == 0) ? std::sin(angle) : std::cos(angle);
      }
    return P;
  };
  // One addition, correctly rounded: the same on both sides.
  auto plus = [](Grid A, const Grid& B) {
    for (std::size_t r = 0; r < A.size(); ++r)
      for (std::size_t c = 0; c < A[r].size(); ++c) A[r][c] += B[r][c];
    return A;
  };
  std::string x_id = "X", source_id = "X";
  if (pe) {
    const Grid P = positions(X.size(), X[0].size());
    add("PE", P, exact(P));
    const Grid XP = plus(in("X"), in("PE"));
    add("X+PE", XP, exact(XP));
    x_id = source_id = "X+PE";
  }
  if (L.memory) {
    const Grid M = from_arma(*L.memory);
    add("memory", M, exact(M));
    source_id = "memory";
    if (pe) {
      const Grid MP = plus(in("memory"), positions(M.size(), M[0].size()));
      add("memory+PE", MP, exact(MP));
      source_id = "memory+PE";
    }
  }
  auto bias = [](const std::optional<arma::rowvec>& b) {
    return b ? std::vector<double>(b->begin(), b->end()) : std::vector<double>();
  };
  const std::vector<double> bq = bias(L.b_Q), bk = bias(L.b_K), bv = bias(L.b_V), bo = bias(L.b_O);
  // The weights as given, then the projection: W_Q, (b_Q), Q, W_K, ...
  auto project = [&](const std::string& from, const char* letter, const arma::mat& W,
                     const std::optional<arma::rowvec>& b, const std::vector<double>& row) {
    add(std::string("W_") + letter, from_arma(W), exact_bound(W.n_rows, W.n_cols));
    if (b) add(std::string("b_") + letter, Grid{row}, exact_bound(1, row.size()));
    const Grid source = in(from);
    add(letter, ref_matmul(source, from_arma(W), b ? &row : nullptr),
        product_bound(to_arma(source), W, b ? &*b : nullptr));
  };
  project(x_id, "Q", L.W_Q, L.b_Q, bq);
  project(source_id, "K", L.W_K, L.b_K, bk);
  project(source_id, "V", L.W_V, L.b_V, bv);

  const Grid Q = in("Q"), K = in("K"), V = in("V");
  const std::size_t n = Q.size(), m = K.size(), dk = L.W_Q.n_cols / L.heads,
                    dv = L.W_V.n_cols / L.heads;
  const double scale = L.scale_kind == attn::ScaleKind::sqrt_dk ? std::sqrt(static_cast<double>(dk))
                       : L.scale_kind == attn::ScaleKind::none  ? 1.0
                                                                : L.scale_number;
  Grid mean = zeros(n, m), most = zeros(n, m);
  std::vector<arma::mat> all_weights;
  std::vector<std::string> contexts;
  for (std::size_t h = 0; h < L.heads; ++h) {
    const std::string p = "head" + std::to_string(h) + ".";
    const Grid Qh = columns(Q, h * dk, dk), Kh = columns(K, h * dk, dk),
               Vh = columns(V, h * dv, dv);
    add(p + "Q", Qh, exact(Qh));
    add(p + "K", Kh, exact(Kh));
    add(p + "V", Vh, exact(Vh));
    Grid scores = zeros(n, m), scaled = zeros(n, m), masked = zeros(n, m), E = zeros(n, m),
         sums = zeros(n, 1), A = zeros(n, m);
    const Grid tool_Qh = in(p + "Q"), tool_Kh = in(p + "K"), tool_scores = in(p + "scores"),
               tool_scaled = in(p + "scaled"), tool_masked = in(p + "masked"),
               tool_exp = in(p + "exp");
    for (std::size_t i = 0; i < n; ++i) {
      for (std::size_t j = 0; j < m; ++j) {
        for (std::size_t k = 0; k < dk; ++k) scores[i][j] += tool_Qh[i][k] * tool_Kh[j][k];
        scaled[i][j] = tool_scores[i][j] / scale;
        const bool is_masked = (L.causal && j > i) ||
                               (!L.key_padding.empty() && L.key_padding[j]) ||
                               (L.keep && (*L.keep)(i, j) == 0);
        masked[i][j] = is_masked ? L.mask_fill : tool_scaled[i][j];
        E[i][j] = std::exp(tool_masked[i][j]);
        sums[i][0] += tool_exp[i][j];
      }
      double row_max = -kInf;
      for (std::size_t j = 0; j < m; ++j) row_max = std::max(row_max, tool_masked[i][j]);
      if (row_max == -kInf) {
        for (std::size_t j = 0; j < m; ++j)
          A[i][j] = L.masked_row == attn::MaskedRowPolicy::nan    ? std::nan("")
                    : L.masked_row == attn::MaskedRowPolicy::zero ? 0.0
                                                                  : 1.0 / static_cast<double>(m);
        continue;
      }
      double denom = 0.0;
      for (std::size_t j = 0; j < m; ++j) denom += std::exp(tool_masked[i][j] - row_max);
      for (std::size_t j = 0; j < m; ++j) A[i][j] = std::exp(tool_masked[i][j] - row_max) / denom;
    }
    add(p + "scores", scores, product_bound(to_arma(tool_Qh), to_arma(tool_Kh).t()));
    // a division, or a product by a rounded 1/s
    add(p + "scaled", scaled, elementwise_bound(n, m, 2));
    add(p + "masked", masked, exact(masked));
    add(p + "exp", E, library_bound(n, m));
    add(p + "row_sum", sums, row_sum_bound(to_arma(tool_exp)));
    // rows without a key: NaN, 0 or 1/m on both sides, exactly
    add(p + "weights", A, softmax_bound(to_arma(tool_masked)));
    const Grid tool_A = in(p + "weights");
    add(p + "context", ref_matmul(tool_A, Vh), product_bound(to_arma(tool_A), to_arma(Vh)));
    all_weights.push_back(to_arma(tool_A));
    for (std::size_t i = 0; i < n; ++i)
      for (std::size_t j = 0; j < m; ++j) {
        mean[i][j] += tool_A[i][j] / static_cast<double>(L.heads);
        most[i][j] = h == 0 ? tool_A[i][j] : std::max(most[i][j], tool_A[i][j]);
      }
    contexts.push_back(p + "context");
  }
  if (L.heads > 1) {
    add("heads.mean", mean, mean_bound(all_weights));
    add("heads.max", most, exact(most));
  }
  Grid concat = zeros(n, 0);
  for (const std::string& id : contexts) {
    const Grid C = in(id);
    for (std::size_t i = 0; i < n; ++i) concat[i].insert(concat[i].end(), C[i].begin(), C[i].end());
  }
  add("concat", concat, exact(concat));
  if (L.W_O) {
    add("W_O", from_arma(*L.W_O), exact_bound(L.W_O->n_rows, L.W_O->n_cols));
    if (L.b_O) add("b_O", Grid{bo}, exact_bound(1, bo.size()));
    const Grid tool_concat = in("concat");
    add("output", ref_matmul(tool_concat, from_arma(*L.W_O), L.b_O ? &bo : nullptr),
        product_bound(to_arma(tool_concat), *L.W_O, L.b_O ? &*L.b_O : nullptr));
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
  attn::CpuBackend cpu;
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
          attn::testing::beyond_bound(step.value, to_arma(want.value), want.bound);
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
  attn::CpuBackend cpu;
  const attn::Lesson L = random_lesson(7);
  attn::Trace trace = attn::run_pipeline(L, cpu);
  RefTrace ref = reference_attention(L, trace);
  for (const RefStep& want : ref.steps) {
    if (want.id != "head0.context") continue;
    arma::mat moved = trace.at(want.id).value;
    moved(0, 0) =
        want.value[0][0] + 1.5 * want.bound.limit(0, 0, moved(0, 0), want.value[0][0]) + 1e-300;
    const attn::testing::Excess excess =
        attn::testing::beyond_bound(moved, to_arma(want.value), want.bound);
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
  attn::CpuBackend cpu;
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
        const Grid q = from_arma(at(DecodeStep::q)), Kc = from_arma(at(DecodeStep::K_cache)),
                   scores = from_arma(at(DecodeStep::scores)),
                   scaled = from_arma(at(DecodeStep::scaled)),
                   weights = from_arma(at(DecodeStep::weights));
        Grid want_scores = zeros(1, t + 1), want_scaled = zeros(1, t + 1),
             want_weights = zeros(1, t + 1);
        double top = -kInf, denom = 0.0;
        for (std::size_t j = 0; j <= t; ++j) {
          for (std::size_t k = 0; k < q[0].size(); ++k) want_scores[0][j] += q[0][k] * Kc[j][k];
          want_scaled[0][j] = scores[0][j] / trace.scale;
          top = std::max(top, scaled[0][j]);
        }
        for (std::size_t j = 0; j <= t; ++j) denom += std::exp(scaled[0][j] - top);
        for (std::size_t j = 0; j <= t; ++j)
          want_weights[0][j] = std::exp(scaled[0][j] - top) / denom;
        const Grid want_context = ref_matmul(weights, from_arma(at(DecodeStep::V_cache)));
        CHECK(beyond_bound(
                  at(DecodeStep::scores), to_arma(want_scores),
                  attn::testing::product_bound(at(DecodeStep::q), at(DecodeStep::K_cache).t()))
                  .first == "");
        CHECK(beyond_bound(at(DecodeStep::scaled), to_arma(want_scaled),
                           attn::testing::elementwise_bound(1, t + 1, 2))
                  .first == "");
        CHECK(beyond_bound(at(DecodeStep::weights), to_arma(want_weights),
                           attn::testing::softmax_bound(at(DecodeStep::scaled)))
                  .first == "");
        CHECK(beyond_bound(
                  at(DecodeStep::context), to_arma(want_context),
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
