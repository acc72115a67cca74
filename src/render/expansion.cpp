// Printing one cell's arithmetic (core/expand.hpp) as text, Markdown, LaTeX
// or JSON. These only print what expand computed.
#include <fmt/format.h>

#include "core/i18n.hpp"

#include <algorithm>
#include <cmath>
#include <functional>

#include "core/expand.hpp"
#include "render/escape.hpp"
#include "render/json_writer.hpp"
#include "render/numbers.hpp"
#include "render/render.hpp"

namespace attn {

namespace {

// The symbols of one notation (plain Unicode text, or LaTeX math) and the
// language of its words.
struct Notation {
  const char* times;
  const char* dot;
  const char* minus;  // binary minus between two terms
  const char* ellipsis;
  bool latex;
  Language lang = Language::en;

  // `msgid` in this notation's language.
  std::string say(std::string_view msgid) const { return std::string(translate(lang, msgid)); }
  template <typename... Args>
  std::string say(std::string_view msgid, const Args&... args) const {
    return fmt::vformat(translate(lang, msgid), fmt::make_format_args(args...));
  }
  Notation in(Language to) const {
    Notation n = *this;
    n.lang = to;
    return n;
  }
};

constexpr Notation kText{"×", "·", " − ", "…", false};
constexpr Notation kLatex{" \\times ", " \\cdot ", " - ", "\\dots", true};

// Up to `precision` decimals, trailing zeros dropped but at least two kept
// (0.5 -> "0.50", 1.67550 -> "1.6755"), as one writes numbers by hand.
std::string hand_number(double v, int precision, const Notation& n) {
  if (n.latex && std::isinf(v)) return v < 0 ? "-\\infty" : "\\infty";
  if (n.latex && std::isnan(v)) return "\\mathrm{NaN}";
  std::string s = format_fixed(v, precision);
  const std::size_t dot = s.find('.');
  // Scientific notation (a huge fill) is left whole: its zeros are in the exponent.
  if (dot == std::string::npos || s.find('e') != std::string::npos) return s;
  std::size_t keep = s.size();
  while (keep > dot + 3 && s[keep - 1] == '0') --keep;
  s.resize(keep);
  return s;
}

// "head0.K[bank,d3]" as written: in LaTeX, names upright and escaped.
std::string label(const std::string& step, const std::string& row, const std::string& col,
                  const Notation& n) {
  if (!n.latex) return fmt::format("{}[{},{}]", step, row, col);
  return fmt::format("\\mathrm{{{}}}[\\text{{{}}},\\text{{{}}}]", tex_math_text_in(n.lang, step),
                     tex_math_text_in(n.lang, row), tex_math_text_in(n.lang, col));
}

std::string ref_label(const OperandRef& ref, const Notation& n) {
  if (!n.latex) return ref.label;
  return fmt::format("\\text{{{}}}", tex_math_text_in(n.lang, ref.label));
}

std::string words(const std::string& s, const Notation& n) {
  return n.latex ? fmt::format("\\text{{{}}}", tex_math_text_in(n.lang, s)) : s;
}

std::string exp_of(const std::string& x, const Notation& n) {
  return n.latex ? fmt::format("\\exp({})", x) : fmt::format("exp({})", x);
}

std::string divisor_text(const CellExpansion& e, int precision, const Notation& n) {
  switch (e.scale_kind) {
    case ScaleKind::sqrt_dk:
      return n.latex ? fmt::format("\\sqrt{{{}}}", e.d_k) : fmt::format("√{}", e.d_k);
    case ScaleKind::none:
      return words(n.say(N_("1 (no scaling)")), n);
    case ScaleKind::number:
      return hand_number(e.divisor, precision, n);
  }
  return "";
}

// Why a mask pattern masks the cell (window, stride), or that a global token keeps it.
void pattern_why(const CellExpansion& e, const Notation& n, std::vector<std::string>& why) {
  const std::size_t distance = e.row > e.col ? e.row - e.col : e.col - e.row;
  if (e.mask_reasons & mask_window)
    why.push_back(n.say(N_("window: key {} is {} positions from query {}, beyond the window of {}"),
                        e.col_label, distance, e.row_label, e.pattern.local_width()));
  if (!(e.mask_reasons & mask_stride) || !e.pattern.stride) return;
  const std::uint64_t s = *e.pattern.stride;
  if (e.pattern.window)  // the window's reason is said above
    why.push_back(n.say(N_("stride: key {} is not a stride key ({} mod {} = {}, not {})"),
                        e.col_label, e.col, s, e.col % s, s - 1));
  else
    why.push_back(n.say(N_("stride: key {} is neither a stride key ({} mod {} = {}, not {}) nor "
                           "query {}'s own key"),
                        e.col_label, e.col, s, e.col % s, s - 1, e.row_label));
}

// A kept cell that only a global token keeps: which token.
std::string global_keeps(const CellExpansion& e, const Notation& n) {
  const MaskPattern& p = e.pattern;
  const std::size_t distance = e.row > e.col ? e.row - e.col : e.col - e.row;
  if (!p.sparse() || distance <= p.local_width() || (p.stride && e.col % *p.stride == *p.stride - 1))
    return "";
  const bool row_global = std::binary_search(p.global.begin(), p.global.end(), e.row);
  return n.say(N_("kept: no mask covers key {} for query {} ({} {} is a global token, exempt "
                  "from the window and the stride)"),
               e.col_label, e.row_label, row_global ? n.say(N_("query")) : n.say(N_("key")),
               row_global ? e.row_label : e.col_label);
}

std::string mask_decision(const CellExpansion& e, int precision, const Notation& n) {
  if (e.mask_reasons == 0) {
    const std::string global = global_keeps(e, n);
    if (!global.empty()) return global;
    return n.say(N_("kept: no mask covers key {} for query {}"), e.col_label, e.row_label);
  }
  std::vector<std::string> why;
  if (e.mask_reasons & mask_causal)
    why.push_back(n.say(N_("causal: key {} comes after query {}"), e.col_label, e.row_label));
  if (e.mask_reasons & mask_padding)
    why.push_back(n.say(N_("padding: key {} is padding"), e.col_label));
  if (e.mask_reasons & mask_keep) why.push_back(n.say(N_("keep matrix has 0 here")));
  pattern_why(e, n, why);
  // TRANSLATORS: between two reasons a cell is masked.
  const std::string reasons = fmt::format("{}", fmt::join(why, n.say(N_("; "))));
  return n.say(N_("masked, {}: the scaled value {} is replaced by the fill"), reasons,
               hand_number(e.source_values.at(0), precision, kText));
}

// A number after an operator, in parentheses when it is negative:
// "-0.60 + (-0.0048)", never "-0.60 + -0.0048".
std::string operand(std::string shown) {
  return shown.starts_with('-') ? "(" + shown + ")" : shown;
}

std::string joined(const std::vector<double>& values,
                   const std::function<std::string(double)>& show) {
  std::string out;
  for (std::size_t k = 0; k < values.size(); ++k)
    out += k ? " + " + operand(show(values[k])) : show(values[k]);
  return out;
}

// The right-hand side of "cell = ...", without the final value.
std::string arithmetic(const CellExpansion& e, int precision, const Notation& n);

// A remark after the value, in parentheses, or empty.
std::string remark(const CellExpansion& e, int precision, const Notation& n) {
  switch (e.kind) {
    case ExpansionKind::input:
      return n.say(N_("given in the lesson"));
    case ExpansionKind::mask:
      return mask_decision(e, precision, n);
    case ExpansionKind::slice:
      return n.say(N_("head {}'s block of columns"), e.step_id.head());
    case ExpansionKind::add:
      return e.step_id.family() == StepFamily::layer
                 ? n.say(N_("dropout is the identity at inference"))
                 : "";
    case ExpansionKind::row_var:
      return n.say(N_("biased: divided by d, as PyTorch"));
    case ExpansionKind::rotate:
      return n.say(N_("pair ({}, {}) turned by {} × 10000^(−{}/{})"), 2 * e.pair_index,
                   2 * e.pair_index + 1, e.position, 2 * e.pair_index, e.width);
    case ExpansionKind::alibi:
      return n.say(N_("slope m = {}, distance |{} − {}| = {}"), hand_number(e.slope, 6, n), e.row,
                   e.col, e.row > e.col ? e.row - e.col : e.col - e.row);
    case ExpansionKind::positional:
    case ExpansionKind::product:
    case ExpansionKind::divide:
    case ExpansionKind::exp:
    case ExpansionKind::row_sum:
    case ExpansionKind::softmax:
    case ExpansionKind::concat:
    case ExpansionKind::head_mean:
    case ExpansionKind::head_max:
    case ExpansionKind::row_mean:
    case ExpansionKind::normalise:
    case ExpansionKind::scale_shift:
    case ExpansionKind::activation:
    case ExpansionKind::copy:
    case ExpansionKind::max_abs_diff:
    case ExpansionKind::expression:
      return "";
  }
  return "";
}

// "cell = arithmetic = value (remark)" in one notation.
std::string equation(const CellExpansion& e, int precision, const Notation& n) {
  std::string out = label(e.step, e.row_label, e.col_label, n);
  const std::string rhs = arithmetic(e, precision, n);
  if (!rhs.empty()) out += " = " + rhs;
  out += " = " + hand_number(e.value, precision, n);
  const std::string why = remark(e, precision, n);
  // TRANSLATORS: a remark after a cell's value, "= 0.25 (kept: …)".
  if (!why.empty())
    out += n.latex ? fmt::format("\\allowbreak\\quad {}", words(n.say(N_("({})"), why), n))
                   : n.say(N_(" ({})"), why);
  return out;
}

std::string positional_arithmetic(const CellExpansion& e, int precision, const Notation& n) {
  auto num = [&](double v) { return hand_number(v, precision, n); };
  const std::string f = e.cosine ? "cos" : "sin";
  return n.latex ? fmt::format("\\{}({} / 10000^{{{}/{}}}) = \\{}({})", f, e.position,
                               2 * e.pair_index, e.width, f, num(e.angle))
                 : fmt::format("{}({} / 10000^({}/{})) = {}({})", f, e.position, 2 * e.pair_index,
                               e.width, f, num(e.angle));
}

std::string product_arithmetic(const CellExpansion& e, int precision, const Notation& n) {
  auto num = [&](double v) { return hand_number(v, precision, n); };
  const CellSum& s = *e.sum;
  std::string out;
  // A negative factor in parentheses, unless it opens the sum: -0.34×0.21 + (-0.49)×(-0.4)
  auto factor = [&](double v, bool opens) { return opens ? num(v) : operand(num(v)); };
  for (std::size_t k = 0; k < s.terms.size(); ++k)
    out += (k ? " + " : "") + factor(s.terms[k].left, k == 0) + n.times +
           factor(s.terms[k].right, false);
  if (s.bias) out += " + " + factor(*s.bias, false);
  const bool transposed = s.transposed;
  const std::string left = s.terms.empty() ? "" : s.terms[0].left_ref.step;
  const std::string right = s.terms.empty() ? "" : s.terms[0].right_ref.step;
  const std::string operands = fmt::format(
      "{}{}{}{}", label(left, e.row_label, ":", n), n.dot,
      transposed ? label(right, e.col_label, ":", n) : label(right, ":", e.col_label, n),
      s.bias ? " + " + ref_label(s.bias_ref, n) : "");
  return operands + " = " + out;
}

std::string head_max_arithmetic(const CellExpansion& e, int precision, const Notation& n) {
  auto num = [&](double v) { return hand_number(v, precision, n); };
  std::string values;
  for (double v : e.source_values) values += (values.empty() ? "" : ", ") + num(v);
  return n.latex ? fmt::format("\\max({})", values) : fmt::format("max({})", values);
}

std::string row_var_arithmetic(const CellExpansion& e, int precision, const Notation& n) {
  auto num = [&](double v) { return hand_number(v, precision, n); };
  const std::string mean = num(e.mean);
  auto square = [&](double x) {
    const std::string d = fmt::format("({}{}{})", num(x), n.minus, operand(mean));
    return n.latex ? d + "^2" : d + "²";
  };
  return fmt::format("({}) / {}", joined(e.row_values, square), e.row_values.size());
}

std::string normalise_arithmetic(const CellExpansion& e, int precision, const Notation& n) {
  auto num = [&](double v) { return hand_number(v, precision, n); };
  const std::string top =
      fmt::format("{}{}{}", num(e.source_values[0]), n.minus, operand(num(e.source_values[1])));
  const std::string under = fmt::format("{} + {:g}", num(e.source_values[2]), e.eps);
  return n.latex ? fmt::format("\\frac{{{}}}{{\\sqrt{{{}}}}}", top, under)
                 : fmt::format("({}) / √({})", top, under);
}

std::string activation_arithmetic(const CellExpansion& e, int precision, const Notation& n) {
  auto num = [&](double v) { return hand_number(v, precision, n); };
  const std::string x = num(e.source_values[0]);
  if (!e.gelu) return n.latex ? fmt::format("\\max(0, {})", x) : fmt::format("max(0, {})", x);
  return n.latex ? fmt::format("{0} \\cdot \\tfrac12 (1 + \\mathrm{{erf}}({0} / \\sqrt2))", x)
                 : fmt::format("{0} × (1 + erf({0} / √2)) / 2", x);
}

std::string max_abs_diff_arithmetic(const CellExpansion& e, int precision, const Notation& n) {
  auto num = [&](double v) { return hand_number(v, precision, n); };
  std::string terms;
  for (std::size_t j = 0; j < e.row_values.size(); ++j)
    terms += fmt::format("{}|{}{}{}|", j ? ", " : "", num(e.row_values[j]), n.minus,
                         operand(num(e.compare_values.at(j))));
  const std::string operands =
      fmt::format("|{}{}{}|", label(e.sources[0].step, e.row_label, ":", n), n.minus,
                  label(e.sources[1].step, e.row_label, ":", n));
  return n.latex ? fmt::format("\\max {} = \\max({})", operands, terms)
                 : fmt::format("max {} = max({})", operands, terms);
}

// x·cos(a) − y·sin(a), or x·sin(a) + y·cos(a) for the second of a pair.
std::string rotate_arithmetic(const CellExpansion& e, int precision, const Notation& n) {
  auto num = [&](double v) { return hand_number(v, precision, n); };
  const std::string x = num(e.source_values[0]), y = operand(num(e.source_values[1]));
  const std::string a = num(e.angle);
  const std::string cos = n.latex ? fmt::format("\\cos({})", a) : fmt::format("cos({})", a);
  const std::string sin = n.latex ? fmt::format("\\sin({})", a) : fmt::format("sin({})", a);
  const std::string operands = e.cosine
      ? fmt::format("{}{}{} + {}{}{}", ref_label(e.sources[0], n), n.times, sin,
                    ref_label(e.sources[1], n), n.times, cos)
      : fmt::format("{}{}{}{}{}{}{}", ref_label(e.sources[0], n), n.times, cos, n.minus,
                    ref_label(e.sources[1], n), n.times, sin);
  const std::string values = e.cosine
      ? fmt::format("{}{}{} + {}{}{}", x, n.times, sin, y, n.times, cos)
      : fmt::format("{}{}{}{}{}{}{}", x, n.times, cos, n.minus, y, n.times, sin);
  return operands + " = " + values;
}

// An operator or function of an expression in the notation.
std::string expression_symbol(const std::string& symbol, const Notation& n) {
  if (!n.latex) return symbol;
  static const std::pair<const char*, const char*> tex[] = {
      {"−", "-"},         {"×", "\\times"},           {"exp(", "\\exp("},
      {"max(", "\\max("}, {"elu(", "\\mathrm{elu}("}, {"Σ", "\\Sigma"}};
  for (const auto& [from, to] : tex)
    if (symbol == from) return to;
  return symbol;
}

// The pieces of an expression, spaced as one writes them: "exp(0.5 − 0.7)".
std::string expression_arithmetic(const CellExpansion& e, int precision, const Notation& n) {
  std::string out;
  bool after_binary = false;  // a negative number after + − × / goes in parentheses
  for (const ExprPiece& p : e.expression) {
    std::string piece;
    bool spaced = false;
    switch (p.kind) {
      case ExprPiece::Kind::number:
        piece = hand_number(p.value, precision, n);
        if (after_binary && p.value < 0) piece = operand(piece);
        break;
      case ExprPiece::Kind::ref:
        piece = ref_label(p.ref, n);
        break;
      case ExprPiece::Kind::words:
        piece = words(n.say(p.text), n);
        break;
      case ExprPiece::Kind::symbol:
        piece = expression_symbol(p.text, n);
        spaced = p.text == "+" || p.text == "−" || p.text == "×" || p.text == "/" || p.text == "=";
        break;
    }
    if (spaced)
      out += " " + piece + " ";
    else
      out += piece + (p.kind == ExprPiece::Kind::symbol && p.text == "," ? " " : "");
    after_binary = spaced && p.text != "=";
  }
  return out;
}

std::string softmax_arithmetic(const CellExpansion& e, int precision, const Notation& n) {
  auto num = [&](double v) { return hand_number(v, precision, n); };
  if (e.exps.empty()) return words(n.say(e.note), n);
  if (e.given_exps)
    return fmt::format("{} / {} = {} / {}", ref_label(e.sources[0], n), ref_label(e.sources[1], n),
                       num(e.exps.at(e.col)), num(e.denominator));
  const std::string max = num(e.row_max);
  auto exp_term = [&](double x) {
    return exp_of(e.shifted ? num(x) + n.minus + operand(max) : num(x), n);
  };
  const std::string numerator = exp_term(e.row_values.at(e.col));
  const std::string denominator = joined(e.row_values, exp_term);
  const std::string plain = fmt::format("{} / {}", num(e.exps.at(e.col)), num(e.denominator));
  return n.latex ? fmt::format("\\frac{{{}}}{{{}}} = {}", numerator, denominator, plain)
                 : fmt::format("{} / ({}) = {}", numerator, denominator, plain);
}

std::string arithmetic(const CellExpansion& e, int precision, const Notation& n) {
  auto num = [&](double v) { return hand_number(v, precision, n); };
  switch (e.kind) {
    case ExpansionKind::input:
      return "";
    case ExpansionKind::positional:
      return positional_arithmetic(e, precision, n);
    case ExpansionKind::add:
      return fmt::format("{} + {} = {} + {}", ref_label(e.sources[0], n),
                         ref_label(e.sources[1], n), num(e.source_values[0]),
                         operand(num(e.source_values[1])));
    case ExpansionKind::product:
      return product_arithmetic(e, precision, n);
    case ExpansionKind::slice:
    case ExpansionKind::concat:
      return ref_label(e.sources[0], n);
    case ExpansionKind::divide:
      return fmt::format("{} / {} = {} / {}", ref_label(e.sources[0], n),
                         divisor_text(e, precision, n), num(e.source_values[0]), num(e.divisor));
    case ExpansionKind::mask:
      return e.mask_reasons ? words(n.say(N_("the fill")), n) : ref_label(e.sources[0], n);
    case ExpansionKind::exp:
      return exp_of(num(e.source_values[0]), n);
    case ExpansionKind::row_sum:
      return joined(e.row_values, num);
    case ExpansionKind::head_mean:
      return fmt::format("({}) / {}", joined(e.source_values, num), e.source_values.size());
    case ExpansionKind::head_max:
      return head_max_arithmetic(e, precision, n);
    case ExpansionKind::row_mean:
      return fmt::format("({}) / {}", joined(e.row_values, num), e.row_values.size());
    case ExpansionKind::row_var:
      return row_var_arithmetic(e, precision, n);
    case ExpansionKind::normalise:
      return normalise_arithmetic(e, precision, n);
    case ExpansionKind::scale_shift:
      return fmt::format("{}{}{} + {} = {}{}{} + {}", ref_label(e.sources[1], n), n.times,
                         ref_label(e.sources[0], n), ref_label(e.sources[2], n),
                         num(e.source_values[1]), n.times, operand(num(e.source_values[0])),
                         operand(num(e.source_values[2])));
    case ExpansionKind::activation:
      return activation_arithmetic(e, precision, n);
    case ExpansionKind::copy:
      return ref_label(e.sources[0], n);
    case ExpansionKind::max_abs_diff:
      return max_abs_diff_arithmetic(e, precision, n);
    case ExpansionKind::rotate:
      return rotate_arithmetic(e, precision, n);
    case ExpansionKind::alibi:
      return fmt::format("-{}{}{}", num(e.slope), n.times,
                         e.row > e.col ? e.row - e.col : e.col - e.row);
    case ExpansionKind::expression:
      return expression_arithmetic(e, precision, n);
    case ExpansionKind::softmax:
      return softmax_arithmetic(e, precision, n);
  }
  return "";
}

}  // namespace

namespace {

// The cell's arithmetic as text in `lang` (JSON's "text" is English).
std::string expansion_text_in(const CellExpansion& e, int precision, Language lang) {
  const Notation n = kText.in(lang);
  // A token's control characters as pictures: the equation stays one line.
  std::string out = show_controls(equation(e, precision, n));
  if (e.kind == ExpansionKind::softmax && e.shifted)
    out += "\n  " + n.say(N_("({})"), n.say(e.note));
  return out;
}

}  // namespace

std::string expansion_text(const CellExpansion& e, int precision) {
  return expansion_text_in(e, precision, language());
}

std::string expansion_markdown(const CellExpansion& e, int precision) {
  std::string out = md_code(equation(e, precision, kText.in(language())));
  if (e.kind == ExpansionKind::softmax && !e.exps.empty())
    out += "  \n*" + std::string(tr(e.note)) + "*";
  return out;
}

std::string expansion_latex(const CellExpansion& e, int precision) {
  return equation(e, precision, kLatex.in(language()));
}

std::string format_by_hand(double value, int max_decimals) {
  return hand_number(value, max_decimals, kText);
}

const CellExpansion* expansion_for(const RenderOptions& options, const std::string& step_id) {
  for (const CellExpansion& e : options.expansions)
    if (e.step == step_id) return &e;
  return nullptr;
}

namespace {

// RoPE's and ALiBi's fields, each after ", ".
std::string position_fields(const CellExpansion& e) {
  if (e.kind == ExpansionKind::alibi) return fmt::format(", \"slope\": {}", json_number(e.slope));
  return fmt::format(", \"position\": {}, \"pair\": {}, \"angle\": {}", e.position, e.pair_index,
                     json_number(e.angle));
}

// The MaskReason bits of a mask cell as JSON names (docs/json.md).
std::vector<std::string> mask_reason_names(const CellExpansion& e) {
  static const std::pair<unsigned, const char*> kNames[] = {
      {mask_causal, "causal"}, {mask_padding, "padding"}, {mask_keep, "keep"},
      {mask_window, "window"}, {mask_stride, "stride"}};
  std::vector<std::string> out;
  for (const auto& [bit, name] : kNames)
    if (e.mask_reasons & bit) out.emplace_back(name);
  return out;
}

// A mask expansion's fields: whether the cell is masked, why, and the fill.
std::string json_mask_fields(const CellExpansion& e) {
  return fmt::format(", \"masked\": {}, \"reasons\": {}, \"fill\": {}",
                     e.mask_reasons ? "true" : "false", json_strings(mask_reason_names(e)),
                     json_number(e.fill));
}

// The fields of e's kind, each after ", ".
std::string json_kind_fields(const CellExpansion& e) {
  std::string out;
  switch (e.kind) {
    case ExpansionKind::divide:
      return fmt::format(", \"divisor\": {}", json_number(e.divisor));
    case ExpansionKind::mask:
      out += json_mask_fields(e);
      break;
    case ExpansionKind::positional:
      out += fmt::format(", \"function\": \"{}\", \"angle\": {}", e.cosine ? "cos" : "sin",
                         json_number(e.angle));
      break;
    case ExpansionKind::row_sum:
    case ExpansionKind::row_mean:
      out += fmt::format(", \"row\": {}", json_row(arma::rowvec(e.row_values)));
      break;
    case ExpansionKind::row_var:
      out += fmt::format(", \"row\": {}, \"mean\": {}", json_row(arma::rowvec(e.row_values)),
                         json_number(e.mean));
      break;
    case ExpansionKind::normalise:
      return fmt::format(", \"eps\": {}", json_number(e.eps));
    case ExpansionKind::activation:
      return fmt::format(", \"function\": \"{}\"", e.gelu ? "gelu" : "relu");
    case ExpansionKind::max_abs_diff:
      out += fmt::format(", \"row\": {}, \"full_row\": {}", json_row(arma::rowvec(e.row_values)),
                         json_row(arma::rowvec(e.compare_values)));
      break;
    case ExpansionKind::rotate:
    case ExpansionKind::alibi:
      return position_fields(e);
    case ExpansionKind::softmax:
      out += fmt::format(
          ", \"row\": {}, \"row_max\": {}, \"exps\": {}, \"shifted\": {}, "
          "\"denominator\": {}, \"note\": {}",
          json_row(arma::rowvec(e.row_values)), json_number(e.row_max),
          e.exps.empty() ? std::string("[]") : json_row(arma::rowvec(e.exps)),
          e.shifted ? "true" : "false", json_number(e.denominator), json_string(e.note));
      break;
    case ExpansionKind::input:
    case ExpansionKind::add:
    case ExpansionKind::product:
    case ExpansionKind::slice:
    case ExpansionKind::exp:
    case ExpansionKind::concat:
    case ExpansionKind::head_mean:
    case ExpansionKind::head_max:
    case ExpansionKind::scale_shift:
    case ExpansionKind::copy:
    case ExpansionKind::expression:
      break;
  }
  return out;
}

}  // namespace

std::string expansion_json(const CellExpansion& e, int precision) {
  std::string out =
      fmt::format("{{\"step\": {}, \"cell\": [{}, {}], \"kind\": {}, \"value\": {}, \"text\": {}",
                  json_string(e.step), e.row, e.col, json_string(expansion_kind_name(e.kind)),
                  json_number(e.value), json_string(expansion_text_in(e, precision, Language::en)));
  if (e.sum) {
    std::vector<std::string> terms;
    for (const ProductTerm& t : e.sum->terms)
      terms.push_back(
          fmt::format("{{\"left\": {}, \"right\": {}, \"left_label\": {}, \"right_label\": {}, "
                      "\"product\": {}}}",
                      json_number(t.left), json_number(t.right), json_string(t.left_ref.label),
                      json_string(t.right_ref.label), json_number(t.product())));
    out += fmt::format(", \"terms\": [{}], \"bias\": {}", fmt::join(terms, ", "),
                       e.sum->bias ? json_number(*e.sum->bias) : std::string("null"));
  }
  if (!e.sources.empty()) {
    std::vector<std::string> sources;
    for (std::size_t k = 0; k < e.sources.size(); ++k)
      sources.push_back(fmt::format("{{\"label\": {}, \"value\": {}}}",
                                    json_string(e.sources[k].label),
                                    json_number(e.source_values[k])));
    out += fmt::format(", \"sources\": [{}]", fmt::join(sources, ", "));
  }
  out += json_kind_fields(e);
  return out + "}";
}

}  // namespace attn
