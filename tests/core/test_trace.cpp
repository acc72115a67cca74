// The trace as a graph: step ids from one constructor, and every step made
// from earlier steps by a named operation, on every embedded lesson.
#include <doctest/doctest.h>

#include <cmath>
#include <set>

#include "core/lesson_library.hpp"
#include "core/pipeline.hpp"
#include "core/trace.hpp"
#include "support/host_backend.hpp"

namespace {

// Equal cell by cell to `tol`; NaN equals NaN (a fully masked row's weights).
bool same(const arma::mat& a, const arma::mat& b, double tol) {
  if (a.n_rows != b.n_rows || a.n_cols != b.n_cols) return false;
  for (arma::uword i = 0; i < a.n_elem; ++i)
    if (!(std::isnan(a(i)) && std::isnan(b(i))) && !(std::abs(a(i) - b(i)) <= tol)) return false;
  return true;
}

}  // namespace

TEST_CASE("head_step_id spells the per-head ids") {
  CHECK(attn::head_step_id(0, attn::HeadStep::scores) == "head0.scores");
  CHECK(attn::head_step_id(1, attn::HeadStep::row_sum) == "head1.row_sum");
  CHECK(attn::head_step_id(12, attn::HeadStep::Q) == "head12.Q");
  CHECK(attn::head_step_id(3, attn::HeadStep::context) == "head3.context");
}

TEST_CASE("id_of: an id as it is, a head-0 step by its short name, anything else unchanged") {
  attn::testing::HostBackend cpu;
  const attn::Trace two = attn::run_pipeline(attn::find_lesson("two-heads"), cpu);
  CHECK(two.id_of("weights") == "head0.weights");
  CHECK(two.id_of("row_sum") == "head0.row_sum");
  CHECK(two.id_of("Q") == "Q");  // the projection, not head0.Q
  CHECK(two.id_of("head1.scores") == "head1.scores");
  CHECK(two.id_of("concat") == "concat");
  CHECK(two.id_of("weight") == "weight");  // unknown: at() then lists the ids
  CHECK(two.find(two.id_of("context")) == two.find("head0.context"));
}

TEST_CASE("every step reads only earlier steps, and its operation fits its inputs") {
  attn::testing::HostBackend cpu;
  for (const attn::Lesson& lesson : attn::all_embedded_lessons()) {
    CAPTURE(lesson.id);
    const attn::Trace trace = attn::run_pipeline(lesson, cpu);
    // A narrower dtype rounds every step: its values are proven against
    // PyTorch and numpy instead (tests/torch_dtype.py, tests/crosscheck.py).
    if (trace.dtype != attn::Dtype::f64) continue;
    std::set<std::string> seen;
    for (const attn::Step& step : trace.steps) {
      CAPTURE(step.id);
      for (const std::string& in : step.made.inputs) CHECK(seen.contains(in));
      seen.insert(step.id);
      const std::vector<std::string>& in = step.made.inputs;
      switch (step.made.op) {
        case attn::Op::given:
        case attn::Op::positional:
        case attn::Op::alibi:  // −m_h·|i − j|: from the positions alone
          CHECK(in.empty());
          break;
        case attn::Op::rotate:  // RoPE: head{h}.Q or .K, the same shape
          REQUIRE(in.size() == 1);
          CHECK(arma::size(step.value) == arma::size(trace.at(in[0]).value));
          break;
        case attn::Op::row_max_abs_diff:  // the scores, then the shifted scores: one column
          REQUIRE(in.size() == 2);
          CHECK(step.value.n_rows == trace.at(in[0]).value.n_rows);
          CHECK(step.value.n_cols == 1);
          break;
        case attn::Op::matmul: {  // (n,k)·(k,p) (+ a bias row of p)
          REQUIRE(in.size() >= 2);
          const arma::mat& a = trace.at(in[0]).value;
          const arma::mat& b = trace.at(in[1]).value;
          CHECK(a.n_cols == b.n_rows);
          CHECK(step.value.n_rows == a.n_rows);
          CHECK(step.value.n_cols == b.n_cols);
          arma::mat expected = a * b;
          if (in.size() == 3) expected.each_row() += trace.at(in[2]).value.row(0);
          CHECK(same(step.value, expected, 1e-12));
          break;
        }
        case attn::Op::matmul_t: {
          REQUIRE(in.size() == 2);
          const arma::mat expected = trace.at(in[0]).value * trace.at(in[1]).value.t();
          CHECK(same(step.value, expected, 1e-12));
          break;
        }
        case attn::Op::slice: {
          const arma::mat& whole = trace.at(in.at(0)).value;
          const arma::mat expected =
              whole.cols(step.made.offset, step.made.offset + step.value.n_cols - 1);
          CHECK(same(step.value, expected, 0.0));
          break;
        }
        case attn::Op::divide:
          CHECK(arma::approx_equal(step.value, trace.at(in.at(0)).value / step.made.divisor,
                                   "absdiff", 0.0));
          break;
        case attn::Op::rows: {  // a decoding step's query or cache
          const arma::mat& whole = trace.at(in.at(0)).value;
          const arma::mat expected =
              whole.rows(step.made.offset, step.made.offset + step.value.n_rows - 1);
          CHECK(same(step.value, expected, 0.0));
          break;
        }
        case attn::Op::softmax:  // head{h}.weights from exp and row_sum; a decoding step's alone
          if (step.kind == attn::StepKind::decode_weights) {
            REQUIRE(in.size() == 1);
            break;
          }
          REQUIRE(in.size() == 3);
          CHECK(trace.at(in[1]).made.op == attn::Op::exp);
          CHECK(trace.at(in[2]).made.op == attn::Op::row_sum);
          break;
        case attn::Op::max_abs_diff:  // the full context, then one decoded row per query
          REQUIRE(in.size() == trace.at(in.at(0)).value.n_rows + 1);
          CHECK(step.value.n_rows == trace.at(in[0]).value.n_rows);
          break;
        case attn::Op::concat: {
          std::size_t width = 0;
          for (const std::string& id : in) width += trace.at(id).value.n_cols;
          CHECK(step.value.n_cols == width);
          break;
        }
        default:
          CHECK(in.size() >= 1);
      }
    }
  }
}
