// The backward pass: the gradient of a scalar loss with respect to every step
// of the forward trace, found by walking the trace's dataflow (Step::made)
// backwards. For each step, every consumer y = f(x, …) gives one
// vector-Jacobian product (a Vjp); the step's gradient is their sum. The
// arithmetic of one cell is in core/ops/backward.cpp; here whole matrices.
#include <fmt/format.h>

#include <cmath>
#include <map>
#include <numbers>
#include <optional>

#include "core/error.hpp"
#include "core/i18n.hpp"
#include "core/pipeline.hpp"

namespace attn {

namespace {

// How the gradient of consumer `step` reaches its input number `i`: the vjp
// (its kind, parameters and inputs as step ids, G first where it reads it);
// none where nothing flows (a constant, the on-paper exp and row sum, a
// check, a summary over heads).
struct Edge {
  Vjp vjp;
  std::vector<std::string> inputs;
};

std::string grad_id(const std::string& id) {
  return StepId::gradient(*parse_step_id(id)).str();
}

Edge edge(VjpKind kind, const Step& y, std::vector<std::string> inputs) {
  Edge e;
  e.vjp.kind = kind;
  e.vjp.of = y.id;
  e.inputs = std::move(inputs);
  return e;
}

// The row dot D of a softmax step's gradient: grad.head{h}.row_dot.
std::string row_dot_id(const Step& weights) {
  return StepId::backward(static_cast<std::size_t>(weights.head), BackwardStep::row_dot).str();
}

// The edges of the products: matmul (A·B + b) and matmul_t (A·Bᵀ).
std::optional<Edge> product_edge(const Trace& trace, const Step& y, std::size_t i) {
  const std::string G = grad_id(y.id);
  const std::vector<std::string>& in = y.made.inputs;
  const arma::mat& A = trace.at(in[0]).value;
  const arma::mat& B = trace.at(in[1]).value;
  Edge e;
  if (y.made.op == Op::matmul) {
    if (i == 0) e = edge(VjpKind::matmul_left, y, {G, in[1]}), e.vjp.inner = B.n_cols;
    if (i == 1) e = edge(VjpKind::matmul_right, y, {in[0], G}), e.vjp.inner = A.n_rows;
    if (i == 2) e = edge(VjpKind::bias, y, {G}), e.vjp.inner = y.value.n_rows;
  } else {
    if (i == 0) e = edge(VjpKind::matmul_t_left, y, {G, in[1]}), e.vjp.inner = B.n_rows;
    if (i == 1) e = edge(VjpKind::matmul_t_right, y, {G, in[0]}), e.vjp.inner = A.n_rows;
  }
  return e;
}

// The edges of the LayerNorm's steps: row_mean, row_var, normalise, scale_shift.
std::optional<Edge> layer_norm_edge(const Trace& trace, const Step& y, std::size_t i) {
  const std::string G = grad_id(y.id);
  const std::vector<std::string>& in = y.made.inputs;
  const std::size_t d = trace.at(in[0]).value.n_cols, n = y.value.n_rows;
  Edge e;
  switch (y.made.op) {
    case Op::row_mean:
      e = edge(VjpKind::row_mean, y, {G});
      break;
    case Op::row_var:
      e = edge(i == 0 ? VjpKind::row_var_x : VjpKind::row_var_mean, y, {G, in[0], in[1]});
      break;
    case Op::normalise:
      if (i == 0) e = edge(VjpKind::normalise_x, y, {G, in[2]});
      if (i == 1) e = edge(VjpKind::normalise_mean, y, {G, in[2]});
      if (i == 2) e = edge(VjpKind::normalise_var, y, {G, in[0], in[1], in[2]});
      e.vjp.eps = y.made.eps;
      break;
    default:  // scale_shift: γ ⊙ x̂ + β
      if (i == 0) e = edge(VjpKind::scale_x, y, {G, in[1]});
      if (i == 1) e = edge(VjpKind::scale_gamma, y, {G, in[0]});
      if (i == 2) e = edge(VjpKind::bias, y, {G});
      e.vjp.inner = i == 0 ? 1 : n;
      return e;
  }
  e.vjp.divisor = static_cast<double>(d);
  e.vjp.inner = d;
  return e;
}

// The edges that read G alone, with the forward step's offset or divisor:
// slice (G placed back in its columns), divide, rotate (turned back).
Edge parameter_edge(const Step& y) {
  const VjpKind kind = y.made.op == Op::slice    ? VjpKind::unslice
                       : y.made.op == Op::divide ? VjpKind::divide
                                                 : VjpKind::rotate;
  Edge e = edge(kind, y, {grad_id(y.id)});
  e.vjp.offset = y.made.offset;
  e.vjp.divisor = y.made.divisor;
  return e;
}

// Where the gradient of `y` goes back to its input number i (see Edge).
std::optional<Edge> edge_of(const Trace& trace, const Step& y, std::size_t i) {
  const std::string G = grad_id(y.id);
  const Step& x = trace.input(y, i);
  if (x.made.op == Op::positional || x.made.op == Op::alibi) return std::nullopt;  // constants
  switch (y.made.op) {
    case Op::matmul:
    case Op::matmul_t:
      return product_edge(trace, y, i);
    case Op::slice:
    case Op::divide:
    case Op::rotate:
      return parameter_edge(y);
    case Op::mask:
      return edge(VjpKind::mask, y, {G});
    case Op::softmax:  // as one operation: the exp and row sum are its working on paper
      if (i != 0 || y.head < 0 || y.decoding >= 0) return std::nullopt;
      return edge(VjpKind::softmax, y, {G, y.id, row_dot_id(y)});
    case Op::concat: {
      Edge e = edge(VjpKind::concat_part, y, {G});
      for (std::size_t k = 0; k < i; ++k) e.vjp.offset += trace.input(y, k).value.n_cols;
      return e;
    }
    case Op::add:
    case Op::add_positions:
    case Op::identity:
      return edge(VjpKind::same, y, {G});
    case Op::row_mean:
    case Op::row_var:
    case Op::normalise:
    case Op::scale_shift:
      return layer_norm_edge(trace, y, i);
    case Op::relu:
      return edge(VjpKind::relu, y, {G, x.id});
    case Op::gelu:
      return edge(VjpKind::gelu, y, {G, x.id});
    case Op::given:
    case Op::positional:
    case Op::rows:
    case Op::exp:
    case Op::row_sum:
    case Op::mean:
    case Op::max:
    case Op::efficient:
    case Op::max_abs_diff:
    case Op::alibi:
    case Op::row_max_abs_diff:
    case Op::backward:
      return std::nullopt;
  }
  return std::nullopt;
}

// rows of G (n,d) turned back: pair (2i, 2i+1) of row p by −(p + shift)·θ_i.
arma::mat rotated_back(const arma::mat& G, std::size_t shift) {
  arma::mat out(G.n_rows, G.n_cols);
  for (arma::uword p = 0; p < G.n_rows; ++p)
    for (arma::uword c = 0; c + 1 < G.n_cols; c += 2) {
      const double a = rope_angle(p + shift, c / 2, G.n_cols);
      out(p, c) = G(p, c) * std::cos(a) + G(p, c + 1) * std::sin(a);
      out(p, c + 1) = -G(p, c) * std::sin(a) + G(p, c + 1) * std::cos(a);
    }
  return out;
}

// The softmax's vjp, A ⊙ (G − D), with the rows the masked_row policy made 0.
arma::mat softmax_value(const Trace& trace, const Vjp& v, const arma::mat& G, const arma::mat& A,
                        const arma::mat& D) {
  arma::mat out = A % (G.each_col() - D.col(0));
  for (arma::uword r = 0; r < out.n_rows; ++r)
    if (policy_row(trace, trace.at(v.of), r))
      for (arma::uword c = 0; c < out.n_cols; ++c)
        if (std::isfinite(A(r, c))) out(r, c) = 0.0;
  return out;
}

// One vjp's whole matrix: x's shape (`rows` × `cols`), from its inputs' values.
arma::mat vjp_value(const Trace& trace, const Vjp& v, const std::vector<const arma::mat*>& in,
                    std::size_t rows, std::size_t cols) {
  const arma::mat& G = *in[0];
  const auto row_scale = [](arma::mat M, const arma::vec& s) { return M.each_col() % s; };
  switch (v.kind) {
    case VjpKind::matmul_left: return G * in[1]->t();
    case VjpKind::matmul_right: return in[0]->t() * *in[1];
    case VjpKind::bias: return arma::sum(G, 0);
    case VjpKind::matmul_t_left: return G * *in[1];
    case VjpKind::matmul_t_right: return G.t() * *in[1];
    case VjpKind::unslice: {
      arma::mat out(rows, cols, arma::fill::zeros);
      out.cols(v.offset, v.offset + G.n_cols - 1) = G;
      return out;
    }
    case VjpKind::concat_part: return G.cols(v.offset, v.offset + cols - 1);
    case VjpKind::divide: return G / v.divisor;
    case VjpKind::mask: {
      arma::mat out = G;
      out.elem(arma::find(trace.mask != 0u)).zeros();
      return out;
    }
    case VjpKind::softmax: return softmax_value(trace, v, G, *in[1], *in[2]);
    case VjpKind::same: return G;
    case VjpKind::row_mean: return arma::repmat(G / v.divisor, 1, cols);
    case VjpKind::row_var_x:
      return row_scale(2.0 / v.divisor * (in[1]->each_col() - in[2]->col(0)), G.col(0));
    case VjpKind::row_var_mean:
      return -2.0 / v.divisor * arma::sum(in[1]->each_col() - in[2]->col(0), 1) % G.col(0);
    case VjpKind::normalise_x: return row_scale(G, 1.0 / arma::sqrt(in[1]->col(0) + v.eps));
    case VjpKind::normalise_mean: return -arma::sum(G, 1) / arma::sqrt(in[1]->col(0) + v.eps);
    case VjpKind::normalise_var:
      return -0.5 * arma::sum(G % (in[1]->each_col() - in[2]->col(0)), 1) %
             arma::pow(in[3]->col(0) + v.eps, -1.5);
    case VjpKind::scale_x: return G.each_row() % in[1]->row(0);
    case VjpKind::scale_gamma: return arma::sum(G % *in[1], 0);
    case VjpKind::relu: return G % arma::conv_to<arma::mat>::from(*in[1] > 0.0);
    case VjpKind::gelu: {
      arma::mat slope = *in[1];
      slope.transform(gelu_slope);
      return G % slope;
    }
    case VjpKind::rotate: return rotated_back(G, v.offset);
    case VjpKind::half_sq: return G - *in[1];
    case VjpKind::row_dot: return arma::sum(G % *in[1], 1);
    case VjpKind::jacobian: {
      const arma::rowvec a = G.row(v.offset);
      return arma::diagmat(a) - a.t() * a;
    }
  }
  throw std::logic_error("vjp_value: not a VjpKind");
}

// The backward pass being recorded onto the forward trace.
class Backward {
 public:
  Backward(const Lesson& lesson, Trace& trace, const Overrides& overrides)
      : lesson_(lesson), trace_(trace), overrides_(overrides) {}

