// The class spreadsheet, answers.csv: written blank by exercise, read back
// by mark --answers (docs/marking.md), directly or through LibreOffice.
#include "teach/answers_csv.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <map>
#include <unordered_map>

#include "core/error.hpp"
#include "core/i18n.hpp"
#include "core/read_input.hpp"
#include "render/escape.hpp"
#include "teach/mark.hpp"
#include "teach/names.hpp"
#include "teach/typed_number.hpp"

extern char** environ;

namespace attn {

namespace {

namespace fs = std::filesystem;

// A token as its label: "2 the" when the token repeats in `labels`.
std::string label_at(const std::vector<std::string>& labels, std::size_t i) {
  const auto same = std::count(labels.begin(), labels.end(), labels[i]);
  return same > 1 ? fmt::format("{} {}", i, labels[i]) : labels[i];
}

std::string csv_line(const std::vector<std::string>& fields) {
  std::string out;
  for (std::size_t i = 0; i < fields.size(); ++i) out += (i ? "," : "") + csv_field(fields[i]);
  return out + "\r\n";
}

bool hex_variant(std::string_view v) {
  return v.size() == 16 && std::all_of(v.begin(), v.end(), [](char c) {
           return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
         });
}

std::string trimmed(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return std::string(s);
}

}  // namespace

std::string answer_column(const std::string& step, const std::vector<std::string>& rows,
                          const std::vector<std::string>& cols, std::size_t r, std::size_t c) {
  return fmt::format("{}[{},{}]", step, label_at(rows, r), label_at(cols, c));
}

std::string answers_csv(const std::vector<SheetModel>& models,
                        const std::vector<std::string>& ids) {
  std::vector<std::string> header;
  for (const char* column : {N_("id"), N_("name"), N_("variant")}) header.emplace_back(tr(column));
  std::vector<std::string> cells;  // the cell columns, in the first student's order
  for (const SheetModel& model : models)
    for (const SheetMatrix& m : model.asked)
      for (std::size_t r = 0; r < m.rows.size(); ++r)
        for (std::size_t c = 0; c < m.cols.size(); ++c)
          if (std::string column = answer_column(m.id, m.rows, m.cols, r, c);
              std::find(cells.begin(), cells.end(), column) == cells.end())
            cells.push_back(std::move(column));
  header.insert(header.end(), cells.begin(), cells.end());
  std::string out = "\xEF\xBB\xBF" + csv_line(header);
  for (std::size_t i = 0; i < models.size(); ++i) {
    std::vector<std::string> row = {i < ids.size() ? ids[i] : "", models[i].student,
                                    models[i].variant};
    row.resize(header.size());
    out += csv_line(row);
  }
  return out;
}

std::string kept_answers_csv_note(std::string_view existing, const std::string& path) {
  const std::vector<std::vector<std::string>> rows = csv_rows(existing);
  for (std::size_t r = 1; r < rows.size(); ++r)
    for (std::size_t c = 3; c < rows[r].size(); ++c)
      if (!trimmed(rows[r][c]).empty())
        return tr_format(
            "kept {}: it holds answers typed in (not the blank sheet); delete it (or "
            "move it away) and run again to get a blank one",
            path);
  return "";
}

const AnswerSheetRow* AnswerSheet::row_of(std::string_view variant) const {
  for (const AnswerSheetRow& row : rows)
    if (row.variant == variant) return &row;
  return nullptr;
}

namespace {

void check_columns(const AnswerSheet& sheet, int header_line) {
  std::map<std::string, std::size_t> seen;
  for (std::size_t c = 0; c < sheet.columns.size(); ++c) {
    const std::string& name = sheet.columns[c];
    if (name.empty())
      throw InputError(
          tr_format("{}:{}: column {} has no header; name each answer column as exercise wrote it, "
                    "e.g. head0.weights[the,cat], or delete the column",
                    sheet.origin, header_line, c + 4));
    if (const auto [it, fresh] = seen.emplace(name, c); !fresh)
      throw InputError(
          tr_format("{}:{}: columns {} and {} are both headed {}; give each cell one "
                    "column",
                    sheet.origin, header_line, it->second + 4, c + 4, name));
  }
}

// A row's variant checked: 16 hex digits, on no other row.
void check_variant(const AnswerSheet& sheet, const AnswerSheetRow& row) {
  if (!hex_variant(row.variant))
    throw InputError(tr_format(
        "{}:{}: the variant \"{}\" is not one exercise writes (16 hex digits, as in "
        "roster.csv); a spreadsheet may have read it as a number: set the column's type to "
        "Text and copy the variants from roster.csv again",
        sheet.origin, row.line, show_controls(row.variant)));
  if (const AnswerSheetRow* other = sheet.row_of(row.variant))
    throw InputError(tr_format("{}:{}: variant {} is also on line {}; keep one row per student",
                               sheet.origin, row.line, row.variant, other->line));
}

}  // namespace

namespace {

bool all_digits(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

// "-0", "12": what comes before a decimal comma.
bool integer_cell(std::string_view s) {
  if (!s.empty() && (s.front() == '-' || s.front() == '+')) s.remove_prefix(1);
  return all_digits(s);
}

// A row typed with decimal commas outside quotes ("-0,178" as two cells "-0",
// "178"): each integer cell joined with the all-digits cell after it. True,
// with `row` mended, only when that gives exactly `columns` cells.
bool join_decimal_commas(AnswerSheetRow& row, std::size_t columns) {
  std::vector<std::string> cells;
  std::vector<bool> joined;
  for (std::size_t k = 0; k < row.cells.size(); ++k) {
    const std::string here = trimmed(row.cells[k]);
    if (k + 1 < row.cells.size() && integer_cell(here) && all_digits(trimmed(row.cells[k + 1]))) {
      cells.push_back(here + "," + trimmed(row.cells[++k]));
      joined.push_back(true);
    } else {
      cells.push_back(row.cells[k]);
      joined.push_back(false);
    }
  }
  if (cells.size() != columns) return false;
  row.cells = std::move(cells);
  row.joined = std::move(joined);
  return true;
}

// A row with more cells than the header has columns: mended when its decimal
// commas were split (see join_decimal_commas), otherwise an error saying why.
void fit_row(const AnswerSheet& sheet, AnswerSheetRow& row) {
  const std::size_t columns = sheet.columns.size();
  row.joined.assign(row.cells.size(), false);
  if (row.cells.size() <= columns || join_decimal_commas(row, columns)) return;
  throw InputError(tr_format(
      "{}:{}: {} cells, but the header names {} columns; the row probably holds decimal commas "
      "typed without quotes (-0,178 is then two cells, -0 and 178): put each such number in "
      "quotes (\"-0,178\") or write it with a decimal point (-0.178), and check that every value "
      "is under its column",
      sheet.origin, row.line, row.cells.size() + 3, columns + 3));
}

// The cells of row r that were numbers, not text, in the spreadsheet.
std::size_t unquoted_cells(const std::vector<std::vector<std::string>>& rows,
                           const std::vector<std::vector<bool>>& quoted, std::size_t r) {
  std::size_t n = 0;
  for (std::size_t c = 3; c < rows[r].size() && c < quoted[r].size(); ++c)
    n += !quoted[r][c] && !trimmed(rows[r][c]).empty();
  return n;
}

}  // namespace

AnswerSheet parse_answer_sheet(std::string_view csv_text, const std::string& origin,
                               bool types_known) {
  AnswerSheet sheet;
  sheet.origin = origin;
  std::vector<int> lines;
  std::vector<std::vector<bool>> quoted;
  const std::vector<std::vector<std::string>> rows = csv_rows(csv_text, &lines, &quoted);
  if (rows.empty() || rows[0].size() < 3)
    throw InputError(
        tr_format("{}: no header row of id, name, variant and the answer columns; start from the "
                  "answers.csv that exercise wrote",
                  origin));
  for (std::size_t c = 3; c < rows[0].size(); ++c) sheet.columns.push_back(trimmed(rows[0][c]));
  check_columns(sheet, lines[0]);
  for (std::size_t r = 1; r < rows.size(); ++r) {
    AnswerSheetRow row;
    row.line = lines[r];
    const auto field = [&](std::size_t c) {
      return c < rows[r].size() ? trimmed(csv_value(rows[r][c])) : std::string();
    };
    row.id = field(0), row.name = field(1), row.variant = field(2);
    for (std::size_t c = 3; c < rows[r].size(); ++c) row.cells.push_back(rows[r][c]);
    const bool answers = std::any_of(row.cells.begin(), row.cells.end(),
                                     [](const std::string& s) { return !trimmed(s).empty(); });
    if (row.variant.empty() && !answers) continue;  // an empty line
    if (row.variant.empty())
      throw InputError(
          tr_format("{}:{}: a row with answers but no variant; copy the student's "
                    "variant from roster.csv into column 3",
                    origin, row.line));
    check_variant(sheet, row);
    fit_row(sheet, row);
    if (types_known) sheet.number_cells += unquoted_cells(rows, quoted, r);
    sheet.rows.push_back(std::move(row));
  }
  return sheet;
}

std::string number_cells_warning(const AnswerSheet& sheet) {
  if (sheet.number_cells == 0) return "";
  return tr_format(
      "{}: {} answer cell(s) are numbers in the spreadsheet, not text, so it may have changed "
      "what was typed (\"-0,289\" read as -289, 0.250 kept as 0.25) and the marks with it; "
      "open answers.csv again with every column's type set to Text (docs/marking.md), check "
      "those cells against the papers, save and mark again",
      sheet.origin, sheet.number_cells);
}

namespace {

// The directory of `program` on PATH, "" when it is not there.
std::string on_path(const std::string& program) {
  const char* path = std::getenv("PATH");
  std::string_view dirs = path ? path : "";
  while (!dirs.empty()) {
    const std::size_t end = dirs.find(':');
    const fs::path candidate = fs::path(std::string(dirs.substr(0, end))) / program;
    if (::access(candidate.c_str(), X_OK) == 0) return candidate.string();
    if (end == std::string_view::npos) break;
    dirs.remove_prefix(end + 1);
  }
  return "";
}

// Runs `argv`, its output to /dev/null; its exit status (-1: it did not start).
int run_quietly(const std::vector<std::string>& argv) {
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0);
  posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0);
  pid_t pid = 0;
  const int started = posix_spawn(&pid, args[0], &actions, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (started != 0) return -1;
  int status = 0;
  while (waitpid(pid, &status, 0) < 0)
    if (errno != EINTR) return -1;
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

// A private temporary folder, removed with this object.
struct TemporaryFolder {
  TemporaryFolder() {
    const char* base = std::getenv("TMPDIR");
    std::string pattern = (fs::path(base && *base ? base : "/tmp") / "attn-trace-XXXXXX").string();
    if (!::mkdtemp(pattern.data()))
      throw InputError(
          tr_format("cannot make a temporary folder under {}: {}; set TMPDIR to a "
                    "writable folder",
                    fs::path(pattern).parent_path().string(), std::strerror(errno)));
    path = pattern;
  }
  ~TemporaryFolder() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
  TemporaryFolder(const TemporaryFolder&) = delete;
  TemporaryFolder& operator=(const TemporaryFolder&) = delete;
  fs::path path;
};

// The first sheet of a spreadsheet as CSV text, by LibreOffice.
std::string spreadsheet_as_csv(const std::string& path) {
  const std::string soffice = on_path("soffice");
  if (soffice.empty())
    throw InputError(tr_format(
        "{}: reading a spreadsheet needs LibreOffice (soffice), which is not on PATH; install "
        "it (Debian: apt install libreoffice-calc-nogui) or save the sheet as CSV (UTF-8, "
        "comma-separated) and give that file",
        path));
  std::error_code ec;
  if (!fs::is_regular_file(path, ec))
    throw InputError(
        tr_format("{}: no such file; give the spreadsheet saved from answers.csv", path));
  const TemporaryFolder temp;
  const int status = run_quietly(
      {soffice, "-env:UserInstallation=file://" + (temp.path / "profile").string(), "--headless",
       "--convert-to", "csv:Text - txt - csv (StarCalc):44,34,76,1,,0,true,true,true", "--outdir",
       (temp.path / "out").string(), fs::absolute(path).string()});
  const fs::path csv = temp.path / "out" / (fs::path(path).stem().string() + ".csv");
  if (status != 0 || !fs::is_regular_file(csv, ec))
    throw InputError(tr_format(
        "{}: LibreOffice could not convert it to CSV (soffice exit status {}); open it in "
        "LibreOffice or Excel to check it, or save it as CSV (UTF-8) and give that file",
        path, status));
  return read_input(csv.string());
}

}  // namespace

AnswerSheet read_answer_sheet(const std::string& path) {
  std::string extension = fs::path(path).extension().string();
  std::transform(extension.begin(), extension.end(), extension.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  const bool spreadsheet = extension == ".xlsx" || extension == ".ods" || extension == ".xls";
  AnswerSheet sheet = spreadsheet ? parse_answer_sheet(spreadsheet_as_csv(path), path, true)
                                  : parse_answer_sheet(read_input(path), path);
  const bool typed = std::any_of(sheet.rows.begin(), sheet.rows.end(), [](const AnswerSheetRow& r) {
    return std::any_of(r.cells.begin(), r.cells.end(),
                       [](const std::string& s) { return !trimmed(s).empty(); });
  });
  if (!typed)
    throw InputError(tr_format(
        "{}: no cell holds a value; type the students' numbers and save the sheet first", path));
  return sheet;
}

namespace {

struct CellAt {
  std::size_t answer = 0, r = 0, c = 0;
};

// Each column's cell in the answers (one blank whole-matrix answer per asked
// step): by its label, or as STEP[ROW,COL] with indices.
std::unordered_map<std::string, CellAt> cells_by_column(const Trace& truth,
                                                        const std::vector<Answer>& answers) {
  std::unordered_map<std::string, CellAt> out;
  for (std::size_t i = 0; i < answers.size(); ++i) {
    const Step& s = truth.at(answers[i].step);
    for (std::size_t r = 0; r < s.value.n_rows; ++r)
      for (std::size_t c = 0; c < s.value.n_cols; ++c) {
        out.emplace(answer_column(s.id, s.rows, s.cols, r, c), CellAt{i, r, c});
        out.emplace(fmt::format("{}[{},{}]", s.id, r, c), CellAt{i, r, c});
      }
  }
  return out;
}

}  // namespace

std::vector<Answer> sheet_answers(const AnswerSheet& sheet, const AnswerSheetRow& row,
                                  const Lesson& lesson, const Trace& truth) {
  if (!row.name.empty() && !lesson.student.empty() && nfc(row.name) != nfc(lesson.student))
    throw InputError(tr_format(
        "{}:{}: the row of variant {} names {}, but that variant's lesson.toml is {}'s; check "
        "that the row's variant is the one roster.csv gives {}",
        sheet.origin, row.line, row.variant, row.name, lesson.student, row.name));
  std::vector<Answer> answers;
  for (const std::string& asked : lesson.asked) {
    Answer a;
    a.step = truth.id_of(asked);
    const arma::mat& value = truth.at(a.step).value;
    a.values.assign(value.n_rows,
                    std::vector<WrittenNumber>(value.n_cols, {arma::datum::nan, 0, true}));
    a.key = a.step;
    a.line = a.step_line = a.values_line = row.line;
    a.index = answers.size();
    answers.push_back(std::move(a));
  }
  const auto columns = cells_by_column(truth, answers);
  for (std::size_t k = 0; k < row.cells.size(); ++k) {
    if (trimmed(row.cells[k]).empty()) continue;
    const auto it = columns.find(sheet.columns[k]);
    if (it == columns.end())
      throw InputError(tr_format(
          "{}:{}: column {} ({}) names no cell of the steps this student was asked; head each "
          "column as exercise wrote it, e.g. {}",
          sheet.origin, row.line, k + 4, show_controls(sheet.columns[k]),
          columns.empty() ? std::string("head0.weights[the,cat]") : columns.begin()->first));
    Answer& a = answers[it->second.answer];
    a.values[it->second.r][it->second.c] =
        read_typed_cell(row.cells[k], it->second.r, it->second.c, a.readings);
    if (k < row.joined.size() && row.joined[k] && !a.readings.empty() &&
        !a.readings.back().unreadable)
      a.readings.back().note = decimal_comma_note(row.cells[k]);
  }
  return answers;
}

}  // namespace attn
