// `attn-trace practice LESSON --format html`: one self-contained page (no
// network) that asks for the lesson's cells as the terminal does and marks
// them with the engine compiled to WebAssembly (engine.hpp), plus "explore":
// every given number editable, every step recomputed (docs/practice.md).
// Without JavaScript the page is a printable sheet: what is given and a blank
// grid for each step.
#pragma once

#include <string>

#include "core/lesson.hpp"
#include "teach/practice.hpp"

namespace attn {

struct PracticePageParts {
  std::string lesson_text;    // the lesson's TOML, as its file holds it
  std::string engine_script;     // attn-engine.js: emscripten's loader of the engine
  std::string engine_module_gz;  // attn-engine.wasm.gz: the engine, gzip-compressed
  std::string page_script;    // practice.js: the page's own script
  std::string page_style;     // practice.css
};

// The page in the document language (DocumentScope): `session` is a new
// one, its options (steps, cells) those of the command line.
std::string practice_page(const PracticeSession& session, const PracticePageParts& parts);

// The page's script and style, embedded at build time from src/web/.
const char* practice_page_script();
const char* practice_page_style();

}  // namespace attn
