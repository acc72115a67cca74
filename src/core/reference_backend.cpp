// The reference computation: the trace's attention composed of the step functions, in double.
#include "core/reference_backend.hpp"

#include "core/arithmetic.hpp"
#include "core/error.hpp"
#include "core/i18n.hpp"

namespace attn {

arma::mat ReferenceBackend::matmul(const arma::mat& A, const arma::mat& B) {
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
