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
#include "teach/diagnose.hpp"
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
  std::function<arma::mat(const std::function<arma::mat(const char*)>& v, const std::string& id,
                          const Lesson&, const Trace&)>
      make;
  int early_rounding = 0;  // > 0: every unwritten intermediate rounded to this many decimals
  // The habits of issue 24 (how a value is written, or a step of another kind):
  bool truncate = false;          // every written value cut, not rounded
  bool write_transposed = false;  // the values of `step` written into [col, row]
  bool wrong_way_one = false;     // one weight of `step` rounded the wrong way, the rest right
  double slip_one = 0;  // not 0: [1,1] of `step` this much further from 0 (0.812 for 0.7281)
  StepKind every_of_kind = StepKind::input;  // not input: `make` makes every step of this kind
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
       [](const V& v, const std::string&, const Lesson&, const Trace&) { return v("head0.scores"); }},
      {"divided by d_k", "head0.scaled", "scaled_by_dk",
       [](const V& v, const std::string&, const Lesson& l, const Trace&) {
         return arma::mat(v("head0.scores") / static_cast<double>(l.d_k));
       }},
      {"no transpose", "head0.scores", "not_transposed",
       [](const V& v, const std::string&, const Lesson&, const Trace&) {
         return arma::mat(v("head0.Q") * v("head0.K"));
       }},
      {"softmax down columns", "head0.weights", "softmax_wrong_axis",
       [](const V& v, const std::string&, const Lesson&, const Trace&) { return column_softmax(v("head0.masked")); }},
      {"mask ignored", "head0.masked", "mask_ignored",
       [](const V& v, const std::string&, const Lesson&, const Trace&) { return v("head0.scaled"); }},
      {"mask after softmax", "head0.weights", "mask_after_softmax",
       [](const V& v, const std::string&, const Lesson&, const Trace& t) {
         arma::mat W = row_softmax(v("head0.scaled"));
         W.elem(arma::find(t.mask)).zeros();
         return W;
       }},
      {"mask filled with 0", "head0.masked", "mask_fill_zero",
       [](const V& v, const std::string&, const Lesson&, const Trace& t) {
         arma::mat M = v("head0.scaled");
         M.elem(arma::find(t.mask)).zeros();
         return M;
       }},
      {"one product slipped", "head0.scores", "arithmetic_slip",
       [](const V& v, const std::string&, const Lesson&, const Trace&) {
         return slipped_scores(v("head0.Q"), v("head0.K"));
       }},
      {"rounded early to 2", "", "rounding", nullptr, 2},
      {"rounded early to 3", "", "rounding", nullptr, 3},
  };
}

// `M` cut (not rounded) to `decimals`.
arma::mat cut(const arma::mat& M, int decimals) {
  const double f = std::pow(10.0, decimals);
  arma::mat R = M;
  R.transform([f](double v) { return std::isfinite(v) ? std::trunc(v * f) / f : v; });
  return R;
}

