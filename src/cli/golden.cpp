// `attn-trace golden`: write golden/<id>.toml for lessons, all or nothing. Every
// lesson is traced and every target checked before any file is written; a
// golden file that would change is replaced only with --force.
#include <fmt/format.h>

#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "backend/backend.hpp"
#include "cli/commands.hpp"
#include "core/atomic_file.hpp"
#include "core/error.hpp"
#include "core/folder_lock.hpp"
#include "core/golden.hpp"
#include "core/i18n.hpp"
#include "core/lesson_library.hpp"
#include "core/pipeline.hpp"

namespace attn {

namespace {

struct GoldenOptions {
  std::vector<std::string> lessons;
  bool all = false;
  std::string out = "golden";
  bool force = false;  // replace golden files whose content changes
};

// The report's line for a file a commit wrote, replaced or left unchanged.
std::string change_line(FileChange change, const std::string& path, std::size_t steps) {
  switch (change) {
    case FileChange::created:
      return tr_format("wrote {} ({} steps)\n", path, steps);
    case FileChange::replaced:
      return tr_format("replaced {} ({} steps)\n", path, steps);
    case FileChange::unchanged:
      return tr_format("unchanged {} ({} steps)\n", path, steps);
  }
  return "";
}

void golden_command(const GoldenOptions& o) {
  if (o.all == !o.lessons.empty())
    throw InputError(std::string(
        tr("golden: name the lessons (ids or paths) or give --all, not both and not neither")));
  std::vector<Lesson> lessons = o.all ? all_embedded_lessons() : std::vector<Lesson>{};
  for (const std::string& name : o.lessons) lessons.push_back(find_lesson(name));
  std::map<std::string, const Lesson*> by_id;  // one golden file per id
  for (const Lesson& lesson : lessons)
    if (const auto [other, added] = by_id.emplace(lesson.id, &lesson); !added)
      throw InputError(
          other->second->origin == lesson.origin
              ? tr_format("golden: {} is named twice; name each lesson once", lesson.origin)
              : tr_format("golden: two lessons have the id {}: {} and {}; give each its own "
                          "[lesson] id",
                          lesson.id, other->second->origin, lesson.origin));

  const std::unique_ptr<Backend> cpu = make_backend("cpu");
  // One writer of the folder at a time; a golden run killed half way is completed first.
  const FolderLock lock(o.out, FolderLock::Missing::create);
  report_finished_commit(lock);
  FileBatch batch(lock);
  std::vector<std::size_t> step_counts;
  for (const Lesson& lesson : lessons) {
    const Trace trace = run_pipeline(lesson, *cpu);
    const DocumentScope document;  // a file: --lang's language, never LANG's
    batch.add((std::filesystem::path(o.out) / (trace.lesson_id + ".toml")).string(),
              golden_toml(trace), lesson.origin);
    step_counts.push_back(trace.steps.size());
  }
  const CommitResult result = batch.commit(
      o.force, std::string(tr("A golden file is the reference that check compares with: find "
                              "out why it changed (attn-trace check LESSON), then add --force "
                              "to replace it")));
  std::string report;
  for (std::size_t i = 0; i < result.files.size(); ++i)
    report += change_line(result.files[i].change, result.files[i].path, step_counts[i]);
  write_report(report);
  report_removed_temporaries(result);
}

}  // namespace

void setup_golden(CLI::App& app, CommandContext& /*context*/) {
  auto options = std::make_shared<GoldenOptions>();
  CLI::App* cmd =
      app.add_subcommand("golden", std::string(tr("Write golden files: every step of a lesson, "
                                                  "17 digits")));
  cmd->add_option("lessons", options->lessons,
                  std::string(tr("Embedded lesson ids or lesson .toml paths")));
  cmd->add_flag("--all", options->all, std::string(tr("Every embedded lesson")));
  cmd->add_option("--out", options->out, std::string(tr("Folder for <id>.toml (default: golden)")));
  cmd->add_flag("--force", options->force,
                std::string(tr("Replace golden files whose content would change (read-only ones "
                               "too)")));
  cmd->callback([options] { golden_command(*options); });
}

}  // namespace attn
