// `attn-trace practice [LESSON]`: asks for one cell at a time in the terminal
// and marks each answer at once (teach/practice.hpp), keeping the learner's
// progress as an answers file that `verify` reads (docs/practice.md).
#include <dlfcn.h>
#include <editline/readline.h>
#include <fmt/format.h>
#include <unistd.h>

#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "backend/backend.hpp"
#include "cli/commands.hpp"
#include "core/atomic_file.hpp"
#include "core/error.hpp"
#include "core/i18n.hpp"
#include "core/install_paths.hpp"
#include "core/lesson_library.hpp"
#include "core/read_input.hpp"
#include "render/escape.hpp"
#include "render/formula.hpp"
#include "render/numbers.hpp"
#include "render/render.hpp"
#include "teach/diagnose.hpp"
#include "teach/practice.hpp"
#include "web/practice_page.hpp"

namespace attn {

namespace {

struct PracticeCommandOptions {
  std::string lesson;  // empty: the first lesson of the course not finished
  std::vector<std::string> steps;
  std::size_t cells = 0;  // 0: the saved number, else 3
  std::string save;       // empty: under the XDG state folder
  bool restart = false;
  std::string format = "text";
  std::size_t width = 0;
};

// $XDG_STATE_HOME/attn-trace, else ~/.local/state/attn-trace (a relative
// XDG_STATE_HOME is ignored, as the XDG base directory spec says).
std::string state_folder() {
  const char* xdg = std::getenv("XDG_STATE_HOME");
  if (xdg && *xdg == '/') return std::string(xdg) + "/attn-trace";
  const char* home = std::getenv("HOME");
  if (!home || !*home)
    throw InputError(std::string(
        tr("practice: neither XDG_STATE_HOME nor HOME is set, so there is no folder to keep "
           "progress in; name a file with --save FILE")));
  return std::string(home) + "/.local/state/attn-trace";
}

// "<id>.answers.toml" (an exercise student's lesson adds its variant): only
// letters, digits, '.', '-' and '_' in the name.
std::string default_save_path(const Lesson& lesson) {
  std::string name = lesson.variant.empty() ? lesson.id : lesson.id + "-" + lesson.variant;
  for (char& c : name)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '_' && c != '.') c = '_';
  if (name.empty() || name.front() == '.') name = "_" + name;
  return state_folder() + "/" + name + ".answers.toml";
}

bool finished_in(const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) return false;
  return PracticeSession::saved_finished(read_file(path));
}

// The lesson named, else the first of the course (lessons' order, each
// lesson before its variants) whose saved practice is not finished.
Lesson lesson_to_practise(const std::string& name) {
  if (!name.empty()) return find_lesson(name);
  const std::vector<CourseEntry> course = teaching_order(all_embedded_lessons());
  for (const CourseEntry& entry : course) {
    if (!finished_in(default_save_path(entry.lesson))) return entry.lesson;
    for (const Lesson& v : entry.variants)
      if (!finished_in(default_save_path(v))) return v;
  }
  return course.front().lesson;
}

#ifndef ATTN_EDIT_LIBRARY
#error "ATTN_EDIT_LIBRARY (libedit's soname) is set by CMakeLists.txt"
#endif

// libedit's readline interface, opened by its soname the first time practice
// reads from a terminal (as OpenBLAS is, core/blas_loader.cpp): linked, its
// library and the three it needs would load at every start of every command.
struct LineEditor {
  decltype(&::readline) read_line = nullptr;
  decltype(&::add_history) remember = nullptr;
};

// The editor, or nullptr when libedit cannot be opened (the prompt then reads
// plain lines, which the terminal still echoes and lets the learner erase).
const LineEditor* line_editor() {
  static const LineEditor editor = [] {
    LineEditor e;
    if (void* library = dlopen(ATTN_EDIT_LIBRARY, RTLD_NOW | RTLD_LOCAL)) {
      e.read_line = reinterpret_cast<decltype(e.read_line)>(dlsym(library, "readline"));
      e.remember = reinterpret_cast<decltype(e.remember)>(dlsym(library, "add_history"));
    }
    return e;
  }();
  return editor.read_line && editor.remember ? &editor : nullptr;
}

