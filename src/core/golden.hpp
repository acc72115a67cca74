// Golden files: every step of a lesson's trace written to TOML with 17
// significant digits, read back, and compared cell by cell with a new trace.
#pragma once

#include <armadillo>
#include <optional>
#include <string>
#include <vector>

#include "core/i18n.hpp"
#include "core/trace.hpp"

namespace attn {

inline constexpr double kGoldenTolerance = 1e-12;

// One step as the golden file holds it.
struct GoldenStep {
  std::string id;
  arma::mat value;
};

struct Golden {
  std::string lesson_id;
  std::vector<GoldenStep> steps;
};

// A matrix the lesson gives (X, W_Q, ...) with more cells than this is not
// repeated in its golden file: the lesson file holds it already, and a d_model
// 512 walkthrough would otherwise carry megabytes of its own weights. Every
// computed step is always written.
inline constexpr std::size_t kGoldenGivenCells = 4096;

// Whether the golden file of a trace holds `step` (see kGoldenGivenCells).
bool kept_in_golden(const Step& step);

// The golden file of a trace: [golden] lesson = id, then one [[step]] per
// step id kept (kept_in_golden) with shape and data; -inf / inf / nan written
// as TOML's -inf / inf / nan.
std::string golden_toml(const Trace& trace);

// Parses a golden file. `origin` names it in errors (InputError: file, line, key, fix).
Golden parse_golden(std::string_view text, const std::string& origin);

// Reads a golden file; a missing file is nullopt, a malformed one an InputError.
std::optional<Golden> read_golden_file(const std::string& path);

// A difference between the golden file and the trace.
struct GoldenMismatch {
  std::string step;
  std::optional<std::pair<std::size_t, std::size_t>> cell;  // first differing cell, if any
  double golden = 0.0;
  double computed = 0.0;
  Message reason;  // for people: "differs by 3.2e-09 (tolerance 1e-12)", in either language
};

// Two numbers are the same when both are NaN, both the same infinity, or
// within tolerance_at(golden, tolerance) of each other.
bool same_number(double golden, double computed, double tolerance);

// `tolerance` as it applies at `golden`: absolute up to |golden| = 1, relative
// above (tolerance · |golden|).
double tolerance_at(double golden, double tolerance);

// Every step of `trace` against `golden`: missing or extra steps (a large
// given matrix is not missing), shapes, and the first cell of each step that
// differs by more than `tolerance`.
std::vector<GoldenMismatch> compare_with_golden(const Golden& golden, const Trace& trace,
                                                double tolerance);

}  // namespace attn
