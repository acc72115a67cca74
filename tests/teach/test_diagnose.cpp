// Each diagnosis label on an instance of that mistake, built on the documents'
// lessons; the mistaken values are computed here by plain loops, not by the tool.
#include <doctest/doctest.h>

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <iterator>
#include <memory>
#include <span>
#include <sstream>
#include <string>

#include "backend/backend.hpp"
#include "core/lesson_library.hpp"
#include "core/pipeline.hpp"
#include "teach/answers.hpp"
#include "teach/verify.hpp"

namespace attn {

namespace {

struct Marked {
  Marked(const char* lesson_id, const std::string& answers_toml)
      : lesson(find_lesson(lesson_id)), truth(run_pipeline(lesson, *backend)) {
    report = verify_answers(lesson, *backend, parse_answers(answers_toml, "test.toml", truth));
  }
  const arma::mat& step(const char* id) const { return truth.at(id).value; }
  Lesson lesson;
  std::unique_ptr<Backend> backend = make_backend("cpu");
  Trace truth;
  VerifyReport report;
};

// A row answer with the values to `decimals`.
std::string row_answer(const char* step, std::size_t row, const std::vector<double>& values,
                       int decimals = 4) {
  std::vector<std::string> items;
  for (double v : values) items.push_back(fmt::format("\"{:.{}f}\"", v, decimals));
  return fmt::format("[[answer]]\nstep = \"{}\"\nrow = {}\nvalues = [{}]\n", step, row,
                     fmt::join(items, ", "));
}

std::vector<double> softmax(std::vector<double> x) {
  double max = -INFINITY, sum = 0;
  for (double v : x) max = std::max(max, v);
  for (double& v : x) sum += (v = std::exp(v - max));
  for (double& v : x) v /= sum;
  return x;
}

std::vector<double> row_of(const arma::mat& M, std::size_t r) {
  std::vector<double> out;
  for (std::size_t c = 0; c < M.n_cols; ++c) out.push_back(M(r, c));
  return out;
}

std::string label_of(const AnswerVerdict& a) {
  return a.diagnosis ? a.diagnosis->label : "none";
}


// One cell's answer, the value to `decimals`.
std::string cell_answer(const char* step, std::size_t row, std::size_t col, double value,
                        int decimals = 4) {
  return fmt::format("[[answer]]\nstep = \"{}\"\ncell = [{}, {}]\nvalue = \"{:.{}f}\"\n", step,
                     row, col, value, decimals);
}

// Every cell of M as one answer each, to `decimals`.
std::string matrix_answers(const char* step, const arma::mat& M, int decimals = 4) {
  std::string out;
  for (std::size_t r = 0; r < M.n_rows; ++r)
    for (std::size_t c = 0; c < M.n_cols; ++c) out += cell_answer(step, r, c, M(r, c), decimals);
  return out;
}

// Whether verify names `label` on any answer of `m`.
bool names(const Marked& m, const char* label) {
  return std::any_of(m.report.answers.begin(), m.report.answers.end(),
                     [&](const AnswerVerdict& a) { return label_of(a) == label; });
}

// Whether every answer of `m` is accepted: ok, or within what rounding explains.
bool all_right(const Marked& m) {
  return std::all_of(m.report.answers.begin(), m.report.answers.end(), [](const AnswerVerdict& a) {
    return a.verdict == Verdict::ok || a.verdict == Verdict::rounded ||
           a.verdict == Verdict::imprecise;
  });
}

}  // namespace

TEST_CASE(
    "arithmetic_slip: document 000 writes K(bank)'s last entry 0.15 + 0.06 + 0.12 + 0.18 = 0.51") {
  const Marked m("river-bank", row_answer("K", 1, {0.66, 0.54, 0.66, 0.51}, 2));
  const AnswerVerdict& a = m.report.answers.at(0);
  CHECK(a.verdict == Verdict::wrong);
  CHECK(label_of(a) == "arithmetic_slip");
  REQUIRE(a.diagnosis);
  // The third product 0.6 × 0.1 = 0.06 came out as 0.12.
  CHECK(a.diagnosis->detail.in(Language::en).find("should be 0.06, not 0.12") != std::string::npos);
  CHECK(a.diagnosis->detail.in(Language::en)
            .find("term 3: used W_K[d1,d3] = 0.2 instead of W_K[d2,d3] = 0.1") !=
        std::string::npos);
  CHECK(a.diagnosis->mistaken_value == doctest::Approx(0.51));
  for (const AnswerCell& c : a.cells)
    if (c.col != 3) CHECK(c.diagnoses.empty());  // right values never get a diagnosis
}

TEST_CASE(
    "no diagnosis for unrelated wrong values: the document's Q(river)·K(walk) ≈ 0.982, "
    "·K(by) ≈ 1.205, ·K(river) = 1.728") {
  const Marked m("river-bank", R"(
[[answer]]
step = "head0.scores"
cell = [0, 2]
value = 0.982
[[answer]]
step = "head0.scores"
cell = [0, 3]
value = 1.205
[[answer]]
step = "head0.scores"
cell = [0, 0]
value = 1.728
)");
  for (const AnswerVerdict& a : m.report.answers) {
    CHECK(a.verdict == Verdict::wrong);
    CHECK(label_of(a) == "none");
    CHECK(a.cells.at(0).diagnoses.empty());
  }
}

TEST_CASE("unscaled: document 000 section 2.3, the 8.5 score not divided by sqrt(64) saturates") {
  Marked probe("why-scale", row_answer("head0.weights", 0, {0.5, 0.5}));
  const std::vector<double> unscaled = softmax(row_of(probe.step("head0.scores"), 0));
  CHECK(unscaled[0] == doctest::Approx(0.9985).epsilon(1e-4));  // the document's "about 0.999"
  const Marked m("why-scale", row_answer("head0.weights", 0, unscaled));
  CHECK(label_of(m.report.answers.at(0)) == "unscaled");
}

TEST_CASE("scaled_by_dk: 8.5 divided by d_k = 64 (the variance of 002 section 2.2), not by 8") {
  const Marked m("why-scale",
                 "[[answer]]\nstep = \"head0.scaled\"\ncell = [0, 0]\nvalue = 0.1328\n");
  const AnswerVerdict& a = m.report.answers.at(0);
  CHECK(a.verdict == Verdict::wrong);
  CHECK(label_of(a) == "scaled_by_dk");
  CHECK(a.diagnosis->mistaken_value == doctest::Approx(8.5 / 64));
}

TEST_CASE(
    "not_transposed: document 003 section 3.1's animal lesson, row 0 of Q times column 1 of K") {
  Marked probe("animal", "[[answer]]\nstep = \"Q\"\ncell = [0, 0]\nvalue = 0.1\n");
  const arma::mat& Q = probe.step("head0.Q");
  const arma::mat& K = probe.step("head0.K");
  double q_times_k = 0;
  for (std::size_t k = 0; k < Q.n_cols; ++k) q_times_k += Q(0, k) * K(k, 1);
  CHECK(q_times_k == doctest::Approx(0.50));
  const Marked m("animal",
                 fmt::format("[[answer]]\nstep = \"head0.scores\"\ncell = [0, 1]\nvalue = "
                             "\"{:.2f}\"\n",
                             q_times_k));
  CHECK(label_of(m.report.answers.at(0)) == "not_transposed");
}

TEST_CASE("the mask mistakes on document 003 section 3.3's causal decoder") {
  Marked probe("causal-decoder", "[[answer]]\nstep = \"Q\"\ncell = [0, 0]\nvalue = 0.3\n");
  const arma::mat& scaled = probe.step("head0.scaled");

  SUBCASE("mask_ignored: softmax of the whole scaled row") {
    const Marked m("causal-decoder", row_answer("head0.weights", 0, softmax(row_of(scaled, 0))));
    CHECK(label_of(m.report.answers.at(0)) == "mask_ignored");
  }
  SUBCASE("mask_after_softmax: the future weight zeroed after the softmax, not renormalised") {
    std::vector<double> w = softmax(row_of(scaled, 1));
    w[2] = 0;
    const Marked m("causal-decoder", row_answer("head0.weights", 1, w));
    const AnswerVerdict& a = m.report.answers.at(0);
    CHECK(label_of(a) == "mask_after_softmax");
    for (const AnswerCell& c : a.cells)
      if (c.col == 2) CHECK(c.verdict == Verdict::ok);  // 0 there is right
  }
  SUBCASE("mask_fill_zero: the belief 002 section 3.1 warns about, masked scores set to 0") {
    const Marked masked("causal-decoder",
                        row_answer("head0.masked", 1, {scaled(1, 0), scaled(1, 1), 0.0}));
    CHECK(label_of(masked.report.answers.at(0)) == "mask_fill_zero");
    CHECK(masked.report.answers.at(0).diagnosis->lesson == "fill-values-zero");
    // Not written down: the weights of row The then give the masked key exp(0).
    const Marked weights("causal-decoder", row_answer("head0.weights", 1,
                                                      softmax({scaled(1, 0), scaled(1, 1), 0.0})));
    CHECK(label_of(weights.report.answers.at(0)) == "mask_fill_zero");
  }
  SUBCASE("wrong_mask_polarity: document 004 section 4.2 passes tril(...) == 0 as the keep mask") {
    // Inverted, query <s> may see only the keys after it: The and animal.
    const std::vector<double> later = softmax({scaled(0, 1), scaled(0, 2)});
    const Marked m("causal-decoder", row_answer("head0.weights", 0, {0.0, later[0], later[1]}) +
                                         row_answer("head0.weights", 1, {0.0, 0.0, 1.0}));
    CHECK(label_of(m.report.answers.at(0)) == "wrong_mask_polarity");
    CHECK(label_of(m.report.answers.at(1)) == "wrong_mask_polarity");
  }
}

TEST_CASE("softmax_wrong_axis: river-bank's weights normalised down the columns") {
  Marked probe("river-bank", "[[answer]]\nstep = \"Q\"\ncell = [0, 0]\nvalue = 0.69\n");
  const arma::mat& masked = probe.step("head0.masked");
  std::vector<double> row0;
  for (std::size_t j = 0; j < masked.n_cols; ++j) {
    std::vector<double> column;
    for (std::size_t i = 0; i < masked.n_rows; ++i) column.push_back(masked(i, j));
    row0.push_back(softmax(column)[0]);
  }
  const Marked m("river-bank", row_answer("head0.weights", 0, row0));
  CHECK(label_of(m.report.answers.at(0)) == "softmax_wrong_axis");
}

TEST_CASE(
    "carried: weights worked from the scaled scores written to 2 decimals, as document 000 "
    "rounds") {
  Marked probe("river-bank", "[[answer]]\nstep = \"Q\"\ncell = [0, 0]\nvalue = 0.69\n");
  std::vector<double> rounded;
  for (double v : row_of(probe.step("head0.scaled"), 0))
    rounded.push_back(std::round(v * 100) / 100);
  const Marked m("river-bank", row_answer("head0.scaled", 0, rounded, 2) +
                                   row_answer("head0.weights", 0, softmax(rounded)));
  CHECK(m.report.answers.at(0).verdict == Verdict::ok);
  const AnswerVerdict& w = m.report.answers.at(1);
  CHECK(w.verdict == Verdict::carried);  // right on the learner's own numbers
  CHECK_FALSE(w.diagnosis);

  // The same rounding, but not written down: right except for rounding too early.
  const Marked unwritten("river-bank", row_answer("head0.weights", 0, softmax(rounded)));
  const AnswerVerdict& u = unwritten.report.answers.at(0);
  CHECK(u.verdict == Verdict::rounded);
  CHECK(label_of(u) == "rounding");
  REQUIRE(u.diagnosis);
  CHECK(u.diagnosis->rounded_to >= 2);
}

TEST_CASE("right answers never get a diagnosis") {
  Marked probe("causal-decoder", "[[answer]]\nstep = \"Q\"\ncell = [0, 0]\nvalue = 0.3\n");
  const Marked m("causal-decoder",
                 row_answer("head0.weights", 1, row_of(probe.step("head0.weights"), 1), 6));
  CHECK(m.report.answers.at(0).verdict == Verdict::ok);
  CHECK_FALSE(m.report.answers.at(0).diagnosis);
  for (const AnswerCell& c : m.report.answers.at(0).cells) CHECK(c.diagnoses.empty());
}

TEST_CASE(
    "two labels fit the same value: the first in precedence order is named, the other "
    "reported") {
  // Row <s> of the causal decoder with the mask ignored: for this first row,
  // ignoring the mask and inverting it differ, but mask_ignored and
  // mask_after_softmax give the same first cell. Only the whole row decides.
  Marked probe("causal-decoder", "[[answer]]\nstep = \"Q\"\ncell = [0, 0]\nvalue = 0.3\n");
  const std::vector<double> unmasked = softmax(row_of(probe.step("head0.scaled"), 0));
  const Marked cell("causal-decoder",
                    fmt::format("[[answer]]\nstep = \"head0.weights\"\ncell = [0, 0]\nvalue = "
                                "\"{:.4f}\"\n",
                                unmasked[0]));
  const AnswerVerdict& a = cell.report.answers.at(0);
  CHECK(label_of(a) == "mask_ignored");
  CHECK(std::find(a.also_fits.begin(), a.also_fits.end(), "mask_after_softmax") !=
        a.also_fits.end());
  const Marked row("causal-decoder", row_answer("head0.weights", 0, unmasked));
  CHECK(label_of(row.report.answers.at(0)) == "mask_ignored");
  CHECK(std::find(row.report.answers.at(0).also_fits.begin(),
                  row.report.answers.at(0).also_fits.end(),
                  "mask_after_softmax") == row.report.answers.at(0).also_fits.end());
}

}  // namespace attn

