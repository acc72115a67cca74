// Linear attention (lesson [model] attention = "linear", docs/steps.md
// "Linear attention"): the feature map, the product of φ(K)ᵀ with V, and the
// normaliser. The numerator φ(Q)·(φ(K)ᵀV), the other order φ(Q)φ(K)ᵀ and its
// product with V are matmul and matmul_t (core/ops/products.cpp); the context
// and the implied weights divide_rows, the check row_diff (core/ops/tiles.cpp).
//   elu_plus_one  x:(n,w) -> elu(x) + 1:(n,w)
//   matmul_tn     A:(m,p) B:(m,q) -> Aᵀ·B:(p,q)
//   normaliser    φ(Q):(n,d_k) φ(K):(m,d_k) -> φ(q_i)·Σ_j φ(k_j):(n,1)
#include <cmath>

#include "core/efficient.hpp"
#include "core/i18n.hpp"
#include "core/ops/families.hpp"

namespace attn {

namespace {

// elu(x) + 1: x + 1 above 0, exp(x) at and below (elu(x) = exp(x) − 1 there).
double phi(double x) {
  return x > 0 ? x + 1.0 : std::exp(x);
}

}  // namespace

namespace ops {

namespace {

double elu_cell(const CellContext& c, std::size_t row, std::size_t col) {
  return phi(c.read(0, row, col));
}

// elu(x) + 1 = x + 1 (x > 0) or exp(x) (x ≤ 0)
void elu_expand(const ExpandContext& c, CellExpansion& e) {
  e.kind = ExpansionKind::expression;
  const Step& x = c.trace.input(c.step, 0);
  const double v = x.value(e.row, e.col);
  add_symbol(e, "elu(");
  add_ref(e, x, e.row, e.col);
  add_symbol(e, ")");
  add_symbol(e, "+");
  add_number(e, 1.0);
  add_symbol(e, "=");
  if (v > 0) {
    add_number(e, v);
    add_symbol(e, "+");
    add_number(e, 1.0);
    return;
  }
  add_symbol(e, "exp(");
  add_number(e, v);
  add_symbol(e, ")");
}

// Increasing in x.
Bounds elu_bounds(const BoundsContext& c) {
  Bounds out = c.in(0);
  out.lo.transform(phi);
  out.hi.transform(phi);
  return out;
}

// Σ_t A[t, row]·B[t, col]
double matmul_tn_cell(const CellContext& c, std::size_t row, std::size_t col) {
  double sum = 0.0;
  for (std::size_t t = 0; t < c.trace.input(c.step, 0).value.n_rows; ++t)
    sum += c.read(0, t, row) * c.read(1, t, col);
  return sum;
}

// a_0 × b_0 + a_1 × b_1 + … down the columns of both inputs
void matmul_tn_expand(const ExpandContext& c, CellExpansion& e) {
  e.kind = ExpansionKind::expression;
  const Step &A = c.trace.input(c.step, 0), &B = c.trace.input(c.step, 1);
  add_words(e, N_("Σ_j left[j, row] × right[j, col]"));
  add_symbol(e, "=");
  for (std::size_t t = 0; t < A.value.n_rows; ++t) {
    if (t) add_symbol(e, "+");
    add_number(e, A.value(t, e.row));
    add_symbol(e, "×");
    add_number(e, B.value(t, e.col));
  }
  e.sources = {operand_ref(A, 0, e.row), operand_ref(B, 0, e.col)};
  e.source_values = {A.value(0, e.row), B.value(0, e.col)};
}

Bounds matmul_tn_bounds(const BoundsContext& c) {
  return product_bounds(transposed_bounds(c.in(0)), c.in(1));
}

// 2·p·m·q, as a matmul (p×m)·(m×q) is counted; m the rows both inputs share.
FlopCount matmul_tn_flops(const Step& /*step*/, const FlopSizes& s) {
  return {2 * s.n * s.rows_in * s.m, fmt::format("2·p·m·q = 2·{}·{}·{}", s.n, s.rows_in, s.m)};
}

// Σ_c φ(Q)[row, c]·Σ_j φ(K)[j, c]
double normaliser_cell(const CellContext& c, std::size_t row, std::size_t /*col*/) {
  const std::size_t d_k = c.trace.input(c.step, 0).value.n_cols;
  const std::size_t m = c.trace.input(c.step, 1).value.n_rows;
  double out = 0.0;
  for (std::size_t k = 0; k < d_k; ++k) {
    double keys = 0.0;
    for (std::size_t j = 0; j < m; ++j) keys += c.read(1, j, k);
    out += c.read(0, row, k) * keys;
  }
  return out;
}

// φ(q)_0 × (φ(k_0)_0 + φ(k_1)_0 + …) + …
void normaliser_expand(const ExpandContext& c, CellExpansion& e) {
  e.kind = ExpansionKind::expression;
  const Step &q = c.trace.input(c.step, 0), &k = c.trace.input(c.step, 1);
  add_words(e, N_("Σ_c phi_q[row, c] × Σ_j phi_k[j, c]"));
  add_symbol(e, "=");
  for (std::size_t col = 0; col < q.value.n_cols; ++col) {
    if (col) add_symbol(e, "+");
    add_number(e, q.value(e.row, col));
    add_symbol(e, "×");
    add_symbol(e, "(");
    for (std::size_t j = 0; j < k.value.n_rows; ++j) {
      if (j) add_symbol(e, "+");
      add_number(e, k.value(j, col));
    }
    add_symbol(e, ")");
  }
  e.sources = {operand_ref(q, e.row, 0), operand_ref(k, 0, 0)};
  e.source_values = {q.value(e.row, 0), k.value(0, 0)};
}

Bounds normaliser_bounds(const BoundsContext& c) {
  const Bounds& k = c.in(1);
  const Bounds sums{arma::sum(k.lo, 0).t(), arma::sum(k.hi, 0).t()};  // (d_k, 1)
  return product_bounds(c.in(0), sums);
}

// The key sums d_k·(m − 1), then per query d_k products and d_k − 1 additions.
FlopCount normaliser_flops(const Step& /*step*/, const FlopSizes& s) {
  const std::uint64_t d_k = s.k, m = s.rows_in2;
  const std::uint64_t sums = m > 0 ? d_k * (m - 1) : 0;
  return {
      sums + s.n * (2 * d_k - 1),
      fmt::format("d_k·(m − 1) + n·(2·d_k − 1) = {}·({} − 1) + {}·(2·{} − 1)", d_k, m, s.n, d_k)};
}

}  // namespace

const OpFacets elu_plus_one{Op::efficient, "elu_plus_one", "Q or K of the head",
                            &elu_cell,     &elu_expand,    &elu_bounds,
                            &per_cell};
const OpFacets matmul_tn{Op::efficient,   "matmul_tn",       "head{h}.phi_k, head{h}.V",
                         &matmul_tn_cell, &matmul_tn_expand, &matmul_tn_bounds,
                         &matmul_tn_flops};
const OpFacets normaliser{Op::efficient,    "normaliser",       "head{h}.phi_q, head{h}.phi_k",
                          &normaliser_cell, &normaliser_expand, &normaliser_bounds,
                          &normaliser_flops};

}  // namespace ops

// The whole steps (core/efficient.hpp).

arma::mat elu_plus_one(const arma::mat& x, const Round& round) {
  arma::mat out = x;
  out.transform([&](double v) { return round(phi(v)); });
  return out;
}

arma::mat linear_normaliser(const arma::mat& phi_q, const arma::mat& phi_k, const Round& round) {
  arma::rowvec keys(phi_k.n_cols, arma::fill::zeros);
  for (arma::uword j = 0; j < phi_k.n_rows; ++j)
    for (arma::uword k = 0; k < phi_k.n_cols; ++k) keys(k) = round(keys(k) + phi_k(j, k));
  arma::mat out(phi_q.n_rows, 1);
  for (arma::uword i = 0; i < phi_q.n_rows; ++i) {
    double sum = 0.0;
    for (arma::uword k = 0; k < phi_q.n_cols; ++k) sum = round(sum + round(phi_q(i, k) * keys(k)));
    out(i, 0) = sum;
  }
  return out;
}

}  // namespace attn
