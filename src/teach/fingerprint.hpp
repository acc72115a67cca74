// A class folder's trust anchor: the fingerprint (SHA-256) of each student's
// lesson.toml that `exercise` records in roster.csv and `mark` checks
// (docs/marking.md#what-mark-checks-before-it-marks).
#pragma once

#include <string>
#include <string_view>

namespace attn {

// SHA-256 (FIPS 180-4) of `bytes`, as 64 lower-case hex digits.
std::string sha256_hex(std::string_view bytes);

// "sha256:" and the SHA-256 of `lesson_toml` with what an editor may change
// without changing a value taken out: a UTF-8 byte-order mark at the start,
// CR before LF, spaces and tabs at line ends, and blank lines at the end.
// Every other byte counts, comments included.
std::string lesson_fingerprint(std::string_view lesson_toml);

// Whether `text` is a fingerprint as lesson_fingerprint writes it.
bool is_fingerprint(std::string_view text);

}  // namespace attn
