// Tests of the backward pass (core/backward.cpp, core/ops/backward.cpp): every
// gradient step's cell arithmetic gives its whole-matrix value, its bounds hold
// it, and central finite differences of the loss agree with it, on seeded
// random lessons and on every embedded lesson given an upstream gradient.
// PyTorch autograd and a numpy derivation check the values themselves
// (tests/torch_backward.py).
#include <doctest/doctest.h>

#include <cmath>
#include <random>
#include <set>

#include "core/bounds.hpp"
#include "core/error.hpp"
#include "core/lesson_library.hpp"
#include "core/ops/op.hpp"
#include "core/pipeline.hpp"
#include "support/host_backend.hpp"
#include "support/random_lesson.hpp"

namespace attn {

namespace {

// The step the loss is taken of: layer.output, output or concat.
const Step& result_of(const Trace& trace) {
  for (const char* id : {"layer.output", "output"})
    if (const Step* s = trace.find(id)) return *s;
  return trace.at("concat");
}

// `lesson` with [backward] upstream = a seeded random matrix of the result's
// shape; with loss = "half_sq" and a random target instead when `half_sq`.
Lesson with_upstream(Lesson lesson, std::uint64_t seed, bool half_sq = false) {
  testing::HostBackend backend;
  const Trace forward = run_pipeline(lesson, backend);
  const Step& result = result_of(forward);
  std::mt19937_64 rng(seed);
  BackwardPass pass;
  arma::mat random = testing::random_matrix(rng, result.value.n_rows, result.value.n_cols);
  (half_sq ? pass.target : pass.upstream) = std::move(random);
  lesson.backward = pass;
  return lesson;
}

// A lesson small enough to check cell by cell (the 64-wide ones repeat the
// small ones' arithmetic at 50 times the cost, far more under the sanitizers;
// the oracles check their values), in f64 softmax attention.
bool usable(const Lesson& lesson) {
  return lesson.queries() * lesson.keys() <= 256 && lesson.X.n_cols <= 16 &&
         lesson.W_Q.n_cols <= 16 && lesson.dtype == Dtype::f64 &&
         lesson.attention == AttentionKind::softmax;
}

// Checks every gradient step's cells against its value; returns the cells compared.
std::size_t check_cells(const Lesson& lesson, const Trace& trace, std::set<VjpKind>& kinds) {
  std::size_t cells = 0;
  for (const Step& step : trace.steps) {
    if (step.made.op != Op::backward) continue;
    for (const Vjp& v : step.made.vjps) kinds.insert(v.kind);
    const ReadInput read = [&](std::size_t i, std::size_t r, std::size_t c) {
      return trace.input(step, i).value(r, c);
    };
    double scale = 1.0 + arma::abs(step.value).max();
    for (std::size_t i = 0; i < step.made.inputs.size(); ++i)
      scale += arma::abs(trace.input(step, i).value).max() * trace.input(step, i).value.n_elem;
    for (std::size_t r = 0; r < step.value.n_rows; ++r)
      for (std::size_t c = 0; c < step.value.n_cols; ++c) {
        const double want = step.value(r, c);
        const double got = op_facets(Op::backward).cell({trace, step, read}, r, c);
        ++cells;
        if (std::isnan(want) && std::isnan(got)) continue;  // a NaN row (masked_row = "nan")
        if (!(std::abs(got - want) <= 1e-13 * scale))
          FAIL_CHECK(lesson.id << " " << step.id << "[" << r << "," << c << "] = " << got
                               << ", the trace has " << want);
      }
  }
  return cells;
}

}  // namespace

TEST_CASE("backward: each gradient cell's arithmetic gives the step's value, on 150 random "
          "lessons and every small embedded lesson") {
  testing::HostBackend backend;
  std::set<VjpKind> kinds;
  std::size_t cells = 0, lessons = 0;
  std::vector<Lesson> all = all_embedded_lessons();
  for (std::uint64_t seed = 1; seed <= 150; ++seed) all.push_back(testing::random_lesson(seed));
  for (std::size_t k = 0; k < all.size(); ++k) {
    if (!usable(all[k])) continue;
    const Lesson lesson = all[k].backward ? all[k] : with_upstream(all[k], 1000 + k, k % 2);
    const Trace trace = run_pipeline(lesson, backend);
    CAPTURE(lesson.id);
    CHECK(trace.find(StepId::gradient(StepId::given(Given::X)).str()));
    cells += check_cells(lesson, trace, kinds);
    ++lessons;
  }
  CHECK(lessons > 180);
  CHECK(cells > 20000);
  // The lessons go back through every kind of step.
  CHECK(kinds.size() == static_cast<std::size_t>(VjpKind::jacobian) + 1);
}

TEST_CASE("backward: the bounds of exact inputs hold every gradient cell") {
  testing::HostBackend backend;
  for (std::uint64_t seed = 1; seed <= 60; ++seed) {
    const Lesson lesson = with_upstream(testing::random_lesson(seed), seed);
    const Trace trace = run_pipeline(lesson, backend);
    const BoundsMap bounds = trace_bounds(trace, {}, {});
    for (const Step& step : trace.steps) {
      if (step.made.op != Op::backward) continue;
      const Bounds& b = bounds.at(step.id);
      for (arma::uword i = 0; i < step.value.n_elem; ++i) {
        const double v = step.value(i), slack = 1e-12 * (1.0 + std::abs(v));
        if (std::isnan(v)) continue;
        if (!(b.lo(i) <= v + slack && v - slack <= b.hi(i)))
          FAIL_CHECK(lesson.id << " " << step.id << " cell " << i << " = " << v << " outside ["
                               << b.lo(i) << ", " << b.hi(i) << "]");
      }
    }
  }
}

namespace {

// L = Σ upstream ⊙ result of the lesson's forward pass.
double loss(const Lesson& lesson) {
  testing::HostBackend backend;
  Lesson forward = lesson;
  forward.backward.reset();
  const Trace trace = run_pipeline(forward, backend);
  return arma::accu(result_of(trace).value % *lesson.backward->upstream);
}

// (L(x + h) − L(x − h)) / 2h for one cell of X (`X`) or of W_Q.
double central_difference(Lesson lesson, bool of_X, std::size_t r, std::size_t c) {
  const double h = 1e-6;
  arma::mat& M = of_X ? lesson.X : lesson.W_Q;
  const double x = M(r, c);
  M(r, c) = x + h;
  const double up = loss(lesson);
  M(r, c) = x - h;
  const double down = loss(lesson);
  return (up - down) / (2 * h);
}

}  // namespace

TEST_CASE("backward: central finite differences of the loss agree with grad.X and grad.W_Q") {
  testing::HostBackend backend;
  std::size_t compared = 0;
  for (std::uint64_t seed = 1; seed <= 80; ++seed) {
    const Lesson lesson = with_upstream(testing::random_lesson(seed), 7 * seed);
    const Trace trace = run_pipeline(lesson, backend);
    if (!result_of(trace).value.is_finite()) continue;  // a NaN row (masked_row = "nan")
    CAPTURE(lesson.id);
    for (const bool of_X : {true, false}) {
      const arma::mat& grad = trace.at(of_X ? "grad.X" : "grad.W_Q").value;
      const std::size_t r = seed % grad.n_rows, c = (seed / 3) % grad.n_cols;
      const double numeric = central_difference(lesson, of_X, r, c);
      // h = 1e-6: truncation ~h²·|L'''| and rounding ~1e-16·|L|/h, both far below 1e-6.
      CHECK(std::abs(numeric - grad(r, c)) <= 1e-6 * (1.0 + std::abs(grad(r, c))));
      ++compared;
    }
  }
  CHECK(compared > 100);
}

TEST_CASE("backward: a fully masked row gets no gradient into its scores (zero, uniform), "
          "and masked cells get exactly 0") {
  testing::HostBackend backend;
  Lesson lesson = testing::random_lesson(3);
  lesson.memory.reset();
  lesson.memory_tokens.clear();
  lesson.key_padding.clear();
  lesson.positional_encoding = PositionalEncoding::none;
  const std::size_t n = lesson.queries();
  std::mt19937_64 rng(5);
  lesson.W_K = testing::random_matrix(rng, lesson.X.n_cols, lesson.W_Q.n_cols);
  lesson.W_V = testing::random_matrix(rng, lesson.X.n_cols, lesson.heads * lesson.d_v);
  lesson.keep = arma::umat(n, n, arma::fill::ones);
  lesson.keep->row(0).zeros();  // row 0 sees no key
  lesson.keep->at(n - 1, 0) = 0;
  lesson.mask_fill = -arma::datum::inf;
  for (const MaskedRowPolicy policy : {MaskedRowPolicy::zero, MaskedRowPolicy::uniform}) {
    lesson.masked_row = policy;
    const Trace trace = run_pipeline(with_upstream(lesson, 11), backend);
    for (std::size_t h = 0; h < lesson.heads; ++h) {
      const std::string head = "head" + std::to_string(h);
      for (const char* step : {".masked", ".scaled", ".scores"}) {
        const arma::mat& g = trace.at("grad." + head + step).value;
        CHECK(arma::all(g.row(0) == 0.0));
        if (n > 1) CHECK(g(n - 1, 0) == 0.0);
      }
    }
  }
}

TEST_CASE("backward: a lesson's [backward] is read and checked") {
  const std::string base = R"([lesson]
id = "b"
title = "b"
[input]
X = [[1.0, 0.0], [0.0, 1.0]]
[weights]
W_Q = "identity"
W_K = "identity"
W_V = "identity"
)";
  const Lesson ok = parse_lesson(base + "[backward]\nloss = \"half_sq\"\ntarget = [[0.0, 1.0], "
                                        "[1.0, 0.0]]\njacobian_row = 1\n",
                                 "b.toml");
  REQUIRE(ok.backward);
  CHECK(ok.backward->target->at(0, 1) == 1.0);
  CHECK(ok.backward->jacobian_row == 1);
  testing::HostBackend backend;
  const Trace trace = run_pipeline(ok, backend);
  // L = ½‖concat − target‖²: grad.concat = concat − target.
  CHECK(arma::approx_equal(trace.at("grad.concat").value,
                           trace.at("concat").value - *ok.backward->target, "absdiff", 0.0));
  const auto fails = [&](const std::string& table, const std::string& words) {
    CAPTURE(table);
    try {
      parse_lesson(base + table, "b.toml");
      FAIL("no error");
    } catch (const InputError& e) {
      CHECK(std::string(e.what()).find(words) != std::string::npos);
      CHECK(std::string(e.what()).find("b.toml") != std::string::npos);
    }
  };
  fails("[backward]\n", "give either upstream");
  fails("[backward]\nupstream = [[1.0]]\n", "concat is 2×2");
  fails("[backward]\nloss = \"half_sq\"\n", "give the target");
  fails("[backward]\nloss = \"l1\"\ntarget = [[1.0, 1.0], [1.0, 1.0]]\n", "half_sq");
  fails("[backward]\nupstream = [[1.0, 1.0], [1.0, 1.0]]\njacobian_row = 2\n", "from 0 to 1");
  fails("[backward]\nupstream = [[1.0, 1.0], [1.0, 1.0]]\nrow = 2\n", "row");
}

}  // namespace attn
