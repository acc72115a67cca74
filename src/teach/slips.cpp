// The single-term slips that explain a wrong total of a sum of products: the
// on-paper mistakes that verify and the errata share.
#include "teach/slips.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "core/error.hpp"
#include "core/number_text.hpp"

namespace attn {

namespace {

// True when `stated` is a value for the cell `ref` points at (directly, or a
// projection's cell seen through a head slice's column block).
bool refers_to(const Trace& trace, const StatedValue& stated, const OperandRef& ref) {
  if (stated.row != ref.row) return false;
  if (stated.step == ref.step) return stated.col == ref.col;
  const Step* step = trace.find(ref.step);
  if (!step || step->made.op != Op::slice) return false;
  return stated.step == step->made.inputs.at(0) && stated.col == step->made.offset + ref.col;
}

// Decimals implied by a half-unit tolerance: 0.0005 -> 3; 0 when none can be told.
int decimals_of_tolerance(double tolerance) {
  if (tolerance <= 0) return -1;
  return std::max(0, static_cast<int>(std::lround(-std::log10(2.0 * tolerance))));
}

// `p` rounded to `decimals`, with its leading significant digit changed to each
// other digit (digit_slip), and with each pair of adjacent digits swapped (digit_swap).
std::vector<std::pair<double, SlipKind>> digit_slips_of(double p, int decimals) {
  std::vector<std::pair<double, SlipKind>> out;
  const std::string text = fmt::format("{:.{}f}", std::abs(p), decimals);
  const double sign = p < 0 ? -1.0 : 1.0;
  const std::size_t lead = text.find_first_of("123456789");
  if (lead == std::string::npos) return out;
  for (char d = '0'; d <= '9'; ++d) {
    if (d == text[lead]) continue;
    std::string changed = text;
    changed[lead] = d;
    out.emplace_back(sign * std::stod(changed), SlipKind::digit_slip);
  }
  for (std::size_t i = lead; i + 1 < text.size(); ++i) {
    std::size_t j = i + 1;
    if (text[j] == '.') ++j;
    if (j >= text.size() || text[i] == '.' || text[i] == text[j]) continue;
    std::string swapped = text;
    std::swap(swapped[i], swapped[j]);
    out.emplace_back(sign * std::stod(swapped), SlipKind::digit_swap);
  }
  return out;
}

}  // namespace

bool matches_written(double value, double written, double tolerance) {
  if (std::isnan(value) || std::isnan(written)) return std::isnan(value) && std::isnan(written);
  if (std::isinf(value) || std::isinf(written)) return value == written;
  const double slack = 1e-9 * std::max({tolerance, std::abs(value), std::abs(written)}) + 1e-12;
  return std::abs(value - written) <= tolerance + slack;
}

namespace {

// The slips of one sum that bring its total within `tolerance` of `written`.
struct SlipSearch {
  const CellSum& sum;
  double written = 0.0;
  double tolerance = 0.0;
  std::vector<TermSlip> found;

