// Attention's operations by the book, loop by loop: the independent reference
// that the pipeline (tests/core/test_reference.cpp) and every backend
// (tests/backend/test_backend_harness.cpp) are compared with. Armadillo is only
// the container here: every value is computed by these loops, none by
// Armadillo, the BLAS or the project's own arithmetic (core/arithmetic.hpp).
//
// Shape key: n queries, m keys, k the length of a sum, p columns, d model
// width, h heads.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <limits>

#include <armadillo>

#include "core/masked_row.hpp"

namespace attn::testing::plain {

inline arma::mat zeros(std::size_t rows, std::size_t cols) {
  return arma::mat(rows, cols, arma::fill::zeros);
}

// A:(n,k) B:(k,p) (+ bias:(1,p), added to every row) -> (n,p)
inline arma::mat matmul(const arma::mat& A, const arma::mat& B,
                        const arma::rowvec* bias = nullptr) {
  arma::mat out = zeros(A.n_rows, B.n_cols);
  for (std::size_t i = 0; i < A.n_rows; ++i)
    for (std::size_t j = 0; j < B.n_cols; ++j) {
      double s = bias ? (*bias)(j) : 0.0;
      for (std::size_t k = 0; k < A.n_cols; ++k) s += A(i, k) * B(k, j);
      out(i, j) = s;
    }
  return out;
}

// A:(n,k) B:(m,k) -> A·Bᵀ:(n,m)
inline arma::mat matmul_transposed(const arma::mat& A, const arma::mat& B) {
  arma::mat out = zeros(A.n_rows, B.n_rows);
  for (std::size_t i = 0; i < A.n_rows; ++i)
    for (std::size_t j = 0; j < B.n_rows; ++j) {
      double s = 0.0;
      for (std::size_t k = 0; k < A.n_cols; ++k) s += A(i, k) * B(j, k);
      out(i, j) = s;
    }
  return out;
}

// A:(n,p) B:(n,p) -> A + B:(n,p)
inline arma::mat add(const arma::mat& A, const arma::mat& B) {
  arma::mat out = zeros(A.n_rows, A.n_cols);
  for (std::size_t i = 0; i < A.n_rows; ++i)
    for (std::size_t j = 0; j < A.n_cols; ++j) out(i, j) = A(i, j) + B(i, j);
  return out;
}

// S:(n,m) -> S / divisor:(n,m)
inline arma::mat divide(const arma::mat& S, double divisor) {
  arma::mat out = zeros(S.n_rows, S.n_cols);
  for (std::size_t i = 0; i < S.n_rows; ++i)
    for (std::size_t j = 0; j < S.n_cols; ++j) out(i, j) = S(i, j) / divisor;
  return out;
}

// S:(n,m) masked:(n,m), nonzero where a cell is masked -> (n,m): masked cells
// `fill`, the others S's.
inline arma::mat mask(const arma::mat& S, const arma::umat& masked, double fill) {
  arma::mat out = zeros(S.n_rows, S.n_cols);
  for (std::size_t i = 0; i < S.n_rows; ++i)
    for (std::size_t j = 0; j < S.n_cols; ++j) out(i, j) = masked(i, j) != 0 ? fill : S(i, j);
  return out;
}

// S:(n,m) -> exp of every cell:(n,m), as on paper (no shift).
inline arma::mat exp_cells(const arma::mat& S) {
  arma::mat out = zeros(S.n_rows, S.n_cols);
  for (std::size_t i = 0; i < S.n_rows; ++i)
    for (std::size_t j = 0; j < S.n_cols; ++j) out(i, j) = std::exp(S(i, j));
  return out;
}

// E:(n,m) -> Σ_j E[i, j]:(n,1)
inline arma::mat row_sum(const arma::mat& E) {
  arma::mat out = zeros(E.n_rows, 1);
  for (std::size_t i = 0; i < E.n_rows; ++i)
    for (std::size_t j = 0; j < E.n_cols; ++j) out(i, 0) += E(i, j);
  return out;
}

// x:(n,m) -> weights:(n,m): each row's stable softmax, exp(x_j − max) / Σ,
// the running max from -inf; a row whose every cell is -inf (no key) is NaN,
// 0 or 1/m by `policy`.
inline arma::mat row_softmax(const arma::mat& x, MaskedRowPolicy policy) {
  const std::size_t m = x.n_cols;
  arma::mat out = zeros(x.n_rows, m);
  for (std::size_t i = 0; i < x.n_rows; ++i) {
    double row_max = -std::numeric_limits<double>::infinity();
    for (std::size_t j = 0; j < m; ++j) row_max = std::max(row_max, x(i, j));
    if (row_max == -std::numeric_limits<double>::infinity()) {
      for (std::size_t j = 0; j < m; ++j)
        out(i, j) = policy == MaskedRowPolicy::nan    ? std::nan("")
                    : policy == MaskedRowPolicy::zero ? 0.0
                                                      : 1.0 / static_cast<double>(m);
      continue;
    }
    double denominator = 0.0;
    for (std::size_t j = 0; j < m; ++j) denominator += std::exp(x(i, j) - row_max);
    for (std::size_t j = 0; j < m; ++j) out(i, j) = std::exp(x(i, j) - row_max) / denominator;
  }
  return out;
}

// M:(n,c) -> columns [from, from + count) of M:(n,count): one head's slice.
inline arma::mat columns(const arma::mat& M, std::size_t from, std::size_t count) {
  arma::mat out = zeros(M.n_rows, count);
  for (std::size_t i = 0; i < M.n_rows; ++i)
    for (std::size_t j = 0; j < count; ++j) out(i, j) = M(i, from + j);
  return out;
}

// -> PE:(n,d), the sinusoidal table: sin at even columns, cos at odd ones, of
// pos / 10000^(2⌊j/2⌋/d).
inline arma::mat positions(std::size_t n, std::size_t d) {
  arma::mat out = zeros(n, d);
  for (std::size_t pos = 0; pos < n; ++pos)
    for (std::size_t j = 0; j < d; ++j) {
      const double angle =
          static_cast<double>(pos) /
          std::pow(10000.0, static_cast<double>(2 * (j / 2)) / static_cast<double>(d));
      out(pos, j) = (j % 2 == 0) ? std::sin(angle) : std::cos(angle);
    }
  return out;
}

// X:(n,d) W_QKV:(d,3d) W_O:(d,d), h heads of w = d/h -> output:(n,d): the
// forward pass without a trace, [Q|K|V] = X·W_QKV, head h =
// softmax(Q_h·K_hᵀ/√w)·V_h, output = [head 0 | head 1 | ...]·W_O.
inline arma::mat forward(const arma::mat& X, const arma::mat& W_QKV, const arma::mat& W_O,
                         std::size_t heads) {
  const std::size_t n = X.n_rows, d = X.n_cols, w = d / heads;
  const arma::mat QKV = matmul(X, W_QKV);
  arma::mat concat = zeros(n, d);
  for (std::size_t h = 0; h < heads; ++h) {
    const arma::mat scaled =
        divide(matmul_transposed(columns(QKV, h * w, w), columns(QKV, d + h * w, w)),
               std::sqrt(static_cast<double>(w)));
    const arma::mat context =
        matmul(row_softmax(scaled, MaskedRowPolicy::nan), columns(QKV, 2 * d + h * w, w));
    for (std::size_t i = 0; i < n; ++i)
      for (std::size_t j = 0; j < w; ++j) concat(i, h * w + j) = context(i, j);
  }
  return matmul(concat, W_O);
}

}  // namespace attn::testing::plain
