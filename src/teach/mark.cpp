// Marking a class: each student folder verified and scored, then the
// gradebook, the feedback files and the class summary written from the marks.
#include "teach/mark.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <set>
#include <utility>

#include "backend/backend.hpp"
#include "core/atomic_file.hpp"
#include "core/error.hpp"
#include "core/i18n.hpp"
#include "core/parallel.hpp"
#include "core/pipeline.hpp"
#include "core/toml_read.hpp"
#include "render/escape.hpp"
#include "render/json_writer.hpp"
#include "render/numbers.hpp"
#include "teach/answers.hpp"
#include "teach/exercise.hpp"
#include "teach/fingerprint.hpp"
#include "teach/names.hpp"

namespace attn {

namespace fs = std::filesystem;

namespace {

constexpr const char* kLessonFile = "lesson.toml";
constexpr const char* kAnswersFile = "answers.toml";
constexpr const char* kRosterFile = "roster.csv";
constexpr const char* kUnexplained = N_("none of the common mistakes");

// Points as people write them: "2", "1.5", "0.33" (two decimals at most).
std::string points_text(double points) {
  std::string s = fmt::format("{:.2f}", points);
  while (s.back() == '0') s.pop_back();
  if (s.back() == '.') s.pop_back();
  return s == "-0" ? "0" : s;
}

// "head0.scores[1,2] (cat, sat)", for Markdown (the tokens escaped).
std::string cell_text(const Trace& truth, const std::string& step, std::size_t row,
                      std::size_t col) {
  const Step& s = truth.at(step);
  return fmt::format("{}[{},{}] ({}, {})", step, row, col, md_text(s.rows.at(row)),
                     md_text(s.cols.at(col)));
}

// The diagnosis that names the mistake of a wrong cell: the cell's own first
// one, else the one its whole answer has.
const Diagnosis* cell_diagnosis(const AnswerVerdict& a, const AnswerCell& c) {
  if (!c.diagnoses.empty()) return &c.diagnoses.front();
  return a.diagnosis ? &*a.diagnosis : nullptr;
}

// The answer and the cell of `report` at the first wrong value, if it has one.
std::pair<const AnswerVerdict*, const AnswerCell*> first_wrong_cell(const VerifyReport& report) {
  if (!report.first_wrong) return {nullptr, nullptr};
  const CarriedSource& w = *report.first_wrong;
  for (const AnswerVerdict& a : report.answers)
    for (const AnswerCell& c : a.cells)
      if (a.answer.step == w.step && c.row == w.row && c.col == w.col &&
          c.verdict == Verdict::wrong)
        return {&a, &c};
  return {nullptr, nullptr};
}

// Every mistake behind a value not right: the diagnosis labels of wrong and
// rounded cells, kUnexplained for a wrong cell no common mistake explains.
std::set<std::string> mistakes_made(const VerifyReport& report) {
  std::set<std::string> out;
  for (const AnswerVerdict& a : report.answers)
    for (const AnswerCell& c : a.cells)
      if (c.verdict == Verdict::wrong || c.verdict == Verdict::rounded) {
        const Diagnosis* d = cell_diagnosis(a, c);
        out.insert(d ? d->label : std::string(kUnexplained));
      }
  return out;
}

// The first value rounded too early, and why, for the student.
std::string rounding_sentence(const VerifyReport& report, const Trace& truth) {
  for (const AnswerVerdict& a : report.answers)
    for (const AnswerCell& c : a.cells)
      if (c.verdict == Verdict::rounded && !c.diagnoses.empty())
        return tr_format(
            "- **Rounded too early:** {}: you wrote {}; the value is {} — {}. Keep at least "
            "5 decimals while you work and round only what you write.\n",
            cell_text(truth, a.answer.step, c.row, c.col),
            format_fixed(c.given.value, c.given.decimals),
            format_fixed(c.expected, std::max(c.given.decimals, 1) + 1),
            c.diagnoses.front().detail.shown());
  return "";
}

// The counts of a step's cells as a phrase: "6 right, 3 right on your own numbers".
std::string cells_phrase(const StepMark& s) {
  const std::pair<std::size_t, const char*> parts[] = {
      {s.ok, N_("{} right")},
      {s.carried, N_("{} right on your own earlier numbers")},
      {s.rounded, N_("{} off only by rounding too early")},
      {s.imprecise, N_("{} right but with too few decimals")},
      {s.wrong, N_("{} wrong")},
      {s.blank, N_("{} not answered")}};
  std::vector<std::string> out;
  for (const auto& [count, words] : parts)
    if (count) out.push_back(tr_format(words, count));
  return fmt::format("{}", fmt::join(out, tr(", ")));
}

// The asked steps' marks: each cell earns its share of the step's points times
// the credit of its verdict; a cell no answer gives earns nothing (blank).
std::vector<StepMark> step_marks(const Lesson& lesson, const Trace& truth,
                                 const VerifyReport* report, const MarkScheme& scheme) {
  std::vector<std::string> asked;
  for (const std::string& name : lesson.asked) asked.push_back(truth.id_of(name));
  if (asked.empty() && report)  // not an exercise: the steps answered
    for (const AnswerVerdict& a : report->answers)
      if (std::find(asked.begin(), asked.end(), a.answer.step) == asked.end())
        asked.push_back(a.answer.step);
  std::vector<StepMark> out;
  for (const std::string& id : asked) {
    StepMark s;
    s.step = id;
    s.out_of = scheme.points_for(truth, id);
    const arma::mat& value = truth.at(id).value;
    // Each cell once, with its best verdict if it was answered twice.
    std::map<std::pair<std::size_t, std::size_t>, Verdict> cells;
    if (report)
      for (const AnswerVerdict& a : report->answers)
        if (a.answer.step == id)
          for (const AnswerCell& c : a.cells) {
            const auto [it, fresh] = cells.try_emplace({c.row, c.col}, c.verdict);
            if (!fresh) it->second = std::min(it->second, c.verdict);
          }
    double earned = 0;
    for (std::size_t r = 0; r < value.n_rows; ++r)
      for (std::size_t c = 0; c < value.n_cols; ++c) {
        const auto it = cells.find({r, c});
        const Verdict v = it == cells.end() ? Verdict::missing : it->second;
        earned += scheme.credit(v);
        s.ok += v == Verdict::ok;
        s.carried += v == Verdict::carried;
        s.rounded += v == Verdict::rounded;
        s.imprecise += v == Verdict::imprecise;
        s.wrong += v == Verdict::wrong;
        s.blank += v == Verdict::missing;
      }
    s.points = s.out_of * earned / static_cast<double>(value.n_elem);
    out.push_back(s);
  }
  return out;
}

// The keys of the scheme's points that name one of `steps`.
std::set<std::string> keys_used(const MarkScheme& scheme, const Trace& truth,
                                const std::vector<StepMark>& steps) {
  std::set<std::string> out;
  for (const auto& [name, value] : scheme.points)
    for (const StepMark& s : steps)
      if (truth.id_of(name) == s.step) out.insert(name);
  return out;
}

// `folder` is the student's folder as the instructor names it (class folder included).
std::string feedback_markdown(const StudentMark& m, const Trace& truth, const VerifyReport& report,
                              const std::string& folder) {
  std::string out = fmt::format(
      "# {}\n\n{}\n\n| {} | {} | {} |\n|---|---:|---|\n", tr_format("Feedback: {}", md_text(m.name)),
      tr_format("Variant {} · marked from {}/{} · **{} of {} points**", m.variant, folder,
                kAnswersFile, points_text(m.total), points_text(m.out_of)),
      tr("Step"), tr("Points"), tr("Your values"));
  for (const StepMark& s : m.steps)
    out += fmt::format("| {} | {} | {} |\n", s.step,
                       tr_format("{} of {}", points_text(s.points), points_text(s.out_of)),
                       cells_phrase(s));
  if (const auto [a, c] = first_wrong_cell(report); c) {
    out += "\n" + tr_format("- **First mistake:** {}: you wrote {}; the value is {}.\n",
                            cell_text(truth, a->answer.step, c->row, c->col),
                            format_fixed(c->given.value, c->given.decimals),
                            format_fixed(c->expected, std::max(c->given.decimals, 1) + 1));
    if (const Diagnosis* d = cell_diagnosis(*a, *c)) {
      out += tr_format("- **What went wrong:** {} — {}\n", tr(d->label), d->detail.shown());
      if (!d->why.empty())
        out += tr_format("- **Why:** {0} See lesson {1} (`attn-trace run {1}`).\n", tr(d->why),
                         d->lesson);
    } else {
      out += tr(
          "- **What went wrong:** none of the common mistakes gives this value; redo the "
          "cell's arithmetic step by step.\n");
    }
  } else if (m.total >= m.out_of) {
    out += "\n" + std::string(tr("Every asked value is right.\n"));
  }
  const std::string rounding = rounding_sentence(report, truth);
  if (!rounding.empty()) out += (report.first_wrong ? "" : "\n") + rounding;
  std::vector<std::string> carried;
  for (const StepMark& s : m.steps)
    if (s.carried) carried.push_back(s.step);
  const std::string steps = fmt::format("{}", fmt::join(carried, tr(" and ")));
  if (!carried.empty())
    out += "\n" + (carried.size() == 1
                       ? tr_format("**Carried credit:** your {} is right on your own earlier "
                                   "numbers, so a mistake is counted once, where it was made.\n",
                                   steps)
                       : tr_format("**Carried credit:** your {} are right on your own earlier "
                                   "numbers, so a mistake is counted once, where it was made.\n",
                                   steps));
  out += "\n" + tr_format("Every value, cell by cell: `attn-trace verify {0}/{1} --answers {0}/{2}`\n",
                          folder, kLessonFile, kAnswersFile);
  return out;
}

std::string csv_row(const std::vector<std::string>& fields) {
  std::string out;
  for (std::size_t i = 0; i < fields.size(); ++i) out += (i ? "," : "") + csv_field(fields[i]);
  return out + "\r\n";
}

// feedback.md of a student who could not be marked: why.
std::string not_marked_feedback(const StudentMark& m) {
  return fmt::format("# {}\n\n{}\n", tr_format("Feedback: {}", md_text(m.name)),
                     tr_format("Not marked: {}", md_text(m.problem)));
}

// Every asked step of the class, in order of first appearance, with its points.
std::vector<std::pair<std::string, double>> class_steps(const std::vector<StudentMark>& marks) {
  std::vector<std::pair<std::string, double>> steps;
  for (const StudentMark& m : marks)
    for (const StepMark& s : m.steps)
      if (std::none_of(steps.begin(), steps.end(),
                       [&](const auto& x) { return x.first == s.step; }))
        steps.emplace_back(s.step, s.out_of);
  return steps;
}

// "# Class summary", then how many students, how many marked, and their mean.
std::string class_counts(const std::vector<StudentMark>& marks) {
  std::size_t marked = 0;
  double total = 0, out_of = 0;
  for (const StudentMark& m : marks)
    if (m.problem.empty()) {
      ++marked;
      total += m.total;
      out_of = std::max(out_of, m.out_of);
    }
  const auto tampered = static_cast<std::size_t>(
      std::count_if(marks.begin(), marks.end(), [](const StudentMark& m) { return m.tampered; }));
  std::string out = fmt::format("# {}\n\n", tr("Class summary"));
  out += marks.size() == 1 ? tr_format("{} student · {} marked", marks.size(), marked)
                           : tr_format("{} students · {} marked", marks.size(), marked);
  if (marked + tampered < marks.size())
    out += tr_format(" · {} not marked (below)", marks.size() - marked - tampered);
  if (tampered) out += tr_format(" · {} tampered (below)", tampered);
  if (marked)
    out += tr_format(" · mean {} of {} points", points_text(total / static_cast<double>(marked)),
                     points_text(out_of));
  return out + "\n";
}

// Every mistake, with the students who made it anywhere, and the lesson that
// shows it (common_mistakes()): what to re-teach.
std::string reteach_section(const std::vector<StudentMark>& marks) {
  std::map<std::string, std::vector<std::string>> by_mistake;
  for (const StudentMark& m : marks)
    for (const std::string& label : m.mistakes) by_mistake[label].push_back(m.name);
  std::vector<std::pair<std::string, std::vector<std::string>>> ranked(by_mistake.begin(),
                                                                       by_mistake.end());
  std::stable_sort(ranked.begin(), ranked.end(), [](const auto& x, const auto& y) {
    if (x.first == kUnexplained || y.first == kUnexplained) return y.first == kUnexplained;
    return x.second.size() > y.second.size();
  });
  std::string out = fmt::format(
      "\n## {}\n\n{}\n\n", tr("What to re-teach"),
      tr("Each mistake behind a wrong (or rounded) value, and who made it."));
  if (ranked.empty()) return out + std::string(tr("No wrong value in the answers given.\n"));
  out += fmt::format("| {} | {} | {} | {} |\n|---|---:|---|---|\n", tr("Mistake"), tr("Students"),
                     tr("Who"), tr("See lesson"));
  for (const auto& [label, names] : ranked) {
    const CommonMistake* mistake = find_common_mistake(label);
    out += fmt::format("| {} | {} | {} | {} |\n", tr(label), names.size(),
                       md_text(fmt::format("{}", fmt::join(names, tr(", ")))),
                       mistake ? mistake->lesson : "");
  }
  return out;
}

// One row of the steps table: `step` across the students marked.
std::string step_row(const std::vector<StudentMark>& marks, const std::string& step) {
  double sum = 0, of = 0;
  std::size_t n = 0, full = 0, wrong = 0, blank = 0;
  for (const StudentMark& m : marks) {
    if (!m.problem.empty()) continue;
    for (const StepMark& s : m.steps) {
      if (s.step != step) continue;
      ++n;
      sum += s.points;
      of = s.out_of;
      full += s.points >= s.out_of;
      wrong += s.wrong > 0;
      blank += s.blank > 0;
    }
  }
  return fmt::format("| {} | {} | {} | {} | {} |\n", step,
                     tr_format("{} of {}", n ? points_text(sum / static_cast<double>(n)) : "-",
                               points_text(of)),
                     full, wrong, blank);
}

// Each step across the class.
std::string steps_section(const std::vector<StudentMark>& marks) {
  std::string out = fmt::format(
      "\n## {}\n\n| {} | {} | {} | {} | {} |\n|---|---:|---:|---:|---:|\n", tr("Steps"), tr("Step"),
      tr("Mean points"), tr("Full marks"), tr("Some wrong"), tr("Some blank"));
  for (const auto& [step, points] : class_steps(marks)) out += step_row(marks, step);
  return out;
}

// The students who could not be marked, and why; nothing when every one was.
std::string not_marked_section(const std::vector<StudentMark>& marks) {
  const auto listed = [](const StudentMark& m) { return !m.problem.empty() && !m.tampered; };
  if (std::none_of(marks.begin(), marks.end(), listed)) return "";
  std::string out = fmt::format("\n## {}\n\n| {} | {} | {} |\n|---|---|---|\n", tr("Not marked"),
                                tr("Student"), tr("Folder"), tr("Problem"));
  for (const StudentMark& m : marks)
    if (listed(m))
      out +=
          fmt::format("| {} | {} | {} |\n", md_text(m.name), md_text(m.folder), md_text(m.problem));
  return out;
}

// The students a class summary lists apart: the tampered folders (not marked)
// and the students whose lesson.toml was found in another folder too.
std::string tampered_section(const std::vector<StudentMark>& marks) {
  std::string rows;
  for (const StudentMark& m : marks)
    if (m.tampered)
      rows +=
          fmt::format("| {} | {} | {} |\n", md_text(m.name), md_text(m.folder), md_text(m.problem));
  for (const StudentMark& m : marks)
    if (!m.warning.empty())
      rows += fmt::format("| {} | {} | {} |\n", md_text(m.name), md_text(m.folder),
                          md_text(tr_format("marked; {}", m.warning)));
  if (rows.empty()) return "";
  return fmt::format(
      "\n## {}\n\n{}\n\n| {} | {} | {} |\n|---|---|---|\n{}", tr("Tampered"),
      tr("Folders whose lesson.toml is not the one exercise wrote for the student roster.csv "
         "gives the folder to (edited, or copied from another folder): not marked. Students can "
         "change the files of their folder; roster.csv is yours."),
      tr("Student"), tr("Folder"), tr("What was found"), rows);
}

// The students marked whose lesson.toml had no fingerprint to be checked against.
std::string unchecked_section(const std::vector<StudentMark>& marks) {
  std::vector<std::string> names;
  for (const StudentMark& m : marks)
    if (m.problem.empty() && !m.fingerprint_checked) names.push_back(m.name);
  if (names.empty()) return "";
  const std::string who = md_text(fmt::format("{}", fmt::join(names, tr(", "))));
  return fmt::format(
      "\n## {}\n\n{}\n", tr("Not checked"),
      names.size() == 1
          ? tr_format("The {} of {} marked student could not be checked for edits: {} has no "
                      "fingerprint for it (an older attn-trace wrote it, or there is none): {}. "
                      "Run the command at the top of index.md again with --force to record the "
                      "fingerprints (filled-in {} files are kept).",
                      kLessonFile, names.size(), kRosterFile, who, kAnswersFile)
          : tr_format("The {} of {} marked students could not be checked for edits: {} has no "
                      "fingerprint for them (an older attn-trace wrote it, or there is none): {}. "
                      "Run the command at the top of index.md again with --force to record the "
                      "fingerprints (filled-in {} files are kept).",
                      kLessonFile, names.size(), kRosterFile, who, kAnswersFile));
}

// At most `limit` characters of text a student or a user wrote, for a message.
std::string shown(std::string_view text, std::size_t limit = 80) {
  if (code_point_count(text) <= limit) return std::string(text);
  std::size_t at = 0;
  for (std::size_t count = 0; count < limit; ++count) {
    ++at;  // past a lead byte, then its continuation bytes
    while (at < text.size() && (static_cast<unsigned char>(text[at]) & 0xC0) == 0x80) ++at;
  }
  return std::string(text.substr(0, at)) + "…";
}

bool same_name(std::string_view a, std::string_view b) {
  if (a == b) return true;
  try {
    return nfc(a) == nfc(b);
  } catch (const InputError&) {
    return false;
  }
}

// How a teacher puts a tampered lesson.toml right.
constexpr const char* kRestoreLesson = N_(
    "put back the lesson.toml exercise wrote (the command at the top of index.md, run again "
    "with --force, writes it and keeps filled-in answers.toml files), then mark again");

// What keeps `folder` from being the name of one sub-folder of the class
// folder, as a phrase ("is a path, ..."); "" when nothing does.
std::string folder_flaw(std::string_view folder) {
  if (folder.empty()) return std::string(tr("is empty"));
  if (folder == "." || folder == "..") return std::string(tr("leaves the class folder"));
  if (folder.find_first_of("/\\") != std::string_view::npos)
    return std::string(tr("is a path, not the name of one folder"));
  if (folder.front() == '.') return std::string(tr("starts with '.' (a hidden folder)"));
  for (char c : folder)
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f)
      return std::string(tr("has a control character"));
  if (invalid_utf8_offset(folder) != std::string_view::npos) return std::string(tr("is not UTF-8"));
  if (folder.size() > kMaxRosterFolderBytes)
    return tr_format("is longer than {} bytes", kMaxRosterFolderBytes);
  return "";
}

// Folders and NFC names already on roster.csv, with their lines.
struct RosterSeen {
  std::map<std::string, int> folders, names;
};

// `where` is "roster.csv:LINE".
void check_roster_name(const RosterEntry& e, const std::string& where, RosterSeen& seen) {
  if (e.name.empty())
    throw InputError(tr_format(
        "{}: no name for folder \"{}\"; write the student's name as exercise wrote it, or "
        "remove the row",
        where, shown(e.folder)));
  if (invalid_utf8_offset(e.name) != std::string_view::npos)
    throw InputError(
        tr_format("{}: the name is not UTF-8; save roster.csv as UTF-8 (or put back the one "
                    "exercise wrote)",
                    where));
  if (const std::size_t length = code_point_count(e.name); length > kMaxNameChars)
    throw InputError(tr_format(
        "{}: the name is {} characters long; a name is at most {} characters: write the "
        "student's name only",
        where, length, kMaxNameChars));
  if (const auto [it, fresh] = seen.names.emplace(nfc(e.name), e.line); !fresh)
    throw InputError(
        tr_format("{}: \"{}\" is already on line {}; each student is on one row: remove one "
                    "of the rows",
                    where, e.name, it->second));
}

// A row of roster.csv as exercise writes it, or an InputError naming its line and the fix:
// mark writes only into the folders roster.csv names, so each must be inside the class folder.
void check_roster_row(const RosterEntry& e, const std::string& where, bool has_names,
                      const fs::path& class_dir, RosterSeen& seen) {
  if (has_names) check_roster_name(e, where, seen);
  if (const std::string flaw = folder_flaw(e.folder); !flaw.empty())
    throw InputError(tr_format(
        "{}: folder \"{}\" {}; a row names its student's own sub-folder of {} by that "
        "folder's name alone, as exercise wrote it{}: correct the row or remove it",
        where, shown(e.folder), flaw, class_dir.string(),
        has_names ? tr_format(" (\"{}\" for {})", student_folder(e.name), e.name) : ""));
  if (const auto [it, fresh] = seen.folders.emplace(e.folder, e.line); !fresh)
    throw InputError(
        tr_format("{}: folder \"{}\" is already on line {}; each student has a folder of "
                    "their own: remove one of the rows",
                    where, e.folder, it->second));
  if (!e.fingerprint.empty() && !is_fingerprint(e.fingerprint))
    throw InputError(tr_format(
        "{}: fingerprint \"{}\" is not one exercise writes (sha256: and 64 hex digits); put "
        "back the roster.csv exercise wrote (the command at the top of index.md, run again "
        "with --force, writes it)",
        where, shown(e.fingerprint)));
}

// The rows of the class's roster.csv (`roster`), each checked.
std::vector<RosterEntry> roster_entries(const fs::path& class_dir, const std::string& roster) {
  std::vector<int> lines;
  const std::vector<std::vector<std::string>> rows = csv_rows(read_file(roster), &lines);
  const auto column = [&](std::string_view name) -> std::optional<std::size_t> {
    if (rows.empty()) return std::nullopt;
    const auto it = std::find(rows[0].begin(), rows[0].end(), name);
    if (it == rows[0].end()) return std::nullopt;
    return static_cast<std::size_t>(it - rows[0].begin());
  };
  const std::optional<std::size_t> folder_at = column("folder"), name_at = column("name"),
                                   variant_at = column("variant"),
                                   fingerprint_at = column("fingerprint");
  if (!folder_at)
    throw InputError(
        tr_format("{}: no 'folder' column in its first line; it should be the "
                    "roster.csv that attn-trace exercise wrote (name,folder,variant,fingerprint)",
                    roster));
  RosterSeen seen;
  std::vector<RosterEntry> entries;
  for (std::size_t r = 1; r < rows.size(); ++r) {
    const std::vector<std::string>& row = rows[r];
    if (std::all_of(row.begin(), row.end(), [](const std::string& f) { return f.empty(); }))
      continue;  // an empty line, or one of commas only
    const auto cell = [&](std::optional<std::size_t> at) {
      return at && *at < row.size() ? row[*at] : std::string();
    };
    RosterEntry e{cell(folder_at),      {}, cell(name_at), cell(variant_at),
                  cell(fingerprint_at), lines[r],      RosterStatus::listed};
    check_roster_row(e, fmt::format("{}:{}", roster, lines[r]), name_at.has_value(), class_dir,
                     seen);
    entries.push_back(std::move(e));
  }
  return entries;
}

// Why the lesson.toml at `path` (fingerprint and student in `m`) is not what
// the roster says of its folder; "" when nothing is wrong (or there is no
// roster to check against). Sets m.tampered for a listed folder's lesson.
std::string roster_problem(const RosterEntry& entry, StudentMark& m, const Lesson* lesson,
                           const std::string& path) {
  switch (entry.status) {
    case RosterStatus::no_roster:
      return "";
    case RosterStatus::not_listed:
      return tr_format(
          "not on {}, so its {} cannot be checked; if it is a student's folder, add the student "
          "to the roster and run exercise again with --force (filled-in {} files are kept), or "
          "else move the folder out of the class folder",
          kRosterFile, kLessonFile, kAnswersFile);
    case RosterStatus::listed:
      break;
  }
  const std::string row = tr_format("{} line {}", kRosterFile, entry.line);
  const std::string& who = entry.name.empty() ? entry.folder : entry.name;
  m.tampered = true;
  if (!entry.fingerprint.empty() && m.fingerprint != entry.fingerprint)
    return tr_format(
        "tampered: {} is not the lesson exercise wrote for {}: its fingerprint is not the one "
        "on {}; {}",
        path, who, row, tr(kRestoreLesson));
  if (lesson && !entry.name.empty() && !same_name(lesson->student, entry.name))
    return tr_format("tampered: {} is the exercise of \"{}\", but {} gives this folder to {}; {}",
                     path, shown(lesson->student), row, who, tr(kRestoreLesson));
  if (lesson && !entry.variant.empty() && lesson->variant != entry.variant)
    return tr_format("tampered: {} is variant {}, but {} gives {} variant {}; {}", path,
                     shown(lesson->variant), row, who, entry.variant, tr(kRestoreLesson));
  m.tampered = false;
  return "";
}

// The folder's lesson.toml, read once: its fingerprint and student into `m`,
// then checked against the roster's row. std::nullopt (m.problem says why)
// when it cannot be read, is not a lesson, or is not what the roster says.
std::optional<Lesson> checked_lesson(const fs::path& dir, const RosterEntry& entry,
                                     StudentMark& m) {
  const std::string path = (dir / kLessonFile).string();
  std::string text;
  try {
    text = read_file(path);
  } catch (const InputError& e) {
    m.problem = e.what();
    return std::nullopt;
  }
  m.fingerprint = lesson_fingerprint(text);
  std::optional<Lesson> lesson;
  std::string parse_error;
  try {
    lesson = parse_lesson(text, path);
    m.lesson_student = lesson->student;
  } catch (const InputError& e) {
    parse_error = e.what();
  }
  m.problem = roster_problem(entry, m, lesson ? &*lesson : nullptr, path);
  if (m.problem.empty()) m.problem = parse_error;
  if (!m.problem.empty()) return std::nullopt;
  if (entry.name.empty() && !lesson->student.empty()) m.name = lesson->student;
  m.fingerprint_checked = !entry.fingerprint.empty();
  return lesson;
}

// A folder whose lesson.toml is another roster student's (a copied folder:
// two folders claiming one student) is tampered and says whose; that
// student, marked, gets a warning naming the folder it was also found in.
void name_copied_lessons(const fs::path& class_dir, const std::vector<RosterEntry>& roster,
                         std::vector<StudentMark>& marks) {
  for (std::size_t i = 0; i < marks.size(); ++i) {
    StudentMark& m = marks[i];
    const bool listed = roster[i].status == RosterStatus::listed;
    if (m.fingerprint.empty() || !(m.tampered || roster[i].status == RosterStatus::not_listed))
      continue;
    for (std::size_t j = 0; j < roster.size(); ++j) {
      const RosterEntry& other = roster[j];
      if (j == i || other.status != RosterStatus::listed ||
          !((!other.fingerprint.empty() && other.fingerprint == m.fingerprint) ||
            (!m.lesson_student.empty() && same_name(m.lesson_student, other.name))))
        continue;
      const std::string path = (class_dir / m.folder / kLessonFile).string();
      m.tampered = true;
      m.problem = listed
                      ? tr_format(
                            "tampered: {} is the lesson of {} (folder {}), not {}'s: copied from "
                            "that folder? Two folders claim one student; {}",
                            path, other.name, other.folder, m.name, tr(kRestoreLesson))
                      : tr_format(
                            "tampered: {}, in a folder not on {}, is the lesson of {} (folder {}): "
                            "two folders claim one student; move the copy out of the class folder",
                            path, kRosterFile, other.name, other.folder);
      m.feedback = not_marked_feedback(m);
      marks[j].warning += (marks[j].warning.empty() ? std::string() : std::string(tr("; "))) +
                          tr_format("its {} is also in folder {} (copied?)", kLessonFile, m.folder);
      break;
    }
  }
}

}  // namespace