  void run() {
    const std::string result = result_id();
    const std::vector<bool> needs = needed(result);
    // Every consumer of each step that the gradient flows through, in forward order.
    std::map<std::string, std::vector<Edge>> into;
    const std::size_t forward_steps = trace_.steps.size();
    for (std::size_t s = 0; s < forward_steps; ++s) {
      if (!needs[s]) continue;
      const Step& y = trace_.steps[s];
      for (std::size_t i = 0; i < y.made.inputs.size(); ++i)
        if (std::optional<Edge> e = edge_of(trace_, y, i)) into[y.made.inputs[i]].push_back(*e);
    }
    trace_.steps.reserve(2 * forward_steps + 2 * lesson_.heads + 2);
    seed(result);
    for (std::size_t s = forward_steps; s-- > 0;) {
      const Step& x = trace_.steps[s];
      const auto it = into.find(x.id);
      if (!needs[s] || it == into.end() || x.id == result) continue;
      const std::string id = x.id;  // x moves when the trace grows
      record_sum(id, it->second);
      const Step& done = trace_.at(id);
      if (done.made.op == Op::softmax && done.head >= 0 && done.decoding < 0) softmax_helpers(id);
    }
  }

 private:
  std::string result_id() const {
    if (lesson_.layer) return StepId::layer(LayerStep::output).str();
    if (lesson_.W_O) return StepId::projection(Projection::output).str();
    return StepId::concat().str();
  }

