// The practice page's engine natively (src/web/engine.hpp): what the page's
// script is told after each thing the learner does, and explore's edits.
#include <doctest/doctest.h>

#include <string>

#include "core/lesson.hpp"
#include "core/lesson_library.hpp"
#include "core/reference_backend.hpp"
#include "support/mini_json.hpp"
#include "web/engine.hpp"
#include "web/practice_page.hpp"

namespace {

using JsonValue = testjson::Value;
JsonValue parse_json(const std::string& text) {
  return testjson::parse(text);
}

const std::string& river_bank() {
  static const std::string text = attn::embedded_lesson("river-bank").text;
  return text;
}

JsonValue practice(const std::string& saved, const std::string& action,
                   const std::string& cell = "", const std::string& typed = "",
                   const std::string& lang = "en") {
  return parse_json(attn::practice_json({.lesson_toml = river_bank(),
                                         .saved = saved,
                                         .action = action,
                                         .cell = cell,
                                         .typed = typed,
                                         .lang = lang}));
}

}  // namespace

TEST_CASE("web engine: a new session asks river-bank's first cell and saves nothing answered") {
  const JsonValue v = practice("", "view");
  REQUIRE(v["ok"].boolean);
  CHECK(v["current"]["name"].text == "Q[river, d1]");
  CHECK(v["records"].size() == 27);  // 3 cells of 9 steps: masked masks nothing here
  CHECK(v["marks"].size() == 0);
  CHECK(v["saved"].text.find("[[answer]]") == std::string::npos);
  // The saved text of a new session is itself a session (quit before the first answer).
  const JsonValue again = practice(v["saved"].text, "view");
  REQUIRE(again["ok"].boolean);
  CHECK(again["current"]["name"].text == "Q[river, d1]");
}

TEST_CASE("web engine: an answer is marked with verify's verdict, a wrong one brings a hint") {
  const JsonValue start = practice("", "view");
  // Q[river, d1] = X[river,:]·W_Q[:,d1] = 0.06 + 0.14 + 0.28 + 0.02 = 0.5
  const JsonValue right = practice(start["saved"].text, "answer", "", "0.50");
  REQUIRE(right["ok"].boolean);
  CHECK(right["mark"]["verdict"].text == "ok");
  CHECK(right["current"]["name"].text != "Q[river, d1]");
  const JsonValue wrong = practice(right["saved"].text, "answer", "", "7");
  REQUIRE(wrong["ok"].boolean);
  CHECK(wrong["mark"]["verdict"].text == "wrong");
  CHECK(wrong["hint"]["rung"].number == 1);
  CHECK(wrong["hint"]["text"].text.find("hint 1 of 3") == 0);
  CHECK(wrong["marks"].size() == 2);
  CHECK(wrong["summary"]["verify"]["ok"].number == 1);
  CHECK(wrong["summary"]["verify"]["wrong"].number == 1);
}

TEST_CASE("web engine: any cell of a practised step may be answered, no other") {
  const JsonValue start = practice("", "view");
  // head0.scores[river, river] is not among the cells asked: it joins the session.
  // Its true value is Q[river,:]·K[river,:] = 1.6787.
  const JsonValue v = practice(start["saved"].text, "answer", "head0.scores:0:0", "1.6787");
  REQUIRE(v["ok"].boolean);
  CHECK(v["mark"]["cell"]["name"].text == "head0.scores[river, river]");
  CHECK(v["mark"]["verdict"].text == "ok");
  CHECK(v["records"].size() == 28);
  CHECK(v["saved"].text.find("step = \"head0.scores\"\ncell = [0, 0]\nvalue = 1.6787\n") !=
        std::string::npos);
  // The cell asked is again the first one still to answer.
  CHECK(v["current"]["name"].text == "Q[river, d1]");
  for (const char* cell : {"X:0:0", "head0.scores:9:0", "head0.scores:0", "nonsense"}) {
    CAPTURE(cell);
    const JsonValue bad = practice(start["saved"].text, "answer", cell, "1");
    CHECK_FALSE(bad["ok"].boolean);
    CHECK(!bad["error"].text.empty());
  }
  const JsonValue text = practice(start["saved"].text, "answer", "", "1,5");
  CHECK_FALSE(text["ok"].boolean);
  CHECK(text["error"].text.find("'1,5' is not a number") == 0);
}

TEST_CASE("web engine: the page's words and the engine's messages follow the language") {
  const JsonValue start = practice("", "view", "", "", "zh");
  const JsonValue wrong = practice(start["saved"].text, "answer", "", "7", "zh");
  REQUIRE(wrong["ok"].boolean);
  CHECK(wrong["hint"]["text"].text.find("提示") != std::string::npos);
  CHECK(wrong["mark"]["verdict"].text == "wrong");                   // for the page's script
  CHECK(wrong["mark"]["text"].text.rfind("错误（wrong）", 0) == 0);  // for the learner
}

