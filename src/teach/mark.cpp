// Marking a class: each student folder verified and scored, then the
// gradebook, the feedback files and the class summary written from the marks.
#include "teach/mark.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <set>
#include <utility>

#include "backend/backend.hpp"
#include "core/atomic_file.hpp"
#include "core/error.hpp"
#include "core/parallel.hpp"
#include "core/pipeline.hpp"
#include "core/toml_read.hpp"
#include "render/escape.hpp"
#include "render/json_writer.hpp"
#include "render/numbers.hpp"
#include "teach/answers.hpp"

namespace attn {

namespace fs = std::filesystem;

namespace {

constexpr const char* kLessonFile = "lesson.toml";
constexpr const char* kAnswersFile = "answers.toml";
constexpr const char* kRosterFile = "roster.csv";
constexpr const char* kUnexplained = "none of the common mistakes";

// Points as people write them: "2", "1.5", "0.33" (two decimals at most).
std::string points_text(double points) {
  std::string s = fmt::format("{:.2f}", points);
  while (s.back() == '0') s.pop_back();
  if (s.back() == '.') s.pop_back();
  return s == "-0" ? "0" : s;
}

// "head0.scores[1,2] (cat, sat)", for Markdown (the tokens escaped).
std::string cell_text(const Trace& truth, const std::string& step, std::size_t row,
                      std::size_t col) {
  const Step& s = truth.at(step);
  return fmt::format("{}[{},{}] ({}, {})", step, row, col, md_text(s.rows.at(row)),
                     md_text(s.cols.at(col)));
}

// The diagnosis that names the mistake of a wrong cell: the cell's own first
// one, else the one its whole answer has.
const Diagnosis* cell_diagnosis(const AnswerVerdict& a, const AnswerCell& c) {
  if (!c.diagnoses.empty()) return &c.diagnoses.front();
  return a.diagnosis ? &*a.diagnosis : nullptr;
}

// The answer and the cell of `report` at the first wrong value, if it has one.
std::pair<const AnswerVerdict*, const AnswerCell*> first_wrong_cell(const VerifyReport& report) {
  if (!report.first_wrong) return {nullptr, nullptr};
  const CarriedSource& w = *report.first_wrong;
  for (const AnswerVerdict& a : report.answers)
    for (const AnswerCell& c : a.cells)
      if (a.answer.step == w.step && c.row == w.row && c.col == w.col &&
          c.verdict == Verdict::wrong)
        return {&a, &c};
  return {nullptr, nullptr};
}

// Every mistake behind a value not right: the diagnosis labels of wrong and
// rounded cells, kUnexplained for a wrong cell no common mistake explains.
std::set<std::string> mistakes_made(const VerifyReport& report) {
  std::set<std::string> out;
  for (const AnswerVerdict& a : report.answers)
    for (const AnswerCell& c : a.cells)
      if (c.verdict == Verdict::wrong || c.verdict == Verdict::rounded) {
        const Diagnosis* d = cell_diagnosis(a, c);
        out.insert(d ? d->label : std::string(kUnexplained));
      }
  return out;
}

// The first value rounded too early, and why, for the student.
std::string rounding_sentence(const VerifyReport& report, const Trace& truth) {
  for (const AnswerVerdict& a : report.answers)
    for (const AnswerCell& c : a.cells)
      if (c.verdict == Verdict::rounded && !c.diagnoses.empty())
        return fmt::format(
            "- **Rounded too early:** {}: you wrote {}; the value is {} — {}. Keep at least "
            "5 decimals while you work and round only what you write.\n",
            cell_text(truth, a.answer.step, c.row, c.col),
            format_fixed(c.given.value, c.given.decimals),
            format_fixed(c.expected, std::max(c.given.decimals, 1) + 1),
            c.diagnoses.front().detail.in(Language::en));
  return "";
}

// The counts of a step's cells as a phrase: "6 right, 3 right on your own numbers".
std::string cells_phrase(const StepMark& s) {
  const std::pair<std::size_t, const char*> parts[] = {
      {s.ok, "right"},
      {s.carried, "right on your own earlier numbers"},
      {s.rounded, "off only by rounding too early"},
      {s.imprecise, "right but with too few decimals"},
      {s.wrong, "wrong"},
      {s.blank, "not answered"}};
  std::vector<std::string> out;
  for (const auto& [count, words] : parts)
    if (count) out.push_back(fmt::format("{} {}", count, words));
  return fmt::format("{}", fmt::join(out, ", "));
}

// The asked steps' marks: each cell earns its share of the step's points times
// the credit of its verdict; a cell no answer gives earns nothing (blank).
std::vector<StepMark> step_marks(const Lesson& lesson, const Trace& truth,
                                 const VerifyReport* report, const MarkScheme& scheme) {
  std::vector<std::string> asked;
  for (const std::string& name : lesson.asked) asked.push_back(truth.id_of(name));
  if (asked.empty() && report)  // not an exercise: the steps answered
    for (const AnswerVerdict& a : report->answers)
      if (std::find(asked.begin(), asked.end(), a.answer.step) == asked.end())
        asked.push_back(a.answer.step);
  std::vector<StepMark> out;
  for (const std::string& id : asked) {
    StepMark s;
    s.step = id;
    s.out_of = scheme.points_for(truth, id);
    const arma::mat& value = truth.at(id).value;
    // Each cell once, with its best verdict if it was answered twice.
    std::map<std::pair<std::size_t, std::size_t>, Verdict> cells;
    if (report)
      for (const AnswerVerdict& a : report->answers)
        if (a.answer.step == id)
          for (const AnswerCell& c : a.cells) {
            const auto [it, fresh] = cells.try_emplace({c.row, c.col}, c.verdict);
            if (!fresh) it->second = std::min(it->second, c.verdict);
          }
    double earned = 0;
    for (std::size_t r = 0; r < value.n_rows; ++r)
      for (std::size_t c = 0; c < value.n_cols; ++c) {
        const auto it = cells.find({r, c});
        const Verdict v = it == cells.end() ? Verdict::missing : it->second;
        earned += scheme.credit(v);
        s.ok += v == Verdict::ok;
        s.carried += v == Verdict::carried;
        s.rounded += v == Verdict::rounded;
        s.imprecise += v == Verdict::imprecise;
        s.wrong += v == Verdict::wrong;
        s.blank += v == Verdict::missing;
      }
    s.points = s.out_of * earned / static_cast<double>(value.n_elem);
    out.push_back(s);
  }
  return out;
}

// The keys of the scheme's points that name one of `steps`.
std::set<std::string> keys_used(const MarkScheme& scheme, const Trace& truth,
                                const std::vector<StepMark>& steps) {
  std::set<std::string> out;
  for (const auto& [name, value] : scheme.points)
    for (const StepMark& s : steps)
      if (truth.id_of(name) == s.step) out.insert(name);
  return out;
}

// `folder` is the student's folder as the instructor names it (class folder included).
std::string feedback_markdown(const StudentMark& m, const Trace& truth, const VerifyReport& report,
                              const std::string& folder) {
  std::string out = fmt::format(
      "# Feedback: {}\n\nVariant {} · marked from {}/{} · **{} of {} "
      "points**\n\n| Step | Points | Your values |\n|---|---:|---|\n",
      md_text(m.name), m.variant, folder, kAnswersFile, points_text(m.total),
      points_text(m.out_of));
  for (const StepMark& s : m.steps)
    out += fmt::format("| {} | {} of {} | {} |\n", s.step, points_text(s.points),
                       points_text(s.out_of), cells_phrase(s));
  if (const auto [a, c] = first_wrong_cell(report); c) {
    out += fmt::format("\n- **First mistake:** {}: you wrote {}; the value is {}.\n",
                       cell_text(truth, a->answer.step, c->row, c->col),
                       format_fixed(c->given.value, c->given.decimals),
                       format_fixed(c->expected, std::max(c->given.decimals, 1) + 1));
    if (const Diagnosis* d = cell_diagnosis(*a, *c)) {
      out += fmt::format("- **What went wrong:** {} — {}\n", d->label, d->detail.in(Language::en));
      if (!d->why.empty())
        out += fmt::format("- **Why:** {} See lesson {} (`attn-trace run {}`).\n", d->why,
                           d->lesson, d->lesson);
    } else {
      out +=
          "- **What went wrong:** none of the common mistakes gives this value; redo the "
          "cell's arithmetic step by step.\n";
    }
  } else if (m.total >= m.out_of) {
    out += "\nEvery asked value is right.\n";
  }
  const std::string rounding = rounding_sentence(report, truth);
  if (!rounding.empty()) out += (report.first_wrong ? "" : "\n") + rounding;
  std::vector<std::string> carried;
  for (const StepMark& s : m.steps)
    if (s.carried) carried.push_back(s.step);
  if (!carried.empty())
    out += fmt::format(
        "\n**Carried credit:** your {} {} right on your own earlier numbers, so a mistake is "
        "counted once, where it was made.\n",
        fmt::join(carried, " and "), carried.size() == 1 ? "is" : "are");
  out += fmt::format("\nEvery value, cell by cell: `attn-trace verify {0}/{1} --answers {0}/{2}`\n",
                     folder, kLessonFile, kAnswersFile);
  return out;
}

std::string csv_row(const std::vector<std::string>& fields) {
  std::string out;
  for (std::size_t i = 0; i < fields.size(); ++i) out += (i ? "," : "") + csv_field(fields[i]);
  return out + "\r\n";
}

// feedback.md of a student who could not be marked: why.
std::string not_marked_feedback(const StudentMark& m) {
  return fmt::format("# Feedback: {}\n\nNot marked: {}\n", md_text(m.name), md_text(m.problem));
}

// Every asked step of the class, in order of first appearance, with its points.
std::vector<std::pair<std::string, double>> class_steps(const std::vector<StudentMark>& marks) {
  std::vector<std::pair<std::string, double>> steps;
  for (const StudentMark& m : marks)
    for (const StepMark& s : m.steps)
      if (std::none_of(steps.begin(), steps.end(),
                       [&](const auto& x) { return x.first == s.step; }))
        steps.emplace_back(s.step, s.out_of);
  return steps;
}

// "# Class summary", then how many students, how many marked, and their mean.
std::string class_counts(const std::vector<StudentMark>& marks) {
  std::size_t marked = 0;
  double total = 0, out_of = 0;
  for (const StudentMark& m : marks)
    if (m.problem.empty()) {
      ++marked;
      total += m.total;
      out_of = std::max(out_of, m.out_of);
    }
  std::string out = fmt::format("# Class summary\n\n{} student{} · {} marked", marks.size(),
                                marks.size() == 1 ? "" : "s", marked);
  if (marked < marks.size()) out += fmt::format(" · {} not marked (below)", marks.size() - marked);
  if (marked)
    out += fmt::format(" · mean {} of {} points", points_text(total / static_cast<double>(marked)),
                       points_text(out_of));
  return out + "\n";
}

// Every mistake, with the students who made it anywhere, and the lesson that
// shows it (common_mistakes()): what to re-teach.
std::string reteach_section(const std::vector<StudentMark>& marks) {
  std::map<std::string, std::vector<std::string>> by_mistake;
  for (const StudentMark& m : marks)
    for (const std::string& label : m.mistakes) by_mistake[label].push_back(m.name);
  std::vector<std::pair<std::string, std::vector<std::string>>> ranked(by_mistake.begin(),
                                                                       by_mistake.end());
  std::stable_sort(ranked.begin(), ranked.end(), [](const auto& x, const auto& y) {
    if (x.first == kUnexplained || y.first == kUnexplained) return y.first == kUnexplained;
    return x.second.size() > y.second.size();
  });
  std::string out =
      "\n## What to re-teach\n\nEach mistake behind a wrong (or rounded) value, and who "
      "made it.\n\n";
  if (ranked.empty()) return out + "No wrong value in the answers given.\n";
  out += "| Mistake | Students | Who | See lesson |\n|---|---:|---|---|\n";
  for (const auto& [label, names] : ranked) {
    const CommonMistake* mistake = find_common_mistake(label);
    out += fmt::format("| {} | {} | {} | {} |\n", label, names.size(),
                       md_text(fmt::format("{}", fmt::join(names, ", "))),
                       mistake ? mistake->lesson : "");
  }
  return out;
}

// One row of the steps table: `step` across the students marked.
std::string step_row(const std::vector<StudentMark>& marks, const std::string& step) {
  double sum = 0, of = 0;
  std::size_t n = 0, full = 0, wrong = 0, blank = 0;
  for (const StudentMark& m : marks) {
    if (!m.problem.empty()) continue;
    for (const StepMark& s : m.steps) {
      if (s.step != step) continue;
      ++n;
      sum += s.points;
      of = s.out_of;
      full += s.points >= s.out_of;
      wrong += s.wrong > 0;
      blank += s.blank > 0;
    }
  }
  return fmt::format("| {} | {} of {} | {} | {} | {} |\n", step,
                     n ? points_text(sum / static_cast<double>(n)) : "-", points_text(of), full,
                     wrong, blank);
}

// Each step across the class.
std::string steps_section(const std::vector<StudentMark>& marks) {
  std::string out =
      "\n## Steps\n\n| Step | Mean points | Full marks | Some wrong | Some blank |\n"
      "|---|---:|---:|---:|---:|\n";
  for (const auto& [step, points] : class_steps(marks)) out += step_row(marks, step);
  return out;
}

// The students who could not be marked, and why; nothing when every one was.
std::string not_marked_section(const std::vector<StudentMark>& marks) {
  if (std::all_of(marks.begin(), marks.end(),
                  [](const StudentMark& m) { return m.problem.empty(); }))
    return "";
  std::string out = "\n## Not marked\n\n| Student | Folder | Problem |\n|---|---|---|\n";
  for (const StudentMark& m : marks)
    if (!m.problem.empty())
      out +=
          fmt::format("| {} | {} | {} |\n", md_text(m.name), md_text(m.folder), md_text(m.problem));
  return out;
}

}  // namespace

std::vector<std::vector<std::string>> csv_rows(std::string_view text) {
  if (text.starts_with("\xEF\xBB\xBF")) text.remove_prefix(3);
  std::vector<std::vector<std::string>> rows(1, std::vector<std::string>(1));
  bool quoted = false;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    std::string& field = rows.back().back();
    if (quoted) {
      if (c != '"')
        field += c;
      else if (i + 1 < text.size() && text[i + 1] == '"')
        field += text[++i];
      else
        quoted = false;
    } else if (c == '"') {
      quoted = true;
    } else if (c == ',') {
      rows.back().emplace_back();
    } else if (c == '\n') {
      rows.emplace_back(1);
    } else if (c != '\r') {
      field += c;
    }
  }
  if (rows.back().size() == 1 && rows.back()[0].empty()) rows.pop_back();
  for (std::vector<std::string>& row : rows)
    for (std::string& field : row) field = csv_value(field);  // as csv_field wrote it
  return rows;
}

