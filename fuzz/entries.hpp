// The fuzz targets' entry functions (docs/fuzzing.md): each reads one input as
// a file of its kind would be read. Any attn::InputError is an expected
// outcome and is caught; anything else escaping, a crash, a leak or undefined
// behaviour is a finding. Shared by the libFuzzer targets (fuzz/<target>.cpp,
// ATTN_FUZZ=ON) and by fuzz_replay, which the normal build's CTest runs over
// every reproducer in fuzz/regressions/.
#pragma once

#include <string_view>

namespace attn::fuzz {

// Sets attn::limits() low (tokens 64, d_model 64, heads 8, ...) so that an
// input cannot allocate much; called by every entry function.
void set_small_limits();

// parse_lesson, then the whole pipeline on the CPU for what parses.
void lesson(std::string_view text);
// parse_answers_file against the trace of a fixed small lesson (river-bank).
void answers(std::string_view text);
// parse_roster and the CSV reader of a class's roster.csv (teach/mark.hpp csv_rows).
void roster(std::string_view text);
// parse_golden, then compare_with_golden against river-bank's trace.
void golden(std::string_view text);

// The entry function of a target by name ("lesson", "answers", "roster",
// "golden"); nullptr for another name.
using Entry = void (*)(std::string_view);
Entry entry(std::string_view target);

}  // namespace attn::fuzz
