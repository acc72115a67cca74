// The formulas of the backward pass's steps (Op::backward): each vjp of a
// gradient step written as the product or rule it is, in Unicode and in
// LaTeX from one description (docs/backward.md).
#include <fmt/format.h>

#include "core/error.hpp"
#include "core/number_text.hpp"
#include "render/escape.hpp"
#include "render/formula.hpp"

namespace attn {

namespace {

// How the same formula is written in text or LaTeX.
struct Notation {
  bool latex = false;
  Language lang = Language::en;
  std::string id(const std::string& step) const {
    return latex ? fmt::format("\\mathrm{{{}}}", tex_text(step)) : step;
  }
  const char* times() const { return latex ? " \\cdot " : "·"; }
  const char* t() const { return latex ? "^\\top" : "ᵀ"; }
  const char* odot() const { return latex ? " \\odot " : " ⊙ "; }
  const char* minus() const { return latex ? " - " : " − "; }
  const char* sum() const { return latex ? "\\textstyle\\sum" : "Σ"; }
  // The words of `msgid` in the language, its {} filled with `arg`.
  std::string words(const char* msgid, const std::string& arg = "") const {
    const std::string said = fmt::format(fmt::runtime(translate(lang, msgid)), arg);
    return latex ? fmt::format("\\text{{{}}}", tex_math_text_in(lang, said)) : said;
  }
};

// The product rules: matmul_*, bias, scale_gamma, row_dot.
std::string product_rule(const Vjp& v, const std::vector<std::string>& in, const Notation& n) {
  switch (v.kind) {
    case VjpKind::matmul_left:
      return n.id(in[0]) + n.times() + n.id(in[1]) + n.t();
    case VjpKind::matmul_right:
      return n.id(in[0]) + n.t() + n.times() + n.id(in[1]);
    case VjpKind::matmul_t_left:
      return n.id(in[0]) + n.times() + n.id(in[1]);
    case VjpKind::matmul_t_right:
      return n.id(in[0]) + n.t() + n.times() + n.id(in[1]);
    case VjpKind::bias:
      return fmt::format("{}_i {}[i, :]", n.sum(), n.id(in[0]));
    case VjpKind::scale_gamma:
      return fmt::format("{}_i ({}{}{})[i, :]", n.sum(), n.id(in[0]), n.odot(), n.id(in[1]));
    case VjpKind::row_dot:
      return fmt::format("{}_k {}[i, k]{}{}[i, k]", n.sum(), n.id(in[0]), n.times(), n.id(in[1]));
    default:
      return "";
  }
}

// The LayerNorm's rules (x, μ, σ² as the forward step's inputs).
std::string layer_norm_rule(const Vjp& v, const std::vector<std::string>& in, const Notation& n) {
  const std::string G = n.id(in[0]);
  const auto root = [&] {  // normalise_*: in[1] or in[3] is σ²
    const std::string& var = in.at(v.kind == VjpKind::normalise_var ? 3 : 1);
    return n.latex ? fmt::format("\\sqrt{{{} + \\varepsilon}}", n.id(var))
                   : fmt::format("√({} + ε)", var);
  };
  switch (v.kind) {
    case VjpKind::row_mean:
      return fmt::format("{} / {}", G, v.divisor);
    case VjpKind::row_var_x:
      return fmt::format("2({}{}{}) / {}{}{}", n.id(in[1]), n.minus(), n.id(in[2]), v.divisor,
                         n.odot(), G);
    case VjpKind::row_var_mean:
      return fmt::format("-2 {}_j ({}{}{}) / {}{}{}", n.sum(), n.id(in[1]), n.minus(), n.id(in[2]),
                         v.divisor, n.odot(), G);
    case VjpKind::normalise_x:
      return fmt::format("{} / {}", G, root());
    case VjpKind::normalise_mean:
      return fmt::format("-{}_j {} / {}", n.sum(), G, root());
    case VjpKind::normalise_var:
      return n.latex ? fmt::format("-\\tfrac12 {}_j {}{}({} - {})\\,({} + \\varepsilon)^{{-3/2}}",
                                   n.sum(), G, n.odot(), n.id(in[1]), n.id(in[2]), n.id(in[3]))
                     : fmt::format("−½ Σ_j {} ⊙ ({} − {}) · ({} + ε)^(−3/2)", G, in[1], in[2],
                                   in[3]);
    default:
      return "";
  }
}

// One vjp as a formula: "grad.Q·W_Qᵀ".
std::string vjp_rule(const Vjp& v, const std::vector<std::string>& in, const Notation& n) {
  const std::string G = in.empty() ? "" : n.id(in[0]);
  switch (v.kind) {
    case VjpKind::matmul_left:
    case VjpKind::matmul_right:
    case VjpKind::matmul_t_left:
    case VjpKind::matmul_t_right:
    case VjpKind::bias:
    case VjpKind::scale_gamma:
    case VjpKind::row_dot:
      return product_rule(v, in, n);
    case VjpKind::row_mean:
    case VjpKind::row_var_x:
    case VjpKind::row_var_mean:
    case VjpKind::normalise_x:
    case VjpKind::normalise_mean:
    case VjpKind::normalise_var:
      return layer_norm_rule(v, in, n);
    case VjpKind::unslice:
      return fmt::format("{} {}", G, n.words(N_("placed in its columns, 0 in the others")));
    case VjpKind::concat_part:
      return fmt::format("{}[:, {}:]", G, v.offset);
    case VjpKind::divide:
      return fmt::format("{} / {:.6g}", G, v.divisor);
    case VjpKind::mask:
      return fmt::format("{}, {}", G, n.words(N_("0 at the masked cells")));
    case VjpKind::softmax:
      return fmt::format("{}{}({}{}{})", n.id(in[1]), n.odot(), G, n.minus(), n.id(in[2]));
    case VjpKind::same:
      return G;
    case VjpKind::scale_x:
      return G + n.odot() + n.id(in[1]);
    case VjpKind::relu:
      return fmt::format("{}{}[{} > 0]", G, n.odot(), n.id(in[1]));
    case VjpKind::gelu:
      return fmt::format("{}{}GELU'({})", G, n.odot(), n.id(in[1]));
    case VjpKind::rotate:
      return fmt::format("{} {}", G, n.words(N_("rotated back: each pair turned by −(p + shift)·θ_i")));
    case VjpKind::half_sq:
      return fmt::format("{}{}{}", G, n.minus(), n.id(in[1]));
    case VjpKind::jacobian:
      return n.latex ? fmt::format("A_{{{0},i}}(\\delta_{{ij}} - A_{{{0},j}})", v.offset)
                     : fmt::format("A[{0}, i]·(δ_ij − A[{0}, j])", v.offset);
  }
  return "";
}

std::string formula_in(const Step& step, const Notation& n) {
  const std::vector<Vjp>& vjps = step.made.vjps;
  std::string out = n.id(step.id) + " = ";
  for (std::size_t k = 0; k < vjps.size(); ++k) {
    const Vjp& v = vjps[k];
    const std::size_t count =
        (k + 1 < vjps.size() ? vjps[k + 1].first : step.made.inputs.size()) - v.first;
    const std::vector<std::string> in(step.made.inputs.begin() + static_cast<long>(v.first),
                                      step.made.inputs.begin() + static_cast<long>(v.first + count));
    const std::string rule = vjp_rule(v, in, n);
    if (k > 0) out += " + ";
    out += vjps.size() > 1 ? "(" + rule + ")" : rule;
  }
  return out;
}

}  // namespace

// The given steps of the backward pass: the upstream gradient, the target.
StepFormula backward_given(const Step& step, Language lang) {
  const std::string shape = shape_str(step.value.n_rows, step.value.n_cols);
  const Notation text{false, lang}, tex{true, lang};
  if (!step.step_id.is_gradient()) {  // loss.target
    const char* given = N_("given in the lesson; L = ½‖result − target‖²");
    return {fmt::format("loss.target: {}", text.words(given)),
            fmt::format("T: {}", tex.words(given)), shape};
  }
  const std::string of = step.step_id.forward().str();
  const char* words = N_("the upstream gradient dL/d({}), given in the lesson");
  return {fmt::format("{} = {}", step.id, text.words(words, of)),
          fmt::format("{} = {}", tex.id(step.id), tex.words(words, of)), shape};
}

StepFormula backward_formula(const Trace& trace, const Step& step, Language lang) {
  (void)trace;
  if (step.made.op == Op::given) return backward_given(step, lang);
  const std::string out = shape_str(step.value.n_rows, step.value.n_cols);
  std::string via;
  for (const Vjp& v : step.made.vjps) via += (via.empty() ? "" : ", ") + v.of;
  std::string shapes = fmt::format(fmt::runtime(translate(lang, N_("{} (back through {})"))), out, via);
  return {formula_in(step, {false, lang}), formula_in(step, {true, lang}), shapes};
}

}  // namespace attn
