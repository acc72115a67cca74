// Tests of one step's matrix in the terminal (render/text_matrix): every number
// in its row, in order, at any width; each cell's 24-bit colour against the
// test's own viridis table and scale; the heatmap's glyph of every cell.
#include "render/text_matrix.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "support/traced.hpp"
#include "support/viridis.hpp"

namespace {

using attn::testing::Traced;

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

std::vector<std::string> words_of(const std::string& line) {
  std::vector<std::string> out;
  std::istringstream in(line);
  for (std::string w; in >> w;) out.push_back(w);
  return out;
}

std::string fixed4(double v) {
  char text[64];
  std::snprintf(text, sizeof text, "%.4f", v);
  return text;
}

// Columns a line takes: its code points (the labels here are ASCII, the glyphs one column each).
std::size_t columns(const std::string& line) {
  std::size_t n = 0;
  for (const unsigned char c : line) n += (c & 0xC0) != 0x80;
  return n;
}

// The numbers of each row of `step`, read back from its lines (any number of
// column blocks), each row's label the first word of its lines.
std::vector<std::vector<std::string>> numbers_by_row(const std::string& out,
                                                     const attn::Step& step) {
  std::vector<std::vector<std::string>> rows(step.value.n_rows);
  for (const std::string& line : lines_of(out)) {
    const std::vector<std::string> words = words_of(line);
    // a row of numbers, not the key labels over them
    if (words.size() < 2 ||
        !(std::isdigit(static_cast<unsigned char>(words[1][0])) || words[1][0] == '-'))
      continue;
    for (std::size_t i = 0; i < step.rows.size(); ++i)
      if (words[0] == step.rows[i]) rows[i].insert(rows[i].end(), words.begin() + 1, words.end());
  }
  return rows;
}

}  // namespace

TEST_CASE("write_numbers: every value in its row, in order, at 80 columns and in blocks at 30") {
  const Traced rb("river-bank");
  const attn::Step& step = rb.trace.at("head0.scores");
  for (const std::size_t width : {80, 30}) {
    CAPTURE(width);
    attn::RenderOptions o;
    o.width = width;
    std::string out;
    attn::write_numbers(out, rb.trace, step, o);
    const std::vector<std::vector<std::string>> rows = numbers_by_row(out, step);
    for (std::size_t i = 0; i < step.value.n_rows; ++i) {
      CAPTURE(i);
      std::vector<std::string> want;
      for (std::size_t j = 0; j < step.value.n_cols; ++j) want.push_back(fixed4(step.value(i, j)));
      CHECK(rows[i] == want);
    }
    for (const std::string& line : lines_of(out)) CHECK(columns(line) <= width);
    // One block at 80 columns, more at 30: the row labels again in each.
    std::size_t river_lines = 0;
    for (const std::string& line : lines_of(out))
      river_lines += line.starts_with("  river ") && line.find('.') != std::string::npos;
    CHECK((river_lines == 1) == (width == 80));
  }
}

TEST_CASE("write_numbers: 24-bit colour, each weight on its row's scale from 0") {
  const Traced cd("causal-decoder");
  const attn::Step& step = cd.trace.at("head0.weights");
  attn::RenderOptions o;
  o.color = attn::ColorDepth::truecolor;
  std::string out;
  attn::write_numbers(out, cd.trace, step, o);
  static const std::regex painted(
      R"(\x1b\[48;2;(\d+);(\d+);(\d+);38;2;\d+;\d+;\d+m *([-0-9.a-z]+) *\x1b\[0m)");
  std::size_t row = 0, cells = 0;
  for (const std::string& line : lines_of(out)) {
    const std::vector<std::string> words = words_of(line);
    if (words.empty() || row >= step.rows.size() || words[0] != step.rows[row] ||
        !std::regex_search(line, painted))
      continue;
    const double top = step.value.row(row).max();
    std::size_t col = 0;
    for (std::sregex_iterator m(line.begin(), line.end(), painted), end; m != end; ++m, ++col) {
      CAPTURE(row);
      CAPTURE(col);
      REQUIRE(col < step.value.n_cols);
      const double v = step.value(row, col);
      CHECK((*m)[4] == fixed4(v));
      const bool masked = col > row;  // causal
      const std::array<int, 3> want =
          masked ? std::array<int, 3>{58, 58, 58} : attn::testing::viridis_rgb(v / top);
      CHECK(std::stoi((*m)[1]) == want[0]);
      CHECK(std::stoi((*m)[2]) == want[1]);
      CHECK(std::stoi((*m)[3]) == want[2]);
      ++cells;
    }
    CHECK(col == step.value.n_cols);
    ++row;
  }
  CHECK(cells == step.value.n_elem);
  CHECK(out.find("masked") != std::string::npos);  // the legend
}

TEST_CASE("write_heatmap: one glyph a weight, by its fifth of the row's highest, · where masked") {
  const Traced cd("causal-decoder");
  const attn::Step& step = cd.trace.at("head0.weights");
  attn::RenderOptions o;
  o.view = attn::TextView::heatmap;
  std::string out;
  attn::write_heatmap(out, cd.trace, step, o);
  const char* levels[] = {" ", "░", "▒", "▓", "█"};
  const std::vector<std::string> lines = lines_of(out);
  for (std::size_t i = 0; i < step.value.n_rows; ++i) {
    CAPTURE(i);
    const double top = step.value.row(i).max();
    std::string glyphs;
    for (std::size_t j = 0; j < step.value.n_cols; ++j) {
      const std::size_t level =
          std::min<std::size_t>(4, static_cast<std::size_t>(step.value(i, j) / top * 5.0));
      const std::string glyph = j > i ? "·" : levels[level];  // causal: key after query
      glyphs += glyph + glyph;                                // two columns a cell at 80
    }
    while (!glyphs.empty() && glyphs.back() == ' ') glyphs.pop_back();
    const std::string label = std::to_string(i) + " " + step.rows[i];
    const auto line = std::find_if(lines.begin(), lines.end(), [&](const std::string& l) {
      return l.starts_with("  " + label + " ");
    });
    REQUIRE(line != lines.end());
    CHECK(line->ends_with(" " + glyphs));
  }
  CHECK(out.find("queries down, keys across") != std::string::npos);
}
