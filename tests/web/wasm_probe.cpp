// What a lesson's text is read and computed to, as exact bits, from one source
// compiled twice: natively (the program attn_wasm_probe) and by emscripten
// (build/wasm/attn_probe.js, wasm/CMakeLists.txt), so that tests/cli/test_wasm.py
// can compare the WebAssembly build's numbers with the native build's. For the
// tests only: the page's module (attn-engine.js) does not contain it.
#include <cstdint>
#include <cstring>
#include <exception>
#include <string>
#include <string_view>

#include <fmt/format.h>

#include "core/i18n.hpp"
#include "core/lesson.hpp"
#include "core/lesson_library.hpp"
#include "core/pipeline.hpp"
#include "core/reference_backend.hpp"
#include "core/toml.hpp"
#include "render/escape.hpp"

namespace {

// (std::memcpy: emscripten 3.1.6's libc++ has no std::bit_cast)
std::string bits(double value) {
  std::uint64_t word = 0;
  std::memcpy(&word, &value, sizeof word);
  return fmt::format("{:016x}", word);
}

// Every number of the TOML tree under `node`, one line each: "toml PATH BITS".
void toml_numbers(const toml::node& node, const std::string& path, std::string& out) {
  if (const toml::table* table = node.as_table()) {
    for (const auto& [key, value] : *table)
      toml_numbers(value, path + "." + std::string(key.str()), out);
  } else if (const toml::array* array = node.as_array()) {
    for (std::size_t i = 0; i < array->size(); ++i)
      toml_numbers(*array->get(i), fmt::format("{}[{}]", path, i), out);
  } else if (const auto* f = node.as_floating_point()) {
    out += fmt::format("toml {} {}\n", path, bits(f->get()));
  } else if (const auto* i = node.as_integer()) {
    out += fmt::format("toml {} {}\n", path, i->get());
  }
}

// The numbers of the TOML text, then every cell of every step of the lesson's
// trace on the reference backend: "given ID ROW COL BITS" for the numbers as
// the lesson reader took them, "step ID ROW COL BITS" for the computed ones.
std::string probe_lesson_text(std::string_view text) {
  std::string out;
  try {
    toml_numbers(toml::parse(text), "", out);
    const attn::Lesson lesson = attn::parse_lesson(text, "probe");
    attn::ReferenceBackend backend;
    const attn::Trace trace = attn::run_pipeline(lesson, backend);
    for (const attn::Step& step : trace.steps) {
      const char* kind = step.made.op == attn::Op::given ? "given" : "step";
      for (arma::uword r = 0; r < step.value.n_rows; ++r)
        for (arma::uword c = 0; c < step.value.n_cols; ++c)
          out += fmt::format("{} {} {} {} {}\n", kind, step.id, r, c, bits(step.value(r, c)));
    }
  } catch (const std::exception& e) {
    out += fmt::format("error {}\n", e.what());
  }
  return out;
}

// The embedded lessons, "lesson ID PATH BYTES" each, then a lesson's error in
// English and in Chinese (the embedded zh catalog): "error LANG MESSAGE".
std::string probe_embedded_text() {
  std::string out;
  for (const attn::EmbeddedLesson& e : attn::embedded_lessons())
    out += fmt::format("lesson {} {} {}\n", e.id, e.path, std::string_view(e.text).size());
  for (attn::Language lang : {attn::Language::en, attn::Language::zh}) {
    attn::set_languages(lang, lang);
    try {
      attn::parse_lesson("[lesson]\nid = 1\n", "probe");
      out += "error none\n";
    } catch (const std::exception& e) {
      out += fmt::format("error {} {}\n", lang == attn::Language::zh ? "zh" : "en", e.what());
    }
  }
  attn::set_languages(attn::Language::en, attn::Language::en);
  return out;
}

}  // namespace

#ifdef __EMSCRIPTEN__
#include <emscripten/emscripten.h>

namespace {
std::string result;  // the last call's answer
}

extern "C" {
EMSCRIPTEN_KEEPALIVE const char* probe_lesson(const char* text) {
  result = probe_lesson_text(text);
  return result.c_str();
}
EMSCRIPTEN_KEEPALIVE const char* probe_embedded() {
  result = probe_embedded_text();
  return result.c_str();
}
EMSCRIPTEN_KEEPALIVE const char* probe_csv_field(const char* text) {
  result = attn::csv_field(text);
  return result.c_str();
}
}

#else
#include <cstdio>
#include <fstream>
#include <sstream>

// wasm_probe lesson FILE: the lines of probe_lesson_text for the file's text;
// wasm_probe embedded: probe_embedded_text; wasm_probe csv TEXT...: csv_field
// of each TEXT, one a line.
int main(int argc, char** argv) {
  const std::string_view mode = argc > 1 ? argv[1] : "";
  std::string out;
  if (mode == "lesson" && argc == 3) {
    std::ifstream file(argv[2], std::ios::binary);
    std::ostringstream text;
    text << file.rdbuf();
    if (!file) return 2;
    out = probe_lesson_text(text.str());
  } else if (mode == "embedded") {
    out = probe_embedded_text();
  } else if (mode == "csv") {
    for (int i = 2; i < argc; ++i) out += attn::csv_field(argv[i]) + "\n";
  } else {
    std::fputs("usage: wasm_probe lesson FILE | embedded | csv TEXT...\n", stderr);
    return 2;
  }
  return std::fwrite(out.data(), 1, out.size(), stdout) == out.size() && std::fflush(stdout) == 0
             ? 0
             : 1;
}
#endif