  // needs[s]: the result depends on step s through edges the gradient flows along.
  std::vector<bool> needed(const std::string& result) const {
    std::vector<bool> needs(trace_.steps.size(), false);
    std::map<std::string, std::size_t, std::less<>> index;
    for (std::size_t s = 0; s < trace_.steps.size(); ++s) index[trace_.steps[s].id] = s;
    needs[index.at(result)] = true;
    for (std::size_t s = trace_.steps.size(); s-- > 0;) {
      if (!needs[s]) continue;
      const Step& y = trace_.steps[s];
      for (std::size_t i = 0; i < y.made.inputs.size(); ++i)
        if (edge_of(trace_, y, i)) needs[index.at(y.made.inputs[i])] = true;
    }
    return needs;
  }

  // grad.<result>: the upstream gradient given, or result − target.
  void seed(const std::string& result) {
    const Step& y = trace_.at(result);
    const BackwardPass& pass = *lesson_.backward;
    const std::vector<std::string> rows = y.rows, cols = y.cols;
    if (pass.upstream) {
      record(grad_id(result), {Op::given, {}}, *pass.upstream, rows, cols, y.title);
      return;
    }
    const std::string target = StepId::given(Given::target).str();
    record(target, {Op::given, {}}, *pass.target, rows, cols, Message(N_("Target")));
    Vjp v;
    v.kind = VjpKind::half_sq;
    v.of = result;
    record_vjp(grad_id(result), v, {result, target}, rows, cols, trace_.at(result).title);
  }

