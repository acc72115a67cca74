// Escaping for LaTeX text mode, Markdown and CSV: each special character, the
// trace's symbols, and characters the default LaTeX fonts cannot show.
#include <doctest/doctest.h>

#include <string>

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
  for (const char c : std::string("\\`*_{}[]<>#|!")) {
    CAPTURE(c);
    CHECK(attn::md_text(std::string(1, c)) == std::string("\\") + c);
  }
  CHECK(attn::md_text("a|b") == "a\\|b");
  CHECK(attn::md_text("*Ada* <b>") == "\\*Ada\\* \\<b\\>");
  CHECK(attn::md_text("0.5 - 1.2 + (x). 银行 √") == "0.5 - 1.2 + (x). 银行 √");
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
  CHECK(attn::tex_text_unicode("张伟 Łukasz Dvořák Алексей") == "张伟 Łukasz Dvořák Алексей");
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
