// One subcommand, one file: each binds its options to a CLI11 subcommand and
// sets the callback. main.cpp only assembles them.
#pragma once

#include <CLI/CLI.hpp>

#include <string>
#include <string_view>

namespace attn {

struct CommitResult;
class FolderLock;

// What a command reports back to main(): its exit code when it does not
// throw (0 success, 1 a check or verify found a mismatch, or mark could not
// mark every student).
struct CommandContext {
  int exit_code = 0;
};

void setup_run(CLI::App& app, CommandContext& context);
void setup_lessons(CLI::App& app, CommandContext& context);
void setup_verify(CLI::App& app, CommandContext& context);
void setup_exercise(CLI::App& app, CommandContext& context);
void setup_check(CLI::App& app, CommandContext& context);
void setup_golden(CLI::App& app, CommandContext& context);
void setup_mark(CLI::App& app, CommandContext& context);
void setup_stats(CLI::App& app, CommandContext& context);
void setup_bench(CLI::App& app, CommandContext& context);
void setup_export(CLI::App& app, CommandContext& context);
void setup_practice(CLI::App& app, CommandContext& context);

// The width text output keeps to: `given` when set (--width), else the
// terminal's when standard output is one, else 80.
std::size_t output_width(std::size_t given);

// Writes `text` to standard output in one piece, flushed; a write that fails
// (a full disk, /dev/full) is an InputError, exit 2 (throw_write_error).
void write_stdout(const std::string& text);
// Writes a report meant for a person (verify's, check's, mark's text) with
// write_stdout, every line through show_controls: a token, title, name or
// file name it echoes cannot move the cursor, retitle the terminal or reorder
// the line (machine formats, JSON and CSV, escape in their own way).
void write_report(const std::string& text);
// One line for the person at the terminal on standard error, shown the same way.
void print_note(std::string_view line);
// The message of a failed write to standard output: "write error: <why> (standard output)…".
std::string write_error_message(int error);
// Throws an InputError with write_error_message(error).
[[noreturn]] void throw_write_error(int error);

// Names on standard error each temporary file an interrupted run had left and
// `result`'s commit removed.
void report_removed_temporaries(const CommitResult& result);

// Says on standard error which interrupted commit `lock` completed, if any
// (finish_interrupted_commit).
void report_finished_commit(const FolderLock& lock);

}  // namespace attn
