// What the practice page asks of the engine, in text: a lesson's TOML and the
// learner's answers file in, JSON out. The same functions run natively (the
// tests, `practice --format html` for the page's first view) and as
// WebAssembly in the page (wasm_main.cpp), so the page judges with the
// project's own engine, not a second one in JavaScript.
#pragma once

#include <string>

namespace attn {

struct PracticeRequest {
  std::string lesson_toml;  // the lesson, as a file would hold it
  std::string saved;        // the answers file so far (PracticeSession::answers_toml)
  std::string action;       // view, answer, hint, skip, back, go
  std::string cell;         // answer, go: "STEP:ROW:COL"; empty: the cell asked now
  std::string typed;        // answer: the value as typed
  std::string lang;         // en or zh
};

// {"ok": true, "saved": ..., "records": [...], "marks": [...], ...}, or
// {"ok": false, "error": ...} for input the engine refuses (not a number, a
// cell of no practised step); docs/practice.md lists the fields.
std::string practice_json(const PracticeRequest& request);

struct ExploreRequest {
  std::string lesson_toml;
  std::string edit;  // "STEP:ROW:COL=VALUE" (a given number), or empty: the lesson as it is
  std::string lang;
};

// {"ok": true, "toml": the edited lesson, "trace": run --format json's object}, or
// {"ok": false, "error": ...}.
std::string explore_json(const ExploreRequest& request);

}  // namespace attn
