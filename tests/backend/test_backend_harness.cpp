// One harness for every backend (in the manner of ggml's test-backend-ops): the
// same cases run on the backend named on the command line and every step is
// compared with the CPU backend's, cell by cell, to 1e-12 absolute plus 1e-12
// relative; a NaN must meet a NaN, an infinity the same infinity. The cases:
// every lesson of lessons/, 200 seeded random lessons, edge cases of attention
// (fully masked rows under each policy and fill, n = 1, d_k = 1, m != n, causal,
// key padding, sizes past one block of threads), odd products, and the forward
// plan when the backend has one.
//
// Usage: backend_harness --backend cpu|cuda [doctest options]
// The CUDA backend is the plugin that ATTN_CUDA_PLUGIN names, else the one
// beside the program: CTest runs it twice, with the real plugin and with the
// host-kernels plugin (host_kernels_plugin.cpp: the CUDA backend's seam, layout
// and row functions on the host, so tested on every machine). A backend that
// cannot run here (cuda without a usable GPU) exits 77, which CTest reports as
// skipped, after saying why.
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include <cmath>
#include <cstdio>
#include <limits>
#include <memory>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "backend/backend.hpp"
#include "backend/cpu_backend.hpp"
#include "core/error.hpp"
#include "core/lesson_library.hpp"
#include "core/pipeline.hpp"
#include "support/random_lesson.hpp"

