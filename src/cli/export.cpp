// `attn-trace export LESSON --to pytorch`: the lesson as one runnable Python
// script that rebuilds every step with PyTorch and asserts each equals the
// trace (docs/pytorch.md).
#include <fmt/format.h>

#include <filesystem>
#include <string>

#include "backend/backend.hpp"
#include "cli/commands.hpp"
#include "core/atomic_file.hpp"
#include "core/error.hpp"
#include "core/i18n.hpp"
#include "core/lesson_library.hpp"
#include "core/limits.hpp"
#include "core/pipeline.hpp"
#include "render/render.hpp"

namespace attn {

namespace {

struct ExportOptions {
  std::string lesson;
  std::string to;
  std::string out;  // "" = standard output
  bool force = false;
};

void export_command(const ExportOptions& o) {
  const Lesson lesson = find_lesson(o.lesson);
  if (lesson.layer && !lesson.layer->residual)
    throw InputError(tr_format(
        "export: lesson {} has [layer] residual = false, and nn.TransformerEncoderLayer always "
        "adds its residual sums, so the script could not check layer.output; remove residual = "
        "false (or set it to true) to export the lesson",
        lesson.id));
  // A symbolic link is refused as such when the script is written, --force or not.
  std::error_code ec;
  const std::filesystem::file_status out = std::filesystem::symlink_status(o.out, ec);
  if (!o.out.empty() && !o.force && std::filesystem::exists(out) &&
      !std::filesystem::is_symlink(out))
    throw InputError(tr_format(
        "export: {} exists already; give --force to replace it, or another --out", o.out));
  // The script compares in float64, so the trace is computed in float64 even
  // when the lesson asks for a narrower format (the script says so).
  Lesson in_f64 = lesson;
  in_f64.dtype = Dtype::f64;
  const std::unique_ptr<Backend> cpu = make_backend("cpu");
  const Trace trace = run_pipeline(in_f64, *cpu);
  // Every cell at most 17 digits, plus the code: about 25 bytes a cell.
  std::uint64_t cells = 0;
  for (const Step& step : trace.steps) cells += step.value.n_elem;
  check_output_size(N_("the exported script"), 25 * cells, N_("export a smaller lesson"));
  const std::string script = [&] {
    const DocumentScope document;  // a script: --lang's language, never LANG's
    return render_pytorch(lesson, trace);
  }();
  if (o.out.empty()) return write_stdout(script);
  write_file_atomically(o.out, script);
  write_report(tr_format("wrote {}: {} steps of {} in PyTorch; run it with python3 {}\n", o.out,
                         trace.steps.size(), trace.lesson_id, o.out));
}

}  // namespace

void setup_export(CLI::App& app, CommandContext& /*context*/) {
  auto options = std::make_shared<ExportOptions>();
  CLI::App* cmd = app.add_subcommand(
      "export",
      std::string(tr("Write a lesson as a runnable PyTorch script that checks every step")));
  cmd->add_option("lesson", options->lesson,
                  std::string(tr("Embedded lesson id or path to a lesson .toml")))
      ->required();
  cmd->add_option("--to", options->to,
                  std::string(tr("What to write: pytorch (a Python script, float64)")))
      ->required()
      ->check(CLI::IsMember({"pytorch"}));
  cmd->add_option("--out", options->out,
                  std::string(tr("Write the script to this file, atomically (default: standard "
                                 "output)")));
  cmd->add_flag("--force", options->force, std::string(tr("Replace the --out file if it exists")));
  cmd->callback([options] { export_command(*options); });
}

}  // namespace attn
