// Seeded random lessons for the tests that compare whole traces (the plain-loop
// reference, the backend harness): every feature drawn (heads, cross-attention,
// biases, W_O, every mask and fill, each masked-row policy, scales, positional
// encoding), small enough to run hundreds.
#pragma once

#include <cstdint>
#include <limits>
#include <random>
#include <string>

#include "core/lesson.hpp"

namespace attn::testing {

// Uniform in [lo, hi) from a fully specified engine, without the
// implementation-defined std::uniform_real_distribution.
inline double uniform(std::mt19937_64& rng, double lo, double hi) {
  return lo + (hi - lo) * static_cast<double>(rng() >> 11) * 0x1.0p-53;
}
inline std::size_t pick(std::mt19937_64& rng, std::size_t lo, std::size_t hi) {
  return lo + static_cast<std::size_t>(rng() % (hi - lo + 1));
}
inline arma::mat random_matrix(std::mt19937_64& rng, std::size_t r, std::size_t c) {
  arma::mat M(r, c);
  for (double& v : M) v = uniform(rng, -2.0, 2.0);
  return M;
}

inline attn::Lesson random_lesson(std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  attn::Lesson L;
  L.id = "random-" + std::to_string(seed);
  const std::size_t n = pick(rng, 1, 7), d_model = pick(rng, 1, 8);
  L.heads = pick(rng, 1, 3);
  L.d_k = pick(rng, 1, 4);
  L.d_v = pick(rng, 1, 4);
  L.X = random_matrix(rng, n, d_model);
  for (std::size_t i = 0; i < n; ++i) L.tokens.push_back("q" + std::to_string(i));
  std::size_t d_src = d_model;
  if (rng() % 3 == 0) {
    const std::size_t m = pick(rng, 1, 7);
    d_src = pick(rng, 1, 6);
    L.memory = random_matrix(rng, m, d_src);
    for (std::size_t j = 0; j < m; ++j) L.memory_tokens.push_back("k" + std::to_string(j));
  }
  const std::size_t m = L.keys();
  L.W_Q = random_matrix(rng, d_model, L.heads * L.d_k);
  L.W_K = random_matrix(rng, d_src, L.heads * L.d_k);
  L.W_V = random_matrix(rng, d_src, L.heads * L.d_v);
  if (rng() % 2) L.b_Q = random_matrix(rng, 1, L.heads * L.d_k);
  if (rng() % 2) L.b_K = random_matrix(rng, 1, L.heads * L.d_k);
  if (rng() % 2) L.b_V = random_matrix(rng, 1, L.heads * L.d_v);
  if (rng() % 2) {
    L.W_O = random_matrix(rng, L.heads * L.d_v, pick(rng, 1, 5));
    if (rng() % 2) L.b_O = random_matrix(rng, 1, L.W_O->n_cols);
  }
  L.causal = rng() % 3 == 0;
  if (rng() % 3 == 0)
    for (std::size_t j = 0; j < m; ++j) L.key_padding.push_back(rng() % 4 == 0);
  if (rng() % 4 == 0) {
    arma::umat keep(n, m);
    for (arma::uword& v : keep) v = rng() % 5 != 0;
    L.keep = keep;
  }
  const unsigned scale = rng() % 3;
  L.scale_kind = scale == 0   ? attn::ScaleKind::sqrt_dk
                 : scale == 1 ? attn::ScaleKind::none
                              : attn::ScaleKind::number;
  L.scale_number = uniform(rng, 0.5, 4.0);
  const unsigned fill = rng() % 3;
  L.mask_fill = fill == 0 ? -std::numeric_limits<double>::infinity() : fill == 1 ? -1e9 : -65504.0;
  const unsigned policy = rng() % 3;
  L.masked_row = policy == 0   ? attn::MaskedRowPolicy::nan
                 : policy == 1 ? attn::MaskedRowPolicy::zero
                               : attn::MaskedRowPolicy::uniform;
  if (rng() % 3 == 0) L.positional_encoding = attn::PositionalEncoding::sinusoidal;
  return L;
}

}  // namespace attn::testing
