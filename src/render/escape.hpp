// Escaping text for the markup formats, shared by every writer (trace,
// --expand, sheets, the Moodle bank): one function per format.
#pragma once

#include <string>
#include <string_view>

namespace attn {

// Text mode: LaTeX specials escaped; Latin-1 letters kept (pdflatex's utf8
// input maps them to accents); the symbols of the trace (√ · × → ≈ ᵀ − …,
// subscript digits, Greek letters) as math; any other character written as
// [U+XXXX], since the default fonts have no glyph for it.
std::string tex_text(std::string_view s);
// The same for LuaLaTeX or XeLaTeX with fontspec and fonts that cover the
// text (the exercise sheets): every other character stays as UTF-8.
std::string tex_text_unicode(std::string_view s);

// Markdown: a backslash before the ASCII punctuation Markdown would read as
// markup (also `|`, so table cells stay whole).
std::string md_text(std::string_view s);

// XML (and HTML) text and attribute values: & < > " ' as entities.
std::string xml_text(std::string_view s);

// `s` as one or more CDATA sections: "]]>" cannot occur inside one, so each
// occurrence is split across two sections (]] ends one, > starts the next).
std::string xml_cdata(std::string_view s);

// A CSV field (RFC 4180): as is, or in double quotes (quotes inside doubled)
// when it holds a comma, a double quote, a line break or edge spaces.
std::string csv_field(std::string_view s);

}  // namespace attn
