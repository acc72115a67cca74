// `attn-trace exercise`: per-student exercise sheets, answer keys and lesson
// files from a seed, written all or nothing into an empty (or --force) folder.
#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cstdint>
#include <filesystem>
#include <string>
#include <system_error>
#include <utility>
#include <vector>

#include "cli/commands.hpp"
#include "core/atomic_file.hpp"
#include "core/error.hpp"
#include "core/folder_lock.hpp"
#include "core/i18n.hpp"
#include "render/escape.hpp"
#include "teach/answer_template.hpp"
#include "teach/answers_csv.hpp"
#include "teach/exercise.hpp"
#include "teach/exercise_sheets.hpp"
#include "teach/moodle.hpp"

namespace attn {

namespace {

struct ExerciseOptions {
  ExerciseSpec spec;
  std::string seed_text;  // --seed, checked as a uint64 by its validator
  std::size_t students = 1;
  std::string roster;
  std::vector<std::string> formats = {"markdown"};
  int answer_decimals = -1;  // -1: decimals + 2
  std::string out;
  bool force = false;
};

using OutputFile = std::pair<std::string, std::string>;  // path under --out, content

bool wants(const ExerciseOptions& o, std::string_view format) {
  return std::find(o.formats.begin(), o.formats.end(), format) != o.formats.end();
}

// The arguments that regenerate the same files (without --out and --force,
// which do not change them; a roster by its file name; --lang when the files
// are not English).
std::string canonical_command(const ExerciseOptions& o) {
  const ExerciseSpec& s = o.spec;
  std::string out = fmt::format("attn-trace exercise --seed {}", s.seed);
  if (o.roster.empty())
    out += fmt::format(" --students {}", o.students);
  else
    out += fmt::format(" --roster {}", std::filesystem::path(o.roster).filename().string());
  out += fmt::format(" --tokens {} --d-model {} --d-k {} --heads {}", s.tokens, s.d_model, s.d_k,
                     s.heads);
  if (s.memory_tokens > 0) out += fmt::format(" --cross {}", s.memory_tokens);
  if (s.causal) out += " --causal";
  if (s.key_padding) out += " --key-padding";
  if (!s.backward.empty()) out += fmt::format(" --backward {}", s.backward);
  out += fmt::format(" --decimals {} --answer-decimals {} --ask {} --format {}", s.decimals,
                     s.answer_decimals, fmt::join(s.ask, " "), fmt::join(o.formats, " "));
  if (document_language() == Language::zh) out += " --lang zh";
  return out;
}

std::string index_markdown(const ExerciseOptions& o, const std::vector<Exercise>& exercises) {
  std::string out = fmt::format(
      "# {}\n\n{}\n\n```\n{} --out {}\n```\n\n", tr("Exercise sheets"),
      tr_format("{} student(s). Regenerate these files, byte for byte, with:", exercises.size()),
      o.spec.command, tr(N_("DIR")));
  if (wants(o, "latex") || wants(o, "html")) {
    std::vector<std::string> links;  // a pair per format, ", " inside
    if (wants(o, "latex")) links.push_back("[sheets.tex](sheets.tex)" + std::string(tr(", ")) + "[keys.tex](keys.tex)");
    if (wants(o, "html")) links.push_back("[sheets.html](sheets.html)" + std::string(tr(", ")) + "[keys.html](keys.html)");
    out += tr_format("To print every student at once: {} (one student per page).\n\n",
                     fmt::join(links, " "));
  }
  if (wants(o, "moodle"))
    out += tr(
        "Moodle question bank: [moodle.xml](moodle.xml), one Cloze question per variant "
        "(Question bank > Import > Moodle XML; docs/exercises.md).\n\n");
  out += fmt::format("{}\n\n| {} | {} | {} | {} |\n|---|---|---:|---|\n",
                     tr("[roster.csv](roster.csv) maps each name to its folder and variant (UTF-8, "
                        "one row per student)."),
                     tr("Student"), tr("Variant"), tr("Draws"), tr("Files"));
  for (const Exercise& e : exercises) {
    std::string files =
        tr_format("[lesson]({0}/lesson.toml) [answers]({0}/answers.toml)", e.student.slug);
    const std::pair<const char*, const char*> kinds[] = {
        {"markdown", "md"}, {"latex", "tex"}, {"html", "html"}};
    for (const auto& [format, ext] : kinds)
      if (wants(o, format))
        files += tr_format(" · [sheet]({0}/sheet.{1}) [key]({0}/key.{1})", e.student.slug, ext);
    const std::string who =
        e.student.id.empty() ? md_text(e.student.name)
                             : md_text(tr_format("{} (ID {})", e.student.name, e.student.id));
    out += fmt::format("| {} | `{:016x}` | {} | {} |\n", who, e.stream_seed, e.draws, files);
  }
  return out;
}

// name,folder,variant,fingerprint: one row per student, RFC 4180 (CRLF line
// ends), UTF-8; the fingerprint of the lesson.toml is what mark checks. An
// id,name roster puts each student's ID first (id,name,folder,...).
std::string roster_csv(const std::vector<Exercise>& exercises) {
  const bool ids = std::any_of(exercises.begin(), exercises.end(),
                               [](const Exercise& e) { return !e.student.id.empty(); });
  std::string out = ids ? "id,name,folder,variant,fingerprint\r\n"
                        : "name,folder,variant,fingerprint\r\n";
  for (const Exercise& e : exercises)
    out += fmt::format("{}{},{},{:016x},{}\r\n", ids ? csv_field(e.student.id) + "," : "",
                       csv_field(e.student.name), csv_field(e.student.slug), e.stream_seed,
                       e.fingerprint);
  return out;
}

std::vector<OutputFile> exercise_files(const ExerciseOptions& o,
                                       const std::vector<Exercise>& exercises) {
  std::vector<OutputFile> files;
  std::vector<SheetModel> models;
  for (const Exercise& e : exercises) {
    const std::string dir = e.student.slug;
    const SheetModel model = make_sheet_model(o.spec, e);
    files.emplace_back(dir + "/lesson.toml", e.lesson_toml);
    files.emplace_back(dir + "/answers.toml", answers_template(model));
    if (wants(o, "markdown")) {
      files.emplace_back(dir + "/sheet.md", render_sheet_markdown(model, false));
      files.emplace_back(dir + "/key.md", render_sheet_markdown(model, true));
    }
    if (wants(o, "latex")) {
      files.emplace_back(dir + "/sheet.tex", render_sheet_latex({model}, false));
      files.emplace_back(dir + "/key.tex", render_sheet_latex({model}, true));
    }
    if (wants(o, "html")) {
      files.emplace_back(dir + "/sheet.html", render_sheet_html({model}, false));
      files.emplace_back(dir + "/key.html", render_sheet_html({model}, true));
    }
    models.push_back(model);
  }
  if (wants(o, "latex")) {
    files.emplace_back("sheets.tex", render_sheet_latex(models, false));
    files.emplace_back("keys.tex", render_sheet_latex(models, true));
  }
  if (wants(o, "html")) {
    files.emplace_back("sheets.html", render_sheet_html(models, false));
    files.emplace_back("keys.html", render_sheet_html(models, true));
  }
  if (wants(o, "moodle")) files.emplace_back("moodle.xml", render_moodle_xml(o.spec, models));
  std::vector<std::string> ids;
  for (const Exercise& e : exercises) ids.push_back(e.student.id);
  files.emplace_back("answers.csv", answers_csv(models, ids));
  files.emplace_back("roster.csv", roster_csv(exercises));
  files.emplace_back("index.md", index_markdown(o, exercises));
  return files;
}

// Refuses a file as --out, before the lock would make the folder.
void check_out_is_folder(const ExerciseOptions& o) {
  std::error_code ec;
  if (std::filesystem::exists(o.out, ec) && !std::filesystem::is_directory(o.out, ec))
    throw InputError(
        tr_format("--out {}: this is a file, not a folder; choose a folder path", o.out));
}

// Refuses a non-empty folder without --force (its lock file, this run's, aside).
void check_out_dir(const ExerciseOptions& o) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const auto other = [](const fs::directory_entry& e) {
    return e.path().filename() != kFolderLockName;
  };
  if (!o.force && std::any_of(fs::directory_iterator(o.out, ec), fs::directory_iterator(), other))
    throw InputError(
        tr_format("--out {}: the folder is not empty; choose an empty or new "
                    "folder, or add --force to write into it (files of the same "
                    "names are replaced, others are left alone)",
                    o.out));
}

void exercise_command(ExerciseOptions& o) {
  std::vector<std::string> formats;  // each once, in a fixed order
  for (const char* format : {"markdown", "latex", "html", "moodle"})
    if (wants(o, format)) formats.push_back(format);
  o.formats = formats;
  ExerciseSpec& spec = o.spec;
  std::from_chars(o.seed_text.data(), o.seed_text.data() + o.seed_text.size(), spec.seed);
  spec.answer_decimals =
      o.answer_decimals >= 0 ? o.answer_decimals : std::min(spec.decimals + 2, kMaxAnswerDecimals);
  normalise_spec(spec);
  spec.command = canonical_command(o);
  const std::vector<Student> students =
      o.roster.empty() ? numbered_students(o.students) : read_roster(o.roster);

  std::vector<Exercise> exercises;
  for (const Student& student : students) exercises.push_back(generate_exercise(spec, student));
  const std::vector<OutputFile> files = [&] {
    const DocumentScope document;  // files: --lang's language, never LANG's
    return exercise_files(o, exercises);
  }();

  check_out_is_folder(o);
  // One writer of the folder at a time, from its check to the commit.
  const FolderLock lock(o.out, FolderLock::Missing::create);
  report_finished_commit(lock);
  check_out_dir(o);
  // With --force, an answers.toml that is not blank (a student's filled-in
  // answers) is never replaced; a blank one of any variant is.
  std::vector<std::string> kept;  // why, one line per file kept
  FileBatch batch(lock);
  for (const auto& [path, content] : files) {
    const std::string target = (std::filesystem::path(o.out) / path).string();
    std::error_code ec;
    if (path == "answers.csv" && std::filesystem::exists(target, ec))
      if (std::string note = kept_answers_csv_note(read_file(target), target); !note.empty()) {
        kept.push_back(std::move(note));
        continue;
      }
    if (path.ends_with("/answers.toml") && std::filesystem::exists(target, ec))
      if (std::string note = kept_answers_note(read_file(target), target, content); !note.empty()) {
        kept.push_back(std::move(note));
        continue;
      }
    batch.add(target, content);
  }
  const CommitResult result =
      batch.commit(o.force, std::string(tr("add --force to replace them (files of other names are "
                                           "left alone)")));
  for (const std::string& note : kept) print_note("attn-trace: " + note);
  report_removed_temporaries(result);
  const auto unchanged = static_cast<std::size_t>(
      std::count_if(result.files.begin(), result.files.end(),
                    [](const CommittedFile& f) { return f.change == FileChange::unchanged; }));
  write_report(tr_format("wrote {} files for {} student(s) to {}{} (index: {})\n",
                         result.files.size() - unchanged, exercises.size(), o.out,
                         unchanged ? tr_format("; {} were already up to date", unchanged) : "",
                         (std::filesystem::path(o.out) / "index.md").string()));
}

}  // namespace