namespace {

using attn::HeadStep;

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kAbsoluteTolerance = 1e-12;
constexpr double kRelativeTolerance = 1e-12;

// The backend under test, made in main.
attn::Backend* tested = nullptr;


// Equal within |got − want| <= 1e-12 + 1e-12·|want|; a NaN equals only a NaN,
// an infinity only the same infinity (masked cells hold the same fill on both).
bool close(double got, double want) {
  if (std::isnan(got) || std::isnan(want)) return std::isnan(got) && std::isnan(want);
  if (std::isinf(got) || std::isinf(want)) return got == want;
  return std::abs(got - want) <= kAbsoluteTolerance + kRelativeTolerance * std::abs(want);
}

// "" when `got` equals `want` cell for cell (close), else the shapes or the
// first differing cell and how many differ.
std::string difference(const arma::mat& got, const arma::mat& want) {
  std::ostringstream out;
  out.precision(17);
  if (got.n_rows != want.n_rows || got.n_cols != want.n_cols) {
    out << "shape " << got.n_rows << "x" << got.n_cols << ", the CPU's " << want.n_rows << "x"
        << want.n_cols;
    return out.str();
  }
  std::size_t differing = 0;
  for (std::size_t c = 0; c < want.n_cols; ++c)
    for (std::size_t r = 0; r < want.n_rows; ++r) {
      if (close(got(r, c), want(r, c))) continue;
      if (differing++ == 0)
        out << "cell (" << r << "," << c << ") is " << got(r, c) << ", the CPU's " << want(r, c);
    }
  if (differing > 1) out << " (and " << differing - 1 << " more cells)";
  return out.str();
}

// Cells compared so far, to show that the cases really ran.
std::size_t compared_cells = 0;

void check_same(const std::string& what, const arma::mat& got, const arma::mat& want) {
  const std::string diff = difference(got, want);
  CHECK_MESSAGE(diff.empty(), what << ": " << diff);
  compared_cells += want.n_elem;
}

// Every step of the backend's trace against the CPU's: the same ids in the
// same order, the same warnings, every cell close.
void check_same_trace(const attn::Trace& got, const attn::Trace& want) {
  CHECK(got.backend == tested->name());
  CHECK(got.warnings == want.warnings);
  REQUIRE(got.steps.size() == want.steps.size());
  for (std::size_t s = 0; s < want.steps.size(); ++s) {
    REQUIRE(got.steps[s].id == want.steps[s].id);
    check_same(want.lesson_id + " " + want.steps[s].id, got.steps[s].value, want.steps[s].value);
  }
}

// Both backends' trace of one lesson, in f64 (a narrower format is emulated on
// the CPU only, and the pipeline refuses it on any other backend).
void check_lesson(attn::Lesson lesson) {
  CAPTURE(lesson.id);
  lesson.dtype = attn::Dtype::f64;
  attn::CpuBackend cpu;
  check_same_trace(attn::run_pipeline(lesson, *tested), attn::run_pipeline(lesson, cpu));
}

arma::mat random_matrix(std::mt19937_64& rng, std::size_t rows, std::size_t cols, double scale) {
  return scale * attn::testing::random_matrix(rng, rows, cols);
}

// One call of attention, set up by hand.
struct AttendCase {
  std::size_t n = 3, m = 3, heads = 1, d_k = 2, d_v = 2;
  double score_scale = 1.0;  // the inputs' magnitude: large values test the stable softmax
  double divisor = std::sqrt(2.0);
  double fill = -kInf;
  attn::MaskedRowPolicy policy = attn::MaskedRowPolicy::nan;
  arma::umat mask;  // (n,m) MaskReason bits; empty: nothing masked
  std::uint64_t seed = 1;
};

// The backend's steps of every head against the CPU's.
void check_attend(const AttendCase& c) {
  std::mt19937_64 rng(c.seed);
  const arma::mat Q = random_matrix(rng, c.n, c.heads * c.d_k, c.score_scale);
  const arma::mat K = random_matrix(rng, c.m, c.heads * c.d_k, c.score_scale);
  const arma::mat V = random_matrix(rng, c.m, c.heads * c.d_v, 1.0);
  const arma::umat mask = c.mask.is_empty() ? arma::umat(c.n, c.m, arma::fill::zeros) : c.mask;
  attn::AttentionInput in{Q, K, V, mask};
  in.heads = c.heads;
  in.d_k = c.d_k;
  in.d_v = c.d_v;
  in.divisor = c.divisor;
  in.fill = c.fill;
  in.policy = c.policy;
  attn::CpuBackend cpu;
  const std::vector<attn::HeadAttention> got = tested->attend(in), want = cpu.attend(in);
  REQUIRE(got.size() == want.size());
  for (std::size_t h = 0; h < want.size(); ++h)
    for (std::size_t s = 0; s < attn::kHeadSteps; ++s) {
      const auto step = static_cast<HeadStep>(s);
      check_same(attn::head_step_id(h, step), got[h][step], want[h][step]);
    }
}

// Causal: key j after query i is masked.
arma::umat causal_mask(std::size_t n, std::size_t m) {
  arma::umat mask(n, m, arma::fill::zeros);
  for (std::size_t i = 0; i < n; ++i)
    for (std::size_t j = i + 1; j < m; ++j) mask(i, j) = attn::mask_causal;
  return mask;
}

// The forward pass by its formula in Armadillo: [Q|K|V] = X·W_QKV, head h =
// softmax(Q_h·K_hᵀ/√(d/h))·V_h, output = [heads]·W_O. X:(n,d) -> (n,d)
arma::mat forward_formula(const arma::mat& X, const arma::mat& W_QKV, const arma::mat& W_O,
                          std::size_t heads) {
  const std::size_t d = X.n_cols, w = d / heads;
  const arma::mat QKV = X * W_QKV;
  arma::mat concat(X.n_rows, d);
  for (std::size_t h = 0; h < heads; ++h) {
    const arma::mat Q = QKV.cols(h * w, (h + 1) * w - 1);
    const arma::mat K = QKV.cols(d + h * w, d + (h + 1) * w - 1);
    const arma::mat V = QKV.cols(2 * d + h * w, 2 * d + (h + 1) * w - 1);
    const arma::mat scaled = Q * K.t() / std::sqrt(static_cast<double>(w));
    concat.cols(h * w, (h + 1) * w - 1) = attn::f64_arithmetic().row_softmax(scaled) * V;
  }
  return concat * W_O;
}

// upload, compute, download
arma::mat run_plan(attn::ForwardPlan& plan, const arma::mat& X) {
  arma::mat output(X.n_rows, X.n_cols);
  plan.upload(X.memptr());
  plan.compute();
  plan.download(output.memptr());
  return output;
}

// The named cases of attention, set up by hand.
std::vector<std::pair<std::string, AttendCase>> edge_cases() {
  std::vector<std::pair<std::string, AttendCase>> cases;
  const auto add = [&](std::string name) -> AttendCase& {
    cases.emplace_back(std::move(name), AttendCase{});
    cases.back().second.seed = cases.size();
    return cases.back().second;
  };
  add("nothing masked");
  AttendCase& one_query = add("one query (n = 1)");
  one_query.n = 1;
  one_query.m = 5;
  add("one key (m = 1)").m = 1;
  AttendCase& narrow = add("d_k = 1, d_v = 1, three heads");
  narrow.d_k = narrow.d_v = 1;
  narrow.heads = 3;
  narrow.divisor = 1.0;
  AttendCase& wide = add("cross-attention, more keys than queries");
  wide.m = 7;
  wide.heads = 2;
  wide.d_v = 3;
  AttendCase& tall = add("cross-attention, fewer keys than queries");
  tall.n = 9;
  tall.m = 2;
  tall.heads = 2;
  tall.d_k = 3;
  AttendCase& causal = add("causal");
  causal.n = causal.m = 6;
  causal.heads = 2;
  causal.mask = causal_mask(6, 6);
  AttendCase& padded = add("key padding and a keep matrix: every reason bit masks");
  padded.n = 4;
  padded.m = 5;
  padded.mask = arma::umat(4, 5, arma::fill::zeros);
  padded.mask.col(4).fill(attn::mask_padding);
  padded.mask(0, 1) = attn::mask_keep;
  padded.mask(2, 3) = attn::mask_keep | attn::mask_causal;
  AttendCase& huge = add("huge scores: the softmax must subtract the row max");
  huge.score_scale = 30.0;
  huge.divisor = 1.0;
  AttendCase& big = add("past one block of 256 threads, five heads, causal");
  big.n = 70;
  big.m = 45;
  big.heads = 5;
  big.d_k = 16;
  big.d_v = 12;
  big.divisor = 4.0;
  big.mask = causal_mask(70, 45);
  AttendCase& all = add("every cell masked, uniform");
  all.mask = arma::umat(3, 3, arma::fill::ones);
  all.policy = attn::MaskedRowPolicy::uniform;
  // Row 1 fully masked, row 0 masked but for its first key, under each fill
  // (the policy applies with -inf only) and each policy.
  for (const double fill : {-kInf, -1e9, -65504.0, 0.0})
    for (const attn::MaskedRowPolicy policy :
         {attn::MaskedRowPolicy::nan, attn::MaskedRowPolicy::zero,
          attn::MaskedRowPolicy::uniform}) {
      AttendCase& c = add("fully masked rows, fill " + std::to_string(fill) + ", policy " +
                          std::to_string(static_cast<int>(policy)));
      c.m = 4;
      c.heads = 2;
      c.fill = fill;
      c.policy = policy;
      c.mask = arma::umat(3, 4, arma::fill::zeros);
      c.mask.row(1).fill(attn::mask_padding);
      c.mask(0, arma::span(1, 3)).fill(attn::mask_keep);
    }
  return cases;
}

}  // namespace

