// The backward pass by hand: a simulated class works the gradient steps by
// plain loops (here, not by the tool), each student with a habit: right,
// rounded early, or one of the mistakes verify names on grad.* steps, later
// steps done right on their own wrong numbers. verify must mark no wrong value
// ok and no right one wrong, and name each mistake where it was made.
#include <doctest/doctest.h>

#include <fmt/format.h>

#include <cmath>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "backend/backend.hpp"
#include "core/lesson.hpp"
#include "core/pipeline.hpp"
#include "teach/answers.hpp"
#include "teach/verify.hpp"

namespace attn {

namespace {

// Self-attention with every matrix square (3 tokens, d_model = d_k = 3), so
// that each transposed product exists, and a dense upstream gradient.
std::string class_lesson(bool causal) {
  return fmt::format(R"(
[model]
heads = 1
d_k = 3
causal = {}
[input]
tokens = ["a", "b", "c"]
X = [[0.6, -0.2, 0.9], [-0.4, 0.8, 0.3], [0.7, 0.5, -0.6]]
[weights]
W_Q = [[0.8, -0.5, 0.3], [0.2, 0.9, -0.7], [-0.6, 0.4, 0.5]]
W_K = [[0.5, 0.7, -0.4], [-0.8, 0.3, 0.6], [0.4, -0.9, 0.2]]
W_V = [[0.9, -0.3, 0.4], [0.1, 0.6, -0.8], [-0.5, 0.2, 0.7]]
[backward]
upstream = [[0.9, -0.6, 0.3], [-0.4, 0.8, 0.5], [0.6, 0.2, -0.9]]
)",
                     causal);
}

using Mat = arma::mat;

// Plain loops, so that nothing here is the tool's arithmetic.
Mat times(const Mat& A, const Mat& B) {
  Mat P(A.n_rows, B.n_cols, arma::fill::zeros);
  for (std::size_t i = 0; i < A.n_rows; ++i)
    for (std::size_t j = 0; j < B.n_cols; ++j)
      for (std::size_t k = 0; k < A.n_cols; ++k) P(i, j) += A(i, k) * B(k, j);
  return P;
}

Mat transpose(const Mat& A) {
  Mat T(A.n_cols, A.n_rows);
  for (std::size_t i = 0; i < A.n_rows; ++i)
    for (std::size_t j = 0; j < A.n_cols; ++j) T(j, i) = A(i, j);
  return T;
}

// What a habit does to a written (and reused) value: rounds it to `decimals`
// (0: keeps every digit).
Mat kept(const Mat& M, int decimals) {
  if (decimals == 0) return M;
  Mat R = M;
  const double f = std::pow(10.0, decimals);
  for (double& v : R) v = std::round(v * f) / f;
  return R;
}

enum class Habit {
  right,
  rounded,         // every value written to 2 decimals, each worked from the written ones
  rounded_inputs,  // 3 decimals, the forward values it reads kept to 5 (as sheets ask)
  diagonal,       // dS from the Jacobian's diagonal only: A(1 − A)·dA
  no_row_dot,     // A ⊙ dA
  unscaled,       // grad.scores = grad.scaled
  scaled_twice,   // grad.scores = grad.scaled / s²
  q_transposed,   // dQ = dSᵀ·K
  k_untransposed, // dK = dS·Q
  w_untransposed, // dW = X·dY
  one_consumer,   // dX = dQ·W_Qᵀ only
  diagonal_and_unscaled,  // two mistakes, the second on the first's wrong numbers
};

struct Student {
  Habit habit;
  std::vector<std::string> wrong_steps;  // where the habit's mistakes are made
  std::vector<std::string> labels;       // the label expected at each of them
};

const std::vector<Student>& the_class() {
  static const std::vector<Student> students = {
      {Habit::right, {}, {}},
      {Habit::rounded, {}, {}},
      {Habit::rounded_inputs, {}, {}},
      {Habit::diagonal, {"grad.head0.masked"}, {"softmax_grad_diagonal"}},
      {Habit::no_row_dot, {"grad.head0.masked"}, {"softmax_grad_no_row_dot"}},
      {Habit::unscaled, {"grad.head0.scores"}, {"grad_unscaled"}},
      {Habit::scaled_twice, {"grad.head0.scores"}, {"grad_scaled_twice"}},
      {Habit::q_transposed, {"grad.head0.Q"}, {"grad_q_transposed"}},
      {Habit::k_untransposed, {"grad.head0.K"}, {"grad_k_not_transposed"}},
      {Habit::w_untransposed, {"grad.W_Q", "grad.W_K", "grad.W_V"},
       {"grad_not_transposed_w", "grad_not_transposed_w", "grad_not_transposed_w"}},
      {Habit::one_consumer, {"grad.X"}, {"grad_one_consumer"}},
      {Habit::diagonal_and_unscaled, {"grad.head0.masked", "grad.head0.scores"},
       {"softmax_grad_diagonal", "grad_unscaled"}},
  };
  return students;
}

// The gradient steps a student answers, in the order worked, and their values.
std::map<std::string, Mat> worked(const Trace& truth, const Mat& upstream, Habit habit) {
  const int d = habit == Habit::rounded ? 2 : habit == Habit::rounded_inputs ? 3 : 0;
  const auto in = [&](const char* id) {
    return kept(truth.at(id).value, habit == Habit::rounded_inputs ? 5 : 0);
  };
  const Mat A = in("head0.weights"), Q = in("head0.Q"), K = in("head0.K"), V = in("head0.V"),
            X = in("X"), W_Q = in("W_Q"), W_K = in("W_K"), W_V = in("W_V");
  const double s = std::sqrt(3.0);
  std::map<std::string, Mat> out;
  const Mat dA = out["grad.head0.weights"] = kept(times(upstream, transpose(V)), d);
  Mat D(3, 1, arma::fill::zeros), dM(3, 3);
  for (std::size_t i = 0; i < 3; ++i)
    for (std::size_t k = 0; k < 3; ++k) D(i, 0) += dA(i, k) * A(i, k);
  D = out["grad.head0.row_dot"] = kept(D, d);
  for (std::size_t i = 0; i < 3; ++i)
    for (std::size_t j = 0; j < 3; ++j) {
      const bool diagonal = habit == Habit::diagonal || habit == Habit::diagonal_and_unscaled;
      dM(i, j) = diagonal                       ? A(i, j) * (1 - A(i, j)) * dA(i, j)
                 : habit == Habit::no_row_dot ? A(i, j) * dA(i, j)
                                              : A(i, j) * (dA(i, j) - D(i, 0));
      if (truth.mask(i, j) != 0u) dM(i, j) = 0;  // A = 0 there: the learner writes 0
    }
  dM = out["grad.head0.masked"] = kept(dM, d);
  const double by = habit == Habit::unscaled || habit == Habit::diagonal_and_unscaled ? 1
                    : habit == Habit::scaled_twice                                      ? s * s
                                                                                        : s;
  const Mat dS = out["grad.head0.scores"] = kept(dM / by, d);
  const Mat dQ = out["grad.head0.Q"] =
      kept(habit == Habit::q_transposed ? times(transpose(dS), K) : times(dS, K), d);
  const Mat dK = out["grad.head0.K"] =
      kept(habit == Habit::k_untransposed ? times(dS, Q) : times(transpose(dS), Q), d);
  const Mat dV = out["grad.head0.V"] = kept(times(transpose(A), upstream), d);
  const auto dW = [&](const Mat& dY) {
    return kept(habit == Habit::w_untransposed ? times(X, dY) : times(transpose(X), dY), d);
  };
  out["grad.W_Q"] = dW(dQ);
  out["grad.W_K"] = dW(dK);
  out["grad.W_V"] = dW(dV);
  Mat dX = times(dQ, transpose(W_Q));
  if (habit != Habit::one_consumer) dX += times(dK, transpose(W_K)) + times(dV, transpose(W_V));
  out["grad.X"] = kept(dX, d);
  return out;
}

// One answer per step, every cell written to `decimals`.
std::string answers_of(const std::map<std::string, Mat>& steps, int decimals) {
  std::string out;
  for (const auto& [id, M] : steps) {
    std::vector<std::string> rows;
    for (std::size_t r = 0; r < M.n_rows; ++r) {
      std::vector<std::string> cells;
      for (std::size_t c = 0; c < M.n_cols; ++c)
        cells.push_back(fmt::format("\"{:.{}f}\"", M(r, c) == 0 ? 0.0 : M(r, c), decimals));
      rows.push_back(fmt::format("[{}]", fmt::join(cells, ", ")));
    }
    out += fmt::format("[[answer]]\nstep = \"{}\"\nvalues = [{}]\n", id, fmt::join(rows, ", "));
  }
  return out;
}

std::string label_of(const AnswerVerdict& a) {
  return a.diagnosis ? a.diagnosis->label : "none";
}

bool accepted(Verdict v) {
  return v == Verdict::ok || v == Verdict::carried || v == Verdict::rounded;
}

}  // namespace

