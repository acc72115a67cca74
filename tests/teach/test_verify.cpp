// Tests of verify's marking: ok / carried / wrong, the first wrong cell, and
// carried-forward credit through run_pipeline's overrides.
#include <doctest/doctest.h>
#include <fmt/format.h>

#include <cmath>
#include <functional>
#include <memory>

#include "backend/backend.hpp"
#include "core/error.hpp"
#include "core/lesson_library.hpp"
#include "core/pipeline.hpp"
#include "teach/answers.hpp"
#include "teach/exercise.hpp"
#include "teach/diagnose.hpp"
#include "teach/verify.hpp"

namespace attn {

namespace {

struct RiverBank {
  Lesson lesson = find_lesson("river-bank");
  std::unique_ptr<Backend> backend = make_backend("cpu");
  Trace truth = run_pipeline(lesson, *backend);
  VerifyReport mark(const std::string& toml) {
    return verify_answers(lesson, *backend, parse_answers(toml, "test.toml", truth));
  }
};

// The whole of K as document 000 has it: true K with K(bank)[d3] = 0.51.
const char* kWrongK = R"(
[[answer]]
step = "K"
values = [[0.73, 0.50, 0.70, 0.38],
          [0.66, 0.54, 0.66, 0.51],
          [0.61, 0.80, 0.46, 0.74],
          [1.04, 0.38, 0.40, 0.85]]
)";

}  // namespace

TEST_CASE("run_pipeline overrides: later steps are recomputed from the given cells") {
  RiverBank rb;
  Overrides overrides;
  arma::mat K = rb.truth.at("K").value;
  K(1, 3) = 0.51;
  arma::umat given(4, 4, arma::fill::zeros);
  given(1, 3) = 1;
  overrides["K"] = {K, given};
  const Trace carried = run_pipeline(rb.lesson, *rb.backend, overrides);
  CHECK(carried.at("K").value(1, 3) == doctest::Approx(0.51));
  CHECK(carried.at("K").value(0, 0) == doctest::Approx(0.73));
  // Q(river)·K(bank) with 0.51: 0.69×0.66 + 0.50×0.54 + 0.86×0.66 + 0.85×0.51 = 1.7265
  CHECK(carried.at("head0.scores").value(0, 1) == doctest::Approx(1.7265).epsilon(1e-12));
  CHECK(carried.at("head0.scores").value(0, 0) ==
        doctest::Approx(rb.truth.at("head0.scores").value(0, 0)).epsilon(1e-12));
  CHECK(carried.at("head0.scaled").value(0, 1) == doctest::Approx(1.7265 / 2).epsilon(1e-12));

  overrides["K"].value = arma::mat(3, 4, arma::fill::zeros);
  CHECK_THROWS_WITH_AS(run_pipeline(rb.lesson, *rb.backend, overrides), doctest::Contains("3×4"),
                       InputError);
}

TEST_CASE("carried: the document's 1.727 is right given its own K, wrong at K[1,3]") {
  RiverBank rb;
  const VerifyReport r = rb.mark(std::string(kWrongK) + R"(
[[answer]]
step = "head0.scores"
cell = [0, 1]
value = 1.727
[[answer]]
step = "head0.scores"
cell = [0, 0]
value = 1.679
)");
  REQUIRE(r.answers.size() == 3);
  CHECK(r.answers[0].verdict == Verdict::wrong);
  CHECK(r.answers[1].verdict == Verdict::carried);
  REQUIRE(r.answers[1].carried_from.size() == 1);
  CHECK(r.answers[1].carried_from[0].step == "K");
  CHECK(r.answers[1].carried_from[0].row == 1);
  CHECK(r.answers[1].carried_from[0].col == 3);
  CHECK(r.answers[1].cells[0].expected == doctest::Approx(1.6755));
  CHECK(*r.answers[1].cells[0].carried_expected == doctest::Approx(1.7265));
  CHECK(r.answers[2].verdict == Verdict::ok);  // not touched by the wrong cell
  CHECK_FALSE(r.answers[2].cells[0].carried_expected);
  REQUIRE(r.first_wrong);
  CHECK(r.first_wrong->step == "K");
  CHECK(r.first_wrong->row == 1);
  CHECK(r.first_wrong->col == 3);
  // Cells: the 15 right ones of K and scores[river,river]; one carried; one wrong.
  CHECK(r.ok == 16);
  CHECK(r.carried == 1);
  CHECK(r.wrong == 1);
}