// What the student writes for `step` of the values `M` they work with.
arma::mat as_written(const Mistake& m, const std::string& step, const arma::mat& M) {
  arma::mat W = m.truncate ? cut(M, kAnswerDecimals) : rounded(M, kAnswerDecimals);
  if (step != m.step) return W;
  if (m.write_transposed) W = arma::mat(W.t());
  if (step == m.step) W(1, 1) += (W(1, 1) < 0 ? -1 : 1) * m.slip_one;
  if (m.wrong_way_one) {
    // One weight of the last row rounded the other way: the one whose digits
    // after the last written are nearest to 25 or 75 (0.23425 written 0.235),
    // off by about 0.75 of a unit, past the tolerance of rounding twice.
    const arma::uword r = W.n_rows - 1;
    const double f = std::pow(10.0, kAnswerDecimals);
    auto off_quarter = [&](arma::uword c) {
      const double frac = M(r, c) * f - std::floor(M(r, c) * f);
      return std::abs(std::abs(frac - 0.5) - 0.25);
    };
    arma::uword best = 0;
    for (arma::uword c = 1; c < W.n_cols; ++c)
      if (off_quarter(c) < off_quarter(best)) best = c;
    W(r, best) += (W(r, best) > M(r, best) ? -1.0 : 1.0) / f;
  }
  return W;
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
    const bool made_here = m.every_of_kind != StepKind::input ? step.kind == m.every_of_kind
                                                                : step.id == m.step;
    arma::mat value = m.make && made_here ? m.make(own, step.id, ex.lesson, ex.trace)
                                          : so_far.at(step.id).value;
    const bool asked = std::find(ex.asked.begin(), ex.asked.end(), step.id) != ex.asked.end();
    const int keep = m.early_rounding && !asked ? m.early_rounding : 5;
    arma::mat carried_on = rounded(value, keep);
    if (asked) {
      const arma::mat written = as_written(m, step.id, carried_on);
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

// The habits of issue 24, each with the label verify should name (at the
// step `step`, or anywhere when it is ""), and the honest ones (label "":
// right but for how they round) on which no method mistake may be named.
std::vector<Mistake> habits_of_issue_24() {
  using V = std::function<arma::mat(const char*)>;
  std::vector<Mistake> out = {
      {"truncates", "", "truncated", nullptr},
      {"truncates, one slip", "head0.scores", "truncated", nullptr},
      {"truncates, one near miss", "head0.scores", "truncated", nullptr},
      {"exps as weights", "head0.weights", "exps_as_weights",
       [](const V& v, const std::string&, const Lesson&, const Trace&) {
         return arma::mat(arma::exp(v("head0.masked")));
       }},
      {"X·Wᵀ projections", "head0.scores", "transposed_weights",
       [](const V& v, const std::string& id, const Lesson&, const Trace&) {
         const std::string w = "W_" + id;
         return arma::mat(v("X") * v(w.c_str()).t());
       }},
      {"softmax of unscaled", "head0.weights", "softmax_of_unscaled",
       [](const V& v, const std::string&, const Lesson&, const Trace& t) {
         arma::mat S = v("head0.scores");
         S.elem(arma::find(t.mask)).fill(-arma::datum::inf);
         return row_softmax(S);
       }},
      {"answer transposed", "head0.weights", "transposed_answer", nullptr},
      {"rounded early to 1", "", "rounding", nullptr, 1},
      // honest, but for how they round
      {"√d_k as 1.732", "head0.scaled", "",
       [](const V& v, const std::string&, const Lesson& l, const Trace&) {
         return arma::mat(v("head0.scores") / (std::round(l.scale_divisor() * 1000) / 1000));
       }},
      {"one weight rounded wrong way", "head0.weights", "", nullptr},
      {"rounded early to 2 (honest)", "", "", nullptr, 2},
      {"correct (honest)", "", "", nullptr},
  };
  out[0].truncate = true;
  out[1].truncate = true;
  out[1].slip_one = 0.084;
  out[2].truncate = true;
  out[2].slip_one = -0.001;  // one unit nearer 0 than the cut value: -1.478 for -1.4790
  out[4].every_of_kind = StepKind::projection;
  out[6].write_transposed = true;
  out[9].wrong_way_one = true;
  return out;
}

struct HabitResult {
  std::size_t hits = 0;             // students whose habit was named (honest: none named)
  std::size_t false_diagnoses = 0;  // students with a mistake named that they did not make
  std::size_t passed = 0;           // students whose page passes
  std::size_t unnamed_by_rule = 0;  // slip_one: fewer than two cut values, rightly not named
  std::vector<std::string> examples;
};

// How many cells but [1,1] (the slip's) of `M`, kept to 5 decimals, are
// wrong when cut to the answer's decimals (further than their tolerance).
std::size_t cut_values(const arma::mat& M) {
  const arma::mat kept = rounded(M, 5);
  const arma::mat differ = arma::conv_to<arma::mat>::from(
      arma::abs(cut(kept, kAnswerDecimals) - M) > written_tolerance(kAnswerDecimals));
  return static_cast<std::size_t>(arma::accu(differ) - differ(1, 1));
}

// Whether the label names a mistake of method or layout, which rounding noise cannot explain.
bool beyond_noise(const std::string& label) {
  const CommonMistake* m = find_common_mistake(label);
  return m && !m->explains_noise;
}

HabitResult mark_habit(const Mistake& m, Habit habit) {
  ExerciseSpec spec;
  spec.seed = 2026;
  spec.tokens = 3;
  spec.d_model = 3;
  spec.d_k = 3;
  spec.causal = true;
  spec.answer_decimals = kAnswerDecimals;
  spec.ask = {"scores", "scaled", "masked", "weights", "context"};
  normalise_spec(spec);
  CpuBackend cpu;
  HabitResult out;
  for (const Student& student : numbered_students(kStudents)) {
    const Exercise ex = generate_exercise(spec, student);
    const VerifyReport r =
        verify_answers(ex.lesson, cpu, parse_answers(work(ex, m, habit), "page", ex.trace));
    bool named = false, falsely = false;
    for (const AnswerVerdict& a : r.answers) {
      const std::string label = a.diagnosis ? a.diagnosis->label : "";
      std::vector<std::string> labels = {label};
      for (const AnswerCell& c : a.cells)
        if (!c.diagnoses.empty()) labels.push_back(c.diagnoses.front().label);
      for (const std::string& l : labels) {
        if (!l.empty() && l == m.label && (m.step[0] == '\0' || a.answer.step == m.step))
          named = true;
        if (beyond_noise(l) && l != m.label) {
          falsely = true;
          if (out.examples.size() < 3)
            out.examples.push_back(fmt::format("{} ({}): {} named at {}", student.name, m.name, l,
                                               a.answer.step));
        }
      }
    }
    const bool honest = m.label[0] == '\0';
    // One slip among cut values: truncated is named under the cut cells only
    // where at least two of them differ from rounding (verify's rule).
    const bool expected = m.slip_one == 0 || cut_values(ex.trace.at(m.step).value) >= 2;
    out.unnamed_by_rule += !expected;
    if (!honest && named != expected && std::getenv("ATTN_DEBUG_HABIT"))
      MESSAGE(fmt::format("{} expected {} named {} cut {}\n{}", student.name, expected, named,
                          cut_values(ex.trace.at(m.step[0] ? m.step : "head0.scores").value),
                          ex.lesson_toml + work(ex, m, habit)));
    out.hits += honest ? !falsely : named == expected;
    out.false_diagnoses += falsely;
    out.passed += r.passed();
  }
  return out;
}

}  // namespace

TEST_CASE("issue 24's habits: each named on whole classes, no mistake named on honest rounding") {
  std::string table = "habit                         | habit      | hits | false | passed\n";
  for (const Mistake& m : habits_of_issue_24())
    for (Habit habit : {Habit::keep_five, Habit::as_written}) {
      const std::string name = m.name;
      CAPTURE(name);
      const bool keep = habit == Habit::keep_five;
      CAPTURE(keep);
      const HabitResult r = mark_habit(m, habit);
      table += fmt::format("{:<29} | {:<10} | {:>4} | {:>5} | {}\n", m.name,
                           keep ? "keep 5" : "as written", r.hits, r.false_diagnoses, r.passed);
      if (m.slip_one != 0) CHECK(r.unnamed_by_rule < kStudents / 3);  // mostly named
      INFO(fmt::format("{}", fmt::join(r.examples, "\n")));
      CHECK(r.false_diagnoses == 0);
      CHECK(r.hits == kStudents);
      // Only an honest page with nothing rounded too early passes.
      if (m.label[0] != '\0' || m.early_rounding) CHECK(r.passed < kStudents);
    }
  MESSAGE(table);
}

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