TEST_CASE("backward pass by hand: a simulated class, each habit marked as it is") {
  for (const bool causal : {false, true}) {
    const Lesson lesson = parse_lesson(class_lesson(causal), "class.toml");
    const std::unique_ptr<Backend> cpu = make_backend("cpu");
    const Trace truth = run_pipeline(lesson, *cpu);
    const Mat upstream = truth.at("grad.concat").value;
    // The right way, by plain loops, is the tool's.
    for (const auto& [id, M] : worked(truth, upstream, Habit::right))
      CHECK_MESSAGE(arma::approx_equal(M, truth.at(id).value, "absdiff", 1e-12), id);
    std::map<std::string, int> named;
    std::map<std::string_view, int> verdicts;  // of the answers without a mistake
    for (const Student& student : the_class()) {
      const int decimals = student.habit == Habit::rounded          ? 2
                           : student.habit == Habit::rounded_inputs ? 3
                                                                    : 4;
      const std::map<std::string, Mat> steps = worked(truth, upstream, student.habit);
      const VerifyReport report = verify_answers(
          lesson, *cpu, parse_answers(answers_of(steps, decimals), "student.toml", truth));
      for (const AnswerVerdict& a : report.answers) {
        const std::string& step = a.answer.step;
        const auto at = std::find(student.wrong_steps.begin(), student.wrong_steps.end(), step);
        INFO("causal ", causal, ", habit ", static_cast<int>(student.habit), ", step ", step,
             ": ", verdict_name(a.verdict), " ", label_of(a));
        if (at == student.wrong_steps.end()) {
          // No right value marked wrong. Two decimals cannot show a gradient
          // of 0.03 to two significant digits: such an answer is imprecise
          // (asked again with more digits), never wrong.
          const bool rounds =
              student.habit == Habit::rounded || student.habit == Habit::rounded_inputs;
          CHECK((accepted(a.verdict) || (rounds && a.verdict == Verdict::imprecise)));
          ++verdicts[verdict_name(a.verdict)];
          continue;
        }
        CHECK(a.verdict == Verdict::wrong);  // no wrong value marked ok
        const std::string expected = student.labels[at - student.wrong_steps.begin()];
        CHECK(label_of(a) == expected);
        named[label_of(a)] += label_of(a) == expected;
      }
    }
    for (const auto& [label, count] : named) MESSAGE(causal, " ", label, ": ", count);
    for (const auto& [verdict, count] : verdicts) MESSAGE(causal, " ", verdict, ": ", count);
  }
}

}  // namespace attn

