// The language of what people read (SPEC section 6, --lang): English, or
// Simplified Chinese from the GNU gettext catalog po/zh_CN.po, compiled by
// msgfmt and embedded in the binary, so no installed locale is needed.
// Two languages (docs/chinese.md, "Which outputs follow which"): the
// terminal's may come from the environment; the documents' only from --lang.
#pragma once

#include <fmt/format.h>

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace attn {

enum class Language { en, zh };

// Marks a string for xgettext where it is stored, not yet translated (tables).
#define N_(text) text

// The two languages, set once in main before any output:
// - `terminal`: what a person reads on standard output and error (run's text,
//   verify's and check's reports, lessons, --help, errors and warnings):
//   --lang, else the environment (language_from_environment);
// - `documents`: every file a command writes and every machine or document
//   format on standard output (JSON, Markdown, LaTeX, HTML, SVG, CSV, TOML,
//   scripts): --lang, else English, so that no locale changes a byte of them.
void set_languages(Language terminal, Language documents);
Language terminal_language();
Language document_language();

// The language tr(), tr_format() and Message::shown() write in now: the
// terminal's, or the documents' while a DocumentScope lives.
Language language();

// While it lives, language() is the document language. A command renders each
// file and each machine or document format inside one; an error it throws from
// inside is then in that language too, so read and check inputs before it. The
// switch is process-wide: make it on the main thread, never while another
// thread prints (the threads of a parallel_for inside it read it).
class DocumentScope {
 public:
  DocumentScope();
  ~DocumentScope();
  DocumentScope(const DocumentScope&) = delete;
  DocumentScope& operator=(const DocumentScope&) = delete;

 private:
  Language outer_;
};

// "en" / "zh"; nullopt for any other name.
std::optional<Language> language_named(std::string_view name);
// The language the environment asks for: LC_ALL, then LC_MESSAGES, then LANG
// (the first one set and not empty); Chinese when it starts with "zh".
Language language_from_environment();

// `msgid` in `to`: the catalog's msgstr, or msgid itself when the catalog has
// no translation (English, or a message added since the catalog was made).
std::string_view translate(Language to, std::string_view msgid);
// `msgid` in language().
std::string_view tr(std::string_view msgid);

// `msgid` in language() with its {} filled in by `args`
// (xgettext extracts tr_format's first argument like tr's).
template <typename... Args>
std::string tr_format(std::string_view msgid, const Args&... args) {
  return fmt::vformat(tr(msgid), fmt::make_format_args(args...));
}

// "3 values" / "1 value": the msgid `one` or `many` (marked with N_ where it
// is written) in language(), with the count filled in.
inline std::string tr_counted(std::size_t n, std::string_view one, std::string_view many) {
  return tr_format(n == 1 ? one : many, n);
}

// A GNU .mo catalog read from its bytes (magic 0x950412de, either byte order):
// lookup is a binary search of the sorted table of original strings. A
// truncated or corrupt catalog reads as empty (every lookup falls back).
class MoCatalog {
 public:
  MoCatalog() = default;
  explicit MoCatalog(std::string bytes);
  // The translation of `msgid`, or nullopt when there is none.
  std::optional<std::string_view> find(std::string_view msgid) const;
  std::size_t size() const { return originals_.size(); }
  bool valid() const { return !originals_.empty(); }

 private:
  std::string bytes_;
  std::vector<std::string_view> originals_, translations_;
};

// A message kept in its source form so that it can be shown in either
// language: a msgid with {} placeholders and the values already written out.
struct Message {
  Message() = default;
  Message(const char* format) : format(format) {}  // NOLINT: a plain message converts
  Message(std::string format, std::vector<std::string> args)
      : format(std::move(format)), args(std::move(args)) {}
  Message(std::string format, std::vector<std::string> args, std::vector<Message> parts)
      : format(std::move(format)), args(std::move(args)), parts(std::move(parts)) {}
  std::string format;             // the msgid, e.g. "Decoding t{}: key cache"
  std::vector<std::string> args;  // one per {}
  // Messages filling the {} after `args`' ones, each shown in the same
  // language (a slip's cause inside a diagnosis's detail).
  std::vector<Message> parts;
  std::string in(Language to) const;
  std::string shown() const { return in(language()); }
};

}  // namespace attn
