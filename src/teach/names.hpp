// Student names in any script: the UTF-8 check, Unicode normalisation (NFC,
// with utf8proc) and the folder a name gets, readable wherever the script allows.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace attn {

// The byte offset of the first byte of `text` that does not start (or continue)
// a valid UTF-8 sequence, or std::string_view::npos when all of `text` is UTF-8.
std::size_t invalid_utf8_offset(std::string_view text);

// `text` in Unicode Normalization Form C: "e" + U+0301 (NFD) becomes "é" (one
// code point). A text already in NFC comes back byte for byte. Throws
// InputError when `text` is not valid UTF-8.
std::string nfc(std::string_view text);

// The number of code points of UTF-8 `text` (its bytes that do not continue a sequence).
std::size_t code_point_count(std::string_view text);

// The longest student name a roster may give, in code points (characters):
// longer is not a name but a pasted paragraph, and would swell every file
// that carries it.
inline constexpr std::size_t kMaxNameChars = 200;

// The longest folder name folder_of writes, in bytes (cut at a character).
inline constexpr std::size_t kMaxFolderBytes = 96;

// A folder name from a name: the NFC name's letters (with their combining marks)
// and decimal digits, of any script, lower-cased; every other run of characters
// becomes one '-', none at either end: "José Núñez" -> "josé-núñez",
// "O'Brien" -> "o-brien", "张伟" -> "张伟". Empty when the name has no letter or digit.
std::string folder_of(std::string_view name);

// The longest student ID a roster may give, in characters.
inline constexpr std::size_t kMaxStudentIdChars = 32;

// A student ID as a roster writes it, normalised: spaces at either end
// trimmed, then NFKC, so that full-width digits and letters typed with a
// Chinese input method ("２０２４００１") become ASCII ("2024001"). Throws
// InputError when `text` is not valid UTF-8.
std::string normalise_student_id(std::string_view text);

// What keeps a normalised ID from being one, as a phrase for a message
// ("is empty", "has the character ' '", ...); "" when it is an ID. An ID is
// 1 to kMaxStudentIdChars of the ASCII letters and digits, '-', '_' and '.',
// starting with a letter or digit: what gradebooks and 学号 use, and nothing
// that a spreadsheet, LaTeX, HTML or a terminal would read as anything else.
std::string student_id_flaw(std::string_view id);

}  // namespace attn
