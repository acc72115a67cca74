// tests/support/hostile.toml: a valid lesson whose tokens, title, source and
// story hold every kind of character that breaks markup (newlines, a blank
// line, tabs, C0 controls, DEL, the specials of Markdown and LaTeX), and checks
// of the outputs made from it. Shared by the renderer and sheet tests.
#pragma once

#include <sstream>
#include <string>
#include <vector>

#include "core/lesson.hpp"

namespace testsupport {

// The tokens as the loader reads them.
inline const std::vector<std::string> kHostileTokens = {"new\nline", "blank\n\nline", "tab\t|#",
                                                        "\x01\\{$", "%&_^~\x7f`"};

// tests/support/hostile.toml, parsed.
inline attn::Lesson hostile_lesson() {
  return attn::load_lesson_file(ATTN_SOURCE_DIR "/tests/support/hostile.toml");
}

// Whether `text` holds a control character other than the line feed.
inline bool has_raw_control(const std::string& text) {
  for (const char c : text)
    if ((static_cast<unsigned char>(c) < 0x20 && c != '\n') || c == 0x7F) return true;
  return false;
}

// The '|' that separate the cells of a Markdown table row: those without a
// backslash before them (GitHub's rule).
inline std::size_t cell_bars(const std::string& line) {
  std::size_t n = 0;
  for (std::size_t i = 0; i < line.size(); ++i)
    n += line[i] == '|' && (i == 0 || line[i - 1] != '\\');
  return n;
}

// The Markdown tables of `md` (runs of lines that start with '|'), or the
// first line whose cell count differs from its table's |---| line.
struct TableShapes {
  std::size_t tables = 0;
  std::string broken_row;  // empty when every row has its table's cells
};

inline TableShapes markdown_table_shapes(const std::string& md) {
  TableShapes out;
  std::istringstream lines(md + "\n");
  std::vector<std::string> table;
  for (std::string line; std::getline(lines, line);) {
    if (line.starts_with("|")) {
      table.push_back(line);
      continue;
    }
    if (!table.empty()) {
      ++out.tables;
      for (const std::string& row : table)
        if (table.size() < 2 || cell_bars(row) != cell_bars(table[1]))
          if (out.broken_row.empty()) out.broken_row = row;
    }
    table.clear();
  }
  return out;
}

}  // namespace testsupport
