// `attn-trace bench`: times the attention forward pass without a trace on a
// backend, for several sequence lengths: median time, GFLOP/s, memory and
// growth from one length to the next, as a table or JSON (docs/bench.md).
//
// Shape key: n tokens, d model width, h heads of d_k = d/h.
#include <fmt/format.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <new>
#include <optional>
#include <string>
#include <vector>

#include "backend/backend.hpp"
#include "cli/commands.hpp"
#include "core/costs.hpp"
#include "core/error.hpp"
#include "core/i18n.hpp"
#include "core/parallel.hpp"
#include "render/json_writer.hpp"
#include "teach/qk_stats.hpp"

namespace attn {

namespace {

// Limits of the options (docs/bench.md).
constexpr std::uint64_t kMaxSeq = 65536;
constexpr std::uint64_t kMaxDModel = 8192;
constexpr std::uint64_t kMaxRuns = 1000;
constexpr std::uint64_t kDefaultRuns = 5;
// Without --runs, a length gets fewer runs when they would take longer than this.
constexpr double kDefaultBudgetSeconds = 15.0;
constexpr const char* kFlopsFormula = "8·n·d² + 4·n²·d + h·(4·n² − n)";

struct BenchOptions {
  // Read as whole numbers in the callback, so that a bad one names its option.
  std::vector<std::string> seq = {"128", "256", "512", "1024", "2048", "4096"};
  std::string d_model = "512", heads = "8", runs, seed = "1";
  std::string backend = "cpu", dtype = "f64", format = "text";
};

// What was asked, checked.
struct BenchSpec {
  std::vector<std::size_t> seq;
  std::size_t d_model = 0, heads = 0;
  std::optional<std::size_t> runs;  // nullopt: kDefaultRuns within kDefaultBudgetSeconds
  std::uint64_t seed = 1;
};

// One sequence length, timed.
struct LengthTiming {
  std::size_t n = 0;
  std::vector<double> upload_s, compute_s, download_s;  // one per timed run
  Message fewer_runs;  // why it had fewer runs; an empty format when it had them all
  ForwardFlops flops;
  std::size_t plan_bytes = 0;
  std::size_t peak_rss_bytes = 0;  // of the whole process, up to the end of this length
};

// `text` as a whole number from `low` to `high`, or an InputError naming the
// option and its range.
std::uint64_t whole_number(const std::string& text, const std::string& option, std::uint64_t low,
                           std::uint64_t high) {
  std::uint64_t value = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || error != std::errc() || end != text.data() + text.size() || value < low ||
      value > high)
    throw InputError(tr_format("bench: {} must be a whole number from {} to {}, not '{}'", option,
                               low, high, text));
  return value;
}

// The divisor of d closest to h (the smaller one on a tie).
std::size_t nearest_divisor(std::size_t d, std::size_t h) {
  std::size_t best = 1;
  for (std::size_t k = 1; k <= d; ++k)
    if (d % k == 0 && (k > h ? k - h : h - k) < (best > h ? best - h : h - best)) best = k;
  return best;
}

BenchSpec check_options(const BenchOptions& o) {
  BenchSpec spec;
  if (o.dtype != "f64")
    throw InputError(tr_format(
        "bench times f64 only, not --dtype {}: the forward plans compute in IEEE double (the "
        "narrower formats of `run --dtype` are emulated, which says nothing about speed); drop "
        "--dtype or give --dtype f64",
        o.dtype));
  for (const std::string& n : o.seq) spec.seq.push_back(whole_number(n, "--seq", 1, kMaxSeq));
  spec.d_model = whole_number(o.d_model, "--d-model", 1, kMaxDModel);
  spec.heads = whole_number(o.heads, "--heads", 1, kMaxDModel);
  if (spec.d_model % spec.heads != 0)
    throw InputError(tr_format(
        "bench: --d-model {} is not divisible by --heads {}: each head takes d_model / heads "
        "columns; give a number of heads that divides {} (e.g. {})",
        spec.d_model, spec.heads, spec.d_model, nearest_divisor(spec.d_model, spec.heads)));
  if (!o.runs.empty()) spec.runs = whole_number(o.runs, "--runs", 1, kMaxRuns);
  spec.seed = whole_number(o.seed, "--seed", 0, UINT64_MAX);
  return spec;
}

// Refuses a length whose activations and weights alone, 8·(4d² + 6·n·d) bytes
// (X, [Q|K|V], concat, output, W_QKV, W_O), would not fit in this machine's memory.
void check_fits(std::size_t n, std::size_t d) {
  const double need = 8.0 * (4.0 * d * d + 6.0 * static_cast<double>(n) * d);
  const double have = static_cast<double>(sysconf(_SC_PHYS_PAGES)) * sysconf(_SC_PAGESIZE);
  if (have > 0 && need > have)
    throw InputError(tr_format(
        "bench: --seq {} with --d-model {} needs at least {:.1f} GiB (weights and activations) "
        "but this machine has {:.1f} GiB; give a smaller --seq or --d-model",
        n, d, need / (1 << 30), have / (1 << 30)));
}

// (rows, cols) of normals divided by `divisor`, drawn row by row.
arma::mat draw(NormalStream& normals, std::size_t rows, std::size_t cols, double divisor) {
  arma::mat M(rows, cols);
  for (std::size_t r = 0; r < rows; ++r)
    for (std::size_t c = 0; c < cols; ++c) M(r, c) = normals.next() / divisor;
  return M;
}

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

std::size_t peak_rss_bytes() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return static_cast<std::size_t>(usage.ru_maxrss) * 1024;  // Linux: kibibytes
}

