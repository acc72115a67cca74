// One harness for every backend (in the manner of ggml's test-backend-ops): the
// same cases run on the backend named on the command line. Every step the
// backend computes (products, and attention's scores, scaled, masked, exp,
// row sums, weights and contexts) is recomputed by the CPU's arithmetic from
// the backend's own values of the steps it reads, so that each operation is
// compared alone, and each cell must lie within what floating point allows
// two correct results of that operation in any summation order
// (support/fp_bounds.hpp: cuBLAS, the host-kernels' loops and every OpenBLAS
// kernel add in different orders); a NaN must meet a NaN, an infinity the
// same infinity. The steps the pipeline composes on the host for every
// backend (slices, LayerNorm, ...) must equal, bit for bit, the CPU's
// pipeline run from the backend's values. The cases: every lesson of
// lessons/, 200 seeded random lessons, edge cases of attention (fully masked
// rows under each policy and fill, n = 1, d_k = 1, m != n, causal, key
// padding, sizes past one block of threads), odd products, and the forward
// plan when the backend has one (its output against the formula's within
// twice the error a forward pass can make).
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

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <memory>
#include <optional>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "backend/backend.hpp"
#include "backend/cpu_backend.hpp"
#include "core/error.hpp"
#include "core/lesson_library.hpp"
#include "core/pipeline.hpp"
#include "support/fp_bounds.hpp"
#include "support/random_lesson.hpp"

