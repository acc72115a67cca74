// The gradient through a stack of seeded encoder layers (teach/stack_grad.hpp).
#include "teach/stack_grad.hpp"

#include <cmath>

#include "core/error.hpp"
#include "core/i18n.hpp"
#include "core/pipeline.hpp"
#include "core/reference_backend.hpp"
#include "teach/qk_stats.hpp"

namespace attn {

namespace {

// rows × cols numbers from `normals`, row by row, times `scale`.
arma::mat draw(NormalStream& normals, std::size_t rows, std::size_t cols, double scale) {
  arma::mat m(rows, cols);
  for (std::size_t r = 0; r < rows; ++r)
    for (std::size_t c = 0; c < cols; ++c) m(r, c) = scale * normals.next();
  return m;
}

// The lesson's shape and settings with nothing of its own numbers but X: no
// claims, no decoding, no tiles, no biases, f64.
Lesson stack_layer_template(const Lesson& lesson, bool residual) {
  if (!lesson.layer)
    throw InputError(std::string(
        tr("a stack_grad_norm claim builds layers shaped like the lesson's own; add [layer] "
           "kind = \"encoder\" to the lesson")));
  if (lesson.attention == AttentionKind::linear)
    throw InputError(std::string(
        tr("a stack_grad_norm claim needs a backward pass, which linear attention does not "
           "have; remove attention = \"linear\"")));
  Lesson base = lesson;
  base.claims.clear();
  base.quantity_claims.clear();
  base.kv_cache = false;
  base.tile.reset();
  base.rope_shift.reset();
  base.dtype = Dtype::f64;
  base.b_Q.reset();
  base.b_K.reset();
  base.b_V.reset();
  base.b_O.reset();
  EncoderLayer& layer = *base.layer;
  layer.b_1.reset();
  layer.b_2.reset();
  const std::size_t d = lesson.X.n_cols;
  layer.ln1_gamma = layer.ln2_gamma = arma::rowvec(d, arma::fill::ones);
  layer.ln1_beta = layer.ln2_beta = arma::rowvec(d, arma::fill::zeros);
  layer.residual = residual;
  return base;
}

// Layer after layer: each one's lesson (weights drawn, X its input), forward only.
std::vector<Lesson> stack_forward(const Lesson& base, NormalStream& normals, std::size_t layers,
                                  Backend& backend) {
  const std::size_t d = base.X.n_cols, kv = base.kv_head_count(), d_ff = base.layer->W_1.n_cols;
  const double scale = 1.0 / std::sqrt(static_cast<double>(d));
  std::vector<Lesson> stack(layers, base);
  for (std::size_t l = 0; l < layers; ++l) {
    Lesson& one = stack[l];
    one.backward.reset();
    one.W_Q = draw(normals, d, base.heads * base.d_k, scale);
    one.W_K = draw(normals, d, kv * base.d_k, scale);
    one.W_V = draw(normals, d, kv * base.d_v, scale);
    one.W_O = draw(normals, base.heads * base.d_v, d, scale);
    one.layer->W_1 = draw(normals, d, d_ff, scale);
    one.layer->W_2 = draw(normals, d_ff, d, scale);
    if (l == 0) continue;
    if (one.positional_encoding == PositionalEncoding::sinusoidal)
      one.positional_encoding = PositionalEncoding::none;  // added to the stack's input only
    one.X = run_pipeline(stack[l - 1], backend).at("layer.output").value;
  }
  return stack;
}

}  // namespace

std::vector<double> stack_input_grad_norms(const Lesson& lesson, const StackGradSpec& spec) {
  const Lesson base = stack_layer_template(lesson, spec.residual);
  // The plain-loop backend of core: the practice page's engine has no other.
  ReferenceBackend reference;
  NormalStream normals(spec.seed);
  std::vector<Lesson> stack = stack_forward(base, normals, spec.layers, reference);
  arma::mat upstream = draw(normals, base.X.n_rows, base.X.n_cols, 1.0);
  std::vector<double> norms(spec.layers);
  for (std::size_t l = spec.layers; l-- > 0;) {
    stack[l].backward = BackwardPass{upstream, std::nullopt, 0};
    upstream = run_pipeline(stack[l], reference).at("grad.X").value;
    norms[l] = arma::norm(arma::vectorise(upstream), 2);
  }
  return norms;
}

}  // namespace attn
