// The practice page's engine (docs/practice.md): the functions the page's
// script calls, compiled to WebAssembly by emscripten (cmake/wasm.cmake).
// Each takes and returns UTF-8 text; a result stays valid until the next call.
#include <emscripten/emscripten.h>

#include <string>

#include "web/engine.hpp"

namespace {
std::string result;  // the last call's answer, read by the page before its next call
}

extern "C" {

EMSCRIPTEN_KEEPALIVE const char* attn_practice(const char* lesson_toml, const char* saved,
                                               const char* action, const char* cell,
                                               const char* typed, const char* lang) {
  result = attn::practice_json({.lesson_toml = lesson_toml,
                                .saved = saved,
                                .action = action,
                                .cell = cell,
                                .typed = typed,
                                .lang = lang});
  return result.c_str();
}

EMSCRIPTEN_KEEPALIVE const char* attn_explore(const char* lesson_toml, const char* edit,
                                              const char* lang) {
  result = attn::explore_json({.lesson_toml = lesson_toml, .edit = edit, .lang = lang});
  return result.c_str();
}

}  // extern "C"