// One warm-up run (untimed: first touches of the buffers), then the timed runs.
LengthTiming measure_length(Backend& backend, const BenchSpec& spec, std::size_t n,
                            const arma::mat& W_QKV, const arma::mat& W_O, const arma::mat& X) {
  LengthTiming t;
  t.n = n;
  t.flops = forward_flops(n, spec.d_model, spec.heads);
  const std::unique_ptr<ForwardPlan> plan =
      backend.plan_forward({n, spec.d_model, spec.heads}, W_QKV, W_O);
  t.plan_bytes = plan->bytes();
  arma::mat output(n, spec.d_model);

  auto start = std::chrono::steady_clock::now();
  plan->upload(X.memptr());
  plan->compute();
  plan->download(output.memptr());
  const double warm_up = seconds_since(start);

  std::size_t runs = spec.runs.value_or(kDefaultRuns);
  if (!spec.runs && warm_up * static_cast<double>(runs) > kDefaultBudgetSeconds) {
    runs = std::max<std::size_t>(1, static_cast<std::size_t>(kDefaultBudgetSeconds / warm_up));
    t.fewer_runs =
        Message(runs == 1 ? N_("{} run instead of {}: the warm-up run took {} s, and "
                               "without --runs a length stops at about {} s")
                          : N_("{} runs instead of {}: the warm-up run took {} s, and "
                               "without --runs a length stops at about {} s"),
                {std::to_string(runs), std::to_string(kDefaultRuns), fmt::format("{:.1f}", warm_up),
                 fmt::format("{:.0f}", kDefaultBudgetSeconds)});
  }
  for (std::size_t run = 0; run < runs; ++run) {
    start = std::chrono::steady_clock::now();
    plan->upload(X.memptr());
    t.upload_s.push_back(seconds_since(start));
    start = std::chrono::steady_clock::now();
    plan->compute();
    t.compute_s.push_back(seconds_since(start));
    start = std::chrono::steady_clock::now();
    plan->download(output.memptr());
    t.download_s.push_back(seconds_since(start));
  }
  t.peak_rss_bytes = peak_rss_bytes();
  return t;
}

// Every length in the order asked. The weights are drawn first (W_QKV then
// W_O, row by row, N(0,1)/√d), then X's rows N(0,1): the X of a length is the
// first n rows of one stream, whatever the other lengths.
// measure_length, out of memory (the plan's buffers, or the BLAS's work
// buffer under a memory limit) said as bench's own error, exit 4.
LengthTiming time_length(Backend& backend, const BenchSpec& spec, std::size_t n,
                         const arma::mat& W_QKV, const arma::mat& W_O, const arma::mat& X) {
  try {
    return measure_length(backend, spec, n, W_QKV, W_O, X);
  } catch (const std::bad_alloc&) {
    throw OutOfMemory(tr_format(
        "bench: the {} backend could not allocate a forward pass of --seq {} with --d-model {}; "
        "give a smaller --seq or --d-model",
        backend.name(), n, spec.d_model));
  }
}

