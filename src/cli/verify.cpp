// `attn-trace verify LESSON --answers FILE`: mark a learner's hand calculation
// like a tutor marking a page (text) or for tools (JSON, docs/json.md).
#include <fmt/format.h>

#include <memory>
#include <string>

#include "backend/backend.hpp"
#include "cli/commands.hpp"
#include "core/i18n.hpp"
#include "core/lesson_library.hpp"
#include "core/pipeline.hpp"
#include "core/read_input.hpp"
#include "teach/verify.hpp"
#include "teach/verify_report.hpp"

namespace attn {

namespace {

struct VerifyOptions {
  std::string lesson;
  std::string answers;
  std::string format = "text";
  std::size_t width = 0;  // 0: the terminal's, or 80
  bool brief = false;     // one line per step, then the result
};

void verify_command(const VerifyOptions& o, CommandContext& context) {
  const Lesson lesson = find_lesson(o.lesson);
  const std::unique_ptr<Backend> backend = make_backend("cpu");
  const Trace truth = run_pipeline(lesson, *backend);
  const std::vector<Answer> answers = load_answers_file(o.answers, lesson, truth);
  const VerifyReport report = verify_answers(lesson, *backend, answers);
  if (o.format == "json") {
    const DocumentScope document;  // JSON: --lang's language, never LANG's
    write_stdout(verify_report_json(lesson, report));
  } else if (o.brief) {
    write_report(verify_report_brief(truth, report, output_width(o.width)));
  } else {
    write_report(
        verify_report_text(lesson, truth, report, input_name(o.answers), output_width(o.width)));
  }
  context.exit_code = report.passed() ? 0 : 1;
}

}  // namespace

void setup_verify(CLI::App& app, CommandContext& context) {
  auto options = std::make_shared<VerifyOptions>();
  CLI::App* cmd = app.add_subcommand(
      "verify",
      std::string(
          tr("Check a hand calculation: which answers are right, carried or wrong, and why")));
  cmd->add_option("lesson", options->lesson,
                  std::string(tr("Embedded lesson id or path to a lesson .toml")))
      ->required();
  cmd->add_option("--answers", options->answers,
                  std::string(tr("The answers file (TOML, [[answer]] tables; see README)")))
      ->required();
  cmd->add_option("--format", options->format, std::string(tr("text or json")))
      ->check(CLI::IsMember({"text", "json"}));
  cmd->add_flag("--brief", options->brief,
               std::string(tr("One line per step (its values counted by status and its first "
                              "mistake), then the result; text only")))
      ->excludes(cmd->get_option("--format"));
  cmd->add_option("--width", options->width,
                  std::string(tr("Columns no line may pass (default: the terminal's width, 80 "
                                 "when the output is not a terminal)")))
      ->check(CLI::Range(40, 100000));
  cmd->callback([options, &context] { verify_command(*options, context); });
}

}  // namespace attn
