// The exercise as a Moodle XML question bank (`exercise --format moodle`), the
// way R/exams' exams2moodle writes cloze exercises: a category, then one Cloze
// question per variant with a NUMERICAL sub-question in every asked cell.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "teach/exercise.hpp"
#include "teach/exercise_sheets.hpp"

namespace attn {

// "$course$/top/attn-trace/seed 2026 · 3 tokens · …": everything that changes
// what a question asks (seed, shape, masks, decimals, asked steps), so a quiz
// drawing a random question from it draws comparable questions. The last
// level is at most 255 characters (Moodle's column): asked steps that would
// not fit are named by their count and a hash of their list.
std::string moodle_category(const ExerciseSpec& spec);

// The whole file: an XML declaration, <quiz>, the category question, and one
// cloze question per model. No student names: a random question gives a
// student any variant, so questions are named by variant only.
std::string render_moodle_xml(const ExerciseSpec& spec, const std::vector<SheetModel>& models);

// HTML text in a cloze question outside its sub-questions: xml_text, and
// { } # ~ \ as character references, so no text can open or end a sub-question.
std::string cloze_html_text(std::string_view s);

// Text inside a sub-question (an answer or its feedback): a backslash before
// each of } # ~ / " \ (Moodle's Cloze syntax).
std::string cloze_answer_text(std::string_view s);

// The sub-question of one asked cell: {1:NUMERICAL:=VALUE:TOLERANCE} with VALUE
// the true value (to decimals + 9 places, trailing zeros dropped) and TOLERANCE
// verify's for a number written with `decimals` decimals (written_tolerance),
// both plain decimals: Moodle then accepts exactly the numbers of `decimals`
// decimals that verify accepts; a masked cell (-inf) is {1:SHORTANSWER:=-inf~=−∞~…}.
std::string cloze_cell(double value, int decimals);

}  // namespace attn
