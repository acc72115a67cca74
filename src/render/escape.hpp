// Escaping text for the markup formats, shared by every writer (trace,
// --expand, sheets, the Moodle bank): one function per format.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "core/i18n.hpp"

namespace attn {

// Control characters (U+0000-U+001F and DEL, U+007F) may sit in any text a
// lesson gives: a token, a title, a story. No format shows them as they are
// (a newline would end a table row or a heading, LaTeX refuses most), so each
// function below shows them visibly: as their Unicode control pictures (␊ for
// a newline, ␉ for a tab, ␁, ␡) in plain text, Markdown and XML, and as the
// code point ([U+000A]) in LaTeX, whose fonts have no control pictures.

// Plain text (a terminal): every control character as its control picture;
// the C1 controls, the bidirectional controls (U+202E …) and the invisible
// U+200B, U+2060 and U+FEFF as <U+XXXX>; a byte that is not part of well-formed
// UTF-8 as <0xNN>. What is left cannot move the cursor, change the terminal's
// state or reorder what the reader sees.
std::string show_controls(std::string_view s);

// A report of several lines for a terminal: each line through show_controls,
// its line feeds kept.
std::string show_controls_by_line(std::string_view s);

// A multi-line text (a story) as its lines, without their "\n" or "\r\n"; a
// line break at the end starts no further line.
std::vector<std::string_view> text_lines(std::string_view s);

// Text mode: LaTeX specials escaped; Latin-1 letters kept (pdflatex's utf8
// input maps them to accents); the symbols of the trace (√ · × → ≈ ᵀ − …,
// subscript digits, Greek letters) as math; any other character written as
// [U+XXXX], since the default fonts have no glyph for it.
std::string tex_text(std::string_view s);
// The same for LuaLaTeX or XeLaTeX with fontspec and fonts that cover the
// text (the exercise sheets): every other character stays as UTF-8.
std::string tex_text_unicode(std::string_view s);
// tex_text in English, tex_text_unicode in Chinese: a LaTeX text with Chinese
// in it is for LuaLaTeX with a CJK font (the sheets; run's LaTeX under --lang zh).
std::string tex_text_in(Language lang, std::string_view s);
// The same for the words of a formula, inside math's \text{}: a box no line
// breaks inside, so without tex_text_unicode's break glue (which KaTeX, on the
// HTML page, would not read).
std::string tex_math_text_in(Language lang, std::string_view s);

// Markdown: a backslash before the ASCII punctuation Markdown would read as
// markup (also `|`, so table cells stay whole; `$` and `~`, which GitHub
// reads as math and strike-through; `&`, which would start an entity).
std::string md_text(std::string_view s);

// Markdown: `s` as one code span, whatever backticks it holds (the fence is
// longer than any run of them inside).
std::string md_code(std::string_view s);

// XML (and HTML) text and attribute values: & < > " ' as entities, every
// control character as its picture (a newline too, which HTML would show as a
// space: write a text of several lines line by line).
std::string xml_text(std::string_view s);

// `s` as one or more CDATA sections: "]]>" cannot occur inside one, so each
// occurrence is split across two sections (]] ends one, > starts the next).
// Tab, line feed and carriage return stay; other control characters, which
// XML 1.0 has no place for, become their pictures.
std::string xml_cdata(std::string_view s);

// A CSV field (RFC 4180): as is, or in double quotes (quotes inside doubled)
// when it holds a comma, a double quote, a line break or edge spaces. A field
// a spreadsheet would run as a formula (one that starts with =, +, -, @, a tab
// or a carriage return and is not a number) is guarded by a leading ', as
// OWASP recommends and spreadsheets show it: "'=SUM(A1:A2)".
std::string csv_field(std::string_view s);

// The text a field csv_field wrote stands for: its ' guard taken off.
std::string csv_value(std::string_view field);

}  // namespace attn
