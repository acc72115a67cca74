// Escaping for LaTeX text mode, Markdown, XML and CSV: each special character,
// the trace's symbols, characters the default LaTeX fonts cannot show, and
// control characters shown visibly in every format.
#include <doctest/doctest.h>

#include <algorithm>
#include <charconv>
#include <string>
#include <string_view>
#include <vector>

#include "render/escape.hpp"

TEST_CASE("tex_text: every LaTeX special character escaped") {
  CHECK(attn::tex_text("a_b 50% x&y #1 $5 {z}") == "a\\_b 50\\% x\\&y \\#1 \\$5 \\{z\\}");
  CHECK(attn::tex_text("C:\\dir") == "C:\\textbackslash{}dir");
  CHECK(attn::tex_text("x^2 ~y") == "x\\^{}2 \\~{}y");
  CHECK(attn::tex_text("<s> a|b") == "\\textless{}s\\textgreater{} a\\textbar{}b");
  CHECK(attn::tex_text("plain words, 0.25 (ok).") == "plain words, 0.25 (ok).");
}

TEST_CASE("tex_text: the trace's symbols as math, Latin-1 letters kept, others named") {
  CHECK(attn::tex_text("√4 ≈ 2") == "$\\surd$4 $\\approx$ 2");
  CHECK(attn::tex_text("Q·Kᵀ → 4×4") == "Q$\\cdot$K$^\\top$ $\\to$ 4$\\times$4");
  CHECK(attn::tex_text("Q₀₁") == "Q$_0$$_1$");
  CHECK(attn::tex_text("a − b … c — d") == "a $-$ b \\ldots{} c --- d");
  CHECK(attn::tex_text("“quoted”") == "``quoted''");
  CHECK(attn::tex_text("José Ñuñez Müller") == "José Ñuñez Müller");
  // × (U+00D7) and ÷ (U+00F7) sit in Latin-1 but are not letters.
  CHECK(attn::tex_text("÷") == "[U+00F7]");
  CHECK(attn::tex_text("李") == "[U+674E]");
  CHECK(attn::tex_text("𝄞") == "[U+1D11E]");              // four bytes
  CHECK(attn::tex_text("ok \xE2\x82") == "ok [U+FFFD]");  // cut off mid-character
}

TEST_CASE("md_text: Markdown's markup characters get a backslash, nothing else does") {
  for (const char c : std::string("\\`*_{}[]<>#|!$&~")) {
    CAPTURE(c);
    CHECK(attn::md_text(std::string(1, c)) == std::string("\\") + c);
  }
  CHECK(attn::md_text("a|b") == "a\\|b");
  CHECK(attn::md_text("*Ada* <b>") == "\\*Ada\\* \\<b\\>");
  CHECK(attn::md_text("0.5 - 1.2 + (x). 银行 √ 50% ^") == "0.5 - 1.2 + (x). 银行 √ 50% ^");
  CHECK(attn::md_text("&amp; $x$ ~~y~~") == "\\&amp; \\$x\\$ \\~\\~y\\~\\~");
}

// Every C0 control character and DEL, and what each format shows for them.
const std::string kControls = [] {
  std::string s;
  for (int c = 0; c < 0x20; ++c) s += static_cast<char>(c);
  return s + '\x7F';
}();

TEST_CASE("show_controls: every control character as its control picture, the rest kept") {
  const std::string shown = attn::show_controls(kControls);
  CHECK(shown == "␀␁␂␃␄␅␆␇␈␉␊␋␌␍␎␏␐␑␒␓␔␕␖␗␘␙␚␛␜␝␞␟␡");
  CHECK(attn::show_controls("a\nb\tc \x1b[31m red") == "a␊b␉c ␛[31m red");
  CHECK(attn::show_controls("银行 √ ~") == "银行 √ ~");
}

TEST_CASE("show_controls: C1 and bidirectional controls, invisible marks and bad UTF-8 shown") {
  // U+009B (CSI in UTF-8), U+202E (right-to-left override), U+2066-U+2069,
  // U+200B (zero width space), U+FEFF; the joiners stay (emoji and scripts need them).
  CHECK(attn::show_controls("a\u009B31mb") == "a<U+009B>31mb");
  CHECK(attn::show_controls("x\u202Etxt.exe") == "x<U+202E>txt.exe");
  CHECK(attn::show_controls("\u2066\u2067\u2068\u2069\u061C\u200E\u200F") ==
        "<U+2066><U+2067><U+2068><U+2069><U+061C><U+200E><U+200F>");
  CHECK(attn::show_controls("Eve\u200B") == "Eve<U+200B>");
  CHECK(attn::show_controls("\uFEFFname\u2060") == "<U+FEFF>name<U+2060>");
  CHECK(attn::show_controls("\u200D\u200C") == "\u200D\u200C");
  // Not UTF-8: a lone C1 byte, a stray continuation, a truncated and an overlong sequence,
  // an encoded surrogate; each byte shown, the text after it kept.
  CHECK(attn::show_controls("a\x9B[2Jb") == "a<0x9B>[2Jb");
  CHECK(attn::show_controls("\xE4\xB8") == "<0xE4><0xB8>");
  CHECK(attn::show_controls("\xC0\xAF/") == "<0xC0><0xAF>/");
  CHECK(attn::show_controls("\xED\xA0\x80") == "<0xED><0xA0><0x80>");
  CHECK(attn::show_controls("\xF0\x9F\x98\x80 ok") == "\xF0\x9F\x98\x80 ok");
}

