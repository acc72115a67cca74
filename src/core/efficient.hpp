// The whole-step arithmetic of efficient attention, as the pipeline computes
// it on the host (whatever the backend): FlashAttention's tiled (online)
// softmax and linear attention (docs/steps.md). Each function is the op of
// core/ops/tiles.cpp or core/ops/linear.cpp over a whole step; `round` rounds
// every operation's result (f32 in a narrower format, nothing in f64), so that
// the tiles show what the lesson's format does to them.
//
// Shape key: r rows of a query block, c columns of a key block, d_k, d_v.
#pragma once

#include <armadillo>
#include <functional>

namespace attn {

// The rounding of one operation's result: the identity in f64.
using Round = std::function<double(double)>;

// exp(s − m), and 0 when m = −inf (the row has no open key yet, so s is −inf too).
double tile_exp(double s, double m);
// The rescale factor exp(m_old − m_new); 1 when m_new = −inf (ℓ and O are still 0).
double tile_rescale(double m_old, double m_new);

// S:(r,c) m_old:(r,1) or empty -> m:(r,1) = max(m_old, max_j S[i,j])
arma::mat tile_running_max(const arma::mat& S, const arma::mat& m_old);
// m_new:(r,1) m_old:(r,1) or empty (−inf) -> α:(r,1) = exp(m_old − m_new)
arma::mat tile_rescale_factors(const arma::mat& m_new, const arma::mat& m_old, const Round& round);
// S:(r,c) m:(r,1) α:(r,1) l_old:(r,1) or empty -> ℓ:(r,1) = α·ℓ_old + Σ_j exp(S − m)
arma::mat tile_running_sum(const arma::mat& S, const arma::mat& m, const arma::mat& alpha,
                           const arma::mat& l_old, const Round& round);
// S:(r,c) m:(r,1) α:(r,1) V_block:(c,d_v) O_old:(r,d_v) or empty
//   -> O:(r,d_v) = α·O_old + Σ_j exp(S[i,j] − m[i])·V_block[j,:]
arma::mat tile_running_acc(const arma::mat& S, const arma::mat& m, const arma::mat& alpha,
                           const arma::mat& V_block, const arma::mat& O_old, const Round& round);
// num:(n,w) den:(n,1) -> num / den row by row:(n,w); a row whose den is not a
// positive number is left NaN (the caller applies the masked_row policy).
arma::mat divide_by_rows(const arma::mat& num, const arma::mat& den, const Round& round);
// A:(n,w) B:(n,w) -> (n,1): max_j |A[i,j] − B[i,j]|; 0 where both are NaN
arma::mat max_abs_row_diff(const arma::mat& A, const arma::mat& B);

// x:(n,w) -> elu(x) + 1:(n,w), cell by cell (x + 1 for x > 0, exp(x) otherwise)
arma::mat elu_plus_one(const arma::mat& x, const Round& round);
// phi_q:(n,d_k) phi_k:(m,d_k) -> (n,1): φ(q_i)·Σ_j φ(k_j)
arma::mat linear_normaliser(const arma::mat& phi_q, const arma::mat& phi_k, const Round& round);

}  // namespace attn