std::vector<std::vector<std::string>> csv_rows(std::string_view text, std::vector<int>* lines) {
  if (text.starts_with("\xEF\xBB\xBF")) text.remove_prefix(3);
  std::vector<std::vector<std::string>> rows(1, std::vector<std::string>(1));
  std::vector<int> starts(1, 1);
  int line = 1;
  bool quoted = false;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    std::string& field = rows.back().back();
    line += c == '\n';
    if (quoted) {
      if (c != '"')
        field += c;
      else if (i + 1 < text.size() && text[i + 1] == '"')
        field += text[++i];
      else
        quoted = false;
    } else if (c == '"') {
      quoted = true;
    } else if (c == ',') {
      rows.back().emplace_back();
    } else if (c == '\n') {
      rows.emplace_back(1);
      starts.push_back(line);
    } else if (c != '\r') {
      field += c;
    }
  }
  if (rows.back().size() == 1 && rows.back()[0].empty()) {
    rows.pop_back();
    starts.pop_back();
  }
  if (lines) *lines = std::move(starts);
  for (std::vector<std::string>& row : rows)
    for (std::string& field : row) field = csv_value(field);  // as csv_field wrote it
  return rows;
}

double MarkScheme::points_for(const Trace& trace, const std::string& step) const {
  for (const auto& [name, value] : points)
    if (trace.id_of(name) == step) return value;
  return default_points;
}