TEST_CASE("show_controls_by_line: every line shown, its line feeds kept") {
  CHECK(attn::show_controls_by_line("a\x1b]0;t\x07\nb\u202E\n\n") == "a␛]0;t␇\nb<U+202E>\n\n");
  CHECK(attn::show_controls_by_line("x\r\ny") == "x␍\ny");
  CHECK(attn::show_controls_by_line("").empty());
}

TEST_CASE("text_lines: a story's lines, without \\n or \\r\\n, blank lines kept") {
  using Lines = std::vector<std::string_view>;
  CHECK(attn::text_lines("one\n\ntwo\r\nthree\n") == Lines{"one", "", "two", "three"});
  CHECK(attn::text_lines("one") == Lines{"one"});
  CHECK(attn::text_lines("\n\n") == Lines{"", ""});
  CHECK(attn::text_lines("").empty());
  CHECK(attn::text_lines("a\rb") == Lines{"a\rb"});  // a lone \r is no line break
}

TEST_CASE("md_text, tex_text, xml_text: a control character never reaches the output") {
  CHECK(attn::md_text("new\nline\n\nx\t|") == "new␊line␊␊x␉\\|");
  CHECK(attn::md_text(kControls) == attn::show_controls(kControls));
  CHECK(attn::tex_text("a\nb\x01\x7F") == "a[U+000A]b[U+0001][U+007F]");
  CHECK(attn::tex_text_unicode("张\n\t") == "张[U+000A][U+0009]");
  CHECK(attn::xml_text("a\nb\x01<") == "a␊b␁&lt;");
  // CDATA keeps the white space XML allows (a question's HTML has lines).
  CHECK(attn::xml_cdata("<p>\ta\nb\r\x01\x7F</p>") == "<![CDATA[<p>\ta\nb\r␁␡</p>]]>");
  for (const std::string& out : {attn::tex_text(kControls), attn::tex_text_unicode(kControls),
                                 attn::md_text(kControls), attn::xml_text(kControls)}) {
    CAPTURE(out);
    CHECK(std::none_of(out.begin(), out.end(),
                       [](char c) { return static_cast<unsigned char>(c) < 0x20 || c == 0x7F; }));
  }
}

TEST_CASE("md_code: one code span whatever backticks the text holds") {
  CHECK(attn::md_code("Q[a,b] = 1") == "`Q[a,b] = 1`");
  CHECK(attn::md_code("a`b") == "``a`b``");
  CHECK(attn::md_code("x``y`") == "``` x``y` ```");  // ends with a backtick: padded
  CHECK(attn::md_code("`") == "`` ` ``");
  CHECK(attn::md_code(" a ") == "`  a  `");  // CommonMark strips one space each side
  CHECK(attn::md_code("a\n\nb|") == "`a␊␊b|`");
}

TEST_CASE("xml_text: the five XML specials as entities, everything else kept") {
  CHECK(attn::xml_text("a<b & \"c\" 'd' e>") == "a&lt;b &amp; &quot;c&quot; &#39;d&#39; e&gt;");
  CHECK(attn::xml_text("José 张伟 ]]> {x}") == "José 张伟 ]]&gt; {x}");
}

TEST_CASE("xml_cdata: a CDATA end marker inside is split across two sections") {
  CHECK(attn::xml_cdata("<p>a & b</p>") == "<![CDATA[<p>a & b</p>]]>");
  CHECK(attn::xml_cdata("") == "<![CDATA[]]>");
  CHECK(attn::xml_cdata("a]]>b") == "<![CDATA[a]]]]><![CDATA[>b]]>");
  CHECK(attn::xml_cdata("]]>]]>") == "<![CDATA[]]]]><![CDATA[>]]]]><![CDATA[>]]>");
  CHECK(attn::xml_cdata("]]]>") == "<![CDATA[]]]]]><![CDATA[>]]>");
}

TEST_CASE("tex_text_unicode: the same escapes, every script kept as UTF-8") {
  CHECK(attn::tex_text_unicode("a_b 50% x&y") == "a\\_b 50\\% x\\&y");
  CHECK(attn::tex_text_unicode("√4 → Q₀") == "$\\surd$4 $\\to$ Q$_0$");
  CHECK(attn::tex_text_unicode("张伟 Łukasz Dvořák Алексей") ==
        "张\\hspace{0pt plus 0.1em}伟 Łukasz Dvořák Алексей");
  CHECK(attn::tex_text_unicode("Σοφία") == "Σοφία");  // Greek in a name stays a word
  // Typed quotes stay straight (TeX ligatures would curl both into ”).
  CHECK(attn::tex_text_unicode("Mary \"Molly\" O'Brien") ==
        "Mary \\textquotedbl{}Molly\\textquotedbl{} O\\textquotesingle{}Brien");
}

