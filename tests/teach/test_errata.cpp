// The errata: claims against the trace, on the documents' own worked
// examples, with the cause named when one term or one input explains it.
#include <doctest/doctest.h>

#include <cmath>

#include "backend/cpu_backend.hpp"
#include "core/error.hpp"
#include "core/lesson_library.hpp"
#include "core/pipeline.hpp"
#include "teach/errata.hpp"

namespace {

struct Checked {
  attn::Lesson lesson;
  attn::Trace trace;
  std::vector<attn::ClaimVerdict> claims;
};

Checked check(const attn::Lesson& lesson) {
  attn::CpuBackend cpu;
  Checked out{lesson, attn::run_pipeline(lesson, cpu), {}};
  out.claims = attn::check_claims(out.lesson, out.trace);
  return out;
}

const attn::ClaimVerdict& claim_on(const Checked& c, const std::string& step, std::size_t row,
                                   std::size_t col) {
  for (const attn::ClaimVerdict& v : c.claims)
    for (const attn::ClaimCell& cell : v.cells)
      if (v.claim.step == step && cell.row == row && cell.col == col) return v;
  FAIL("no claim on " << step << " [" << row << ", " << col << "]");
  throw std::logic_error("unreachable");
}

const attn::ClaimCell& cell_of(const attn::ClaimVerdict& v, std::size_t row, std::size_t col) {
  for (const attn::ClaimCell& cell : v.cells)
    if (cell.row == row && cell.col == col) return cell;
  throw std::logic_error("no such cell");
}

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

}  // namespace

TEST_CASE("river-bank: K(bank)'s last entry is wrong because its third factor was misread") {
  const Checked c = check(attn::find_lesson("river-bank"));
  const attn::ClaimVerdict& k = claim_on(c, "K", 1, 3);
  CHECK(k.status() == attn::ClaimStatus::disagrees);
  for (std::size_t col = 0; col < 3; ++col) CHECK(cell_of(k, 1, col).agrees());
  const attn::ClaimCell& last = cell_of(k, 1, 3);
  CHECK(last.status == attn::CellStatus::slip);
  CHECK_FALSE(last.own.has_value());  // nothing the document states feeds K
  CHECK(last.stated.value == 0.51);
  CHECK(last.computed == doctest::Approx(0.45).epsilon(1e-12));
  CHECK(last.tolerance == doctest::Approx(0.005));
  REQUIRE(last.arithmetic.has_value());
  CHECK(last.arithmetic->terms[2].product() == doctest::Approx(0.06));
  CHECK(contains(last.explanation, "0.5×0.3 + 0.3×0.2 + 0.6×0.1 + 0.2×0.9"));
  // The document wrote the factor 0.6×0.2 (W_K[2][3] is 0.1); its product 0.12 is right for it.
  CHECK(contains(last.explanation, "W_K[d2,d3] written 0.2 (true 0.1; = W_K[d1,d3], another row)"));
  CHECK(contains(last.explanation, "that one value explains the whole difference"));
  CHECK_FALSE(contains(last.explanation, "term 3 written 0.12"));
  CHECK_FALSE(contains(last.explanation, "term 2:"));  // ruled out by what the document wrote
  // The same explanation in Chinese (check --lang zh), with the same cells and numbers.
  CHECK(contains(last.explanation_zh, "0.5×0.3 + 0.3×0.2 + 0.6×0.1 + 0.2×0.9"));
  CHECK(contains(last.explanation_zh,
                 "按文中所写：W_K[d2,d3] 写成了 0.2（应为 0.1；这个值是另一行的 W_K[d1,d3]）；"
                 "这一个值就解释了全部差值"));
  CHECK(last.explanation_in(attn::Language::en) == last.explanation);
}

TEST_CASE("river-bank: Q(river)·K(bank) = 1.727 is carried from the document's own K(bank)") {
  const Checked c = check(attn::find_lesson("river-bank"));
  const attn::ClaimVerdict& v = claim_on(c, "head0.scores", 0, 1);
  CHECK(v.status() == attn::ClaimStatus::carried);
  const attn::ClaimCell& cell = cell_of(v, 0, 1);
  CHECK(cell.status == attn::CellStatus::carried);
  CHECK(cell.computed == doctest::Approx(1.6755).epsilon(1e-12));
  REQUIRE(cell.own.has_value());
  // 0.69×0.66 + 0.50×0.54 + 0.86×0.66 + 0.85×0.51, its own Q(river) and K(bank)
  CHECK(cell.own->value == doctest::Approx(1.7265).epsilon(1e-12));
  REQUIRE(cell.own->used.size() == 1);
  CHECK(cell.own->used[0].text(attn::Language::en) == "K[bank,d3] = 0.51 (true 0.45)");
  CHECK(contains(cell.explanation, "carried: right on the document's own K[bank,d3] = 0.51"));
}

