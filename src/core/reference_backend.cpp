// The reference computation: the trace's attention composed of the step functions, in double.
#include "core/reference_backend.hpp"

#include "core/arithmetic.hpp"
#include "core/error.hpp"
#include "core/i18n.hpp"

namespace attn {

namespace {

bool is_identity(const arma::mat& B) {
  if (B.n_rows != B.n_cols) return false;
  for (arma::uword c = 0; c < B.n_cols; ++c)
    for (arma::uword r = 0; r < B.n_rows; ++r)
      if (B(r, c) != (r == c ? 1.0 : 0.0)) return false;
  return true;
}

}  // namespace

// A·I is A exactly when A is finite (each cell a·1 plus zeros), and lessons
// use identity weights to make Q = K = V = X (bert-base-shapes: 768×768,
// which without BLAS, in the page's engine, is most of its explore time).
arma::mat ReferenceBackend::matmul(const arma::mat& A, const arma::mat& B) {
  if (A.n_cols == B.n_rows && A.is_finite() && is_identity(B)) return A;
  return f64_arithmetic().matmul(A, B);
}

std::vector<HeadAttention> ReferenceBackend::attend(const AttentionInput& in) {
  return attend_steps(in, f64_arithmetic());
}

std::unique_ptr<ForwardPlan> ReferenceBackend::plan_forward(const ForwardShape& /*shape*/,
                                                            const arma::mat& /*W_QKV*/,
                                                            const arma::mat& /*W_O*/) {
  throw InputError(std::string(tr("this backend has no forward plan; bench runs on cpu or cuda")));
}

}  // namespace attn
