// Golden files: every step of a lesson's trace written to TOML with 17
// significant digits, read back, and compared cell by cell with a new trace.
#pragma once

#include <armadillo>
#include <optional>
#include <string>
#include <vector>

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

// The golden file of a trace: [golden] lesson = id, then one [[step]] per
// step id with shape and data; -inf / inf / nan written as TOML's -inf / inf / nan.
std::string golden_toml(const Trace& trace);

// Parses a golden file. `origin` names it in errors (InputError: file, line, key, fix).
Golden parse_golden(std::string_view text, const std::string& origin);

// Reads a golden file; a missing file is nullopt, a malformed one an InputError.
std::optional<Golden> read_golden_file(const std::string& path);

// Writes the golden file of `trace` atomically (the old file stays whole on failure).
void write_golden_file(const std::string& path, const Trace& trace);

// A difference between the golden file and the trace.
struct GoldenMismatch {
  std::string step;
  std::optional<std::pair<std::size_t, std::size_t>> cell;  // first differing cell, if any
  double golden = 0.0;
  double computed = 0.0;
  std::string reason;  // for people: "differs by 3.2e-09 (tolerance 1e-12)"
};

// Two numbers are the same when both are NaN, both the same infinity, or
// within `tolerance` of each other.
bool same_number(double golden, double computed, double tolerance);

// Every step of `trace` against `golden`: missing or extra steps, shapes,
// and the first cell of each step that differs by more than `tolerance`.
std::vector<GoldenMismatch> compare_with_golden(const Golden& golden, const Trace& trace,
                                                double tolerance);

}  // namespace attn
