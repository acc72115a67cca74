// `attn-trace run`: trace a lesson and print every step in one format.
#include <fmt/format.h>

#include <stdio_ext.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "backend/backend.hpp"
#include "cli/commands.hpp"
#include "core/atomic_file.hpp"
#include "core/error.hpp"
#include "core/expand.hpp"
#include "core/i18n.hpp"
#include "core/lesson_library.hpp"
#include "core/limits.hpp"
#include "core/pipeline.hpp"
#include "render/escape.hpp"
#include "render/numbers.hpp"
#include "render/render.hpp"

namespace attn {

namespace {

struct RunOptions {
  std::string lesson = kDefaultLesson;
  std::string format = "text";
  std::string backend = "cpu";
  std::string dtype;  // "" = the lesson's [model] dtype (f64 unless it says)
  std::vector<std::string> steps;
  int head = -1;
  int precision = 4;
  std::string color = "auto";
  std::size_t width = 0;  // 0: the terminal's, or 80
  std::string scale = "auto";
  std::string view = "numbers";
  bool summary = false;
  bool full = false;
  std::string expand;  // "ROW,COL": write out that cell's arithmetic at every step
};

// --color and the environment: NO_COLOR and TERM=dumb turn auto off, and
// COLORTERM=truecolor or 24bit asks for 24-bit colour.
ColorDepth color_depth(const std::string& mode) {
  if (mode == "never") return ColorDepth::none;
  if (mode == "auto") {
    const char* no_color = std::getenv("NO_COLOR");
    const char* term = std::getenv("TERM");
    if ((no_color && *no_color) || (term && std::string(term) == "dumb") ||
        isatty(STDOUT_FILENO) != 1)
      return ColorDepth::none;
  }
  const char* colorterm = std::getenv("COLORTERM");
  const std::string depth = colorterm ? colorterm : "";
  return depth == "truecolor" || depth == "24bit" ? ColorDepth::truecolor : ColorDepth::palette256;
}

// "R,C" -> (R, C), both counted from 0.
std::pair<std::size_t, std::size_t> parse_expand(const std::string& text) {
  char comma = 0, extra = 0;
  long long r = -1, c = -1;
  if (std::sscanf(text.c_str(), "%lld %c %lld %c", &r, &comma, &c, &extra) != 3 || comma != ',' ||
      r < 0 || c < 0)
    throw InputError(tr_format(
        "--expand {}: expected ROW,COL, two integers counted from 0 (e.g. --expand 0,1)", text));
  return {static_cast<std::size_t>(r), static_cast<std::size_t>(c)};
}

void run_command(const RunOptions& o) {
  Lesson lesson = find_lesson(o.lesson);
  if (!o.dtype.empty()) lesson.dtype = *parse_dtype(o.dtype);
  const std::unique_ptr<Backend> backend = make_backend(o.backend);
  const Trace trace = run_pipeline(lesson, *backend);

  RenderOptions render;
  render.precision = o.precision;
  render.color = color_depth(o.color);
  render.width = output_width(o.width);
  render.scale = o.scale == "row"      ? ShadeScale::row
                 : o.scale == "global" ? ShadeScale::global
                                       : ShadeScale::automatic;
  render.view = o.view == "heatmap" ? TextView::heatmap : TextView::numbers;
  render.summary = o.summary ? Summary::on : o.full ? Summary::off : Summary::automatic;
  for (const std::string& step : o.steps) render.steps.push_back(trace.id_of(step));
  if (o.head >= 0) render.head = static_cast<std::size_t>(o.head);
  // Checked here, so that a wrong --step or --head is refused in the terminal's language.
  const std::vector<const Step*> shown = select_steps(trace, render);
  if (!o.expand.empty()) {
    const auto [row, col] = parse_expand(o.expand);
    for (CellExpansion& e : expand_all(lesson, trace, row, col))
      if (std::any_of(shown.begin(), shown.end(), [&](const Step* s) { return s->id == e.step; }))
        render.expansions.push_back(std::move(e));
  }

  if (o.format == "text") return write_stdout(render_text(lesson, trace, render));
  if (o.format == "json") {
    // Every cell of every step shown, at 17 digits: about 25 bytes a cell.
    std::uint64_t cells = 0;
    for (const Step* step : shown) cells += step->value.n_elem;
    check_output_size(tr("the JSON of this trace"), 25 * cells,
                      tr("pick the steps you need with --step"));
  } else if (o.format == "html") {
    // Only the cells a table shows (at most 16×16, or the corners of a summary),
    // each with its arithmetic of at most a few dozen numbers: under 1 kB a cell.
    std::uint64_t cells = 0;
    for (const Step* step : shown) {
      const bool summarised = should_summarise(step->value, render.summary);
      cells += visible_indices(step->value.n_rows, summarised).size() *
               visible_indices(step->value.n_cols, summarised).size();
    }
    check_output_size(tr("the HTML page of this trace"), 1000 * cells,
                      tr("pick the steps you need with --step or a head with --head"));
  }
  {
    const DocumentScope document;  // every format but text: --lang's language, not LANG's
    write_stdout(o.format == "json"       ? render_json(lesson, trace, render)
                 : o.format == "markdown" ? render_markdown(lesson, trace, render)
                 : o.format == "svg"      ? render_svg(lesson, trace, render)
                 : o.format == "html"     ? render_html(lesson, trace, render)
                                          : render_latex(lesson, trace, render));
  }
  for (const std::string& w : shown_warnings(trace))  // for the person at the terminal
    print_note(tr_format("attn-trace: warning: {}", w));
}

// What `run` traces: the lesson, the format, the backend and the number format.
void add_trace_options(CLI::App* run, RunOptions& options) {
  run->add_option(
      "lesson", options.lesson,
      std::string(tr("Embedded lesson id or path to a lesson .toml (default: river-bank)")));
  run->add_option(
         "--format", options.format,
         std::string(tr("text, json, markdown, latex, html (one self-contained page: every step, "
                        "heatmaps, click a cell for its arithmetic) or svg (the weights as heatmap "
                        "pictures)")))
      ->check(CLI::IsMember({"text", "json", "markdown", "latex", "html", "svg"}));
  run->add_option("--backend", options.backend, std::string(tr("cpu or cuda")))
      ->check(CLI::IsMember({"cpu", "cuda"}));
  run->add_option(
         "--dtype", options.dtype,
         std::string(tr("f64, f32, f16 or bf16: the number format, emulated exactly on the CPU "
                        "(default: the lesson's [model] dtype, else f64)")))
      ->check(CLI::IsMember({"f64", "f32", "f16", "bf16"}));
}

// What `run` shows of the trace and how: the steps and head, the numbers,
// colours, --expand, the width and the text's views.
void add_display_options(CLI::App* run, RunOptions& options) {
  run->add_option(
      "--step", options.steps,
      std::string(tr("Show only these step ids (e.g. head0.weights, or weights for head 0)")));
  run->add_option("--head", options.head, std::string(tr("Show only this head's per-head steps")))
      ->check(CLI::Range(0, 1 << 20));
  run->add_option("--precision", options.precision, std::string(tr("Decimals shown (default 4)")))
      ->check(CLI::Range(0, 17));
  run->add_option("--color", options.color,
                  std::string(tr("auto, always or never (NO_COLOR is respected)")))
      ->check(CLI::IsMember({"auto", "always", "never"}));
  run->add_option(
      "--expand", options.expand,
      std::string(tr("ROW,COL: write out that cell's arithmetic at every step, with the numbers")));
  run->add_option(
         "--width", options.width,
         std::string(tr("Columns no text line may pass; wide matrices split into column blocks "
                        "(default: the terminal's width, 80 when the output is not a terminal)")))
      ->check(CLI::Range(40, 100000));
  run->add_option(
         "--scale", options.scale,
         std::string(tr("auto, global or row: colours span the step's lowest to highest value "
                        "(global), or each row's own (row); auto: row for attention weights, whose "
                        "rows are each one query's distribution, global for the other steps")))
      ->check(CLI::IsMember({"auto", "global", "row"}));
  run->add_option(
         "--view", options.view,
         std::string(
             tr("numbers or heatmap: heatmap draws one shaded cell per attention weight, so a "
                "64- or 128-token pattern fits on a screen (text only)")))
      ->check(CLI::IsMember({"numbers", "heatmap"}));
  CLI::Option* summary = run->add_flag(
      "--summary", options.summary,
      std::string(
          tr("Shape, min/max/mean/std and corners instead of every cell, and each step's FLOPs")));
  run->add_flag(
         "--full", options.full,
         std::string(
             tr("Every cell, even of matrices over 16 rows or columns (summarised by default)")))
      ->excludes(summary);
}

}  // namespace

std::size_t output_width(std::size_t given) {
  constexpr std::size_t kPiped = 80, kNarrowest = 40;
  if (given) return given;
  winsize size{};
  if (isatty(STDOUT_FILENO) == 1 && ioctl(STDOUT_FILENO, TIOCGWINSZ, &size) == 0 && size.ws_col)
    return std::max<std::size_t>(size.ws_col, kNarrowest);
  return kPiped;
}

void write_stdout(const std::string& text) {
  errno = 0;
  if (std::fwrite(text.data(), 1, text.size(), stdout) == text.size() && std::fflush(stdout) == 0)
    return;
  const int error = errno;
  // What could not be written is dropped, so that closing standard output
  // does not fail a second time on it.
  __fpurge(stdout);
  std::clearerr(stdout);
  throw_write_error(error);
}

void write_report(const std::string& text) {
  write_stdout(show_controls_by_line(text));
}

void print_note(std::string_view line) {
  fmt::print(stderr, "{}\n", show_controls(line));
}

std::string write_error_message(int error) {
  return tr_format(
      "write error: {} (standard output): the output is incomplete; write it where there is room",
      error ? std::string_view(std::strerror(error)) : tr("the output could not be written"));
}

void throw_write_error(int error) {
  throw InputError(write_error_message(error));
}

void report_removed_temporaries(const CommitResult& result) {
  for (const std::string& path : result.stale_removed)
    print_note(tr_format("attn-trace: removed {}: a temporary file an interrupted run left", path));
}

void setup_run(CLI::App& app, CommandContext& /*context*/) {
  auto options = std::make_shared<RunOptions>();
  CLI::App* run =
      app.add_subcommand("run", std::string(tr("Trace a lesson: every step of attention, shown")));
  add_trace_options(run, *options);
  add_display_options(run, *options);
  run->callback([options] { run_command(*options); });
}

}  // namespace attn