TEST_CASE("carried credit does not depend on the order of the answers file") {
  RiverBank rb;
  const VerifyReport r =
      rb.mark("[[answer]]\nstep = \"head0.scaled\"\ncell = [0, 1]\nvalue = 0.8633\n" +
              std::string(kWrongK));
  CHECK(r.answers[0].verdict == Verdict::carried);
  CHECK(r.answers[1].verdict == Verdict::wrong);
  CHECK(r.first_wrong->step == "K");
}

TEST_CASE(
    "a new mistake on top of carried values is wrong, and the first wrong stays the earliest") {
  RiverBank rb;
  // Unscaled, from the document's own K: 1.7265 not divided by 2.
  const VerifyReport r =
      rb.mark(std::string(kWrongK) +
              "[[answer]]\nstep = \"head0.scaled\"\ncell = [0, 1]\nvalue = 1.7265\n");
  const AnswerVerdict& a = r.answers[1];
  CHECK(a.verdict == Verdict::wrong);
  REQUIRE(a.diagnosis);
  CHECK(a.diagnosis->label == "unscaled");
  CHECK(r.first_wrong->step == "K");
}

TEST_CASE("a carried answer names only the wrong steps it rests on") {
  RiverBank rb;
  // K(bank) wrong at d3 and V(river) wrong at d0; the score uses K, not V.
  const VerifyReport r = rb.mark(R"(
[[answer]]
step = "K"
row = 1
values = [0.66, 0.54, 0.66, 0.51]
[[answer]]
step = "V"
row = 0
values = [0.52, 0.59, 0.65, 0.43]
[[answer]]
step = "head0.scores"
cell = [0, 1]
value = 1.727
)");
  REQUIRE(r.answers.size() == 3);
  CHECK(r.answers[2].verdict == Verdict::carried);
  REQUIRE(r.answers[2].carried_from.size() == 1);
  CHECK(r.answers[2].carried_from[0].step == "K");
}

TEST_CASE("an answer never carries from its own step") {
  RiverBank rb;
  const VerifyReport r = rb.mark(R"(
[[answer]]
step = "K"
cell = [1, 3]
value = 0.51
[[answer]]
step = "K"
cell = [1, 3]
value = 0.51
)");
  CHECK(r.answers[0].verdict == Verdict::wrong);
  CHECK(r.answers[1].verdict == Verdict::wrong);
}

TEST_CASE("all right: nothing wrong, no first wrong") {
  RiverBank rb;
  const VerifyReport r = rb.mark(R"(
[[answer]]
step = "Q"
row = 0
values = ["0.69", "0.50", "0.86", "0.85"]
[[answer]]
step = "head0.scores"
cell = [0, 1]
value = "1.68"
)");
  CHECK(r.ok == 5);  // cells: four of Q, one score
  CHECK(r.wrong == 0);
  CHECK_FALSE(r.first_wrong);
}

