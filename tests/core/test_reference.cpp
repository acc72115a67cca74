// The pipeline against an independent plain-loop implementation (no
// Armadillo in the reference) on 200+ seeded random lessons, to 1e-12.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "backend/cpu_backend.hpp"
#include "core/pipeline.hpp"
#include "support/random_lesson.hpp"

namespace {

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

struct RefTrace {
  std::vector<std::pair<std::string, Grid>> steps;
};

// Attention by the book, loop by loop, straight from the conventions of docs/lesson-format.md.
RefTrace reference_attention(const attn::Lesson& L) {
  RefTrace t;
  Grid X = from_arma(L.X);
  t.steps.push_back({"X", X});
  const bool pe = L.positional_encoding == attn::PositionalEncoding::sinusoidal;
  auto add_pe = [](Grid M) {
    const double d = static_cast<double>(M[0].size());
    for (std::size_t pos = 0; pos < M.size(); ++pos)
      for (std::size_t j = 0; j < M[0].size(); ++j) {
        const double angle =
            static_cast<double>(pos) / std::pow(10000.0, static_cast<double>(2 * (j / 2)) / d);
        M[pos][j] += (j % 2 == 0) ? std::sin(angle) : std::cos(angle);
      }
    return M;
  };
  if (pe) {
    Grid P = add_pe(zeros(X.size(), X[0].size()));
    t.steps.push_back({"PE", P});
    X = add_pe(X);
    t.steps.push_back({"X+PE", X});
  }
  Grid S = X;
  if (L.memory) {
    S = from_arma(*L.memory);
    t.steps.push_back({"memory", S});
    if (pe) {
      S = add_pe(S);
      t.steps.push_back({"memory+PE", S});
    }
  }
  auto bias = [](const std::optional<arma::rowvec>& b) {
    return b ? std::vector<double>(b->begin(), b->end()) : std::vector<double>();
  };
  const std::vector<double> bq = bias(L.b_Q), bk = bias(L.b_K), bv = bias(L.b_V), bo = bias(L.b_O);
  // The weights as given, then the projection: W_Q, (b_Q), Q, W_K, ...
  auto project = [&](const Grid& in, const char* letter, const arma::mat& W,
                     const std::optional<arma::rowvec>& b, const std::vector<double>& bias) {
    t.steps.push_back({std::string("W_") + letter, from_arma(W)});
    if (b) t.steps.push_back({std::string("b_") + letter, Grid{bias}});
    Grid P = ref_matmul(in, from_arma(W), b ? &bias : nullptr);
    t.steps.push_back({letter, P});
    return P;
  };
  const Grid Q = project(X, "Q", L.W_Q, L.b_Q, bq);
  const Grid K = project(S, "K", L.W_K, L.b_K, bk);
  const Grid V = project(S, "V", L.W_V, L.b_V, bv);

  const std::size_t n = Q.size(), m = K.size(), dk = L.W_Q.n_cols / L.heads,
                    dv = L.W_V.n_cols / L.heads;
  const double scale = L.scale_kind == attn::ScaleKind::sqrt_dk ? std::sqrt(static_cast<double>(dk))
                       : L.scale_kind == attn::ScaleKind::none  ? 1.0
                                                                : L.scale_number;
  Grid concat = zeros(n, 0), mean = zeros(n, m), most = zeros(n, m);
  for (std::size_t h = 0; h < L.heads; ++h) {
    const std::string p = "head" + std::to_string(h) + ".";
    const Grid Qh = columns(Q, h * dk, dk), Kh = columns(K, h * dk, dk),
               Vh = columns(V, h * dv, dv);
    Grid scores = zeros(n, m), scaled = zeros(n, m), masked = zeros(n, m), E = zeros(n, m),
         sums = zeros(n, 1), A = zeros(n, m);
    for (std::size_t i = 0; i < n; ++i) {
      for (std::size_t j = 0; j < m; ++j) {
        for (std::size_t k = 0; k < dk; ++k) scores[i][j] += Qh[i][k] * Kh[j][k];
        scaled[i][j] = scores[i][j] / scale;
        const bool is_masked = (L.causal && j > i) ||
                               (!L.key_padding.empty() && L.key_padding[j]) ||
                               (L.keep && (*L.keep)(i, j) == 0);
        masked[i][j] = is_masked ? L.mask_fill : scaled[i][j];
        E[i][j] = std::exp(masked[i][j]);
        sums[i][0] += E[i][j];
      }
      double row_max = -kInf;
      for (std::size_t j = 0; j < m; ++j) row_max = std::max(row_max, masked[i][j]);
      if (row_max == -kInf) {
        for (std::size_t j = 0; j < m; ++j)
          A[i][j] = L.masked_row == attn::MaskedRowPolicy::nan    ? std::nan("")
                    : L.masked_row == attn::MaskedRowPolicy::zero ? 0.0
                                                                  : 1.0 / static_cast<double>(m);
        continue;
      }
      double denom = 0.0;
      for (std::size_t j = 0; j < m; ++j) denom += std::exp(masked[i][j] - row_max);
      for (std::size_t j = 0; j < m; ++j) A[i][j] = std::exp(masked[i][j] - row_max) / denom;
    }
    const Grid C = ref_matmul(A, Vh);
    for (std::size_t i = 0; i < n; ++i)
      for (std::size_t j = 0; j < m; ++j) {
        mean[i][j] += A[i][j] / static_cast<double>(L.heads);
        most[i][j] = h == 0 ? A[i][j] : std::max(most[i][j], A[i][j]);
      }
    for (std::size_t i = 0; i < n; ++i) concat[i].insert(concat[i].end(), C[i].begin(), C[i].end());
    t.steps.push_back({p + "Q", Qh});
    t.steps.push_back({p + "K", Kh});
    t.steps.push_back({p + "V", Vh});
    t.steps.push_back({p + "scores", scores});
    t.steps.push_back({p + "scaled", scaled});
    t.steps.push_back({p + "masked", masked});
    t.steps.push_back({p + "exp", E});
    t.steps.push_back({p + "row_sum", sums});
    t.steps.push_back({p + "weights", A});
    t.steps.push_back({p + "context", C});
  }
  if (L.heads > 1) {
    t.steps.push_back({"heads.mean", mean});
    t.steps.push_back({"heads.max", most});
  }
  t.steps.push_back({"concat", concat});
  if (L.W_O) {
    t.steps.push_back({"W_O", from_arma(*L.W_O)});
    if (L.b_O) t.steps.push_back({"b_O", Grid{bo}});
    t.steps.push_back({"output", ref_matmul(concat, from_arma(*L.W_O), L.b_O ? &bo : nullptr)});
  }
  return t;
}

// Equal to 1e-12 (absolute, relative for big values); -inf/inf/NaN must match exactly.
bool same(double a, double b) {
  if (std::isnan(a) || std::isnan(b)) return std::isnan(a) && std::isnan(b);
  if (std::isinf(a) || std::isinf(b)) return a == b;
  return std::abs(a - b) <= 1e-12 * std::max(1.0, std::abs(b));
}

}  // namespace

