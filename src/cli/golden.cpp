// `attn-trace golden`: write golden/<id>.toml for lessons, atomically. Every
// lesson is traced before any file is written, so a bad lesson writes nothing.
#include <fmt/format.h>

#include <filesystem>
#include <string>
#include <vector>

#include "backend/backend.hpp"
#include "cli/commands.hpp"
#include "core/error.hpp"
#include "core/golden.hpp"
#include "core/lesson_library.hpp"
#include "core/pipeline.hpp"

namespace attn {

namespace {

struct GoldenOptions {
  std::vector<std::string> lessons;
  bool all = false;
  std::string out = "golden";
};

void golden_command(const GoldenOptions& o) {
  if (o.all == !o.lessons.empty())
    throw InputError(
        "golden: name the lessons (ids or paths) or give --all, not both and not "
        "neither");
  std::vector<Lesson> lessons = o.all ? all_embedded_lessons() : std::vector<Lesson>{};
  for (const std::string& name : o.lessons) lessons.push_back(find_lesson(name));

  const std::unique_ptr<Backend> cpu = make_backend("cpu");
  std::vector<Trace> traces;
  for (const Lesson& lesson : lessons) traces.push_back(run_pipeline(lesson, *cpu));

  std::error_code error;
  std::filesystem::create_directories(o.out, error);
  if (error)
    throw InputError(
        fmt::format("{}: cannot create the output folder ({}); give --out a "
                    "writable folder",
                    o.out, error.message()));
  std::string report;
  for (const Trace& trace : traces) {
    const std::string path = (std::filesystem::path(o.out) / (trace.lesson_id + ".toml")).string();
    write_golden_file(path, trace);
    report += fmt::format("wrote {} ({} steps)\n", path, trace.steps.size());
  }
  write_stdout(report);
}

}  // namespace

void setup_golden(CLI::App& app, CommandContext& /*context*/) {
  auto options = std::make_shared<GoldenOptions>();
  CLI::App* cmd =
      app.add_subcommand("golden", "Write golden files: every step of a lesson, 17 digits");
  cmd->add_option("lessons", options->lessons, "Embedded lesson ids or lesson .toml paths");
  cmd->add_flag("--all", options->all, "Every embedded lesson");
  cmd->add_option("--out", options->out, "Folder for <id>.toml (default: golden)");
  cmd->callback([options] { golden_command(*options); });
}

}  // namespace attn