TEST_CASE("carried through the softmax on paper: weights = your E / your Σ") {
  RiverBank rb;
  // exp(river, river) written 2.5000 instead of 2.3149; the row sum and the
  // weights then done right on it.
  const arma::rowvec e = rb.truth.at("head0.exp").value.row(0);
  const double wrong_e0 = 2.5, sum = wrong_e0 + e(1) + e(2) + e(3);
  const std::string toml = fmt::format(
      "[[answer]]\nstep = \"head0.exp\"\ncell = [0, 0]\nvalue = \"2.5000\"\n"
      "[[answer]]\nstep = \"head0.row_sum\"\ncell = [0, 0]\nvalue = \"{:.4f}\"\n"
      "[[answer]]\nstep = \"head0.weights\"\nrow = 0\nvalues = [\"{:.4f}\", \"{:.4f}\", "
      "\"{:.4f}\", "
      "\"{:.4f}\"]\n",
      sum, wrong_e0 / sum, e(1) / sum, e(2) / sum, e(3) / sum);
  const VerifyReport r = rb.mark(toml);
  REQUIRE(r.answers.size() == 3);
  CHECK(r.answers[0].verdict == Verdict::wrong);
  CHECK(r.answers[1].verdict == Verdict::carried);
  CHECK(r.answers[2].verdict == Verdict::carried);
  CHECK(r.answers[2].cells[0].carried_expected.value() == doctest::Approx(wrong_e0 / sum));
  REQUIRE(r.first_wrong);
  CHECK(r.first_wrong->step == "head0.exp");
}

TEST_CASE("carried: a row sum of the exponentials as written, rounded to 2 decimals") {
  RiverBank rb;
  const arma::rowvec e = rb.truth.at("head0.exp").value.row(0);
  double sum = 0;
  std::string exps;
  for (std::size_t j = 0; j < 4; ++j) {
    const double rounded = std::round(e(j) * 100) / 100;
    sum += rounded;
    exps += fmt::format("{}\"{:.2f}\"", j ? ", " : "", rounded);
  }
  const VerifyReport r = rb.mark(
      fmt::format("[[answer]]\nstep = \"head0.exp\"\nrow = 0\nvalues = [{}]\n"
                  "[[answer]]\nstep = \"head0.row_sum\"\ncell = [0, 0]\nvalue = \"{:.2f}\"\n",
                  exps, sum));
  REQUIRE(r.answers.size() == 2);
  CHECK(r.answers[0].verdict == Verdict::ok);
  // 9.82 is not 9.8255 to 2 decimals, but it is the sum of the four values written.
  CHECK(r.answers[1].verdict == Verdict::carried);
  CHECK_FALSE(r.answers[1].diagnosis.has_value());
  CHECK(r.answers[1].cells[0].carried_low <= sum);
  CHECK(r.answers[1].cells[0].carried_high >= sum);
}

TEST_CASE("imprecise: too few digits to show the value is never ok") {
  RiverBank rb;
  // scores row river is [1.6793, 1.6755, 1.8455, 1.9734]: whole numbers say nothing.
  const VerifyReport whole =
      rb.mark("[[answer]]\nstep = \"head0.scores\"\nrow = 0\nvalues = [2, 2, 2, 2]\n");
  REQUIRE(whole.answers.size() == 1);
  CHECK(whole.ok == 0);
  CHECK(whole.imprecise == 4);
  CHECK(whole.answers[0].cells[0].required_decimals == 1);
  CHECK_FALSE(whole.passed());
  // Weights of about 0.24 written as 0 are not a row that sums to 1.
  const VerifyReport zeros =
      rb.mark("[[answer]]\nstep = \"head0.weights\"\nrow = 2\nvalues = [0, 0, 0, 0]\n");
  CHECK(zeros.ok == 0);
  CHECK(zeros.imprecise == 4);
  CHECK(zeros.answers[0].cells[0].required_decimals == 2);
  // Enough digits, or a tolerance given on purpose, is marked on its value.
  const VerifyReport enough = rb.mark(
      "[[answer]]\nstep = \"head0.scores\"\nrow = 0\nvalues = [1.7, 1.7, 1.8, 2.0]\n"
      "[[answer]]\nstep = \"head0.scores\"\ncell = [1, 1]\nvalue = 2\ntolerance = 0.5\n");
  CHECK(enough.ok == 5);
  CHECK(enough.imprecise == 0);
}