TEST_CASE("web engine: explore changes one given number in the lesson's own text") {
  const JsonValue v = parse_json(
      attn::explore_json({.lesson_toml = river_bank(), .edit = "X:0:1=0.25", .lang = "en"}));
  REQUIRE(v["ok"].boolean);
  const std::string& toml = v["toml"].text;
  CHECK(toml.find("X = [[0.6, 0.25, 0.7, 0.1],") != std::string::npos);
  CHECK(toml.size() == river_bank().size() + 1);  // "0.2" became "0.25"; all else as it was
  CHECK(v["steps"][0u]["id"].text == "X");
  CHECK(v["steps"][0u]["data"][0u][1u].number == 0.25);
  // Q[river, d1] = 0.6·0.1 + 0.25·0.7 + 0.7·0.4 + 0.1·0.2 = 0.535
  CHECK(v["steps"][2u]["id"].text == "Q");
  CHECK(v["steps"][2u]["data"][0u][1u].number == doctest::Approx(0.535).epsilon(1e-14));
  bool editable_x = false;
  for (std::size_t k = 0; k < v["editable"].size(); ++k) editable_x |= v["editable"][k].text == "X";
  CHECK(editable_x);
}

TEST_CASE("web engine: explore refuses what is not a given number, naming it") {
  for (const auto& [edit, says] : std::initializer_list<std::pair<const char*, const char*>>{
           {"X:0:1=abc", "'abc' is not a number"},
           {"X:0:1=1e400", "'1e400' is not a number"},
           {"X:0:1=0x10", "'0x10' is not a number"},
           {"X:0:9=1", "X[0, 9] is not a number the lesson gives"},
           {"head0.scores:0:0=1", "head0.scores[0, 0] is not a number the lesson gives"},
           {"X:0:1", "is no edit"}}) {
    CAPTURE(edit);
    const JsonValue v =
        parse_json(attn::explore_json({.lesson_toml = river_bank(), .edit = edit, .lang = "en"}));
    CHECK_FALSE(v["ok"].boolean);
    CHECK(v["error"].text.find(says) != std::string::npos);
  }
  // Identity weights are not written number by number.
  const JsonValue bert =
      parse_json(attn::explore_json({.lesson_toml = attn::embedded_lesson("bert-base-shapes").text,
                                     .edit = "W_Q:0:0=2",
                                     .lang = "en"}));
  CHECK_FALSE(bert["ok"].boolean);
}

TEST_CASE("web page: the sheet without script, and a lesson's text cannot end the script") {
  std::string text = river_bank();
  const std::string story = "story = \"\"\"\n";
  text.insert(text.find(story) + story.size(), "</script><b>bold</b> ");
  const attn::Lesson lesson = attn::parse_lesson(text, "lesson.toml");
  attn::ReferenceBackend backend;
  const attn::PracticeSession session(lesson, backend, {.steps = {"head0.scores"}, .cells = 2});
  const std::string page = attn::practice_page(session, {.lesson_text = text,
                                                         .engine_script = "var AttnEngine;",
                                                         .engine_module_gz = "\x1f\x8b",
                                                         .page_script = "/* page */",
                                                         .page_style = "/* style */"});
  CHECK(page.rfind("<!DOCTYPE html>\n<html lang=\"en\">", 0) == 0);
  // Three scripts (data, loader, page), none ended early by the lesson's "</script>".
  std::size_t scripts = 0;
  for (std::size_t at = 0; (at = page.find("</script>", at)) != std::string::npos; ++at) ++scripts;
  CHECK(scripts == 3);
  CHECK(page.find("&lt;/script&gt;&lt;b&gt;bold") !=
        std::string::npos);                                       // the story, shown as text
  CHECK(page.find("\"engine\": \"H4s=\"") != std::string::npos);  // base64 of 1f 8b
  // The blank grid: 4×4 inputs for head0.scores, two of them asked (numbered).
  std::size_t inputs = 0;
  for (std::size_t at = 0;
       (at = page.find("<input inputmode=\"decimal\"", at)) != std::string::npos; ++at)
    ++inputs;
  CHECK(inputs == 16);
  CHECK(page.find("<td data-cell=\"head0.scores:0:1\" class=\"asked\"><sup>") != std::string::npos);
  CHECK(page.find("<figure class=\"given\" data-step=\"W_Q\">") != std::string::npos);
}

TEST_CASE("web engine and page: gradient steps of backward-by-hand, asked, marked and drawn") {
  const std::string text = attn::embedded_lesson("backward-by-hand").text;
  const auto json = [&](const std::string& saved, const std::string& action,
                        const std::string& typed = "") {
    return parse_json(attn::practice_json(
        {.lesson_toml = text, .saved = saved, .action = action, .cell = "", .typed = typed,
         .lang = "en"}));
  };
  const std::string saved = "# practice: cells 2\n# practice: position 0\n"
                            "# practice: step grad.head0.masked\n";
  const JsonValue start = json(saved, "view");
  REQUIRE(start["ok"].boolean);
  CHECK(start["records"].size() == 2);
  CHECK(start["current"]["name"].text.rfind("grad.head0.masked[", 0) == 0);
  const JsonValue wrong = json(start["saved"].text, "answer", "7");
  REQUIRE(wrong["ok"].boolean);
  CHECK(wrong["mark"]["verdict"].text == "wrong");
  // The page: the upstream gradient among the given, a 3×3 grid to fill.
  const attn::Lesson lesson = attn::parse_lesson(text, "lesson.toml");
  attn::ReferenceBackend backend;
  const attn::PracticeSession session(lesson, backend,
                                      {.steps = {"grad.head0.masked"}, .cells = 2});
  const std::string page = attn::practice_page(session, {.lesson_text = text,
                                                         .engine_script = "",
                                                         .engine_module_gz = "",
                                                         .page_script = "",
                                                         .page_style = ""});
  CHECK(page.find("<figure class=\"given\" data-step=\"grad.concat\">") != std::string::npos);
  CHECK(page.find("data-cell=\"grad.head0.masked:2:2\"") != std::string::npos);
}
