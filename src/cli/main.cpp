// attn-trace: the command line. Assembles the subcommands and maps errors to
// exit codes (README): 2 bad input, 3 backend unavailable.
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <cstdio>

#include "backend/blas_setup.hpp"
#include "cli/commands.hpp"
#include "core/error.hpp"

int main(int argc, char** argv) {
  attn::tune_blas(argv);  // may start the program again with the right BLAS kernel

  CLI::App app{"attn-trace: the Transformer attention computation, step by step", "attn-trace"};
  app.require_subcommand(1);
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
  } catch (const std::exception& e) {
    fmt::print(stderr,
               "attn-trace: internal error: {} (please report this with the command line)\n",
               e.what());
    return 4;
  }
  return context.exit_code;
}
