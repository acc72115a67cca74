// Marking whole simulated classes: 30 students per common mistake, each with
// an exercise of their own, working by one of two habits, and the marks they
// get. A teacher's standard: no cell that is right on the student's own
// numbers is marked wrong, nothing wrong is ok, and every student's mistake is
// named. The students' mistakes are made here by plain matrix code.
#include <doctest/doctest.h>

#include <fmt/format.h>

#include <cmath>
#include <cstdlib>
#include <functional>
#include <map>

#include "backend/cpu_backend.hpp"
#include "core/pipeline.hpp"
#include "teach/answers.hpp"
#include "teach/exercise.hpp"
#include "teach/verify.hpp"

namespace attn {

namespace {

constexpr std::size_t kStudents = 30;
constexpr int kAnswerDecimals = 3;  // the sheet: keep 5 decimals, write answers to 3

arma::mat rounded(const arma::mat& M, int decimals) {
  const double f = std::pow(10.0, decimals);
  arma::mat R = M;
  R.transform([f](double v) { return std::isfinite(v) ? std::round(v * f) / f : v; });
  return R;
}

arma::mat row_softmax(const arma::mat& S) {
  arma::mat W = S;
  W.each_col() -= arma::max(W, 1);
  W = arma::exp(W);
  W.each_col() /= arma::sum(W, 1);
  return W;
}

arma::mat column_softmax(const arma::mat& S) {
  arma::mat W = S;
  W.each_row() -= arma::max(W, 0);
  W = arma::exp(W);
  W.each_row() /= arma::sum(W, 0);
  return W;
}

enum class Habit {
  keep_five,   // keep 5 decimals while working, round only what is written
  as_written,  // work from the numbers as written
};

// One kind of student: the step their mistake is in, the label it should get,
// and how they compute that step from their own values so far (`v` reads them).
struct Mistake {
  const char* name;
  const char* step;   // "" for none
  const char* label;  // the diagnosis expected there
  std::function<arma::mat(const std::function<arma::mat(const char*)>& v, const Lesson&,
                          const Trace&)>
      make;
  int early_rounding = 0;  // > 0: every unwritten intermediate rounded to this many decimals
};

// A product term of the last query's first score, sign flipped: the term with
// the largest product, so that the slip shows.
arma::mat slipped_scores(const arma::mat& Q, const arma::mat& K) {
  arma::mat S = Q * K.t();
  const arma::uword i = Q.n_rows - 1;
  arma::uword best = 0;
  for (arma::uword k = 1; k < Q.n_cols; ++k)
    if (std::abs(Q(i, k) * K(0, k)) > std::abs(Q(i, best) * K(0, best))) best = k;
  S(i, 0) -= 2 * Q(i, best) * K(0, best);
  return S;
}

std::vector<Mistake> mistakes() {
  using V = std::function<arma::mat(const char*)>;
  return {
      {"correct", "", "", nullptr},
      {"no scaling", "head0.scaled", "unscaled",
       [](const V& v, const Lesson&, const Trace&) { return v("head0.scores"); }},
      {"divided by d_k", "head0.scaled", "scaled_by_dk",
       [](const V& v, const Lesson& l, const Trace&) {
         return arma::mat(v("head0.scores") / static_cast<double>(l.d_k));
       }},
      {"no transpose", "head0.scores", "not_transposed",
       [](const V& v, const Lesson&, const Trace&) {
         return arma::mat(v("head0.Q") * v("head0.K"));
       }},
      {"softmax down columns", "head0.weights", "softmax_wrong_axis",
       [](const V& v, const Lesson&, const Trace&) { return column_softmax(v("head0.masked")); }},
      {"mask ignored", "head0.masked", "mask_ignored",
       [](const V& v, const Lesson&, const Trace&) { return v("head0.scaled"); }},
      {"mask after softmax", "head0.weights", "mask_after_softmax",
       [](const V& v, const Lesson&, const Trace& t) {
         arma::mat W = row_softmax(v("head0.scaled"));
         W.elem(arma::find(t.mask)).zeros();
         return W;
       }},
      {"mask filled with 0", "head0.masked", "mask_fill_zero",
       [](const V& v, const Lesson&, const Trace& t) {
         arma::mat M = v("head0.scaled");
         M.elem(arma::find(t.mask)).zeros();
         return M;
       }},
      {"one product slipped", "head0.scores", "arithmetic_slip",
       [](const V& v, const Lesson&, const Trace&) {
         return slipped_scores(v("head0.Q"), v("head0.K"));
       }},
      {"rounded early to 2", "", "rounding", nullptr, 2},
      {"rounded early to 3", "", "rounding", nullptr, 3},
  };
}

// The student's page: every asked step, worked from their own values.
std::string work(const Exercise& ex, const Mistake& m, Habit habit) {
  CpuBackend cpu;
  Overrides used;  // the values the student carries on with
  std::string page;
  for (const Step& step : ex.trace.steps) {
    if (step.made.op == Op::given) continue;
    const Trace so_far = run_pipeline(ex.lesson, cpu, used);
    auto own = [&](const char* id) { return so_far.at(id).value; };
    arma::mat value =
        m.make && step.id == m.step ? m.make(own, ex.lesson, ex.trace) : so_far.at(step.id).value;
    const bool asked = std::find(ex.asked.begin(), ex.asked.end(), step.id) != ex.asked.end();
    const int keep = m.early_rounding && !asked ? m.early_rounding : 5;
    arma::mat carried_on = rounded(value, keep);
    if (asked) {
      const arma::mat written = rounded(carried_on, kAnswerDecimals);
      if (habit == Habit::as_written) carried_on = written;
      std::vector<std::string> rows;
      for (arma::uword r = 0; r < written.n_rows; ++r) {
        std::vector<std::string> cells;
        for (arma::uword c = 0; c < written.n_cols; ++c)
          cells.push_back(std::isinf(written(r, c))
                              ? std::string("\"-inf\"")
                              : fmt::format("\"{:.{}f}\"", written(r, c), kAnswerDecimals));
        rows.push_back(fmt::format("[{}]", fmt::join(cells, ", ")));
      }
      page += fmt::format("[[answer]]\nstep = \"{}\"\nvalues = [{}]\n\n", step.id,
                          fmt::join(rows, ", "));
    }
    used[step.id] = {carried_on,
                     arma::umat(carried_on.n_rows, carried_on.n_cols, arma::fill::ones)};
    if (step.id == "head0.context") break;
  }
  return page;
}

struct ClassResult {
  std::size_t named = 0;              // students whose mistake was named where it is
  std::size_t clean = 0;              // students with no cell marked against the standard
  std::size_t wrong_on_own = 0;       // cells right on their own numbers marked wrong
  std::size_t false_ok = 0;           // cells off the truth marked ok
  std::size_t rounded = 0;            // cells marked rounded
  std::vector<std::string> examples;  // the first few failures, for the message
};

ClassResult mark_class(const Mistake& m, Habit habit) {
  ExerciseSpec spec;
  spec.seed = 2026;
  spec.tokens = 3;
  spec.d_model = 3;
  spec.d_k = 3;  // as many keys as d_k, so that Q·K (no transpose) can be made
  spec.causal = true;
  spec.answer_decimals = kAnswerDecimals;
  spec.ask = {"scores", "scaled", "masked", "weights", "context"};
  normalise_spec(spec);
  CpuBackend cpu;
  ClassResult out;
  for (const Student& student : numbered_students(kStudents)) {
    const Exercise ex = generate_exercise(spec, student);
    const std::string page = work(ex, m, habit);
    if (const char* dump = std::getenv("ATTN_DUMP_STUDENT");
        dump && student.name == dump && std::getenv("ATTN_DUMP_MISTAKE") == std::string(m.name))
      MESSAGE((ex.lesson_toml + "\n" + page));
    const VerifyReport r = verify_answers(ex.lesson, cpu, parse_answers(page, "page", ex.trace));
    bool clean = true;
    bool named = m.step[0] == '\0' && m.early_rounding == 0;  // nothing to name
    auto fail = [&](const std::string& what) {
      clean = false;
      if (out.examples.size() < 3)
        out.examples.push_back(fmt::format("{} ({}): {}", student.name, m.name, what));
    };
    for (const AnswerVerdict& a : r.answers) {
      const bool mistaken_step = a.answer.step == m.step;
      for (const AnswerCell& c : a.cells) {
        const double truth = ex.trace.at(a.answer.step).value(c.row, c.col);
        const bool right = std::isinf(truth) ? c.given.value == truth
                                             : std::abs(c.given.value - truth) <= c.tolerance;
        if (c.verdict == Verdict::ok && !right) {
          ++out.false_ok;
          fail(fmt::format("{}[{},{}] ok but {} is not {}", a.answer.step, c.row, c.col,
                           c.given.value, truth));
        }
        out.rounded += c.verdict == Verdict::rounded;
        // Every cell but those of the mistaken step is right on the student's own numbers.
        if (!mistaken_step && (c.verdict == Verdict::wrong || c.verdict == Verdict::imprecise)) {
          ++out.wrong_on_own;
          fail(fmt::format("{}[{},{}] {} though right on their own numbers", a.answer.step, c.row,
                           c.col, verdict_name(c.verdict)));
        }
      }
      if (mistaken_step) {
        const std::string label = a.diagnosis ? a.diagnosis->label : "none";
        if (label == m.label)
          named = true;
        else
          fail(fmt::format("{} diagnosed {} (verdict {})", a.answer.step, label,
                           verdict_name(a.verdict)));
      }
      if (m.early_rounding && a.diagnosis && a.diagnosis->label == "rounding") named = true;
    }
    if (m.early_rounding) {
      // Rounded too early: never wrong; where it shows, it is named rounding.
      if (r.rounded == 0) named = true;
      if (r.wrong) fail("rounding marked wrong");
    } else if (m.step[0] != '\0' && (!r.first_wrong || r.first_wrong->step != m.step)) {
      fail(fmt::format("first wrong is {}", r.first_wrong ? r.first_wrong->step : "none"));
    }
    if (m.step[0] == '\0' && !m.early_rounding && !r.passed()) fail("a correct page does not pass");
    out.named += named;
    out.clean += clean && named;
  }
  return out;
}

}  // namespace

TEST_CASE("marking whole classes: every mistake × both working habits, 30 students each") {
  std::string table = "mistake               | habit      | named | clean | rounded cells\n";
  for (const Mistake& m : mistakes())
    for (Habit habit : {Habit::keep_five, Habit::as_written}) {
      const std::string mistake = m.name;
      CAPTURE(mistake);
      const bool keep = habit == Habit::keep_five;
      CAPTURE(keep);
      const ClassResult r = mark_class(m, habit);
      table += fmt::format("{:<21} | {:<10} | {:>5} | {:>5} | {}\n", m.name,
                           keep ? "keep 5" : "as written", r.named, r.clean, r.rounded);
      INFO(fmt::format("{}", fmt::join(r.examples, "\n")));
      CHECK(r.wrong_on_own == 0);
      CHECK(r.false_ok == 0);
      CHECK(r.named == kStudents);
      CHECK(r.clean == kStudents);
    }
  MESSAGE(table);
}

}  // namespace attn