TEST_CASE("backend harness: the comparison notices a difference") {
  CHECK(close(1.0, 1.0 + 1e-13));
  CHECK_FALSE(close(1.0, 1.0 + 1e-11));
  CHECK(close(1e6, 1e6 * (1 + 5e-13)));  // relative for big values
  CHECK(close(kInf, kInf));
  CHECK_FALSE(close(-kInf, kInf));
  CHECK_FALSE(close(-kInf, -1e9));
  CHECK(close(std::nan(""), std::nan("")));
  CHECK_FALSE(close(std::nan(""), 0.0));
  CHECK_FALSE(close(0.25, std::nan("")));
  arma::mat want = {{1.0, 2.0}, {3.0, 4.0}};
  arma::mat got = want;
  CHECK(difference(got, want).empty());
  got(1, 0) += 1e-9;
  CHECK(difference(got, want) == "cell (1,0) is 3.0000000010000001, the CPU's 3");
  CHECK(difference(arma::mat(2, 3), want) == "shape 2x3, the CPU's 2x2");
}

TEST_CASE("backend harness: every lesson of lessons/ equals the CPU's trace, step by step") {
  const std::size_t before = compared_cells;
  const std::vector<attn::Lesson> lessons = attn::all_embedded_lessons();
  CHECK(lessons.size() >= 30);
  for (const attn::Lesson& lesson : lessons) check_lesson(lesson);
  CHECK(compared_cells - before > 10000);
}

TEST_CASE("backend harness: a narrower format runs on the CPU only") {
  attn::Lesson lesson = attn::find_lesson("river-bank");
  lesson.dtype = attn::Dtype::f16;
  if (tested->name() == "cpu")
    CHECK_NOTHROW(attn::run_pipeline(lesson, *tested));
  else
    CHECK_THROWS_AS(attn::run_pipeline(lesson, *tested), attn::BackendUnavailable);
}

