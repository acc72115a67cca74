// Checking a lesson: every step against its golden file, and every claim of
// its source document against the computed value (the errata), with the
// report as text and as JSON.
#pragma once

#include <string>
#include <vector>

#include "core/backend.hpp"
#include "core/golden.hpp"
#include "core/lesson.hpp"
#include "core/trace.hpp"
#include "teach/errata.hpp"
#include "teach/quantity_claims.hpp"

namespace attn {

enum class GoldenStatus { pass, fail, missing };

struct LessonCheck {
  Lesson lesson;
  Trace trace;
  std::string golden_path;
  GoldenStatus status = GoldenStatus::missing;
  std::vector<GoldenMismatch> mismatches;
  std::vector<ClaimVerdict> claims;
  std::vector<QuantityVerdict> quantities;  // shape, bytes, FLOPs, sampled statistics
};

// Claims by status: every cell agrees; carried (none a real slip); a real slip.
// `derived*` count the claims marked `derived = true` (numbers a lesson computed
// itself) among them, so that what the documents state can be told apart.
struct ClaimCounts {
  std::size_t checked = 0, agree = 0, carried = 0, disagree = 0;
  std::size_t derived = 0, derived_agree = 0, derived_carried = 0;
  ClaimCounts& operator+=(const ClaimCounts& o) {
    checked += o.checked;
    agree += o.agree;
    carried += o.carried;
    disagree += o.disagree;
    derived += o.derived;
    derived_agree += o.derived_agree;
    derived_carried += o.derived_carried;
    return *this;
  }
  // Counts one claim of `status`; `derived` when the lesson computed it.
  void add(ClaimStatus status, bool is_derived);
};
ClaimCounts count_claims(const std::vector<ClaimVerdict>& claims);

// Runs `lesson` on `backend`, compares it with the golden file at
// `golden_path` (missing is a status, not an error) and checks its claims.
LessonCheck check_lesson(Lesson lesson, const std::string& golden_path, double tolerance,
                         Backend& backend);

// The report of one lesson for people (golden mismatches, then the claims),
// in language(), no line wider than `width` (continuation lines hang indented).
std::string check_report_text(const LessonCheck& c, double tolerance, std::size_t width = 80);
// The report of one lesson as a JSON object (docs/json.md).
std::string check_report_json(const LessonCheck& c);

}  // namespace attn
