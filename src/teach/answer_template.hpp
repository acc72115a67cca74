// The answers file a student fills in: every cell the sheet asks for, blank,
// with whose variant it is (docs/exercises.md, docs/answers-format.md).
#pragma once

#include <string>
#include <string_view>

#include "teach/exercise_sheets.hpp"

namespace attn {

// answers.toml for one student: top-level student and variant (so that verify
// and mark refuse it against another student's lesson), then one [[answer]]
// per asked step with every cell "" (blank = not answered), its rows and
// columns labelled with the tokens in comments.
std::string answers_template(const SheetModel& model);

// Why `exercise --force` keeps the answers file `path` (text `existing`)
// instead of writing `fresh` (the new template) over it: a line for the
// instructor naming the file, and the new variant when it differs; "" when the
// file may be replaced. It may be replaced when it is blank: valid TOML whose
// every value and values of every [[answer]] is "" (spaces at most), as the
// template of any variant has them. A file that is not TOML, or has a number
// or any other text in a value, holds a student's work and is kept.
// Whether answers text is the untouched template: valid TOML with only the
// template's keys (student, variant, [[answer]]) and no value written, of any
// variant. `mark` calls such a student's work "not handed in".
bool blank_answers_text(std::string_view text);

std::string kept_answers_note(std::string_view existing, const std::string& path,
                              std::string_view fresh);

}  // namespace attn