namespace attn {

TEST_CASE("backward pass by hand: carried through the row dot and the Jacobian, a mistake seen "
          "at a later step") {
  std::string toml = class_lesson(true);
  toml.replace(toml.find("[backward]\n"), 11, "[backward]\njacobian_row = 2\n");
  const Lesson lesson = parse_lesson(toml, "class.toml");
  const std::unique_ptr<Backend> cpu = make_backend("cpu");
  const Trace truth = run_pipeline(lesson, *cpu);
  // Row 2 of the weights with a slip (0.1 moved from key 0 to key 1), then
  // the Jacobian of row 2 (jacobian_row) and D, dS on those weights.
  Mat A = truth.at("head0.weights").value;
  A(2, 0) -= 0.1;
  A(2, 1) += 0.1;
  const Mat dA = truth.at("grad.head0.weights").value;
  Mat D(3, 1, arma::fill::zeros), dM(3, 3), J(3, 3);
  for (std::size_t i = 0; i < 3; ++i)
    for (std::size_t k = 0; k < 3; ++k) D(i, 0) += dA(i, k) * A(i, k);
  for (std::size_t i = 0; i < 3; ++i)
    for (std::size_t j = 0; j < 3; ++j) {
      dM(i, j) = A(i, j) * (dA(i, j) - D(i, 0));
      J(i, j) = A(2, i) * ((i == j ? 1.0 : 0.0) - A(2, j));
    }
  const std::map<std::string, Mat> mine = {{"head0.weights", A},
                                           {"grad.head0.row_dot", D},
                                           {"grad.head0.jacobian", J},
                                           {"grad.head0.masked", dM}};
  const VerifyReport r =
      verify_answers(lesson, *cpu, parse_answers(answers_of(mine, 4), "carried.toml", truth));
  REQUIRE(r.answers.size() == 4);
  for (const AnswerVerdict& a : r.answers) {
    INFO(a.answer.step, ": ", verdict_name(a.verdict));
    if (a.answer.step == "head0.weights") CHECK(a.verdict == Verdict::wrong);
    if (a.answer.step != "head0.weights") {
      CHECK(a.verdict == Verdict::carried);
      REQUIRE(!a.carried_from.empty());
      CHECK(a.carried_from.front().step == "head0.weights");
    }
  }
  // A learner who answers only dQ, having taken the diagonal alone and then
  // gone on right: the mistake is named at dQ. One who answers only dK with the
  // scale left out: named at dK.
  const Mat K = truth.at("head0.K").value, Q = truth.at("head0.Q").value;
  const Mat& W = truth.at("head0.weights").value;
  Mat dS(3, 3);
  for (std::size_t i = 0; i < 3; ++i)
    for (std::size_t j = 0; j < 3; ++j)
      dS(i, j) = W(i, j) * (1 - W(i, j)) * dA(i, j) / std::sqrt(3.0);
  const VerifyReport q = verify_answers(
      lesson, *cpu,
      parse_answers(answers_of({{"grad.head0.Q", times(dS, K)}}, 4), "q.toml", truth));
  CHECK(q.answers.at(0).verdict == Verdict::wrong);
  CHECK(label_of(q.answers.at(0)) == "softmax_grad_diagonal");
  const Mat unscaled = truth.at("grad.head0.scaled").value;
  const VerifyReport k = verify_answers(
      lesson, *cpu,
      parse_answers(answers_of({{"grad.head0.K", times(transpose(unscaled), Q)}}, 4), "k.toml",
                    truth));
  CHECK(k.answers.at(0).verdict == Verdict::wrong);
  CHECK(label_of(k.answers.at(0)) == "grad_unscaled");
}

}  // namespace attn
