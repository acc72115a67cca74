// Tests of the practice engine (teach/practice.hpp): the cells it asks, its
// marks against verify on the file it saves, the hint ladder's numbers, back,
// skip and restoring a saved session.
#include <doctest/doctest.h>
#include <fmt/format.h>

#include <map>
#include <memory>

#include "backend/backend.hpp"
#include "core/error.hpp"
#include "core/lesson_library.hpp"
#include "core/pipeline.hpp"
#include "render/render.hpp"
#include "teach/answers.hpp"
#include "teach/practice.hpp"
#include "teach/verify.hpp"

namespace attn {

namespace {

struct Fixture {
  explicit Fixture(const std::string& id) : lesson(find_lesson(id)) {}
  Lesson lesson;
  std::unique_ptr<Backend> backend = make_backend("cpu");
};

// `v` written with `decimals` decimals, as a learner types it.
std::string typed(double v, int decimals = 4) {
  return fmt::format("{:.{}f}", v, decimals);
}

double true_value(const PracticeSession& s, const PracticeCell& c) {
  return s.truth().at(c.step).value(c.row, c.col);
}

}  // namespace

TEST_CASE("practice: each step's cells include a masked cell, a diagonal cell and row sums") {
  Fixture f("causal-decoder");
  PracticeSession s(f.lesson, *f.backend,
                    {.steps = {"head0.masked", "head0.row_sum", "head0.weights"}, .cells = 2});
  const Trace& t = s.truth();
  std::map<std::string, std::vector<PracticeCell>> by_step;
  for (const PracticeRecord& r : s.records()) by_step[r.cell.step].push_back(r.cell);
  REQUIRE(by_step.size() == 3);
  for (const std::string step : {"head0.masked", "head0.weights"}) {
    const std::vector<PracticeCell>& cells = by_step[step];
    REQUIRE(cells.size() == 2);
    CHECK(std::any_of(cells.begin(), cells.end(),
                      [&](const PracticeCell& c) { return t.mask(c.row, c.col) != 0u; }));
    CHECK(std::any_of(cells.begin(), cells.end(),
                      [](const PracticeCell& c) { return c.row == c.col; }));
  }
  // causal: <s> may not see "The": [0, 1] is the first masked cell; -inf, weight 0.
  CHECK(by_step["head0.masked"][0] == PracticeCell{"head0.masked", 0, 1});
  CHECK(std::isinf(true_value(s, by_step["head0.masked"][0])));
  CHECK(true_value(s, by_step["head0.weights"][0]) == 0.0);
  // A row sum is a cell of head0.row_sum, one column.
  for (const PracticeCell& c : by_step["head0.row_sum"]) CHECK(c.col == 0);
  // In trace order, each step's cells row by row.
  CHECK(s.records()[0].cell.step == "head0.masked");
  CHECK(s.records()[2].cell.step == "head0.row_sum");
  CHECK(s.records()[4].cell.step == "head0.weights");
  CHECK(cell_name(t, s.records()[0].cell) == "head0.masked[<s>, The]");
}

TEST_CASE("practice: the default steps are the computed ones but copies, a given step is refused") {
  Fixture f("river-bank");
  PracticeSession s(f.lesson, *f.backend, {});
  std::vector<std::string> ids;
  for (const Step* step : s.steps()) ids.push_back(step->id);
  // head0.masked is left out: river-bank masks nothing, so it equals head0.scaled.
  CHECK(ids == std::vector<std::string>{"Q", "K", "V", "head0.scores", "head0.scaled",
                                        "head0.exp", "head0.row_sum", "head0.weights",
                                        "head0.context"});
  CHECK(s.records().size() == 3 * ids.size());  // 3 a step (row_sum has 4 rows)
  // raw-similarity: identity weights (Q = K = V = X) and no scaling (scale = "none").
  Fixture raw("raw-similarity");
  PracticeSession r(raw.lesson, *raw.backend, {});
  ids.clear();
  for (const Step* step : r.steps()) ids.push_back(step->id);
  CHECK(ids == std::vector<std::string>{"head0.scores", "head0.exp", "head0.row_sum",
                                        "head0.weights", "head0.context"});
  // A causal lesson's mask is asked.
  Fixture causal("causal-decoder");
  PracticeSession c(causal.lesson, *causal.backend, {});
  CHECK(std::any_of(c.steps().begin(), c.steps().end(),
                    [](const Step* step) { return step->id == "head0.masked"; }));
  CHECK_THROWS_WITH_AS(PracticeSession(f.lesson, *f.backend, {.steps = {"W_Q"}}),
                       doctest::Contains("the lesson gives W_Q"), InputError);
  CHECK_THROWS_WITH_AS(PracticeSession(f.lesson, *f.backend, {.steps = {"head0.score"}}),
                       doctest::Contains("head0.scores"), InputError);
}

TEST_CASE("practice: a scripted learner's marks equal verify on the saved answers file") {
  Fixture f("river-bank");
  PracticeSession s(f.lesson, *f.backend,
                    {.steps = {"head0.scores", "head0.scaled", "head0.weights"}, .cells = 2});
  std::map<std::string, Verdict> printed;
  std::vector<std::string> mistakes;
  bool weights_asked = false;
  for (int guard = 0; !s.finished() && guard < 100; ++guard) {
    const PracticeCell c = s.current().cell;
    const double truth = true_value(s, c);
    std::string answer = typed(truth);
    // The first scaled cell: the scale forgotten; a weight rounded to 1 decimal.
    if (c.step == "head0.scaled" && !s.current().first_verdict && mistakes.empty())
      answer = typed(s.truth().at("head0.scores").value(c.row, c.col));
    if (c.step == "head0.weights" && !weights_asked) answer = typed(truth, 1);
    weights_asked = weights_asked || c.step == "head0.weights";
    const CellMark m = s.answer(answer);
    CHECK(m.asked == c);
    printed[cell_name(s.truth(), c)] = m.cell.verdict;
    if (m.diagnosis) mistakes.push_back(m.diagnosis->label);
    if (m.cell.verdict == Verdict::wrong) {
      CHECK(s.current().cell == c);  // stays: try again
      printed[cell_name(s.truth(), c)] = s.answer(typed(truth)).cell.verdict;
    }
  }
  REQUIRE(!mistakes.empty());
  CHECK(mistakes[0] == "unscaled");
  // The named mistake asked one more cell of head0.scaled.
  std::size_t scaled = 0, follow_ups = 0;
  for (const PracticeRecord& r : s.records()) {
    scaled += r.cell.step == "head0.scaled";
    follow_ups += r.follow_up;
  }
  CHECK(scaled == 3);
  CHECK(follow_ups == 1);

  const std::string file = s.answers_toml();
  const VerifyReport report =
      verify_answers(f.lesson, *f.backend, parse_answers(file, "saved.toml", s.truth()));
  REQUIRE(report.answers.size() == printed.size());
  for (const AnswerVerdict& v : report.answers) {
    const std::string name =
        cell_name(s.truth(), {v.answer.step, v.answer.where.row, v.answer.where.col});
    CHECK_MESSAGE(printed.at(name) == v.cells.at(0).verdict, name);
  }
  const PracticeSummary sum = s.summary();
  CHECK(sum.asked == 7);
  CHECK(sum.answered == 7);
  CHECK(sum.right_first == 5);  // the unscaled cell and the weight with 1 decimal are not
  REQUIRE(sum.mistakes.size() == 1);
  CHECK(sum.mistakes[0].label == "unscaled");
  CHECK(sum.mistakes[0].lesson == "why-scale");
  CHECK(sum.report.wrong == report.wrong);
  CHECK(sum.report.ok == report.ok);
  CHECK(file.find("\n# practice: finished\n") != std::string::npos);
  CHECK(PracticeSession::saved_finished(file));
}

TEST_CASE("practice: the hint ladder: formula with your numbers, the terms, the worked value") {
  Fixture f("river-bank");
  PracticeSession s(f.lesson, *f.backend, {.steps = {"K", "head0.scores"}, .cells = 3});
  // Answer K's cells with bank's d0 off by 0.1, then ask hints on a score.
  std::map<std::pair<std::size_t, std::size_t>, double> mine;
  for (int guard = 0; guard < 100 && s.current().cell.step == "K"; ++guard) {
    const PracticeCell c = s.current().cell;
    const double v = true_value(s, c) + (c.row == 1 && c.col == 0 ? 0.1 : 0.0);
    mine[{c.row, c.col}] = v;
    // A wrong answer stays asked: skipped, it is kept.
    if (s.answer(typed(v, 2)).cell.verdict == Verdict::wrong) s.skip();
  }
  // Move to head0.scores[river, bank] (row 0, col 1), or the first score asked.
  const PracticeCell c = s.current().cell;
  REQUIRE(c.step == "head0.scores");
  const Trace& t = s.truth();
  arma::mat K = t.at("K").value;
  for (const auto& [rc, v] : mine) K(rc.first, rc.second) = std::stod(typed(v, 2));
  const arma::mat& Q = t.at("Q").value;
  double own = 0;
  std::vector<std::string> products;
  for (std::size_t k = 0; k < Q.n_cols; ++k) {
    own += Q(c.row, k) * K(c.col, k);
    products.push_back(format_by_hand(Q(c.row, k) * K(c.col, k), 4));
  }

  const Hint h1 = s.hint();
  CHECK(h1.rung == 1);
  CHECK(h1.text.find("S₀ = Q₀·K₀ᵀ") != std::string::npos);
  const std::string first_term =
      fmt::format("{}×{}", format_by_hand(Q(c.row, 0), 4), format_by_hand(K(c.col, 0), 4));
  CHECK_MESSAGE(h1.text.find(first_term) != std::string::npos, h1.text);
  CHECK(h1.text.find(format_by_hand(own, 4)) == std::string::npos);  // not the value yet

  const Hint h2 = s.hint();
  CHECK(h2.rung == 2);
  CHECK_MESSAGE(h2.text.find(fmt::format("{}", fmt::join(products, " + "))) != std::string::npos,
                h2.text);

  const Hint h3 = s.hint();
  CHECK(h3.rung == 3);
  CHECK_MESSAGE(h3.text.find("= " + format_by_hand(own, 4)) != std::string::npos, h3.text);
  if (c.col == 1)  // bank's key differs from the truth: the true working follows
    CHECK(h3.text.find(format_by_hand(t.at("head0.scores").value(c.row, c.col), 4)) !=
          std::string::npos);
  CHECK(s.hint().rung == 3);  // the third again
  CHECK(s.current().hints == 3);
  CHECK(s.answers_toml().find(fmt::format("# practice: head0.scores[{}, {}] · pending · hints 3",
                                          c.row, c.col)) != std::string::npos);
}

TEST_CASE("practice: a typed answer that is not a number changes nothing") {
  Fixture f("river-bank");
  PracticeSession s(f.lesson, *f.backend, {.steps = {"head0.scores"}});
  const std::string before = s.answers_toml();
  for (const char* bad : {"abc", "1,5", "1\"\nstep = \"X", "", "--1", "1e"})
    CHECK_THROWS_WITH_AS(s.answer(bad), doctest::Contains("is not a number"), InputError);
  CHECK(s.answers_toml() == before);
  CHECK(s.position() == 0);
  // Decimals as typed: "1.70" stays 1.70 (a TOML number keeps them), "1." is quoted.
  s.answer("1.6787");
  CHECK(s.answers_toml().find("value = 1.6787\n") != std::string::npos);
}

TEST_CASE("practice: back, skip and a restored session go on where the learner stopped") {
  Fixture f("river-bank");
  const PracticeOptions options{.steps = {"head0.scaled", "head0.weights"}, .cells = 2};
  PracticeSession s(f.lesson, *f.backend, options);
  CHECK(!s.back());
  s.answer(typed(true_value(s, s.current().cell)));
  CHECK(s.position() == 1);
  CHECK(s.back());
  CHECK(s.position() == 0);
  // Answered again: one [[answer]] for the cell, with the new value.
  s.answer(typed(true_value(s, s.current().cell), 3));
  CHECK(s.position() == 1);
  s.skip();
  CHECK(s.records()[1].state == CellState::skipped);
  s.hint();
  const std::string saved = s.answers_toml();
  CHECK(saved.find("[[answer]]") == saved.rfind("[[answer]]"));
  CHECK(saved.find(" · skipped · hints 0") != std::string::npos);

  PracticeSession again(f.lesson, *f.backend, {});
  again.restore(saved, "saved.toml");
  CHECK(again.position() == s.position());
  CHECK(again.records().size() == s.records().size());
  CHECK(again.options().steps == options.steps);
  CHECK(again.options().cells == 2);
  CHECK(again.current().hints == 1);
  CHECK(again.answers_toml() == saved);
  CHECK(!PracticeSession::saved_finished(saved));

  // A hand-edited file that no longer fits is refused, naming it.
  std::string edited = saved;
  edited.replace(edited.find("cell = ["), 9, "cell = [3");
  PracticeSession third(f.lesson, *f.backend, {});
  CHECK_THROWS_WITH_AS(third.restore(edited, "saved.toml"), doctest::Contains("--restart"),
                       InputError);
}

namespace {

// backward-by-hand with a causal mask and an upstream gradient in every cell,
// so that grad.head0.masked has masked cells and every row sends something back.
Lesson causal_backward() {
  std::string toml = embedded_lesson("backward-by-hand").text;
  toml.replace(toml.find("[model]\nheads = 1"), 17, "[model]\nheads = 1\ncausal = true");
  toml.replace(toml.find("upstream = ["), toml.find("jacobian_row") - toml.find("upstream = ["),
               "upstream = [[0.9, -0.6, 0.3], [-0.4, 0.8, 0.5], [0.6, 0.2, -0.9]]\n");
  return parse_lesson(toml, "causal-backward.toml");
}

}  // namespace

TEST_CASE("practice: gradient steps, their masked cells not asked, the diagonal-only Jacobian named") {
  const Lesson lesson = causal_backward();
  const std::unique_ptr<Backend> cpu = make_backend("cpu");
  PracticeSession s(lesson, *cpu,
                    {.steps = {"grad.head0.weights", "grad.head0.masked", "grad.head0.scaled"},
                     .cells = 6});
  const Trace& t = s.truth();
  std::map<std::string, std::size_t> asked;
  for (const PracticeRecord& r : s.records()) {
    CHECK(t.mask(r.cell.row, r.cell.col) == 0u);  // a masked cell's gradient is 0: not asked
    ++asked[r.cell.step];
  }
  CHECK(asked["grad.head0.masked"] == 6);  // the 6 open cells of a causal 3 × 3
  CHECK(asked["grad.head0.weights"] == 6);
  // The learner: grad.weights right, grad.masked from the Jacobian's diagonal
  // alone, A(1 − A)·dA (plain loops), then the scaled step on their own numbers.
  const arma::mat &A = t.at("head0.weights").value, &dA = t.at("grad.head0.weights").value;
  std::vector<std::string> named;
  std::map<std::pair<std::size_t, std::size_t>, std::string> mine;
  for (int guard = 0; !s.finished() && guard < 100; ++guard) {
    const PracticeCell c = s.current().cell;
    double v = true_value(s, c);
    if (c.step != "grad.head0.weights")
      v = A(c.row, c.col) * (1 - A(c.row, c.col)) * dA(c.row, c.col);
    if (c.step == "grad.head0.masked") mine[{c.row, c.col}] = typed(v);
    if (c.step == "grad.head0.scaled" && mine.count({c.row, c.col})) v = std::stod(mine[{c.row, c.col}]);
    const CellMark m = s.answer(typed(v));
    if (m.diagnosis) named.push_back(m.diagnosis->label);
    // Wrong where the diagonal alone differs (not row 0: one open key, A = 1, both 0).
    const bool wrong = c.step == "grad.head0.masked" && std::abs(v - true_value(s, c)) > 1e-3;
    CHECK_MESSAGE((m.cell.verdict == Verdict::wrong) == wrong, c.step, " ", c.row, ",", c.col);
    if (m.cell.verdict == Verdict::wrong) s.skip();
  }
  REQUIRE(!named.empty());
  CHECK(named.front() == "softmax_grad_diagonal");
}

TEST_CASE("practice: the default steps of a backward lesson, and hints on a gradient cell") {
  Fixture f("backward-by-hand");
  PracticeSession s(f.lesson, *f.backend, {.steps = {}, .cells = 1});
  std::vector<std::string> ids;
  for (const Step* step : s.steps())
    if (step->step_id.is_gradient() || step->kind == StepKind::jacobian ||
        step->id.starts_with("grad."))
      ids.push_back(step->id);
  // In the order the way back meets them (V, K, Q: the reverse of the forward
  // pass). grad.concat is given, grad.head0.context and grad.Q/K/V copy with
  // one head, grad.head0.scaled copies grad.head0.masked with nothing masked.
  const std::vector<std::string> want = {
      "grad.head0.weights", "grad.head0.row_dot", "grad.head0.jacobian", "grad.head0.masked",
      "grad.head0.scores",  "grad.head0.V",       "grad.head0.K",        "grad.head0.Q",
      "grad.W_V",           "grad.W_K",           "grad.W_Q",            "grad.X"};
  CHECK_MESSAGE(ids == want, fmt::format("{}", fmt::join(ids, " ")));
  PracticeSession h(f.lesson, *f.backend, {.steps = {"grad.head0.masked"}, .cells = 1});
  const PracticeCell c = h.current().cell;
  const Trace& t = h.truth();
  const Hint h1 = h.hint(), h2 = h.hint(), h3 = h.hint();
  CHECK(h1.rung == 1);
  CHECK(h3.rung == 3);
  CHECK_MESSAGE(h3.text.find(format_by_hand(t.at(c.step).value(c.row, c.col), 4)) !=
                    std::string::npos,
                h3.text);
  // Rung 2 names the cell's terms: dA and D of its row.
  CHECK_MESSAGE(h2.text.find(format_by_hand(t.at("grad.head0.row_dot").value(c.row, 0), 4)) !=
                    std::string::npos,
                h2.text);
}

TEST_CASE("practice: a hint's numbers keep 3 significant digits, so a learner who multiplies "
          "them out is right") {
  Fixture f("backward-by-hand");
  // grad.head0.scores = grad.head0.scaled / √3: the small cells, -0.0086 / 1.732 = -0.0049.
  PracticeSession s(f.lesson, *f.backend, {.steps = {"grad.head0.scores"}, .cells = 3});
  const Trace& t = s.truth();
  for (int guard = 0; !s.finished() && guard < 10; ++guard) {
    const PracticeCell c = s.current().cell;
    s.hint();
    s.hint();
    const Hint h3 = s.hint();
    // "… = 0.57735 × (-0.00857) = -0.00495": the two factors as the hint writes them.
    const std::string text = h3.text.substr(h3.text.find(" = ", h3.text.find("] = ") + 4) + 3);
    const double a = std::stod(text), b = std::stod(text.substr(text.find('(') + 1));
    const double g = t.at("grad.head0.scaled").value(c.row, c.col);
    CAPTURE(h3.text);
    if (std::abs(g) < 1e-12) {  // a zero cell: nothing to multiply
      s.skip();
      continue;
    }
    CHECK(std::abs(b - g) <= 5e-3 * std::abs(g));  // 3 significant digits at least
    const CellMark m = s.answer(fmt::format("{:.4f}", a * b));
    CHECK(m.cell.verdict == Verdict::ok);
    if (m.cell.verdict != Verdict::ok) s.skip();
  }
}

}  // namespace attn
