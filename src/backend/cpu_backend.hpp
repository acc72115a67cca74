// The CPU backend: Armadillo over OpenBLAS. It is the reference every other
// backend is tested against.
#pragma once

#include "core/backend.hpp"

namespace attn {

class CpuBackend final : public Backend {
 public:
  std::string_view name() const override { return "cpu"; }
  arma::mat matmul(const arma::mat& A, const arma::mat& B) override;
  arma::mat matmul_transposed(const arma::mat& A, const arma::mat& B) override;
  arma::mat row_softmax(const arma::mat& S) override;
};

}  // namespace attn