double MarkScheme::points_for(const Trace& trace, const std::string& step) const {
  for (const auto& [name, value] : points)
    if (trace.id_of(name) == step) return value;
  return default_points;
}

double MarkScheme::credit(Verdict verdict) const {
  switch (verdict) {
    case Verdict::ok:
      return ok;
    case Verdict::carried:
      return carried;
    case Verdict::rounded:
      return rounded;
    case Verdict::imprecise:
      return imprecise;
    case Verdict::wrong:
    case Verdict::missing:
      return 0;
  }
  return 0;
}

MarkScheme read_mark_scheme(const std::string& path) {
  TomlReader toml(read_file(path), path);
  toml.require_known_keys(toml.root(), "", {"points", "credit"});
  MarkScheme scheme;
  auto non_negative = [&](const toml::node& n, const std::string& key) {
    const double v = toml.number(n, key).value;
    if (v < 0) toml.fail(&n, key, "points cannot be negative");
    return v;
  };
  if (const toml::table* t = toml.table(toml.root(), "points"))
    for (const auto& [key, node] : *t) {
      const std::string name(key.str());
      if (name == "default")
        scheme.default_points = non_negative(node, "points.default");
      else
        scheme.points[name] = non_negative(node, "points." + name);
    }
  if (const toml::table* t = toml.table(toml.root(), "credit")) {
    toml.require_known_keys(*t, "credit", {"carried", "rounded", "imprecise"});
    const std::pair<const char*, double*> fractions[] = {{"carried", &scheme.carried},
                                                         {"rounded", &scheme.rounded},
                                                         {"imprecise", &scheme.imprecise}};
    for (const auto& [key, into] : fractions)
      if (const toml::node* n = t->get(key)) {
        const std::string where = fmt::format("credit.{}", key);
        *into = toml.number(*n, where).value;
        if (*into < 0 || *into > 1)
          toml.fail(n, where, "a credit is the fraction of the points a value earns: 0 to 1");
      }
  }
  return scheme;
}

