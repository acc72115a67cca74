// Reading TOML files a user wrote (lessons, answers, golden files) with
// errors that name the file, the key, the line, and the fix.
#pragma once

#include <armadillo>
#include <initializer_list>
#include <string>
#include <string_view>
#include <vector>
#include "core/toml.hpp"

#include "core/lesson.hpp"
#include "core/trace.hpp"

namespace attn {

class TomlReader {
 public:
  // Parses `text`, after prescan_toml has bounded its depth (core/toml_prescan.hpp);
  // a syntax error becomes an InputError naming origin:line.
  TomlReader(std::string_view text, std::string origin);

  const toml::table& root() const { return root_; }
  // For a reader that mends values before reading them (answers files:
  // numbers as people type them); nodes keep their place in the file.
  toml::table& root_to_mend() { return root_; }
  const std::string& origin() const { return origin_; }

  // Throws InputError "origin:line: key 'key': message".
  [[noreturn]] void fail(const toml::node* node, std::string_view key,
                         std::string_view message) const;

  // Every key of `table` must be one of `allowed`; a typo gets a suggestion.
  void require_known_keys(const toml::table& table, std::string_view where,
                          std::initializer_list<std::string_view> allowed) const;

  const toml::table* table(const toml::table& parent, std::string_view key) const;
  std::string string(const toml::node& node, std::string_view key) const;
  bool boolean(const toml::node& node, std::string_view key) const;
  long long integer(const toml::node& node, std::string_view key) const;
  // A finite number: a TOML integer, float, or a numeric string ("1.70"),
  // with the decimals as written in the file.
  WrittenNumber number(const toml::node& node, std::string_view key) const;
  // A number as number() reads it, or -inf / inf / nan (a TOML float or the
  // string): a value stated about a step may be a masked -inf or a NaN row.
  WrittenNumber stated_number(const toml::node& node, std::string_view key) const;
  // With `stated`, entries are read by stated_number() (non-finite allowed).
  std::vector<WrittenNumber> number_row(const toml::node& node, std::string_view key,
                                        bool stated = false) const;
  // A rectangular array of arrays of finite numbers (ragged rows are an error).
  std::vector<std::vector<WrittenNumber>> number_matrix(const toml::node& node,
                                                        std::string_view key,
                                                        bool stated = false) const;
  arma::mat matrix(const toml::node& node, std::string_view key) const;
  arma::rowvec row(const toml::node& node, std::string_view key) const;
  std::vector<std::string> strings(const toml::node& node, std::string_view key) const;
  // [row, col] with non-negative integers.
  std::pair<std::size_t, std::size_t> cell(const toml::node& node, std::string_view key) const;

  int line_of(const toml::node* node) const;

  // The step, cell/row/matrix, value(s) and tolerance of a [[claim]] or
  // [[answer]] table named `where` (e.g. "answer[2]"); other keys are the
  // caller's to check. Values may be non-finite (stated_number); with
  // `blanks`, a value may be "" (a cell left blank: WrittenNumber::blank).
  StepValues step_values(const toml::node& item, const std::string& where,
                         bool blanks = false) const;

 private:
  // What the readers below read: non-finite values too (as stated_number()),
  // and the decimals as written (matrix() and row() need the values only).
  struct NumberRules {
    bool stated = false;
    bool decimals = true;
    bool blank = false;  // "" (or spaces) is a blank cell
  };
  // number() or stated_number() without the key: when `node` is not such a
  // number, `error` is set to the message for fail(). Callers build the key
  // only then, not once per number of a matrix.
  WrittenNumber read_number(const toml::node& node, NumberRules rules, std::string& error) const;
  // number_row() and number_matrix() by `rules`.
  std::vector<WrittenNumber> read_row(const toml::node& node, std::string_view key,
                                      NumberRules rules) const;
  std::vector<std::vector<WrittenNumber>> read_matrix(const toml::node& node, std::string_view key,
                                                      NumberRules rules) const;

  // The literal text of a value as written in the file ("1.70").
  std::string_view literal_text(const toml::node& node) const;
  // The byte where toml++'s (line, column) starts; columns count code points.
  // O(1) on an ASCII line; on others, a cursor continues from the last number
  // of the same line, so reading a line left to right walks it once.
  std::size_t byte_of(std::size_t line, std::size_t column) const;

  std::string text_;
  std::string origin_;
  toml::table root_;
  std::vector<std::size_t> line_starts_;
  std::vector<bool> ascii_line_;  // per line: no byte >= 0x80 (byte = start + column - 1)
  struct Cursor {
    std::size_t line = 0, column = 0, byte = 0;
  };
  // The last position byte_of() found on a non-ASCII line (so a TomlReader is
  // not for use by two threads at once).
  mutable Cursor cursor_;
};

// Written decimals beyond this carry no meaning: the smallest double
// (4.9e-324) shows all its 17 significant digits within 340 decimals.
inline constexpr int kMaxWrittenDecimals = 340;

// Decimals written in a number literal: "1.70" -> 2, "2" -> 0, "1e-3" -> 3;
// digits beyond 17 significant ones do not count ("0.1234567890123456789" ->
// 17); at most kMaxWrittenDecimals ("1e-2147483648" -> 340).
int decimals_written(std::string_view literal);

// The name of `names` at most two edits from `name` (case aside), the
// nearest; empty when none is that near. For "did you mean ...?".
std::string_view nearest_name(std::string_view name, const std::vector<std::string_view>& names);

// Converts a matrix of written numbers to values.
arma::mat to_matrix(const std::vector<std::vector<WrittenNumber>>& numbers);

// Throws InputError naming origin, the line and the fix when `said` is not
// about a step of `trace` or does not fit its matrix; `noun` is "claim" or
// "answer".
void require_fits(const StepValues& said, const Trace& trace, const std::string& origin,
                  std::string_view noun);

}  // namespace attn
