// The JSON renderer: a document a strict reader accepts, each step's fields
// and data equal to the trace bit for bit, non-finite cells as strings.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdio>
#include <string>

#include "backend/cpu_backend.hpp"
#include "core/expand.hpp"
#include "core/lesson_library.hpp"
#include "core/pipeline.hpp"
#include "render/render.hpp"
#include "support/mini_json.hpp"

namespace {

struct Traced {
  attn::Lesson lesson;
  attn::Trace trace;
  explicit Traced(const char* id) : lesson(attn::find_lesson(id)) {
    attn::CpuBackend cpu;
    trace = attn::run_pipeline(lesson, cpu);
  }
  testjson::Value json(const attn::RenderOptions& o = {}) const {
    return testjson::parse(attn::render_json(lesson, trace, o));
  }
};

const testjson::Value& step_of(const testjson::Value& doc, const std::string& id) {
  for (const testjson::Value& s : doc["steps"].items)
    if (s["id"].text == id) return s;
  throw std::out_of_range("no step " + id);
}

}  // namespace

TEST_CASE("json: every step of river-bank with its fields, its data equal to the trace") {
  const Traced rb("river-bank");
  const testjson::Value doc = rb.json();
  CHECK(doc.keys == std::vector<std::string>{"lesson", "title", "backend", "steps", "warnings"});
  CHECK(doc["lesson"].text == "river-bank");
  CHECK(doc["title"].text == "Single-head self-attention: river bank");
  CHECK(doc["backend"].text == rb.trace.backend);
  CHECK(doc["warnings"].size() == 0);
  REQUIRE(doc["steps"].size() == rb.trace.steps.size());
  for (std::size_t k = 0; k < rb.trace.steps.size(); ++k) {
    const attn::Step& s = rb.trace.steps[k];
    const testjson::Value& j = doc["steps"][k];
    CAPTURE(s.id);
    CHECK(j["id"].text == s.id);
    CHECK(j["name"].text == s.name);
    CHECK(j["head"].is_null() == (s.head < 0));
    if (s.head >= 0) CHECK(j["head"].number == s.head);
    CHECK(j["shape"][0].number == s.value.n_rows);
    CHECK(j["shape"][1].number == s.value.n_cols);
    REQUIRE(j["rows"].size() == s.rows.size());
    for (std::size_t r = 0; r < s.rows.size(); ++r) CHECK(j["rows"][r].text == s.rows[r]);
    REQUIRE(j["cols"].size() == s.cols.size());
    for (std::size_t c = 0; c < s.cols.size(); ++c) CHECK(j["cols"][c].text == s.cols[c]);
    REQUIRE(j["data"].size() == s.value.n_rows);
    for (std::size_t r = 0; r < s.value.n_rows; ++r)
      for (std::size_t c = 0; c < s.value.n_cols; ++c)
        CHECK(j["data"][r][c].number == s.value(r, c));  // exact: 17 digits read back
  }
  // By hand: Q(river) = [0.6, 0.2, 0.7, 0.1]·W_Q = [0.69, 0.50, 0.86, 0.85].
  const testjson::Value& q = step_of(doc, "Q");
  CHECK(q["formula"].text == "Q = X·W_Q");
  CHECK(q["data"][0][0].number == doctest::Approx(0.69).epsilon(1e-12));
  CHECK(q["data"][0][3].number == doctest::Approx(0.85).epsilon(1e-12));
  const testjson::Value& scores = step_of(doc, "head0.scores");
  CHECK(scores["formula"].text == "S₀ = Q₀·K₀ᵀ");
  CHECK(scores["head"].number == 0);
  CHECK(scores["data"][0][1].number == doctest::Approx(1.6755).epsilon(1e-12));
}

TEST_CASE("json: numbers are written with 17 significant digits") {
  const Traced rb("river-bank");
  const testjson::Value doc = rb.json();
  const testjson::Value& x = step_of(doc, "X");
  CHECK(x["data"][0][0].text == "0.59999999999999998");  // 0.6 as a double, to 17 digits
  CHECK(x["data"][1][0].text == "0.5");                  // exact: no padding zeros
  char expected[64];
  std::snprintf(expected, sizeof expected, "%.17g", rb.trace.at("head0.weights").value(2, 3));
  CHECK(step_of(doc, "head0.weights")["data"][2][3].text == expected);
}

TEST_CASE("json: masked cells are \"-inf\", a fully masked row \"nan\", with its warning") {
  const Traced mp("mask-polarity");
  const testjson::Value doc = mp.json();
  const arma::mat& masked = mp.trace.at("head0.masked").value;
  const testjson::Value& jm = step_of(doc, "head0.masked");
  for (std::size_t r = 0; r < masked.n_rows; ++r)
    for (std::size_t c = 0; c < masked.n_cols; ++c) {
      CAPTURE(r);
      CAPTURE(c);
      const testjson::Value& cell = jm["data"][r][c];
      if (std::isinf(masked(r, c)))
        CHECK(cell.text == "-inf");
      else
        CHECK(cell.number == masked(r, c));
    }
  const testjson::Value& weights = step_of(doc, "head0.weights")["data"][2];
  for (std::size_t c = 0; c < 3; ++c) CHECK(weights[c].text == "nan");
  REQUIRE(doc["warnings"].size() == 1);
  CHECK(doc["warnings"][0].text.starts_with("head0.weights row 2 (animal)"));
}

TEST_CASE("json: --step keeps the chosen steps — --expand adds the expansions") {
  const Traced rb("river-bank");
  attn::RenderOptions o;
  o.steps = {"head0.scores"};
  o.expansions = {attn::expand_cell(rb.lesson, rb.trace, "head0.scores", 0, 1)};
  const testjson::Value doc = rb.json(o);
  REQUIRE(doc["steps"].size() == 1);
  CHECK(doc["steps"][0]["id"].text == "head0.scores");
  REQUIRE(doc["expansions"].size() == 1);
  const testjson::Value& e = doc["expansions"][0];
  CHECK(e["step"].text == "head0.scores");
  CHECK(e["value"].number == rb.trace.at("head0.scores").value(0, 1));
  CHECK(e["terms"].size() == 4);
  CHECK_FALSE(rb.json().has("expansions"));
}
