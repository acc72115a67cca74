// `attn-trace stats`: the variance of q·k before and after dividing by √d_k,
// by sampling random vectors from a seed (docs/stats.md).
#include <fmt/format.h>

#include <algorithm>

#include <charconv>
#include <cstdint>
#include <string>

#include "cli/commands.hpp"
#include "core/error.hpp"
#include "core/i18n.hpp"
#include "teach/qk_stats.hpp"

namespace attn {

namespace {

struct StatsOptions {
  std::string d_k, samples, seed = "1";  // read as whole numbers in the callback
  std::string format = "text";
};

// A whole number from 0 to 2^64−1 as typed, or an InputError naming the option.
std::uint64_t whole_number(const std::string& text, const char* option, std::uint64_t low,
                           std::uint64_t high) {
  std::uint64_t value = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || error != std::errc() || end != text.data() + text.size())
    throw InputError(tr_format("stats: {} must be a whole number from {} to {}, not '{}'", option,
                               low, high, text));
  return value;
}

void stats_command(const StatsOptions& o) {
  QkSampleSpec spec;
  spec.d_k = whole_number(o.d_k, "--d-k", 1, kMaxQkDk);
  // By default 10000 pairs, fewer for a d_k above 500, so that the run stays
  // under the limit on samples × d_k.
  spec.samples =
      o.samples.empty()
          ? std::max<std::uint64_t>(
                kMinQkSamples, std::min<std::uint64_t>(
                                   10000, kMaxQkNumbers / std::max<std::uint64_t>(spec.d_k, 1)))
          : whole_number(o.samples, "--samples", kMinQkSamples, kMaxQkSamples);
  spec.seed = whole_number(o.seed, "--seed", 0, UINT64_MAX);
  validate(spec);
  const QkStats unit_variance = sample_qk(spec);
  spec.vectors = QkVectors::unit_length;
  const QkStats unit_length = sample_qk(spec);
  if (o.format == "json") {
    const DocumentScope document;  // JSON: --lang's language, never LANG's
    write_stdout(qk_stats_json(unit_variance, unit_length));
  } else {
    write_stdout(qk_stats_text(unit_variance, unit_length));
  }
}

}  // namespace

void setup_stats(CLI::App& app, CommandContext& /*context*/) {
  auto options = std::make_shared<StatsOptions>();
  CLI::App* cmd = app.add_subcommand(
      "stats",
      std::string(
          tr("Sample q·k of random vectors: its variance before and after dividing by √d_k")));
  cmd->add_option("--d-k", options->d_k, tr_format("Components per vector, 1 to {}", kMaxQkDk))
      ->required();
  cmd->add_option("--samples", options->samples,
                  tr_format("Pairs (q, k) drawn, {} to {} (default 10000, or {} / d_k when d_k "
                            "is above 500; samples × d_k at most {})",
                            kMinQkSamples, kMaxQkSamples, kMaxQkNumbers, kMaxQkNumbers));
  cmd->add_option("--seed", options->seed,
                  std::string(tr("Seed of SplitMix64, 0 to 18446744073709551615 (default 1; same "
                                 "seed, same output)")));
  cmd->add_option("--format", options->format, std::string(tr("text or json")))
      ->check(CLI::IsMember({"text", "json"}));
  cmd->callback([options] { stats_command(*options); });
}

}  // namespace attn
