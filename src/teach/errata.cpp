// Claims against the computed trace, and the one cause that explains a wrong
// claim when there is one (built on teach/cell_arithmetic for product cells).
#include "teach/errata.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <regex>
#include <set>
#include <tuple>
#include <utility>

#include "core/error.hpp"
#include "core/number_text.hpp"
#include "core/ops/op.hpp"
#include "core/toml_read.hpp"
#include "render/numbers.hpp"

namespace attn {

namespace {

// At most this many alternative causes are named for one cell.
constexpr std::size_t kMaxCauses = 3;

// `format`, already in its language (translate(lang, "…")), with its {} filled in.
template <typename... Args>
std::string fill(std::string_view format, const Args&... args) {
  return fmt::vformat(format, fmt::make_format_args(args...));
}

// A list's separator and the one before an alternative, in `lang`.
std::string_view list_comma(Language lang) {
  return lang == Language::zh ? "，" : ", ";
}

std::string cell_label(const Step& step, std::size_t row, std::size_t col) {
  return fmt::format("{}[{},{}]", step.id, step.rows.at(row), step.cols.at(col));
}

const Step& claimed_step(const Lesson& lesson, const Trace& trace, const Claim& claim) {
  require_fits(claim, trace, lesson.origin, "claim");
  return trace.at(claim.step);
}

// Differs from the truth by more than floating-point noise: a stated value the
// document got wrong (or rounded), as opposed to one it copied right.
bool differs(double stated, double truth) {
  if (std::isnan(stated) || std::isnan(truth)) return std::isnan(stated) != std::isnan(truth);
  if (std::isinf(stated) || std::isinf(truth)) return stated != truth;
  return std::abs(stated - truth) > 1e-9 * std::max(1.0, std::abs(truth));
}

// Cells recomputed on the document's own numbers: a stated value stands for
// its cell, and every step downstream of one is recomputed from its inputs'
// own values through the trace's dataflow; other cells are the computed ones.
// Shape key: the (step, row, col) of any step of the trace.
class OwnNumbers {
 public:
  OwnNumbers(const Trace& trace, const std::vector<StatedValue>& stated) : trace_(trace) {
    for (const StatedValue& s : stated) {
      const Step* step = trace.find(s.step);
      if (!step || s.row >= step->value.n_rows || s.col >= step->value.n_cols) continue;
      stated_.try_emplace({s.step, s.row, s.col}, s.value);
    }
    for (const Step& step : trace.steps) {
      bool fed = std::any_of(stated_.begin(), stated_.end(), [&](const auto& entry) {
        return std::get<0>(entry.first) == step.id;
      });
      for (const std::string& in : step.made.inputs) fed = fed || fed_.contains(in);
      if (fed) fed_.insert(step.id);
    }
  }

  // The own value of step[row, col], and how this step forms it from its inputs'
  // own values; records the stated values used that differ from the truth.
  std::optional<OwnArithmetic> of(const Step& step, std::size_t row, std::size_t col) {
    used_.clear();
    if (!fed_.contains(step.id)) return std::nullopt;
    OwnArithmetic own;
    own.value = compute(step, row, col, &own.formula);
    if (used_.empty()) return std::nullopt;
    own.used.assign(used_.begin(), used_.end());
    return own;
  }

 private:
  using Key = std::tuple<std::string, std::size_t, std::size_t>;

  double value(const std::string& id, std::size_t row, std::size_t col) {
    const Step& step = trace_.at(id);
    if (const auto s = stated_.find({id, row, col}); s != stated_.end()) {
      const double truth = step.value(row, col);
      if (differs(s->second, truth)) used_.insert({cell_label(step, row, col), s->second, truth});
      return s->second;
    }
    if (!fed_.contains(id)) return step.value(row, col);
    if (const auto m = memo_.find({id, row, col}); m != memo_.end()) {
      used_.insert(m->second.second.begin(), m->second.second.end());
      return m->second.first;
    }
    const std::set<UsedValue> before = std::exchange(used_, {});
    const double v = compute(step, row, col, nullptr);
    memo_[{id, row, col}] = {v, used_};
    used_.insert(before.begin(), before.end());
    return v;
  }