StudentMark mark_student(const fs::path& class_dir, const std::string& folder,
                         const MarkScheme& scheme) {
  StudentMark m;
  m.folder = folder;
  m.name = folder;
  const fs::path dir = class_dir / folder;
  const std::string shown_dir = dir.string();
  // The lesson first: without it there is nothing to mark against.
  std::optional<Lesson> lesson;
  try {
    lesson = load_lesson_file((dir / kLessonFile).string());
  } catch (const InputError& e) {
    m.problem = e.what();
    m.feedback = not_marked_feedback(m);
    return m;
  }
  if (!lesson->student.empty()) m.name = lesson->student;
  m.variant = lesson->variant;
  const std::unique_ptr<Backend> backend = make_backend("cpu");
  const Trace truth = run_pipeline(*lesson, *backend);
  const fs::path answers_path = dir / kAnswersFile;
  try {
    std::error_code ec;
    if (!fs::exists(answers_path, ec))
      throw InputError(
          fmt::format("no {} in {}; put the student's filled-in {} there (exercise "
                      "writes a blank one)",
                      kAnswersFile, shown_dir, kAnswersFile));
    const std::vector<Answer> answers = load_answers_file(answers_path.string(), *lesson, truth);
    const VerifyReport report = verify_answers(*lesson, *backend, answers);
    m.steps = step_marks(*lesson, truth, &report, scheme);
    if (const auto [a, c] = first_wrong_cell(report); c) {
      m.first_wrong = fmt::format("{}[{},{}]", a->answer.step, c->row, c->col);
      if (const Diagnosis* d = cell_diagnosis(*a, *c)) m.mistake = d->label;
    }
    m.mistakes = mistakes_made(report);
    for (const StepMark& s : m.steps) {
      m.total += s.points;
      m.out_of += s.out_of;
    }
    m.feedback = feedback_markdown(m, truth, report, shown_dir);
  } catch (const InputError& e) {
    // Marked as nothing answered, with the same columns as everyone else.
    m.problem = e.what();
    m.steps = step_marks(*lesson, truth, nullptr, scheme);
    m.total = m.out_of = 0;
    for (const StepMark& s : m.steps) m.out_of += s.out_of;
    m.feedback = not_marked_feedback(m);
  }
  m.point_keys_used = keys_used(scheme, truth, m.steps);
  return m;
}

