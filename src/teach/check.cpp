// Checking a lesson against its golden file and its claims, and the report.
#include "teach/check.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <string>
#include <vector>

#include "core/i18n.hpp"
#include "core/lesson_library.hpp"
#include "core/number_text.hpp"
#include "core/pipeline.hpp"
#include "render/json_writer.hpp"
#include "render/numbers.hpp"

namespace attn {

namespace {

const char* status_name(GoldenStatus s) {
  switch (s) {
    case GoldenStatus::pass:
      return "pass";
    case GoldenStatus::fail:
      return "fail";
    case GoldenStatus::missing:
      return "missing";
  }
  return "missing";
}

// A claim's place: "K[1,:] (bank)", "head0.scores[0,1] (river, bank)", "head0.weights".
std::string claim_place(const Trace& trace, const Claim& claim) {
  const Step& step = trace.at(claim.step);
  const std::size_t r = claim.where.row, c = claim.where.col;
  switch (claim.where.kind) {
    case CellSelector::Kind::cell:
      return tr_format("{}[{},{}] ({}, {})", step.id, r, c, step.rows.at(r), step.cols.at(c));
    case CellSelector::Kind::row:
      return tr_format("{}[{},:] ({})", step.id, r, step.rows.at(r));
    case CellSelector::Kind::matrix:
      return step.id;
  }
  return step.id;
}

// The cells of a claim as the claim was written: a number, a row or a matrix.
template <typename CellText>
std::string claim_values(const ClaimVerdict& v, CellText text, const char* open,
                         const char* close) {
  if (v.claim.where.kind == CellSelector::Kind::cell) return text(v.cells.front());
  std::string out = open;
  const std::size_t width = v.claim.values.front().size();
  for (std::size_t i = 0; i < v.cells.size(); ++i) {
    const bool row_start = i % width == 0, row_end = (i + 1) % width == 0;
    const bool matrix = v.claim.where.kind == CellSelector::Kind::matrix;
    if (matrix && row_start) out += fmt::format("{}{}", i ? ", " : "", open);
    out += fmt::format("{}{}", row_start ? "" : ", ", text(v.cells[i]));
    if (matrix && row_end) out += close;
  }
  return out + close;
}

std::string stated_text(const ClaimCell& c) {
  return format_fixed(c.stated.value, c.stated.decimals);
}
// The computed value to the decimals the claim was written with, or more when
// the claim sets a finer tolerance (1e-6 shows 6 decimals).
std::string computed_text(const ClaimCell& c) {
  const int from_tolerance =
      c.tolerance > 0 ? static_cast<int>(std::ceil(-std::log10(2.0 * c.tolerance))) : 0;
  return format_fixed(c.computed, std::max(c.stated.decimals, from_tolerance));
}
// A number already written as text, as JSON: non-finite values as strings.
std::string quoted(std::string text) {
  return text == "nan" || text == "inf" || text == "-inf" ? json_string(text) : text;
}

}  // namespace

void ClaimCounts::add(ClaimStatus status, bool is_derived) {
  ++checked;
  derived += is_derived;
  switch (status) {
    case ClaimStatus::agrees:
      ++agree;
      derived_agree += is_derived;
      break;
    case ClaimStatus::carried:
      ++carried;
      derived_carried += is_derived;
      break;
    case ClaimStatus::disagrees:
      ++disagree;
      break;
  }
}

ClaimCounts count_claims(const std::vector<ClaimVerdict>& claims) {
  ClaimCounts n;
  for (const ClaimVerdict& v : claims) n.add(v.status(), v.claim.derived);
  return n;
}

LessonCheck check_lesson(Lesson lesson, const std::string& golden_path, double tolerance,
                         Backend& backend) {
  LessonCheck out{std::move(lesson), {}, golden_path, GoldenStatus::missing, {}, {}, {}};
  out.trace = run_pipeline(out.lesson, backend);
  if (const std::optional<Golden> golden = read_golden_file(golden_path)) {
    out.mismatches = compare_with_golden(*golden, out.trace, tolerance);
    out.status = out.mismatches.empty() ? GoldenStatus::pass : GoldenStatus::fail;
  }
  out.claims = check_claims(out.lesson, out.trace);
  out.quantities = check_quantity_claims(out.lesson, out.trace);
  return out;
}

namespace {

// The golden file's line (and its mismatches), no line wider than `width`.
std::string golden_text(const LessonCheck& c, double tolerance, std::size_t width) {
  const auto line = [width](const std::string& text) {
    return wrap_text(text, width, "  ", "    ");
  };
  switch (c.status) {
    case GoldenStatus::pass:
      return line(tr_format("golden: pass — all {} steps match {} within {:g}",
                            c.trace.steps.size(), c.golden_path, tolerance));
    case GoldenStatus::missing:
      return line(tr_format(
          "golden: MISSING — no {}; write it with `attn-trace golden {}` and review it",
          c.golden_path, c.lesson.origin.ends_with("(embedded)") ? c.lesson.id : c.lesson.origin));
    case GoldenStatus::fail:
      break;
  }
  std::string out = line(
      tr_format("golden: FAIL — {} step(s) differ from {}", c.mismatches.size(), c.golden_path));
  for (const GoldenMismatch& m : c.mismatches)
    out += wrap_text(m.cell ? tr_format("{} [{}, {}]: golden {}, computed {}: {}", m.step,
                                        m.cell->first, m.cell->second, format_exact(m.golden),
                                        format_exact(m.computed), m.reason.shown())
                            : fmt::format("{}: {}", m.step, m.reason.shown()),
                     width, "    ", "      ");
  return out;
}

// The claims' counts line: none, or how many agree, are carried or slipped.
std::string claim_counts_text(const LessonCheck& c, std::size_t width) {
  const ClaimCounts n = count_claims(c.claims);
  // A lesson whose claims are all about shapes, costs or samples says so below.
  if (c.claims.empty() && c.quantities.empty())
    return wrap_text(tr("claims: none (the source states no value these inputs determine)"), width,
                     "  ", "    ");
  if (c.claims.empty()) return "";
  const std::string derived =
      n.derived ? tr_format("; {} of them derived by the lesson itself", n.derived) : "";
  return wrap_text(tr_format("claims: {} checked, {} agree, {} carried (right on the document's "
                             "own numbers), {} with a real slip",
                             n.checked, n.agree, n.carried, n.disagree) +
                       derived,
                   width, "  ", "    ");
}

// A claim's status for people: "agrees", "carried", "DISAGREES".
std::string_view claim_status_text(ClaimStatus status) {
  switch (status) {
    case ClaimStatus::agrees:
      return tr("agrees");
    case ClaimStatus::carried:
      return tr("carried");
    case ClaimStatus::disagrees:
      return tr("DISAGREES");
  }
  return tr("DISAGREES");
}

// Each claim: its status, place and label, stated and computed values; under
// it, each cell that does not agree with why. Continuation lines hang under
// the place.
std::string claims_text(const LessonCheck& c, std::size_t width) {
  std::size_t column = 0;
  for (ClaimStatus s : {ClaimStatus::agrees, ClaimStatus::carried, ClaimStatus::disagrees})
    column = std::max(column, display_width(std::string(claim_status_text(s))));
  const std::string under(4 + column + 2, ' ');
  const std::string_view carried = tr("carried"), slip = tr("real slip");
  const std::size_t cell_column =
      std::max(display_width(std::string(carried)), display_width(std::string(slip)));
  std::string out;
  for (const ClaimVerdict& v : c.claims) {
    const std::string status = pad_right(std::string(claim_status_text(v.status())), column);
    const std::string stated = claim_values(v, stated_text, "[", "]");
    const std::string computed = claim_values(v, computed_text, "[", "]");
    const std::string place = claim_place(c.trace, v.claim);
    const std::string& says = v.claim.says_for(language());
    out += wrap_text(
        v.claim.derived
            ? tr_format("{}  {}  \"{}\" (the lesson's own number): stated {}, computed {}",
                        status, place, says, stated, computed)
            : tr_format("{}  {}  \"{}\": stated {}, computed {}", status, place, says, stated,
                        computed),
        width, "    ", under);
    for (const ClaimCell& cell : v.cells)
      if (!cell.agrees())
        out += wrap_text(
            fmt::format("{}  {}",
                        pad_right(std::string(cell.status == CellStatus::slip ? slip : carried),
                                  cell_column),
                        cell.explanation_in(language())),
            width, under, under + "  ");
  }
  return out;
}

}  // namespace

std::string check_report_text(const LessonCheck& c, double tolerance, std::size_t width) {
  std::string out = wrap_text(fmt::format("{} — {}", c.lesson.id, c.lesson.title_for(language())),
                              width, "", "  ");
  out += wrap_text(
      tr_format("source: {}", c.lesson.source.empty() ? std::string(tr("(none given)"))
                                                      : source_text(c.lesson.source, language())),
      width, "  ", "    ");
  out += golden_text(c, tolerance, width);
  out += claim_counts_text(c, width);
  out += claims_text(c, width);
  out += quantity_claims_text(c.quantities, width);
  return out;
}

std::string check_report_json(const LessonCheck& c) {
  std::string mismatches;
  for (const GoldenMismatch& m : c.mismatches)
    mismatches += fmt::format(
        "{}{{\"step\": {}, \"cell\": {}, \"golden\": {}, \"computed\": {}, \"reason\": {}}}",
        mismatches.empty() ? "" : ", ", json_string(m.step),
        m.cell ? fmt::format("[{}, {}]", m.cell->first, m.cell->second) : "null",
        m.cell ? json_number(m.golden) : "null", m.cell ? json_number(m.computed) : "null",
        json_string(m.reason.in(Language::en)));
  std::string claims;
  for (const ClaimVerdict& v : c.claims) {
    std::string where;
    if (v.claim.where.kind == CellSelector::Kind::cell)
      where = fmt::format("\"cell\": [{}, {}], ", v.claim.where.row, v.claim.where.col);
    else if (v.claim.where.kind == CellSelector::Kind::row)
      where = fmt::format("\"row\": {}, ", v.claim.where.row);
    const auto stated = [](const ClaimCell& cell) { return quoted(stated_text(cell)); };
    const auto computed = [](const ClaimCell& cell) { return quoted(computed_text(cell)); };
    const auto exact = [](const ClaimCell& cell) { return json_number(cell.computed); };
    const auto cell_status = [](const ClaimCell& cell) {
      return json_string(status_name(cell.status));
    };
    const auto own = [](const ClaimCell& cell) {
      return cell.own ? json_number(cell.own->value) : std::string("null");
    };
    claims += fmt::format(
        "{}\n    {{\"step\": {}, {}\"says\": {}, \"derived\": {}, \"line\": {}, \"stated\": {}, \"computed\": {}, "
        "\"computed_exact\": {}, \"status\": \"{}\", \"cell_status\": {}, \"own\": {}, "
        "\"explanation\": {}}}",
        claims.empty() ? "" : ",", json_string(v.claim.step), where, json_string(v.claim.says),
        v.claim.derived ? "true" : "false", v.claim.line, claim_values(v, stated, "[", "]"), claim_values(v, computed, "[", "]"),
        claim_values(v, exact, "[", "]"), status_name(v.status()),
        claim_values(v, cell_status, "[", "]"), claim_values(v, own, "[", "]"),
        v.agrees() ? "null" : json_string(v.explanation()));
  }
  std::string quantities;
  for (const QuantityVerdict& v : c.quantities)
    quantities += fmt::format("{}\n    {}", quantities.empty() ? "" : ",", quantity_claim_json(v));
  return fmt::format(
      "{{\"lesson\": {}, \"title\": {}, \"source\": {},\n  \"golden\": {{\"status\": \"{}\", "
      "\"file\": {}, \"mismatches\": [{}]}},\n  \"claims\": [{}{}],\n  \"quantity_claims\": "
      "[{}{}]}}",
      json_string(c.lesson.id), json_string(c.lesson.title), json_string(c.lesson.source),
      status_name(c.status), json_string(c.golden_path), mismatches, claims,
      claims.empty() ? "" : "\n  ", quantities, quantities.empty() ? "" : "\n  ");
}

}  // namespace attn
