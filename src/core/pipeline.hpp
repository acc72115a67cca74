// The attention pipeline (docs/lesson-format.md, the math), one function per step.
//
// Shape key: n queries, m keys, d model width (d_mem for memory), h heads,
// d_k per-head query/key width, d_v per-head value width.
#pragma once

#include <armadillo>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "core/attention.hpp"
#include "core/backend.hpp"
#include "core/lesson.hpp"
#include "core/trace.hpp"

namespace attn {

// Values that replace cells of a step right after it is computed, so that every
// later step is recomputed from them (verify's carried-forward credit: "right
// given your K"). Any computed step can be overridden, whole or in part (a
// step given by the lesson, X or W_Q, cannot); given exponentials or row sums
// make the weights E / Σ, as on paper.
struct StepOverride {
  arma::mat value;   // the step's shape
  arma::umat given;  // the step's shape: 1 where `value` replaces the computed cell
};
using Overrides = std::map<std::string, StepOverride, std::less<>>;

// Runs the whole forward pass and records every step. An override whose shape
// differs from its step's is an InputError naming both shapes.
Trace run_pipeline(const Lesson& lesson, Backend& backend, const Overrides& overrides = {});

// `computed` with the cells `overrides` gives for step `id` replaced; an
// InputError naming both shapes when they differ.
arma::mat with_overrides(const Overrides& overrides, const std::string& id, arma::mat computed);

// GELU′(x) = Φ(x) + x·φ(x): the exact GELU's slope (core/ops/backward.cpp).
double gelu_slope(double x);

// Whether row r of the softmax step `weights` was set by the masked_row
// policy (every key masked with fill −inf): then it does not depend on its
// scores, and a finite cell of it sends no gradient back (core/ops/backward.cpp).
bool policy_row(const Trace& trace, const Step& weights, std::size_t r);

// The backward pass of lesson.backward (core/backward.cpp, docs/backward.md):
// appends grad.<id> for every step the result depends on, in reverse order,
// each with the cells `overrides` gives replaced. In another format than f64
// (run --dtype) it records nothing but a warning saying so.
void run_backward(const Lesson& lesson, Trace& trace, const Overrides& overrides);

// The whole-step arithmetic of the operations the pipeline computes on the
// host, each defined in its op family's file (core/ops/: positional.cpp,
// masks.cpp, heads.cpp, layer_norm.cpp, ffn.cpp, decoding.cpp).

// -> PE:(n,d); PE(pos,2i) = sin(pos/10000^(2i/d)), PE(pos,2i+1) = cos(same)
arma::mat positional_encoding(std::size_t n, std::size_t d);

// The MaskReason bits of every (query, key) cell: (n,m).
arma::umat mask_reasons(const Lesson& lesson);

// weights: h × (n,m) -> the cell-by-cell mean / max over heads:(n,m)
using MatrixRefs = std::vector<std::reference_wrapper<const arma::mat>>;
arma::mat mean_over_heads(const MatrixRefs& weights);
arma::mat max_over_heads(const MatrixRefs& weights);

// contexts: h × (n,d_v) -> concat:(n,h·d_v)
arma::mat concat_heads(const std::vector<arma::mat>& contexts);

// x:(n,d) -> the mean of each row:(n,1)
arma::mat row_mean(const arma::mat& x);

// x:(n,d) mean:(n,1) -> the biased variance of each row, Σ_j (x_ij − mean_i)² / d:(n,1)
arma::mat row_variance(const arma::mat& x, const arma::mat& mean);

// x:(n,d) mean:(n,1) var:(n,1) -> (x − mean) / √(var + eps):(n,d), row by row
arma::mat normalise_rows(const arma::mat& x, const arma::mat& mean, const arma::mat& var,
                         double eps);

// x:(n,d) gamma:(d) beta:(d) -> gamma ⊙ x + beta:(n,d), column j scaled by gamma_j
arma::mat scale_shift(const arma::mat& x, const arma::rowvec& gamma, const arma::rowvec& beta);

// x:(n,p) -> max(0, x):(n,p)
arma::mat relu(const arma::mat& x);

// x:(n,p) -> x·Φ(x) = x·(1 + erf(x/√2))/2:(n,p), the exact GELU
arma::mat gelu(const arma::mat& x);

// How far a decoding step's context may be from row t of the full causal
// computation (decode.head{h}.check); further is a warning in the trace.
inline constexpr double kDecodeTolerance = 1e-12;

// full:(n,d_v) rows: n × (1,d_v) -> (n,1): row t = max_j |rows[t][0,j] − full[t,j]|
arma::mat max_abs_row_difference(const arma::mat& full, const std::vector<arma::mat>& rows);

// Rotary positions and linear biases (core/ops/positions_rope_alibi.cpp).

// RoPE's base: θ_i = base^(−2i/d_k).
inline constexpr double kRopeBase = 10000.0;

// The angle pair `pair` (i) of a row at `position` turns by: position·10000^(−2i/width).
double rope_angle(std::size_t position, std::size_t pair, std::size_t width);

// One cell of a rotated pair (x, y): x·cos − y·sin (the first), x·sin + y·cos (the second).
double rotated_pair_cell(double x, double y, double angle, bool second);

// x:(n,d) -> (n,d): row p's pairs (2i, 2i+1) rotated by (p + shift)·θ_i; d even.
arma::mat rope_rotate(const arma::mat& x, std::size_t shift);

// ALiBi's slope of head `head` of `heads`: 2^(−8(head+1)/heads).
double alibi_slope(std::size_t head, std::size_t heads);

// −slope·|query − key|.
double alibi_bias_cell(double slope, std::size_t query, std::size_t key);

// -> (n,m): cell (i, j) = −slope·|i − j|.
arma::mat alibi_bias(double slope, std::size_t n, std::size_t m);

// How far the scores with shifted positions may be from the scores
// (head{h}.shift_check); further is a warning in the trace.
inline constexpr double kShiftTolerance = 1e-12;

// A:(n,m) B:(n,m) -> (n,1): row i = max_j |B[i, j] − A[i, j]|.
arma::mat row_max_abs_difference(const arma::mat& A, const arma::mat& B);

// "d0", "d1", ... : labels for feature columns.
std::vector<std::string> feature_labels(std::size_t count);

}  // namespace attn
