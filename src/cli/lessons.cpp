// `attn-trace lessons [show ID]`: the embedded lessons as a course, one line
// each in teaching order; `show ID` prints one lesson's TOML as embedded.
#include <fmt/format.h>

#include <algorithm>
#include <memory>
#include <regex>

#include "cli/commands.hpp"
#include "core/lesson_library.hpp"
#include "render/numbers.hpp"

namespace attn {

namespace {

constexpr std::size_t kLineWidth = 100;  // every line of the listing fits this

// "000": the number of the first source document a lesson's `source` names.
std::string document_number(const Lesson& l) {
  static const std::regex file(R"((\d{3})_[0-9a-f]{16}\.txt)");
  std::smatch m;
  return std::regex_search(l.source, m, file) ? m[1].str() : "-";
}

// `words` joined by ", " over as many lines as they need, each starting with `indent`.
std::string wrapped(const std::string& lead, const std::vector<std::string>& words,
                    std::size_t indent) {
  std::string out = std::string(indent, ' ') + lead;
  std::size_t column = indent + display_width(lead);
  for (std::size_t i = 0; i < words.size(); ++i) {
    const std::string word = words[i] + (i + 1 < words.size() ? "," : "");
    if (column + 1 + display_width(word) > kLineWidth) {
      out += "\n" + std::string(indent + display_width(lead), ' ');
      column = indent + display_width(lead);
    } else if (i > 0) {
      out += " ";
      ++column;
    }
    out += word;
    column += display_width(word);
  }
  return out + "\n";
}

std::string course_listing() {
  const std::vector<CourseEntry> course = teaching_order(all_embedded_lessons());
  std::size_t id_width = 2;
  for (const CourseEntry& e : course) id_width = std::max(id_width, e.lesson.id.size());
  // " 1  raw-similarity  1  000  title": number, id, level, document, title.
  const std::size_t number_width = fmt::format("{}", course.size()).size();
  const std::size_t title_column = number_width + 2 + id_width + 2 + 5 + 2 + 3 + 2;
  const std::size_t title_width = kLineWidth > title_column + 10 ? kLineWidth - title_column : 10;
  std::string out = fmt::format(
      "The embedded lessons in teaching order: each after the lessons it builds on.\n"
      "Levels: 1 one head by hand, 2 scaling and softmax, 3 masks and positions,\n"
      "4 several heads and sequences. `attn-trace lessons show ID` prints a lesson's TOML.\n\n"
      "{:>{}}  {:<{}}  level  doc  title\n",
      "#", number_width, "id", id_width);
  for (std::size_t i = 0; i < course.size(); ++i) {
    const Lesson& l = course[i].lesson;
    out += fmt::format("{:>{}}  {:<{}}  {:^5}  {:<3}  {}\n", i + 1, number_width, l.id, id_width,
                       l.level, document_number(l), clip_to_width(l.title, title_width));
    if (course[i].variants.empty()) continue;
    std::vector<std::string> ids;
    for (const Lesson& v : course[i].variants) ids.push_back(v.id);
    out += wrapped("variants: ", ids, title_column);
  }
  out += "\nThe source documents (Chinese articles; each lesson cites its file and section):\n";
  for (const SourceDocument& d : source_documents())
    out += fmt::format("  {}  {}\n       {}\n", std::string(d.file).substr(0, 3),
                       clip_to_width(fmt::format("{}  {}", d.file, d.title), kLineWidth - 7),
                       d.heading);
  return out;
}

}  // namespace

void setup_lessons(CLI::App& app, CommandContext& /*context*/) {
  CLI::App* cmd =
      app.add_subcommand("lessons", "List the embedded lessons in teaching order, or show one");
  auto id = std::make_shared<std::string>();
  CLI::App* show = cmd->add_subcommand("show", "Print a lesson's TOML as embedded (copy, change)");
  show->add_option("id", *id, "Embedded lesson id")->required();
  show->callback([id] { write_stdout(embedded_lesson(*id).text); });
  cmd->callback([show] {
    if (!show->parsed()) write_stdout(course_listing());
  });
}

}  // namespace attn
