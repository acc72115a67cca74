// The host-kernels backend: cuda_device.cu's steps with loops for threads.
#include "backend/host_kernels_backend.hpp"

#include <algorithm>

#include "backend/attention_layout.hpp"
#include "backend/attention_rows.hpp"
#include "backend/host_buffers.hpp"

namespace attn::testing {

namespace {

// C_b = A_b·op(B_b) for every b, by the book: for each cell, Σ_k left to right.
void run_product(const BatchedProduct& p, const double* A, const double* B, double* C) {
  for (std::size_t b = 0; b < p.batch; ++b) {
    const double* Ab = A + b * p.stride_a;
    const double* Bb = B + b * p.stride_b;
    double* Cb = C + b * p.stride_c;
    for (std::size_t j = 0; j < p.cols; ++j)
      for (std::size_t i = 0; i < p.rows; ++i) {
        double sum = 0.0;
        for (std::size_t k = 0; k < p.inner; ++k)
          sum += Ab[i + k * p.lda] * (p.transpose_b ? Bb[j + k * p.ldb] : Bb[k + j * p.ldb]);
        Cb[i + j * p.ldc] = sum;
      }
  }
}

// A forward pass in host buffers, in the order of cuda_device.cu's DeviceForward.
class HostKernelsPlan final : public ForwardPlan {
 public:
  HostKernelsPlan(const ForwardShape& shape, const arma::mat& W_QKV, const arma::mat& W_O)
      : layout_(shape.n, shape.d_model, shape.heads),
        W_QKV_(W_QKV),
        W_O_(W_O),
        X_(shape.n * shape.d_model),
        QKV_(shape.n * 3 * shape.d_model),
        scores_(shape.heads * shape.n * shape.n),
        concat_(shape.n * shape.d_model),
        output_(shape.n * shape.d_model) {}

  void upload(const double* X) override { std::copy(X, X + X_.size(), X_.begin()); }

  void compute() override {
    const ForwardLayout& L = layout_;
    const std::size_t n = L.attention.n;
    run_product(L.qkv, X_.data(), W_QKV_.memptr(), QKV_.data());
    run_product(L.scores, QKV_.data(), QKV_.data() + L.k_offset, scores_.data());
    for (std::size_t r = 0; r < L.attention.heads * n; ++r)
      rows::scaled_softmax_row(scores_.data(), n, n, L.divisor, r);
    run_product(L.context, scores_.data(), QKV_.data() + L.v_offset, concat_.data());
    run_product(L.output, concat_.data(), W_O_.memptr(), output_.data());
  }

  void download(double* output) override { std::copy(output_.begin(), output_.end(), output); }

  std::size_t bytes() const override {
    return (W_QKV_.n_elem + W_O_.n_elem + X_.size() + QKV_.size() + scores_.size() +
            concat_.size() + output_.size()) *
           sizeof(double);
  }

 private:
  ForwardLayout layout_;
  arma::mat W_QKV_, W_O_;  // (d,3d), (d,d)
  std::vector<double> X_, QKV_, scores_, concat_, output_;
};

}  // namespace

// A:(n,k) B:(k,p) -> (n,p)
arma::mat HostKernelsBackend::matmul(const arma::mat& A, const arma::mat& B) {
  check_product(A, B);
  arma::mat C(A.n_rows, B.n_cols);
  run_product(plain_product(A.n_rows, A.n_cols, B.n_cols), A.memptr(), B.memptr(), C.memptr());
  return C;
}

std::vector<HeadAttention> HostKernelsBackend::attend(const AttentionInput& in) {
  StackedAttention stack(in);
  const AttentionBuffers b = stack.buffers();
  const AttentionShape& s = stack.shape();
  run_product(scores_product(s), b.Q, b.K, b.steps.scores);
  for (std::size_t c = 0; c < s.heads * s.n * s.m; ++c) rows::scale_mask_exp_cell(b.steps, c);
  for (std::size_t r = 0; r < s.heads * s.n; ++r) rows::weights_row(b.steps, r);
  run_product(context_product(s), b.steps.weights, b.V, b.context);
  return stack.heads();
}

std::unique_ptr<ForwardPlan> HostKernelsBackend::plan_forward(const ForwardShape& shape,
                                                              const arma::mat& W_QKV,
                                                              const arma::mat& W_O) {
  check_forward_inputs(shape, W_QKV, W_O);
  return std::make_unique<HostKernelsPlan>(shape, W_QKV, W_O);
}

}  // namespace attn::testing
