// Tests of the self-contained HTML page (render/html): every step's table cell
// by cell (its number, masked and NaN classes, a weight's colour) against the
// trace, the lesson's own mask and the test's viridis table, every shown cell's
// arithmetic, and a summarised step.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdio>
#include <map>
#include <regex>
#include <string>
#include <vector>

#include "render/render.hpp"
#include "support/traced.hpp"
#include "support/viridis.hpp"

namespace {

using attn::testing::Traced;

struct HtmlCell {
  std::string table_class, step, cls, background, text;
  std::size_t row = 0, col = 0;
};

// Every <td> with a cell's value, in the tables of the page.
std::vector<HtmlCell> cells_of(const std::string& page) {
  static const std::regex table(R"re(<table class="([^"]+)" data-step="([^"]+)">)re");
  static const std::regex td(
      R"re(<td data-row="(\d+)" data-col="(\d+)"(?: class="([^"]*)")?)re"
      R"re((?: style="background:(#[0-9a-f]{6});color:#[0-9a-f]{6}")?>([^<]*)</td>)re");
  std::vector<HtmlCell> out;
  for (std::sregex_iterator t(page.begin(), page.end(), table), end; t != end; ++t) {
    const std::size_t from = static_cast<std::size_t>(t->position() + t->length());
    const std::string body = page.substr(from, page.find("</table>", from) - from);
    for (std::sregex_iterator c(body.begin(), body.end(), td); c != end; ++c)
      out.push_back({(*t)[1], (*t)[2], (*c)[3], (*c)[4], (*c)[5], std::stoul((*c)[1].str()),
                     std::stoul((*c)[2].str())});
  }
  return out;
}

// The value as the page writes it: 4 decimals, no "-0.0000", nan and ±inf by name.
std::string by_hand(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v < 0 ? "-inf" : "inf";
  char text[64];
  std::snprintf(text, sizeof text, "%.4f", v);
  const std::string s = text;
  return s == "-0.0000" ? "0.0000" : s;
}

// Every table cell of `page` against `t` and the lesson's mask; -> tables per step.
std::map<std::string, int> check_tables(const attn::Lesson& L, const attn::Trace& t,
                                        const std::string& page) {
  std::map<std::string, int> tables;
  for (const HtmlCell& c : cells_of(page)) {
    CAPTURE(c.step);
    CAPTURE(c.row);
    CAPTURE(c.col);
    const attn::Step& step = t.at(c.step);
    tables[c.step] += c.row == 0 && c.col == 0;
    const double v = step.value(c.row, c.col);
    CHECK(c.text == by_hand(v));
    // The steps the mask covers: masked scores, their exponentials, the weights.
    const bool covers = step.kind == attn::StepKind::masked || step.kind == attn::StepKind::exp ||
                        step.kind == attn::StepKind::weights ||
                        step.kind == attn::StepKind::head_summary;
    const bool masked = covers && ((L.causal && c.col > c.row) ||
                                   (!L.key_padding.empty() && L.key_padding[c.col]) ||
                                   (L.keep && (*L.keep)(c.row, c.col) == 0));
    const bool weights = step.kind == attn::StepKind::weights ||
                         step.kind == attn::StepKind::head_summary ||
                         step.kind == attn::StepKind::decode_weights;
    std::string cls = masked ? "masked" : "";
    if (std::isnan(v)) cls += cls.empty() ? "nan" : " nan";
    const bool coloured = !std::isnan(v) && weights && !(masked && v == 0.0);
    if (coloured && masked) cls += " leaked";
    CHECK(c.cls == cls);
    CHECK(c.background == (coloured ? attn::testing::viridis_hex(v) : ""));
  }
  return tables;
}

}  // namespace

TEST_CASE("html: every step's table, cell by cell, and the weights twice (heatmap and step)") {
  const Traced traced("two-heads");
  const attn::Lesson& L = traced.lesson;
  const attn::Trace& t = traced.trace;
  const std::string page = attn::render_html(L, t, {});
  CHECK(page.starts_with("<!DOCTYPE html>"));
  CHECK(page.ends_with("</html>\n"));
  const std::map<std::string, int> tables = check_tables(L, t, page);
  for (const attn::Step& step : t.steps) {
    CAPTURE(step.id);
    const bool weights =
        step.kind == attn::StepKind::weights || step.kind == attn::StepKind::head_summary;
    CHECK(tables.at(step.id) == (weights ? 2 : 1));
  }
}

TEST_CASE("html: masked cells, a row of NaN weights, and a fill of 0 that leaks, marked") {
  for (const char* id : {"mask-polarity", "fill-zero-fails", "padding-mask"}) {
    CAPTURE(id);
    const Traced traced(id);
    const attn::Lesson& L = traced.lesson;
    const attn::Trace& t = traced.trace;
    const std::string page = attn::render_html(L, t, {});
    check_tables(L, t, page);
    std::size_t nan = 0, masked = 0, leaked = 0;
    for (const HtmlCell& c : cells_of(page)) {
      nan += c.cls.ends_with("nan");
      masked += c.cls.starts_with("masked");
      leaked += c.cls.ends_with("leaked");
    }
    CHECK(masked > 0);
    CHECK((nan > 0) == (std::string(id) == "mask-polarity"));
    CHECK((leaked > 0) == (std::string(id) == "fill-zero-fails"));
  }
}

TEST_CASE("html: each shown cell's arithmetic, the score as the documents write it") {
  const Traced traced("river-bank");
  const attn::Lesson& L = traced.lesson;
  const attn::Trace& t = traced.trace;
  const std::string page = attn::render_html(L, t, {});
  const std::size_t item = page.find("<li id=\"x:head0.scores:0,1\">");
  REQUIRE(item != std::string::npos);
  const std::string text = page.substr(item, page.find("</li>", item) - item);
  CHECK(text.find("0.69×0.66 + 0.50×0.54 + 0.86×0.66 + 0.85×0.45 = 1.6755") != std::string::npos);
  // One item per cell of every step that has cells to expand: 4×4 scores.
  std::size_t scores_items = 0;
  for (std::size_t at = page.find("<li id=\"x:head0.scores:"); at != std::string::npos;
       at = page.find("<li id=\"x:head0.scores:", at + 1))
    ++scores_items;
  CHECK(scores_items == 16);
}

TEST_CASE("html: a step past 16 rows is summarised, its corners still to the bit") {
  const Traced traced("d512-walkthrough");
  const attn::Lesson& L = traced.lesson;
  const attn::Trace& t = traced.trace;
  attn::RenderOptions o;
  o.steps = {"Q"};
  const std::string page = attn::render_html(L, t, o);
  CHECK(page.find("<p class=\"summary\">Summary: ") != std::string::npos);
  check_tables(L, t, page);
  const std::vector<HtmlCell> cells = cells_of(page);
  const arma::mat& Q = t.at("Q").value;
  REQUIRE(Q.n_cols > 16);
  CHECK(cells.size() < Q.n_elem);  // not every cell
  bool last_corner = false;
  for (const HtmlCell& c : cells) last_corner |= c.row == Q.n_rows - 1 && c.col == Q.n_cols - 1;
  CHECK(last_corner);
}