double MarkScheme::credit(Verdict verdict) const {
  switch (verdict) {
    case Verdict::ok:
      return ok;
    case Verdict::carried:
      return carried;
    case Verdict::rounded:
      return rounded;
    case Verdict::imprecise:
      return imprecise;
    case Verdict::wrong:
    case Verdict::missing:
      return 0;
  }
  return 0;
}

MarkScheme read_mark_scheme(const std::string& path) {
  TomlReader toml(read_file(path), path);
  toml.require_known_keys(toml.root(), "", {"points", "credit"});
  MarkScheme scheme;
  auto non_negative = [&](const toml::node& n, const std::string& key) {
    const double v = toml.number(n, key).value;
    if (v < 0) toml.fail(&n, key, std::string(tr("points cannot be negative")));
    return v;
  };
  if (const toml::table* t = toml.table(toml.root(), "points"))
    for (const auto& [key, node] : *t) {
      const std::string name(key.str());
      if (name == "default")
        scheme.default_points = non_negative(node, "points.default");
      else
        scheme.points[name] = non_negative(node, "points." + name);
    }
  if (const toml::table* t = toml.table(toml.root(), "credit")) {
    toml.require_known_keys(*t, "credit", {"carried", "rounded", "imprecise"});
    const std::pair<const char*, double*> fractions[] = {{"carried", &scheme.carried},
                                                         {"rounded", &scheme.rounded},
                                                         {"imprecise", &scheme.imprecise}};
    for (const auto& [key, into] : fractions)
      if (const toml::node* n = t->get(key)) {
        const std::string where = fmt::format("credit.{}", key);
        *into = toml.number(*n, where).value;
        if (*into < 0 || *into > 1)
          toml.fail(n, where, std::string(tr("a credit is the fraction of the points a value earns: 0 to 1")));
      }
  }
  return scheme;
}