namespace {

// A seed is read from its digits: CLI11's range check goes through a double,
// which would let 18446744073709551616 through as the largest seed.
CLI::Validator seed_validator() {
  return CLI::Validator(
      [](std::string& text) {
        std::uint64_t seed = 0;
        const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), seed);
        if (error != std::errc() || end != text.data() + text.size())
          return tr_format("a seed is a whole number from 0 to 18446744073709551615, not {}", text);
        return std::string();
      },
      "UINT64");
}

}  // namespace

void setup_exercise(CLI::App& app, CommandContext& /*context*/) {
  auto options = std::make_shared<ExerciseOptions>();
  ExerciseSpec& spec = options->spec;
  const auto text = [](std::string_view english) { return std::string(tr(english)); };
  CLI::App* cmd = app.add_subcommand(
      "exercise", text(N_("Per-student exercise sheets, answer keys and lesson files from a seed")));
  cmd->add_option("--seed", options->seed_text,
                  text(N_("Seed of every draw, 0 to 18446744073709551615 (same seed and options: "
                          "same files)")))
      ->required()
      ->check(seed_validator());
  CLI::Option* students =
      cmd->add_option("--students", options->students, text(N_("Number of students (default 1)")))
          ->check(CLI::Range(1, 1000));
  cmd->add_option("--roster", options->roster,
                  text(N_("Roster: one student name per line, or CSV with an id,name header")))
      ->excludes(students);
  const auto up_to = [](std::size_t high) { return CLI::Range(std::size_t{1}, high); };
  cmd->add_option("--tokens", spec.tokens, text(N_("Query tokens n (default 3)")))
      ->check(up_to(kMaxExerciseTokens));
  cmd->add_option("--d-model", spec.d_model, text(N_("Embedding width d (default 3)")))
      ->check(up_to(kMaxExerciseWidth));
  cmd->add_option("--d-k", spec.d_k,
                  text(N_("Per-head query/key/value width (default 2; heads × d_k at most 8)")))
      ->check(up_to(kMaxExerciseWidth));
  cmd->add_option("--heads", spec.heads, text(N_("Heads (default 1)")))->check(up_to(kMaxExerciseHeads));
  cmd->add_flag("--causal", spec.causal, text(N_("Causal mask: no query sees a later key")));
  cmd->add_flag("--key-padding", spec.key_padding, text(N_("The last key is padding (<pad>)")));
  cmd->add_option("--backward", spec.backward,
                  text(N_("A backward pass: upstream (a drawn dL/dC) or half_sq (a drawn target "
                          "T, L = ½‖C − T‖²); upstream when a grad.* step is asked")))
      ->check(CLI::IsMember({"upstream", "half_sq"}));
  cmd->add_option("--cross", spec.memory_tokens,
                  text(N_("Cross-attention: keys and values from a memory of this many tokens")))
      ->check(up_to(kMaxExerciseTokens));
  cmd->add_option("--decimals", spec.decimals, text(N_("Decimals of the inputs (default 1)")))
      ->check(CLI::Range(0, kMaxExerciseDecimals));
  cmd->add_option("--answer-decimals", options->answer_decimals,
                  text(N_("Decimals of the answers and the key (default: --decimals + 2)")))
      ->check(CLI::Range(2, kMaxAnswerDecimals));
  cmd->add_option("--ask", spec.ask,
                  text(N_("Steps the student computes (default: scores scaled weights context "
                          "of head 0)")));
  cmd->add_option("--format", options->formats,
                  text(N_("markdown, latex, html and/or moodle (default markdown)")))
      ->check(CLI::IsMember({"markdown", "latex", "html", "moodle"}));
  cmd->add_option("--out", options->out, text(N_("Folder to write into (must be empty unless --force)")))
      ->required()
      ->check(CLI::Validator(
          [](std::string& dir) {
            return dir.empty() ? std::string(tr("give a folder path")) : std::string();
          },
          "DIR"));
  cmd->add_flag("--force", options->force, text(N_("Write into a non-empty folder")));
  cmd->callback([options] { exercise_command(*options); });
}

}  // namespace attn
