// One student's exercise and its sheet model, for the tests of the sheet
// renderers; and the key's numbers rounded by the test's own rule.
#pragma once

#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "render/numbers.hpp"
#include "teach/exercise.hpp"
#include "teach/exercise_sheets.hpp"

namespace testsupport {

struct SheetFixture {
  attn::ExerciseSpec spec;
  attn::Exercise exercise;
  attn::SheetModel model;

  explicit SheetFixture(const std::string& name, bool causal = false) {
    spec.seed = 11;
    spec.causal = causal;
    spec.command = "attn-trace exercise --seed 11";
    attn::normalise_spec(spec);
    exercise = attn::generate_exercise(spec, {{}, name, "slug"});
    model = attn::make_sheet_model(spec, exercise);
  }
  // Every row and column label (and the worked cells' labels) replaced by the
  // tokens of hostile_lesson.hpp: newlines, tabs, controls, markup specials.
  void use_hostile_labels(const std::vector<std::string>& tokens) {
    const auto relabel = [&](std::vector<std::string>& labels, std::size_t shift) {
      for (std::size_t i = 0; i < labels.size(); ++i)
        labels[i] = tokens[(i + shift) % tokens.size()];
    };
    for (std::vector<attn::SheetMatrix>* group : {&model.inputs, &model.asked, &model.key})
      for (attn::SheetMatrix& m : *group) {
        relabel(m.rows, 0);
        relabel(m.cols, 1);
      }
    for (attn::CellExpansion& e : model.worked) {
      e.row_label = tokens[e.row % tokens.size()];
      e.col_label = tokens[(e.col + 1) % tokens.size()];
    }
  }
  // The key's text of a step's cell, as every renderer prints it.
  std::string key_value(const char* step, std::size_t r, std::size_t c) const {
    return attn::format_fixed(exercise.trace.at(step).value(r, c), spec.answer_decimals);
  }
};

// `v` to `decimals` places by printf, "-inf" for a masked cell, no "-0.000".
inline std::string rounded(double v, int decimals) {
  if (std::isinf(v)) return v < 0 ? "-inf" : "inf";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
  std::string s = buf;
  if (s.starts_with('-') && s.find_first_not_of("-0.") == std::string::npos) s.erase(0, 1);
  return s;
}

}  // namespace testsupport