// Why the student's folder, or a file of it that mark reads or writes, is a
// symbolic link ("" when none is): mark neither reads nor writes through one,
// and one student's link does not stop the class (its feedback is not written).
std::string linked_problem(const fs::path& dir) {
  for (const fs::path& path : {dir, dir / kLessonFile, dir / kAnswersFile, dir / "feedback.md"}) {
    std::error_code ec;
    if (!fs::is_symlink(fs::symlink_status(path, ec))) continue;
    const fs::path to = fs::read_symlink(path, ec);
    return tr_format(
        "{} is a symbolic link to {}: mark reads and writes a student's folder only as real "
        "files and folders; replace the link with what it points to, then mark again (no "
        "feedback.md was written)",
        path.string(), ec ? std::string("?") : to.string());
  }
  return "";
}

StudentMark mark_student(const fs::path& class_dir, const RosterEntry& entry,
                         const MarkScheme& scheme) {
  StudentMark m;
  m.folder = entry.folder;
  m.name = entry.name.empty() ? entry.folder : entry.name;
  m.variant = entry.variant;
  const fs::path dir = class_dir / entry.folder;
  const std::string shown_dir = dir.string();
  m.problem = linked_problem(dir);
  if (!m.problem.empty()) {
    m.linked = true;
    return m;
  }
  // The lesson first, checked against the roster: without it there is nothing to mark against.
  std::optional<Lesson> lesson = checked_lesson(dir, entry, m);
  if (!lesson) {
    m.feedback = not_marked_feedback(m);
    return m;
  }
  m.variant = lesson->variant;
  const std::unique_ptr<Backend> backend = make_backend("cpu");
  const Trace truth = run_pipeline(*lesson, *backend);
  const fs::path answers_path = dir / kAnswersFile;
  try {
    std::error_code ec;
    if (!fs::exists(answers_path, ec))
      throw InputError(
          tr_format("no {} in {}; put the student's filled-in {} there (exercise "
                      "writes a blank one)",
                      kAnswersFile, shown_dir, kAnswersFile));
    const std::vector<Answer> answers = load_answers_file(answers_path.string(), *lesson, truth);
    const VerifyReport report = verify_answers(*lesson, *backend, answers);
    m.steps = step_marks(*lesson, truth, &report, scheme);
    if (const auto [a, c] = first_wrong_cell(report); c) {
      m.first_wrong = fmt::format("{}[{},{}]", a->answer.step, c->row, c->col);
      if (const Diagnosis* d = cell_diagnosis(*a, *c)) m.mistake = d->label;
    }
    m.mistakes = mistakes_made(report);
    for (const StepMark& s : m.steps) {
      m.total += s.points;
      m.out_of += s.out_of;
    }
    m.feedback = feedback_markdown(m, truth, report, shown_dir);
  } catch (const InputError& e) {
    // Marked as nothing answered, with the same columns as everyone else.
    m.problem = e.what();
    m.steps = step_marks(*lesson, truth, nullptr, scheme);
    m.total = m.out_of = 0;
    for (const StepMark& s : m.steps) m.out_of += s.out_of;
    m.feedback = not_marked_feedback(m);
  }
  m.point_keys_used = keys_used(scheme, truth, m.steps);
  return m;
}

