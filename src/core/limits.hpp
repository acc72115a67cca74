// Limits on what one run may read, compute and write, checked before the
// memory is allocated (docs/limits.md). The defaults are far above every real
// lesson (a 4096-token, d_model 1024 trace fits); `--limit NAME=VALUE` on the
// command line raises or lowers one for the whole run.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace attn {

struct Lesson;

struct Limits {
  std::uint64_t file_mb = 64;       // any file read (reading takes about 50× its size)
  std::uint64_t tokens = 16384;     // queries, and keys of the memory
  std::uint64_t d_model = 16384;    // columns of X, memory, W_* and d_ff
  std::uint64_t heads = 1024;       // heads of a lesson
  std::uint64_t step_mcells = 256;  // cells of the largest step, in millions
  std::uint64_t trace_gb = 8;       // memory of the whole trace, in GiB (8-byte cells)
  std::uint64_t output_mb = 1024;   // JSON, Markdown or LaTeX written at once
};

// The limits of this run (the defaults until the command line sets one).
Limits& limits();

// "tokens=20000" -> sets that limit. Throws InputError naming the known
// limits for an unknown name, or a value that is not a whole number ≥ 1.
void set_limit(std::string_view assignment);

// The names and defaults, for --help and errors: "file_mb=256, tokens=16384, ...".
std::string limit_names();

// Throws InputError when a file of `bytes` is above file_mb.
void check_file_size(const std::string& path, std::uint64_t bytes);

// Throws InputError when the lesson is above a limit: its tokens, widths,
// heads, its largest step or the memory its whole trace needs.
void check_lesson_limits(const Lesson& lesson);

// The cells of every step of the lesson's trace (an estimate within a few
// percent, from the shapes alone) and of its largest step.
struct TraceSize {
  std::uint64_t cells = 0;
  std::uint64_t largest_step = 0;
};
TraceSize trace_size(const Lesson& lesson);

// Throws InputError when `bytes` of `what` (e.g. "the JSON of this trace")
// would be above output_mb; `fix` says how to ask for less.
void check_output_size(std::string_view what, std::uint64_t bytes, std::string_view fix);

}  // namespace attn
