// The exercise generator: a reproducible stream per student, draws on a small
// grid, the rejection rules of docs/exercises.md, and the exercise as a lesson.
#include "teach/exercise.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <map>

#include "backend/backend.hpp"
#include "core/atomic_file.hpp"
#include "core/error.hpp"
#include "core/i18n.hpp"
#include "core/number_text.hpp"
#include "core/pipeline.hpp"
#include "render/json_writer.hpp"
#include "render/numbers.hpp"
#include "teach/fingerprint.hpp"
#include "teach/mark.hpp"
#include "teach/names.hpp"

namespace attn {

namespace {

using IntMatrix = std::vector<std::vector<std::int64_t>>;

// Token labels: a sentence for the queries, its translation for a memory.
constexpr const char* kQueryWords[kMaxExerciseTokens] = {"the", "cat",  "sat", "on",
                                                         "a",   "warm", "mat", "today"};
constexpr const char* kMemoryWords[kMaxExerciseTokens] = {"le", "chat",  "dort",  "sur",
                                                          "un", "tapis", "chaud", "hier"};
constexpr const char* kPadToken = "<pad>";

constexpr double kSmallestSpread = 0.05;
// A value closer than this to a rounding midpoint could print differently on
// another machine (and has two defensible roundings): such a draw is rejected.
constexpr double kMidpointMargin = 1e-9;

// 10^decimals, exactly (no pow(): libm's pow is not correctly rounded everywhere).
std::int64_t grid_units(int decimals) {
  std::int64_t units = 1;
  for (int i = 0; i < decimals; ++i) units *= 10;
  return units;
}

// The weights must show: every open weight at least 10^(1-A), two significant digits.
double smallest_weight(int answer_decimals) {
  return 10.0 / static_cast<double>(grid_units(answer_decimals));
}

// k / 10^decimals written exactly, from the integer: -5, 1 -> "-0.5".
std::string grid_number(std::int64_t k, int decimals) {
  const std::int64_t units = grid_units(decimals);
  const std::uint64_t magnitude =
      k < 0 ? static_cast<std::uint64_t>(-k) : static_cast<std::uint64_t>(k);
  const std::string sign = k < 0 ? "-" : "";
  if (decimals == 0) return fmt::format("{}{}", sign, magnitude);
  return fmt::format("{}{}.{:0{}}", sign, magnitude / static_cast<std::uint64_t>(units),
                     magnitude % static_cast<std::uint64_t>(units), decimals);
}

// -> (rows, cols) integers, each uniform on [-units, units], drawn row by row.
IntMatrix draw_matrix(SplitMix64& rng, std::size_t rows, std::size_t cols, std::int64_t units) {
  IntMatrix M(rows, std::vector<std::int64_t>(cols));
  for (auto& row : M)
    for (std::int64_t& v : row) v = rng.between(-units, units);
  return M;
}

// `key = [[...], ...]`, one row per line, rows aligned under the first.
std::string toml_matrix(std::string_view key, const IntMatrix& M, int decimals) {
  const std::string indent(key.size() + 4, ' ');
  std::string out = fmt::format("{} = [", key);
  for (std::size_t r = 0; r < M.size(); ++r) {
    out += r ? ",\n" + indent + "[" : "[";
    for (std::size_t c = 0; c < M[r].size(); ++c)
      out += fmt::format("{}{}", c ? ", " : "", grid_number(M[r][c], decimals));
    out += "]";
  }
  return out + "]\n";
}

std::vector<std::string> query_tokens(const ExerciseSpec& spec) {
  std::vector<std::string> out(kQueryWords, kQueryWords + spec.tokens);
  if (spec.key_padding && spec.memory_tokens == 0) out.back() = kPadToken;
  return out;
}

std::vector<std::string> memory_tokens(const ExerciseSpec& spec) {
  std::vector<std::string> out(kMemoryWords, kMemoryWords + spec.memory_tokens);
  if (spec.key_padding && !out.empty()) out.back() = kPadToken;
  return out;
}

std::optional<RuleBroken> zero_or_equal_rows(const IntMatrix& M, const char* name) {
  for (std::size_t r = 0; r < M.size(); ++r) {
    if (std::all_of(M[r].begin(), M[r].end(), [](std::int64_t v) { return v == 0; }))
      return RuleBroken{N_("zero row"), fmt::format("{} row {} is all zeros", name, r)};
    for (std::size_t s = 0; s < r; ++s)
      if (M[s] == M[r])
        return RuleBroken{N_("equal rows"), fmt::format("{} rows {} and {} are equal", name, s, r)};
  }
  return std::nullopt;
}

std::optional<RuleBroken> zero_rows(const IntMatrix& M, const char* name) {
  for (std::size_t r = 0; r < M.size(); ++r)
    if (std::all_of(M[r].begin(), M[r].end(), [](std::int64_t v) { return v == 0; }))
      return RuleBroken{N_("zero row"), fmt::format("{} row {} is all zeros", name, r)};
  return std::nullopt;
}

std::optional<RuleBroken> zero_column(const IntMatrix& W, const char* name) {
  if (W.empty()) return std::nullopt;
  for (std::size_t c = 0; c < W.front().size(); ++c)
    if (std::all_of(W.begin(), W.end(), [c](const auto& row) { return row[c] == 0; }))
      return RuleBroken{N_("zero column"), fmt::format("{} column {} is all zeros", name, c)};
  return std::nullopt;
}

// Distance of `value` to the nearest midpoint between two numbers of `decimals` decimals.
double distance_to_midpoint(double value, int decimals) {
  const double units = static_cast<double>(grid_units(decimals));
  const double scaled = value * units;
  return std::abs(scaled - std::floor(scaled) - 0.5) / units;
}

// A gradient step that only copies or places its reader's gradient (grad.Q
// from grad.head0.Q, grad.head0.context from grad.concat): with one head it
// repeats that step.
bool copies_a_gradient(const Step& step) {
  return step.made.op == Op::backward &&
         std::all_of(step.made.vjps.begin(), step.made.vjps.end(), [](const Vjp& v) {
           return v.kind == VjpKind::same || v.kind == VjpKind::unslice ||
                  v.kind == VjpKind::concat_part;
         });
}

// grad.head{h}.scaled: with nothing masked, grad.head{h}.masked once more.
bool gradient_of_scaled(const Trace& trace, const Step& step) {
  return step.step_id.is_gradient() &&
         trace.at(step.step_id.forward().str()).kind == StepKind::scaled;
}

// The step `name` means (an id, or a head-0 step's short name: Trace::id_of)
// when students may be asked it; empty otherwise.
std::string step_for_short_name(const Trace& trace, const std::string& name,
                                const std::vector<std::string>& valid) {
  std::string id = trace.id_of(name);
  // grad.scores: the gradient of head 0's scores, as scores is head0.scores.
  if (name.starts_with("grad.") && std::find(valid.begin(), valid.end(), id) == valid.end())
    id = "grad." + trace.id_of(name.substr(5));
  return std::find(valid.begin(), valid.end(), id) != valid.end() ? id : std::string();
}

// A lesson id (letters, digits, '.', '_', '-' of ASCII: the loader's rule) for
// a student: "exercise-<folder>" when the folder is ASCII, else the name's hash.
std::string lesson_id(const Student& student) {
  const bool ascii = std::all_of(student.slug.begin(), student.slug.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '-';
  });
  return ascii ? fmt::format("exercise-{}", student.slug)
               : fmt::format("exercise-{:016x}", fnv1a64(student.name));
}

// Every size and number of decimals of `spec` within what a sheet done by
// hand allows.
void check_spec_limits(const ExerciseSpec& spec) {
  auto limit = [](std::size_t value, std::size_t low, std::size_t high, const char* option) {
    if (value < low || value > high)
      throw InputError(tr_format("{} {}: choose {} to {} (exercises are computed by hand)",
                                 option, value, low, high));
  };
  limit(spec.tokens, 1, kMaxExerciseTokens, "--tokens");
  limit(spec.d_model, 1, kMaxExerciseWidth, "--d-model");
  limit(spec.d_k, 1, kMaxExerciseWidth, "--d-k");
  limit(spec.heads, 1, kMaxExerciseHeads, "--heads");
  if (spec.heads * spec.d_k > kMaxExerciseWidth)
    throw InputError(
        tr_format("--heads {} × --d-k {} = {} projection columns; keep heads × d_k "
                    "at most {} so the sheet fits a page",
                    spec.heads, spec.d_k, spec.heads * spec.d_k, kMaxExerciseWidth));
  if (spec.memory_tokens > 0) limit(spec.memory_tokens, 1, kMaxExerciseTokens, "--cross");
  const std::size_t keys = spec.memory_tokens > 0 ? spec.memory_tokens : spec.tokens;
  if (spec.key_padding && keys < 2)
    throw InputError(spec.memory_tokens > 0
                         ? tr_format("--key-padding pads the last of {} key(s), leaving none to "
                                     "attend to; use at least 2 memory tokens (--cross)",
                                     keys)
                         : tr_format("--key-padding pads the last of {} key(s), leaving none to "
                                     "attend to; use at least 2 tokens",
                                     keys));
  if (!spec.backward.empty() && spec.backward != "upstream" && spec.backward != "half_sq")
    throw InputError(tr_format("--backward {}: choose upstream or half_sq", spec.backward));
  if (spec.decimals < 0 || spec.decimals > kMaxExerciseDecimals)
    throw InputError(
        tr_format("--decimals {}: choose 0 to {} (inputs on a grid a person can "
                    "multiply by hand)",
                    spec.decimals, kMaxExerciseDecimals));
  const int min_answer = std::max(2, spec.decimals);
  if (spec.answer_decimals < min_answer || spec.answer_decimals > kMaxAnswerDecimals)
    throw InputError(
        tr_format("--answer-decimals {}: choose {} to {} (at least --decimals, and "
                    "at least 2 so that weights can be told apart)",
                    spec.answer_decimals, min_answer, kMaxAnswerDecimals));
}

// The trace of an exercise of `spec`'s shape with every input 0: its steps
// are the ones such an exercise has.
Trace shape_trace(const ExerciseSpec& spec) {
  const Student probe{{}, "probe", "probe"};
  ExerciseSpec zero_spec = spec;
  zero_spec.ask.clear();
  ExerciseDraw zeros;
  zeros.X = IntMatrix(spec.tokens, std::vector<std::int64_t>(spec.d_model));
  if (spec.memory_tokens > 0)
    zeros.memory = IntMatrix(spec.memory_tokens, std::vector<std::int64_t>(spec.d_model));
  zeros.W_Q = zeros.W_K = zeros.W_V =
      IntMatrix(spec.d_model, std::vector<std::int64_t>(spec.heads * spec.d_k));
  zeros.upstream = IntMatrix(spec.tokens, std::vector<std::int64_t>(spec.heads * spec.d_k));
  const Lesson lesson = parse_lesson(exercise_lesson_toml(zero_spec, probe, zeros, 1), "probe");
  const std::unique_ptr<Backend> backend = make_backend("cpu");
  return run_pipeline(lesson, *backend);
}

// The ids of the steps `asked` names (short names mean head 0; none asked:
// scores, scaled, weights and context), each one of `valid`, the steps of
// `trace` students can compute, and a masked step only where something is
// masked.
std::vector<std::string> asked_step_ids(const std::vector<std::string>& asked,
                                        const std::vector<std::string>& valid, const Trace& trace) {
  const std::vector<std::string> names =
      asked.empty() ? std::vector<std::string>{"head0.scores", "head0.scaled", "head0.weights",
                                               "head0.context"}
                    : asked;
  std::vector<std::string> ids;
  for (const std::string& name : names) {
    const std::string id = step_for_short_name(trace, name, valid);
    if (id.empty())
      throw InputError(tr_format(
          "--ask {}: not a step students can compute in this exercise; choose from {} (or "
          "scores, scaled, masked, exp, row_sum, weights, context for head 0)",
          name, fmt::join(valid, ", ")));
    if (trace.at(id).kind == StepKind::masked && !arma::any(arma::vectorise(trace.mask)))
      throw InputError(tr_format(
          "--ask {}: nothing is masked in this exercise, so {} would just repeat the scaled "
          "scores; add --causal or --key-padding, or ask another step",
          name, id));
    ids.push_back(id);
  }
  return ids;
}

}  // namespace