TEST_CASE("an exact value needs no decimals: a masked weight written 0, a lone key's 1") {
  const Lesson lesson = find_lesson("causal-decoder");
  const std::unique_ptr<Backend> backend = make_backend("cpu");
  const Trace truth = run_pipeline(lesson, *backend);
  const VerifyReport r = verify_answers(
      lesson, *backend,
      parse_answers("[[answer]]\nstep = \"head0.weights\"\nrow = 0\nvalues = [1, 0, 0]\n", "t",
                    truth));
  CHECK(r.ok == 3);
  CHECK(r.passed());
}

TEST_CASE("a masked score written -1e9 is the mask, with a note, but 0 is not") {
  const Lesson lesson = find_lesson("causal-decoder");
  const std::unique_ptr<Backend> backend = make_backend("cpu");
  const Trace truth = run_pipeline(lesson, *backend);
  const double kept = truth.at("head0.scaled").value(1, 0),
               own = truth.at("head0.scaled").value(1, 1);
  const VerifyReport r =
      verify_answers(lesson, *backend,
                     parse_answers(fmt::format("[[answer]]\nstep = \"head0.masked\"\nrow = 1\n"
                                               "values = [\"{:.4f}\", \"{:.4f}\", -1e9]\n",
                                               kept, own),
                                   "t", truth));
  REQUIRE(r.answers.size() == 1);
  CHECK(r.ok == 3);
  CHECK(r.answers[0].cells[2].note.in(attn::Language::en).find("-1e+09 is accepted as the mask") != std::string::npos);
  const VerifyReport zero = verify_answers(
      lesson, *backend,
      parse_answers("[[answer]]\nstep = \"head0.masked\"\ncell = [1, 2]\nvalue = 0\n", "t", truth));
  CHECK(zero.wrong == 1);
}

TEST_CASE("blank cells: not answered, never ok — a wholly blank answer is a missing step") {
  const Lesson lesson = parse_lesson(R"(
[input]
tokens = ["a", "b"]
X = [[1.0, 0.0], [0.0, 1.0]]
[weights]
W_Q = "identity"
W_K = "identity"
W_V = "identity"
[exercise]
ask = ["scores", "weights"]
answer_decimals = 3
)",
                                     "ex.toml");
  const std::unique_ptr<Backend> backend = make_backend("cpu");
  const Trace truth = run_pipeline(lesson, *backend);
  const VerifyReport r = verify_answers(
      lesson, *backend,
      parse_answers("[[answer]]\nstep = \"scores\"\nvalues = [[\"1.000\", \"\"], "
                    "[\"0.500\", \"1.000\"]]\n"
                    "[[answer]]\nstep = \"weights\"\nvalues = [[\"\", \"\"], [\"\", \"\"]]\n",
                    "t", truth));
  CHECK(r.ok == 2);
  CHECK(r.wrong == 1);  // 0.500 for 0
  CHECK(r.blank == 1);
  REQUIRE(r.answers.size() == 1);  // the blank weights are no answer
  CHECK(r.answers[0].verdict == Verdict::wrong);
  REQUIRE(r.answers[0].cells.size() == 4);
  CHECK(r.answers[0].cells[1].verdict == Verdict::missing);  // [0,1], row by row
  CHECK(r.answers[0].cells[1].given.blank);
  REQUIRE(r.missing.size() == 1);
  CHECK(r.missing[0] == "head0.weights");  // [exercise] ask by short name
  CHECK_FALSE(r.passed());
  // Only blanks left: everything else right still does not pass.
  const VerifyReport almost = verify_answers(
      lesson, *backend,
      parse_answers("[[answer]]\nstep = \"head0.scores\"\nvalues = [[\"1.000\", \"\"], "
                    "[\"0.000\", \"1.000\"]]\n[[answer]]\nstep = \"head0.weights\"\n"
                    "values = [[\"0.670\", \"0.330\"], [\"0.330\", \"0.670\"]]\n",
                    "t", truth));
  CHECK(almost.ok == 7);
  CHECK(almost.blank == 1);
  CHECK(almost.wrong == 0);
  CHECK(almost.answers[0].verdict == Verdict::ok);
  CHECK_FALSE(almost.passed());
}

