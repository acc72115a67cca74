// The arithmetic of a narrower number format, emulated exactly on the CPU
// (docs/numerics.md): what the pipeline computes with when a lesson or
// --dtype asks for f32, f16 or bf16. Every operation is one IEEE f32
// operation (computed in double, which holds it exactly or rounds it once,
// then rounded to f32), and a step's result is then rounded to the format.
#pragma once

#include <armadillo>
#include <string_view>

#include "core/arithmetic.hpp"
#include "core/dtype.hpp"

namespace attn {

// x as an f32 computation leaves it, then stored in `dtype`:
// round_to(dtype, round_to(f32, x)), as a GPU kernel that computes in f32
// writes an f16 or bf16 result. f64 returns x.
double store_in(Dtype dtype, double x);
arma::mat store_in(Dtype dtype, const arma::mat& M);

// The host arithmetic in `dtype` (never f64: the backends compute f64).
// Operands are expected in the format already.
class FormatArithmetic final : public Arithmetic {
 public:
  explicit FormatArithmetic(Dtype dtype) : dtype_(dtype) {}
  Dtype dtype() const { return dtype_; }

  // A:(n,k) B:(k,p) -> (n,p): each cell Σ_t A[i,t]·B[t,j] summed in f32 in
  // order t = 0, 1, ..., k−1, every product and every partial sum rounded to
  // f32 (no fused multiply-add); the sum then stored in the format.
  arma::mat matmul(const arma::mat& A, const arma::mat& B) const override;
  // A:(n,k) B:(m,k) -> A·Bᵀ:(n,m), the same way.
  arma::mat matmul_transposed(const arma::mat& A, const arma::mat& B) const override;
  // S:(n,m) -> (n,m), row by row in f32: the row max M; d_j = S_j − M, e_j =
  // exp(d_j), each rounded to f32; Σ = e_0 + e_1 + ... in order, rounded to
  // f32 at every addition; w_j = e_j / Σ rounded to f32, then stored in the
  // format. A row that is all -inf comes out NaN (0/0), as in f64.
  arma::mat row_softmax(const arma::mat& S) const override;

  // S:(n,m) -> (n,1): each row's cells summed in f32, in order, then stored.
  arma::mat row_sum(const arma::mat& S) const override;

 private:
  Dtype dtype_;
};

}  // namespace attn
