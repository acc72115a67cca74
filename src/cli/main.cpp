// attn-trace: the command line. Assembles the subcommands and maps errors to
// exit codes (README): 2 bad input, 3 backend unavailable, 4 out of memory or
// an internal error.
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <new>
#include <string>
#include <vector>

#include "backend/blas_setup.hpp"
#include "cli/commands.hpp"
#include "core/error.hpp"
#include "core/limits.hpp"

int main(int argc, char** argv) {
  attn::tune_blas(argv);  // may start the program again with the right BLAS kernel

  CLI::App app{"attn-trace: the Transformer attention computation, step by step", "attn-trace"};
  app.require_subcommand(1);
  app.fallthrough();  // global options (--limit) also after the command
  app.set_version_flag("--version", "attn-trace 0.1");
  attn::CommandContext context;
  attn::setup_run(app, context);
  attn::setup_lessons(app, context);
  attn::setup_verify(app, context);
  attn::setup_exercise(app, context);
  attn::setup_mark(app, context);
  attn::setup_check(app, context);
  attn::setup_golden(app, context);
  attn::setup_stats(app, context);
  attn::setup_bench(app, context);
  attn::setup_export(app, context);
  app.add_option_function<std::vector<std::string>>(
         "--limit",
         [](const std::vector<std::string>& assignments) {
           for (const std::string& a : assignments) attn::set_limit(a);
         },
         "NAME=VALUE: raise or lower a limit for this run (docs/limits.md); the defaults: " +
             attn::limit_names())
      ->type_name("NAME=VALUE");
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    fmt::print(stderr,
               "attn-trace: error: {}. See `attn-trace --help` and `attn-trace COMMAND --help`.\n",
               e.what());
    return 2;
  } catch (const attn::InputError& e) {
    std::fflush(stdout);
    fmt::print(stderr, "attn-trace: error: {}\n", e.what());
    return 2;
  } catch (const attn::BackendUnavailable& e) {
    std::fflush(stdout);
    fmt::print(stderr, "attn-trace: backend unavailable: {}\n", e.what());
    return 3;
  } catch (const std::bad_alloc&) {
    std::fflush(stdout);
    fmt::print(stderr,
               "attn-trace: out of memory: this machine cannot hold what the command needs; "
               "try a smaller lesson, fewer steps (--step), or lower --limit trace_gb so that "
               "the size is refused before any work (docs/limits.md)\n");
    return 4;
  } catch (const std::exception& e) {
    fmt::print(stderr,
               "attn-trace: internal error: {} (please report this with the command line)\n",
               e.what());
    return 4;
  }
  return context.exit_code;
}