std::vector<LengthTiming> time_lengths(Backend& backend, const BenchSpec& spec) {
  const std::size_t d = spec.d_model;
  for (std::size_t n : spec.seq) check_fits(n, d);
  NormalStream normals(spec.seed);
  const double root_d = std::sqrt(static_cast<double>(d));
  const arma::mat W_QKV = draw(normals, d, 3 * d, root_d);
  const arma::mat W_O = draw(normals, d, d, root_d);
  std::vector<LengthTiming> out;
  for (std::size_t n : spec.seq) {
    NormalStream x_normals = normals;
    const arma::mat X = draw(x_normals, n, d, 1.0);
    out.push_back(time_length(backend, spec, n, W_QKV, W_O, X));
  }
  return out;
}

double median(std::vector<double> xs) {
  std::sort(xs.begin(), xs.end());
  const std::size_t half = xs.size() / 2;
  return xs.size() % 2 ? xs[half] : (xs[half - 1] + xs[half]) / 2.0;
}

double gflop_per_s(const LengthTiming& t) {
  return static_cast<double>(t.flops.total()) / median(t.compute_s) / 1e9;
}

// median time of length i over that of length i−1; nothing for the first.
std::optional<double> growth(const std::vector<LengthTiming>& timings, std::size_t i) {
  if (i == 0) return std::nullopt;
  return median(timings[i].compute_s) / median(timings[i - 1].compute_s);
}

std::string header_text(const Backend& backend, const BenchSpec& spec) {
  const std::size_t runs = spec.runs.value_or(kDefaultRuns);
  return tr_format(
             "attn-trace bench · forward pass without a trace · backend {} · f64 · "
             "d_model {}",
             backend.name(), spec.d_model) +
         " · " +
         tr_format(spec.heads == 1 ? N_("{} head of {}") : N_("{} heads of {}"), spec.heads,
                   spec.d_model / spec.heads) +
         " · " + tr_format("seed {}", spec.seed) + " · " +
         tr_format(parallel_threads() == 1 ? N_("{} CPU thread") : N_("{} CPU threads"),
                   parallel_threads()) +
         "\n" +
         tr_format(runs == 1 ? N_("per length: one warm-up run, then the median of {} timed run of "
                                  "the computation; upload and download are timed apart")
                             : N_("per length: one warm-up run, then the median of {} timed runs "
                                  "of the computation; upload and download are timed apart"),
                   runs) +
         "\n\n";
}

std::string bench_text(const Backend& backend, const BenchSpec& spec,
                       const std::vector<LengthTiming>& timings) {
  constexpr double kMiB = 1024.0 * 1024.0;
  std::string out = header_text(backend, spec);
  out += fmt::format("{:>7} {:>12} {:>9} {:>8} {:>11} {:>13} {:>10} {:>14}\n", "n",
                     tr("compute ms"), "GFLOP/s", tr("growth"), tr("upload ms"), tr("download ms"),
                     tr("plan MiB"), tr("peak RSS MiB"));
  std::string notes;
  for (std::size_t i = 0; i < timings.size(); ++i) {
    const LengthTiming& t = timings[i];
    const std::optional<double> g = growth(timings, i);
    out += fmt::format("{:>7} {:>12.3f} {:>9.1f} {:>8} {:>11.3f} {:>13.3f} {:>10.1f} {:>14.1f}\n",
                       t.n, 1e3 * median(t.compute_s), gflop_per_s(t),
                       g ? fmt::format("×{:.2f}", *g) : "—", 1e3 * median(t.upload_s),
                       1e3 * median(t.download_s), static_cast<double>(t.plan_bytes) / kMiB,
                       static_cast<double>(t.peak_rss_bytes) / kMiB);
    if (!t.fewer_runs.format.empty())
      notes += fmt::format("n = {}: {}\n", t.n, t.fewer_runs.shown());
  }
  out += "\n" + tr_format(
                    "FLOPs per pass: {} (as `run --summary` counts the steps); growth: the time "
                    "over the previous length's\n"
                    "plan: the bytes the backend's plan holds (weights, activations, workspace); "
                    "peak RSS: the whole process's, so far\n",
                    kFlopsFormula);
  return out + notes;
}

std::string json_numbers(const std::vector<double>& xs) {
  std::vector<std::string> items;
  for (double x : xs) items.push_back(json_number(x));
  return fmt::format("[{}]", fmt::join(items, ", "));
}

