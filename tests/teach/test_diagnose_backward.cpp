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
#include "teach/exercise.hpp"
#include "teach/verify.hpp"

namespace attn {

namespace {

using Mat = arma::mat;

// `key = [[...], ...]` of a rows × cols matrix on the grid of 0.1 in [-1, 1],
// drawn from `rng`.
std::string drawn(const char* key, SplitMix64& rng, std::size_t rows, std::size_t cols) {
  std::vector<std::string> out;
  for (std::size_t r = 0; r < rows; ++r) {
    std::vector<std::string> row;
    for (std::size_t c = 0; c < cols; ++c)
      row.push_back(fmt::format("{:.1f}", rng.between(-10, 10) / 10.0));
    out.push_back(fmt::format("[{}]", fmt::join(row, ", ")));
  }
  return fmt::format("{} = [{}]\n", key, fmt::join(out, ", "));
}

// Self-attention with every matrix square (3 tokens, d_model = d_k = 3), so
// that each transposed product exists, and a dense upstream gradient: the
// class's own numbers (seed 0), or drawn from `seed`.
std::string class_lesson(bool causal, std::uint64_t seed = 0) {
  std::string head = fmt::format(
      "[model]\nheads = 1\nd_k = 3\ncausal = {}\n[input]\ntokens = [\"a\", \"b\", \"c\"]\n",
      causal);
  if (seed != 0) {
    SplitMix64 rng(seed);
    return head + drawn("X", rng, 3, 3) + "[weights]\n" + drawn("W_Q", rng, 3, 3) +
           drawn("W_K", rng, 3, 3) + drawn("W_V", rng, 3, 3) + "[backward]\n" +
           drawn("upstream", rng, 3, 3);
  }
  return head + R"(X = [[0.6, -0.2, 0.9], [-0.4, 0.8, 0.3], [0.7, 0.5, -0.6]]
[weights]
W_Q = [[0.8, -0.5, 0.3], [0.2, 0.9, -0.7], [-0.6, 0.4, 0.5]]
W_K = [[0.5, 0.7, -0.4], [-0.8, 0.3, 0.6], [0.4, -0.9, 0.2]]
W_V = [[0.9, -0.3, 0.4], [0.1, 0.6, -0.8], [-0.5, 0.2, 0.7]]
[backward]
upstream = [[0.9, -0.6, 0.3], [-0.4, 0.8, 0.5], [0.6, 0.2, -0.9]]
)";
}

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

// The mistakes of the way back a student makes (each at one step), and the
// label verify should give it.
enum Mistake : unsigned {
  diagonal = 1,         // grad.head0.masked = A(1 − A)·dA: the Jacobian's diagonal only
  no_row_dot = 2,       // grad.head0.masked = A ⊙ dA
  unscaled = 4,         // grad.head0.scores = grad.scaled
  scaled_twice = 8,     // grad.head0.scores = grad.scaled / s²
  q_transposed = 16,    // dQ = dSᵀ·K
  k_untransposed = 32,  // dK = dS·Q
  w_untransposed = 64,  // dW = X·dY
  one_consumer = 128,   // dX = dQ·W_Qᵀ only
};

struct MistakeAt {
  Mistake mistake;
  std::vector<std::string> steps;
  const char* label;
};

const std::vector<MistakeAt>& mistakes_at() {
  static const std::vector<MistakeAt> table = {
      {diagonal, {"grad.head0.masked"}, "softmax_grad_diagonal"},
      {no_row_dot, {"grad.head0.masked"}, "softmax_grad_no_row_dot"},
      {unscaled, {"grad.head0.scores"}, "grad_unscaled"},
      {scaled_twice, {"grad.head0.scores"}, "grad_scaled_twice"},
      {q_transposed, {"grad.head0.Q"}, "grad_q_transposed"},
      {k_untransposed, {"grad.head0.K"}, "grad_k_not_transposed"},
      {w_untransposed, {"grad.W_Q", "grad.W_K", "grad.W_V"}, "grad_not_transposed_w"},
      {one_consumer, {"grad.X"}, "grad_one_consumer"},
  };
  return table;
}

// A student: the mistakes they make, the decimals they write (and reuse:
// each step worked from their written numbers), and the decimals they keep of
// the forward values they read (0: all).
struct Habit {
  unsigned mistakes = 0;
  int decimals = 4;
  int forward_decimals = 0;
};

std::vector<Habit> the_class() {
  std::vector<Habit> students = {{0, 4, 0}, {0, 2, 0}, {0, 3, 5}};  // right, rounded twice
  for (const MistakeAt& m : mistakes_at()) students.push_back({m.mistake, 4, 0});
  students.push_back({diagonal | unscaled, 4, 0});  // the second on the first's wrong numbers
  students.push_back({no_row_dot | k_untransposed, 3, 5});
  return students;
}

// The gradient steps a student answers, in the order worked, and their values.
std::map<std::string, Mat> worked(const Trace& truth, const Habit& habit) {
  const auto makes = [&](Mistake m) { return (habit.mistakes & m) != 0; };
  const int d = habit.decimals;
  const auto in = [&](const char* id) { return kept(truth.at(id).value, habit.forward_decimals); };
  const Mat A = in("head0.weights"), Q = in("head0.Q"), K = in("head0.K"), V = in("head0.V"),
            X = in("X"), W_Q = in("W_Q"), W_K = in("W_K"), W_V = in("W_V"),
            upstream = truth.at("grad.concat").value;
  const double s = std::sqrt(3.0);
  std::map<std::string, Mat> out;
  const Mat dA = out["grad.head0.weights"] = kept(times(upstream, transpose(V)), d);
  Mat D(3, 1, arma::fill::zeros), dM(3, 3);
  for (std::size_t i = 0; i < 3; ++i)
    for (std::size_t k = 0; k < 3; ++k) D(i, 0) += dA(i, k) * A(i, k);
  D = out["grad.head0.row_dot"] = kept(D, d);
  for (std::size_t i = 0; i < 3; ++i)
    for (std::size_t j = 0; j < 3; ++j) {
      dM(i, j) = makes(diagonal)     ? A(i, j) * (1 - A(i, j)) * dA(i, j)
                 : makes(no_row_dot) ? A(i, j) * dA(i, j)
                                     : A(i, j) * (dA(i, j) - D(i, 0));
      if (truth.mask(i, j) != 0u) dM(i, j) = 0;  // A = 0 there: the learner writes 0
    }
  dM = out["grad.head0.masked"] = kept(dM, d);
  const double by = makes(unscaled) ? 1 : makes(scaled_twice) ? s * s : s;
  const Mat dS = out["grad.head0.scores"] = kept(dM / by, d);
  const Mat dQ = out["grad.head0.Q"] =
      kept(makes(q_transposed) ? times(transpose(dS), K) : times(dS, K), d);
  const Mat dK = out["grad.head0.K"] =
      kept(makes(k_untransposed) ? times(dS, Q) : times(transpose(dS), Q), d);
  const Mat dV = out["grad.head0.V"] = kept(times(transpose(A), upstream), d);
  const auto dW = [&](const Mat& dY) {
    return kept(makes(w_untransposed) ? times(X, dY) : times(transpose(X), dY), d);
  };
  out["grad.W_Q"] = dW(dQ);
  out["grad.W_K"] = dW(dK);
  out["grad.W_V"] = dW(dV);
  Mat dX = times(dQ, transpose(W_Q));
  if (!makes(one_consumer)) dX += times(dK, transpose(W_K)) + times(dV, transpose(W_V));
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

// What verify made of a class: the label named at each mistake, the verdicts
// of the answers without one, and the mistakes too small to show.
struct Tally {
  std::map<std::string, int> named, verdicts;
  int unseen = 0;  // a mistake whose values differ from the right ones by less than 0.002
};

// The mistake of `habit` made at `step`, if any.
const MistakeAt* mistake_at(const Habit& habit, const std::string& step) {
  for (const MistakeAt& m : mistakes_at())
    if ((habit.mistakes & m.mistake) &&
        std::find(m.steps.begin(), m.steps.end(), step) != m.steps.end())
      return &m;
  return nullptr;
}

void mark_class(const Lesson& lesson, Tally& tally) {
  const std::unique_ptr<Backend> cpu = make_backend("cpu");
  const Trace truth = run_pipeline(lesson, *cpu);
  // The right way, by plain loops, is the tool's.
  for (const auto& [id, M] : worked(truth, Habit{0, 0, 0}))
    CHECK_MESSAGE(arma::approx_equal(M, truth.at(id).value, "absdiff", 1e-12), id);
  for (const Habit& habit : the_class()) {
    const std::map<std::string, Mat> steps = worked(truth, habit);
    const VerifyReport report = verify_answers(
        lesson, *cpu, parse_answers(answers_of(steps, habit.decimals), "student.toml", truth));
    // The first wrong cell is in the earliest step answered wrong (trace order).
    std::size_t first = truth.steps.size();
    for (const AnswerVerdict& a : report.answers)
      if (a.verdict == Verdict::wrong)
        for (std::size_t k = 0; k < first; ++k)
          if (truth.steps[k].id == a.answer.step) first = k;
    CHECK(report.first_wrong.has_value() == (first < truth.steps.size()));
    if (report.first_wrong) CHECK(report.first_wrong->step == truth.steps[first].id);
    for (const AnswerVerdict& a : report.answers) {
      const std::string& step = a.answer.step;
      const MistakeAt* m = mistake_at(habit, step);
      INFO("mistakes ", habit.mistakes, ", decimals ", habit.decimals, ", step ", step, ": ",
           verdict_name(a.verdict), " ", label_of(a));
      // The same student without this mistake: right on their own numbers.
      const Habit without{m ? habit.mistakes & ~m->mistake : 0, habit.decimals,
                          habit.forward_decimals};
      const double off = m ? arma::abs(steps.at(step) - worked(truth, without).at(step)).max() : 0;
      if (!m || off < 0.002) {
        // No right value marked wrong. Two decimals cannot show a gradient
        // of 0.03 to two significant digits: such an answer is imprecise
        // (asked again with more digits), never wrong.
        CHECK((accepted(a.verdict) || (habit.decimals < 4 && a.verdict == Verdict::imprecise)));
        ++tally.verdicts[std::string(verdict_name(a.verdict))];
        tally.unseen += m != nullptr;
        continue;
      }
      CHECK(a.verdict == Verdict::wrong);  // no wrong value marked ok
      CHECK(label_of(a) == m->label);
      tally.named[label_of(a)] += label_of(a) == m->label;
    }
  }
}

}  // namespace

TEST_CASE("backward pass by hand: a simulated class, each habit marked as it is") {
  // 15 students on the class's lesson and on 5 drawn ones, with and without
  // a causal mask.
  Tally tally;
  for (const bool causal : {false, true})
    for (std::uint64_t seed = 0; seed <= 5; ++seed)
      mark_class(parse_lesson(class_lesson(causal, seed), "class.toml"), tally);
  for (const auto& [label, count] : tally.named) MESSAGE(label, ": named ", count, " times");
  for (const auto& [verdict, count] : tally.verdicts) MESSAGE(verdict, ": ", count);
  MESSAGE("mistakes too small to see: ", tally.unseen);
  for (const MistakeAt& m : mistakes_at()) CHECK(tally.named[m.label] >= 10);
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

TEST_CASE("backward pass by hand: dA rounded to 2 decimals, D and dS worked from it, carried") {
  const Lesson lesson = parse_lesson(class_lesson(true), "class.toml");
  const std::unique_ptr<Backend> cpu = make_backend("cpu");
  const Trace truth = run_pipeline(lesson, *cpu);
  const Mat& dA = truth.at("grad.head0.weights").value;
  // dA rounded to 2 decimals, D and dS worked from those and written to 4:
  // carried (the vjp terms' intervals carry dA's ± 0.005 to dS), never wrong.
  const Mat dA2 = kept(dA, 2), &W = truth.at("head0.weights").value;
  Mat D2(3, 1, arma::fill::zeros), dS2(3, 3);
  for (std::size_t i = 0; i < 3; ++i)
    for (std::size_t k = 0; k < 3; ++k) D2(i, 0) += dA2(i, k) * W(i, k);
  for (std::size_t i = 0; i < 3; ++i)
    for (std::size_t j = 0; j < 3; ++j)
      dS2(i, j) = W(i, j) * (dA2(i, j) - D2(i, 0)) / std::sqrt(3.0);
  const VerifyReport two = verify_answers(
      lesson, *cpu,
      parse_answers(answers_of({{"grad.head0.weights", dA2}}, 2) +
                        answers_of({{"grad.head0.row_dot", D2}, {"grad.head0.scores", dS2}}, 4),
                    "two.toml", truth));
  for (const AnswerVerdict& a : two.answers) {
    INFO(a.answer.step, ": ", verdict_name(a.verdict));
    CHECK(a.verdict != Verdict::wrong);
    if (a.answer.step != "grad.head0.weights") CHECK(a.verdict == Verdict::carried);
  }
}

TEST_CASE("backward pass by hand: √3 taken as 1.73 on the way back is rounding, not wrong") {
  const Lesson lesson = parse_lesson(class_lesson(false), "class.toml");
  const std::unique_ptr<Backend> cpu = make_backend("cpu");
  const Trace truth = run_pipeline(lesson, *cpu);
  const Mat dS = truth.at("grad.head0.masked").value / 1.73;
  REQUIRE(arma::abs(dS - truth.at("grad.head0.scores").value).max() > 2e-4);  // 4 decimals see it
  const VerifyReport r = verify_answers(
      lesson, *cpu, parse_answers(answers_of({{"grad.head0.scores", dS}}, 4), "s.toml", truth));
  const AnswerVerdict& a = r.answers.at(0);
  CHECK(a.verdict == Verdict::rounded);
  REQUIRE(a.diagnosis);
  CHECK(a.diagnosis->label == "rounding");
  CHECK(a.diagnosis->rounded_step == "√d_k");
}

}  // namespace attn
