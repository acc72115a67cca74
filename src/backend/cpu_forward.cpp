// The CPU forward plan: three passes, each shared among the cores.
//   1. [Q|K|V] = X·W_QKV, one DGEMM per block of rows.
//   2. For each head h and block of b queries: scaled = K_h·Q_hᵀ/√d_k (n,b),
//      one column per query; weights = softmax of each column; context rows =
//      weightsᵀ·V_h, written into column block h of concat. The pieces go to
//      whichever thread is free, each with its own scores block.
//   3. output = concat·W_O, one DGEMM per block of rows.
// Every matrix is column-major; a head is a column block of [Q|K|V] read in
// place (leading dimension n), never copied. OpenBLAS runs one thread per call
// (core/blas_loader.cpp); the threads are parallel_for's.
#include "backend/cpu_forward.hpp"

#include <cblas.h>
#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>

#include "backend/column_softmax.hpp"
#include "core/error.hpp"
#include "core/i18n.hpp"
#include "core/parallel.hpp"

namespace attn {

namespace {

// C:(M,N) = alpha · op(A)·op(B), op transposing when asked; every matrix
// column-major with its leading dimension.
void gemm(bool transpose_a, bool transpose_b, std::size_t M, std::size_t N, std::size_t K,
          double alpha, const double* A, std::size_t lda, const double* B, std::size_t ldb,
          double* C, std::size_t ldc) {
  cblas_dgemm(CblasColMajor, transpose_a ? CblasTrans : CblasNoTrans,
              transpose_b ? CblasTrans : CblasNoTrans, static_cast<blasint>(M),
              static_cast<blasint>(N), static_cast<blasint>(K), alpha, A, static_cast<blasint>(lda),
              B, static_cast<blasint>(ldb), 0.0, C, static_cast<blasint>(ldc));
}

// Rows [first, last) of a pass's block `block` of `blocks`.
struct Rows {
  std::size_t first, last;
};
Rows row_block(std::size_t n, std::size_t blocks, std::size_t block) {
  return {n * block / blocks, n * (block + 1) / blocks};
}

class CpuForwardPlan final : public ForwardPlan {
 public:
  CpuForwardPlan(const ForwardShape& shape, const arma::mat& W_QKV, const arma::mat& W_O)
      : n_(shape.n),
        d_(shape.d_model),
        heads_(shape.heads),
        d_k_(shape.d_model / shape.heads),
        b_(attention_block(shape.n)),
        blocks_((n_ + b_ - 1) / b_),
        threads_(parallel_threads()),
        row_blocks_(std::min(n_, threads_)),
        softmax_(column_softmax_kernel().run),
        W_QKV_(W_QKV),
        W_O_(W_O),
        X_(n_, d_, arma::fill::zeros),
        QKV_(n_, 3 * d_, arma::fill::zeros),
        concat_(n_, d_, arma::fill::zeros),
        output_(n_, d_, arma::fill::zeros),
        scores_(n_ * b_, threads_, arma::fill::zeros) {}

  void upload(const double* X) override { std::memcpy(X_.memptr(), X, X_.n_elem * sizeof(double)); }

  void compute() override {
    parallel_for(row_blocks_, [this](std::size_t block) { project_qkv(block); });
    std::atomic<std::size_t> next{0};
    const std::size_t pieces = heads_ * blocks_;
    parallel_for(threads_, [&](std::size_t thread) {
      double* scores = scores_.colptr(thread);
      for (std::size_t piece = next++; piece < pieces; piece = next++)
        attend(piece / blocks_, piece % blocks_, scores);
    });
    parallel_for(row_blocks_, [this](std::size_t block) { project_output(block); });
  }

  void download(double* output) override {
    std::memcpy(output, output_.memptr(), output_.n_elem * sizeof(double));
  }

  std::size_t bytes() const override {
    return sizeof(double) * (W_QKV_.n_elem + W_O_.n_elem + X_.n_elem + QKV_.n_elem +
                             concat_.n_elem + output_.n_elem + scores_.n_elem);
  }