TEST_CASE("missing: a step the exercise asks that no answer gives") {
  const Lesson lesson = parse_lesson(R"(
[input]
tokens = ["a", "b"]
X = [[1.0, 0.0], [0.0, 1.0]]
[weights]
W_Q = "identity"
W_K = "identity"
W_V = "identity"
[exercise]
ask = ["head0.scores", "head0.weights"]
answer_decimals = 3
)",
                                     "ex.toml");
  CHECK(lesson.answer_decimals == 3);
  const std::unique_ptr<Backend> backend = make_backend("cpu");
  const Trace truth = run_pipeline(lesson, *backend);
  // scores = X·Xᵀ = I; written with the sheet's 3 decimals.
  const VerifyReport r = verify_answers(
      lesson, *backend,
      parse_answers("[[answer]]\nstep = \"head0.scores\"\nvalues = [[\"1.000\", \"0.000\"], "
                    "[\"0.000\", \"1.000\"]]\n",
                    "t", truth));
  CHECK(r.ok == 4);
  REQUIRE(r.missing.size() == 1);
  CHECK(r.missing[0] == "head0.weights");
  CHECK_FALSE(r.passed());
  // Fewer decimals than the sheet asks are imprecise, except for exact values.
  const VerifyReport short_weights = verify_answers(
      lesson, *backend,
      parse_answers("[[answer]]\nstep = \"head0.scores\"\nvalues = [[1, 0], [0, 1]]\n"
                    "[[answer]]\nstep = \"head0.weights\"\nrow = 0\nvalues = [0.67, 0.33]\n",
                    "t", truth));
  CHECK(short_weights.ok == 4);  // 1 and 0 are exact
  // softmax([1, 0] / √2) = [0.6698, 0.3302]: right to 2 decimals, but the sheet asks 3.
  CHECK(short_weights.imprecise == 2);
}

}  // namespace attn