std::vector<RosterEntry> class_roster(const fs::path& class_dir) {
  std::error_code ec;
  if (!fs::is_directory(class_dir, ec))
    throw InputError(
        tr_format("{}: not a folder; give the folder that attn-trace exercise "
                    "--out wrote",
                    class_dir.string()));
  // The roster's students first, in its order, whether or not their folder is
  // complete (a missing lesson.toml is then that student's problem)...
  std::vector<RosterEntry> entries;
  const fs::path roster = class_dir / kRosterFile;
  const bool has_roster = fs::exists(roster, ec);
  if (has_roster) entries = roster_entries(class_dir, roster.string());
  // ...then every other sub-folder holding a lesson.toml, by name.
  std::vector<RosterEntry> others;
  for (const fs::directory_entry& entry : fs::directory_iterator(class_dir, ec)) {
    const std::string name = entry.path().filename().string();
    if (entry.is_directory() && fs::exists(entry.path() / kLessonFile) &&
        std::none_of(entries.begin(), entries.end(),
                     [&](const RosterEntry& e) { return e.folder == name; })) {
      RosterEntry other;
      other.folder = name;
      other.status = has_roster ? RosterStatus::not_listed : RosterStatus::no_roster;
      others.push_back(std::move(other));
    }
  }
  if (ec)
    throw InputError(
        tr_format("{}: cannot list the folder: {}", class_dir.string(), ec.message()));
  std::sort(others.begin(), others.end(),
            [](const RosterEntry& a, const RosterEntry& b) { return a.folder < b.folder; });
  entries.insert(entries.end(), others.begin(), others.end());
  if (entries.empty())
    throw InputError(tr_format(
        "{}: no student folders (sub-folders with a {}); give the folder that attn-trace "
        "exercise --out wrote",
        class_dir.string(), kLessonFile));
  return entries;
}

