// A lesson and its trace on the CPU backend, for the tests of the layers above
// the backend (render, teach): `const Traced rb("river-bank"); rb.trace.at("Q")`.
#pragma once

#include <utility>

#include "backend/cpu_backend.hpp"
#include "core/lesson_library.hpp"
#include "core/pipeline.hpp"

namespace attn::testing {

struct Traced {
  Lesson lesson;
  Trace trace;
  explicit Traced(Lesson l) : lesson(std::move(l)) {
    CpuBackend cpu;
    trace = run_pipeline(lesson, cpu);
  }
  // An embedded lesson by id, or a lesson file by path.
  explicit Traced(const char* id) : Traced(find_lesson(id)) {}
};

}  // namespace attn::testing
