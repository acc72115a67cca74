// How numbers and big matrices are shown: one place for widths, precision,
// non-finite values and the summary of large matrices.
#pragma once

#include <armadillo>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace attn {

// Fixed decimals; "-inf", "inf", "nan" for non-finite values; no "-0.0000".
std::string format_fixed(double value, int precision);

// Row or column indices to show for a dimension of `count`: all of them when
// not summarised, else the first and last few with nullopt for the ellipsis.
std::vector<std::optional<std::size_t>> visible_indices(std::size_t count, bool summarised);

// Every cell, or statistics and corners, or the one that suits the size.
enum class Summary { automatic, on, off };

// Whether `M` is shown summarised: as `mode` says, or when automatic, when it
// has more than kSummaryThreshold rows or columns.
bool should_summarise(const arma::mat& M, Summary mode);

struct MatrixStats {
  double min = 0, max = 0, mean = 0, std = 0;  // over finite cells
  std::size_t finite = 0, neg_inf = 0, pos_inf = 0, nan = 0;
};
MatrixStats matrix_stats(const arma::mat& M);

// "min 0.1 · max 0.9 · mean 0.5 · std 0.2 (+ 6 cells -inf)"
std::string format_stats(const MatrixStats& s, int precision);

// Display width of UTF-8 text (code points; wide CJK characters count 2).
std::size_t display_width(const std::string& text);

// `s` padded with spaces on the left (pad_left) or right (pad_right) to
// `width` columns of display; as it is when it is that wide already.
std::string pad_left(const std::string& s, std::size_t width);
std::string pad_right(const std::string& s, std::size_t width);

// `text` cut to at most `width` columns, ending in "…" when it was cut.
std::string clip_to_width(const std::string& text, std::size_t width);

// `text` as lines of at most `width` columns, broken at spaces: the first
// line starts with `first`, the others with `rest` (indents count in the
// width); a word longer than a line is cut where the line ends. Newlines in
// `text` are kept. Every line ends in '\n'; trailing spaces are dropped.
std::string wrap_text(std::string_view text, std::size_t width, std::string_view first,
                      std::string_view rest);

}  // namespace attn