  // How a step's cell is made on the document's own numbers, and written.
  enum class Own {
    as_computed,  // taken as the trace has it: no document states a number inside one yet
    copied,       // a copy, a choice or a sum of two, written as its value
    sum,          // a sum of products: each term written
    quotient,     // input / the scale
    exponential,  // e^input
    row_total,    // the row's terms added
    weight,       // E / Σ
  };

  // The rule of `step`'s operation: one row per Op, no default.
  static Own own_rule(const Step& step) {
    switch (step.made.op) {
      case Op::matmul:
      case Op::matmul_t:
        return Own::sum;
      case Op::divide:
        return Own::quotient;
      case Op::exp:
        return Own::exponential;
      case Op::row_sum:
        return Own::row_total;
      case Op::softmax:  // a decoding step's weights record no exp and row sum
        return step.made.inputs.size() > 2 ? Own::weight : Own::as_computed;
      case Op::slice:
      case Op::rows:
      case Op::mask:
      case Op::add_positions:
      case Op::concat:
      case Op::mean:
      case Op::max:
      case Op::add:
      case Op::identity:
        return Own::copied;
      case Op::efficient:  // tiles and linear attention: a block is a copy; no document
                           // states a number inside the others
        return step.made.efficient == EfficientOp::tile_block ? Own::copied : Own::as_computed;
      case Op::row_mean:  // the rest of the encoder layer and the KV cache's check
      case Op::row_var:
      case Op::normalise:
      case Op::scale_shift:
      case Op::relu:
      case Op::gelu:
      case Op::max_abs_diff:
      case Op::rotate:
      case Op::alibi:
      case Op::row_max_abs_diff:
      case Op::given:
      case Op::positional:
      case Op::backward:
        return Own::as_computed;
    }
    return Own::as_computed;
  }

  // step[row, col] from its inputs' own values, by the op's arithmetic
  // (core/ops); `formula`, when given, says how.
  double compute(const Step& step, std::size_t row, std::size_t col, std::string* formula) {
    const Own rule = own_rule(step);
    if (rule == Own::as_computed) {
      if (formula) *formula = short_number(step.value(row, col));
      return step.value(row, col);
    }
    const ReadInput read = [&](std::size_t i, std::size_t r, std::size_t c) {
      return value(step.made.inputs.at(i), r, c);
    };
    const CellContext context{trace_, step, read};
    const double v = op_facets(step.made.op).cell(context, row, col);
    if (formula) *formula = own_formula(rule, step, row, col, v);
    return v;
  }

  // How step[row, col] = v is formed from its inputs' own values, for people.
  std::string own_formula(Own rule, const Step& step, std::size_t row, std::size_t col, double v) {
    const auto input = [&](std::size_t i, std::size_t r, std::size_t c) {
      return short_number(value(step.made.inputs.at(i), r, c));
    };
    switch (rule) {
      case Own::sum:
        return expand_sum(own_sum(step, row, col));
      case Own::quotient:
        return fmt::format("{} / {} = {}", input(0, row, col), short_number(step.made.divisor),
                           short_number(v));
      case Own::exponential:
        return fmt::format("e^{} = {}", input(0, row, col), short_number(v));
      case Own::row_total: {
        std::vector<std::string> terms;
        for (std::size_t c = 0; c < trace_.input(step, 0).value.n_cols; ++c)
          terms.push_back(input(0, row, c));
        return fmt::format("{} = {}", fmt::join(terms, " + "), short_number(v));
      }
      case Own::weight: {  // E / Σ, unless Σ is 0 (a fully masked row): the policy decided
        const double sum = value(step.made.inputs.at(2), row, 0);
        if (!(sum > 0) || !std::isfinite(sum)) return "";
        return fmt::format("{} / {} = {}", input(1, row, col), short_number(sum), short_number(v));
      }
      case Own::copied:
      case Own::as_computed:
        return short_number(v);
    }
    return short_number(v);
  }

