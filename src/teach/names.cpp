// Student names in any script: UTF-8 checks, NFC and folder names, all through
// utf8proc's tables (Unicode's own data, not a hand-written list).
#include "teach/names.hpp"

#include <fmt/format.h>
#include <utf8proc.h>

#include <cstdint>
#include <cstdlib>
#include <memory>

#include "core/error.hpp"
#include "core/i18n.hpp"

namespace attn {

namespace {

const utf8proc_uint8_t* bytes_of(std::string_view text) {
  return reinterpret_cast<const utf8proc_uint8_t*>(text.data());
}

bool is_letter(utf8proc_category_t c) {
  return c == UTF8PROC_CATEGORY_LU || c == UTF8PROC_CATEGORY_LL || c == UTF8PROC_CATEGORY_LT ||
         c == UTF8PROC_CATEGORY_LM || c == UTF8PROC_CATEGORY_LO;
}

bool is_mark(utf8proc_category_t c) {
  return c == UTF8PROC_CATEGORY_MN || c == UTF8PROC_CATEGORY_MC || c == UTF8PROC_CATEGORY_ME;
}

void append_code_point(std::string& out, utf8proc_int32_t cp) {
  utf8proc_uint8_t buffer[4];
  const utf8proc_ssize_t length = utf8proc_encode_char(cp, buffer);
  out.append(reinterpret_cast<const char*>(buffer), static_cast<std::size_t>(length));
}

}  // namespace

std::size_t invalid_utf8_offset(std::string_view text) {
  std::size_t at = 0;
  while (at < text.size()) {
    utf8proc_int32_t cp = 0;
    const utf8proc_ssize_t length =
        utf8proc_iterate(bytes_of(text) + at, static_cast<utf8proc_ssize_t>(text.size() - at), &cp);
    if (length <= 0) return at;
    at += static_cast<std::size_t>(length);
  }
  return std::string_view::npos;
}

std::size_t code_point_count(std::string_view text) {
  std::size_t count = 0;
  for (char c : text) count += (static_cast<unsigned char>(c) & 0xC0) != 0x80;
  return count;
}

std::string nfc(std::string_view text) {
  if (text.empty()) return {};
  utf8proc_uint8_t* mapped = nullptr;
  const utf8proc_ssize_t length =
      utf8proc_map(bytes_of(text), static_cast<utf8proc_ssize_t>(text.size()), &mapped,
                   static_cast<utf8proc_option_t>(UTF8PROC_STABLE | UTF8PROC_COMPOSE));
  const std::unique_ptr<utf8proc_uint8_t, decltype(&std::free)> owned(mapped, &std::free);
  if (length < 0)
    throw InputError(tr_format("\"{}\" is not valid UTF-8 ({}); save the text as UTF-8", text,
                               utf8proc_errmsg(length)));
  return std::string(reinterpret_cast<const char*>(mapped), static_cast<std::size_t>(length));
}

std::string normalise_student_id(std::string_view text) {
  while (!text.empty() && (text.front() == ' ' || text.front() == '\t')) text.remove_prefix(1);
  while (!text.empty() && (text.back() == ' ' || text.back() == '\t')) text.remove_suffix(1);
  if (text.empty()) return {};
  utf8proc_uint8_t* mapped = nullptr;
  const utf8proc_ssize_t length = utf8proc_map(
      bytes_of(text), static_cast<utf8proc_ssize_t>(text.size()), &mapped,
      static_cast<utf8proc_option_t>(UTF8PROC_STABLE | UTF8PROC_COMPOSE | UTF8PROC_COMPAT));
  const std::unique_ptr<utf8proc_uint8_t, decltype(&std::free)> owned(mapped, &std::free);
  if (length < 0)
    throw InputError(tr_format("\"{}\" is not valid UTF-8 ({}); save the text as UTF-8", text,
                               utf8proc_errmsg(length)));
  return std::string(reinterpret_cast<const char*>(mapped), static_cast<std::size_t>(length));
}

std::string student_id_flaw(std::string_view id) {
  if (id.empty()) return std::string(tr("is empty"));
  if (const std::size_t length = code_point_count(id); length > kMaxStudentIdChars)
    return tr_format("is {} characters long (at most {})", length, kMaxStudentIdChars);
  const auto ascii_alnum = [](char c) {
    return (c >= '0' && c <= '9') || (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z');
  };
  if (!ascii_alnum(id.front())) return std::string(tr("does not start with a letter or digit"));
  for (std::size_t at = 0; at < id.size(); ++at) {
    const char c = id[at];
    if (ascii_alnum(c) || c == '-' || c == '_' || c == '.') continue;
    const auto byte = static_cast<unsigned char>(c);
    if (byte < 0x20 || byte == 0x7f) return std::string(tr("has a control character"));
    if (byte < 0x80) return tr_format("has the character '{}'", c);
    // Any other character by its code point: it may be invisible, or turn a terminal's text.
    utf8proc_int32_t cp = 0;
    utf8proc_iterate(bytes_of(id) + at, static_cast<utf8proc_ssize_t>(id.size() - at), &cp);
    return tr_format("has the character U+{:04X}", static_cast<std::uint32_t>(cp));
  }
  return "";
}

std::string folder_of(std::string_view name) {
  const std::string composed = nfc(name);
  const std::string_view text(composed);
  std::string folder;
  std::size_t at = 0;
  bool after_kept = false;  // a combining mark is kept only on a kept letter
  while (at < text.size()) {
    utf8proc_int32_t cp = 0;
    at += static_cast<std::size_t>(utf8proc_iterate(
        bytes_of(text) + at, static_cast<utf8proc_ssize_t>(text.size() - at), &cp));
    const utf8proc_category_t category = utf8proc_category(cp);
    const bool keep = is_letter(category) || category == UTF8PROC_CATEGORY_ND ||
                      (after_kept && is_mark(category));
    std::string piece;
    if (keep)
      append_code_point(piece, utf8proc_tolower(cp));
    else if (!folder.empty() && folder.back() != '-')
      piece = "-";
    if (folder.size() + piece.size() > kMaxFolderBytes) break;
    folder += piece;
    after_kept = keep;
  }
  while (!folder.empty() && folder.back() == '-') folder.pop_back();
  return nfc(folder);
}

}  // namespace attn