std::vector<std::string> student_folders(const fs::path& class_dir) {
  std::error_code ec;
  if (!fs::is_directory(class_dir, ec))
    throw InputError(
        fmt::format("{}: not a folder; give the folder that attn-trace exercise "
                    "--out wrote",
                    class_dir.string()));
  // The roster's students first, in its order, whether or not their folder is
  // complete (a missing lesson.toml is then that student's problem)...
  std::vector<std::string> folders;
  const fs::path roster = class_dir / kRosterFile;
  if (fs::exists(roster, ec)) {
    const std::vector<std::vector<std::string>> rows = csv_rows(read_file(roster.string()));
    const auto has_folder = [&] {
      return !rows.empty() && std::find(rows[0].begin(), rows[0].end(), "folder") != rows[0].end();
    };
    if (!has_folder())
      throw InputError(
          fmt::format("{}: no 'folder' column in its first line; it should be the "
                      "roster.csv that attn-trace exercise wrote (name,folder,variant)",
                      roster.string()));
    const std::size_t at = static_cast<std::size_t>(
        std::find(rows[0].begin(), rows[0].end(), "folder") - rows[0].begin());
    for (std::size_t r = 1; r < rows.size(); ++r)
      if (at < rows[r].size() && !rows[r][at].empty()) folders.push_back(rows[r][at]);
  }
  // ...then every other sub-folder holding a lesson.toml, by name.
  std::vector<std::string> others;
  for (const fs::directory_entry& entry : fs::directory_iterator(class_dir, ec)) {
    const std::string name = entry.path().filename().string();
    if (entry.is_directory() && fs::exists(entry.path() / kLessonFile) &&
        std::find(folders.begin(), folders.end(), name) == folders.end())
      others.push_back(name);
  }
  if (ec)
    throw InputError(
        fmt::format("{}: cannot list the folder: {}", class_dir.string(), ec.message()));
  std::sort(others.begin(), others.end());
  folders.insert(folders.end(), others.begin(), others.end());
  if (folders.empty())
    throw InputError(fmt::format(
        "{}: no student folders (sub-folders with a {}); give the folder that attn-trace "
        "exercise --out wrote",
        class_dir.string(), kLessonFile));
  return folders;
}