TEST_CASE("arithmetic_slip: two slips that both give the value are both told") {
  // A student's weights of row 0 to 3 decimals, then context[0,1] with term 2
  // (0.146 × -0.72) left out: 0.403. Reading weights[cat,the] for term 1 gives
  // the same total within what the written weights allow, so both are named.
  const attn::Lesson lesson = attn::parse_lesson(R"(
[model]
d_k = 2
[input]
tokens = ["the", "cat", "sat"]
X = [[0.1, -0.2, 1.0], [0.9, -0.4, 0.5], [-0.1, 0.8, -0.8]]
[weights]
W_Q = [[0.9, 0.7], [-0.4, -0.9], [0.0, 0.7]]
W_K = [[-0.7, 0.0], [1.0, 0.9], [-0.7, -0.6]]
W_V = [[-0.2, -0.3], [0.7, 0.0], [-0.6, -0.9]]
)",
                                                 "slip.toml");
  const std::unique_ptr<attn::Backend> cpu = attn::make_backend("cpu");
  const attn::Trace truth = attn::run_pipeline(lesson, *cpu);
  const attn::VerifyReport r = attn::verify_answers(
      lesson, *cpu,
      attn::parse_answers("[[answer]]\nstep = \"weights\"\nrow = 0\nvalues = [\"0.141\", "
                          "\"0.146\", \"0.713\"]\n[[answer]]\nstep = \"context\"\ncell = [0, 1]\n"
                          "value = \"0.403\"\n",
                          "a.toml", truth));
  REQUIRE(r.answers.size() == 2);
  const attn::AnswerCell& c = r.answers[1].cells.at(0);
  CHECK(c.verdict == attn::Verdict::wrong);
  REQUIRE_FALSE(c.diagnoses.empty());
  CHECK(c.diagnoses.front().label == "arithmetic_slip");
  CHECK(c.diagnoses.front().detail.in(attn::Language::en).find("one of two ways") !=
        std::string::npos);
  CHECK(c.diagnoses.front().detail.in(attn::Language::en).find("term 2 left out") !=
        std::string::npos);
}

