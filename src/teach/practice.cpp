// The practice engine: which cells to ask, each answer marked with
// verify_answers on every answer so far, the hint ladder from --expand's
// arithmetic on the learner's own numbers, and the answers file it keeps.
#include "teach/practice.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <regex>

#include "core/error.hpp"
#include "core/expand.hpp"
#include "core/i18n.hpp"
#include "core/pipeline.hpp"
#include "render/escape.hpp"
#include "render/formula.hpp"
#include "render/render.hpp"
#include "teach/diagnose.hpp"

namespace attn {

namespace {

constexpr std::size_t kDefaultCells = 3;
constexpr int kHintRungs = 3;
constexpr int kHintPrecision = 4;

// The decimals a hint writes its numbers with: 4, or more, so that the
// smallest non-zero number of the cell's arithmetic keeps 3 significant
// digits (a gradient of 0.0086 written 0.0086 would make the learner who
// multiplies the hint's own numbers miss the answer's last decimal).
int hint_decimals(const CellExpansion& e) {
  double smallest = 0;  // the smallest non-zero finite magnitude; 0 while none
  const auto see = [&](double v) {
    if (v != 0 && std::isfinite(v) && (smallest == 0 || std::abs(v) < smallest))
      smallest = std::abs(v);
  };
  see(e.value);
  for (const double v : e.source_values) see(v);
  for (const ExprPiece& p : e.expression)
    if (p.kind == ExprPiece::Kind::number) see(p.value);
  if (!(smallest > 0)) return kHintPrecision;
  const int digits = 2 - static_cast<int>(std::floor(std::log10(smallest)));
  return std::clamp(digits, kHintPrecision, 8);
}

// A step a learner computes by hand; the copies (a head's block of columns,
// the heads side by side, a cache's rows, the layer's result) ask nothing new.
bool worth_asking(const Step& step) {
  switch (step.made.op) {
    case Op::given:
    case Op::slice:
    case Op::rows:
    case Op::concat:
    case Op::identity:
      return false;
    case Op::efficient:  // a block of the scores is a copy too
      return step.made.efficient != EfficientOp::tile_block;
    case Op::positional:
    case Op::add_positions:
    case Op::matmul:
    case Op::matmul_t:
    case Op::divide:
    case Op::mask:
    case Op::exp:
    case Op::row_sum:
    case Op::softmax:
    case Op::mean:
    case Op::max:
    case Op::add:
    case Op::row_mean:
    case Op::row_var:
    case Op::normalise:
    case Op::scale_shift:
    case Op::relu:
    case Op::gelu:
    case Op::max_abs_diff:
    case Op::rotate:
    case Op::alibi:
    case Op::row_max_abs_diff:
      return true;
    case Op::backward:  // a gradient that only copies or places its consumer's asks nothing new
      return std::any_of(step.made.vjps.begin(), step.made.vjps.end(), [](const Vjp& v) {
        return v.kind != VjpKind::same && v.kind != VjpKind::unslice &&
               v.kind != VjpKind::concat_part;
      });
  }
  return false;
}

// A step that comes out equal to its first input, cell for cell, asks
// nothing new either: Q = X·I (identity weights), scores scaled by 1
// (scale = "none"), a mask that masks nothing.
bool copies_its_input(const Trace& trace, const Step& step) {
  if (step.made.inputs.empty()) return false;
  const Step* input = trace.find(step.made.inputs.front());
  if (!input || input == &step || input->value.n_rows != step.value.n_rows ||
      input->value.n_cols != step.value.n_cols)
    return false;
  for (arma::uword k = 0; k < step.value.n_elem; ++k) {
    const double a = step.value(k), b = input->value(k);
    if (a != b && !(std::isnan(a) && std::isnan(b))) return false;
  }
  return true;
}

// Steps whose rows are queries and columns keys, where the diagonal pairs a
// token with itself and the mask decides cells.
bool attention_shaped(const Step& step) {
  switch (step.kind) {
    case StepKind::scores:
    case StepKind::scaled:
    case StepKind::masked:
    case StepKind::exp:
    case StepKind::weights:
    case StepKind::alibi_bias:
    case StepKind::alibi_biased:
    case StepKind::rope_shift_scores:
      return true;
    case StepKind::input:
    case StepKind::positional:
    case StepKind::projection:
    case StepKind::head_slice:
    case StepKind::row_sum:
    case StepKind::context:
    case StepKind::head_summary:
    case StepKind::concat:
    case StepKind::output:
    case StepKind::residual:
    case StepKind::norm:
    case StepKind::ffn:
    case StepKind::layer_output:
    case StepKind::decode_query:
    case StepKind::decode_cache:
    case StepKind::decode_scores:
    case StepKind::decode_scaled:
    case StepKind::decode_weights:
    case StepKind::decode_context:
    case StepKind::decode_check:
    case StepKind::rope_rotated:
    case StepKind::rope_shift_check:
    case StepKind::tile:
    case StepKind::tiled:
    case StepKind::linear:
    case StepKind::gradient:  // the backward pass: its own order (docs/practice.md)
    case StepKind::jacobian:
      return false;
  }
  return false;
}

// The typed answer as a TOML value: a number as written when TOML reads it
// so (1.68, -0.5, -inf), else a string holding it ("1.", "+.5"), so that its
// decimals count as typed.
std::string toml_value(const std::string& typed) {
  static const std::regex bare(R"(-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?|[+-]?(inf|nan))");
  return std::regex_match(typed, bare) ? typed : fmt::format("\"{}\"", typed);
}

// Only what a number can hold: a typed answer never reaches the TOML otherwise.
bool number_characters(std::string_view typed) {
  return !typed.empty() && typed.size() <= 40 &&
         std::all_of(typed.begin(), typed.end(), [](char c) {
           return std::isdigit(static_cast<unsigned char>(c)) ||
                  std::string_view("+-.eEinfaINFA").find(c) != std::string_view::npos;
         });
}

// "# practice: head0.scores[0, 1] · answered · hints 1 · first wrong unscaled · follow-up"
std::string record_comment(const PracticeRecord& r) {
  std::string line = fmt::format("# practice: {}[{}, {}] · {} · hints {}", r.cell.step, r.cell.row,
                                 r.cell.col, cell_state_name(r.state), r.hints);
  if (r.first_verdict)
    line += fmt::format(" · first {}{}", verdict_name(*r.first_verdict),
                        r.first_mistake.empty() ? "" : " " + r.first_mistake);
  if (r.follow_up) line += " · follow-up";
  return line + "\n";
}

std::optional<Verdict> verdict_named(std::string_view name) {
  for (Verdict v : {Verdict::ok, Verdict::carried, Verdict::rounded, Verdict::imprecise,
                    Verdict::wrong, Verdict::unreadable, Verdict::missing})
    if (verdict_name(v) == name) return v;
  return std::nullopt;
}

// The record of one `# practice:` line; nullopt for the other comments.
std::optional<PracticeRecord> parse_record(const std::string& line) {
  static const std::regex re(
      R"(# practice: (\S+)\[(\d+), (\d+)\] · (pending|answered|skipped) · hints (\d)( · first (\w+)( \w+)?)?( · follow-up)?)");
  std::smatch m;
  if (!std::regex_match(line, m, re)) return std::nullopt;
  PracticeRecord r;
  r.cell = {m[1].str(), std::stoul(m[2].str()), std::stoul(m[3].str())};
  r.state = m[4] == "pending"    ? CellState::pending
            : m[4] == "answered" ? CellState::answered
                                 : CellState::skipped;
  r.hints = std::min(std::stoi(m[5].str()), kHintRungs);
  if (m[7].matched) r.first_verdict = verdict_named(m[7].str());
  if (m[8].matched) r.first_mistake = m[8].str().substr(1);
  r.follow_up = m[9].matched;
  return r;
}

// The text after `value = ` on a line of the file, unquoted: what was typed.
std::string typed_value(std::string_view saved, int line) {
  std::size_t at = 0;
  for (int l = 1; l < line && at != std::string_view::npos; ++l) {
    at = saved.find('\n', at);
    if (at != std::string_view::npos) ++at;
  }
  if (at == std::string_view::npos) return "";
  std::string text(saved.substr(at, saved.find('\n', at) - at));
  const std::size_t eq = text.find('=');
  text = eq == std::string::npos ? "" : text.substr(eq + 1);
  std::erase_if(text, [](char c) { return c == ' ' || c == '"' || c == '\''; });
  return text;
}

// " = "-separated parts of the first line of an expansion: the cell, its
// formula, the numbers put in, ..., the value.
std::vector<std::string> equation_parts(const std::string& text) {
  const std::string first = text.substr(0, text.find('\n'));
  std::vector<std::string> parts;
  std::size_t from = 0;
  for (std::size_t at; (at = first.find(" = ", from)) != std::string::npos; from = at + 3)
    parts.push_back(first.substr(from, at - from));
  parts.push_back(first.substr(from));
  return parts;
}

std::string joined_parts(const std::vector<std::string>& parts, std::size_t count) {
  std::string out;
  for (std::size_t k = 0; k < std::min(count, parts.size()); ++k)
    out += (k ? " = " : "") + parts[k];
  return out;
}

}  // namespace

std::string_view cell_state_name(CellState state) {
  switch (state) {
    case CellState::pending:
      return "pending";
    case CellState::answered:
      return "answered";
    case CellState::skipped:
      return "skipped";
  }
  return "";
}

CellMark mark_of(const VerifyReport& report, const PracticeCell& cell) {
  CellMark mark{.asked = cell};
  for (const AnswerVerdict& v : report.answers)
    if (v.answer.step == cell.step && v.answer.where.row == cell.row &&
        v.answer.where.col == cell.col) {
      mark.cell = v.cells.at(0);
      mark.carried_from = v.carried_from;
      mark.diagnosis = v.diagnosis;
      if (!mark.diagnosis && !mark.cell.diagnoses.empty()) mark.diagnosis = mark.cell.diagnoses[0];
    }
  return mark;
}

Feedback practice_feedback(const Trace& truth, const CellMark& m) {
  const AnswerCell& c = m.cell;
  Feedback f{.verdict = c.verdict};
  switch (c.verdict) {
    case Verdict::ok:
      break;
    case Verdict::carried:
      f.rest =
          " — " + (m.carried_from.empty()
                       ? tr_format("right on your own earlier numbers (they give {})",
                                   format_by_hand(c.carried_expected.value_or(c.expected), 4))
                       : tr_format("right on your own earlier numbers: your {} was wrong at {}",
                                   m.carried_from[0].step,
                                   cell_name(truth, {m.carried_from[0].step, m.carried_from[0].row,
                                                     m.carried_from[0].col})));
      break;
    case Verdict::imprecise:
      f.rest =
          " — " + tr_format("right, but write {} decimals to show the value", c.required_decimals);
      break;
    case Verdict::unreadable:
      f.rest = " — " + c.note.shown();
      break;
    case Verdict::rounded:
    case Verdict::wrong:
    case Verdict::missing:
      f.rest = m.diagnosis ? tr_format(" — mistake: {}: {}", m.diagnosis->label,
                                       m.diagnosis->detail.shown())
                           : std::string(tr(" — none of the common mistakes gives this value"));
      if (m.diagnosis) {
        f.lines.push_back(tr_format("why: {}", tr(m.diagnosis->why)));
        f.lines.push_back(tr_format("see: attn-trace run {}", m.diagnosis->lesson));
      }
  }
  if (!c.note.format.empty()) f.lines.emplace_back(c.note.shown());
  if (m.follow_up_added)
    f.lines.push_back(
        tr_format("One more cell of {} comes next, to see whether you have it now.", m.asked.step));
  return f;
}

std::vector<SummaryLine> practice_summary_lines(const PracticeSession& s,
                                                const PracticeSummary& sum) {
  std::vector<SummaryLine> out;
  out.push_back({tr_format(
      "cells asked: {}; answered: {}, skipped: {}; right at the first try: "
      "{}; hints taken: {} (cells with hints: {})",
      sum.asked, sum.answered, sum.skipped, sum.right_first, sum.hints, sum.cells_with_hints)});
  if (!sum.mistakes.empty())
    out.push_back({std::string(tr("Mistakes named, and what to reread:"))});
  for (const PracticeSummary::Mistake& m : sum.mistakes)
    out.push_back({tr_format("{}: {} — attn-trace run {}; docs/answers-format.md, Diagnoses",
                             cell_name(s.truth(), m.cell), m.label, m.lesson),
                   true});
  const VerifyReport& r = sum.report;
  out.push_back(
      {tr_format("Your answers file as verify marks it now: {} ok · {} carried · {} "
                 "rounded · {} imprecise · {} wrong",
                 r.ok, r.carried, r.rounded, r.imprecise, r.wrong)});
  return out;
}

std::string cell_name(const Trace& trace, const PracticeCell& cell) {
  const Step& step = trace.at(cell.step);
  return fmt::format("{}[{}, {}]", cell.step, step.rows.at(cell.row), step.cols.at(cell.col));
}

PracticeSession::PracticeSession(const Lesson& lesson, Backend& backend, PracticeOptions options)
    : lesson_(lesson),
      backend_(backend),
      options_(std::move(options)),
      cells_given_(options_.cells != 0),
      truth_(run_pipeline(lesson, backend)) {
  if (options_.cells == 0) options_.cells = kDefaultCells;
  choose_steps();
  for (const PracticeCell& cell : base_plan()) records_.push_back({.cell = cell});
}

void PracticeSession::choose_steps() {
  std::vector<std::string> asked = options_.steps.empty() ? lesson_.asked : options_.steps;
  for (std::string& id : asked) {
    id = truth_.id_of(id);
    const Step& step = truth_.at(id);  // InputError listing the valid ids
    if (step.made.op == Op::given)
      throw InputError(tr_format(
          "--step {}: the lesson gives {}, there is nothing to compute; name a computed step "
          "such as {}",
          id, id, truth_.steps.back().id));
  }
  steps_.clear();
  for (const Step& step : truth_.steps)
    if (asked.empty() ? worth_asking(step) && !copies_its_input(truth_, step)
                      : std::find(asked.begin(), asked.end(), step.id) != asked.end())
      steps_.push_back(&step);
}

// The cells of `step` in the order practice picks them: a masked cell, a
// diagonal cell, then cells spread over the rows and columns.
std::vector<PracticeCell> PracticeSession::cells_in_order(const Step& step) const {
  const std::size_t n = step.value.n_rows, m = step.value.n_cols;
  std::vector<PracticeCell> cells;
  const auto add = [&](std::size_t r, std::size_t c) {
    const PracticeCell cell{step.id, r, c};
    if (std::find(cells.begin(), cells.end(), cell) == cells.end()) cells.push_back(cell);
  };
  const bool mask_shaped = truth_.mask.n_rows == n && truth_.mask.n_cols == m;
  const bool attention = attention_shaped(step) && mask_shaped;
  // The gradient of a query × key step: its masked cells are 0 (or, for
  // grad.weights, multiplied by a weight of 0), so they are not asked.
  const bool gradient = mask_shaped && step.step_id.is_gradient() &&
                        attention_shaped(truth_.at(step.step_id.forward().str()));
  if (attention && step.kind != StepKind::scores && step.kind != StepKind::scaled) {
    const arma::uvec masked = arma::find(truth_.mask);
    if (!masked.empty()) add(masked(0) % n, masked(0) / n);  // column-major index
  }
  if ((attention || gradient) && n > 1 && m > 1) add(1, 1);
  for (std::size_t k = 0; k < n * m; ++k) add(k % n, (3 * k + 1 + k / n) % m);
  for (std::size_t r = 0; r < n; ++r)
    for (std::size_t c = 0; c < m; ++c) add(r, c);
  if (gradient)
    std::erase_if(cells, [&](const PracticeCell& c) { return truth_.mask(c.row, c.col) != 0u; });
  return cells;
}

// Per step, the first options.cells cells of cells_in_order, row by row.
std::vector<PracticeCell> PracticeSession::base_plan() const {
  std::vector<PracticeCell> plan;
  for (const Step* step : steps_) {
    std::vector<PracticeCell> cells = cells_in_order(*step);
    cells.resize(std::min(cells.size(), options_.cells));
    std::sort(cells.begin(), cells.end(), [](const PracticeCell& a, const PracticeCell& b) {
      return std::tie(a.row, a.col) < std::tie(b.row, b.col);
    });
    plan.insert(plan.end(), cells.begin(), cells.end());
  }
  return plan;
}

std::string PracticeSession::answers_toml() const {
  std::string out = fmt::format(
      "# attn-trace practice: {}. The answers given so far, as `attn-trace verify {} --answers "
      "THIS_FILE` reads them;\n# the `# practice:` lines are the session's own record.\n",
      lesson_.id, lesson_.id);
  out += fmt::format("# practice: cells {}\n# practice: position {}\n", options_.cells, position_);
  for (const std::string& id : options_.steps) out += fmt::format("# practice: step {}\n", id);
  // Every record up to the last one touched: the order asked is kept.
  std::size_t last = 0;
  for (std::size_t k = 0; k < records_.size(); ++k)
    if (records_[k].state != CellState::pending || records_[k].hints > 0 || records_[k].follow_up ||
        k <= position_)
      last = k + 1;
  for (std::size_t k = 0; k < std::min(last, records_.size()); ++k) {
    const PracticeRecord& r = records_[k];
    out += "\n" + record_comment(r);
    if (r.typed.empty()) continue;
    out += fmt::format("[[answer]]\nstep = \"{}\"\ncell = [{}, {}]\nvalue = {}\n", r.cell.step,
                       r.cell.row, r.cell.col, toml_value(r.typed));
  }
  if (finished()) out += "\n# practice: finished\n";
  return out;
}

std::vector<Answer> PracticeSession::parsed_answers(
    const std::vector<PracticeRecord>& records) const {
  std::string toml;
  for (const PracticeRecord& r : records)
    if (!r.typed.empty())
      toml += fmt::format("[[answer]]\nstep = \"{}\"\ncell = [{}, {}]\nvalue = {}\n", r.cell.step,
                          r.cell.row, r.cell.col, toml_value(r.typed));
  if (toml.empty()) return {};
  return parse_answers(toml, "practice", truth_);
}

CellMark PracticeSession::answer(std::string_view typed_text) {
  std::string typed(typed_text);
  std::erase_if(typed, [](char c) { return std::isspace(static_cast<unsigned char>(c)); });
  const auto not_a_number = [&] {
    return InputError(
        tr_format("'{}' is not a number; type a number such as 1.68, 0.50 or -inf (or ? for help)",
                  typed_text));
  };
  if (!number_characters(typed)) throw not_a_number();
  std::vector<PracticeRecord> with = records_;
  with[position_].typed = typed;
  std::vector<Answer> answers;
  try {
    answers = parsed_answers(with);
  } catch (const InputError&) {
    throw not_a_number();
  }
  // At the prompt a number is typed again, not mended (answers files are: verify's notes).
  if (std::any_of(answers.begin(), answers.end(),
                  [](const Answer& a) { return !a.readings.empty(); }))
    throw not_a_number();
  report_ = verify_answers(lesson_, backend_, answers);
  PracticeRecord& r = records_[position_];
  r.typed = typed;
  r.state = CellState::answered;
  CellMark mark = mark_of(*report_, r.cell);
  if (!r.first_verdict) {
    r.first_verdict = mark.cell.verdict;
    if (mark.diagnosis) r.first_mistake = mark.diagnosis->label;
    if (mark.diagnosis && !r.follow_up) {
      add_follow_up(r.cell);
      mark.follow_up_added = true;
    }
  }
  if (mark.cell.verdict != Verdict::wrong) move_on();
  return mark;
}

const VerifyReport& PracticeSession::report() const {
  if (!report_) report_ = verify_answers(lesson_, backend_, parsed_answers(records_));
  return *report_;
}

std::vector<CellMark> PracticeSession::marks() const {
  std::vector<CellMark> out;
  for (const PracticeRecord& r : records_)
    if (r.state == CellState::answered) out.push_back(mark_of(report(), r.cell));
  return out;
}

void PracticeSession::go_to(const PracticeCell& cell) {
  const Step* step = truth_.find(cell.step);
  const bool practised =
      std::any_of(steps_.begin(), steps_.end(), [&](const Step* s) { return s->id == cell.step; });
  if (!step || !practised || cell.row >= step->value.n_rows || cell.col >= step->value.n_cols)
    throw InputError(tr_format("{}[{}, {}] is not a cell of a step practised here", cell.step,
                               cell.row, cell.col));
  const auto at = std::find_if(records_.begin(), records_.end(),
                               [&](const PracticeRecord& r) { return r.cell == cell; });
  position_ = static_cast<std::size_t>(at - records_.begin());
  if (position_ == records_.size()) records_.push_back({.cell = cell});
}

// One more cell of `cell`'s step, asked right after it: the next one practice
// would pick that is not asked yet.
void PracticeSession::add_follow_up(const PracticeCell& cell) {
  for (const PracticeCell& next : cells_in_order(truth_.at(cell.step))) {
    const bool asked = std::any_of(records_.begin(), records_.end(),
                                   [&](const PracticeRecord& r) { return r.cell == next; });
    if (asked) continue;
    records_.insert(records_.begin() + static_cast<std::ptrdiff_t>(position_) + 1,
                    {.cell = next, .follow_up = true});
    return;
  }
}

// To the first cell after the current one that is still to answer, else to
// the first such cell at all (after `back`), else the end.
void PracticeSession::move_on() {
  for (std::size_t k = position_ + 1; k < records_.size(); ++k)
    if (records_[k].state == CellState::pending) {
      position_ = k;
      return;
    }
  for (std::size_t k = 0; k < records_.size(); ++k)
    if (records_[k].state == CellState::pending && k != position_) {
      position_ = k;
      return;
    }
  position_ = records_.size();
}

void PracticeSession::skip() {
  PracticeRecord& r = records_.at(position_);
  if (r.state == CellState::pending) r.state = CellState::skipped;
  const std::size_t was = position_;
  move_on();
  // Skipping the last cell still to answer ends the session.
  if (position_ == was) position_ = records_.size();
}

bool PracticeSession::back() {
  if (position_ == 0) return false;
  --position_;
  return true;
}

Hint PracticeSession::hint() {
  PracticeRecord& r = records_.at(position_);
  r.hints = std::min(r.hints + 1, kHintRungs);
  // The learner's own numbers for the earlier steps (carried forward), the
  // true ones elsewhere, as verify carries them.
  Overrides own;
  const auto index_of = [&](const std::string& id) { return &truth_.at(id) - truth_.steps.data(); };
  for (const Answer& a : parsed_answers(records_)) {
    if (index_of(a.step) >= index_of(r.cell.step) || a.values[0][0].blank) continue;
    const Step& s = truth_.at(a.step);
    StepOverride& o =
        own.try_emplace(a.step, StepOverride{s.value, arma::umat(s.value.n_rows, s.value.n_cols,
                                                                 arma::fill::zeros)})
            .first->second;
    o.value(a.where.row, a.where.col) = a.values[0][0].value;
    o.given(a.where.row, a.where.col) = 1;
  }
  const Trace mine = own.empty() ? truth_ : run_pipeline(lesson_, backend_, own);
  const CellExpansion e = expand_cell(lesson_, mine, r.cell.step, r.cell.row, r.cell.col);
  const int decimals = hint_decimals(e);
  const std::string worked = expansion_text(e, decimals);
  const std::vector<std::string> parts = equation_parts(worked);
  const Step& step = truth_.at(r.cell.step);
  Hint h{.rung = r.hints};
  switch (r.hints) {
    case 1: {
      const StepFormula f = step_formula(lesson_, truth_, step, language());
      h.text = tr_format("hint 1 of 3, the formula: {}", f.text) + "\n" +
               // never the last part, the value itself (exp(0.8088) = 2.2452 would give it away)
               tr_format("with your numbers: {}",
                         joined_parts(parts, std::clamp<std::size_t>(parts.size() - 1, 1, 3)));
      break;
    }
    case 2: {
      std::string terms = joined_parts(parts, parts.size() > 1 ? parts.size() - 1 : 1);
      std::vector<double> values = e.term_values;
      if (e.sum) {
        for (const ProductTerm& t : e.sum->terms) values.push_back(t.product());
        if (e.sum->bias) values.push_back(*e.sum->bias);
      }
      std::string sum;  // "0.2028 − 0.2114": each term multiplied out, signs as written
      for (std::size_t i = 0; i < values.size(); ++i)
        sum += (i == 0 ? format_by_hand(values[i], decimals)
                       : (values[i] < 0 ? " − " : " + ") +
                             format_by_hand(std::abs(values[i]), decimals));
      if (values.size() > 1) terms += " = " + sum;  // one term would be the answer itself
      h.text = tr_format("hint 2 of 3, the terms: {}", terms);
      break;
    }
    default:
      h.text = tr_format("hint 3 of 3, worked out: {}", worked);
      if (!own.empty() && std::abs(e.value - step.value(r.cell.row, r.cell.col)) > 5e-5)
        h.text += "\n" + tr_format("with the true earlier values: {}",
                                   expansion_text(expand_cell(lesson_, truth_, r.cell.step,
                                                              r.cell.row, r.cell.col),
                                                  decimals));
  }
  return h;
}

bool PracticeSession::saved_finished(std::string_view saved) {
  return saved.find("\n# practice: finished\n") != std::string_view::npos;
}

namespace {

// What a saved session says: its options and its records, each answered one
// with the value typed.
struct SavedSession {
  std::vector<std::string> steps;
  std::optional<std::size_t> cells;
  std::optional<std::size_t> position;  // the cell asked when it was saved
  std::vector<PracticeRecord> records;
};

SavedSession read_saved(std::string_view saved, const std::string& origin, const Trace& truth) {
  SavedSession s;
  for (const std::string_view line : text_lines(saved)) {
    if (line.starts_with("# practice: position "))
      s.position = std::strtoul(std::string(line.substr(21)).c_str(), nullptr, 10);
    else if (line.starts_with("# practice: cells "))
      s.cells = std::strtoul(std::string(line.substr(18)).c_str(), nullptr, 10);
    else if (line.starts_with("# practice: step "))
      s.steps.emplace_back(line.substr(17));
    else if (std::optional<PracticeRecord> r = parse_record(std::string(line)))
      s.records.push_back(*r);
  }
  // A session quit before its first answer has no [[answer]] (which
  // parse_answers refuses as an empty answers file).
  const bool any = saved.find("[[answer") != std::string_view::npos ||
                   std::any_of(s.records.begin(), s.records.end(), [](const PracticeRecord& r) {
                     return r.state == CellState::answered;
                   });
  const std::vector<Answer> answers =
      any ? parse_answers(saved, origin, truth) : std::vector<Answer>{};
  const auto start_over = [&](const std::string& why) {
    return InputError(
        tr_format("{}: {}; correct the file, or start over with --restart", origin, why));
  };
  std::size_t next = 0;
  for (PracticeRecord& r : s.records) {
    const Step* step = truth.find(r.cell.step);
    if (!step || r.cell.row >= step->value.n_rows || r.cell.col >= step->value.n_cols)
      throw start_over(tr_format("the practice record of {}[{}, {}] names no cell of the lesson",
                                 r.cell.step, r.cell.row, r.cell.col));
    if (r.state != CellState::answered) continue;
    if (next >= answers.size() || answers[next].step != r.cell.step ||
        answers[next].where.kind != CellSelector::Kind::cell ||
        answers[next].where.row != r.cell.row || answers[next].where.col != r.cell.col)
      throw start_over(
          tr_format("the [[answer]] after the practice record of {}[{}, {}] is not "
                    "that cell's",
                    r.cell.step, r.cell.row, r.cell.col));
    r.typed = typed_value(saved, answers[next++].values_line);
  }
  if (next != answers.size())
    throw start_over(
        tr_format("line {}: an [[answer]] without its practice record", answers[next].line));
  return s;
}

}  // namespace

void PracticeSession::restore(std::string_view saved, const std::string& origin) {
  SavedSession s = read_saved(saved, origin, truth_);
  report_.reset();
  if (options_.steps.empty()) options_.steps = s.steps;
  if (!cells_given_ && s.cells && *s.cells > 0) options_.cells = *s.cells;
  choose_steps();
  // Answers are kept whatever is practised now; a cell still to answer only
  // when its step is among the steps practised.
  records_.clear();
  for (const PracticeRecord& r : s.records)
    if (r.state != CellState::pending ||
        std::any_of(steps_.begin(), steps_.end(),
                    [&](const Step* step) { return step->id == r.cell.step; }))
      records_.push_back(r);
  const bool kept_all = records_.size() == s.records.size();
  for (const PracticeCell& cell : base_plan())
    if (std::none_of(records_.begin(), records_.end(),
                     [&](const PracticeRecord& r) { return r.cell == cell; }))
      records_.push_back({.cell = cell});
  // Where the learner was, when that cell is still there; else the first to answer.
  position_ = records_.size();
  if (s.position && *s.position < s.records.size() && kept_all) position_ = *s.position;
  for (std::size_t k = 0; k < records_.size() && position_ == records_.size(); ++k)
    if (records_[k].state == CellState::pending) position_ = k;
}

PracticeSummary PracticeSession::summary() const {
  PracticeSummary s;
  for (const PracticeRecord& r : records_) {
    if (r.state == CellState::pending && r.hints == 0) continue;
    ++s.asked;
    if (r.state == CellState::answered) ++s.answered;
    if (r.state == CellState::skipped) ++s.skipped;
    if (r.first_verdict == Verdict::ok || r.first_verdict == Verdict::carried) ++s.right_first;
    s.hints += static_cast<std::size_t>(r.hints);
    if (r.hints > 0) ++s.cells_with_hints;
    if (r.first_mistake.empty()) continue;
    const CommonMistake* m = find_common_mistake(r.first_mistake);
    s.mistakes.push_back({r.cell, r.first_mistake, m ? std::string(m->lesson) : ""});
  }
  s.report = report();
  return s;
}

}  // namespace attn