std::vector<StudentMark> mark_class(const fs::path& class_dir, const MarkScheme& scheme,
                                    const std::string& points_file) {
  return mark_class(class_dir, class_roster(class_dir), scheme, points_file);
}

std::vector<StudentMark> mark_class(const fs::path& class_dir,
                                    const std::vector<RosterEntry>& roster,
                                    const MarkScheme& scheme, const std::string& points_file) {
  std::vector<StudentMark> marks(roster.size());
  parallel_for(roster.size(),
               [&](std::size_t i) { marks[i] = mark_student(class_dir, roster[i], scheme); });
  name_copied_lessons(class_dir, roster, marks);
  std::vector<std::string> asked;
  for (const auto& [step, out_of] : class_steps(marks)) asked.push_back(step);
  // (Lambdas capture the key by name, not a structured binding: clang before 16 cannot.)
  for (const auto& entry : scheme.points)
    if (const std::string& name = entry.first;
        std::none_of(marks.begin(), marks.end(),
                     [&](const StudentMark& m) { return m.point_keys_used.contains(name); }))
      throw InputError(fmt::format(
          fmt::runtime(translate(terminal_language(),
          "{}: key 'points.{}': no student was asked for this step; the asked steps are {} "
          "(a short name such as 'weights' means head 0)")),
          points_file, name, fmt::join(asked, ", ")));
  return marks;
}