TEST_CASE(
    "the catalogue of mistakes: one table, documented row for row in docs/answers-format.md") {
  // The docs' table of labels: its rows after the header, up to the blank line.
  std::ifstream doc(std::string(ATTN_SOURCE_DIR) + "/docs/answers-format.md");
  REQUIRE(doc);
  std::vector<std::vector<std::string>> rows;  // each row's cells, trimmed
  bool in_table = false;
  for (std::string line; std::getline(doc, line);) {
    in_table = in_table || line.starts_with("| label | the mistake |");
    if (in_table && line.empty()) break;
    if (!in_table || !line.starts_with("| `")) continue;
    std::vector<std::string> cells;
    std::istringstream split(line.substr(1));
    for (std::string cell; std::getline(split, cell, '|');)
      cells.push_back(cell.substr(1, cell.size() - 2));
    rows.push_back(cells);
  }
  const std::span<const attn::CommonMistake> mistakes = attn::common_mistakes();
  REQUIRE(rows.size() == mistakes.size());
  for (std::size_t i = 0; i < mistakes.size(); ++i) {
    const attn::CommonMistake& m = mistakes[i];
    CAPTURE(m.label);
    REQUIRE(rows[i].size() == 4);
    CHECK(rows[i][0] == fmt::format("`{}`", m.label));  // in precedence order
    CHECK(rows[i][3] == m.lesson);
    CHECK(attn::find_common_mistake(m.label) == &m);
    CHECK_FALSE(m.why.empty());
    CHECK_NOTHROW(attn::find_lesson(std::string(m.lesson)));
    // A method mistake says how it is made and where it starts; the others are
    // recognised by slips.hpp and by rounding, one entry each.
    const bool method = m.kind == attn::MistakeKind::method;
    const bool written = m.kind == attn::MistakeKind::written;
    CHECK((m.mistaken != nullptr) == method);
    CHECK((m.detail != nullptr) == method);
    CHECK((m.written_as != nullptr) == written);
    CHECK((m.written_detail != nullptr) == written);
    if (method)
      CHECK((m.starts_from == attn::StepKind::projection ||
             m.starts_from == attn::StepKind::scores || m.starts_from == attn::StepKind::scaled ||
             m.starts_from == attn::StepKind::masked || m.starts_from == attn::StepKind::weights ||
             m.starts_from == attn::StepKind::tile || m.starts_from == attn::StepKind::head_slice ||
             m.starts_from == attn::StepKind::linear || m.starts_from == attn::StepKind::gradient));
  }
  CHECK(attn::find_common_mistake("no_such_mistake") == nullptr);

  // README's list of the labels (its "Diagnoses" item): the same, in the same order.
  std::ifstream readme(std::string(ATTN_SOURCE_DIR) + "/README.md");
  REQUIRE(readme);
  const std::string text{std::istreambuf_iterator<char>(readme), std::istreambuf_iterator<char>()};
  const std::size_t from = text.find("**Diagnoses** (JSON labels)");
  REQUIRE(from != std::string::npos);
  const std::size_t to = std::min(text.find("\n- ", from), text.find("\n\n", from));
  std::vector<std::string> listed;
  for (std::size_t open = text.find('`', from); open < to; open = text.find('`', open + 1)) {
    const std::size_t close = text.find('`', open + 1);
    listed.push_back(text.substr(open + 1, close - open - 1));
    open = close;
  }
  std::vector<std::string> labels;
  for (const attn::CommonMistake& m : mistakes) labels.emplace_back(m.label);
  CHECK(listed == labels);
}

