// `attn-trace mark DIR`: every student folder of an exercise marked in one
// run; writes DIR/marks.csv (or marks.json), DIR/summary.md and a feedback.md per student.
#include <fmt/format.h>

#include <chrono>
#include <filesystem>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "cli/commands.hpp"
#include "core/atomic_file.hpp"
#include "core/error.hpp"
#include "core/folder_lock.hpp"
#include "core/i18n.hpp"
#include "teach/mark.hpp"

namespace attn {

namespace {

namespace fs = std::filesystem;

struct MarkOptions {
  std::string dir;
  std::string points;
  std::string format = "csv";  // the gradebook: marks.csv or marks.json
  bool force = false;
};

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
  std::vector<StudentMark> marks;
  std::vector<std::pair<fs::path, std::string>> files;
  {
    // Files: --lang's language, never LANG's; marking is inside too, because
    // why a student could not be marked (a file's error) goes into them.
    const DocumentScope document;
    marks = mark_class(dir, roster, scheme, o.points);
    files = {{gradebook, o.format == "json" ? marks_json(marks) : marks_csv(marks)},
             {dir / "summary.md", class_summary(marks)}};
    for (const StudentMark& m : marks)
      if (!m.linked) files.emplace_back(dir / m.folder / "feedback.md", m.feedback);
  }
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
  cmd->add_flag("--force", options->force,
                text(N_("Replace the gradebook, summary.md and feedback.md from an earlier mark")));
  cmd->callback([options, &context] { mark_command(*options, context); });
}

}  // namespace attn