  // grad.<id> = Σ of the edges' vjps.
  void record_sum(const std::string& id, const std::vector<Edge>& edges) {
    Operation made{Op::backward, {}};
    const Step& x = trace_.at(id);
    arma::mat sum(x.value.n_rows, x.value.n_cols, arma::fill::zeros);
    for (const Edge& e : edges) {
      Vjp v = e.vjp;
      v.first = made.inputs.size();
      std::vector<const arma::mat*> in;
      for (const std::string& input : e.inputs) {
        made.inputs.push_back(input);
        in.push_back(&trace_.at(input).value);
      }
      sum += vjp_value(trace_, v, in, x.value.n_rows, x.value.n_cols);
      made.vjps.push_back(std::move(v));
    }
    const std::vector<std::string> rows = x.rows, cols = x.cols;
    const Message title = x.title;
    record(grad_id(id), std::move(made), std::move(sum), rows, cols, title);
  }

  // After grad.head{h}.weights: its row dot D and the Jacobian of one row.
  void softmax_helpers(const std::string& weights_id) {
    const Step& A = trace_.at(weights_id);
    const std::vector<std::string> rows = A.rows, keys = A.cols;
    const std::size_t h = static_cast<std::size_t>(A.head), r = lesson_.backward->jacobian_row;
    const std::string row_dot = row_dot_id(A);
    Vjp v;
    v.kind = VjpKind::row_dot;
    v.of = weights_id;
    v.inner = A.value.n_cols;
    record_vjp(row_dot, v, {grad_id(weights_id), weights_id}, rows, {"D"},
               Message(N_("Row dot: Σ_k dA·A")));
    v.kind = VjpKind::jacobian;
    v.offset = r;
    v.inner = 0;
    record_vjp(StepId::backward(h, BackwardStep::jacobian).str(), v, {weights_id}, keys, keys,
               Message(N_("Softmax Jacobian of row {} ({})"), {std::to_string(r), rows.at(r)}));
  }

  // A step made by one vjp of `inputs`, `rows` × `cols`.
  void record_vjp(const std::string& id, const Vjp& v, const std::vector<std::string>& inputs,
                  std::vector<std::string> rows, std::vector<std::string> cols, Message title) {
    std::vector<const arma::mat*> in;
    for (const std::string& input : inputs) in.push_back(&trace_.at(input).value);
    arma::mat value = vjp_value(trace_, v, in, rows.size(), cols.size());
    Operation made{Op::backward, inputs};
    made.vjps.push_back(v);
    record(id, std::move(made), std::move(value), std::move(rows), std::move(cols), title);
  }

  void record(const std::string& id, Operation made, arma::mat value, std::vector<std::string> rows,
              std::vector<std::string> cols, const Message& of) {
    Step step;
    step.step_id = *parse_step_id(id);
    step.id = id;
    step.head = step.step_id.head();
    const bool grad = step.step_id.is_gradient();
    step.title = grad ? Message(N_("Gradient: {}"), {}, {of}) : of;
    step.name = step.title.in(Language::en);
    step.kind = step.step_id.family() == StepFamily::backward &&
                        step.step_id.backward_part() == BackwardStep::jacobian
                    ? StepKind::jacobian
                : grad || step.step_id.family() == StepFamily::backward ? StepKind::gradient
                                                                         : StepKind::input;
    if (made.op != Op::given) value = with_overrides(overrides_, id, std::move(value));
    step.made = std::move(made);
    step.value = std::move(value);
    step.rows = std::move(rows);
    step.cols = std::move(cols);
    trace_.steps.push_back(std::move(step));
  }

  const Lesson& lesson_;
  Trace& trace_;
  const Overrides& overrides_;
};

}  // namespace

void run_backward(const Lesson& lesson, Trace& trace, const Overrides& overrides) {
  if (trace.dtype != Dtype::f64) {  // run --dtype: the forward pass in that format, no gradients
    trace.warnings.push_back(
        {std::nullopt, {N_("the backward pass ([backward]) is traced in f64 only, so this run in "
                           "{} shows the forward pass alone; run without --dtype to see the "
                           "gradients"),
                        {std::string(dtype_name(trace.dtype))}}});
    return;
  }
  Backward(lesson, trace, overrides).run();
}

}  // namespace attn