TEST_CASE("backend harness: 200 seeded random lessons equal the CPU's traces") {
  const std::size_t before = compared_cells;
  for (std::uint64_t seed = 1; seed <= 200; ++seed)
    check_lesson(attn::testing::random_lesson(seed));
  CHECK(compared_cells - before > 20000);
}

TEST_CASE("backend harness: attention's edge cases equal the CPU's steps") {
  for (const auto& [name, c] : edge_cases()) {
    CAPTURE(name);
    check_attend(c);
  }
}

TEST_CASE("backend harness: products of odd shapes equal the CPU's") {
  attn::CpuBackend cpu;
  std::mt19937_64 rng(42);
  for (const auto& [n, k, p] : std::vector<std::array<std::size_t, 3>>{
           {1, 1, 1}, {5, 1, 7}, {1, 9, 1}, {3, 8, 2}, {64, 33, 17}, {130, 70, 3}}) {
    const arma::mat A = random_matrix(rng, n, k, 1.0), B = random_matrix(rng, k, p, 1.0);
    check_same("matmul " + std::to_string(n) + "x" + std::to_string(k) + "x" + std::to_string(p),
               tested->matmul(A, B), cpu.matmul(A, B));
  }
}

TEST_CASE("backend harness: the forward plan equals its formula and the CPU's plan") {
  attn::CpuBackend cpu;
  std::mt19937_64 rng(7);
  for (const attn::ForwardShape shape :
       {attn::ForwardShape{1, 4, 1}, attn::ForwardShape{7, 12, 3}, attn::ForwardShape{33, 64, 8}}) {
    CAPTURE(shape.n);
    CAPTURE(shape.d_model);
    CAPTURE(shape.heads);
    const std::size_t d = shape.d_model;
    const arma::mat W_QKV = random_matrix(rng, d, 3 * d, 0.3), W_O = random_matrix(rng, d, d, 0.3);
    const arma::mat X = random_matrix(rng, shape.n, d, 1.0);
    std::unique_ptr<attn::ForwardPlan> plan;
    try {
      plan = tested->plan_forward(shape, W_QKV, W_O);
    } catch (const attn::BackendUnavailable& e) {
      MESSAGE("skipped: backend " << tested->name()
                                  << " has no forward plan: " << std::string(e.what()));
      return;
    }
    CHECK(plan->bytes() >= (3 * d * d + d * d) * sizeof(double));
    const arma::mat output = run_plan(*plan, X);
    check_same("plan output against the formula", output,
               forward_formula(X, W_QKV, W_O, shape.heads));
    // A second run of the same plan on new input.
    const arma::mat X2 = random_matrix(rng, shape.n, d, 1.0);
    check_same("plan output, run again", run_plan(*plan, X2),
               forward_formula(X2, W_QKV, W_O, shape.heads));
    try {
      std::unique_ptr<attn::ForwardPlan> cpu_plan = cpu.plan_forward(shape, W_QKV, W_O);
      check_same("plan output against the CPU's plan", output, run_plan(*cpu_plan, X));
    } catch (const attn::BackendUnavailable& e) {
      MESSAGE("skipped the comparison with the CPU's plan: " << std::string(e.what()));
    }
  }
}

int main(int argc, char** argv) {
  std::string name;
  std::vector<char*> rest;
  for (int i = 0; i < argc; ++i) {
    if (std::string(argv[i]) == "--backend" && i + 1 < argc)
      name = argv[++i];
    else
      rest.push_back(argv[i]);
  }
  if (name.empty()) {
    std::fprintf(stderr,
                 "usage: backend_harness --backend cpu|cuda [doctest options]\n");
    return 2;
  }
  std::unique_ptr<attn::Backend> backend;
  try {
    backend = attn::make_backend(name);
  } catch (const attn::BackendUnavailable& e) {
    std::printf("SKIPPED: backend %s cannot run here: %s\n", name.c_str(), e.what());
    return 77;  // CTest's SKIP_RETURN_CODE: skipped, not passed
  }
  tested = backend.get();
  std::printf("backend harness: %s against cpu\n", name.c_str());
  doctest::Context context;
  context.applyCommandLine(static_cast<int>(rest.size()), rest.data());
  const int status = context.run();
  std::printf("backend harness: %zu cells compared with the CPU's\n", compared_cells);
  return status;
}