namespace attn {

TEST_CASE("truncated: river's weights with their digits cut, worked by plain loops") {
  Marked probe("river-bank", row_answer("head0.weights", 0, {0.25, 0.25, 0.25, 0.25}));
  const std::vector<double> w = softmax(row_of(probe.step("head0.scaled"), 0));
  std::vector<double> cut;
  for (double v : w) cut.push_back(std::trunc(v * 1000) / 1000);
  REQUIRE(std::round(w[0] * 1000) / 1000 != cut[0]);  // 0.2356: cut 0.235, rounded 0.236
  const Marked m("river-bank", row_answer("head0.weights", 0, cut, 3));
  const AnswerVerdict& a = m.report.answers.at(0);
  CHECK(a.verdict == Verdict::wrong);
  CHECK(label_of(a) == "truncated");
  REQUIRE(a.diagnosis);
  CHECK(a.diagnosis->detail.in(Language::en) ==
        "the digits were cut, not rounded: 0.23560 rounds to 0.236, not 0.235");
}

TEST_CASE("exps_as_weights and softmax_of_unscaled: two-heads (√2), worked by plain loops") {
  Marked probe("two-heads", row_answer("head0.weights", 1, {0.3, 0.4, 0.3}));
  std::vector<double> exps;
  for (double s : row_of(probe.step("head0.scaled"), 1)) exps.push_back(std::exp(s));
  const Marked e("two-heads", row_answer("head0.weights", 1, exps, 3));
  CHECK(label_of(e.report.answers.at(0)) == "exps_as_weights");

  // The scaled scores right, the weights the softmax of the unscaled ones.
  const std::vector<double> scaled = row_of(probe.step("head0.scaled"), 1);
  const std::vector<double> unscaled = softmax(row_of(probe.step("head0.scores"), 1));
  const Marked u("two-heads",
                 row_answer("head0.scaled", 1, scaled, 3) + row_answer("head0.weights", 1, unscaled, 3));
  CHECK(u.report.answers.at(0).verdict == Verdict::ok);
  CHECK(label_of(u.report.answers.at(1)) == "softmax_of_unscaled");
}

TEST_CASE("transposed_weights: three-words' Q, K and V as X·Wᵀ, transposed_answer: its scores "
          "written into [col, row]") {
  Marked probe("three-words", row_answer("head0.scores", 0, {0, 0, 0}));
  // three-words' W_Q is 4×3: X·Wᵀ does not exist, so the mistake is not tried.
  REQUIRE(probe.step("W_Q").n_rows == probe.step("W_Q").n_cols + 1);  // 4×3: no X·Wᵀ
  const Marked none("three-words", row_answer("head0.scores", 2, {1, 2, 3}));
  CHECK(label_of(none.report.answers.at(0)) != "transposed_weights");

  // river-bank's W_Q is 4×4: Q = X·W_Qᵀ by plain loops.
  Marked rb("river-bank", row_answer("head0.scores", 0, {0, 0, 0, 0}));
  const arma::mat Q = [&] {
    arma::mat P(4, 4, arma::fill::zeros);
    const arma::mat& Xr = rb.step("X");
    const arma::mat& W = rb.step("W_Q");
    for (std::size_t i = 0; i < 4; ++i)
      for (std::size_t j = 0; j < 4; ++j)
        for (std::size_t k = 0; k < 4; ++k) P(i, j) += Xr(i, k) * W(j, k);
    return P;
  }();
  const Marked q("river-bank", row_answer("Q", 0, row_of(Q, 0), 3));
  CHECK(label_of(q.report.answers.at(0)) == "transposed_weights");

  // The whole scores matrix of river-bank written transposed.
  const arma::mat S = rb.step("head0.scores");
  std::string page = "[[answer]]\nstep = \"head0.scores\"\nvalues = [";
  for (std::size_t r = 0; r < 4; ++r)
    page += fmt::format("[\"{:.3f}\", \"{:.3f}\", \"{:.3f}\", \"{:.3f}\"]{}", S(0, r), S(1, r),
                        S(2, r), S(3, r), r < 3 ? ", " : "]\n");
  const Marked t("river-bank", page);
  CHECK(t.report.answers.at(0).verdict == Verdict::wrong);
  CHECK(label_of(t.report.answers.at(0)) == "transposed_answer");
}


namespace {

// flash-tiles, query block 1 (tokens 2, 3) at key block 1 (keys 2, 3), by
// plain loops from head0.masked and head0.V: ℓ and O with the old ones
// rescaled (right) and not (no_rescale); `round_to` rounds ℓ_0, O_0 and α
// (an honest hand calculation), 0 for none.
struct TileBlock {
  arma::mat l_right, l_wrong, acc_right, acc_wrong;
};

double rounded(double v, int decimals) {
  if (decimals == 0) return v;
  const double f = std::pow(10.0, decimals);
  return std::round(v * f) / f;
}

TileBlock tile1_1(const arma::mat& S, const arma::mat& V, int round_to = 0) {
  TileBlock t{arma::mat(2, 1), arma::mat(2, 1), arma::mat(2, V.n_cols), arma::mat(2, V.n_cols)};
  for (std::size_t r = 0; r < 2; ++r) {
    const std::size_t q = 2 + r;
    const double m0 = std::max(S(q, 0), S(q, 1));
    const double m1 = std::max({m0, S(q, 2), S(q, 3)});
    const double alpha = rounded(std::exp(m0 - m1), round_to);
    double l0 = 0, l1 = 0;
    for (std::size_t j = 0; j < 2; ++j) l0 += std::exp(S(q, j) - m0);
    for (std::size_t j = 2; j < 4; ++j) l1 += std::exp(S(q, j) - m1);
    l0 = rounded(l0, round_to);
    t.l_right(r, 0) = alpha * l0 + l1;
    t.l_wrong(r, 0) = l0 + l1;
    for (std::size_t k = 0; k < V.n_cols; ++k) {
      double o0 = 0, o1 = 0;
      for (std::size_t j = 0; j < 2; ++j) o0 += std::exp(S(q, j) - m0) * V(j, k);
      for (std::size_t j = 2; j < 4; ++j) o1 += std::exp(S(q, j) - m1) * V(j, k);
      o0 = rounded(o0, round_to);
      t.acc_right(r, k) = alpha * o0 + o1;
      t.acc_wrong(r, k) = o0 + o1;
    }
  }
  return t;
}

}  // namespace

TEST_CASE("no_rescale: flash-tiles' ℓ and O at key block 1 added to ℓ_old and O_old unrescaled") {
  const Marked probe("flash-tiles", cell_answer("head0.tile1_1.l", 0, 0, 0.0));
  const TileBlock t = tile1_1(probe.step("head0.masked"), probe.step("head0.V"));
  // Key block 1 raises the max: the two ways differ well beyond rounding.
  REQUIRE(arma::abs(t.l_wrong - t.l_right).max() > 0.05);
  CHECK(arma::approx_equal(t.l_right, probe.step("head0.tile1_1.l"), "absdiff", 1e-9));
  CHECK(arma::approx_equal(t.acc_right, probe.step("head0.tile1_1.acc"), "absdiff", 1e-9));
  const Marked l("flash-tiles", matrix_answers("head0.tile1_1.l", t.l_wrong));
  for (const AnswerVerdict& a : l.report.answers)
    if (a.verdict == Verdict::wrong) CHECK(label_of(a) == "no_rescale");
  CHECK(names(l, "no_rescale"));
  const Marked acc("flash-tiles", matrix_answers("head0.tile1_1.acc", t.acc_wrong));
  CHECK(names(acc, "no_rescale"));
  // The right values, and the right ones from ℓ_0, O_0 and α rounded to 3 decimals.
  for (const TileBlock& honest : {t, tile1_1(probe.step("head0.masked"), probe.step("head0.V"), 3)}) {
    const Marked right("flash-tiles", matrix_answers("head0.tile1_1.l", honest.l_right, 2) +
                                          matrix_answers("head0.tile1_1.acc", honest.acc_right, 2));
    CHECK(all_right(right));
    CHECK_FALSE(names(right, "no_rescale"));
  }
  // Key block 0 has no old values: nothing to rescale, so nothing to name.
  const Marked first("flash-tiles", matrix_answers("head0.tile1_0.l", probe.step("head0.tile1_0.l")));
  CHECK(all_right(first));
}

TEST_CASE("wrong_kv_head: gqa-kv-heads' head 1 slices K/V head 1 mod 2 = 1, not ⌊1 / 2⌋ = 0") {
  const Marked probe("gqa-kv-heads", cell_answer("head1.K", 0, 0, 0.0));
  const arma::mat &K = probe.step("K"), &V = probe.step("V");
  const std::size_t d_k = probe.step("head1.K").n_cols, d_v = probe.step("head1.V").n_cols;
  // Query head h of 4 reads K/V head h / 2; taken in turn it would read h mod 2.
  for (const int h : {1, 2}) {
    arma::mat wrong_K(K.n_rows, d_k), wrong_V(V.n_rows, d_v);
    const std::size_t taken = static_cast<std::size_t>(h) % 2;
    for (std::size_t r = 0; r < K.n_rows; ++r) {
      for (std::size_t c = 0; c < d_k; ++c) wrong_K(r, c) = K(r, taken * d_k + c);
      for (std::size_t c = 0; c < d_v; ++c) wrong_V(r, c) = V(r, taken * d_v + c);
    }
    const std::string k_id = fmt::format("head{}.K", h), v_id = fmt::format("head{}.V", h);
    REQUIRE(arma::abs(wrong_K - probe.step(k_id.c_str())).max() > 0.05);
    const Marked m("gqa-kv-heads", matrix_answers(k_id.c_str(), wrong_K) +
                                       matrix_answers(v_id.c_str(), wrong_V));
    for (const AnswerVerdict& a : m.report.answers)
      if (a.verdict == Verdict::wrong) CHECK(label_of(a) == "wrong_kv_head");
    CHECK(names(m, "wrong_kv_head"));
    const Marked right("gqa-kv-heads", matrix_answers(k_id.c_str(), probe.step(k_id.c_str()), 2));
    CHECK(all_right(right));
    CHECK_FALSE(names(right, "wrong_kv_head"));
  }
}

TEST_CASE("phi_not_applied: linear-attention's kv computed as Kᵀ·V, not φ(K)ᵀ·V") {
  const Marked probe("linear-attention", cell_answer("head0.kv", 0, 0, 0.0));
  const arma::mat &K = probe.step("head0.K"), &V = probe.step("head0.V");
  arma::mat wrong(K.n_cols, V.n_cols, arma::fill::zeros), right(K.n_cols, V.n_cols, arma::fill::zeros);
  for (std::size_t p = 0; p < K.n_cols; ++p)
    for (std::size_t q = 0; q < V.n_cols; ++q)
      for (std::size_t t = 0; t < K.n_rows; ++t) {
        const double k = K(t, p), phi = k > 0 ? k + 1 : std::exp(k);
        wrong(p, q) += k * V(t, q);
        right(p, q) += rounded(phi, 3) * V(t, q);  // φ(K) rounded to 3 decimals: honest
      }
  REQUIRE(arma::abs(wrong - probe.step("head0.kv")).max() > 0.05);
  const Marked m("linear-attention", matrix_answers("head0.kv", wrong));
  for (const AnswerVerdict& a : m.report.answers)
    if (a.verdict == Verdict::wrong) CHECK(label_of(a) == "phi_not_applied");
  CHECK(names(m, "phi_not_applied"));
  for (const arma::mat& honest : {probe.step("head0.kv"), right}) {
    const Marked r("linear-attention", matrix_answers("head0.kv", honest, 2));
    CHECK(all_right(r));
    CHECK_FALSE(names(r, "phi_not_applied"));
  }
}

}  // namespace attn
