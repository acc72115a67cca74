// Attention's steps between Armadillo matrices and stacked host buffers.
#include "backend/host_buffers.hpp"

#include <fmt/format.h>

#include "core/error.hpp"
#include "core/i18n.hpp"

namespace attn {

namespace {

// A matrix of attention's input must be rows × cols.
void require_shape(const char* what, const arma::Mat<double>& M, std::size_t rows,
                   std::size_t cols) {
  if (M.n_rows != rows || M.n_cols != cols)
    throw InputError(tr_format("attention input: {} is {}×{}, but the heads need {}×{}", what,
                               M.n_rows, M.n_cols, rows, cols));
}

// h stacked (rows,cols) blocks -> block `head` as a matrix
arma::mat block(const std::vector<double>& stack, std::size_t head, std::size_t rows,
                std::size_t cols) {
  return arma::mat(stack.data() + head * rows * cols, rows, cols);
}

}  // namespace

StackedAttention::StackedAttention(const AttentionInput& in)
    : in_(in), shape_{in.Q.n_rows, in.K.n_rows, in.heads, in.d_k, in.d_v} {
  const std::size_t n = shape_.n, m = shape_.m, h = shape_.heads;
  require_shape("Q", in.Q, n, h * in.d_k);
  require_shape("K", in.K, m, h * in.d_k);
  require_shape("V", in.V, m, h * in.d_v);
  if (in.mask.n_rows != n || in.mask.n_cols != m)
    throw InputError(tr_format("attention input: the mask is {}×{}, but the scores are {}×{}",
                               in.mask.n_rows, in.mask.n_cols, n, m));
  mask_.resize(n * m);
  for (std::size_t c = 0; c < n * m; ++c) mask_[c] = in.mask(c) != 0;
  for (std::vector<double>* stack : {&scores_, &scaled_, &masked_, &exp_, &weights_})
    stack->resize(h * n * m);
  row_sum_.resize(h * n);
  context_.resize(n * h * in.d_v);
}

AttentionBuffers StackedAttention::buffers() {
  AttentionBuffers b;
  b.Q = in_.Q.memptr();
  b.K = in_.K.memptr();
  b.V = in_.V.memptr();
  rows::AttentionSteps& s = b.steps;
  s.n = shape_.n;
  s.m = shape_.m;
  s.heads = shape_.heads;
  s.divisor = in_.divisor;
  s.fill = in_.fill;
  s.policy = in_.policy;
  s.mask = mask_.data();
  s.scores = scores_.data();
  s.scaled = scaled_.data();
  s.masked = masked_.data();
  s.exp = exp_.data();
  s.row_sum = row_sum_.data();
  s.weights = weights_.data();
  b.context = context_.data();
  return b;
}

std::vector<HeadAttention> StackedAttention::heads() const {
  const std::size_t n = shape_.n, m = shape_.m;
  std::vector<HeadAttention> out(shape_.heads);
  for (std::size_t h = 0; h < shape_.heads; ++h) {
    HeadAttention& head = out[h];
    head[HeadStep::Q] = split_head(in_.Q, h, shape_.d_k);
    head[HeadStep::K] = split_head(in_.K, h, shape_.d_k);
    head[HeadStep::V] = split_head(in_.V, h, shape_.d_v);
    head[HeadStep::scores] = block(scores_, h, n, m);
    head[HeadStep::scaled] = block(scaled_, h, n, m);
    head[HeadStep::masked] = block(masked_, h, n, m);
    head[HeadStep::exp] = block(exp_, h, n, m);
    head[HeadStep::row_sum] = block(row_sum_, h, n, 1);
    head[HeadStep::weights] = block(weights_, h, n, m);
    head[HeadStep::context] = block(context_, h, n, shape_.d_v);
  }
  return out;
}

void check_product(const arma::mat& A, const arma::mat& B) {
  if (A.n_cols != B.n_rows)
    throw InputError(
        tr_format("cannot multiply a {}×{} matrix by a {}×{} one: the first's "
                  "columns must equal the second's rows",
                  A.n_rows, A.n_cols, B.n_rows, B.n_cols));
}

void check_forward_inputs(const ForwardShape& shape, const arma::mat& W_QKV, const arma::mat& W_O) {
  const std::size_t d = shape.d_model;
  if (shape.heads == 0 || d == 0 || d % shape.heads != 0)
    throw InputError(
        tr_format("a forward pass of width {} cannot have {} heads: the width must "
                  "be a positive multiple of the number of heads",
                  d, shape.heads));
  if (W_QKV.n_rows != d || W_QKV.n_cols != 3 * d)
    throw InputError(tr_format("W_QKV is {}×{}, but a forward pass of width {} needs {}×{}",
                               W_QKV.n_rows, W_QKV.n_cols, d, d, 3 * d));
  if (W_O.n_rows != d || W_O.n_cols != d)
    throw InputError(tr_format("W_O is {}×{}, but a forward pass of width {} needs {}×{}",
                               W_O.n_rows, W_O.n_cols, d, d, d));
}

}  // namespace attn
