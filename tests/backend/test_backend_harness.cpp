// One harness for every backend (in the manner of ggml's test-backend-ops): the
// same cases run on the backend named on the command line, the CPU backend
// included. Every step the backend computes (products, and attention's scores,
// scaled, masked, exp, row sums, weights and contexts) is recomputed by the
// independent plain-loop reference (support/plain_reference.hpp, not the
// CPU's arithmetic) from the backend's own values of the steps it reads, so
// that each operation is compared alone, and each cell must lie within what
// floating point allows two correct results of that operation in any
// summation order (support/fp_bounds.hpp: cuBLAS, the host-kernels' loops,
// every OpenBLAS kernel and the reference's loops add in different orders); a
// NaN must meet a NaN, an infinity the same infinity. A test case feeds the
// comparison perturbed results to show it fails. The steps the pipeline
// composes on the host for every backend (slices, LayerNorm, ...) must equal,
// bit for bit, the CPU's pipeline run from the backend's values. The cases:
// every lesson of lessons/, 200 seeded random lessons, edge cases of attention
// (fully masked rows under each policy and fill, n = 1, d_k = 1, m != n,
// causal, key padding, sizes past one block of threads), odd products, and the
// forward plan when the backend has one (its output against the plain loops'
// within twice the error a forward pass can make).
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
#include "support/plain_reference.hpp"
#include "support/random_lesson.hpp"

