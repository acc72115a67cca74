// The sheet and the answer key of an exercise, as a model that the Markdown,
// LaTeX and HTML renderers (src/teach/sheet_*.cpp) only print.
#pragma once

#include <armadillo>
#include <string>
#include <vector>

#include "teach/exercise.hpp"

namespace attn {

// One matrix on a sheet or a key, with its labels and (for a step) its formula.
struct SheetMatrix {
  std::string id;       // "X", "W_Q", "head0.scores"
  std::string name;     // "Input embeddings", "Scores"
  std::string formula;  // Unicode; empty for an input
  std::string latex;    // the formula in LaTeX math; empty for an input
  std::string shapes;   // "(3×2)·(3×2)ᵀ → 3×3"
  arma::mat value;
  std::vector<std::string> rows;
  std::vector<std::string> cols;
  bool asked = false;
};

// A line of the convention, in both notations.
struct ConventionLine {
  std::string text;   // Unicode, for Markdown and HTML
  std::string latex;  // LaTeX text mode with $math$
};

struct SheetModel {
  std::string student;
  std::string student_id;   // the roster's ID (学号), "" for a names-only roster
  std::string variant;      // the student's stream seed, 16 hex digits
  std::string lesson_file;  // relative to the output folder: "student-01/lesson.toml"
  std::string command;      // the arguments that regenerate every file
  int input_decimals = 1;
  int answer_decimals = 3;
  std::vector<ConventionLine> convention;
  std::vector<SheetMatrix> inputs;    // X, memory, W_Q, W_K, W_V: given on the sheet
  std::vector<SheetMatrix> asked;     // blank grids on the sheet
  std::vector<SheetMatrix> key;       // every intermediate matrix, in trace order
  std::vector<CellExpansion> worked;  // one cell per asked step
};

SheetModel make_sheet_model(const ExerciseSpec& spec, const Exercise& exercise);

// The words every format prints; a renderer adds only its markup and escaping.
// The student as every header names them: "Ada (ID 2024001)", or the name alone.
std::string student_label(const SheetModel& model);
std::string sheet_title(const SheetModel& model, bool key);  // "Attention exercise: Ada"
std::string sheet_meta(const SheetModel& model);  // "Variant …, inputs with 1 decimal, …"
std::string key_note(const SheetModel& model);    // what the key shows and where the lesson is

// One student's sheet or key; the LaTeX and HTML documents hold one page (or
// more) per model, a page break between students.
std::string render_sheet_markdown(const SheetModel& model, bool key);
std::string render_sheet_latex(const std::vector<SheetModel>& models, bool key);
std::string render_sheet_html(const std::vector<SheetModel>& models, bool key);

}  // namespace attn
