// The seam every compute backend implements (CPU reference, optional CUDA),
// in the manner of ggml's backend interface: coarse operations with explicit
// transfers, not one host round trip per matrix. The pipeline decides what to
// compute and sees only this interface; the implementations and the choice by
// name live in src/backend/, a layer above.
//
// Shape key: n tokens (queries), m keys, d model width, h heads.
#pragma once

#include <armadillo>
#include <cstddef>
#include <memory>
#include <string_view>
#include <vector>

#include "core/attention.hpp"

namespace attn {

// The forward pass without a trace (what `bench` times): self-attention of n
// tokens of width d with h heads of d/h, no mask, no biases:
// [Q|K|V] = X·W_QKV, head h = softmax(Q_h·K_hᵀ/√(d/h))·V_h, output =
// [head 0 | head 1 | ...]·W_O.
struct ForwardShape {
  std::size_t n = 0;
  std::size_t d_model = 0;
  std::size_t heads = 1;
};

// A forward pass set up once (weights in place, every buffer allocated) and
// run many times without allocating. Transfers are separate calls so that a
// device backend can time them apart from the computation.
class ForwardPlan {
 public:
  virtual ~ForwardPlan() = default;
  // X:(n,d), column-major, into the plan's input buffer.
  virtual void upload(const double* X) = 0;
  // The forward pass on the uploaded input; returns when it is done.
  virtual void compute() = 0;
  // output:(n,d), column-major, out of the plan.
  virtual void download(double* output) = 0;
  // Bytes the plan holds on its device (weights, activations, workspace).
  virtual std::size_t bytes() const = 0;
};

class Backend {
 public:
  virtual ~Backend() = default;
  virtual std::string_view name() const = 0;

  // A:(n,k) B:(k,p) -> A·B:(n,p): the projections.
  virtual arma::mat matmul(const arma::mat& A, const arma::mat& B) = 0;

  // Attention of every head, every step of it, copied back once
  // (core/attention.hpp says what each step is).
  virtual std::vector<HeadAttention> attend(const AttentionInput& in) = 0;

  // W_QKV:(d,3d) W_O:(d,d) -> a forward pass of `shape` ready to run.
  virtual std::unique_ptr<ForwardPlan> plan_forward(const ForwardShape& shape,
                                                    const arma::mat& W_QKV,
                                                    const arma::mat& W_O) = 0;
};

}  // namespace attn
