// Tests of the SVG heatmaps (render/svg): one panel per weights step, and each
// cell's value, colour and kind (masked, leaked, NaN) against the trace, the
// lesson's own mask and the test's own viridis table (support/viridis.hpp).
#include <doctest/doctest.h>

#include <cmath>
#include <cstdlib>
#include <regex>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "render/render.hpp"
#include "support/traced.hpp"
#include "support/viridis.hpp"

namespace {

using attn::testing::Traced;

// One <rect class="cell …"> of a panel.
struct SvgCell {
  std::string step, kind, fill, value;
  std::size_t row = 0, col = 0;
};

std::vector<SvgCell> cells_of(const std::string& svg) {
  static const std::regex panel(R"re(<g class="panel" data-step="([^"]+)")re");
  static const std::regex rect(
      R"re(<rect class="cell ?([a-z ]*)" x="[^"]*" y="[^"]*" width="[^"]*" height="[^"]*" )re"
      R"re(data-row="(\d+)" data-col="(\d+)" data-value="([^"]*)" fill="([^"]*)")re");
  std::vector<SvgCell> out;
  std::string step;
  std::size_t line_start = 0;
  while (line_start < svg.size()) {
    std::size_t end = svg.find('\n', line_start);
    if (end == std::string::npos) end = svg.size();
    const std::string line = svg.substr(line_start, end - line_start);
    std::smatch m;
    if (std::regex_search(line, m, panel)) step = m[1];
    if (std::regex_search(line, m, rect))
      out.push_back({step, m[1], m[5], m[4], std::stoul(m[2].str()), std::stoul(m[3].str())});
    line_start = end + 1;
  }
  return out;
}

// Whether the lesson masks key j for query i, as its file says: causal, key
// padding, or a 0 of the keep matrix.
bool lesson_masks(const attn::Lesson& L, std::size_t i, std::size_t j) {
  return (L.causal && j > i) || (!L.key_padding.empty() && L.key_padding[j]) ||
         (L.keep && (*L.keep)(i, j) == 0);
}

// Every cell of `svg` against the trace: value to the bit, and its kind and colour.
void check_cells(const attn::Lesson& L, const attn::Trace& t, const std::string& svg,
                 std::size_t expected_cells) {
  const std::vector<SvgCell> cells = cells_of(svg);
  CHECK(cells.size() == expected_cells);
  for (const SvgCell& c : cells) {
    CAPTURE(c.step);
    CAPTURE(c.row);
    CAPTURE(c.col);
    const double v = t.at(c.step).value(c.row, c.col);
    const bool masked = lesson_masks(L, c.row, c.col);
    if (std::isnan(v)) {
      CHECK(c.value == "nan");
      CHECK(c.kind == "nan");
      continue;
    }
    CHECK(std::strtod(c.value.c_str(), nullptr) == v);
    if (masked && v == 0.0) {
      CHECK(c.kind == "masked");
      CHECK(c.fill == "url(#masked)");
    } else {
      CHECK(c.kind == (masked ? "masked leaked" : ""));
      CHECK(c.fill == attn::testing::viridis_hex(v));
    }
  }
}

}  // namespace

TEST_CASE("svg: every weight of two heads, their mean and max, with its value and colour") {
  const Traced traced("two-heads");
  const attn::Lesson& L = traced.lesson;
  const attn::Trace& t = traced.trace;
  const std::string svg = attn::render_svg(L, t, {});
  CHECK(svg.starts_with("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<svg "));
  CHECK(svg.find("<title>two-heads: attention weights</title>") != std::string::npos);
  const std::size_t n = L.X.n_rows;
  // head0.weights, head1.weights, heads.mean, heads.max: n×n each.
  check_cells(L, t, svg, 4 * n * n);
  for (const char* id : {"head0.weights", "head1.weights", "heads.mean", "heads.max"})
    CHECK(svg.find(std::string("data-step=\"") + id + "\"") != std::string::npos);
}

TEST_CASE("svg: masked cells hatched, a row with no key NaN, the legend says both") {
  const Traced traced("mask-polarity");
  const attn::Lesson& L = traced.lesson;
  const attn::Trace& t = traced.trace;
  const std::string svg = attn::render_svg(L, t, {});
  const std::size_t n = L.X.n_rows;
  check_cells(L, t, svg, n * n);
  const std::vector<SvgCell> cells = cells_of(svg);
  std::size_t nan = 0, hatched = 0;
  for (const SvgCell& c : cells) {
    nan += c.kind == "nan";
    hatched += c.kind == "masked";
  }
  CHECK(nan == n);  // the last row: every key masked, 0/0
  CHECK(hatched > 0);
  CHECK(svg.find("NaN (0/0: every key masked)") != std::string::npos);
  CHECK(svg.find("masked (weight 0)") != std::string::npos);
}

TEST_CASE("svg: a fill of 0 leaves weight on masked keys, outlined as leaked") {
  const Traced traced("fill-zero-fails");
  const attn::Lesson& L = traced.lesson;
  const attn::Trace& t = traced.trace;
  const std::string svg = attn::render_svg(L, t, {});
  check_cells(L, t, svg, L.X.n_rows * L.X.n_rows);
  std::size_t leaked = 0;
  for (const SvgCell& c : cells_of(svg)) leaked += c.kind == "masked leaked";
  CHECK(leaked > 0);
  CHECK(svg.find("masked, yet weighted (the fill is too small)") != std::string::npos);
}

TEST_CASE("svg: no weights step among those chosen is an input error that names the way out") {
  const Traced traced("river-bank");
  const attn::Lesson& L = traced.lesson;
  const attn::Trace& t = traced.trace;
  attn::RenderOptions o;
  o.steps = {"head0.scores"};
  CHECK_THROWS_WITH_AS(attn::render_svg(L, t, o), doctest::Contains("--step"), attn::InputError);
}