std::vector<StudentMark> mark_class(const fs::path& class_dir, const MarkScheme& scheme,
                                    const std::string& points_file) {
  const std::vector<std::string> folders = student_folders(class_dir);
  std::vector<StudentMark> marks(folders.size());
  parallel_for(folders.size(),
               [&](std::size_t i) { marks[i] = mark_student(class_dir, folders[i], scheme); });
  std::vector<std::string> asked;
  for (const auto& [step, out_of] : class_steps(marks)) asked.push_back(step);
  // (Lambdas capture the key by name, not a structured binding: clang before 16 cannot.)
  for (const auto& entry : scheme.points)
    if (const std::string& name = entry.first;
        std::none_of(marks.begin(), marks.end(),
                     [&](const StudentMark& m) { return m.point_keys_used.contains(name); }))
      throw InputError(fmt::format(
          "{}: key 'points.{}': no student was asked for this step; the asked steps are {} "
          "(a short name such as 'weights' means head 0)",
          points_file, name, fmt::join(asked, ", ")));
  return marks;
}

std::string marks_csv(const std::vector<StudentMark>& marks) {
  const std::vector<std::pair<std::string, double>> steps = class_steps(marks);
  std::vector<std::string> header = {"name", "folder", "variant"};
  for (const auto& [step, out_of] : steps)
    header.push_back(fmt::format("{} ({})", step, points_text(out_of)));
  for (const char* column : {"total", "out of", "first wrong", "mistake", "problem"})
    header.push_back(column);
  std::string out = "\xEF\xBB\xBF" + csv_row(header);
  for (const StudentMark& m : marks) {
    std::vector<std::string> row = {m.name, m.folder, m.variant};
    for (const auto& column : steps) {
      const std::string& step = column.first;
      const auto it = std::find_if(m.steps.begin(), m.steps.end(),
                                   [&](const StepMark& s) { return s.step == step; });
      row.push_back(it == m.steps.end() ? "" : points_text(it->points));
    }
    row.push_back(points_text(m.total));
    row.push_back(points_text(m.out_of));
    row.push_back(m.first_wrong);
    row.push_back(m.mistake);
    row.push_back(m.problem);
    out += csv_row(row);
  }
  return out;
}

