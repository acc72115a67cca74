// attn-trace: the command line. Assembles the subcommands and maps errors to
// exit codes (README): 2 bad input, 3 backend unavailable, 4 out of memory or
// an internal error.
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <cerrno>
#include <cstdio>
#include <new>
#include <optional>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "cli/cli_text.hpp"
#include "cli/commands.hpp"
#include "core/error.hpp"
#include "core/i18n.hpp"
#include "core/limits.hpp"
#include "render/escape.hpp"

namespace {

// The terminal's language: the one asked for by --lang (anywhere on the line,
// as CLI11 accepts it after the command too; `asked` is then its name), else
// the environment's. Read before the options are built, so that everything
// printed is in it. An unknown name: nullopt.
std::optional<attn::Language> chosen_language(int argc, char** argv, std::string& asked) {
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg = argv[i];
    if (arg == "--") break;
    if (arg == "--lang" && i + 1 < argc)
      asked = argv[i + 1];
    else if (arg.starts_with("--lang="))
      asked = arg.substr(7);
    else
      continue;
    return attn::language_named(asked);
  }
  return attn::language_from_environment();
}

// The global options: --lang (already applied by main, bound to `lang_option`
// so that CLI11 accepts it) and --limit.
void add_global_options(CLI::App& app, std::string& lang_option) {
  using attn::tr;
  using attn::tr_format;
  app.add_option("--lang", lang_option,
                 std::string(tr("language: en or zh; without it, text for the terminal follows "
                                "LC_ALL, LC_MESSAGES or LANG, and files and machine formats are "
                                "English (docs/chinese.md)")))
      ->type_name("en|zh");
  app.add_option_function<std::vector<std::string>>(
         "--limit",
         [](const std::vector<std::string>& assignments) {
           for (const std::string& a : assignments) attn::set_limit(a);
         },
         tr_format("NAME=VALUE: raise or lower a limit for this run (docs/limits.md); the "
                   "defaults: {}",
                   attn::limit_names()))
      ->type_name("NAME=VALUE");
}

// An error's message as a terminal may show it: the control characters a file
// name, key or value it echoes may hold (an escape sequence that would retitle
// the terminal) as their control pictures, its own line breaks kept.
std::string shown(std::string_view message) {
  std::string out;
  for (const std::string_view line : attn::text_lines(message))
    out += (out.empty() ? "" : "\n") + attn::show_controls(line);
  return out;
}

// Parses the command line and runs the command: the exit code, each error
// mapped to its own (README), its message on stderr.
int run_command_line(CLI::App& app, int argc, char** argv, const attn::CommandContext& context) {
  using attn::tr;
  try {
    app.parse(argc, argv);
  } catch (const CLI::Success& e) {  // --help, --help-all, --version: written as every output is
    std::ostringstream out;
    const int code = app.exit(e, out, std::cerr);
    try {
      attn::write_stdout(out.str());
    } catch (const attn::InputError& failed) {
      fmt::print(stderr, fmt::runtime(tr("attn-trace: error: {}\n")), shown(failed.what()));
      return 2;
    }
    return code;
  } catch (const CLI::ParseError& e) {
    fmt::print(stderr,
               fmt::runtime(tr("attn-trace: error: {}. See `attn-trace --help` and `attn-trace "
                               "COMMAND --help`.\n")),
               shown(attn::parse_error_message(e)));
    return 2;
  } catch (const attn::InputError& e) {
    std::fflush(stdout);
    fmt::print(stderr, fmt::runtime(tr("attn-trace: error: {}\n")), shown(e.what()));
    return 2;
  } catch (const attn::BackendUnavailable& e) {
    std::fflush(stdout);
    fmt::print(stderr, fmt::runtime(tr("attn-trace: backend unavailable: {}\n")), shown(e.what()));
    return 3;
  } catch (const attn::OutOfMemory& e) {
    std::fflush(stdout);
    fmt::print(stderr, fmt::runtime(tr("attn-trace: out of memory: {}\n")), shown(e.what()));
    return 4;
  } catch (const std::bad_alloc&) {
    std::fflush(stdout);
    fmt::print(stderr, "{}",
               tr("attn-trace: out of memory: this machine cannot hold what the command needs; "
                  "try a smaller lesson, fewer steps (--step), or lower --limit trace_gb so that "
                  "the size is refused before any work (docs/limits.md)\n"));
    return 4;
  } catch (const std::exception& e) {
    fmt::print(stderr,
               fmt::runtime(tr(
                   "attn-trace: internal error: {} (please report this with the command line)\n")),
               shown(e.what()));
    return 4;
  }
  return context.exit_code;
}

// As coreutils' close_stdout: standard output flushed and closed, and what
// could not be written (CLI11's help, a write_stdout that slipped through)
// reported as the write error it is, exit 2, never exit 0.
int close_stdout(int code) {
  errno = 0;
  const bool flushed = std::fflush(stdout) == 0 && !std::ferror(stdout);
  const int error = errno;
  const bool closed = std::fclose(stdout) == 0;
  if (flushed && closed) return code;
  fmt::print(stderr, fmt::runtime(attn::tr("attn-trace: error: {}\n")),
             shown(attn::write_error_message(flushed ? errno : error)));
  return code == 0 ? 2 : code;
}

}  // namespace

int main(int argc, char** argv) {
  std::string asked;
  const std::optional<attn::Language> language = chosen_language(argc, argv, asked);
  if (!language) {
    fmt::print(stderr, "attn-trace: error: --lang {}: unknown language; use en or zh\n", asked);
    return 2;
  }
  // Files and machine formats follow --lang only, never the environment (docs/chinese.md).
  attn::set_languages(*language, asked.empty() ? attn::Language::en : *language);
  using attn::tr;

  CLI::App app{std::string(tr("attn-trace: the Transformer attention computation, step by step")),
               "attn-trace"};
  // CLI11's words in the terminal's language; the subcommands inherit the
  // formatter and the help flag.
  app.formatter(attn::help_formatter());
  app.set_help_flag("-h,--help", std::string(tr("Print this help message and exit")));
  app.set_version_flag("--version", "attn-trace 0.1",
                       std::string(tr("Display program version information and exit")));
  app.require_subcommand(1);
  app.fallthrough();  // global options (--limit) also after the command
  attn::CommandContext context;
  attn::setup_run(app, context);
  attn::setup_lessons(app, context);
  attn::setup_verify(app, context);
  attn::setup_practice(app, context);
  attn::setup_exercise(app, context);
  attn::setup_mark(app, context);
  attn::setup_check(app, context);
  attn::setup_golden(app, context);
  attn::setup_stats(app, context);
  attn::setup_bench(app, context);
  attn::setup_export(app, context);
  std::string lang_option;
  add_global_options(app, lang_option);
  return close_stdout(run_command_line(app, argc, argv, context));
}
