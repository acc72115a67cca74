// Sampling q·k (teach/qk_stats.hpp): SplitMix64 + Box–Muller, two-pass moments.
#include "teach/qk_stats.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <numbers>
#include <vector>

#include "core/error.hpp"
#include "core/i18n.hpp"
#include "render/json_writer.hpp"
#include "render/numbers.hpp"

namespace attn {

namespace {

constexpr double kTwoToMinus53 = 0x1.0p-53;

// Draws one vector of d_k components into `v`.
void draw_vector(NormalStream& normals, QkVectors vectors, std::vector<double>& v) {
  double length2 = 0.0;
  for (double& x : v) {
    x = normals.next();
    length2 += x * x;
  }
  if (vectors == QkVectors::unit_length) {
    const double length = std::sqrt(length2);
    for (double& x : v) x /= length;
  }
}

// P(|Z| > x) for a standard normal Z.
double normal_tail(double x) {
  return std::erfc(x / std::numbers::sqrt2);
}

// Mean, unbiased variance, std and the fraction beyond ±3 of `xs`, with
// standard errors: s/√S; √((m4 − s⁴)/S) from the fourth central moment; the
// variance's over 2s; √(p(1−p)/S).
QkMoments moments(const std::vector<double>& xs) {
  const double S = static_cast<double>(xs.size());
  double sum = 0.0;
  std::size_t beyond = 0;
  for (double x : xs) {
    sum += x;
    beyond += std::abs(x) > 3.0;
  }
  const double mean = sum / S;
  double m2 = 0.0, m4 = 0.0;
  for (double x : xs) {
    const double d2 = (x - mean) * (x - mean);
    m2 += d2;
    m4 += d2 * d2;
  }
  const double variance = m2 / (S - 1.0);
  const double fourth = m4 / S;
  const double deviation = std::sqrt(variance);
  const double p = static_cast<double>(beyond) / S;
  const double variance_error = std::sqrt(std::max(0.0, fourth - variance * variance) / S);
  QkMoments out;
  out.mean.value = mean;
  out.mean.standard_error = deviation / std::sqrt(S);
  out.variance.value = variance;
  out.variance.standard_error = variance_error;
  out.std.value = deviation;
  out.std.standard_error = deviation > 0 ? variance_error / (2.0 * deviation) : 0.0;
  out.beyond_3.value = p;
  out.beyond_3.standard_error = std::sqrt(p * (1.0 - p) / S);
  return out;
}

// What theory says of q·k, or of q·k/√d_k when `scaled`.
void set_theory(QkMoments& m, QkVectors vectors, double d_k, bool scaled) {
  // Var(q·k): d_k for unit-variance components, 1/d_k on the unit sphere;
  // dividing by √d_k divides it by d_k.
  const double variance = vectors == QkVectors::unit_variance
                              ? (scaled ? 1.0 : d_k)
                              : (scaled ? 1.0 / (d_k * d_k) : 1.0 / d_k);
  m.mean.theory = 0.0;
  m.variance.theory = variance;
  m.std.theory = std::sqrt(variance);
  if (vectors == QkVectors::unit_length) {
    m.beyond_3.theory = 0.0;  // |q·k| <= |q|·|k| = 1
  } else {
    m.beyond_3.theory = normal_tail(3.0 / std::sqrt(variance));
    m.beyond_3.theory_exact = false;
  }
}

std::string theory_text(const Estimate& e) {
  return fmt::format("{}{:.6g}", e.theory_exact ? "" : "≈ ", e.theory);
}

std::string section_text(const QkStats& s) {
  const bool unit = s.spec.vectors == QkVectors::unit_variance;
  std::string out(unit ? tr("q, k with components independent N(0, 1) (unit variance):")
                       : tr("q, k unit-length (uniform on the sphere; components of variance "
                            "1/d_k):"));
  out += fmt::format("\n  {}{}{}   {}\n", std::string(23, ' '),
                     pad_left(std::string(tr("sampled")), 12),
                     pad_left(std::string(tr("± s.e.")), 12), tr("theory"));
  const auto block = [&](const char* label, const QkMoments& m, bool scaled) {
    const std::string why_var =
        unit ? (scaled ? " (= d_k / d_k)" : " (= d_k)") : (scaled ? " (= 1/d_k²)" : " (= 1/d_k)");
    const std::pair<std::string_view, const Estimate*> rows[] = {{tr("mean"), &m.mean},
                                                                 {tr("variance"), &m.variance},
                                                                 {tr("std"), &m.std},
                                                                 {"|x| > 3", &m.beyond_3}};
    bool first = true;
    for (const auto& [name, e] : rows) {
      std::string note;
      if (e == &m.variance) note = why_var;
      if (e == &m.beyond_3)
        note = unit ? tr(" (normal approximation)") : tr(" (|q·k| <= 1 always)");
      out += fmt::format("  {}{}{:>12.6g}{:>12.2g}   {}{}\n", pad_right(first ? label : "", 13),
                         pad_right(std::string(name), 10), e->value, e->standard_error,
                         theory_text(*e), note);
      first = false;
    }
  };
  block("q·k", s.raw, false);
  block("q·k / √d_k", s.scaled, true);
  return out;
}

std::string estimate_json(const Estimate& e) {
  return fmt::format(
      "{{\"value\": {}, \"standard_error\": {}, \"theory\": {}, \"theory_exact\": {}}}",
      json_number(e.value), json_number(e.standard_error), json_number(e.theory),
      e.theory_exact ? "true" : "false");
}

std::string moments_json(const QkMoments& m) {
  return fmt::format("{{\"mean\": {}, \"variance\": {}, \"std\": {}, \"beyond_3\": {}}}",
                     estimate_json(m.mean), estimate_json(m.variance), estimate_json(m.std),
                     estimate_json(m.beyond_3));
}

}  // namespace

std::string_view vectors_name(QkVectors vectors) {
  return vectors == QkVectors::unit_variance ? "unit_variance" : "unit_length";
}

void validate(const QkSampleSpec& spec) {
  if (spec.d_k < 1 || spec.d_k > kMaxQkDk)
    throw InputError(
        tr_format("--d-k {} is out of range; give d_k from 1 to {}", spec.d_k, kMaxQkDk));
  if (spec.samples < kMinQkSamples || spec.samples > kMaxQkSamples)
    throw InputError(
        tr_format("--samples {} is out of range; give {} to {} samples (with fewer, the "
                  "standard errors mean nothing)",
                  spec.samples, kMinQkSamples, kMaxQkSamples));
  if (spec.samples * spec.d_k > kMaxQkNumbers)
    throw InputError(
        tr_format("--samples {} × --d-k {} = {} components in all is more than {} (kept under a "
                  "second); give at most {} samples for d_k {}",
                  spec.samples, spec.d_k, spec.samples * spec.d_k, kMaxQkNumbers,
                  kMaxQkNumbers / spec.d_k, spec.d_k));
}

double NormalStream::next() {
  if (has_spare_) {
    has_spare_ = false;
    return spare_;
  }
  const double u1 = static_cast<double>((rng_.next() >> 11) + 1) * kTwoToMinus53;  // (0, 1]
  const double u2 = static_cast<double>(rng_.next() >> 11) * kTwoToMinus53;        // [0, 1)
  const double r = std::sqrt(-2.0 * std::log(u1));
  const double angle = 2.0 * std::numbers::pi * u2;
  spare_ = r * std::sin(angle);
  has_spare_ = true;
  return r * std::cos(angle);
}

QkStats sample_qk(const QkSampleSpec& spec) {
  validate(spec);
  NormalStream normals(spec.seed);
  std::vector<double> q(spec.d_k), k(spec.d_k), raw(spec.samples), scaled(spec.samples);
  const double root = std::sqrt(static_cast<double>(spec.d_k));
  for (std::uint64_t s = 0; s < spec.samples; ++s) {
    draw_vector(normals, spec.vectors, q);
    draw_vector(normals, spec.vectors, k);
    double dot = 0.0;
    for (std::uint64_t i = 0; i < spec.d_k; ++i) dot += q[i] * k[i];
    raw[s] = dot;
    scaled[s] = dot / root;
  }
  QkStats out{spec, moments(raw), moments(scaled)};
  set_theory(out.raw, spec.vectors, static_cast<double>(spec.d_k), false);
  set_theory(out.scaled, spec.vectors, static_cast<double>(spec.d_k), true);
  return out;
}

const Estimate* find_statistic(const QkMoments& moments, std::string_view quantity) {
  if (quantity == "qk_mean") return &moments.mean;
  if (quantity == "qk_variance") return &moments.variance;
  if (quantity == "qk_std") return &moments.std;
  if (quantity == "qk_beyond_3") return &moments.beyond_3;
  return nullptr;
}

std::string qk_stats_text(const QkStats& unit_variance, const QkStats& unit_length) {
  const QkSampleSpec& spec = unit_variance.spec;
  std::string out = tr_format(
      "attn-trace stats · q·k of {} random pairs q, k with d_k = {} · seed {}\n"
      "drawn by SplitMix64 + Box–Muller (docs/stats.md); ± s.e. is the standard error\n\n",
      spec.samples, spec.d_k, spec.seed);
  out += section_text(unit_variance) + "\n" + section_text(unit_length);
  const double d_k = static_cast<double>(spec.d_k);
  out += tr_format(
      // xgettext:no-c-format
      "\nWhy scale: with unit-variance components q·k has variance d_k = {:g} (std {:.4g}), so\n"
      "values beyond ±3 come up in {:.2g}% of pairs ({:.1f}% sampled), more as d_k grows;\n"
      "dividing by √d_k = {:.4g} brings the variance back to 1. Unit-length vectors give\n"
      "std 1/√d_k = {:.4g} but never pass ±1: a std of {:.4g} and \"beyond ±3 easily\"\n"
      "describe two different kinds of vectors.\n",
      d_k, std::sqrt(d_k), 100.0 * unit_variance.raw.beyond_3.theory,
      100.0 * unit_variance.raw.beyond_3.value, std::sqrt(d_k), 1.0 / std::sqrt(d_k),
      1.0 / std::sqrt(d_k));
  return out;
}

std::string qk_stats_json(const QkStats& unit_variance, const QkStats& unit_length) {
  const QkSampleSpec& spec = unit_variance.spec;
  const auto section = [](const QkStats& s) {
    return fmt::format("{{\"raw\": {}, \"scaled\": {}}}", moments_json(s.raw),
                       moments_json(s.scaled));
  };
  return fmt::format(
      "{{\"d_k\": {}, \"samples\": {}, \"seed\": {}, \"generator\": \"splitmix64-box-muller\",\n"
      "  \"unit_variance\": {},\n  \"unit_length\": {}}}\n",
      spec.d_k, spec.samples, spec.seed, section(unit_variance), section(unit_length));
}

}  // namespace attn
