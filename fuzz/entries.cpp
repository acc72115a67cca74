#include "entries.hpp"

#include <memory>
#include <string>

#include "backend/backend.hpp"
#include "core/error.hpp"
#include "core/golden.hpp"
#include "core/lesson.hpp"
#include "core/lesson_library.hpp"
#include "core/limits.hpp"
#include "core/pipeline.hpp"
#include "teach/answers.hpp"
#include "teach/exercise.hpp"
#include "teach/mark.hpp"

namespace attn::fuzz {

namespace {

Backend& cpu() {
  static const std::unique_ptr<Backend> backend = make_backend("cpu");
  return *backend;
}

// The trace the answers and golden inputs are read against.
const Trace& fixed_trace() {
  static const Trace trace = [] {
    set_small_limits();
    const EmbeddedLesson& fixed = embedded_lesson(kDefaultLesson);
    return run_pipeline(parse_lesson(fixed.text, fixed.path), cpu());
  }();
  return trace;
}

}  // namespace

void set_small_limits() {
  Limits& l = limits();
  l.file_mb = 1;
  l.tokens = 64;
  l.d_model = 64;
  l.heads = 8;
  l.step_mcells = 1;
  l.trace_gb = 1;
  l.output_mb = 16;
}

void lesson(std::string_view text) {
  set_small_limits();
  try {
    const Lesson parsed = parse_lesson(text, "fuzz.toml");
    run_pipeline(parsed, cpu());
  } catch (const InputError&) {
  }
}

void answers(std::string_view text) {
  const Trace& trace = fixed_trace();
  try {
    parse_answers_file(text, "answers.toml", trace);
  } catch (const InputError&) {
  }
}

void roster(std::string_view text) {
  set_small_limits();
  try {
    parse_roster(text, "roster.txt");
  } catch (const InputError&) {
  }
  csv_rows(text);  // throws nothing: every text is some rows
}

void golden(std::string_view text) {
  const Trace& trace = fixed_trace();
  try {
    const Golden parsed = parse_golden(text, "golden.toml");
    compare_with_golden(parsed, trace, kGoldenTolerance);
  } catch (const InputError&) {
  }
}

Entry entry(std::string_view target) {
  if (target == "lesson") return lesson;
  if (target == "answers") return answers;
  if (target == "roster") return roster;
  if (target == "golden") return golden;
  return nullptr;
}

}  // namespace attn::fuzz