  // Term `term` written as `new_p` instead of `true_p`: kept when it gives `written`.
  void consider(std::size_t term, double true_p, double new_p, SlipKind kind, Message cause,
                std::size_t distance = 0) {
    if (!matches_written(sum.value - true_p + new_p, written, tolerance)) return;
    found.push_back({term, true_p, new_p, kind, std::move(cause), distance});
  }
};

// "0.6 × 0.1 = 0.06": the term as people check it.
std::string product_text(const ProductTerm& term) {
  return fmt::format("{} × {} = {}", short_number(term.left), short_number(term.right),
                     short_number(term.product()));
}

// Term t with one operand (side 0: left, 1: right) replaced: by a value stated
// for that cell, or by another entry of the operand's row or column.
void replaced_operand_slips(SlipSearch& search, const Trace& trace, std::size_t t, int side,
                            const std::vector<StatedValue>& stated) {
  const ProductTerm& term = search.sum.terms[t];
  const double p = term.product();
  const std::size_t n = t + 1;  // terms are counted from 1 for people
  const OperandRef& ref = side == 0 ? term.left_ref : term.right_ref;
  const double own = side == 0 ? term.left : term.right;
  const double other = side == 0 ? term.right : term.left;
  auto replaced = [&](double v) {
    return Message(N_("{} × {} = {} instead of {}"),
                   {short_number(side == 0 ? v : other), short_number(side == 0 ? other : v),
                    short_number(v * other), product_text(term)});
  };
  for (const StatedValue& s : stated)
    if (s.value != own && refers_to(trace, s, ref))
      search.consider(t, p, s.value * other, SlipKind::stated_value,
                      Message(N_("term {}: used {} = {} ({}) instead of {}: {}"),
                              {std::to_string(n), ref.label, short_number(s.value), s.source,
                               short_number(own)},
                              {replaced(s.value)}));
  const Step& M = trace.at(ref.step);
  auto try_entry = [&](std::size_t r, std::size_t c) {
    const double v = M.value(r, c);
    if (v == own || !std::isfinite(v)) return;
    search.consider(
        t, p, v * other, SlipKind::wrong_entry,
        Message(N_("term {}: used {} = {} instead of {} = {}: {}"),
                {std::to_string(n), operand_ref(M, r, c).label, short_number(v), ref.label,
                 short_number(own)},
                {replaced(v)}),
        (r > ref.row ? r - ref.row : ref.row - r) + (c > ref.col ? c - ref.col : ref.col - c));
  };
  for (std::size_t r = 0; r < M.value.n_rows; ++r)
    if (r != ref.row) try_entry(r, ref.col);
  for (std::size_t c = 0; c < M.value.n_cols; ++c)
    if (c != ref.col) try_entry(ref.row, c);
}

// Term t's product itself miswritten: left out, its sign flipped, its decimal
// point shifted, or (with `decimals` >= 0) a digit miscopied or two swapped.
void miswritten_product_slips(SlipSearch& search, std::size_t t, int decimals) {
  const ProductTerm& term = search.sum.terms[t];
  const double p = term.product();
  const std::size_t n = t + 1;
  const std::string product = product_text(term);
  const std::string labels = fmt::format("{} × {}", term.left_ref.label, term.right_ref.label);
  search.consider(t, p, 0.0, SlipKind::dropped_term,
                  Message(N_("term {} left out: {} = {}"), {std::to_string(n), labels, product}));
  search.consider(t, p, -p, SlipKind::sign_flip,
                  Message(N_("term {}: wrote {} for {} (sign flipped)"),
                          {std::to_string(n), short_number(-p), product}));
  for (double factor : {10.0, 0.1})
    search.consider(t, p, p * factor, SlipKind::decimal_shift,
                    Message(N_("term {}: wrote {} for {} (decimal point shifted)"),
                            {std::to_string(n), short_number(p * factor), product}));
  if (decimals < 0) return;
  for (const auto& [slip, kind] : digit_slips_of(p, decimals))
    search.consider(
        t, p, slip, kind,
        Message(kind == SlipKind::digit_swap ? N_("term {}: wrote {} for {} (two digits swapped)")
                                             : N_("term {}: wrote {} for {} (a digit miscopied)"),
                {std::to_string(n), short_number(slip), product}));
}

}  // namespace

std::vector<TermSlip> single_term_slips(const Trace& trace, const CellSum& sum, double written,
                                        double tolerance, const std::vector<StatedValue>& stated) {
  SlipSearch search{sum, written, tolerance, {}};
  if (matches_written(sum.value, written, tolerance)) return {};
  const int decimals = decimals_of_tolerance(tolerance);
  for (std::size_t t = 0; t < sum.terms.size(); ++t) {
    for (int side = 0; side < 2; ++side) replaced_operand_slips(search, trace, t, side, stated);
    miswritten_product_slips(search, t, decimals);
  }
  if (sum.bias)
    search.consider(
        sum.terms.size(), *sum.bias, 0.0, SlipKind::dropped_bias,
        Message(N_("bias left out: {} = {}"), {sum.bias_ref.label, short_number(*sum.bias)}));
  std::stable_sort(search.found.begin(), search.found.end(),
                   [](const TermSlip& a, const TermSlip& b) {
                     return a.kind != b.kind ? a.kind < b.kind : a.term < b.term;
                   });
  return std::move(search.found);
}

}  // namespace attn
