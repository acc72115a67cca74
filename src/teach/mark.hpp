// Marking a class (docs/marking.md): every student folder that `exercise`
// wrote, its answers.toml verified against its own lesson.toml, scored with
// points, and written up as a gradebook (marks.csv), a short feedback file per
// student and a class summary of the mistakes made.
#pragma once

#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "teach/verify.hpp"

namespace attn {

// What each asked step is worth and what fraction of a cell's share each
// status earns. A step's points are shared equally among its cells.
struct MarkScheme {
  std::map<std::string, double> points;                        // step id or short name -> points
  double default_points = 1;                                   // a step not in `points`
  double ok = 1, carried = 1, rounded = 0.5, imprecise = 0.5;  // wrong, blank: 0

  double points_for(const Trace& trace, const std::string& step) const;
  double credit(Verdict verdict) const;
};

// Reads a points file (TOML):
//   [points]          # per asked step, by id or short name; others default
//   scores = 2
//   "head0.weights" = 3
//   default = 1
//   [credit]          # the fraction of a cell's points, 0 to 1
//   carried = 1
//   rounded = 0.5
//   imprecise = 0.5
// Throws InputError naming the file, key and line for anything else.
MarkScheme read_mark_scheme(const std::string& path);

struct StepMark {
  std::string step;  // the asked step's id
  double points = 0, out_of = 0;
  std::size_t ok = 0, carried = 0, rounded = 0, imprecise = 0, wrong = 0, blank = 0;
  std::size_t unreadable = 0;  // cells that hold no number (verify's `unreadable`)
};

// A cell whose answer was not read as a number: to read again on the paper.
struct UnreadableCell {
  std::string cell;    // "head0.weights[1,1]", as first_wrong names cells
  std::string shown;   // as feedback.md names it: "`head0.weights` [1, 1] (the, cat)"
  std::string typed;   // the cell as written
  std::string reason;  // why it is no number, in the documents' language
};

struct StudentMark {
  std::string folder;  // the student's folder, relative to the class folder
  std::string id;      // roster.csv's student ID; "" when it has none
  std::string name;    // roster.csv's name (the lesson's only without a name on the roster)
  std::string variant;
  std::vector<StepMark> steps;  // the asked steps, in the lesson's order
  double total = 0, out_of = 0;
  std::string first_wrong;         // "head0.scores[1,2]", or "" when nothing is wrong
  std::string mistake;             // the diagnosis of the first wrong value, "" when none is named
  std::set<std::string> mistakes;  // every mistake behind a wrong or rounded value
  std::string problem;             // why the folder could not be marked ("" when it was)
  // answers.toml is the untouched template (every cell blank): no points, not
  // counted in the class means, listed apart (problem stays "").
  bool not_handed_in = false;
  bool from_sheet = false;  // answers from the class spreadsheet's row, not answers.toml
  std::vector<UnreadableCell> unreadable;  // in the order of the steps and cells
  std::size_t imprecise = 0;               // cells right but written with too few decimals
  int write_decimals = 0;                  // imprecise > 0: the decimals the sheet asks for
  bool linked = false;  // problem: the folder or one of its files is a symbolic link (no feedback)
  bool tampered = false;       // problem: lesson.toml is not what exercise wrote for this student
  std::string fingerprint;     // lesson_fingerprint of the folder's lesson.toml
  std::string lesson_student;  // the student its lesson.toml names
  bool fingerprint_checked = false;       // against roster.csv's (false: nothing to check against)
  std::string warning;                    // marked, but its lesson.toml is also in another folder
  std::string feedback;                   // feedback.md for the student
  std::set<std::string> point_keys_used;  // keys of MarkScheme::points naming an asked step
};

// What the teacher's roster.csv says of a student folder.
enum class RosterStatus {
  listed,      // a row of roster.csv names the folder
  not_listed,  // the class has a roster.csv, and no row names the folder
  no_roster,   // the class has no roster.csv: nothing to check against
};

struct RosterEntry {
  std::string folder;       // one plain folder name, inside the class folder
  std::string id;           // roster.csv's student ID; "" when it has none
  std::string name;         // roster.csv's; "" when not listed or it has no name column
  std::string variant;      // roster.csv's; "" when it has none
  std::string fingerprint;  // roster.csv's; "" when it has none (an older attn-trace wrote it)
  int line = 0;             // its line in roster.csv
  RosterStatus status = RosterStatus::no_roster;
};

// The longest folder name roster.csv may give, in bytes (as most file systems allow).
inline constexpr std::size_t kMaxRosterFolderBytes = 255;

// Marks one student folder (lesson.toml and answers.toml). A problem with the
// folder's files (missing, unreadable, another student's answers, a lesson.toml
// that is not the one the roster's fingerprint, name and variant say) is
// recorded in `problem`, never thrown: one student's file does not stop the class.
// Where a student's answers come from: empty, the folder's answers.toml;
// mark --answers gives the class spreadsheet's row of the lesson's variant
// (teach/answers_csv.hpp). An InputError it throws is the student's problem.
using AnswersSource = std::function<std::vector<Answer>(const Lesson& lesson, const Trace& truth)>;

StudentMark mark_student(const std::filesystem::path& class_dir, const RosterEntry& entry,
                         const MarkScheme& scheme, const AnswersSource& source = {});

// The student folders of `class_dir`: those roster.csv lists, in its order
// (a folder it names without a lesson.toml is kept: that student is then not
// marked, and says why), then every other sub-folder holding a lesson.toml,
// by name. Throws InputError when there are none, or roster.csv has no folder
// column, or a row of it is not what exercise writes: a folder that is not one
// plain name of a sub-folder (a path, "..", empty, starting with '.', a control
// character, longer than kMaxRosterFolderBytes), a folder or name on two rows,
// an empty or over-long name, a malformed fingerprint; the message names
// roster.csv's line and the fix. Nothing of a class with such a roster is marked.
std::vector<RosterEntry> class_roster(const std::filesystem::path& class_dir);

// Every student folder, marked side by side on the machine's cores. Throws
// InputError naming `points_file` when a key of scheme.points names a step no
// student was asked for (a typo would otherwise silently score 1 point).
std::vector<StudentMark> mark_class(const std::filesystem::path& class_dir,
                                    const MarkScheme& scheme, const std::string& points_file);
// The same, for the student folders `roster` (class_roster of class_dir), read
// beforehand: a command reads them in the terminal's language, then marks the
// class inside a DocumentScope, so that the files' words follow --lang.
std::vector<StudentMark> mark_class(const std::filesystem::path& class_dir,
                                    const std::vector<RosterEntry>& roster,
                                    const MarkScheme& scheme, const std::string& points_file,
                                    const AnswersSource& source = {});

// A student's status in marks.csv and marks.json: "marked", "not handed in",
// "tampered" or "not marked" (a problem kept the student from being marked).
std::string_view mark_status(const StudentMark& m);

// The points of each asked step and the total as marks.csv and feedback.md
// print them: at most two decimals, rounded so that the printed steps add up
// to the printed total (largest remainders: three steps of 1/3 each print as
// 0.34, 0.33, 0.33 and a total of 1). `steps` follows m.steps.
struct PrintedPoints {
  std::vector<std::string> steps;
  std::string total;
};
PrintedPoints printed_points(const StudentMark& m);

// The rows of CSV text (RFC 4180: quoted fields, "" for a quote inside, CRLF
// or LF line ends); a UTF-8 byte-order mark at the start is skipped. Any text
// is some rows (an unclosed quote runs to the end): it throws nothing. With
// `lines`, the line each row starts on (1 for the first) is put there; with
// `quoted`, whether each field was written in quotes.
std::vector<std::vector<std::string>> csv_rows(std::string_view text,
                                               std::vector<int>* lines = nullptr,
                                               std::vector<std::vector<bool>>* quoted = nullptr);

// marks.csv: UTF-8 with a byte-order mark (so that spreadsheet programs read
// the names right), RFC 4180 quoting, one row per student; the student ID is
// the first column (empty for a class without IDs), the status the fifth.
std::string marks_csv(const std::vector<StudentMark>& marks);

// marks.json: the same marks for tools (docs/json.md#mark---format-json),
// with each step's cell counts by status.
std::string marks_json(const std::vector<StudentMark>& marks);

// summary.md: the class at a glance and what to re-teach: how many students
// made each mistake, and each step's mean score; then the tampered folders,
// those not marked, and those whose lesson.toml could not be checked.
std::string class_summary(const std::vector<StudentMark>& marks,
                          const std::string& sheet_warning = "");

}  // namespace attn
