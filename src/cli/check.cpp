// `attn-trace check`: every step of a lesson against its golden file (exit 1
// on a mismatch or a missing file), and the errata report of its claims.
// Claims that disagree are the report, not a failure: they do not change the exit code.
#include <fmt/format.h>

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "backend/backend.hpp"
#include "cli/commands.hpp"
#include "core/error.hpp"
#include "core/i18n.hpp"
#include "core/install_paths.hpp"
#include "core/lesson_library.hpp"
#include "render/numbers.hpp"
#include "teach/check.hpp"

namespace attn {

namespace {

struct CheckOptions {
  std::string lesson;
  bool all = false;
  std::string golden;      // one lesson's golden file
  std::string golden_dir;  // empty: golden/ here, else the project's golden/ this was built from
  double tolerance = kGoldenTolerance;
  std::string format = "text";
  std::size_t width = 0;  // 0: the terminal's (output_width)
};

// ./golden, else an installed program's <prefix>/share/attn-trace/golden,
// else the project's folder this program was built from.
std::string default_golden_dir() {
  std::error_code error;
  const std::optional<std::filesystem::path> folder = program_folder();
  const std::filesystem::path installed =
      folder ? folder->parent_path() / "share" / "attn-trace" / "golden" : "";
  if (std::filesystem::is_directory("golden", error)) return "golden";
  if (folder && std::filesystem::is_directory(installed, error)) return installed.string();
  return ATTN_GOLDEN_DIR;
}

// The last line of the report: golden files and claims; the claims a
// document states apart from those a lesson derives (`derived = true`).
std::string totals_text(std::size_t lessons, std::size_t pass, const ClaimCounts& n) {
  if (n.derived == 0)
    return tr_format(
        "{} lesson(s): golden {} pass, {} fail or missing; claims {} checked, {} agree, "
        "{} carried, {} with a real slip (the errata; they do not fail the check)",
        lessons, pass, lessons - pass, n.checked, n.agree, n.carried, n.disagree);
  const std::size_t derived_slip = n.derived - n.derived_agree - n.derived_carried;
  return tr_format(
      "{} lesson(s): golden {} pass, {} fail or missing; claims {} checked: {} stated by a "
      "document ({} agree, {} carried, {} with a real slip: the errata; they do not fail the "
      "check) and {} derived by a lesson ({} agree, {} do not)",
      lessons, pass, lessons - pass, n.checked, n.checked - n.derived, n.agree - n.derived_agree,
      n.carried - n.derived_carried, n.disagree - derived_slip, n.derived, n.derived_agree,
      n.derived - n.derived_agree);
}

void check_command(const CheckOptions& o, CommandContext& context) {
  if (o.all == !o.lesson.empty())
    throw InputError(std::string(
        tr("check: name one lesson (id or path) or give --all, not both and not neither")));
  if (o.all && !o.golden.empty())
    throw InputError(std::string(
        tr("check: --golden names one lesson's file; with --all use --golden-dir DIR")));
  if (!(o.tolerance >= 0))
    throw InputError(std::string(tr("check: --tol must be a non-negative number")));
  std::vector<Lesson> lessons = o.all ? all_embedded_lessons() : std::vector<Lesson>{};
  if (!o.all) lessons.push_back(find_lesson(o.lesson));

  const std::string golden_dir = o.golden_dir.empty() ? default_golden_dir() : o.golden_dir;
  const std::unique_ptr<Backend> cpu = make_backend("cpu");
  std::vector<LessonCheck> checks;
  for (Lesson& lesson : lessons) {
    const std::string path =
        !o.golden.empty() ? o.golden
                          : (std::filesystem::path(golden_dir) / (lesson.id + ".toml")).string();
    checks.push_back(check_lesson(std::move(lesson), path, o.tolerance, *cpu));
  }

  std::string out;
  std::size_t pass = 0;
  ClaimCounts claims;
  for (const LessonCheck& c : checks) {
    pass += c.status == GoldenStatus::pass;
    claims += count_claims(c.claims);
    // Shape and quantity claims agree or not: no carried ones.
    for (const QuantityVerdict& v : c.quantities)
      claims.add(v.agrees ? ClaimStatus::agrees : ClaimStatus::disagrees, v.claim.derived);
  }
  if (o.format == "json") {
    const DocumentScope document;  // JSON: --lang's language, never LANG's
    std::vector<std::string> objects;
    for (const LessonCheck& c : checks) objects.push_back(check_report_json(c));
    out = o.all ? fmt::format("[\n{}\n]\n", fmt::join(objects, ",\n")) : objects.front() + "\n";
  } else {
    const std::size_t width = output_width(o.width);
    for (const LessonCheck& c : checks) out += check_report_text(c, o.tolerance, width) + "\n";
    out += wrap_text(totals_text(checks.size(), pass, claims), width, "", "  ");
  }
  (o.format == "json" ? write_stdout : write_report)(out);
  if (pass != checks.size()) context.exit_code = 1;
}

}  // namespace

void setup_check(CLI::App& app, CommandContext& context) {
  auto options = std::make_shared<CheckOptions>();
  CLI::App* cmd = app.add_subcommand(
      "check", std::string(tr(
                   "Every step against its golden file; every claim of the source (the errata)")));
  cmd->add_option("lesson", options->lesson,
                  std::string(tr("Embedded lesson id or path to a lesson .toml")));
  cmd->add_flag("--all", options->all, std::string(tr("Every embedded lesson")));
  cmd->add_option(
      "--golden", options->golden,
      std::string(tr("Golden file of the one lesson (default: <golden-dir>/<id>.toml)")));
  cmd->add_option(
      "--golden-dir", options->golden_dir,
      std::string(tr("Folder of golden files (default: golden/ in this folder if there "
                     "is one, else the project's golden/ this binary was built from)")));
  cmd->add_option("--tol", options->tolerance,
                  std::string(tr("Absolute tolerance against golden (default 1e-12)")));
  cmd->add_option("--format", options->format, std::string(tr("text or json")))
      ->check(CLI::IsMember({"text", "json"}));
  cmd->add_option("--width", options->width,
                  std::string(tr("Columns no line may pass (default: the terminal's width, 80 "
                                 "when the output is not a terminal)")))
      ->check(CLI::Range(40, 100000));
  cmd->callback([options, &context] { check_command(*options, context); });
}

}  // namespace attn