std::string marks_json(const std::vector<StudentMark>& marks) {
  // null for what a student without marks does not have.
  const auto text_or_null = [](const std::string& s) {
    return s.empty() ? "null" : json_string(s);
  };
  std::vector<std::string> students;
  for (const StudentMark& m : marks) {
    std::vector<std::string> steps;
    for (const StepMark& s : m.steps)
      steps.push_back(
          fmt::format("{{\"step\": {}, \"points\": {}, \"out_of\": {}, \"cells\": {{\"ok\": {}, "
                      "\"carried\": {}, "
                      "\"rounded\": {}, \"imprecise\": {}, \"wrong\": {}, \"missing\": {}}}}}",
                      json_string(s.step), json_number(s.points), json_number(s.out_of), s.ok,
                      s.carried, s.rounded, s.imprecise, s.wrong, s.blank));
    students.push_back(fmt::format(
        "{{\"name\": {}, \"folder\": {}, \"variant\": {}, \"total\": {}, \"out_of\": {}, "
        "\"first_wrong\": {}, \"mistake\": {}, \"problem\": {},\n   \"steps\": [{}]}}",
        json_string(m.name), json_string(m.folder), text_or_null(m.variant), json_number(m.total),
        json_number(m.out_of), text_or_null(m.first_wrong), text_or_null(m.mistake),
        text_or_null(m.problem), fmt::join(steps, ",\n    ")));
  }
  return fmt::format("{{\"students\": [\n  {}\n]}}\n", fmt::join(students, ",\n  "));
}

std::string class_summary(const std::vector<StudentMark>& marks) {
  std::string out = class_counts(marks);
  out += reteach_section(marks);
  out += steps_section(marks);
  out += not_marked_section(marks);
  return out;
}

}  // namespace attn
