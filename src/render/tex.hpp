// LaTeX text escaping shared by every LaTeX writer (trace, --expand, sheets):
// specials escaped, common math symbols written as LaTeX, the rest kept only
// where pdflatex's default fonts have a glyph.
#pragma once

#include <string>
#include <string_view>

namespace attn {

// Text mode: LaTeX specials escaped; Latin-1 letters kept (pdflatex's utf8
// input maps them to accents); the symbols of the trace (√ · × → ≈ ᵀ − …,
// subscript digits, Greek letters) as math; any other character written as
// [U+XXXX], since the default fonts have no glyph for it.
std::string tex_text(std::string_view s);

}  // namespace attn
