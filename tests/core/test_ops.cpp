// Tests of the op table (core/ops): every Op has its facets, and each op's
// cell arithmetic, written once there, gives every cell of every step of every
// lesson as the pipeline computed it.
#include <doctest/doctest.h>

#include <cmath>
#include <set>
#include <vector>

#include "core/lesson_library.hpp"
#include "core/ops/op.hpp"
#include "core/pipeline.hpp"
#include "support/host_backend.hpp"

namespace attn {

namespace {

// How large the numbers that make step[row, col] are: Σ|terms| of a product,
// else the largest magnitude among the step's cell and its inputs' cells.
double magnitude(const Step& step, const std::vector<const arma::mat*>& in, std::size_t row,
                 std::size_t col) {
  const Op op = step.made.op;
  if (op == Op::matmul || op == Op::matmul_t) {
    const arma::mat& A = *in[0];
    const arma::mat& B = *in[1];
    double total = in.size() > 2 ? std::abs((*in[2])(0, col)) : 0.0;
    for (std::size_t k = 0; k < A.n_cols; ++k)
      total += std::abs(A(row, k) * (op == Op::matmul ? B(k, col) : B(col, k)));
    return total;
  }
  double largest = std::abs(step.value(row, col));
  for (const arma::mat* M : in) {
    const double m = arma::abs(*M).max();
    if (std::isfinite(m)) largest = std::max(largest, m);
  }
  return largest;
}

}  // namespace

TEST_CASE("ops: every Op has its facets, under its own name") {
  std::set<std::string_view> names;
  for (std::size_t i = 0; i < kOpCount; ++i) {
    const Op op = static_cast<Op>(i);
    const OpFacets& f = op_facets(op);
    CAPTURE(f.name);
    CHECK(f.op == op);
    CHECK(!f.name.empty());
    CHECK(!f.inputs.empty());
    CHECK(static_cast<bool>(f.cell));
    CHECK(static_cast<bool>(f.expand));
    CHECK(static_cast<bool>(f.bounds));
    CHECK(static_cast<bool>(f.flops));
    names.insert(f.name);
  }
  CHECK(names.size() == kOpCount);
  CHECK(op_facets(Op::matmul_t).name == "matmul_t");
  CHECK(op_facets(Op::max_abs_diff).name == "max_abs_diff");
}

TEST_CASE("ops: each op's cell arithmetic gives every cell of every lesson in f64") {
  testing::HostBackend backend;
  std::set<Op> seen;
  std::size_t cells = 0;
  for (const Lesson& lesson : all_embedded_lessons()) {
    if (lesson.queries() * lesson.keys() > 4096) continue;  // the big ones repeat the small ones
    const Trace trace = run_pipeline(lesson, backend);
    if (trace.dtype != Dtype::f64) continue;  // emulated formats round every step
    for (const Step& step : trace.steps) {
      std::vector<const arma::mat*> inputs;
      for (std::size_t i = 0; i < step.made.inputs.size(); ++i)
        inputs.push_back(&trace.input(step, i).value);
      const ReadInput read = [&](std::size_t i, std::size_t r, std::size_t c) {
        return (*inputs.at(i))(r, c);
      };
      const OpFacets& facets = op_facets(step.made.op);
      seen.insert(step.made.op);
      for (std::size_t r = 0; r < step.value.n_rows; ++r)
        for (std::size_t c = 0; c < step.value.n_cols; ++c) {
          const double want = step.value(r, c);
          const double got = facets.cell({trace, step, read}, r, c);
          ++cells;
          if (std::isnan(want) || std::isinf(want)) {
            if (std::isnan(want) ? !std::isnan(got) : got != want)
              FAIL_CHECK(lesson.id << " " << step.id << "[" << r << "," << c << "] = " << got
                                   << ", the trace has " << want);
            continue;
          }
          const double tolerance = 1e-12 * (1.0 + magnitude(step, inputs, r, c));
          if (!(std::abs(got - want) <= tolerance))
            FAIL_CHECK(lesson.id << " " << step.id << "[" << r << "," << c << "] = " << got
                                 << ", the trace has " << want);
        }
    }
  }
  CHECK(cells > 10000);
  CHECK(seen.size() == kOpCount);  // the lessons use every op
}

TEST_CASE("ops: a cell is computed from the numbers read for its inputs, not the trace's") {
  testing::HostBackend backend;
  const Lesson lesson = find_lesson("river-bank");
  const Trace trace = run_pipeline(lesson, backend);
  const ReadInput twos = [](std::size_t, std::size_t, std::size_t) { return 2.0; };
  auto cell = [&](const char* id, std::size_t r, std::size_t c) {
    const Step& step = trace.at(id);
    return op_facets(step.made.op).cell({trace, step, twos}, r, c);
  };
  const std::size_t d_k = trace.at("head0.Q").value.n_cols;
  CHECK(cell("head0.scores", 0, 1) == 4.0 * static_cast<double>(d_k));  // Σ 2·2
  CHECK(cell("head0.scaled", 0, 1) == 2.0 / trace.at("head0.scaled").made.divisor);
  CHECK(cell("head0.exp", 0, 0) == doctest::Approx(std::exp(2.0)).epsilon(1e-15));
  CHECK(cell("head0.weights", 0, 0) == 1.0);  // E / Σ = 2 / 2
  CHECK(cell("head0.row_sum", 1, 0) ==
        2.0 * static_cast<double>(trace.at("head0.exp").value.n_cols));
}

}  // namespace attn