// Lines from the learner: libedit's readline (line editing, history) when
// standard input is a terminal, else one line at a time, echoed after the
// prompt so that a piped session reads as a transcript.
class LineReader {
 public:
  LineReader() : terminal_(isatty(STDIN_FILENO) == 1) {}
  std::optional<std::string> read(const std::string& prompt) {
    const LineEditor* editor = terminal_ ? line_editor() : nullptr;
    if (editor) {
      std::fflush(stdout);
      char* line = editor->read_line(prompt.c_str());
      if (!line) return std::nullopt;
      std::string text(line);
      std::free(line);
      if (!text.empty()) editor->remember(text.c_str());
      return text;
    }
    write_stdout(prompt);
    std::string text;
    if (!std::getline(std::cin, text)) {
      write_stdout("\n");
      return std::nullopt;
    }
    if (!terminal_) write_stdout(show_controls(text) + "\n");  // a terminal echoed it
    return text;
  }

 private:
  bool terminal_;
};

// Colour for the verdicts: standard output a terminal, NO_COLOR unset and TERM not dumb.
bool use_colour() {
  const char* no_color = std::getenv("NO_COLOR");
  const char* term = std::getenv("TERM");
  return isatty(STDOUT_FILENO) == 1 && !(no_color && *no_color) &&
         !(term && std::string_view(term) == "dumb");
}

struct Screen {
  std::size_t width = 80;
  bool colour = false;
  // `text` (which may echo a token or a typed answer) with its control
  // characters shown, wrapped to the width.
  std::string paragraph(std::string_view text, std::string_view indent = "") const {
    return wrap_text(show_controls(text), width, indent, std::string(indent) + "  ");
  }
  // Each line of `text` (a hint's lines) as a paragraph of its own.
  std::string lines(std::string_view text, std::string_view indent) const {
    std::string out;
    for (const std::string_view line : text_lines(text)) out += paragraph(line, indent);
    return out;
  }
  // A paragraph that begins with a verdict's name, the name coloured when
  // colour is on (after the wrap, so that the escape codes take no width).
  std::string verdict_paragraph(Verdict v, std::string_view rest, std::string_view indent) const {
    const std::string name(tr(verdict_name(v)));  // "错误（wrong）" under --lang zh
    std::string out = paragraph(name + std::string(rest), indent);
    if (!colour) return out;
    const bool good = v == Verdict::ok || v == Verdict::carried;
    return out.replace(indent.size(), name.size(),
                       fmt::format("\x1b[{}m{}\x1b[0m",
                                   good                  ? "32"
                                   : v == Verdict::wrong ? "31"
                                                         : "33",
                                   name));
  }
};

// What the lesson gives (tokens, X, the weights, the mask), labelled as `run` shows it.
std::string given_text(const Lesson& lesson, const Trace& truth, const Screen& screen) {
  RenderOptions options;
  options.width = screen.width;
  for (const Step& step : truth.steps)
    if (step.made.op == Op::given) options.steps.push_back(step.id);
  std::string out = render_text(lesson, truth, options);
  if (arma::any(arma::vectorise(truth.mask)))
    out += "\n" + screen.paragraph(
                      tr_format("mask: {} cells are masked ({}); `attn-trace run {}` shows which",
                                arma::accu(truth.mask != 0u),
                                lesson.mask_pattern().sparse() ? tr("window/stride pattern")
                                : lesson.causal                ? tr("causal")
                                                               : tr("given"),
                                lesson.id));
  return out;
}

std::string step_intro(const PracticeSession& s, const Step& step, const Screen& screen) {
  const StepFormula f = step_formula(s.lesson(), s.truth(), step, language());
  return "\n" + screen.paragraph(fmt::format("── {} · {}", step.id, step_display_name(step))) +
         screen.paragraph(f.text, "  ") + screen.paragraph(tr_format("shapes: {}", f.shapes), "  ");
}

std::string help_text(const Screen& screen) {
  return screen.paragraph(
      tr("Type the cell's value as you worked it out (keep the decimals you mean: 0.50 is not "
         "0.5; a masked score is -inf). Or: ? this help · h a hint (three, each more: the formula "
         "with your numbers, the terms, the worked value) · s skip this cell · b back to the "
         "cell before · q quit (your progress is kept; run the same command to go on)."));
}