std::uint64_t mix64(std::uint64_t z) {
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

std::uint64_t SplitMix64::next() {
  state_ += 0x9E3779B97F4A7C15ull;
  return mix64(state_);
}

std::uint64_t SplitMix64::below(std::uint64_t bound) {
  const std::uint64_t threshold = (0 - bound) % bound;  // 2^64 mod bound
  for (;;) {
    const std::uint64_t x = next();
    if (x >= threshold) return x % bound;
  }
}

std::int64_t SplitMix64::between(std::int64_t low, std::int64_t high) {
  const std::uint64_t span = static_cast<std::uint64_t>(high - low) + 1;
  return low + static_cast<std::int64_t>(below(span));
}

std::uint64_t fnv1a64(std::string_view text) {
  std::uint64_t hash = 0xcbf29ce484222325ull;
  for (char c : text) {
    hash ^= static_cast<unsigned char>(c);
    hash *= 0x100000001b3ull;
  }
  return hash;
}

std::uint64_t student_stream_seed(std::uint64_t seed, std::string_view name) {
  return mix64(mix64(seed) ^ fnv1a64(nfc(name)));
}

std::string student_folder(std::string_view name) {
  const std::string folder = folder_of(name);
  if (!folder.empty()) return folder;
  return fmt::format("student-{:08x}", fnv1a64(nfc(name)) >> 32);
}

std::vector<Student> numbered_students(std::size_t count) {
  std::vector<Student> out;
  for (std::size_t i = 1; i <= count; ++i)
    out.push_back({{},
                   fmt::format(fmt::runtime(translate(document_language(), "Student {}")), i),
                   fmt::format("student-{:02}", i)});
  return out;
}

namespace {

// The refusal of a roster line with a control character.
[[noreturn]] void control_character(const std::string& origin, int line_number) {
  throw InputError(tr_format(
      "{}:{}: the name contains a control character; write one plain name per line", origin,
      line_number));
}

// A name of line `line_number`, trimmed; too long, or with a control
// character, it is refused.
std::string_view checked_name(std::string_view name, const std::string& origin, int line_number) {
  while (!name.empty() && std::isspace(static_cast<unsigned char>(name.back())))
    name.remove_suffix(1);
  while (!name.empty() && std::isspace(static_cast<unsigned char>(name.front())))
    name.remove_prefix(1);
  if (const std::size_t length = code_point_count(name); length > kMaxNameChars)
    throw InputError(tr_format(
        "{}:{}: this name is {} characters long; a name is at most {} characters: write one "
        "student's name per line",
        origin, line_number, length, kMaxNameChars));
  for (char c : name)
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) control_character(origin, line_number);
  return name;
}

// The first byte of `text` that is not UTF-8 is refused, naming its line.
void check_utf8(std::string_view text, const std::string& origin) {
  const std::size_t bad = invalid_utf8_offset(text);
  if (bad == std::string_view::npos) return;
  const std::size_t line_start = text.rfind('\n', bad == 0 ? 0 : bad - 1);
  const std::size_t column = line_start == std::string_view::npos || bad == 0 ? bad + 1
                                                                                : bad - line_start;
  throw InputError(tr_format(
      "{}:{}: this line is not UTF-8 (byte 0x{:02X} at column {}); save the roster as "
      "UTF-8 (in an editor or spreadsheet: Save As, encoding UTF-8) and run again",
      origin, 1 + std::count(text.begin(), text.begin() + static_cast<std::ptrdiff_t>(bad), '\n'),
      static_cast<unsigned char>(text[bad]), column));
}

// The students of a roster as they are read, each name and folder once.
class RosterBuilder {
 public:
  explicit RosterBuilder(std::string origin) : origin_(std::move(origin)) {}
  // `written`: the name as on line `line_number`; student.name is its NFC.
  void add(Student student, std::string_view written, int line_number);
  std::vector<Student> take();

 private:
  std::string origin_;
  std::vector<Student> students_;
  std::map<std::string, std::pair<int, std::string>> names_;    // NFC name -> (line, as written)
  std::map<std::string, std::pair<std::string, int>> folders_;  // folder -> (name, line)
  std::map<std::string, int> ids_;                              // ID -> line
};

void RosterBuilder::add(Student student, std::string_view written, int line_number) {
  const auto [same, new_name] =
      names_.emplace(student.name, std::pair(line_number, std::string(written)));
  if (!new_name)
    throw InputError(
        same->second.second == written
            ? tr_format("{}:{}: \"{}\" is already on line {}; each name gets its own variant, so "
                        "make the names distinct (e.g. add an initial)",
                        origin_, line_number, student.name, same->second.first)
            : tr_format("{}:{}: \"{}\" is already on line {} (the same letters, written with "
                        "other code points); each name gets its own variant, so make the names "
                        "distinct (e.g. add an initial)",
                        origin_, line_number, student.name, same->second.first));
  if (!student.id.empty())
    if (const auto [other, fresh] = ids_.emplace(student.id, line_number); !fresh)
      throw InputError(tr_format(
          "{}:{}: ID {} is already on line {}; each student has an ID of their own: correct "
          "one of the two",
          origin_, line_number, student.id, other->second));
  student.slug = student_folder(student.name);
  const auto [other, new_folder] =
      folders_.emplace(student.slug, std::pair(student.name, line_number));
  if (!new_folder)
    throw InputError(tr_format(
        "{}:{}: \"{}\" gets the folder \"{}\", as \"{}\" on line {} does (folders keep only "
        "letters and digits, lower-cased); make the names differ in a letter or digit "
        "(e.g. add an initial)",
        origin_, line_number, student.name, student.slug, other->second.first,
        other->second.second));
  students_.push_back(std::move(student));
}

std::vector<Student> RosterBuilder::take() {
  if (students_.empty())
    throw InputError(
        tr_format("{}: the roster has no names; write one student name per line", origin_));
  return std::move(students_);
}

// A header cell, trimmed and lower-cased (ASCII).
std::string header_cell(std::string_view cell) {
  std::string out;
  for (char c : cell)
    if (c != ' ' && c != '\t')
      out += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

// The columns of the ID and the name, when `row` is an id,name roster's header.
std::optional<std::pair<std::size_t, std::size_t>> id_name_header(
    const std::vector<std::string>& row) {
  std::optional<std::size_t> id_at, name_at;
  for (std::size_t i = 0; i < row.size(); ++i) {
    const std::string cell = header_cell(row[i]);
    if (!id_at && (cell == "id" || cell == "studentid" || cell == "student_id" || cell == "学号"))
      id_at = i;
    else if (!name_at && (cell == "name" || cell == "姓名"))
      name_at = i;
  }
  if (!id_at || !name_at) return std::nullopt;
  return std::pair(*id_at, *name_at);
}

bool skipped_row(const std::vector<std::string>& row) {
  return std::all_of(row.begin(), row.end(),
                     [](const std::string& f) {
                       return f.find_first_not_of(" \t") == std::string::npos;
                     }) ||
         row.front().starts_with('#');
}

// The students of an id,name roster (rows[first] is its header).
std::vector<Student> parse_id_roster(const std::vector<std::vector<std::string>>& rows,
                                     const std::vector<int>& lines, std::size_t first,
                                     std::pair<std::size_t, std::size_t> columns,
                                     const std::string& origin) {
  RosterBuilder builder(origin);
  const auto [id_at, name_at] = columns;
  for (std::size_t r = first + 1; r < rows.size(); ++r) {
    const std::vector<std::string>& row = rows[r];
    if (skipped_row(row)) continue;
    const int line = lines[r];
    const std::string raw_id = id_at < row.size() ? row[id_at] : std::string();
    const std::string_view name =
        checked_name(name_at < row.size() ? row[name_at] : std::string_view(), origin, line);
    Student student{normalise_student_id(raw_id), nfc(name), {}};
    if (name.empty())
      throw InputError(tr_format(
          "{}:{}: no name for ID {}; write the student's name in the name column, or remove "
          "the row",
          origin, line, student.id.empty() ? "\"\"" : student.id));
    if (const std::string flaw = student_id_flaw(student.id); !flaw.empty())
      throw InputError(tr_format(
          "{}:{}: the ID of \"{}\" {}; an ID is 1 to {} letters (A-Z, a-z), digits, '-', '_' "
          "or '.', starting with a letter or digit: write the student's ID (学号) there",
          origin, line, student.name, flaw, kMaxStudentIdChars));
    builder.add(std::move(student), name, line);
  }
  return builder.take();
}

}  // namespace

std::vector<Student> parse_roster(std::string_view text, const std::string& origin) {
  if (text.starts_with("\xEF\xBB\xBF")) text.remove_prefix(3);  // a UTF-8 byte-order mark
  check_utf8(text, origin);
  std::vector<int> lines;
  const std::vector<std::vector<std::string>> rows = csv_rows(text, &lines);
  for (std::size_t r = 0; r < rows.size(); ++r) {
    if (skipped_row(rows[r])) continue;
    if (const auto columns = id_name_header(rows[r]))
      return parse_id_roster(rows, lines, r, *columns, origin);
    break;  // the first line says names, one a line
  }
  RosterBuilder builder(origin);
  int line_number = 0;
  while (!text.empty()) {
    const std::size_t end = text.find('\n');
    std::string_view line = text.substr(0, end);
    text.remove_prefix(end == std::string_view::npos ? text.size() : end + 1);
    ++line_number;
    line = checked_name(line, origin, line_number);
    if (line.empty() || line.front() == '#') continue;
    builder.add(Student{{}, nfc(line), {}}, line, line_number);
  }
  return builder.take();
}

std::vector<Student> read_roster(const std::string& path) {
  return parse_roster(read_file(path), path);
}

ExerciseDraw draw_inputs(const ExerciseSpec& spec, SplitMix64& rng) {
  const std::int64_t units = grid_units(spec.decimals);
  const std::size_t width = spec.heads * spec.d_k;
  ExerciseDraw draw;
  draw.X = draw_matrix(rng, spec.tokens, spec.d_model, units);
  if (spec.memory_tokens > 0)
    draw.memory = draw_matrix(rng, spec.memory_tokens, spec.d_model, units);
  draw.W_Q = draw_matrix(rng, spec.d_model, width, units);
  draw.W_K = draw_matrix(rng, spec.d_model, width, units);
  draw.W_V = draw_matrix(rng, spec.d_model, width, units);
  if (!spec.backward.empty()) draw.upstream = draw_matrix(rng, spec.tokens, width, units);
  return draw;
}

std::string exercise_lesson_toml(const ExerciseSpec& spec, const Student& student,
                                 const ExerciseDraw& draw, int draws) {
  const std::uint64_t stream = student_stream_seed(spec.seed, student.name);
  // The file is a document: its comments, and title_zh and story_zh beside the
  // English title and story, follow --lang only (document_language).
  const Language lang = document_language();
  const auto in = [lang](std::string_view msgid) { return fmt::runtime(translate(lang, msgid)); };
  std::string out = fmt::format(
      in("# The exercise of {} as a lesson: `attn-trace run` traces it, `attn-trace verify` "
         "checks answers.\n# Regenerate with: {}\n"),
      student.name, spec.command);
  const std::string title = "Attention exercise: {}",
                    story = "Compute {} by hand, then check with attn-trace verify.";
  const std::string asked = fmt::format("{}", fmt::join(spec.ask, ", "));
  out += fmt::format(
      "\n[lesson]\nid = {}\ntitle = {}\nsource = {}\nstory = {}\n", json_string(lesson_id(student)),
      json_string(fmt::format(fmt::runtime(title), student.name)),
      json_string(fmt::format("attn-trace exercise, variant {:016x}, draw {}", stream, draws)),
      json_string(fmt::format(fmt::runtime(story), asked)));
  if (lang != Language::en)
    out += fmt::format("title_zh = {}\nstory_zh = {}\n",
                       json_string(fmt::format(in(N_("Attention exercise: {}")), student.name)),
                       json_string(fmt::format(in(N_("Compute {} by hand, then check with "
                                                     "attn-trace verify.")),
                                               asked)));
  out += "\n";
  out += fmt::format("[model]\nheads = {}\nd_k = {}\nscale = \"sqrt_dk\"\ncausal = {}\n\n",
                     spec.heads, spec.d_k, spec.causal);
  out += fmt::format("[input]\ntokens = {}\n{}", json_strings(query_tokens(spec)),
                     toml_matrix("X", draw.X, spec.decimals));
  if (spec.memory_tokens > 0)
    out += fmt::format("memory_tokens = {}\n{}", json_strings(memory_tokens(spec)),
                       toml_matrix("memory", draw.memory, spec.decimals));
  if (spec.key_padding) {
    const std::size_t keys = spec.memory_tokens > 0 ? spec.memory_tokens : spec.tokens;
    std::vector<std::string> padded(keys, "false");
    padded.back() = "true";
    out += fmt::format("key_padding = [{}]\n", fmt::join(padded, ", "));
  }
  out += "\n[weights]\n" + toml_matrix("W_Q", draw.W_Q, spec.decimals) +
         toml_matrix("W_K", draw.W_K, spec.decimals) + toml_matrix("W_V", draw.W_V, spec.decimals);
  // The Jacobian of the last query's row: every key is open there under a causal mask.
  if (!spec.backward.empty())
    out += fmt::format("\n[backward]\njacobian_row = {}\n", spec.tokens - 1) +
           (spec.backward == "upstream"
                ? toml_matrix("upstream", draw.upstream, spec.decimals)
                : "loss = \"half_sq\"\n" + toml_matrix("target", draw.upstream, spec.decimals));
  // What verify and mark need: the steps asked, the answers' decimals, whose variant.
  out += fmt::format(
      "\n[exercise]\nask = {}\nanswer_decimals = {}\nstudent = {}\nvariant = \"{:016x}\"\n",
      json_strings(spec.ask), spec.answer_decimals, json_string(student.name), stream);
  return out;
}

void normalise_spec(ExerciseSpec& spec) {
  check_spec_limits(spec);
  // The valid steps: those of a lesson of this shape, minus the inputs.
  if (spec.backward.empty() && std::any_of(spec.ask.begin(), spec.ask.end(), [](const auto& a) {
        return a.starts_with("grad.");
      }))
    spec.backward = "upstream";
  const Trace trace = shape_trace(spec);
  std::vector<std::string> valid;
  for (const Step& step : trace.steps)
    if (step.kind != StepKind::input && step.made.op != Op::given) valid.push_back(step.id);
  const std::vector<std::string> ids = asked_step_ids(spec.ask, valid, trace);
  spec.ask.clear();
  for (const std::string& id : valid)  // trace order, each once
    if (std::find(ids.begin(), ids.end(), id) != ids.end()) spec.ask.push_back(id);
}

std::optional<RuleBroken> input_rule_broken(const ExerciseDraw& draw) {
  if (auto broken = zero_or_equal_rows(draw.X, "X")) return broken;
  if (auto broken = zero_or_equal_rows(draw.memory, "memory")) return broken;
  if (auto broken = zero_column(draw.W_Q, "W_Q")) return broken;
  if (auto broken = zero_column(draw.W_K, "W_K")) return broken;
  if (auto broken = zero_column(draw.W_V, "W_V")) return broken;
  // An upstream row of zeros sends nothing back from that query: no work.
  if (auto broken = zero_rows(draw.upstream, "upstream")) return broken;
  return std::nullopt;
}

std::optional<RuleBroken> trace_rule_broken(const ExerciseSpec& spec, const Trace& trace) {
  const double floor_weight = smallest_weight(spec.answer_decimals);
  for (std::size_t h = 0; h < spec.heads; ++h) {
    const Step& weights = trace.at(head_step_id(h, HeadStep::weights));
    for (std::size_t i = 0; i < weights.value.n_rows; ++i) {
      const arma::uvec open = arma::find(trace.mask.row(i) == 0u);
      const std::string where = fmt::format("{} row {} ({})", weights.id, i, weights.rows[i]);
      if (open.is_empty())
        return RuleBroken{N_("masked row"), fmt::format("{}: every key is masked", where)};
      if (open.n_elem < 2) continue;
      const arma::rowvec row = weights.value.row(i);
      const arma::vec open_weights = row(open);
      const double low = open_weights.min(), high = open_weights.max();
      if (low < floor_weight)
        return RuleBroken{
            N_("dominated row"),
            fmt::format("{}: smallest weight {} is below {} (one exponent dominates "
                        "beyond what {} decimals show)",
                        where, format_fixed(low, spec.answer_decimals + 2),
                        format_fixed(floor_weight, spec.answer_decimals), spec.answer_decimals)};
      if (high - low < kSmallestSpread)
        return RuleBroken{N_("flat row"),
                          fmt::format("{}: weights {} to {} are nearly equal (spread "
                                      "below {})",
                                      where, format_fixed(low, spec.answer_decimals),
                                      format_fixed(high, spec.answer_decimals), kSmallestSpread)};
    }
  }
  for (const Step* step : key_steps(spec, trace))
    for (std::size_t r = 0; r < step->value.n_rows; ++r)
      for (std::size_t c = 0; c < step->value.n_cols; ++c) {
        const double v = step->value(r, c);
        if (std::isfinite(v) && distance_to_midpoint(v, spec.answer_decimals) < kMidpointMargin)
          return RuleBroken{N_("rounding midpoint"),
                            fmt::format("{}[{},{}] = {} is halfway between two {}-decimal answers",
                                        step->id, r, c, format_exact(v), spec.answer_decimals)};
      }
  return std::nullopt;
}

std::vector<const Step*> key_steps(const ExerciseSpec& spec, const Trace& trace) {
  const bool any_masked = arma::any(arma::vectorise(trace.mask));
  std::vector<const Step*> out;
  for (const Step& step : trace.steps) {
    const bool asked = std::find(spec.ask.begin(), spec.ask.end(), step.id) != spec.ask.end();
    const bool repeats =
        (spec.heads == 1 && (step.kind == StepKind::head_slice || step.kind == StepKind::concat ||
                             copies_a_gradient(step))) ||
        (!any_masked && (step.kind == StepKind::masked || gradient_of_scaled(trace, step)));
    if (step.kind == StepKind::input || step.made.op == Op::given || (repeats && !asked)) continue;
    out.push_back(&step);
  }
  return out;
}

std::pair<std::size_t, std::size_t> worked_cell(const Trace& trace, const std::string& step) {
  const Step& s = trace.at(step);
  if (s.kind == StepKind::masked) {
    const arma::uvec masked =
        arma::find(trace.mask.t());  // column-major of the transpose: row order
    if (!masked.is_empty()) return {masked(0) / trace.mask.n_cols, masked(0) % trace.mask.n_cols};
  }
  return {s.value.n_rows - 1, 0};
}

Exercise generate_exercise(const ExerciseSpec& spec, const Student& student) {
  const std::unique_ptr<Backend> backend = make_backend("cpu");
  Exercise exercise;
  exercise.student = student;
  exercise.stream_seed = student_stream_seed(spec.seed, student.name);
  exercise.asked = spec.ask;
  SplitMix64 rng(exercise.stream_seed);
  std::map<std::string, int> broken_counts;
  for (int draws = 1; draws <= kMaxDraws; ++draws) {
    const ExerciseDraw draw = draw_inputs(spec, rng);
    if (const auto broken = input_rule_broken(draw)) {
      ++broken_counts[broken->rule];
      continue;
    }
    std::string toml = exercise_lesson_toml(spec, student, draw, draws);
    Lesson lesson = parse_lesson(toml, fmt::format("{}/lesson.toml", student.slug));
    Trace trace = run_pipeline(lesson, *backend);
    if (const auto broken = trace_rule_broken(spec, trace)) {
      ++broken_counts[broken->rule];
      continue;
    }
    exercise.draws = draws;
    exercise.fingerprint = lesson_fingerprint(toml);
    exercise.lesson_toml = std::move(toml);
    exercise.lesson = std::move(lesson);
    exercise.trace = std::move(trace);
    for (const std::string& id : exercise.asked) {
      const auto [row, col] = worked_cell(exercise.trace, id);
      exercise.worked.push_back(expand_cell(exercise.lesson, exercise.trace, id, row, col));
    }
    return exercise;
  }
  const auto most =
      std::max_element(broken_counts.begin(), broken_counts.end(),
                       [](const auto& a, const auto& b) { return a.second < b.second; });
  throw InputError(tr_format(
      "no draw for {} kept the hand work reasonable in {} tries (most often broken: \"{}\", {} "
      "times; see docs/exercises.md); use fewer --tokens or a smaller --d-model, or raise "
      "--answer-decimals",
      student.name, kMaxDraws, tr(most->first), most->second));
}

}  // namespace attn