namespace attn {

namespace {

// A lesson of `attn-trace exercise --seed 2026` (3 tokens, d_k = 2: the scale √2), student 1.
struct SheetOne {
  Lesson lesson;
  std::unique_ptr<Backend> backend = make_backend("cpu");
  Trace truth;
  SheetOne() {
    ExerciseSpec spec;
    spec.seed = 2026;
    normalise_spec(spec);
    lesson = generate_exercise(spec, numbered_students(1).at(0)).lesson;
    truth = run_pipeline(lesson, *backend);
  }
  VerifyReport mark(const std::string& toml) {
    return verify_answers(lesson, *backend, parse_answers(toml, "test.toml", truth));
  }
  double at(const char* step, std::size_t r, std::size_t c) const {
    return truth.at(step).value(r, c);
  }
};

std::string cell_answer(const std::string& step, std::size_t r, std::size_t c,
                        const std::string& value) {
  return fmt::format("[[answer]]\nstep = \"{}\"\ncell = [{}, {}]\nvalue = \"{}\"\n", step, r, c,
                     value);
}

// `v` with `d` decimals, moved one unit away from where it rounds: the wrong way.
std::string wrong_way(double v, int d) {
  const double f = std::pow(10.0, d);
  const double r = std::round(v * f) / f;
  return fmt::format("{:.{}f}", r > v ? r - 1 / f : r + 1 / f, d);
}

}  // namespace

TEST_CASE("issue 24: a weight rounded the wrong way, with a score written to 1 decimal, is "
          "named no method mistake on any cell of a sheet") {
  SheetOne s;
  std::size_t cases = 0, method = 0;
  for (std::size_t r = 0; r < 3; ++r)
    for (std::size_t c = 0; c < 3; ++c)
      for (std::size_t k = 0; k < 3; ++k) {
        const double w = s.at("head0.weights", r, c);
        const VerifyReport rep =
            s.mark(cell_answer("head0.scores", r, k, fmt::format("{:.1f}", s.at("head0.scores", r, k))) +
                   cell_answer("head0.weights", r, c, wrong_way(w, 2)));
        const AnswerVerdict& a = rep.answers.at(1);
        ++cases;
        CHECK(a.verdict != Verdict::ok);
        for (const Diagnosis& d : a.cells.at(0).diagnoses) {
          CAPTURE(d.label);
          const CommonMistake* m = find_common_mistake(d.label);
          REQUIRE(m);
          method += !m->explains_noise;
        }
        CHECK_FALSE(rep.passed());
      }
  CHECK(cases == 27);
  CHECK(method == 0);  // before: unscaled, scaled_by_dk or softmax_wrong_axis on some of them
}

TEST_CASE("issue 24: carried only when the learner's earlier numbers differ from the true ones") {
  SheetOne s;
  // A score the sheet's one-decimal inputs make exact, and a weight off by a unit.
  const double score = s.at("head0.scores", 1, 1), w = s.at("head0.weights", 1, 1);
  const std::string exact = fmt::format("{:.4f}", score);
  REQUIRE(std::abs(std::stod(exact) - score) < 1e-9);
  const VerifyReport rep = s.mark(cell_answer("head0.scores", 1, 1, exact) +
                                  cell_answer("head0.weights", 1, 1, wrong_way(w, 3)));
  CHECK(rep.answers.at(0).verdict == Verdict::ok);
  CHECK(rep.answers.at(1).verdict != Verdict::carried);
  CHECK(rep.carried == 0);
  CHECK_FALSE(rep.answers.at(1).cells.at(0).carried_expected);
}

TEST_CASE("issue 24: √2 taken as 1.414 is rounding, named, and fails the page") {
  SheetOne s;
  // Scaled scores to 5 decimals, worked with 1.414: off the truth, not carried
  // (the scores are the true ones), and named rounding of √d_k.
  std::string page;
  std::vector<std::string> row;
  for (std::size_t c = 0; c < 3; ++c) row.push_back(fmt::format("\"{:.4f}\"", s.at("head0.scores", 2, c)));
  page += fmt::format("[[answer]]\nstep = \"head0.scores\"\nrow = 2\nvalues = [{}]\n", fmt::join(row, ", "));
  row.clear();
  for (std::size_t c = 0; c < 3; ++c)
    row.push_back(fmt::format("\"{:.5f}\"", s.at("head0.scores", 2, c) / 1.414));
  page += fmt::format("[[answer]]\nstep = \"head0.scaled\"\nrow = 2\nvalues = [{}]\n", fmt::join(row, ", "));
  const VerifyReport rep = s.mark(page);
  const AnswerVerdict& a = rep.answers.at(1);
  CHECK(rep.carried == 0);
  CHECK(a.verdict == Verdict::rounded);
  REQUIRE(a.diagnosis);
  CHECK(a.diagnosis->label == "rounding");
  CHECK(a.diagnosis->rounded_to == 3);
  CHECK(a.diagnosis->detail.in(Language::en).find("√d_k = 1.41421 rounded to 3 decimals") !=
        std::string::npos);
  CHECK_FALSE(rep.passed());  // rounded: partial credit in mark, not a pass
}

}  // namespace attn