std::string mark_text(const PracticeSession& s, const CellMark& m, const Screen& screen) {
  const Feedback f = practice_feedback(s.truth(), m);
  std::string out = screen.verdict_paragraph(f.verdict, f.rest, "  ");
  for (const std::string& line : f.lines) out += screen.paragraph(line, "  ");
  if (f.verdict == Verdict::wrong)
    out += screen.paragraph(tr("Try again, or: h a hint · s skip · ? help"), "  ");
  return out;
}

// `saved_where`: empty when progress is kept in the default file, else the --save FILE.
std::string summary_text(const PracticeSession& s, const std::string& lesson_arg,
                         const std::string& path, const std::string& saved_where,
                         const Screen& screen) {
  std::string out = "\n" + screen.paragraph(s.finished() ? tr("── Summary: every cell asked")
                                                         : tr("── Summary so far"));
  for (const SummaryLine& line : practice_summary_lines(s, s.summary()))
    out += screen.paragraph(line.text, line.inner ? "    " : "  ");
  out += screen.paragraph(tr_format("attn-trace verify {} --answers {}", lesson_arg, path), "    ");
  if (!s.finished())
    out += screen.paragraph(
        tr_format("To go on where you stopped: attn-trace practice {}",
                  saved_where.empty() ? lesson_arg : lesson_arg + " --save " + saved_where),
        "  ");
  return out;
}

void save(const PracticeSession& s, const std::string& path) {
  write_file_atomically(path, s.answers_toml());
}

// The session at the prompt, until every cell is asked or the learner quits.
void practise(PracticeSession& s, const std::string& path, const Screen& screen) {
  LineReader reader;
  std::string announced;
  while (!s.finished()) {
    const PracticeRecord& r = s.current();
    if (r.cell.step != announced) {
      write_report(step_intro(s, s.truth().at(r.cell.step), screen));
      announced = r.cell.step;
    }
    const std::string was =
        r.state == CellState::answered ? tr_format(" (you wrote {})", r.typed) : "";
    const std::optional<std::string> line =
        reader.read(show_controls(cell_name(s.truth(), r.cell)) + was + " = ? ");
    if (!line || *line == "q") return;
    std::string input = *line;
    std::erase_if(input, [](char ch) { return std::isspace(static_cast<unsigned char>(ch)); });
    if (input.empty()) continue;
    if (input == "?") {
      write_report(help_text(screen));
    } else if (input == "h") {
      write_report(screen.lines(s.hint().text, "  "));
    } else if (input == "s") {
      s.skip();
    } else if (input == "b") {
      if (!s.back()) write_report(screen.paragraph(tr("This is the first cell."), "  "));
      announced.clear();
    } else {
      try {
        const CellMark mark = s.answer(input);
        write_stdout(mark_text(s, mark, screen));  // coloured; its paragraphs show controls
        // After a wrong answer, the next rung of the ladder.
        if (mark.cell.verdict == Verdict::wrong && s.current().hints < 3)
          write_report(screen.lines(s.hint().text, "  "));
      } catch (const InputError& e) {
        write_report(screen.paragraph(e.what(), "  "));
        continue;
      }
    }
    save(s, path);
  }
}

// The lesson to practise and its TOML as its file holds it (the page carries
// the text; a lesson on standard input is read once).
std::pair<Lesson, std::string> lesson_and_text(const std::string& name) {
  for (const EmbeddedLesson& e : embedded_lessons())
    if (name == e.id) return {find_lesson(name), e.text};
  if (!name.empty()) {
    std::string text = read_input(name);
    return {parse_lesson(text, input_name(name)), std::move(text)};
  }
  Lesson lesson = lesson_to_practise(name);
  std::string text = embedded_lesson(lesson.id).text;
  return {std::move(lesson), std::move(text)};
}

