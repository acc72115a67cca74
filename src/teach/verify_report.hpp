// The report of verify for people and for tools: every answer with its
// status (ok, carried, wrong), the expected value, and for a wrong cell the
// diagnosis and the worked arithmetic.
#pragma once

#include <string>

#include "core/lesson.hpp"
#include "core/trace.hpp"
#include "teach/verify.hpp"

namespace attn {

// Text: a summary line, then each answer; `origin` names the answers file.
std::string verify_report_text(const Lesson& lesson, const Trace& truth, const VerifyReport& r,
                               const std::string& origin, std::size_t width = 100);

// --brief: one line per step answered or missing (its values counted by
// status, and its first value not ok or carried), then the result line that
// also ends the full text.
std::string verify_report_brief(const Trace& truth, const VerifyReport& r, std::size_t width = 100);

// JSON (docs/json.md): first_wrong, then one entry per number given, in the
// order of the answers file.
std::string verify_report_json(const Lesson& lesson, const VerifyReport& r);

}  // namespace attn