TEST_CASE("river-bank: the written river·river sum used a key row that is not K(river)") {
  const Checked c = check(attn::find_lesson("river-bank"));
  const attn::ClaimCell& cell = cell_of(claim_on(c, "head0.scores", 0, 0), 0, 0);
  CHECK(cell.status == attn::CellStatus::slip);
  CHECK(cell.computed == doctest::Approx(1.6787).epsilon(1e-12));
  CHECK(
      contains(cell.explanation, "head0.K[river,d0] written 0.69 (true 0.73; = head0.Q[river,d0]"));
  CHECK(contains(cell.explanation,
                 "head0.K[river,d3] written 0.51 (true 0.38; = the document's own K[bank,d3])"));
  // Its written products, 0.476 + 0.25 + 0.568 + 0.434, add up to its 1.728: the
  // slip is the key row alone, not the addition.
  CHECK_FALSE(contains(cell.explanation, "add up to"));
  CHECK_FALSE(contains(cell.explanation, "term 4 written"));
}

TEST_CASE("river-bank: 7 of the 8 scaled and exp values are carried, e^0.8635 is a real slip") {
  const Checked c = check(attn::find_lesson("river-bank"));
  const double scores[] = {1.728, 1.727, 0.982, 1.205};  // the document's own
  const attn::ClaimVerdict& scaled = claim_on(c, "head0.scaled", 0, 1);
  CHECK(scaled.status() == attn::ClaimStatus::carried);
  for (std::size_t j = 0; j < 4; ++j) {
    CAPTURE(j);
    const attn::ClaimCell& cell = cell_of(scaled, 0, j);
    CHECK(cell.status == attn::CellStatus::carried);
    REQUIRE(cell.own.has_value());
    CHECK(cell.own->value == doctest::Approx(scores[j] / 2).epsilon(1e-12));
  }
  CHECK(contains(cell_of(scaled, 0, 1).explanation, "head0.scores[river,bank] = 1.727"));
  CHECK(contains(cell_of(scaled, 0, 1).explanation, "1.727 / 2 = 0.8635"));

  const attn::ClaimVerdict& exp = claim_on(c, "head0.exp", 0, 0);
  CHECK(exp.status() == attn::ClaimStatus::disagrees);
  const double stated_scaled[] = {0.864, 0.8635, 0.491, 0.6025};
  for (std::size_t j = 0; j < 4; ++j) {
    CAPTURE(j);
    const attn::ClaimCell& cell = cell_of(exp, 0, j);
    CHECK(cell.computed == doctest::Approx(std::exp(c.trace.at("head0.scaled").value(0, j))));
    REQUIRE(cell.own.has_value());
    CHECK(cell.own->value == doctest::Approx(std::exp(stated_scaled[j])).epsilon(1e-12));
    CHECK(cell.status == (j == 1 ? attn::CellStatus::slip : attn::CellStatus::carried));
  }
  const attn::ClaimCell& slip = cell_of(exp, 0, 1);
  CHECK(slip.own->value == doctest::Approx(2.371446).epsilon(1e-6));  // written 2.372
  CHECK(contains(slip.explanation,
                 "a real slip: on the document's own head0.scaled[river,bank] = 0.8635"));
  CHECK(contains(slip.explanation, "e^0.8635 = 2.37145, not 2.372"));
  CHECK_FALSE(contains(slip.explanation, "off by"));
  CHECK(claim_on(c, "Q", 0, 0).agrees());
}