std::string marks_csv(const std::vector<StudentMark>& marks) {
  const std::vector<std::pair<std::string, double>> steps = class_steps(marks);
  // The header in the documents' language (tr); the rows are the same in both.
  std::vector<std::string> header;
  for (const char* column : {N_("name"), N_("folder"), N_("variant")}) header.emplace_back(tr(column));
  for (const auto& [step, out_of] : steps)
    header.push_back(tr_format("{} ({})", step, points_text(out_of)));
  for (const char* column :
       {N_("total"), N_("out of"), N_("first wrong"), N_("mistake"), N_("problem")})
    header.emplace_back(tr(column));
  std::string out = "\xEF\xBB\xBF" + csv_row(header);
  for (const StudentMark& m : marks) {
    std::vector<std::string> row = {m.name, m.folder, m.variant};
    for (const auto& column : steps) {
      const std::string& step = column.first;
      const auto it = std::find_if(m.steps.begin(), m.steps.end(),
                                   [&](const StepMark& s) { return s.step == step; });
      row.push_back(it == m.steps.end() ? "" : points_text(it->points));
    }
    row.push_back(points_text(m.total));
    row.push_back(points_text(m.out_of));
    row.push_back(m.first_wrong);
    row.push_back(m.mistake);
    row.push_back(m.problem);
    out += csv_row(row);
  }
  return out;
}

