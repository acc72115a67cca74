// Number formatting and summaries shared by the renderers.
#include <doctest/doctest.h>

#include <limits>

#include "core/number_text.hpp"
#include "render/json_writer.hpp"
#include "render/numbers.hpp"

TEST_CASE("fixed formatting: precision, non-finite values, no negative zero") {
  const double inf = std::numeric_limits<double>::infinity();
  CHECK(attn::format_fixed(0.23561, 4) == "0.2356");
  CHECK(attn::format_fixed(1.6755, 2) == "1.68");
  CHECK(attn::format_fixed(-inf, 4) == "-inf");
  CHECK(attn::format_fixed(inf, 4) == "inf");
  CHECK(attn::format_fixed(std::nan(""), 4) == "nan");
  CHECK(attn::format_fixed(-0.0, 3) == "0.000");
  CHECK(attn::format_fixed(-0.00001, 3) == "0.000");
  CHECK(attn::format_fixed(-0.5, 1) == "-0.5");
  CHECK(attn::format_fixed(-1e9, 4) == "-1.0000e+09");  // huge values in scientific notation
  CHECK(attn::format_fixed(123456789.0, 2) == "123456789.00");
}

TEST_CASE("exact formatting round-trips with 17 significant digits") {
  const double x = 0.1 + 0.2;
  CHECK(attn::format_exact(x) == "0.30000000000000004");
  CHECK(std::stod(attn::format_exact(x)) == x);
  CHECK(attn::json_number(-std::numeric_limits<double>::infinity()) == "\"-inf\"");
  CHECK(attn::json_number(std::nan("")) == "\"nan\"");
  CHECK(attn::json_number(1.5) == "1.5");
}

TEST_CASE("json strings are escaped") {
  CHECK(attn::json_string("a\"b\\c\nd") == "\"a\\\"b\\\\c\\nd\"");
  CHECK(attn::json_string("Q·Kᵀ") == "\"Q·Kᵀ\"");
  const arma::mat M = {{1, 2}, {3, -std::numeric_limits<double>::infinity()}};
  CHECK(attn::json_matrix(M) == "[[1, 2], [3, \"-inf\"]]");
}

TEST_CASE("summaries: visible corners and statistics over finite cells") {
  const auto all = attn::visible_indices(5, false);
  CHECK(all.size() == 5);
  const auto few = attn::visible_indices(512, true);
  REQUIRE(few.size() == 7);
  CHECK(*few[0] == 0);
  CHECK(!few[3].has_value());
  CHECK(*few[6] == 511);
  CHECK(attn::should_summarise(arma::mat(17, 2), attn::Summary::automatic));
  CHECK_FALSE(attn::should_summarise(arma::mat(16, 16), attn::Summary::automatic));
  CHECK(attn::should_summarise(arma::mat(2, 2), attn::Summary::on));  // --summary
  CHECK_FALSE(attn::should_summarise(arma::mat(17, 2), attn::Summary::off));  // --full

  arma::mat M = {{1, 2}, {3, -std::numeric_limits<double>::infinity()}};
  const attn::MatrixStats s = attn::matrix_stats(M);
  CHECK(s.finite == 3);
  CHECK(s.neg_inf == 1);
  CHECK(s.min == 1.0);
  CHECK(s.max == 3.0);
  CHECK(s.mean == doctest::Approx(2.0));
  CHECK(s.std == doctest::Approx(std::sqrt(2.0 / 3.0)));
  CHECK(attn::format_stats(s, 2) == "min 1.00 · max 3.00 · mean 2.00 · std 0.82 · 1 cells -inf");
}

TEST_CASE("display width counts code points, CJK as two columns") {
  CHECK(attn::display_width("bank") == 4);
  CHECK(attn::display_width("Q₀") == 2);
  CHECK(attn::display_width("银行") == 4);
}

TEST_CASE("wrap_text: lines within the width, broken at spaces, indents kept") {
  using attn::wrap_text;
  CHECK(wrap_text("one two three four", 9, "", "") == "one two\nthree\nfour\n");
  // The first line's indent and the hanging one count in the width.
  CHECK(wrap_text("aa bb cc dd", 8, "  ", "    ") == "  aa bb\n    cc\n    dd\n");
  // Newlines in the text are kept; an empty line stays empty.
  CHECK(wrap_text("a b\n\nc", 10, "", "") == "a b\n\nc\n");
  // A word longer than a line is cut where the line ends.
  CHECK(wrap_text("abcdefghij", 4, "", "") == "abcd\nefgh\nij\n");
  // A line's own leading spaces stay; trailing spaces go.
  CHECK(wrap_text("  x   ", 10, "", "") == "  x\n");
  // Text that fits is left alone.
  CHECK(wrap_text("fits exactly", 12, "", "") == "fits exactly\n");
}

