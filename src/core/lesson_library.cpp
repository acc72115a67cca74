// Finding a lesson by embedded id or by path.
#include "core/lesson_library.hpp"

#include <fmt/format.h>

#include <filesystem>

#include "core/error.hpp"

namespace attn {

Lesson find_lesson(const std::string& name_or_path) {
  for (const EmbeddedLesson& e : embedded_lessons())
    if (name_or_path == e.id) return parse_lesson(e.text, fmt::format("{} (embedded)", e.path));
  std::error_code error;  // a name too long for a path is simply not a file
  const bool looks_like_path = name_or_path.find('/') != std::string::npos ||
                               name_or_path.ends_with(".toml") ||
                               std::filesystem::exists(name_or_path, error);
  if (looks_like_path) return load_lesson_file(name_or_path);
  std::string known;
  for (const EmbeddedLesson& e : embedded_lessons())
    known += fmt::format("{}{}", known.empty() ? "" : ", ", e.id);
  throw InputError(
      fmt::format("unknown lesson '{}': not an embedded lesson and no such file. "
                  "Embedded lessons: {}. Give one of these or a path to a .toml file",
                  name_or_path, known));
}

std::vector<Lesson> all_embedded_lessons() {
  std::vector<Lesson> out;
  for (const EmbeddedLesson& e : embedded_lessons())
    out.push_back(parse_lesson(e.text, fmt::format("{} (embedded)", e.path)));
  return out;
}

}  // namespace attn