// The engine (attn-engine.js, its loader, and attn-engine.wasm.gz, its
// module): beside the program in a build folder, else where `cmake --install`
// puts them (<prefix>/share/attn-trace/).
std::pair<std::string, std::string> engine_files() {
  const std::optional<std::filesystem::path> folder = program_folder();
  std::error_code ec;
  if (folder)
    for (const std::filesystem::path& dir : {*folder, *folder / "../share/attn-trace"})
      if (std::filesystem::is_regular_file(dir / "attn-engine.js", ec) &&
          std::filesystem::is_regular_file(dir / "attn-engine.wasm.gz", ec))
        return {read_file((dir / "attn-engine.js").string()),
                read_file((dir / "attn-engine.wasm.gz").string())};
  throw InputError(std::string(
      tr("practice --format html: this build has no WebAssembly engine (attn-engine.js), which "
         "the page judges with; install emscripten (Debian's package, or scripts/setup "
         "--with-test-tools) and build again, or practise in the terminal (docs/practice.md)")));
}

// `practice LESSON --format html`: the page, on standard output.
void write_page(const PracticeCommandOptions& o) {
  const auto [lesson, text] = lesson_and_text(o.lesson);
  const std::unique_ptr<Backend> backend = make_backend("cpu");
  const PracticeSession s(lesson, *backend, {.steps = o.steps, .cells = o.cells});
  const auto [engine, module] = engine_files();
  const DocumentScope document;
  write_stdout(practice_page(s, {.lesson_text = text,
                                 .engine_script = engine,
                                 .engine_module_gz = module,
                                 .page_script = practice_page_script(),
                                 .page_style = practice_page_style()}));
}

void practice_command(const PracticeCommandOptions& o) {
  if (o.format == "html") return write_page(o);
  const Lesson lesson = lesson_to_practise(o.lesson);
  const std::unique_ptr<Backend> backend = make_backend("cpu");
  PracticeSession s(lesson, *backend, {.steps = o.steps, .cells = o.cells});
  const std::string path = o.save.empty() ? default_save_path(lesson) : o.save;
  const Screen screen{.width = output_width(o.width), .colour = use_colour()};
  std::error_code ec;
  const bool resuming = !o.restart && std::filesystem::exists(path, ec);
  if (resuming) s.restore(read_file(path), path);
  write_report(given_text(lesson, s.truth(), screen));
  std::size_t done = 0;
  for (const PracticeRecord& r : s.records()) done += r.state != CellState::pending;
  write_report("\n" + screen.paragraph(
                          resuming ? tr_format("Resuming: {} of {} cells done; progress is kept "
                                               "in {}. Type ? for help.",
                                               done, s.records().size(), path)
                                   : tr_format("cells to work out, step by step: {}; progress "
                                               "is kept in {}. Type ? for help.",
                                               s.records().size(), path)));
  save(s, path);
  practise(s, path, screen);
  save(s, path);
  write_report(summary_text(s, o.lesson.empty() ? lesson.id : o.lesson, path, o.save, screen));
}

}  // namespace

void setup_practice(CLI::App& app, CommandContext& /*context*/) {
  auto options = std::make_shared<PracticeCommandOptions>();
  CLI::App* cmd = app.add_subcommand(
      "practice",
      std::string(tr("Practise a lesson by hand: one cell at a time, each answer marked at once "
                     "(docs/practice.md)")));
  cmd->add_option("lesson", options->lesson,
                  std::string(tr("Embedded lesson id or path to a lesson .toml (default: the "
                                 "first lesson of the course not finished)")));
  cmd->add_option("--step", options->steps,
                  std::string(tr("Only this step (repeatable), e.g. --step head0.scaled")))
      ->type_name("ID");
  cmd->add_option("--cells", options->cells, std::string(tr("Cells asked per step (default 3)")))
      ->check(CLI::Range(1, 1000));
  cmd->add_option("--save", options->save,
                  std::string(tr("The answers file progress is kept in (default: "
                                 "$XDG_STATE_HOME/attn-trace/LESSON.answers.toml)")));
  cmd->add_flag("--restart", options->restart,
                std::string(tr("Start over instead of going on from the saved progress")));
  cmd->add_option(
         "--format", options->format,
         std::string(tr("text (the terminal) or html (a page that asks and marks in a browser, "
                        "written to standard output)")))
      ->check(CLI::IsMember({"text", "html"}));
  cmd->add_option("--width", options->width,
                  std::string(tr("Columns no line may pass (default: the terminal's width, 80 "
                                 "when the output is not a terminal)")))
      ->check(CLI::Range(40, 100000));
  cmd->callback([options] { practice_command(*options); });
}

}  // namespace attn