 private:
  // X rows:(r,d) W_QKV:(d,3d) -> [Q|K|V] rows:(r,3d)
  void project_qkv(std::size_t block) {
    const Rows r = row_block(n_, row_blocks_, block);
    gemm(false, false, r.last - r.first, 3 * d_, d_, 1.0, X_.colptr(0) + r.first, n_,
         W_QKV_.memptr(), d_, QKV_.colptr(0) + r.first, n_);
  }

  // K_h:(n,d_k) Q_h rows:(b,d_k) V_h:(n,d_k) -> concat rows of head h:(b,d_k),
  // through scaled = K_h·Q_hᵀ/√d_k:(n,b) and its column softmax, in `scores`.
  void attend(std::size_t head, std::size_t block, double* scores) {
    const std::size_t first = block * b_, queries = std::min(b_, n_ - first);
    const double* Q_h = QKV_.colptr(head * d_k_);
    const double* K_h = QKV_.colptr(d_ + head * d_k_);
    const double* V_h = QKV_.colptr(2 * d_ + head * d_k_);
    const double scale = 1.0 / std::sqrt(static_cast<double>(d_k_));
    gemm(false, true, n_, queries, d_k_, scale, K_h, n_, Q_h + first, n_, scores, n_);
    softmax_(scores, n_, queries, n_);
    gemm(true, false, queries, d_k_, n_, 1.0, scores, n_, V_h, n_,
         concat_.colptr(head * d_k_) + first, n_);
  }

  // concat rows:(r,d) W_O:(d,d) -> output rows:(r,d)
  void project_output(std::size_t block) {
    const Rows r = row_block(n_, row_blocks_, block);
    gemm(false, false, r.last - r.first, d_, d_, 1.0, concat_.colptr(0) + r.first, n_,
         W_O_.memptr(), d_, output_.colptr(0) + r.first, n_);
  }

  std::size_t n_, d_, heads_, d_k_, b_, blocks_, threads_, row_blocks_;
  ColumnSoftmax softmax_;
  arma::mat W_QKV_, W_O_, X_, QKV_, concat_, output_;
  arma::mat scores_;  // one (n,b) block per thread, a column each
};

}  // namespace

std::size_t attention_block(std::size_t n) {
  return std::min<std::size_t>(n, 256);
}

std::size_t cpu_forward_bytes(const ForwardShape& shape, std::size_t threads) {
  const std::size_t n = shape.n, d = shape.d_model;
  return sizeof(double) * (4 * d * d + 6 * n * d + threads * n * attention_block(n));
}

std::unique_ptr<ForwardPlan> plan_cpu_forward(const ForwardShape& shape, const arma::mat& W_QKV,
                                              const arma::mat& W_O) {
  if (shape.n == 0 || shape.d_model == 0 || shape.heads == 0)
    throw InputError(
        tr_format("a forward pass needs at least one token, one feature and one head, not n = {}, "
                  "d_model = {}, heads = {}",
                  shape.n, shape.d_model, shape.heads));
  if (shape.d_model % shape.heads != 0)
    throw InputError(
        tr_format("d_model = {} is not divisible by heads = {}: each head takes "
                  "d_model / heads columns",
                  shape.d_model, shape.heads));
  if (W_QKV.n_rows != shape.d_model || W_QKV.n_cols != 3 * shape.d_model)
    throw InputError(tr_format("W_QKV is {}×{} but d_model = {} needs {}×{} ([W_Q|W_K|W_V])",
                               W_QKV.n_rows, W_QKV.n_cols, shape.d_model, shape.d_model,
                               3 * shape.d_model));
  if (W_O.n_rows != shape.d_model || W_O.n_cols != shape.d_model)
    throw InputError(tr_format("W_O is {}×{} but d_model = {} needs {}×{}", W_O.n_rows, W_O.n_cols,
                               shape.d_model, shape.d_model, shape.d_model));
  return std::make_unique<CpuForwardPlan>(shape, W_QKV, W_O);
}

}  // namespace attn
