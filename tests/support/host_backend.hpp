// A backend for the core layer's tests, which may not reach src/backend/: core's
// own host composition of the steps (f64_arithmetic, attend_steps), the same
// calls the CPU backend makes, so a core test runs the pipeline without the
// backend layer. The CPU backend itself is tested in tests/backend/.
#pragma once

#include <memory>
#include <string_view>
#include <vector>

#include "core/attention.hpp"
#include "core/backend.hpp"
#include "core/error.hpp"

namespace attn::testing {

class HostBackend final : public Backend {
 public:
  // "cpu": the pipeline emulates a narrower format (--dtype) only on the
  // backend of that name, and this is the CPU's composition of the steps.
  // Another name makes it what a CUDA backend looks like to the pipeline,
  // which then lists the steps it computes itself in Trace::host_steps.
  explicit HostBackend(std::string_view name = "cpu") : name_(name) {}
  std::string_view name() const override { return name_; }

  // A:(n,k) B:(k,p) -> (n,p)
  arma::mat matmul(const arma::mat& A, const arma::mat& B) override {
    return f64_arithmetic().matmul(A, B);
  }

  std::vector<HeadAttention> attend(const AttentionInput& in) override {
    return attend_steps(in, f64_arithmetic());
  }

  // The forward plan is the backend layer's (src/backend/cpu_forward.hpp).
  std::unique_ptr<ForwardPlan> plan_forward(const ForwardShape&, const arma::mat&,
                                            const arma::mat&) override {
    throw BackendUnavailable("the core tests' host backend has no forward plan");
  }

 private:
  std::string_view name_;
};

}  // namespace attn::testing