std::string marks_json(const std::vector<StudentMark>& marks) {
  // null for what a student without marks does not have.
  const auto text_or_null = [](const std::string& s) {
    return s.empty() ? "null" : json_string(s);
  };
  std::vector<std::string> students;
  for (const StudentMark& m : marks) {
    std::vector<std::string> steps;
    for (const StepMark& s : m.steps)
      steps.push_back(
          fmt::format("{{\"step\": {}, \"points\": {}, \"out_of\": {}, \"cells\": {{\"ok\": {}, "
                      "\"carried\": {}, "
                      "\"rounded\": {}, \"imprecise\": {}, \"wrong\": {}, \"missing\": {}}}}}",
                      json_string(s.step), json_number(s.points), json_number(s.out_of), s.ok,
                      s.carried, s.rounded, s.imprecise, s.wrong, s.blank));
    students.push_back(fmt::format(
        "{{\"name\": {}, \"folder\": {}, \"variant\": {}, \"total\": {}, \"out_of\": {}, "
        "\"first_wrong\": {}, \"mistake\": {}, \"problem\": {},\n   \"steps\": [{}]}}",
        json_string(m.name), json_string(m.folder), text_or_null(m.variant), json_number(m.total),
        json_number(m.out_of), text_or_null(m.first_wrong), text_or_null(m.mistake),
        text_or_null(m.problem), fmt::join(steps, ",\n    ")));
  }
  return fmt::format("{{\"students\": [\n  {}\n]}}\n", fmt::join(students, ",\n  "));
}

std::string class_summary(const std::vector<StudentMark>& marks) {
  std::string out = class_counts(marks);
  out += reteach_section(marks);
  out += steps_section(marks);
  out += tampered_section(marks);
  out += not_marked_section(marks);
  out += unchecked_section(marks);
  return out;
}

}  // namespace attn
