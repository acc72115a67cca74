// `attn-trace lessons`: the embedded lessons, one line each.
#include <fmt/format.h>

#include <algorithm>

#include "cli/commands.hpp"
#include "core/lesson_library.hpp"

namespace attn {

void setup_lessons(CLI::App& app, CommandContext& /*context*/) {
  CLI::App* cmd = app.add_subcommand("lessons", "List the embedded lessons");
  cmd->callback([] {
    const std::vector<Lesson> lessons = all_embedded_lessons();
    std::size_t width = 0;
    for (const Lesson& l : lessons) width = std::max(width, l.id.size());
    std::string out;
    for (const Lesson& l : lessons)
      out += fmt::format("{:<{}}  {}{}\n", l.id, width, l.title,
                         l.source.empty() ? "" : fmt::format("  [{}]", l.source));
    write_stdout(out);
  });
}

}  // namespace attn
