// The backward pass's steps (Op::backward): each cell of a gradient step is a
// sum over its Operation::vjps, and each vjp's part of the cell is a short sum
// of terms, coefficient × a product of input cells (docs/backward.md). The
// terms are written once, in vjp_terms: the cell sums them, --expand prints
// them, the bounds carry intervals through them, the FLOPs count them.
//   G below is the consumer's gradient (dL/dy); the step is dL/dx.
#include <cmath>
#include <limits>
#include <numbers>
#include <stdexcept>

#include "core/ops/families.hpp"
#include "core/pipeline.hpp"

namespace attn::ops {

namespace {

// What a factor passes its cell through (v: the cell's value, eps: Vjp::eps).
enum class Through {
  value,           // v
  inv_sqrt,        // (v + eps)^(−1/2): LayerNorm's 1/σ
  inv_sqrt_cubed,  // (v + eps)^(−3/2)
  gelu_slope,      // GELU′(v) = Φ(v) + v·φ(v)
};

// Cell (row, col) of the vjp's input number `input`, through a function.
struct Factor {
  std::size_t input = 0;
  std::size_t row = 0, col = 0;
  Through through = Through::value;
};

// coefficient × Π factors.
struct Term {
  double coefficient = 1.0;
  std::vector<Factor> factors;
};

// One vjp's part of a cell: Σ terms (none: 0, and `note` says why).
struct VjpCell {
  std::vector<Term> terms;
  const char* note = nullptr;  // an English msgid, or none
};

// What the terms of a vjp are built from: the step, the vjp, how to read an input's cell.
struct TermContext {
  const Trace& trace;
  const Step& step;
  const Vjp& v;
  std::function<double(std::size_t, std::size_t, std::size_t)> read;  // input k of the vjp
  const arma::mat& in(std::size_t k) const { return trace.input(step, v.first + k).value; }
};

double through(Through t, double v, double eps) {
  switch (t) {
    case Through::value:
      return v;
    case Through::inv_sqrt:
      return 1.0 / std::sqrt(v + eps);
    case Through::inv_sqrt_cubed:
      return 1.0 / ((v + eps) * std::sqrt(v + eps));
    case Through::gelu_slope:
      return gelu_slope(v);
  }
  return v;
}

Term product(double coefficient, std::initializer_list<Factor> factors) {
  return {coefficient, factors};
}

// Σ_k in0[row or k, …]·in1[…]: the products of a matrix product, k < inner.
VjpCell sum_of_products(std::size_t inner, const std::function<Term(std::size_t)>& term) {
  VjpCell out;
  for (std::size_t k = 0; k < inner; ++k) out.terms.push_back(term(k));
  return out;
}

// The softmax's gradient: A ⊙ (G − D); 0 on a row the masked_row policy made
// (every key masked, fill −inf, the row finite: it does not depend on its scores).
VjpCell softmax_terms(const TermContext& c, std::size_t r, std::size_t col) {
  if (policy_row(c.trace, c.trace.at(c.v.of), r) && std::isfinite(c.read(1, r, col)))
    return {{}, N_("every key of this row is masked: masked_row sets the row, which does not "
                   "depend on its scores")};
  return {{product(1.0, {{1, r, col}, {0, r, col}}), product(-1.0, {{1, r, col}, {2, r, 0}})}};
}

// Rotated back: the pair (2i, 2i+1) of G's row by −(p + shift)·θ_i.
VjpCell rotate_terms(const TermContext& c, std::size_t r, std::size_t col) {
  const std::size_t pair = col / 2, first = 2 * pair;
  const double angle = rope_angle(r + c.v.offset, pair, c.step.value.n_cols);
  const double cos = std::cos(angle), sin = std::sin(angle);
  if (col == first)  // x·cos − y·sin turned back: G₀·cos + G₁·sin
    return {{product(cos, {{0, r, first}}), product(sin, {{0, r, first + 1}})}};
  return {{product(-sin, {{0, r, first}}), product(cos, {{0, r, first + 1}})}};
}

// The LayerNorm vjps: row_mean, row_var_*, normalise_*.
VjpCell layer_norm_terms(const TermContext& c, std::size_t r, std::size_t col) {
  const double d = c.v.divisor;
  const std::size_t width = c.in(0).n_cols;
  switch (c.v.kind) {
    case VjpKind::row_mean:  // G[r] / d
      return {{product(1.0 / d, {{0, r, 0}})}};
    case VjpKind::row_var_x:  // 2(x − μ)/d · G[r]
      return {{product(2.0 / d, {{1, r, col}, {0, r, 0}}), product(-2.0 / d, {{2, r, 0}, {0, r, 0}})}};
    case VjpKind::row_var_mean:  // −2 Σ_j (x[r,j] − μ[r])/d · G[r]
      return sum_of_products(2 * c.in(1).n_cols, [&](std::size_t k) {
        return k % 2 == 0 ? product(-2.0 / d, {{1, r, k / 2}, {0, r, 0}})
                          : product(2.0 / d, {{2, r, 0}, {0, r, 0}});
      });
    case VjpKind::normalise_x:  // G / √(v + eps)
      return {{product(1.0, {{0, r, col}, {1, r, 0, Through::inv_sqrt}})}};
    case VjpKind::normalise_mean:  // −Σ_j G[r,j] / √(v + eps)
      return sum_of_products(width, [&](std::size_t j) {
        return product(-1.0, {{0, r, j}, {1, r, 0, Through::inv_sqrt}});
      });
    case VjpKind::normalise_var:  // −½ Σ_j G[r,j](x[r,j] − μ[r])(v + eps)^(−3/2)
      return sum_of_products(2 * width, [&](std::size_t k) {
        const Factor g{0, r, k / 2}, s{3, r, 0, Through::inv_sqrt_cubed};
        return k % 2 == 0 ? product(-0.5, {g, {1, r, k / 2}, s}) : product(0.5, {g, {2, r, 0}, s});
      });
    default:
      throw std::logic_error("layer_norm_terms: not a LayerNorm vjp");
  }
}

// The products: matmul_*, bias, scale_gamma, row_dot.
VjpCell product_terms(const TermContext& c, std::size_t r, std::size_t col) {
  switch (c.v.kind) {
    case VjpKind::matmul_left:  // Σ_k G[r,k]·B[col,k]
      return sum_of_products(c.in(0).n_cols, [&](std::size_t k) {
        return product(1.0, {{0, r, k}, {1, col, k}});
      });
    case VjpKind::matmul_right:  // Σ_i A[i,r]·G[i,col]
      return sum_of_products(c.in(0).n_rows, [&](std::size_t i) {
        return product(1.0, {{0, i, r}, {1, i, col}});
      });
    case VjpKind::bias:  // Σ_i G[i,col]
      return sum_of_products(c.in(0).n_rows,
                             [&](std::size_t i) { return product(1.0, {{0, i, col}}); });
    case VjpKind::matmul_t_left:  // Σ_k G[r,k]·B[k,col]
      return sum_of_products(c.in(0).n_cols, [&](std::size_t k) {
        return product(1.0, {{0, r, k}, {1, k, col}});
      });
    case VjpKind::matmul_t_right:  // Σ_i G[i,r]·A[i,col]
      return sum_of_products(c.in(0).n_rows, [&](std::size_t i) {
        return product(1.0, {{0, i, r}, {1, i, col}});
      });
    case VjpKind::scale_gamma:  // Σ_i G[i,col]·x̂[i,col]
      return sum_of_products(c.in(0).n_rows, [&](std::size_t i) {
        return product(1.0, {{0, i, col}, {1, i, col}});
      });
    case VjpKind::row_dot:  // Σ_k G[r,k]·A[r,k]
      return sum_of_products(c.in(0).n_cols, [&](std::size_t k) {
        return product(1.0, {{0, r, k}, {1, r, k}});
      });
    default:
      throw std::logic_error("product_terms: not a product vjp");
  }
}

// The terms of vjp c.v at cell (r, col) of the gradient step.
VjpCell vjp_terms(const TermContext& c, std::size_t r, std::size_t col) {
  const Vjp& v = c.v;
  switch (v.kind) {
    case VjpKind::matmul_left:
    case VjpKind::matmul_right:
    case VjpKind::bias:
    case VjpKind::matmul_t_left:
    case VjpKind::matmul_t_right:
    case VjpKind::scale_gamma:
    case VjpKind::row_dot:
      return product_terms(c, r, col);
    case VjpKind::unslice:
      if (col < v.offset || col >= v.offset + c.in(0).n_cols) return {};
      return {{product(1.0, {{0, r, col - v.offset}})}};
    case VjpKind::concat_part:
      return {{product(1.0, {{0, r, v.offset + col}})}};
    case VjpKind::divide:
      return {{product(1.0 / v.divisor, {{0, r, col}})}};
    case VjpKind::mask:
      if (c.trace.mask(r, col) != 0u)
        return {{}, N_("masked: the cell was replaced by the fill, so no gradient reaches it")};
      return {{product(1.0, {{0, r, col}})}};
    case VjpKind::softmax:
      return softmax_terms(c, r, col);
    case VjpKind::same:
      return {{product(1.0, {{0, r, col}})}};
    case VjpKind::row_mean:
    case VjpKind::row_var_x:
    case VjpKind::row_var_mean:
    case VjpKind::normalise_x:
    case VjpKind::normalise_mean:
    case VjpKind::normalise_var:
      return layer_norm_terms(c, r, col);
    case VjpKind::scale_x:
      return {{product(1.0, {{0, r, col}, {1, 0, col}})}};
    case VjpKind::relu:
      if (!(c.read(1, r, col) > 0.0))
        return {{}, N_("ReLU's input is not above 0 here, so its slope is 0")};
      return {{product(1.0, {{0, r, col}})}};
    case VjpKind::gelu:
      return {{product(1.0, {{0, r, col}, {1, r, col, Through::gelu_slope}})}};
    case VjpKind::rotate:
      return rotate_terms(c, r, col);
    case VjpKind::half_sq:
      return {{product(1.0, {{0, r, col}}), product(-1.0, {{1, r, col}})}};
    case VjpKind::jacobian: {
      const std::size_t row = v.offset;  // J[r, col] = A[row,r](δ − A[row,col])
      VjpCell out{{product(-1.0, {{0, row, r}, {0, row, col}})}};
      if (r == col) out.terms.insert(out.terms.begin(), product(1.0, {{0, row, r}}));
      return out;
    }
  }
  throw std::logic_error("vjp_terms: not a VjpKind");
}

double term_value(const TermContext& c, const Term& t) {
  double out = t.coefficient;
  for (const Factor& f : t.factors) out *= through(f.through, c.read(f.input, f.row, f.col), c.v.eps);
  return out;
}

double backward_cell(const CellContext& c, std::size_t row, std::size_t col) {
  double sum = 0.0;
  for (const Vjp& v : c.step.made.vjps) {
    const TermContext t{c.trace, c.step, v, [&](std::size_t k, std::size_t r, std::size_t cc) {
                          return c.read(v.first + k, r, cc);
                        }};
    for (const Term& term : vjp_terms(t, row, col).terms) sum += term_value(t, term);
  }
  return sum;
}

TermContext trace_terms(const Trace& trace, const Step& step, const Vjp& v) {
  return {trace, step, v, [&trace, &step, &v](std::size_t k, std::size_t r, std::size_t c) {
            return trace.input(step, v.first + k).value(r, c);
          }};
}

// One factor as written: "head0.K[bank,d1]", "(layer.ln1.var[t0] + 1e-05)^(−1/2)".
void add_factor(CellExpansion& e, const TermContext& c, const Factor& f, bool numbers) {
  const Step& in = c.trace.input(c.step, c.v.first + f.input);
  const auto cell = [&] {
    if (numbers)
      add_number(e, in.value(f.row, f.col));
    else
      add_ref(e, in, f.row, f.col);
  };
  switch (f.through) {
    case Through::value:
      return cell();
    case Through::inv_sqrt:
    case Through::inv_sqrt_cubed:
      add_symbol(e, "(");
      cell();
      add_symbol(e, "+");
      add_number(e, c.v.eps);
      add_symbol(e, f.through == Through::inv_sqrt ? ")^(−1/2)" : ")^(−3/2)");
      return;
    case Through::gelu_slope:
      add_symbol(e, "gelu′(");
      cell();
      add_symbol(e, ")");
      return;
  }
}

// The terms of one vjp: "a × b − c × d", by name or by number.
void add_terms(CellExpansion& e, const TermContext& c, const VjpCell& cell, bool numbers) {
  if (cell.terms.empty()) {
    add_number(e, 0.0);
    if (cell.note && !numbers) add_words(e, cell.note);
    return;
  }
  for (std::size_t t = 0; t < cell.terms.size(); ++t) {
    const Term& term = cell.terms[t];
    const double k = term.coefficient;
    if (t > 0) add_symbol(e, k < 0 ? "−" : "+");
    if (t == 0 && k < 0) add_symbol(e, "−");
    if (std::abs(k) != 1.0 || term.factors.empty()) {
      add_number(e, std::abs(k));
      if (!term.factors.empty()) add_symbol(e, "×");
    }
    for (std::size_t f = 0; f < term.factors.size(); ++f) {
      if (f > 0) add_symbol(e, "×");
      add_factor(e, c, term.factors[f], numbers);
    }
  }
}

// Every vjp's terms, by name, then "=", by number; several vjps each in
// parentheses, named by the forward step they go back through.
void backward_expand(const ExpandContext& c, CellExpansion& e) {
  e.kind = ExpansionKind::expression;
  const std::vector<Vjp>& vjps = c.step.made.vjps;
  for (const bool numbers : {false, true}) {
    if (numbers) add_symbol(e, "=");
    for (std::size_t i = 0; i < vjps.size(); ++i) {
      const TermContext t = trace_terms(c.trace, c.step, vjps[i]);
      if (i > 0) add_symbol(e, "+");
      if (vjps.size() > 1) add_symbol(e, "(");
      const VjpCell cell = vjp_terms(t, e.row, e.col);
      add_terms(e, t, cell, numbers);
      if (vjps.size() > 1) add_symbol(e, ")");
      if (numbers)
        for (const Term& term : cell.terms) e.term_values.push_back(term_value(t, term));
    }
  }
}

// [lo, hi] of one factor from the bounds of its cell.
std::pair<double, double> factor_bounds(const Factor& f, const Bounds& b, double eps) {
  const double lo = b.lo(f.row, f.col), hi = b.hi(f.row, f.col);
  switch (f.through) {
    case Through::value:
      return {lo, hi};
    case Through::inv_sqrt:
    case Through::inv_sqrt_cubed:  // falls as v grows
      return {through(f.through, hi, eps), lo + eps > 0 ? through(f.through, lo, eps) : std::numeric_limits<double>::infinity()};
    case Through::gelu_slope: {  // GELU′ falls to −√2, rises to √2, then falls
      double a = std::min(gelu_slope(lo), gelu_slope(hi)), z = std::max(gelu_slope(lo), gelu_slope(hi));
      for (const double x : {-std::numbers::sqrt2, std::numbers::sqrt2})
        if (lo < x && x < hi) a = std::min(a, gelu_slope(x)), z = std::max(z, gelu_slope(x));
      return {a, z};
    }
  }
  return {lo, hi};
}

// Interval arithmetic through the terms, cell by cell.
Bounds backward_bounds(const BoundsContext& c) {
  Bounds out{arma::mat(c.step.value.n_rows, c.step.value.n_cols, arma::fill::zeros),
             arma::mat(c.step.value.n_rows, c.step.value.n_cols, arma::fill::zeros)};
  for (const Vjp& v : c.step.made.vjps) {
    const TermContext t = trace_terms(c.trace, c.step, v);
    for (arma::uword r = 0; r < out.lo.n_rows; ++r)
      for (arma::uword col = 0; col < out.lo.n_cols; ++col)
        for (const Term& term : vjp_terms(t, r, col).terms) {
          double lo = term.coefficient, hi = term.coefficient;
          for (const Factor& f : term.factors) {
            const auto [a, b] = factor_bounds(f, c.in(v.first + f.input), v.eps);
            const double p[] = {lo * a, lo * b, hi * a, hi * b};
            lo = std::min({p[0], p[1], p[2], p[3]});
            hi = std::max({p[0], p[1], p[2], p[3]});
          }
          out.lo(r, col) += lo;
          out.hi(r, col) += hi;
        }
  }
  return out;
}

// One vjp's FLOPs per cell, as the forward counts them (a product of length
// k is 2·k), and how that is written: "2·k" or a number; 0 for a copy.
std::pair<std::uint64_t, std::string> vjp_flops(const Vjp& v) {
  const std::uint64_t k = v.inner;
  switch (v.kind) {
    case VjpKind::matmul_left:
    case VjpKind::matmul_right:
    case VjpKind::matmul_t_left:
    case VjpKind::matmul_t_right:
    case VjpKind::scale_gamma:
    case VjpKind::row_dot:
      return {2 * k, fmt::format("2·{}", k)};
    case VjpKind::bias:
    case VjpKind::normalise_mean:
      return {k, fmt::format("{}", k)};
    case VjpKind::row_var_mean:
    case VjpKind::normalise_var:
      return {3 * k, fmt::format("3·{}", k)};
    case VjpKind::unslice:
    case VjpKind::concat_part:
    case VjpKind::same:
    case VjpKind::mask:
    case VjpKind::relu:
      return {0, "0"};
    case VjpKind::divide:
    case VjpKind::row_mean:
    case VjpKind::normalise_x:
    case VjpKind::scale_x:
    case VjpKind::gelu:
    case VjpKind::half_sq:
      return {1, "1"};
    case VjpKind::softmax:
    case VjpKind::jacobian:
      return {2, "2"};
    case VjpKind::row_var_x:
    case VjpKind::rotate:
      return {3, "3"};
  }
  return {0, "0"};
}

// Per cell, each vjp's arithmetic and an addition per vjp beyond the first.
FlopCount backward_flops(const Step& step, const FlopSizes& s) {
  const std::vector<Vjp>& vjps = step.made.vjps;
  std::uint64_t per_cell = vjps.empty() ? 0 : vjps.size() - 1;
  std::string parts;
  for (const Vjp& v : vjps) {
    const auto [flops, text] = vjp_flops(v);
    per_cell += flops;
    parts += (parts.empty() ? "" : " + ") + text;
  }
  if (vjps.size() > 1) parts += fmt::format(" + {}", vjps.size() - 1);
  if (per_cell == 0) return no_flops(step, s);
  return {per_cell * s.n * s.m, fmt::format("({})·n·m = {}·{}·{}", parts, per_cell, s.n, s.m)};
}

}  // namespace

const OpFacets backward{Op::backward,   "backward",        "per Operation::vjps, each its inputs",
                        &backward_cell, &backward_expand, &backward_bounds,
                        &backward_flops};

}  // namespace attn::ops

namespace attn {

double gelu_slope(double x) {
  const double Phi = 0.5 * std::erfc(-x / std::numbers::sqrt2);
  const double phi = std::exp(-0.5 * x * x) / std::sqrt(2.0 * std::numbers::pi);
  return Phi + x * phi;
}

bool policy_row(const Trace& trace, const Step& weights, std::size_t r) {
  const Step& masked = trace.input(weights, 0);
  return masked.made.op == Op::mask && std::isinf(masked.made.fill) &&
         arma::all(trace.mask.row(r) != 0u);
}

}  // namespace attn
