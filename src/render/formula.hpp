// The formula of each step, for people: rendered from the step's operation and
// inputs (core/trace.hpp), in Unicode for text and in LaTeX math, with shapes.
#pragma once

#include <string>

#include "core/i18n.hpp"
#include "core/lesson.hpp"
#include "core/trace.hpp"

namespace attn {

struct StepFormula {
  std::string text;    // Unicode: "S₀ = Q₀·K₀ᵀ"
  std::string latex;   // the same in LaTeX math, without delimiters
  std::string shapes;  // "(4×4)·(4×4)ᵀ → 4×4"
};

// `lang`: the language of the words in `text` (the text renderer passes
// language(); JSON, exercise sheets and answer templates keep English).
StepFormula step_formula(const Lesson& lesson, const Trace& trace, const Step& step,
                         Language lang = Language::en);

// A gradient step's formula (Op::backward), from its vjps (render/formula_backward.cpp).
StepFormula backward_formula(const Trace& trace, const Step& step, Language lang);

// "₀", "₁₂": a head number as a subscript.
std::string subscript(std::size_t n);

}  // namespace attn