TEST_CASE("the pipeline matches a plain-loop reference on 240 random lessons") {
  attn::CpuBackend cpu;
  std::size_t cells = 0, cross = 0, masked_lessons = 0;
  for (std::uint64_t seed = 1; seed <= 240; ++seed) {
    const attn::Lesson L = random_lesson(seed);
    const attn::Trace trace = attn::run_pipeline(L, cpu);
    const RefTrace ref = reference_attention(L);
    CAPTURE(seed);
    REQUIRE(trace.ids().size() == ref.steps.size());
    cross += L.memory.has_value();
    masked_lessons += L.causal || !L.key_padding.empty() || L.keep.has_value();
    for (std::size_t s = 0; s < ref.steps.size(); ++s) {
      const attn::Step& step = trace.steps[s];
      const Grid& want = ref.steps[s].second;
      CAPTURE(step.id);
      REQUIRE(step.id == ref.steps[s].first);
      REQUIRE(step.value.n_rows == want.size());
      REQUIRE(step.value.n_cols == (want.empty() ? 0 : want[0].size()));
      for (std::size_t r = 0; r < want.size(); ++r)
        for (std::size_t c = 0; c < want[r].size(); ++c) {
          CAPTURE(r);
          CAPTURE(c);
          CHECK_MESSAGE(same(step.value(r, c), want[r][c]), step.value(r, c)
                                                                << " != " << want[r][c]);
          ++cells;
        }
    }
  }
  // The random lessons really cover the features.
  CHECK(cross > 40);
  CHECK(masked_lessons > 80);
  CHECK(cells > 20000);
}

// Decoding token by token with a KV cache (lesson [decode]): every step's
// context equals row t of the plain-loop reference's head{h}.context, and the
// trace's own check says so, on random causal self-attention lessons.
TEST_CASE("KV cache decoding equals the full causal rows on 120 random lessons") {
  attn::CpuBackend cpu;
  std::size_t rows = 0, multi_head = 0;
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
    const RefTrace ref = reference_attention(L);
    CHECK(trace.warnings.empty());
    multi_head += L.heads > 1;
    for (std::size_t h = 0; h < L.heads; ++h) {
      const std::string full_id = "head" + std::to_string(h) + ".context";
      const auto full = std::find_if(ref.steps.begin(), ref.steps.end(),
                                     [&](const auto& s) { return s.first == full_id; });
      REQUIRE(full != ref.steps.end());
      const arma::mat& check = trace.at(attn::decode_check_id(h)).value;
      for (std::size_t t = 0; t < L.X.n_rows; ++t) {
        CAPTURE(h);
        CAPTURE(t);
        const arma::mat& K_cache =
            trace.at(attn::decode_step_id(t, h, attn::DecodeStep::K_cache)).value;
        CHECK(K_cache.n_rows == t + 1);  // the cache grows by one row per step
        const arma::mat& c = trace.at(attn::decode_step_id(t, h, attn::DecodeStep::context)).value;
        REQUIRE(c.n_rows == 1);
        for (std::size_t j = 0; j < c.n_cols; ++j) CHECK(same(c(0, j), full->second[t][j]));
        CHECK(check(t, 0) <= 1e-12);
        ++rows;
      }
    }
  }
  CHECK(multi_head > 40);
  CHECK(rows > 300);
}