TEST_CASE("river-bank: the counts, claim by claim and number by number") {
  const Checked c = check(attn::find_lesson("river-bank"));
  std::size_t claims[3] = {}, cells[3] = {};
  for (const attn::ClaimVerdict& v : c.claims) {
    ++claims[static_cast<int>(v.status())];
    for (const attn::ClaimCell& cell : v.cells) ++cells[static_cast<int>(cell.status)];
  }
  // agrees: Q(river); carried: river·bank and the scaled row; the rest have a real slip.
  CHECK(claims[0] == 1);
  CHECK(claims[1] == 2);
  CHECK(claims[2] == 8);
  // Numbers: 4 + 3 agree (Q, K(bank)'s first three); carried 1 + 4 + 3.
  CHECK(cells[0] == 7);
  CHECK(cells[1] == 8);
  CHECK(cells[2] == 1 + 1 + 2 + 12 + 1);  // K(bank)[3], river·river, walk and by, V, e^0.8635
}

TEST_CASE("why-scale-unscaled: 0.999 is right on the document's own 5000 and 7.4: carried") {
  const Checked c = check(attn::find_lesson("why-scale-unscaled"));
  const attn::ClaimCell& w = cell_of(claim_on(c, "head0.weights", 0, 0), 0, 0);
  CHECK(w.computed == doctest::Approx(0.998499).epsilon(1e-6));
  CHECK(w.status == attn::CellStatus::carried);
  REQUIRE(w.own.has_value());
  CHECK(w.own->value == doctest::Approx(5000 / 5007.4).epsilon(1e-12));
  CHECK(contains(w.explanation, "5000 / 5007.4 = 0.998522"));
  // 5000 agrees with e^8.5 = 4914.8 within its stated tolerance of 500.
  CHECK(cell_of(claim_on(c, "head0.exp", 0, 0), 0, 0).agrees());
}

TEST_CASE("why-scale-exp: e^10 ≈ 22026 and e^20 ≈ 4.85e8 agree") {
  const Checked c = check(attn::find_lesson("why-scale-exp"));
  REQUIRE(c.claims.size() == 2);
  for (const attn::ClaimVerdict& v : c.claims) CHECK(v.agrees());
  CHECK(c.trace.at("head0.exp").value(0, 1) == doctest::Approx(std::exp(10.0)).epsilon(1e-12));
  CHECK(c.trace.at("head0.weights").value(0, 2) > 0.9999);
}

TEST_CASE("river-bank: the correct weights do not bear out the narrative") {
  const Checked c = check(attn::find_lesson("river-bank"));
  const arma::rowvec river = c.trace.at("head0.weights").value.row(0);
  CHECK(river(0) == doctest::Approx(0.2356).epsilon(1e-3));
  CHECK(river(1) == doctest::Approx(0.2352).epsilon(1e-3));
  CHECK(river(2) > river(1));  // walk gets more than bank
  CHECK(river(3) > river(2));  // and by more still
}

TEST_CASE("raw-similarity: the factors are right, the sums are not") {
  const Checked c = check(attn::find_lesson("raw-similarity"));
  const double expected[] = {1.78, 1.17, 1.10};
  for (std::size_t j = 1; j <= 3; ++j) {
    const attn::ClaimCell& cell = cell_of(claim_on(c, "head0.scores", 0, j), 0, j);
    CHECK(cell.status == attn::CellStatus::slip);
    CHECK(cell.computed == doctest::Approx(expected[j - 1]).epsilon(1e-12));
    CHECK(contains(cell.explanation, "every written factor is right"));
  }
}

TEST_CASE("animal: (QKᵀ)₀₁ is 0.35, not 0.45 — the other claims agree") {
  const Checked c = check(attn::find_lesson("animal"));
  std::size_t agree = 0;
  for (const attn::ClaimVerdict& v : c.claims) agree += v.agrees();
  CHECK(agree == 4);
  const attn::ClaimCell& cell = cell_of(claim_on(c, "head0.scores", 0, 1), 0, 1);
  CHECK(cell.computed == doctest::Approx(0.35).epsilon(1e-12));
  CHECK(contains(cell.explanation, "0.025 + 0.06 + 0.105 + 0.16 = 0.35"));
  // The document writes only the two vectors and 0.45, no terms: nothing is
  // compared "as written", and one slipped factor is offered as the cause.
  CHECK_FALSE(contains(cell.explanation, "written"));
  CHECK(contains(cell.explanation, "one term explains the whole difference"));
}

