// The variance argument for the √d_k scale, by sampling (`attn-trace stats`,
// docs/stats.md): q·k of random vectors before and after dividing by √d_k,
// against what theory says, drawn reproducibly from a seed.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "teach/exercise.hpp"

namespace attn {

// How q and k are drawn, d_k components each.
enum class QkVectors {
  unit_variance,  // components independent N(0, 1): Var(q·k) = d_k
  unit_length,    // uniform on the unit sphere (a N(0, I) draw divided by its length):
                  // Var(q·k) = 1/d_k and |q·k| <= 1
};
std::string_view vectors_name(QkVectors vectors);

// Limits that keep one run under a second.
inline constexpr std::uint64_t kMaxQkDk = 100000;
// Fewer samples than this leave the standard errors meaningless.
inline constexpr std::uint64_t kMinQkSamples = 30;
inline constexpr std::uint64_t kMaxQkSamples = 1000000;
inline constexpr std::uint64_t kMaxQkNumbers = 5000000;  // samples × d_k

struct QkSampleSpec {
  std::uint64_t d_k = 64;
  std::uint64_t samples = 10000;
  std::uint64_t seed = 1;
  QkVectors vectors = QkVectors::unit_variance;
};
// Throws InputError naming the option and its range when `spec` is out of it
// (d_k >= 1, samples >= 2, the limits above).
void validate(const QkSampleSpec& spec);

// Standard normals from SplitMix64 by the Box–Muller transform: each pair of
// draws a, b (64-bit integers) gives u1 = ((a >> 11) + 1)·2^-53 in (0, 1] and
// u2 = (b >> 11)·2^-53 in [0, 1), then z0 = √(−2 ln u1)·cos(2π u2) and
// z1 = √(−2 ln u1)·sin(2π u2), returned in that order.
class NormalStream {
 public:
  explicit NormalStream(std::uint64_t seed) : rng_(seed) {}
  double next();

 private:
  SplitMix64 rng_;
  double spare_ = 0.0;
  bool has_spare_ = false;
};

// One statistic of a sample, with its standard error (estimated from the
// sample itself) and the value theory gives.
struct Estimate {
  double value = 0.0;
  double standard_error = 0.0;
  double theory = 0.0;
  bool theory_exact = true;  // false: a normal approximation
};

// mean, variance (unbiased, ÷ S−1), standard deviation, and the fraction of
// samples with |x| > 3.
struct QkMoments {
  Estimate mean, variance, std, beyond_3;
};

struct QkStats {
  QkSampleSpec spec;
  QkMoments raw;     // q·k
  QkMoments scaled;  // q·k / √d_k
};

// Draws spec.samples pairs: for each, q's d_k components then k's, from one
// NormalStream(seed). Same spec, same numbers.
QkStats sample_qk(const QkSampleSpec& spec);

// The statistic a claim names: "qk_mean", "qk_variance", "qk_std",
// "qk_beyond_3"; nullptr for another name.
const Estimate* find_statistic(const QkMoments& moments, std::string_view quantity);

// The report of `stats`: both kinds of vectors, drawn from the same seed.
std::string qk_stats_text(const QkStats& unit_variance, const QkStats& unit_length);
std::string qk_stats_json(const QkStats& unit_variance, const QkStats& unit_length);

}  // namespace attn