TEST_CASE("csv_field: RFC 4180 quoting only where needed") {
  CHECK(attn::csv_field("José Núñez") == "José Núñez");
  CHECK(attn::csv_field("O'Brien") == "O'Brien");
  CHECK(attn::csv_field("Smith, Ann") == "\"Smith, Ann\"");
  CHECK(attn::csv_field("Ann \"Bo\" Li") == "\"Ann \"\"Bo\"\" Li\"");
  CHECK(attn::csv_field(" padded") == "\" padded\"");
  CHECK(attn::csv_field("") == "");
}

TEST_CASE("csv_field: a field a spreadsheet would run as a formula is guarded by a leading '") {
  CHECK(attn::csv_field("=SUM(A1:A2)") == "'=SUM(A1:A2)");
  CHECK(attn::csv_field("@SUM(A1:A2)") == "'@SUM(A1:A2)");
  CHECK(attn::csv_field("+cmd|' /C calc'!A0") == "'+cmd|' /C calc'!A0");
  CHECK(attn::csv_field("-2+3") == "'-2+3");
  CHECK(attn::csv_field("\t=1") == "'\t=1");
  CHECK(attn::csv_field("=HYPERLINK(\"x\", \"y\")") == "\"'=HYPERLINK(\"\"x\"\", \"\"y\"\")\"");
  // Numbers stay numbers; a name with = inside is no formula.
  CHECK(attn::csv_field("-0.5") == "-0.5");
  CHECK(attn::csv_field("+3") == "+3");
  CHECK(attn::csv_field("1e-3") == "1e-3");
  CHECK(attn::csv_field("Ann=Bo") == "Ann=Bo");
  // Read back: the guard taken off, and only a guard.
  for (const char* s : {"=SUM(A1:A2)", "@x", "-2+3", "'quoted'", "O'Brien", "-0.5", ""})
    CHECK(attn::csv_value(attn::csv_field(s)) == s);
  CHECK(attn::csv_value("'=x") == "=x");
  CHECK(attn::csv_value("'plain") == "'plain");
}

// csv_field reads numbers with strtod, portable to the WebAssembly engine; the
// native library's std::from_chars is the reference it must agree with, on
// every case where the two readers differ in what they accept.
TEST_CASE("csv_field: a number is one exactly where std::from_chars reads one, in range") {
  const auto from_chars_number = [](std::string_view s) {
    double number = 0;
    const auto [end, error] = std::from_chars(s.data(), s.data() + s.size(), number);
    return error == std::errc() && end == s.data() + s.size();
  };
  const std::string_view cases[] = {"-0.5",      "-5",        "-.5",
                                    "-5.",       "-.",        "-",
                                    "--1",       "-+1",       "+-1",
                                    "++3",       "+ 3",       "- 3",
                                    "-\t3",      "+.5e3",     "-1e",
                                    "-1e+",      "-1e-3",     "-1E+03",
                                    "-1e3.5",    "-0x10",     "+0x1p3",
                                    "-0X1",      "-0",        "-00012",
                                    "-1,5",      "-1_000",    "-inf",
                                    "-INF",      "+inf",      "-infinity",
                                    "-Infinity", "-infinit",  "-nan",
                                    "+NaN",      "-nan(123)", "-nan(",
                                    "-nano",     "+in",       "-17976931348623157e292",
                                    "-1e308",    "-1e309",    "-1e999",
                                    "+1.8e308",  "-1e-307",   "-1e-310",
                                    "-4.9e-324", "-2e-324",   "-1e-400",
                                    "-0e999",    "-0.0e-999", "-0.000e400",
                                    "+1e-5000",  "-5 ",       "+5\n",
                                    "\t5",       "\r5",       "=5",
                                    "@5",        "-e5",       "-E",
                                    "-i",        "-n"};
  for (std::string_view s : cases) {
    CAPTURE(s);
    const std::string_view digits = s.substr(s.front() == '+' ? 1 : 0);
    const std::string field = attn::csv_field(s);
    const bool guarded = field.starts_with("'") || field.starts_with("\"'");
    CHECK(guarded != from_chars_number(digits));
  }
}

TEST_CASE("tex_text_unicode: Chinese may break where UAX #14 allows, through a glue") {
  // TeX breaks only at glue; between 注 and 意 there is none unless written.
  const std::string glue = "\\hspace{0pt plus 0.1em}";
  CHECK(attn::tex_text_unicode("注意力权重") ==
        "注" + glue + "意" + glue + "力" + glue + "权" + glue + "重");
  // Never before closing punctuation nor after opening; spaces are glue already.
  CHECK(attn::tex_text_unicode("权重（Q）。") == "权" + glue + "重" + glue + "（Q）。");
  CHECK(attn::tex_text_unicode("为 0.25，对") == "为 0.25，" + glue + "对");
  // Latin text, and tex_text (pdfLaTeX, no Chinese font), are left as they were.
  CHECK(attn::tex_text_unicode("head0.scores[river,bank]") == "head0.scores[river,bank]");
  CHECK(attn::tex_text("注意") == "[U+6CE8][U+610F]");
}