std::string length_json(const std::vector<LengthTiming>& timings, std::size_t i) {
  const LengthTiming& t = timings[i];
  const std::optional<double> g = growth(timings, i);
  const ForwardFlops& f = t.flops;
  return fmt::format(
      "{{\"n\": {}, \"runs\": {}, \"fewer_runs\": {}, \"compute_s\": {}, \"upload_s\": {}, "
      "\"download_s\": {}, \"median_compute_s\": {}, \"median_upload_s\": {}, "
      "\"median_download_s\": {}, \"flops\": {}, \"flops_terms\": {{\"qkv\": {}, \"scores\": {}, "
      "\"softmax\": {}, \"context\": {}, \"output\": {}}}, \"gflop_per_s\": {}, \"growth\": {}, "
      "\"plan_bytes\": {}, \"peak_rss_bytes\": {}}}",
      t.n, t.compute_s.size(),
      t.fewer_runs.format.empty() ? "null" : json_string(t.fewer_runs.in(Language::en)),
      json_numbers(t.compute_s), json_numbers(t.upload_s), json_numbers(t.download_s),
      json_number(median(t.compute_s)), json_number(median(t.upload_s)),
      json_number(median(t.download_s)), f.total(), f.qkv, f.scores, f.softmax, f.context, f.output,
      json_number(gflop_per_s(t)), g ? json_number(*g) : "null", t.plan_bytes, t.peak_rss_bytes);
}

std::string bench_json(const Backend& backend, const BenchSpec& spec,
                       const std::vector<LengthTiming>& timings) {
  std::vector<std::string> lengths;
  for (std::size_t i = 0; i < timings.size(); ++i) lengths.push_back(length_json(timings, i));
  return fmt::format(
      "{{\"command\": \"bench\", \"backend\": {}, \"dtype\": \"f64\", \"d_model\": {}, "
      "\"heads\": {}, \"d_k\": {}, \"seed\": {}, \"cpu_threads\": {}, \"runs_asked\": {}, "
      "\"warm_up_runs\": 1, \"flops_formula\": {}, \"lengths\": [\n  {}\n]}}\n",
      json_string(backend.name()), spec.d_model, spec.heads, spec.d_model / spec.heads, spec.seed,
      parallel_threads(), spec.runs ? fmt::format("{}", *spec.runs) : "null",
      json_string(kFlopsFormula), fmt::join(lengths, ",\n  "));
}

void bench_command(const BenchOptions& o) {
  const BenchSpec spec = check_options(o);
  const std::unique_ptr<Backend> backend = make_backend(o.backend);
  const std::vector<LengthTiming> timings = time_lengths(*backend, spec);
  if (o.format == "json") {
    const DocumentScope document;  // JSON: --lang's language, never LANG's
    write_stdout(bench_json(*backend, spec, timings));
  } else {
    write_stdout(bench_text(*backend, spec, timings));
  }
}

}  // namespace

void setup_bench(CLI::App& app, CommandContext& /*context*/) {
  auto options = std::make_shared<BenchOptions>();
  CLI::App* cmd = app.add_subcommand(
      "bench", std::string(tr("Time the attention forward pass (no trace) over sequence lengths: "
                              "median time, GFLOP/s, memory, growth")));
  cmd->add_option("--seq", options->seq,
                  tr_format("Sequence lengths n, 1 to {} each (default 128 256 512 1024 2048 "
                            "4096)",
                            kMaxSeq));
  cmd->add_option("--d-model", options->d_model,
                  tr_format("Model width d, 1 to {} (default 512)", kMaxDModel));
  cmd->add_option("--heads", options->heads,
                  std::string(tr("Heads h, dividing d_model (default 8)")));
  cmd->add_option("--backend", options->backend, std::string(tr("cpu or cuda (default cpu)")));
  cmd->add_option("--dtype", options->dtype, std::string(tr("f64 only (default f64)")));
  cmd->add_option("--runs", options->runs,
                  tr_format("Timed runs per length, 1 to {}; the median is reported (default {}, "
                            "fewer where they would take over {:.0f} s)",
                            kMaxRuns, kDefaultRuns, kDefaultBudgetSeconds));
  cmd->add_option("--seed", options->seed,
                  std::string(tr("Seed of the random input and weights (default 1; SplitMix64 + "
                                 "Box–Muller)")));
  cmd->add_option("--format", options->format, std::string(tr("text or json")))
      ->check(CLI::IsMember({"text", "json"}));
  cmd->callback([options] { bench_command(*options); });
}

}  // namespace attn
