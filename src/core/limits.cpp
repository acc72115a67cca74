// Limits on input sizes, trace memory and output, with messages that name the
// limit and how to change it.
#include "core/limits.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>

#include "core/error.hpp"
#include "core/i18n.hpp"
#include "core/lesson.hpp"

namespace attn {

namespace {

struct Named {
  const char* name;
  std::uint64_t Limits::*field;
  const char* what;
};

constexpr Named kNamed[] = {
    {"file_mb", &Limits::file_mb, N_("MiB per file read")},
    {"tokens", &Limits::tokens, N_("tokens")},
    {"d_model", &Limits::d_model, N_("columns of a matrix")},
    {"heads", &Limits::heads, N_("heads")},
    {"step_mcells", &Limits::step_mcells, N_("million cells in one step")},
    {"trace_gb", &Limits::trace_gb, N_("GiB for the whole trace")},
    {"output_mb", &Limits::output_mb, N_("MiB of output")},
};

constexpr std::uint64_t kMiB = 1ull << 20;

std::string raise(const char* name, std::uint64_t needed) {
  return tr_format("--limit {}={} raises it", name, needed);
}

// ceil(a / b)
std::uint64_t ceil_div(std::uint64_t a, std::uint64_t b) {
  return a / b + (a % b != 0);
}

}  // namespace

Limits& limits() {
  static Limits the_limits;
  return the_limits;
}

std::string limit_names() {
  const Limits defaults;
  std::string out;
  for (const Named& n : kNamed)
    out += fmt::format("{}{}={}", out.empty() ? "" : ", ", n.name, defaults.*n.field);
  return out;
}

void set_limit(std::string_view assignment) {
  const std::size_t eq = assignment.find('=');
  const std::string_view name = assignment.substr(0, eq);
  const Named* named = std::find_if(std::begin(kNamed), std::end(kNamed),
                                    [&](const Named& n) { return name == n.name; });
  if (eq == std::string_view::npos || named == std::end(kNamed))
    throw InputError(tr_format("--limit {}: give NAME=VALUE with one of {} (the defaults)",
                               assignment, limit_names()));
  const std::string_view text = assignment.substr(eq + 1);
  std::uint64_t value = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc() || end != text.data() + text.size() || value == 0 ||
      value > (1ull << 40))
    throw InputError(tr_format("--limit {}: '{}' is not a whole number from 1 to 2^40 ({})",
                               assignment, text, tr(named->what)));
  limits().*named->field = value;
}

void check_file_size(const std::string& path, std::uint64_t bytes) {
  if (bytes <= limits().file_mb * kMiB) return;
  throw InputError(tr_format("{}: the file is {} MiB, above the limit of {} MiB per file; {}", path,
                             ceil_div(bytes, kMiB), limits().file_mb,
                             raise("file_mb", ceil_div(bytes, kMiB))));
}

