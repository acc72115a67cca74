// The answers file a student fills in: every cell the sheet asks for, blank,
// with whose variant it is (docs/exercises.md, docs/answers-format.md).
#pragma once

#include <string>

#include "teach/exercise_sheets.hpp"

namespace attn {

// answers.toml for one student: top-level student and variant (so that verify
// and mark refuse it against another student's lesson), then one [[answer]]
// per asked step with every cell "" (blank = not answered), its rows and
// columns labelled with the tokens in comments.
std::string answers_template(const SheetModel& model);

}  // namespace attn