TEST_CASE("wrap_text: Chinese breaks between characters, by display width") {
  using attn::display_width;
  using attn::wrap_text;
  // 12 characters, 24 columns, no spaces: 10 columns a line is 5 characters.
  const std::string text = "注意力权重每一行的和都是一";
  const std::string wrapped = wrap_text(text, 10, "", "");
  CHECK(wrapped == "注意力权重\n每一行的和\n都是一\n");
  // Mixed with ASCII words: the Chinese run goes on filling the line after
  // "Q(river)" instead of starting a new one.
  const std::string mixed = wrap_text("Q(river) 这一行是对的，K(bank) 不对", 20, "", "");
  for (std::size_t start = 0; start < mixed.size();) {
    const std::size_t end = mixed.find('\n', start);
    CHECK(display_width(mixed.substr(start, end - start)) <= 20);
    start = end + 1;
  }
  CHECK(mixed.starts_with("Q(river) 这一行是对\n"));
  // A number inside Chinese text stays whole, with its closing bracket.
  CHECK(wrap_text("分数约为 0.51）得到", 10, "", "") == "分数约为\n0.51）得到\n");
  // Closing punctuation never starts a line; opening never ends one.
  CHECK(wrap_text("一二三四五，六", 10, "", "") == "一二三四\n五，六\n");
  CHECK(wrap_text("一二三（四五", 8, "", "") == "一二三\n（四五\n");
}

TEST_CASE("wrap_text: UAX #14 breaks keep ids, options and numbers whole") {
  using attn::display_width;
  using attn::wrap_text;
  const std::string wrapped = wrap_text("用 --expand 2,1 看 head0.scores[a,b] 的每个单元格，共 0.25 秒", 18, "", "");
  for (const char* whole : {"--expand 2,1", "head0.scores[a,b]", "0.25"})
    CHECK_MESSAGE(wrapped.find(whole) != std::string::npos, whole, " cut in ", wrapped);
  for (std::size_t start = 0; start < wrapped.size();) {
    const std::size_t end = wrapped.find('\n', start);
    CHECK(display_width(wrapped.substr(start, end - start)) <= 18);
    start = end + 1;
  }
  // UAX #14 would allow breaking after "--" or "/": the tool does not.
  CHECK(wrap_text("a --expand b/c", 8, "", "") == "a\n--expand\nb/c\n");
}

TEST_CASE("wrap_text: a full line prefers to end at punctuation to cutting a word") {
  using attn::wrap_text;
  // Ending after 宽 would fit (14 columns) but cut 宽度; the comma is 2 columns back.
  CHECK(wrap_text("一二三四五，宽度很重要", 14, "", "") == "一二三四五，\n宽度很重要\n");
  // With no punctuation near the end, the line is filled as Chinese print does.
  CHECK(wrap_text("一二三四五六七宽度很重要", 14, "", "") == "一二三四五六七\n宽度很重要\n");
  // Between Chinese and Latin is a good place too.
  CHECK(wrap_text("一二三四五 Q 宽度很重要", 16, "", "") == "一二三四五 Q\n宽度很重要\n");
}

TEST_CASE("wrap_text: a number stays with the Chinese word it counts") {
  using attn::wrap_text;
  // "4 个值中有 1 个沿用正确": a break after "1" would leave 个 alone.
  CHECK(wrap_text("四个值中有 1 个沿用正确", 14, "", "") == "四个值中有\n1 个沿用正确\n");
  CHECK(wrap_text("四个值中有 1 个沿用正确", 16, "", "") == "四个值中有 1 个\n沿用正确\n");
  CHECK(wrap_text("使用提示 3 次", 10, "", "") == "使用提示\n3 次\n");
}

TEST_CASE("wrap_text: a path after a space may start a line") {
  // UAX #14 alone would keep "在 /tmp/…" together and break before 在.
  CHECK(attn::wrap_text("进度保存在 /tmp/a/b/c/answers.toml。", 20, "", "") ==
        "进度保存在\n/tmp/a/b/c/answers.t\noml。\n");
}

TEST_CASE("wrap_text: 第 stays with its number") {
  CHECK(attn::wrap_text("见文档第 2.3 节", 10, "", "") == "见文档\n第 2.3 节\n");
}
