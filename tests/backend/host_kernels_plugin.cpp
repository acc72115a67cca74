// The host-kernels plugin (tests only): a CUDA plugin whose "device" is the
// host, loaded by the program exactly as libattn-trace-cuda.so is (dlopen,
// the table of backend/cuda_plugin.hpp, the CUDA backend's adapter). It runs
// cuda_device.cu's algorithm: the same flat buffers (backend/host_buffers),
// the same products' arguments (backend/attention_layout.hpp), run by naive
// loops instead of cuBLAS, and the same row functions (attention_rows.hpp)
// the CUDA kernels call, run by loops over the cells and rows instead of
// threads. So the CUDA backend's seam, layout and arithmetic are tested on
// every machine, GPU or not (the harness's backend_harness_host_kernels).
//
// Shape key: n queries, m keys, h heads, d model width.
#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "backend/attention_layout.hpp"
#include "backend/attention_rows.hpp"
#include "backend/cuda_plugin_table.hpp"

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
class HostForward {
 public:
  // W_QKV:(d,3d) W_O:(d,d), copied now
  HostForward(std::size_t n, std::size_t d, std::size_t heads, const double* W_QKV,
              const double* W_O)
      : layout_(n, d, heads),
        W_QKV_(W_QKV, W_QKV + d * 3 * d),
        W_O_(W_O, W_O + d * d),
        X_(n * d),
        QKV_(n * 3 * d),
        scores_(heads * n * n),
        concat_(n * d),
        output_(n * d) {}

  void upload(const double* X) { std::copy(X, X + X_.size(), X_.begin()); }

  void compute() {
    const ForwardLayout& L = layout_;
    const std::size_t n = L.attention.n;
    run_product(L.qkv, X_.data(), W_QKV_.data(), QKV_.data());
    run_product(L.scores, QKV_.data(), QKV_.data() + L.k_offset, scores_.data());
    for (std::size_t r = 0; r < L.attention.heads * n; ++r)
      rows::scaled_softmax_row(scores_.data(), n, n, L.divisor, r);
    run_product(L.context, scores_.data(), QKV_.data() + L.v_offset, concat_.data());
    run_product(L.output, concat_.data(), W_O_.data(), output_.data());
  }

  void download(double* output) { std::copy(output_.begin(), output_.end(), output); }

  std::size_t bytes() const {
    return (W_QKV_.size() + W_O_.size() + X_.size() + QKV_.size() + scores_.size() +
            concat_.size() + output_.size()) *
           sizeof(double);
  }

 private:
  ForwardLayout layout_;
  std::vector<double> W_QKV_, W_O_, X_, QKV_, scores_, concat_, output_;
};

// cuda::Device's interface, on the host.
class HostDevice {
 public:
  // A:(n,k) B:(k,p) -> C:(n,p)
  void matmul(const double* A, const double* B, double* C, std::size_t n, std::size_t k,
              std::size_t p) {
    run_product(plain_product(n, k, p), A, B, C);
  }

  void attend(const AttentionShape& s, const AttentionBuffers& b) {
    run_product(scores_product(s), b.Q, b.K, b.steps.scores);
    for (std::size_t c = 0; c < s.heads * s.n * s.m; ++c) rows::scale_mask_exp_cell(b.steps, c);
    for (std::size_t r = 0; r < s.heads * s.n; ++r) rows::weights_row(b.steps, r);
    run_product(context_product(s), b.steps.weights, b.V, b.context);
  }

  std::unique_ptr<HostForward> plan_forward(std::size_t n, std::size_t d, std::size_t heads,
                                            const double* W_QKV, const double* W_O) {
    return std::make_unique<HostForward>(n, d, heads, W_QKV, W_O);
  }
};

// The host is always there.
std::string no_reason() { return ""; }

}  // namespace

}  // namespace attn::testing

ATTN_CUDA_PLUGIN_ENTRY(
    &(attn::cuda_plugin::Adapter<attn::testing::HostDevice, attn::testing::no_reason>::table))
