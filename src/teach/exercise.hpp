// Exercise sheets for instructors: per-student variants of a small attention
// problem, drawn reproducibly from a seed and kept only when the hand work is reasonable.
//
// Shape key: n query tokens, m keys (n, or the memory's tokens), d model width,
// h heads, d_k per-head width (d_v = d_k).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/expand.hpp"
#include "core/lesson.hpp"
#include "core/trace.hpp"

namespace attn {

// SplitMix64 (Steele, Lea and Flood, 2014): a 64-bit generator whose every
// output is specified by integer arithmetic alone, so any machine and compiler
// draws the same numbers. No floating point is involved in drawing.
class SplitMix64 {
 public:
  explicit SplitMix64(std::uint64_t state) : state_(state) {}
  std::uint64_t next();
  // Uniform on [0, bound), bound >= 1: outputs below 2^64 mod bound are drawn
  // again, so the remaining range is a whole multiple of bound (no modulo bias).
  std::uint64_t below(std::uint64_t bound);
  // Uniform on [low, high].
  std::int64_t between(std::int64_t low, std::int64_t high);

 private:
  std::uint64_t state_;
};

// The SplitMix64 output function on one value: spreads the bits of the seed.
std::uint64_t mix64(std::uint64_t x);
// FNV-1a, 64 bits (offset basis 0xcbf29ce484222325, prime 0x100000001b3), over the bytes of `text`.
std::uint64_t fnv1a64(std::string_view text);
// A student's stream starts at mix64(mix64(seed) XOR fnv1a64(NFC of name)): it
// depends on the seed and the name only, never on the other names of the roster,
// nor on how the name's accents are encoded (NFC and NFD give the same stream).
std::uint64_t student_stream_seed(std::uint64_t seed, std::string_view name);

// What the instructor asked for (`exercise`, docs/exercises.md).
struct ExerciseSpec {
  std::uint64_t seed = 0;
  std::size_t tokens = 3;
  std::size_t d_model = 3;
  std::size_t d_k = 2;
  std::size_t heads = 1;
  std::size_t memory_tokens = 0;  // > 0: cross-attention, keys and values from a memory
  bool causal = false;
  bool key_padding = false;      // the last key is padding
  int decimals = 1;              // inputs are multiples of 10^-decimals in [-1, 1]
  int answer_decimals = 3;       // the key and the students' answers
  std::vector<std::string> ask;  // step ids, in trace order (normalise_spec)
  // The backward pass: "" (none), "upstream" (a drawn dL/d(concat)) or
  // "half_sq" (a drawn target, L = ½‖concat − target‖²); normalise_spec makes
  // it "upstream" when a grad.* step is asked and none was chosen.
  std::string backward;
  std::string command;           // the arguments that regenerate the files
};

// Limits that keep a sheet doable by hand (and its LaTeX within bmatrix widths).
inline constexpr std::size_t kMaxExerciseTokens = 8;
inline constexpr std::size_t kMaxExerciseWidth = 8;
inline constexpr std::size_t kMaxExerciseHeads = 4;
inline constexpr int kMaxExerciseDecimals = 2;
inline constexpr int kMaxAnswerDecimals = 6;
inline constexpr int kMaxDraws = 10000;

// Checks the sizes against the limits and turns the asked steps into step ids
// in trace order ("scores" -> "head0.scores"). Throws InputError naming the
// option and the fix; an unknown step lists the valid ones.
void normalise_spec(ExerciseSpec& spec);

struct Student {
  std::string id;    // the roster's student ID (学号), "" for a names-only roster
  std::string name;  // as on the sheet, in NFC
  std::string slug;  // the folder of the student's files (student_folder)
};

// The folder of a name, which depends on that name alone: folder_of(name)
// (teach/names.hpp: "José Núñez" -> "josé-núñez"), or, for a name without a
// letter or digit, "student-" and the first 8 hex digits of fnv1a64(NFC name).
std::string student_folder(std::string_view name);

// "Student 1" ... "Student N", in folders student-01 ... student-99, student-100 ...
// (two digits at least, whatever N is: a student's folder never depends on N).
std::vector<Student> numbered_students(std::size_t count);
// One name per line; blank lines and lines starting with '#' are skipped; each
// name is normalised to NFC. Throws InputError naming the file and line for a
// line that is not UTF-8, a name longer than kMaxNameChars, a duplicate name (also one spelled with
// other code points), two names that get the same folder, a control character, or an empty roster.
std::vector<Student> read_roster(const std::string& path);
// Parses roster text (read_roster without the file); `origin` names it in errors.
std::vector<Student> parse_roster(std::string_view text, const std::string& origin);

struct Exercise {
  Student student;
  std::uint64_t stream_seed = 0;
  int draws = 0;            // how many draws it took: 1 when the first was kept
  std::string lesson_toml;  // the exercise as a lesson file
  std::string fingerprint;  // lesson_fingerprint(lesson_toml), for roster.csv
  Lesson lesson;            // lesson_toml, parsed by the ordinary loader
  Trace trace;              // run_pipeline of `lesson` on the CPU backend
  std::vector<std::string> asked;
  std::vector<CellExpansion> worked;  // one cell of each asked step (worked_cell)
};

// The integer grid values of one draw: entry / 10^decimals is the number.
struct ExerciseDraw {
  std::vector<std::vector<std::int64_t>> X, memory, W_Q, W_K, W_V;
  std::vector<std::vector<std::int64_t>> upstream;  // spec.backward: the upstream or the target
};

// Draws one candidate from `rng`, in this order, each matrix row by row:
// X, memory (cross only), W_Q, W_K, W_V, and with a backward pass the upstream
// gradient or the target (n × heads·d_k, drawn last, so that the forward
// inputs of a seed are those of the same seed without it); each entry uniform
// on [-10^D, 10^D].
ExerciseDraw draw_inputs(const ExerciseSpec& spec, SplitMix64& rng);

// The lesson TOML of a draw (loads with parse_lesson; numbers written with D decimals).
std::string exercise_lesson_toml(const ExerciseSpec& spec, const Student& student,
                                 const ExerciseDraw& draw, int draws);

// A rule of docs/exercises.md that a draw breaks: the rule's short name
// ("flat row") and where, for people.
struct RuleBroken {
  std::string rule;
  std::string detail;
};

// The first rule on the inputs a draw breaks (exact integer checks), if any.
std::optional<RuleBroken> input_rule_broken(const ExerciseDraw& draw);
// The first rule on the computed steps it breaks, if any. `trace` is the
// draw's lesson run on the CPU backend.
std::optional<RuleBroken> trace_rule_broken(const ExerciseSpec& spec, const Trace& trace);

// The steps the key shows, in trace order: every step but the inputs, leaving
// out what repeats another step (head slices and concat with one head, masked
// when nothing is masked) unless it is asked.
std::vector<const Step*> key_steps(const ExerciseSpec& spec, const Trace& trace);

// The cell the key works out for an asked step: the last query's first column
// (the row with every key open under a causal mask), except for `masked`, which
// shows the first masked cell in row order when there is one.
std::pair<std::size_t, std::size_t> worked_cell(const Trace& trace, const std::string& step);

// Draws until a candidate breaks no rule. Throws InputError when kMaxDraws
// candidates all broke one (naming the student and the rule broken most often).
Exercise generate_exercise(const ExerciseSpec& spec, const Student& student);

}  // namespace attn