namespace {

using attn::HeadStep;

using attn::testing::beyond_bound;
using attn::testing::Bound;
using attn::testing::Excess;
namespace plain = attn::testing::plain;

constexpr double kInf = std::numeric_limits<double>::infinity();

// The backend under test, made in main.
attn::Backend* tested = nullptr;

// Cells compared so far, to show that the cases really ran, and the largest
// difference as a fraction of its bound.
std::size_t compared_cells = 0;
double worst_fraction = 0.0;

// `got` against `want` within `bound`, counted; `reference` names want's side.
void check_within(const std::string& what, const arma::mat& got, const arma::mat& want,
                  const Bound& bound, const std::string& reference = "the reference's") {
  const Excess excess = beyond_bound(got, want, bound, reference);
  CHECK_MESSAGE(excess.cells == 0, what << ": " << excess.first);
  worst_fraction = std::max(worst_fraction, excess.worst);
  compared_cells += want.n_elem;
}

// One operation a backend computes, and what it reads: the plain-loop
// reference recomputes it from exactly these inputs.
struct BackendOp {
  attn::Op op;
  std::vector<const arma::mat*> in;  // the operation's inputs, in Step::made order
  double divisor = 1.0;              // divide
  double fill = 0.0;                 // mask
  const arma::umat* mask = nullptr;  // mask
  attn::MaskedRowPolicy policy = attn::MaskedRowPolicy::nan;  // softmax
};

// The plain-loop reference's result of `o` and the bound of two correct
// results of it; nullopt for an operation no backend computes (the pipeline
// composes those on the host, the same code for every backend).
std::optional<std::pair<arma::mat, Bound>> reference_operation(const BackendOp& o) {
  using namespace attn::testing;
  static const arma::mat no_input;
  const arma::mat& a = o.in.empty() ? no_input : *o.in[0];
  switch (o.op) {
    case attn::Op::matmul: {
      const arma::mat& B = *o.in.at(1);
      std::optional<arma::rowvec> bias;
      if (o.in.size() > 2) bias = arma::rowvec(*o.in[2]);
      const arma::rowvec* b = bias ? &*bias : nullptr;
      return std::pair{plain::matmul(a, B, b), product_bound(a, B, b)};
    }
    case attn::Op::matmul_t:
      return std::pair{plain::matmul_transposed(a, *o.in.at(1)), product_bound(a, o.in[1]->t())};
    case attn::Op::divide:  // a division, or a product by a rounded 1/divisor
      return std::pair{plain::divide(a, o.divisor), elementwise_bound(a.n_rows, a.n_cols, 2)};
    case attn::Op::mask:
      return std::pair{plain::mask(a, *o.mask, o.fill), exact_bound(a.n_rows, a.n_cols)};
    case attn::Op::exp:
      return std::pair{plain::exp_cells(a), library_bound(a.n_rows, a.n_cols)};
    case attn::Op::row_sum:
      return std::pair{plain::row_sum(a), row_sum_bound(a)};
    case attn::Op::softmax:  // rows without a key: NaN, 0 or 1/m exactly
      return std::pair{plain::row_softmax(a, o.policy), softmax_bound(a)};
    case attn::Op::given:
    case attn::Op::positional:
    case attn::Op::add_positions:
    case attn::Op::slice:
    case attn::Op::rows:
    case attn::Op::mean:
    case attn::Op::max:
    case attn::Op::concat:
    case attn::Op::add:
    case attn::Op::row_mean:
    case attn::Op::row_var:
    case attn::Op::normalise:
    case attn::Op::scale_shift:
    case attn::Op::relu:
    case attn::Op::gelu:
    case attn::Op::identity:
    case attn::Op::max_abs_diff:
    case attn::Op::rotate:
    case attn::Op::alibi:
    case attn::Op::row_max_abs_diff:
    case attn::Op::backward:
    case attn::Op::efficient:  // tiles and linear attention: on the host
      return std::nullopt;
  }
  return std::nullopt;
}

// `got`, a backend's result of `o`, against the plain-loop reference on the same inputs.
Excess compare_operation(const arma::mat& got, const BackendOp& o) {
  const std::optional<std::pair<arma::mat, Bound>> want = reference_operation(o);
  if (!want) return {1, "not an operation of a backend", 0.0};
  return beyond_bound(got, want->first, want->second);
}

void check_operation(const std::string& what, const arma::mat& got, const BackendOp& o) {
  const Excess excess = compare_operation(got, o);
  CHECK_MESSAGE(excess.cells == 0, what << ": " << excess.first);
  worst_fraction = std::max(worst_fraction, excess.worst);
  compared_cells += got.n_elem;
}

// Every step of the backend's trace: the same ids in the same order and the
// same warnings as the CPU's; each step the backend computed, against the
// plain-loop reference on the backend's inputs; each step composed on the
// host, bit for bit, against the CPU's pipeline given the backend's values.
void check_trace(const attn::Lesson& lesson, const attn::Trace& got, const attn::Trace& want) {
  CHECK(got.backend == tested->name());
  CHECK(got.warnings == want.warnings);
  // What the backend did not compute is named (RoPE's rotations, ALiBi's bias
  // and the steps after it); on the CPU nothing is.
  CHECK(want.host_steps.empty());
  if (tested->name() != "cpu") {
    for (const std::string& id : got.host_steps) CHECK_MESSAGE(got.find(id), id);
    if (lesson.positional_encoding == attn::PositionalEncoding::alibi)
      CHECK(std::find(got.host_steps.begin(), got.host_steps.end(), "head0.weights") !=
            got.host_steps.end());
    if (lesson.positional_encoding == attn::PositionalEncoding::rope)
      CHECK(std::find(got.host_steps.begin(), got.host_steps.end(), "head0.q_rot") !=
            got.host_steps.end());
    if (lesson.tile || lesson.attention == attn::AttentionKind::linear)
      CHECK(std::find(got.host_steps.begin(), got.host_steps.end(),
                      lesson.tile ? "head0.tiled_context" : "head0.kv") != got.host_steps.end());
    else if (lesson.positional_encoding == attn::PositionalEncoding::none)
      CHECK(got.host_steps.empty());
  }
  REQUIRE(got.steps.size() == want.steps.size());
  attn::Overrides backend_values;
  for (std::size_t s = 0; s < want.steps.size(); ++s) {
    const attn::Step& step = got.steps[s];
    REQUIRE(step.id == want.steps[s].id);
    BackendOp o{step.made.op, {}};
    for (const std::string& id : step.made.inputs) o.in.push_back(&got.at(id).value);
    if (step.made.op == attn::Op::softmax) o.in.resize(1);  // the weights from `masked` alone
    o.divisor = step.made.divisor;
    o.fill = step.made.fill;
    o.mask = &got.mask;
    o.policy = lesson.masked_row;
    const std::optional<std::pair<arma::mat, Bound>> reference = reference_operation(o);
    if (!reference) continue;  // composed on the host
    check_within(got.lesson_id + " " + step.id, step.value, reference->first, reference->second);
    backend_values[step.id] = {step.value, arma::umat(arma::size(step.value), arma::fill::ones)};
  }
  attn::CpuBackend cpu;
  const attn::Trace host = attn::run_pipeline(lesson, cpu, backend_values);
  for (std::size_t s = 0; s < got.steps.size(); ++s)
    if (!backend_values.contains(got.steps[s].id))
      check_within(got.lesson_id + " " + got.steps[s].id + " (composed on the host)",
                   got.steps[s].value, host.steps.at(s).value,
                   attn::testing::exact_bound(got.steps[s].value.n_rows, got.steps[s].value.n_cols),
                   "the CPU's");
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

// The backend's steps of every head, each against the plain-loop reference on
// the backend's values of its inputs.
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
    check_within(name(HeadStep::Q), a[HeadStep::Q], plain::columns(Q, h * c.d_k, c.d_k),
                 exact(a[HeadStep::Q]));
    check_within(name(HeadStep::K), a[HeadStep::K], plain::columns(K, h * c.d_k, c.d_k),
                 exact(a[HeadStep::K]));
    check_within(name(HeadStep::V), a[HeadStep::V], plain::columns(V, h * c.d_v, c.d_v),
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

// The tested backend's own results of every operation, each moved: a finite
// cell by 1.5 times its bound, a NaN to 0, a -inf to the largest negative
// number, an exp's +inf to the largest number. The comparison the harness runs
// must report exactly the moved cell, and nothing before it was moved.
TEST_CASE("backend harness: a perturbed result of every operation is caught") {
  AttendCase c;
  c.n = 3;
  c.m = 4;
  c.fill = -kInf;
  c.mask = arma::umat(3, 4, arma::fill::zeros);
  c.mask.row(1).fill(attn::mask_padding);  // a row without a key: NaN weights
  c.mask(0, 3) = attn::mask_causal;        // a -inf among finite scores
  c.score_scale = 300.0;                   // exp overflows to +inf in some cells
  c.divisor = 1.0;
  std::mt19937_64 rng(c.seed);
  const arma::mat Q = random_matrix(rng, c.n, c.d_k, c.score_scale);
  const arma::mat K = random_matrix(rng, c.m, c.d_k, c.score_scale);
  const arma::mat V = random_matrix(rng, c.m, c.d_v, 1.0);
  attn::AttentionInput in{Q, K, V, c.mask};
  in.d_k = c.d_k;
  in.d_v = c.d_v;
  in.divisor = c.divisor;
  in.fill = c.fill;
  in.policy = c.policy;
  const attn::HeadAttention a = tested->attend(in).at(0);
  const auto op = [&](attn::Op kind, std::vector<HeadStep> inputs) {
    BackendOp o{kind, {}};
    for (const HeadStep i : inputs) o.in.push_back(&a[i]);
    o.divisor = c.divisor;
    o.fill = c.fill;
    o.mask = &c.mask;
    o.policy = c.policy;
    return o;
  };
  const std::vector<std::pair<HeadStep, BackendOp>> ops = {
      {HeadStep::scores, op(attn::Op::matmul_t, {HeadStep::Q, HeadStep::K})},
      {HeadStep::scaled, op(attn::Op::divide, {HeadStep::scores})},
      {HeadStep::masked, op(attn::Op::mask, {HeadStep::scaled})},
      {HeadStep::exp, op(attn::Op::exp, {HeadStep::masked})},
      {HeadStep::row_sum, op(attn::Op::row_sum, {HeadStep::exp})},
      {HeadStep::weights, op(attn::Op::softmax, {HeadStep::masked})},
      {HeadStep::context, op(attn::Op::matmul, {HeadStep::weights, HeadStep::V})}};
  std::size_t moved_nan = 0, moved_inf = 0, moved_finite = 0;
  for (const auto& [step, o] : ops) {
    CAPTURE(attn::head_step_id(0, step));
    const arma::mat& got = a[step];
    REQUIRE(compare_operation(got, o).cells == 0);
    const std::optional<std::pair<arma::mat, Bound>> want = reference_operation(o);
    REQUIRE(want);
    for (std::size_t k = 0; k < got.n_elem; ++k) {
      const double v = got(k);
      const std::size_t r = k % got.n_rows, col = k / got.n_rows;
      arma::mat moved = got;
      if (std::isnan(v)) {
        moved(k) = 0.0;
        ++moved_nan;
      } else if (std::isinf(v)) {
        moved(k) = std::copysign(std::numeric_limits<double>::max(), v);
        ++moved_inf;
      } else {
        const double limit = want->second.limit(r, col, v, want->first(r, col));
        moved(k) = want->first(r, col) + 1.5 * limit + 1e-300 + 4 * std::abs(v) * 0x1p-53;
        ++moved_finite;
      }
      const Excess caught = compare_operation(moved, o);
      CAPTURE(k);
      CHECK(caught.cells == 1);
      CHECK(caught.first.rfind("cell (" + std::to_string(r) + "," + std::to_string(col) + ")", 0) ==
            0);
    }
  }
  // Every kind of cell was moved: NaN (the keyless row), ±inf (the mask, exp's
  // overflow) and finite ones.
  CHECK(moved_nan > 0);
  CHECK(moved_inf > 0);
  CHECK(moved_finite > 20);
}

TEST_CASE("backend harness: every lesson of lessons/, step by step, equals the plain loops'") {
  const std::size_t before = compared_cells;
  const std::vector<attn::Lesson> lessons = attn::all_embedded_lessons();
  CHECK(lessons.size() >= 30);
  for (const attn::Lesson& lesson : lessons) check_lesson(lesson);
  CHECK(compared_cells - before > 10000);
}

// Mask patterns are an input of the backend's attention (AttentionInput::mask):
// the window and stride lessons reach it with their window / stride cells set,
// and it computes them as it computes any mask (the CUDA backend through the
// host-kernels plugin included).
TEST_CASE("backend harness: the window and stride lessons' masks reach the backend") {
  for (const char* id : {"sliding-window-global", "strided-sparse"}) {
    const attn::Lesson lesson = attn::find_lesson(id);
    const attn::Trace trace = attn::run_pipeline(lesson, *tested);
    CAPTURE(id);
    std::size_t pattern_cells = 0;
    for (const arma::uword reasons : trace.mask)
      pattern_cells += (reasons & (attn::mask_window | attn::mask_stride)) != 0u;
    CHECK(pattern_cells >= 20u);
    CHECK(trace.at("head0.weights").value(3, 6) == 0.0);  // masked: exactly 0
    check_lesson(lesson);
  }
}

TEST_CASE("backend harness: a narrower format runs on the CPU only") {
  attn::Lesson lesson = attn::find_lesson("river-bank");
  lesson.dtype = attn::Dtype::f16;
  if (tested->name() == "cpu")
    CHECK_NOTHROW(attn::run_pipeline(lesson, *tested));
  else
    CHECK_THROWS_AS(attn::run_pipeline(lesson, *tested), attn::BackendUnavailable);
}

TEST_CASE("backend harness: 200 seeded random lessons, step by step, equal the plain loops'") {
  const std::size_t before = compared_cells;
  for (std::uint64_t seed = 1; seed <= 200; ++seed)
    check_lesson(attn::testing::random_lesson(seed));
  CHECK(compared_cells - before > 20000);
}

TEST_CASE("backend harness: attention's edge cases equal the plain loops' steps") {
  for (const auto& [name, c] : edge_cases()) {
    CAPTURE(name);
    check_attend(c);
  }
}

TEST_CASE("backend harness: products of odd shapes equal the plain loops'") {
  std::mt19937_64 rng(42);
  for (const auto& [n, k, p] : std::vector<std::array<std::size_t, 3>>{
           {1, 1, 1}, {5, 1, 7}, {1, 9, 1}, {3, 8, 2}, {64, 33, 17}, {130, 70, 3}}) {
    const arma::mat A = random_matrix(rng, n, k, 1.0), B = random_matrix(rng, k, p, 1.0);
    check_within("matmul " + std::to_string(n) + "x" + std::to_string(k) + "x" + std::to_string(p),
                 tested->matmul(A, B), plain::matmul(A, B), attn::testing::product_bound(A, B));
  }
}

TEST_CASE("backend harness: the forward plan equals the plain loops' and the CPU's plan") {
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
    check_within("plan output against the plain loops", output,
                 plain::forward(X, W_QKV, W_O, shape.heads), forward_bound(X));
    // A second run of the same plan on new input.
    const arma::mat X2 = random_matrix(rng, shape.n, d, 1.0);
    check_within("plan output, run again", run_plan(*plan, X2),
                 plain::forward(X2, W_QKV, W_O, shape.heads), forward_bound(X2));
    if (tested->name() == "cpu") continue;  // not the CPU's plan with itself
    try {
      std::unique_ptr<attn::ForwardPlan> cpu_plan = cpu.plan_forward(shape, W_QKV, W_O);
      check_within("plan output against the CPU's plan", output, run_plan(*cpu_plan, X),
                   forward_bound(X), "the CPU's");
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
    std::fprintf(stderr, "usage: backend_harness --backend cpu|cuda [doctest options]\n");
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
  std::printf("backend harness: %s against the plain-loop reference\n", name.c_str());
  doctest::Context context;
  context.applyCommandLine(static_cast<int>(rest.size()), rest.data());
  const int status = context.run();
  std::printf(
      "backend harness: %zu cells compared with the reference; largest difference %.3g of "
      "its bound\n",
      compared_cells, worst_fraction);
  return status;
}