TEST_CASE("mask-polarity: the document's causal test fails on its inverted mask") {
  const Checked c = check(attn::find_lesson("mask-polarity"));
  for (const attn::ClaimVerdict& v : c.claims) {
    CHECK_FALSE(v.agrees());
    CHECK(v.cells[0].tolerance == 1e-6);
  }
  const attn::ClaimCell& future = cell_of(claim_on(c, "head0.weights", 1, 2), 1, 2);
  CHECK(future.computed == doctest::Approx(1.0));
  CHECK(contains(future.explanation, "= head0.exp[The,animal] / head0.row_sum[The]"));
  CHECK(std::isnan(c.trace.at("head0.weights").value(2, 0)));
}

TEST_CASE("written_terms reads products and factor pairs after 'written as'") {
  const auto products = attn::written_terms("K(bank), last entry written as 0.15 + 0.06 + 0.12");
  REQUIRE(products.size() == 3);
  CHECK(products[2].product.value == 0.12);
  CHECK(products[2].product.decimals == 2);
  CHECK_FALSE(products[0].left.has_value());
  const auto factors = attn::written_terms("written as 0.69×0.69 + 0.50×0.5");
  REQUIRE(factors.size() == 2);
  CHECK(factors[1].left->decimals == 2);
  CHECK(factors[1].right->value == 0.5);
  CHECK(factors[1].product.value == doctest::Approx(0.25));
  CHECK(attn::written_terms("Q(river)").empty());
  // Factors followed by their products as written: the written (rounded) products count.
  const auto both =
      attn::written_terms("written as 0.69×0.69 + 0.50×0.50 = 0.476 + 0.25");
  REQUIRE(both.size() == 2);
  CHECK(both[0].product_written);
  CHECK(both[0].product.value == 0.476);
  CHECK(both[0].product.decimals == 3);
  CHECK(both[0].left->value == 0.69);
  // A different number of products than of factor pairs: the factors' products.
  const auto short_list = attn::written_terms("written as 0.69×0.69 + 0.50×0.50 = 0.476");
  REQUIRE(short_list.size() == 2);
  CHECK_FALSE(short_list[0].product_written);
  CHECK(short_list[0].product.value == doctest::Approx(0.4761));
}

TEST_CASE("a claim on a NaN cell disagrees and says why — a bad claim names its line") {
  const std::string body = R"([input]
X = [[1, 0], [0, 1]]
keep = [[1, 1], [0, 0]]
[weights]
W_Q = "identity"
W_K = "identity"
W_V = "identity"
[[claim]]
step = "head0.weights"
cell = [1, 0]
value = 0.5
)";
  const Checked c = check(attn::parse_lesson(body, "nan.toml"));
  CHECK_FALSE(c.claims[0].agrees());
  CHECK(contains(c.claims[0].explanation(), "0/0"));

  const attn::Lesson bad = attn::parse_lesson(
      body + "[[claim]]\nstep = \"head3.scores\"\nvalue = 1\ncell = [0, 0]\n", "bad.toml");
  attn::CpuBackend cpu;
  const attn::Trace trace = attn::run_pipeline(bad, cpu);
  // Line 13 is the claim's `step = ...` line: errors name the key's own line, as answers do.
  CHECK_THROWS_WITH_AS(attn::check_claims(bad, trace), doctest::Contains("bad.toml:13"),
                       attn::InputError);
  const attn::Lesson outside = attn::parse_lesson(
      body + "[[claim]]\nstep = \"Q\"\nrow = 5\nvalues = [1, 2]\n", "outside.toml");
  CHECK_THROWS_WITH_AS(attn::check_claims(outside, attn::run_pipeline(outside, cpu)),
                       doctest::Contains("2×2"), attn::InputError);
}

TEST_CASE("a claim of nan on a fully masked row agrees, as verify accepts it") {
  const attn::Lesson L = attn::parse_lesson(R"(
[input]
X = [[1, 0], [0, 1]]
keep = [[0, 0], [1, 1]]
[weights]
W_Q = "identity"
W_K = "identity"
W_V = "identity"
[[claim]]
step = "head0.weights"
row = 0
values = ["nan", "nan"]
[[claim]]
step = "head0.masked"
cell = [0, 1]
value = "-inf"
)",
                                            "nan.toml");
  attn::CpuBackend cpu;
  const std::vector<attn::ClaimVerdict> v = attn::check_claims(L, attn::run_pipeline(L, cpu));
  REQUIRE(v.size() == 2);
  CHECK(v[0].agrees());
  CHECK(v[1].agrees());
}
