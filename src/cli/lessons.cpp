// `attn-trace lessons [show ID]`: the embedded lessons as a course, one line
// each in teaching order; `show ID` prints one lesson's TOML as embedded.
#include <fmt/format.h>

#include <algorithm>
#include <memory>
#include <regex>

#include "cli/commands.hpp"
#include "core/i18n.hpp"
#include "core/lesson_library.hpp"
#include "render/numbers.hpp"

namespace attn {

namespace {

// "000": the number of the first source document a lesson's `source` names.
std::string document_number(const Lesson& l) {
  static const std::regex file(R"((\d{3})_[0-9a-f]{16}\.txt)");
  std::smatch m;
  return std::regex_search(l.source, m, file) ? m[1].str() : "-";
}

// The listing, no line wider than `width`: titles wrapped in their column, or
// on lines of their own when the columns leave too little room.
std::string course_listing(std::size_t width) {
  const std::vector<CourseEntry> course = teaching_order(all_embedded_lessons());
  std::size_t id_width = 2;
  for (const CourseEntry& e : course) id_width = std::max(id_width, e.lesson.id.size());
  // " 1  raw-similarity  1  000  title": number, id, level, document, title.
  const std::size_t number_width = fmt::format("{}", course.size()).size();
  // The level and document columns as wide as their headings (Chinese ones too).
  const std::string level(tr("level")), doc(tr("doc"));
  const std::size_t level_width = std::max<std::size_t>(5, display_width(level));
  const std::size_t doc_width = std::max<std::size_t>(3, display_width(doc));
  const std::size_t title_column =
      number_width + 2 + id_width + 2 + level_width + 2 + doc_width + 2;
  const bool title_inline = width >= title_column + 20;
  std::string out = wrap_text(
      tr("The embedded lessons in teaching order: each after the lessons it builds on. Levels: 1 "
         "one head by hand, 2 scaling and softmax, 3 masks and positions, 4 several heads and "
         "sequences, 5 the backward pass. `attn-trace lessons show ID` prints a lesson's TOML."),
      width, "", "");
  out += fmt::format("\n{:>{}}  {:<{}}  {}  {}{}\n", "#", number_width, "id", id_width,
                     pad_right(level, level_width), title_inline ? pad_right(doc, doc_width) : doc,
                     title_inline ? "  " + std::string(tr("title")) : "");
  for (std::size_t i = 0; i < course.size(); ++i) {
    const Lesson& l = course[i].lesson;
    const std::string row =
        fmt::format("{:>{}}  {:<{}}  {:^{}}  {:<{}}", i + 1, number_width, l.id, id_width, l.level,
                    level_width, document_number(l), doc_width);
    if (title_inline)
      out += wrap_text(l.title_for(language()), width, row + "  ", std::string(title_column, ' '));
    else
      out += row + "\n" + wrap_text(l.title_for(language()), width, "    ", "    ");
    if (course[i].variants.empty()) continue;
    std::vector<std::string> ids;
    for (const Lesson& v : course[i].variants) ids.push_back(v.id);
    const std::string indent(title_inline ? title_column : 4, ' ');
    // Continuation lines start under the first variant, after "variants: ".
    const std::string hanging(display_width(tr_format("variants: {}", "")), ' ');
    out += wrap_text(tr_format("variants: {}", fmt::format("{}", fmt::join(ids, ", "))), width,
                     indent, indent + hanging);
  }
  out += "\n" + wrap_text(tr("The source documents (Chinese articles; each lesson cites its "
                             "file and section):"),
                          width, "", "");
  // In Chinese the document's own heading is its title; in English, what it covers, then it.
  for (const SourceDocument& d : source_documents()) {
    const bool zh = language() == Language::zh;
    out += wrap_text(fmt::format("{}  {}  {}", std::string(d.file).substr(0, 3), d.file,
                                 zh ? d.heading : d.title),
                     width, "  ", "       ");
    if (!zh) out += wrap_text(d.heading, width, "       ", "       ");
  }
  return out;
}

}  // namespace

void setup_lessons(CLI::App& app, CommandContext& /*context*/) {
  CLI::App* cmd = app.add_subcommand(
      "lessons", std::string(tr("List the embedded lessons in teaching order, or show one")));
  auto id = std::make_shared<std::string>();
  auto width = std::make_shared<std::size_t>(0);
  cmd->add_option("--width", *width,
                  std::string(tr("Columns no line may pass (default: the terminal's width, 80 "
                                 "when the output is not a terminal)")))
      ->check(CLI::Range(40, 100000));
  CLI::App* show = cmd->add_subcommand(
      "show", std::string(tr("Print a lesson's TOML as embedded (copy, change)")));
  show->add_option("id", *id, std::string(tr("Embedded lesson id")))->required();
  show->callback([id] { write_stdout(embedded_lesson(*id).text); });
  cmd->callback([show, width] {
    if (!show->parsed()) write_stdout(course_listing(output_width(*width)));
  });
}

}  // namespace attn