  // The product's sum of terms with each factor's own value.
  CellSum own_sum(const Step& step, std::size_t row, std::size_t col) {
    CellSum own = *cell_sum(trace_, step.id, row, col);
    own.value = 0.0;
    for (ProductTerm& t : own.terms) {
      t.left = value(t.left_ref.step, t.left_ref.row, t.left_ref.col);
      t.right = value(t.right_ref.step, t.right_ref.row, t.right_ref.col);
      own.value += t.product();
    }
    if (own.bias) {
      own.bias = value(own.bias_ref.step, own.bias_ref.row, own.bias_ref.col);
      own.value += *own.bias;
    }
    return own;
  }

  const Trace& trace_;
  std::map<Key, double> stated_;  // the first value stated for each cell
  std::set<std::string> fed_;     // steps with a stated cell, or downstream of one
  std::map<Key, std::pair<double, std::set<UsedValue>>> memo_;
  std::set<UsedValue> used_;
};

// The stated value is another cell of the same row or column of a product
// step: the document took the wrong row (or key) for this one.
std::optional<std::string> other_cell_matches(const Step& step, const ClaimCell& cell,
                                              Language lang) {
  const arma::mat& M = step.value;
  auto matches = [&](std::size_t r, std::size_t c) {
    return (r != cell.row || c != cell.col) &&
           matches_written(M(r, c), cell.stated.value, cell.tolerance);
  };
  for (std::size_t c = 0; c < M.n_cols; ++c)
    if (matches(cell.row, c))
      return fill(translate(lang, "the stated value is {} = {}: the wrong column (key) was used"),
                  cell_label(step, cell.row, c), short_number(M(cell.row, c)));
  for (std::size_t r = 0; r < M.n_rows; ++r)
    if (matches(r, cell.col))
      return fill(translate(lang, "the stated value is {} = {}: the wrong row was used"),
                  cell_label(step, r, cell.col), short_number(M(r, cell.col)));
  return std::nullopt;
}

// Where the value written for operand `ref` can be found, when it is not the
// true one: the document's own value for that cell, the same column of another
// row (the wrong row used), or the other factor of the same term.
std::string written_source(const Trace& trace, const OperandRef& ref, const ProductTerm& term,
                           const WrittenNumber& w, const std::vector<StatedValue>& stated,
                           Language lang) {
  const double tol = half_unit(w.decimals);
  const Step* step = trace.find(ref.step);
  if (!step) return "";
  // A head slice's cell is also the projection's cell at the slice's offset.
  const bool slice = step->made.op == Op::slice;
  const std::size_t offset = slice ? step->made.offset : 0;
  for (const StatedValue& s : stated) {
    const bool same_matrix = s.step == ref.step || (slice && s.step == step->made.inputs.at(0));
    const std::size_t col = s.step == ref.step ? ref.col : offset + ref.col;
    if (same_matrix && s.col == col && matches_written(s.value, w.value, tol))
      return fill(translate(lang, "; = the document's own {}[{},{}]"), s.step, step->rows.at(s.row),
                  step->cols.at(ref.col));
  }
  for (std::size_t r = 0; r < step->value.n_rows; ++r)
    if (r != ref.row && matches_written(step->value(r, ref.col), w.value, tol))
      return fill(translate(lang, "; = {}[{},{}], another row"), ref.step, step->rows.at(r),
                  step->cols.at(ref.col));
  const bool is_left = &ref == &term.left_ref;
  const double other = is_left ? term.right : term.left;
  if (matches_written(other, w.value, tol))
    return fill(translate(lang, "; = {}, the other factor"),
                (is_left ? term.right_ref : term.left_ref).label);
  return "";
}

// compare_written's sentence, once the differing factors or terms are known.
std::string written_summary(const std::vector<std::string>& differ,
                            const std::vector<WrittenTerm>& written,
                            std::optional<std::size_t> slip_term, bool factors_right, bool adds_up,
                            const std::string& total, Language lang) {
  if (differ.empty())
    return fill(factors_right ? translate(lang,
                                          "every written factor is right, so the slip is in the "
                                          "products or the addition{}")
                              : translate(lang,
                                          "every written term is right, so the slip is in the "
                                          "addition{}"),
                total);
  const std::string listed = fmt::format("{}", fmt::join(differ, list_comma(lang)));
  if (slip_term && adds_up)
    return fill(
        written[*slip_term].left && differ.size() == 1
            ? translate(lang, "as written: {}; that one value explains the whole difference")
            : translate(lang, "as written: {}; that one term explains the whole difference"),
        listed);
  return fill(translate(lang, "as written: {}{}"), listed, total);
}

// The written sum against the true terms: which written factors or products
// differ from the true ones. Sets `slip_term` when the differences sit in one
// term; sets `factors_right` when every written factor is right (the slip is
// then in a product or the addition).
std::string compare_written(const Trace& trace, const CellSum& sum,
                            const std::vector<WrittenTerm>& written, const ClaimCell& cell,
                            const std::vector<StatedValue>& stated,
                            std::optional<std::size_t>& slip_term, bool& factors_right,
                            Language lang) {
  std::vector<std::string> differ;
  std::vector<std::size_t> terms_differing;
  double written_total = sum.bias.value_or(0.0);
  factors_right = true;
  for (std::size_t k = 0; k < written.size(); ++k) {
    const ProductTerm& t = sum.terms[k];
    const WrittenTerm& w = written[k];
    written_total += w.product.value;
    const std::size_t before = differ.size();
    if (w.left && w.right) {
      const std::pair<const WrittenNumber&, const OperandRef&> sides[] = {{*w.left, t.left_ref},
                                                                          {*w.right, t.right_ref}};
      const double truth[] = {t.left, t.right};
      for (int side = 0; side < 2; ++side) {
        const WrittenNumber& value = sides[side].first;
        if (matches_written(truth[side], value.value, half_unit(value.decimals))) continue;
        factors_right = false;
        differ.push_back(fill(translate(lang, "{} written {} (true {}{})"),
                              sides[side].second.label, format_fixed(value.value, value.decimals),
                              short_number(truth[side]),
                              written_source(trace, sides[side].second, t, value, stated, lang)));
      }
      // A product written apart from its factors: a slip in the multiplication.
      const double of_factors = w.left->value * w.right->value;
      if (w.product_written &&
          !matches_written(of_factors, w.product.value, half_unit(w.product.decimals)))
        differ.push_back(fill(translate(lang, "term {} written {}, but {} × {} = {}"), k + 1,
                              format_fixed(w.product.value, w.product.decimals),
                              format_fixed(w.left->value, w.left->decimals),
                              format_fixed(w.right->value, w.right->decimals),
                              short_number(of_factors)));
    } else {
      factors_right = false;
      if (!matches_written(t.product(), w.product.value, half_unit(w.product.decimals)))
        differ.push_back(fill(translate(lang, "term {} written {}, but {} × {} = {}"), k + 1,
                              format_fixed(w.product.value, w.product.decimals),
                              short_number(t.left), short_number(t.right),
                              short_number(t.product())));
    }
    if (differ.size() > before) terms_differing.push_back(k);
  }
  if (terms_differing.size() == 1) slip_term = terms_differing.front();
  const bool adds_up = matches_written(written_total, cell.stated.value, cell.tolerance);
  const std::string total = adds_up
                                ? ""
                                : fill(translate(lang, "; its written terms add up to {}, not {}"),
                                       short_number(written_total),
                                       format_fixed(cell.stated.value, cell.stated.decimals));
  return written_summary(differ, written, slip_term, factors_right, adds_up, total, lang);
}

// A weight as the fraction it is on paper: " = e^x / row sum = a / b" (empty
// for other steps, or when the row sum is 0 and the stable softmax decided).
std::string softmax_fraction(const Trace& trace, const Step& step, const ClaimCell& cell) {
  if (step.made.op != Op::softmax || step.made.inputs.size() < 3) return "";
  const Step& exp = trace.input(step, 1);
  const Step& row_sum = trace.input(step, 2);
  const double e = exp.value(cell.row, cell.col);
  const double sum = row_sum.value(cell.row, 0);
  if (!(sum > 0) || !std::isfinite(sum)) return "";
  return fmt::format(" = {}[{},{}] / {}[{}] = {} / {}", exp.id, step.rows.at(cell.row),
                     step.cols.at(cell.col), row_sum.id, step.rows.at(cell.row), short_number(e),
                     short_number(sum));
}

// The causes of cell_arithmetic's slips, the first few joined with "or".
std::string causes(const std::vector<TermSlip>& slips, Language lang) {
  std::vector<std::string> named;
  for (std::size_t i = 0; i < slips.size() && i < kMaxCauses; ++i) named.push_back(slips[i].cause.in(lang));
  const std::string more = slips.size() > kMaxCauses
                               ? fill(translate(lang, " (and {} more)"), slips.size() - kMaxCauses)
                               : "";
  return fmt::format("{}{}", fmt::join(named, translate(lang, "; or ")), more);
}

// The slips as one sentence: one term named, or the alternatives.
std::string describe_slips(const std::vector<TermSlip>& slips, Language lang) {
  bool one_term = true;
  for (const TermSlip& s : slips) one_term = one_term && s.term == slips.front().term;
  return fill(
      one_term ? translate(lang, "one term explains the whole difference: {}")
               : translate(lang, "any one of these single slips explains the whole difference: {}"),
      causes(slips, lang));
}

}  // namespace

ClaimStatus ClaimVerdict::status() const {
  ClaimStatus out = ClaimStatus::agrees;
  for (const ClaimCell& c : cells) {
    if (c.status == CellStatus::slip) return ClaimStatus::disagrees;
    if (c.status == CellStatus::carried) out = ClaimStatus::carried;
  }
  return out;
}

const char* status_name(ClaimStatus status) {
  switch (status) {
    case ClaimStatus::agrees:
      return "agrees";
    case ClaimStatus::carried:
      return "carried";
    case ClaimStatus::disagrees:
      return "disagrees";
  }
  return "disagrees";
}

const char* status_name(CellStatus status) {
  switch (status) {
    case CellStatus::agrees:
      return "agrees";
    case CellStatus::carried:
      return "carried";
    case CellStatus::slip:
      return "slip";
  }
  return "slip";
}

std::optional<OwnArithmetic> own_arithmetic(const Trace& trace,
                                            const std::vector<StatedValue>& stated,
                                            std::string_view step, std::size_t row,
                                            std::size_t col) {
  return OwnNumbers(trace, stated).of(trace.at(step), row, col);
}

std::string UsedValue::text(Language lang) const {
  return fill(translate(lang, "{} = {} (true {})"), cell, short_number(stated),
              short_number(truth));
}

std::string ClaimVerdict::explanation(Language lang) const {
  std::vector<std::string> parts;
  for (const ClaimCell& c : cells)
    if (!c.agrees()) parts.push_back(c.explanation_in(lang));
  return fmt::format("{}", fmt::join(parts, " | "));
}

std::string expand_sum(const CellSum& sum) {
  std::vector<std::string> factors, products;
  for (const ProductTerm& t : sum.terms) {
    factors.push_back(fmt::format("{}×{}", short_number(t.left), short_number(t.right)));
    products.push_back(short_number(t.product()));
  }
  if (sum.bias) {
    factors.push_back(short_number(*sum.bias));
    products.push_back(short_number(*sum.bias));
  }
  return fmt::format("{} = {} = {}", fmt::join(factors, " + "), fmt::join(products, " + "),
                     short_number(sum.value));
}

namespace {

// After written factors, "= 0.476 + 0.25 + …": the products as the document
// wrote them, one per term, replace the products of the factors.
void written_products(const std::string& after, std::vector<WrittenTerm>& terms) {
  if (terms.empty() || !terms.front().left) return;
  static const std::regex products(R"(^\s*=\s*(-?\d+(?:\.\d+)?(?:\s*\+\s*-?\d+(?:\.\d+)?)*))");
  std::smatch match;
  if (!std::regex_search(after, match, products)) return;
  static const std::regex number(R"(-?\d+(?:\.\d+)?)");
  const std::string list = match[1].str();
  std::vector<WrittenNumber> written;
  for (auto n = std::sregex_iterator(list.begin(), list.end(), number); n != std::sregex_iterator();
       ++n)
    written.push_back({std::strtod(n->str().c_str(), nullptr), decimals_written(n->str())});
  if (written.size() != terms.size()) return;
  for (std::size_t k = 0; k < terms.size(); ++k) {
    terms[k].product = written[k];
    terms[k].product_written = true;
  }
}

}  // namespace

std::vector<WrittenTerm> written_terms(std::string_view says) {
  std::vector<WrittenTerm> out;
  const std::size_t start = says.find("written as ");
  if (start == std::string_view::npos) return out;
  const std::string rest(says.substr(start + 11));
  static const std::regex term(
      R"(^\s*(?:\+\s*)?(-?\d+(?:\.\d+)?)(?:\s*(?:×|\*)\s*(-?\d+(?:\.\d+)?))?)");
  auto read = [](const std::string& text) {
    return WrittenNumber{std::strtod(text.c_str(), nullptr), decimals_written(text)};
  };
  std::smatch match;
  auto it = rest.cbegin();
  for (; std::regex_search(it, rest.cend(), match, term); it = match[0].second) {
    WrittenTerm t;
    if (match[2].matched) {
      t.left = read(match[1].str());
      t.right = read(match[2].str());
      t.product = {t.left->value * t.right->value, t.left->decimals + t.right->decimals};
    } else {
      t.product = read(match[1].str());
    }
    out.push_back(t);
    if (match[0].length() == 0) break;
  }
  written_products(std::string(it, rest.cend()), out);
  return out;
}

std::vector<StatedValue> stated_values(const Lesson& lesson, const Claim* except) {
  std::vector<StatedValue> out;
  for (const Claim& claim : lesson.claims) {
    if (&claim == except) continue;
    for (std::size_t r = 0; r < claim.values.size(); ++r)
      for (std::size_t c = 0; c < claim.values[r].size(); ++c)
        out.push_back({claim.step, claim.step_row(r), claim.step_col(c), claim.values[r][c].value,
                       fmt::format("the document's own value, claim at line {}", claim.line)});
  }
  return out;
}

// A product cell's difference: its sum of terms, what the document wrote of
// it, and the one slipped term or input that explains it, when one does.
// `head` names the cell and both values; `own_text` is a real slip on the
// document's own numbers, or empty.
std::string explain_product(const Lesson& lesson, const Trace& trace, const Claim& claim,
                            const ClaimCell& cell, const std::string& head,
                            const std::string& own_text, Language lang) {
  const CellSum& arithmetic = *cell.arithmetic;
  const std::vector<StatedValue> stated = stated_values(lesson, &claim);
  const std::string expansion = fmt::format("{} = {}", head, expand_sum(arithmetic));
  std::vector<TermSlip> slips =
      single_term_slips(trace, arithmetic, cell.stated.value, cell.tolerance, stated);
  // A product's leading digit changed fits one value in ten by chance: too
  // weak to offer as a cause (verify drops it too).
  std::erase_if(slips, [](const TermSlip& s) { return s.kind == SlipKind::digit_slip; });
  const std::vector<WrittenTerm> written = written_terms(claim.says);
  double written_total = arithmetic.bias.value_or(0.0);
  for (const WrittenTerm& w : written) written_total += w.product.value;
  const bool applies = written.size() == arithmetic.terms.size() &&
                       (claim.where.kind == CellSelector::Kind::cell ||
                        matches_written(written_total, cell.stated.value, cell.tolerance));
  if (applies) {
    std::optional<std::size_t> slip_term;
    bool factors_right = false;
    const std::string as_written =
        compare_written(trace, arithmetic, written, cell, stated, slip_term, factors_right, lang);
    // What the document wrote rules out the slips it contradicts.
    std::erase_if(slips, [&](const TermSlip& s) {
      const bool operand_swap = s.kind == SlipKind::stated_value || s.kind == SlipKind::wrong_entry;
      return (slip_term && s.term != *slip_term) || (factors_right && operand_swap);
    });
    if (slips.empty()) return fill(translate(lang, "{}; {}{}"), expansion, as_written, own_text);
    return fill(translate(lang, "{}; {}; possible cause: {}{}"), expansion, as_written,
                causes(slips, lang), own_text);
  }
  if (!slips.empty())
    return fill(translate(lang, "{}; {}{}"), expansion, describe_slips(slips, lang), own_text);
  if (const auto other = other_cell_matches(trace.at(claim.step), cell, lang))
    return fill(translate(lang, "{}; {}{}"), expansion, *other, own_text);
  return fill(translate(lang, "{}; no single term or input explains the difference of {}{}"),
              expansion, short_number(cell.stated.value - cell.computed), own_text);
}

std::string explain_difference(const Lesson& lesson, const Trace& trace, const Claim& claim,
                               const ClaimCell& cell, Language lang) {
  const Step& step = trace.at(claim.step);
  const std::string head =
      fill(translate(lang, "{}: stated {}, computed {}"), cell_label(step, cell.row, cell.col),
           format_fixed(cell.stated.value, cell.stated.decimals),
           format_fixed(cell.computed, std::max(cell.stated.decimals, 4)));
  if (std::isnan(cell.computed))
    return fill(translate(lang, "{}; every key of this row is masked, so the softmax is 0/0"),
                head);
  // On the document's own numbers: carried when they give the stated value;
  // otherwise a real slip, named with what its own numbers give.
  std::string own_text;
  if (cell.own) {
    std::vector<std::string> used;
    for (const UsedValue& u : cell.own->used) used.push_back(u.text(lang));
    const std::string listed = fmt::format("{}", fmt::join(used, list_comma(lang)));
    if (cell.status == CellStatus::carried)
      return fill(translate(lang,
                            "{}; carried: right on the document's own {}: {}; this step's "
                            "arithmetic is right, the difference comes from upstream"),
                  head, listed, cell.own->formula);
    if (!matches_written(cell.own->value, cell.computed, cell.tolerance))
      own_text =
          fill(translate(lang, "; a real slip: on the document's own {}, {}, not {}"), listed,
               cell.own->formula, format_fixed(cell.stated.value, cell.stated.decimals));
  }
  if (cell.arithmetic) return explain_product(lesson, trace, claim, cell, head, own_text, lang);
  if (!own_text.empty()) return head + own_text;
  return fill(translate(lang, "{}{}; off by {}"), head, softmax_fraction(trace, step, cell),
              short_number(cell.stated.value - cell.computed));
}

std::vector<ClaimVerdict> check_claims(const Lesson& lesson, const Trace& trace) {
  std::vector<ClaimVerdict> out;
  for (const Claim& claim : lesson.claims) {
    const Step& step = claimed_step(lesson, trace, claim);
    OwnNumbers own_numbers(trace, stated_values(lesson, &claim));
    ClaimVerdict verdict{claim, {}};
    for (std::size_t r = 0; r < claim.values.size(); ++r)
      for (std::size_t c = 0; c < claim.values[r].size(); ++c) {
        ClaimCell cell;
        cell.row = claim.step_row(r);
        cell.col = claim.step_col(c);
        cell.stated = claim.values[r][c];
        cell.computed = step.value(cell.row, cell.col);
        cell.tolerance = claim.tolerance_for(cell.stated);
        if (matches_written(cell.computed, cell.stated.value, cell.tolerance)) {
          cell.status = CellStatus::agrees;
        } else {
          cell.own = own_numbers.of(step, cell.row, cell.col);
          const bool carried =
              cell.own && matches_written(cell.own->value, cell.stated.value, cell.tolerance);
          cell.status = carried ? CellStatus::carried : CellStatus::slip;
          cell.arithmetic = cell_sum(trace, claim.step, cell.row, cell.col);
          cell.explanation = explain_difference(lesson, trace, claim, cell, Language::en);
          cell.explanation_zh = explain_difference(lesson, trace, claim, cell, Language::zh);
        }
        verdict.cells.push_back(std::move(cell));
      }
    out.push_back(std::move(verdict));
  }
  return out;
}

}  // namespace attn
