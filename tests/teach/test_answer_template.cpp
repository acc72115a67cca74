// The answers template: it reads back as an answers file, says whose it is,
// and leaves every asked cell blank (verify then marks every step missing).
#include <doctest/doctest.h>

#include <memory>

#include "backend/backend.hpp"
#include "support/sheet_fixture.hpp"
#include "teach/answer_template.hpp"
#include "teach/answers.hpp"
#include "teach/verify.hpp"

TEST_CASE("answers template: every asked cell blank, with the student and variant") {
  const testsupport::SheetFixture f("José Núñez");
  const std::string text = attn::answers_template(f.model);
  const attn::AnswersFile file = attn::parse_answers_file(text, "answers.toml", f.exercise.trace);
  CHECK(file.student == "José Núñez");
  CHECK(file.variant == f.model.variant);
  CHECK(file.variant == f.exercise.lesson.variant);
  REQUIRE(file.answers.size() == f.model.asked.size());
  for (std::size_t i = 0; i < file.answers.size(); ++i) {
    const attn::Answer& a = file.answers[i];
    CHECK(a.step == f.model.asked[i].id);
    const arma::mat& value = f.exercise.trace.at(a.step).value;
    REQUIRE(a.values.size() == value.n_rows);
    for (const auto& row : a.values) {
      REQUIRE(row.size() == value.n_cols);
      for (const attn::WrittenNumber& n : row) CHECK(n.blank);
    }
  }
  // The tokens label the rows, in comments.
  CHECK(text.find("],  # the\n") != std::string::npos);
  CHECK(text.find("],  # sat\n") != std::string::npos);
  const std::unique_ptr<attn::Backend> cpu = attn::make_backend("cpu");
  const attn::VerifyReport r = attn::verify_answers(f.exercise.lesson, *cpu, file.answers);
  CHECK(r.answers.empty());
  CHECK(r.missing == f.exercise.asked);
  CHECK(r.ok + r.carried + r.wrong + r.blank == 0);
  CHECK_FALSE(r.passed());
}

TEST_CASE("exercise --force: a blank answers file of any variant is replaced, a filled one kept") {
  const testsupport::SheetFixture ada("Ada");
  const testsupport::SheetFixture bob("Bob");  // another variant, as another seed gives
  const std::string fresh = attn::answers_template(ada.model);
  const std::string path = "cls/ada/answers.toml";
  CHECK(attn::kept_answers_note(fresh, path, fresh) == "");
  CHECK(attn::kept_answers_note(attn::answers_template(bob.model), path, fresh) == "");
  CHECK(attn::kept_answers_note(fresh + "\n# notes, no number yet\n", path, fresh) == "");
  CHECK(attn::kept_answers_note("", path, fresh) == "");  // no answer at all
  // One number typed in, in this variant's file or the other's.
  std::string filled = fresh;
  filled.replace(filled.find("[\"\""), 3, "[\"0.5\"");
  CHECK(attn::kept_answers_note(filled, path, fresh) ==
        "kept cls/ada/answers.toml: it holds answers typed in (not the blank template); delete "
        "it (or move it away) and run again to get a blank template");
  std::string other = attn::answers_template(bob.model);
  other.replace(other.find("[\"\""), 3, "[\"0.5\"");
  CHECK(attn::kept_answers_note(other, path, fresh) ==
        "kept cls/ada/answers.toml: it holds answers to variant " + bob.model.variant +
            ", but the new lesson.toml beside it is variant " + ada.model.variant +
            ", so mark will refuse it; delete it (or move it away) and run again to get a blank "
            "template of the new variant, or run exercise with the old --seed and roster");
  CHECK(attn::kept_answers_note("[[answer]]\nstep = \"scores\"\ncell = [0, 1]\nvalue = 0.5\n", path,
                                fresh)
            .starts_with("kept cls/ada/answers.toml: it holds answers typed in"));
  CHECK(attn::kept_answers_note("values = [", path, fresh) ==
        "kept cls/ada/answers.toml: it is not valid TOML, so it may hold a student's work; "
        "delete it (or move it away) and run again to get a blank template");
}
