// `attn-trace mark DIR`: every student folder of an exercise marked in one
// run; writes DIR/marks.csv (or marks.json), DIR/summary.md and a feedback.md per student.
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "cli/commands.hpp"
#include "core/atomic_file.hpp"
#include "core/error.hpp"
#include "core/folder_lock.hpp"
#include "core/i18n.hpp"
#include "teach/answers_csv.hpp"
#include "teach/mark.hpp"

namespace attn {

namespace {

namespace fs = std::filesystem;

struct MarkOptions {
  std::string dir;
  std::string points;
  std::string format = "csv";  // the gradebook: marks.csv or marks.json
  std::string answers;         // the class spreadsheet (answers.csv, .xlsx, .ods); "": the folders
  bool force = false;
};

// The answers of the spreadsheet's row of the lesson's variant.
AnswersSource sheet_source(const AnswerSheet& sheet) {
  return [&sheet](const Lesson& lesson, const Trace& truth) {
    const AnswerSheetRow* row = sheet.row_of(lesson.variant);
    if (!row)
      throw InputError(
          tr_format("{} has no row for variant {} ({}); add the row (roster.csv "
                    "gives the student's variant) or mark from the folders",
                    sheet.origin, lesson.variant, lesson.student));
    return sheet_answers(sheet, *row, lesson, truth);
  };
}

// A row of the spreadsheet that no student folder took: typed work that would be lost.
void check_every_row_marked(const AnswerSheet& sheet, const std::vector<StudentMark>& marks,
                            const std::string& dir) {
  for (const AnswerSheetRow& row : sheet.rows)
    if (std::none_of(marks.begin(), marks.end(),
                     [&](const StudentMark& m) { return m.variant == row.variant; }))
      throw InputError(tr_format(
          "{}:{}: variant {} ({}) is no student folder of {}; give the spreadsheet of this "
          "class, or delete the row",
          sheet.origin, row.line, row.variant, row.name, dir));
}

// The class spreadsheet; a warning, not an error, when the spreadsheet held
// answer cells as numbers (docs/marking.md, answers.csv).
AnswerSheet class_sheet(const std::string& path) {
  AnswerSheet sheet = read_answer_sheet(path);
  if (sheet.number_cells)
    print_note(tr_format("attn-trace: warning: {}", number_cells_warning(sheet)));
  return sheet;
}

// How many cells were not read as a number, and where they are listed ("" for none).
std::string unreadable_line(const std::vector<StudentMark>& marks, const fs::path& summary) {
  std::size_t n = 0;
  for (const StudentMark& m : marks) n += m.unreadable.size();
  if (n == 0) return "";
  return tr_format(n == 1 ? N_("{} cell could not be read as a number (no points); {} lists it "
                               "under \"Cells to read again\": check it on the paper\n")
                          : N_("{} cells could not be read as a number (no points); {} lists "
                               "them under \"Cells to read again\": check them on the paper\n"),
                   n, summary.string());
}

void mark_command(const MarkOptions& o, CommandContext& context) {
  const auto start = std::chrono::steady_clock::now();
  const fs::path dir(o.dir);
  const MarkScheme scheme = o.points.empty() ? MarkScheme{} : read_mark_scheme(o.points);
  const fs::path gradebook = dir / ("marks." + o.format);
  // One mark of a folder at a time, from reading it to writing into it.
  const FolderLock lock(o.dir, FolderLock::Missing::skip);
  report_finished_commit(lock);
  // The roster first: a mistake in it is reported in the terminal's language.
  const std::vector<RosterEntry> roster = class_roster(dir);
  std::optional<AnswerSheet> sheet;
  if (!o.answers.empty()) sheet = class_sheet(o.answers);
  std::vector<StudentMark> marks;
  std::vector<std::pair<fs::path, std::string>> files;
  {
    // Files: --lang's language, never LANG's; marking is inside too, because
    // why a student could not be marked (a file's error) goes into them.
    const DocumentScope document;
    marks = mark_class(dir, roster, scheme, o.points, sheet ? sheet_source(*sheet) : nullptr);
    files = {{gradebook, o.format == "json" ? marks_json(marks) : marks_csv(marks)},
             {dir / "summary.md", class_summary(marks, sheet ? number_cells_warning(*sheet) : "")}};
    for (const StudentMark& m : marks)
      if (!m.linked) files.emplace_back(dir / m.folder / "feedback.md", m.feedback);
  }
  if (sheet) check_every_row_marked(*sheet, marks, o.dir);
  FileBatch batch(lock);
  for (auto& [path, content] : files) batch.add(path.string(), std::move(content));
  const CommitResult result = batch.commit(
      o.force, tr_format("If they hold an earlier mark, add --force to replace {}, summary.md "
                         "and the feedback.md files; otherwise move them away",
                         gradebook.filename().string()));
  report_removed_temporaries(result);

  std::size_t marked = 0, absent = 0;
  for (const StudentMark& m : marks) {
    marked += m.problem.empty() && !m.not_handed_in;
    absent += m.not_handed_in;
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::string out =
      absent == 0
          ? tr_format("marked {} of {} student(s) in {:.1f} s; wrote {}, {} and {} "
                      "feedback.md\n",
                      marked, marks.size(), seconds, gradebook.string(),
                      (dir / "summary.md").string(), files.size() - 2)
          : tr_format("marked {} of {} student(s), {} not handed in, in {:.1f} s; wrote {}, {} "
                      "and {} feedback.md\n",
                      marked, marks.size(), absent, seconds, gradebook.string(),
                      (dir / "summary.md").string(), files.size() - 2);
  out += unreadable_line(marks, dir / "summary.md");
  // Each reason as marks.csv gives it: in the files' language (docs/chinese.md).
  const std::string_view not_marked = translate(document_language(), "not marked: {}: {}\n");
  for (const StudentMark& m : marks)
    if (!m.problem.empty()) out += fmt::format(fmt::runtime(not_marked), m.folder, m.problem);
  write_report(out);
  // A student who handed nothing in is a normal part of a class, not a failure to mark.
  context.exit_code = marked + absent == marks.size() ? 0 : 1;
}

}  // namespace

void report_finished_commit(const FolderLock& lock) {
  if (lock.finished()) print_note(describe(*lock.finished()));
}

void setup_mark(CLI::App& app, CommandContext& context) {
  auto options = std::make_shared<MarkOptions>();
  const auto text = [](std::string_view english) { return std::string(tr(english)); };
  CLI::App* cmd = app.add_subcommand(
      "mark", text(N_("Mark a class: every student folder of an exercise, into marks.csv and "
                      "feedback")));
  cmd->add_option("dir", options->dir, text(N_("The folder that attn-trace exercise --out wrote")))
      ->required();
  cmd->add_option("--points", options->points,
                  text(N_("TOML file: points per asked step, and what carried, rounded and "
                          "imprecise values earn (docs/marking.md)")));
  cmd->add_option("--format", options->format,
                  text(N_("The gradebook: csv (marks.csv, default) or json (marks.json)")))
      ->check(CLI::IsMember({"csv", "json"}));
  cmd->add_option("--answers", options->answers,
                  text(N_("Mark from the class spreadsheet (answers.csv, or an .xlsx/.ods saved "
                          "from it) instead of the folders' answers.toml")));
  cmd->add_flag("--force", options->force,
                text(N_("Replace the gradebook, summary.md and feedback.md from an earlier mark")));
  cmd->callback([options, &context] { mark_command(*options, context); });
}

}  // namespace attn