namespace {

using attn::HeadStep;

using attn::testing::beyond_bound;
using attn::testing::Bound;

constexpr double kInf = std::numeric_limits<double>::infinity();

// The backend under test, made in main.
attn::Backend* tested = nullptr;


// Cells compared so far, to show that the cases really ran, and the largest
// difference as a fraction of its bound.
std::size_t compared_cells = 0;
double worst_fraction = 0.0;

void check_within(const std::string& what, const arma::mat& got, const arma::mat& want,
                  const Bound& bound) {
  const attn::testing::Excess excess = beyond_bound(got, want, bound, "the CPU's");
  CHECK_MESSAGE(excess.cells == 0, what << ": " << excess.first);
  worst_fraction = std::max(worst_fraction, excess.worst);
  compared_cells += want.n_elem;
}

// One operation a backend computes, and what it reads: the CPU recomputes it
// from exactly these inputs.
struct BackendOp {
  attn::Op op;
  std::vector<const arma::mat*> in;  // the operation's inputs, in Step::made order
  double divisor = 1.0;              // divide
  double fill = 0.0;                 // mask
  const arma::umat* mask = nullptr;  // mask
  attn::MaskedRowPolicy policy = attn::MaskedRowPolicy::nan;  // softmax
};

// Whether the backend computes steps made by `op` (the rest the pipeline
// composes on the host, the same code for every backend).
bool computed_by_backend(attn::Op op) {
  switch (op) {
    case attn::Op::matmul:
    case attn::Op::matmul_t:
    case attn::Op::divide:
    case attn::Op::mask:
    case attn::Op::exp:
    case attn::Op::row_sum:
    case attn::Op::softmax:
      return true;
    default:
      return false;
  }
}

// `got`, the backend's result of `o`, against the CPU's arithmetic on the same inputs.
void check_operation(const std::string& what, const arma::mat& got, const BackendOp& o) {
  const attn::Arithmetic& cpu = attn::f64_arithmetic();
  const arma::mat& a = *o.in.at(0);
  switch (o.op) {
    case attn::Op::matmul: {
      const arma::mat& B = *o.in.at(1);
      arma::mat want = cpu.matmul(a, B);
      std::optional<arma::rowvec> bias;
      if (o.in.size() > 2) {
        bias = arma::rowvec(*o.in[2]);
        want.each_row() += *bias;
      }
      return check_within(what, got, want,
                          attn::testing::product_bound(a, B, bias ? &*bias : nullptr));
    }
    case attn::Op::matmul_t:
      return check_within(what, got, cpu.matmul_transposed(a, *o.in.at(1)),
                          attn::testing::product_bound(a, o.in[1]->t()));
    case attn::Op::divide:  // a division, or a product by a rounded 1/divisor
      return check_within(what, got, attn::scale_scores(a, o.divisor),
                          attn::testing::elementwise_bound(a.n_rows, a.n_cols, 2));
    case attn::Op::mask:
      return check_within(what, got, attn::apply_mask(a, *o.mask, o.fill),
                          attn::testing::exact_bound(a.n_rows, a.n_cols));
    case attn::Op::exp:
      return check_within(what, got, arma::exp(a),
                          attn::testing::library_bound(a.n_rows, a.n_cols));
    case attn::Op::row_sum:
      return check_within(what, got, cpu.row_sum(a), attn::testing::row_sum_bound(a));
    case attn::Op::softmax:  // rows without a key: NaN, 0 or 1/m exactly
      return check_within(what, got, attn::attention_weights(cpu, a, o.policy),
                          attn::testing::softmax_bound(a));
    default:
      FAIL_CHECK(what << ": not an operation of a backend");
  }
}

// Every step of the backend's trace: the same ids in the same order and the
// same warnings as the CPU's; each step the backend computed, against the CPU's
// arithmetic on the backend's inputs; each step composed on the host, bit for
// bit, against the CPU's pipeline given the backend's values.
void check_trace(const attn::Lesson& lesson, const attn::Trace& got, const attn::Trace& want) {
  CHECK(got.backend == tested->name());
  CHECK(got.warnings == want.warnings);
  REQUIRE(got.steps.size() == want.steps.size());
  attn::Overrides backend_values;
  for (std::size_t s = 0; s < want.steps.size(); ++s) {
    const attn::Step& step = got.steps[s];
    REQUIRE(step.id == want.steps[s].id);
    if (!computed_by_backend(step.made.op)) continue;
    BackendOp o{step.made.op, {}};
    for (const std::string& id : step.made.inputs) o.in.push_back(&got.at(id).value);
    if (step.made.op == attn::Op::softmax) o.in.resize(1);  // the weights from `masked` alone
    o.divisor = step.made.divisor;
    o.fill = step.made.fill;
    o.mask = &got.mask;
    o.policy = lesson.masked_row;
    check_operation(got.lesson_id + " " + step.id, step.value, o);
    backend_values[step.id] = {step.value, arma::umat(arma::size(step.value), arma::fill::ones)};
  }
  attn::CpuBackend cpu;
  const attn::Trace host = attn::run_pipeline(lesson, cpu, backend_values);
  for (std::size_t s = 0; s < got.steps.size(); ++s)
    if (!computed_by_backend(got.steps[s].made.op))
      check_within(
          got.lesson_id + " " + got.steps[s].id + " (composed on the host)", got.steps[s].value,
          host.steps.at(s).value,
          attn::testing::exact_bound(got.steps[s].value.n_rows, got.steps[s].value.n_cols));
}

// Both backends' trace of one lesson, in f64 (a narrower format is emulated on
// the CPU only, and the pipeline refuses it on any other backend).
void check_lesson(attn::Lesson lesson) {
  CAPTURE(lesson.id);
  lesson.dtype = attn::Dtype::f64;
  attn::CpuBackend cpu;
  check_trace(lesson, attn::run_pipeline(lesson, *tested), attn::run_pipeline(lesson, cpu));
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

// The backend's steps of every head, each against the CPU's arithmetic on the
// backend's values of its inputs.
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
  const std::vector<attn::HeadAttention> got = tested->attend(in);
  REQUIRE(got.size() == c.heads);
  for (std::size_t h = 0; h < got.size(); ++h) {
    const attn::HeadAttention& a = got[h];
    const auto name = [&](HeadStep s) { return attn::head_step_id(h, s); };
    const auto exact = [](const arma::mat& M) {
      return attn::testing::exact_bound(M.n_rows, M.n_cols);
    };
    check_within(name(HeadStep::Q), a[HeadStep::Q], attn::split_head(Q, h, c.d_k),
                 exact(a[HeadStep::Q]));
    check_within(name(HeadStep::K), a[HeadStep::K], attn::split_head(K, h, c.d_k),
                 exact(a[HeadStep::K]));
    check_within(name(HeadStep::V), a[HeadStep::V], attn::split_head(V, h, c.d_v),
                 exact(a[HeadStep::V]));
    const auto step = [&](HeadStep s, attn::Op op, std::vector<HeadStep> inputs) {
      BackendOp o{op, {}};
      for (const HeadStep i : inputs) o.in.push_back(&a[i]);
      o.divisor = c.divisor;
      o.fill = c.fill;
      o.mask = &mask;
      o.policy = c.policy;
      check_operation(name(s), a[s], o);
    };
    step(HeadStep::scores, attn::Op::matmul_t, {HeadStep::Q, HeadStep::K});
    step(HeadStep::scaled, attn::Op::divide, {HeadStep::scores});
    step(HeadStep::masked, attn::Op::mask, {HeadStep::scaled});
    step(HeadStep::exp, attn::Op::exp, {HeadStep::masked});
    step(HeadStep::row_sum, attn::Op::row_sum, {HeadStep::exp});
    step(HeadStep::weights, attn::Op::softmax, {HeadStep::masked});
    step(HeadStep::context, attn::Op::matmul, {HeadStep::weights, HeadStep::V});
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
  const arma::mat A = {{1.0, -2.0}, {0.5, 3.0}}, B = {{2.0, 1.0}, {1.0, 0.25}};
  const arma::mat want = A * B;
  const Bound bound = attn::testing::product_bound(A, B);
  arma::mat got = want;
  CHECK(beyond_bound(got, want, bound).cells == 0);
  // 2·γ_2·Σ|terms| = 2·γ_2·4 for cell (1,0): within, and 1.5 times beyond.
  got(1, 0) = want(1, 0) + 0.5 * bound.absolute(1, 0);
  CHECK(beyond_bound(got, want, bound).cells == 0);
  got(1, 0) = want(1, 0) + 1.5 * bound.absolute(1, 0);
  const attn::testing::Excess beyond = beyond_bound(got, want, bound, "the CPU's");
  CHECK(beyond.cells == 1);
  CHECK(beyond.first.rfind("cell (1,0) is 4.0000000000000", 0) == 0);
  CHECK(beyond.first.find(", the CPU's 4: |difference| ") != std::string::npos);
  CHECK(bound.absolute(1, 0) < 1e-14);  // a few units of roundoff, not a tolerance
  const arma::mat special = {{kInf, -kInf, std::nan("")}};
  const Bound loose{arma::mat(1, 3, arma::fill::value(1e300)), arma::mat(1, 3, arma::fill::zeros)};
  CHECK(beyond_bound(special, special, loose).cells == 0);  // NaN meets NaN, inf the same inf
  CHECK(beyond_bound(arma::mat{{-kInf, -1e9, 0.0}}, special, loose).cells == 3);
  CHECK(beyond_bound(arma::mat(2, 3), special, loose).first == "shape 2x3, the reference's 1x3");
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
    check_within("matmul " + std::to_string(n) + "x" + std::to_string(k) + "x" + std::to_string(p),
                 tested->matmul(A, B), cpu.matmul(A, B), attn::testing::product_bound(A, B));
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
    // Two implementations of the forward pass: within twice the error either
    // can make in any summation order.
    const auto forward_bound = [&](const arma::mat& input) {
      const arma::mat error = attn::testing::forward_error(input, W_QKV, W_O, shape.heads).error;
      return Bound{2.0 * error, arma::zeros(arma::size(error))};
    };
    const arma::mat output = run_plan(*plan, X);
    check_within("plan output against the formula", output,
                 forward_formula(X, W_QKV, W_O, shape.heads), forward_bound(X));
    // A second run of the same plan on new input.
    const arma::mat X2 = random_matrix(rng, shape.n, d, 1.0);
    check_within("plan output, run again", run_plan(*plan, X2),
                 forward_formula(X2, W_QKV, W_O, shape.heads), forward_bound(X2));
    try {
      std::unique_ptr<attn::ForwardPlan> cpu_plan = cpu.plan_forward(shape, W_QKV, W_O);
      check_within("plan output against the CPU's plan", output, run_plan(*cpu_plan, X),
                   forward_bound(X));
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
  std::printf(
      "backend harness: %zu cells compared with the CPU's; largest difference %.3g of "
      "its bound\n",
      compared_cells, worst_fraction);
  return status;
}