TraceSize trace_size(const Lesson& lesson) {
  const std::uint64_t n = lesson.queries(), m = lesson.keys(), h = lesson.heads;
  const std::uint64_t d = lesson.X.n_cols, d_mem = lesson.memory ? lesson.memory->n_cols : d;
  const std::uint64_t d_k = lesson.d_k, d_v = lesson.d_v;
  TraceSize size;
  const auto step = [&](std::uint64_t cells, std::uint64_t times = 1) {
    size.cells += cells * times;
    size.largest_step = std::max(size.largest_step, cells);
  };
  const std::uint64_t inputs =
      lesson.positional_encoding == PositionalEncoding::sinusoidal ? 3 : 1;  // X, PE, X+PE
  step(n * d, inputs);
  if (lesson.memory) step(m * d_mem, inputs);             // memory, PE, memory+PE
  step(d * h * d_k + d_mem * h * d_k + d_mem * h * d_v);  // W_Q, W_K, W_V
  step(n * h * d_k + m * h * d_k + m * h * d_v);          // Q, K, V
  step(n * d_k + m * d_k + m * d_v, h);                   // the heads' slices
  step(n * m, 5 * h + (h > 1 ? 2 : 0));  // scores, scaled, masked, exp, weights; heads.mean/max
  step(n * (1 + d_v), h);                // row sums, contexts
  if (lesson.positional_encoding == PositionalEncoding::alibi) step(n * m, 2 * h);  // bias, biased
  if (lesson.positional_encoding == PositionalEncoding::rope) {
    step((n + m) * d_k, lesson.rope_shift ? 2 * h : h);  // q_rot, k_rot (and shifted)
    if (lesson.rope_shift) step(n * (m + 1), h);          // scores_shifted, shift_check
  }
  step(n * h * d_v);                     // concat
  if (lesson.W_O) step(lesson.W_O->n_elem + n * lesson.W_O->n_cols);  // W_O, output
  if (lesson.layer) {
    step(lesson.layer->W_1.n_elem + lesson.layer->W_2.n_elem);
    step(n * lesson.layer->W_1.n_cols, 2);  // hidden, activation
    step(n * d, 12);                        // residuals, LayerNorms, output
  }
  if (lesson.backward) {  // a gradient of every step above but the constants, exp and row sums
    std::uint64_t constant = h * (n * m + n) + (h > 1 ? 2 * n * m : 0);  // exp, row_sum, heads.*
    if (inputs == 3) constant += n * d + (lesson.memory ? m * d_mem : 0);  // PE
    if (lesson.positional_encoding == PositionalEncoding::alibi) constant += h * n * m;  // bias
    const std::uint64_t forward = size.cells;
    step(forward - std::min(forward, constant));
    step(m * m + n, h);  // grad.head{h}.jacobian, .row_dot
  }
  if (lesson.kv_cache)  // step t: q, its cache of t+1 rows, scores, scaled, weights, context
    step(h * (n * (n + 1) / 2 * (d_k + d_v + 3) + n * (d_k + d_v)));
  if (lesson.tile) {  // the blocks' scores; m, rescale, l and acc per key block; O/ℓ, check
    const std::uint64_t key_blocks = (m + lesson.tile->keys - 1) / lesson.tile->keys;
    step(n * m + n * key_blocks * (3 + d_v) + n * (d_v + 1), h);
  }
  if (lesson.attention == AttentionKind::linear)  // φ(Q), φ(K), kv, normaliser, numerator,
    step((n + m) * d_k + d_k * d_v + n * (2 + 2 * d_v) + 2 * n * m, h);  // n × m order, check
  return size;
}

void check_lesson_limits(const Lesson& lesson) {
  const Limits& l = limits();
  const auto over = [&](std::uint64_t value, std::uint64_t limit, const char* name,
                        const char* what) {
    if (value > limit)
      throw InputError(tr_format("{}: {} is {}, above the limit of {}; {}", lesson.origin, tr(what),
                                 value, limit, raise(name, value)));
  };
  over(lesson.queries(), l.tokens, "tokens", N_("the number of tokens"));
  over(lesson.keys(), l.tokens, "tokens", N_("the number of memory tokens"));
  over(lesson.X.n_cols, l.d_model, "d_model", N_("d_model (the columns of X)"));
  over(lesson.W_Q.n_cols, l.d_model, "d_model", N_("heads × d_k (the columns of W_Q)"));
  over(lesson.W_V.n_cols, l.d_model, "d_model", N_("heads × d_v (the columns of W_V)"));
  if (lesson.memory) over(lesson.memory->n_cols, l.d_model, "d_model", N_("the memory's width"));
  if (lesson.layer)
    over(lesson.layer->W_1.n_cols, l.d_model, "d_model", N_("d_ff (columns of W_1)"));
  over(lesson.heads, l.heads, "heads", N_("the number of heads"));
  const TraceSize size = trace_size(lesson);
  const std::uint64_t step_mcells = ceil_div(size.largest_step, 1000000);
  if (step_mcells > l.step_mcells)
    throw InputError(
        tr_format("{}: its largest step has {} million cells, above the limit of {} million; {}",
                  lesson.origin, step_mcells, l.step_mcells, raise("step_mcells", step_mcells)));
  const std::uint64_t gib = ceil_div(size.cells * sizeof(double), 1ull << 30);
  if (gib > l.trace_gb)
    throw InputError(tr_format(
        "{}: its trace would take about {} GiB of memory, above the limit of {} GiB; use fewer "
        "tokens or heads, or {}",
        lesson.origin, gib, l.trace_gb, raise("trace_gb", gib)));
}

void check_output_size(std::string_view what, std::uint64_t bytes, std::string_view fix) {
  if (bytes <= limits().output_mb * kMiB) return;
  const std::uint64_t mib = ceil_div(bytes, kMiB);
  throw InputError(tr_format("{} would be about {} MiB, above the limit of {} MiB; {}, or {}",
                             tr(what), mib, limits().output_mb, tr(fix), raise("output_mb", mib)));
}

}  // namespace attn