namespace attn {

namespace {

// river-bank's scores to 3 decimals, each cell cut (or rounded) as `cut_at`
// says, [1,1] off by 0.084 when `slip`; and how many cells are cut values.
std::string scores_page(const arma::mat& S, bool slip, const std::function<bool(int, int)>& cut_at,
                        std::size_t& cut_values) {
  std::string page = "[[answer]]\nstep = \"head0.scores\"\nvalues = [";
  cut_values = 0;
  for (int r = 0; r < 4; ++r) {
    page += r ? ", [" : "[";
    for (int c = 0; c < 4; ++c) {
      double v = cut_at(r, c) ? std::trunc(S(r, c) * 1000) / 1000 : std::round(S(r, c) * 1000) / 1000;
      cut_values += std::abs(v - S(r, c)) > written_tolerance(3);
      if (slip && r == 1 && c == 1) v += 0.084;
      page += fmt::format("{}\"{:.3f}\"", c ? ", " : "", v);
    }
    page += "]";
  }
  return page + "]\n";
}

std::string first_label(const AnswerCell& c) {
  return c.diagnoses.empty() ? "" : c.diagnoses.front().label;
}

}  // namespace

TEST_CASE("issue 24: a truncating student's whole matrix with one unrelated slip keeps truncated "
          "under each cut cell, and a lone cut value gets none") {
  RiverBank rb;
  const arma::mat& S = rb.truth.at("head0.scores").value;
  // A cut value that is wrong: further than 3 decimals' tolerance (1.675 for
  // 1.6755 is as right as 1.676).
  auto is_cut = [&](int r, int c) {
    return std::abs(std::trunc(S(r, c) * 1000) / 1000 - S(r, c)) > written_tolerance(3) &&
           !(r == 1 && c == 1);
  };
  std::size_t cut = 0;
  const VerifyReport rep = rb.mark(scores_page(S, true, [](int, int) { return true; }, cut));
  const AnswerVerdict& a = rep.answers.at(0);
  const std::size_t cut_off_slip =
      cut - (std::abs(std::trunc(S(1, 1) * 1000) / 1000 - S(1, 1)) > written_tolerance(3));
  REQUIRE(cut_off_slip >= 2);
  CHECK_FALSE(a.diagnosis);  // no single label explains every wrong value
  std::size_t named = 0;
  for (const AnswerCell& c : a.cells) {
    CAPTURE(c.row);
    CAPTURE(c.col);
    if (c.row == 1 && c.col == 1) {
      CHECK(c.verdict == Verdict::wrong);
      CHECK(first_label(c) != "truncated");
    } else if (is_cut(static_cast<int>(c.row), static_cast<int>(c.col))) {
      CHECK(c.verdict == Verdict::wrong);
      CHECK(first_label(c) == "truncated");
      named += first_label(c) == "truncated";
    } else {
      CHECK(c.verdict == Verdict::ok);
    }
  }
  CHECK(named == cut_off_slip);
  REQUIRE(rep.first_wrong);
  CHECK(rep.wrong == cut_off_slip + 1);

  // The same cut rows given one at a time, without the slip: truncated, as a whole.
  for (int r = 0; r < 4; ++r) {
    std::string row = fmt::format("[[answer]]\nstep = \"head0.scores\"\nrow = {}\nvalues = [", r);
    bool any = false;
    for (int c = 0; c < 4; ++c) {
      row += fmt::format("{}\"{:.3f}\"", c ? ", " : "", std::trunc(S(r, c) * 1000) / 1000);
      any = any || std::abs(std::trunc(S(r, c) * 1000) / 1000 - S(r, c)) > written_tolerance(3);
    }
    const VerifyReport row_report = rb.mark(row + "]\n");
    const AnswerVerdict& one = row_report.answers.at(0);
    if (any) CHECK((one.diagnosis && one.diagnosis->label == "truncated"));
  }

  // One lone cut value among rounded ones, and the slip: no label for it.
  int lone_r = -1, lone_c = -1;
  for (int r = 0; r < 4 && lone_r < 0; ++r)
    for (int c = 0; c < 4 && lone_r < 0; ++c)
      if (is_cut(r, c)) lone_r = r, lone_c = c;
  REQUIRE(lone_r >= 0);
  const VerifyReport lone = rb.mark(
      scores_page(S, true, [&](int r, int c) { return r == lone_r && c == lone_c; }, cut));
  CHECK(cut == 1);
  for (const AnswerCell& c : lone.answers.at(0).cells) {
    CAPTURE(c.row);
    CAPTURE(c.col);
    CHECK(first_label(c) != "truncated");
  }
}

}  // namespace attn
