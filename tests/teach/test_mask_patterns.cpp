// Mask patterns ([model] window, global, stride; docs/lesson-format.md): the
// checks on load, the reasons each cell carries, the counts against brute
// force, the attended-cells claims, --expand, verify and practice on the two
// pattern lessons (sliding-window-global, strided-sparse).
#include <doctest/doctest.h>
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <string>

#include "backend/backend.hpp"
#include "core/error.hpp"
#include "core/expand.hpp"
#include "core/i18n.hpp"
#include "core/lesson_library.hpp"
#include "core/mask_pattern.hpp"
#include "core/pipeline.hpp"
#include "render/render.hpp"
#include "teach/answers.hpp"
#include "teach/practice.hpp"
#include "teach/quantity_claims.hpp"
#include "teach/verify.hpp"

namespace attn {

namespace {

// Three tokens of self-attention; `model` and `extra` added to it.
std::string lesson_text(const std::string& model, const std::string& extra = "") {
  return "[model]\n" + model +
         "\n[input]\nX = [[1, 0], [0, 1], [1, 1]]\n[weights]\nW_Q = \"identity\"\n"
         "W_K = \"identity\"\nW_V = \"identity\"\n" + extra;
}

std::string error_of(const std::string& text) {
  try {
    parse_lesson(text, "bad.toml");
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

bool has(const std::string& message, const std::string& part) {
  return message.find(part) != std::string::npos;
}

struct Traced {
  explicit Traced(const char* id) : lesson(find_lesson(id)), truth(run_pipeline(lesson, *backend)) {}
  Lesson lesson;
  std::unique_ptr<Backend> backend = make_backend("cpu");
  Trace truth;
};

}  // namespace

TEST_CASE("mask patterns: bad values exit 2 naming the file, the key, the line and the fix") {
  std::string m = error_of(lesson_text("window = -1"));
  CHECK(has(m, "bad.toml:2: key 'model.window'"));
  CHECK(has(m, "cannot be negative"));
  m = error_of(lesson_text("stride = 0"));
  CHECK(has(m, "bad.toml:2: key 'model.stride'"));
  CHECK(has(m, "at least 1"));
  m = error_of(lesson_text("window = 1\nglobal = [3]"));
  CHECK(has(m, "key 'model.global'"));
  CHECK(has(m, "token 3 is out of range: the sequence has 3 tokens, indices 0 to 2"));
  CHECK(has(error_of(lesson_text("window = 1\nglobal = [1, 1]")), "token 1 is listed twice"));
  m = error_of(lesson_text("global = [0]"));
  CHECK(has(m, "key 'model.global'"));
  CHECK(has(m, "add window = w or stride = s"));
  m = error_of(lesson_text("window = 1", "[decode]\nkv_cache = true\n").replace(0, 8,
                                                                            "[model]\ncausal = true\n"));
  CHECK(has(m, "key 'model.window'"));
  CHECK(has(m, "kv_cache = false"));
  m = error_of(
      "[model]\nwindow = 1\n[input]\nX = [[1, 0]]\nmemory = [[1, 0], [0, 1]]\n[weights]\n"
      "W_Q = \"identity\"\nW_K = \"identity\"\nW_V = \"identity\"\n");
  CHECK(has(m, "key 'model.window'"));
  CHECK(has(m, "cross-attention"));
  CHECK(error_of(lesson_text("window = 0\nglobal = [2]\nstride = 2\ncausal = true")).empty());
}

TEST_CASE("mask patterns: attended-cells claims are checked on load too") {
  std::string m = error_of(lesson_text("", "[[claim]]\nquantity = \"attended\"\nwindow = 2\n"
                                           "value = 5\n"));
  CHECK(has(m, "key 'claim[0].seq'"));
  m = error_of(lesson_text("", "[[claim]]\nquantity = \"attended\"\nseq = 10\nchunk = 4\n"
                               "overlap = 4\nvalue = 5\n"));
  CHECK(has(m, "key 'claim[0].overlap'"));
  CHECK(has(m, "from 0 to chunk − 1 = 3"));
  m = error_of(lesson_text("", "[[claim]]\nquantity = \"attended\"\nseq = 10\nchunk = 4\n"
                               "window = 1\nvalue = 5\n"));
  CHECK(has(m, "key 'claim[0].chunk'"));
  m = error_of(lesson_text("", "[[claim]]\nquantity = \"flops\"\nwindow = 1\nvalue = 5\n"));
  CHECK(has(m, "key 'claim[0].window'"));
  m = error_of(lesson_text("", "[[claim]]\nquantity = \"attended\"\nseq = 10\nwindow = 1\n"
                               "global = [10]\nvalue = 5\n"));
  CHECK(has(m, "token 10 is out of range"));
}

TEST_CASE("mask patterns: an attended claim at seq counts the lesson's own pattern there") {
  const Lesson lesson = parse_lesson(
      lesson_text("window = 1", "[[claim]]\nquantity = \"attended\"\nseq = 10\nvalue = 28\n"
                                "[[claim]]\nquantity = \"attended_fraction\"\nvalue = 0.778\n"),
      "w.toml");
  const std::unique_ptr<Backend> backend = make_backend("cpu");
  const std::vector<QuantityVerdict> v = check_quantity_claims(lesson, run_pipeline(lesson, *backend));
  REQUIRE(v.size() == 2);
  CHECK(*v[0].computed_value == 28.0);  // 10 rows of 3, less the two ends' missing neighbour
  CHECK(v[0].agrees);
  CHECK(*v[1].computed_value == doctest::Approx(7.0 / 9.0).epsilon(1e-15));  // 7 of 9 at n = 3
  CHECK(v[1].agrees);
  const Lesson padded = parse_lesson(
      lesson_text("window = 1", "[[claim]]\nquantity = \"attended\"\nseq = 10\nvalue = 28\n")
          .replace(lesson_text("window = 1").find("[weights]"), 0, "key_padding = [0, 0, 1]\n"),
      "p.toml");
  CHECK_THROWS_WITH_AS(check_quantity_claims(padded, run_pipeline(padded, *backend)),
                       doctest::Contains("cannot be carried to another length"), InputError);
}

TEST_CASE("mask patterns: each cell's reasons, as SPEC section 11 defines them") {
  MaskPattern p;
  p.causal = true;
  p.window = 1;
  p.stride = 4;
  CHECK(pattern_reasons(p, 6, 1) == (mask_window | mask_stride));
  CHECK(pattern_reasons(p, 6, 3) == 0u);  // a stride key, 3 back
  CHECK(pattern_reasons(p, 6, 5) == 0u);  // inside the window
  CHECK(pattern_reasons(p, 2, 7) == static_cast<unsigned>(mask_causal));  // stride key, future
  CHECK(pattern_reasons(p, 1, 3) == static_cast<unsigned>(mask_causal));
  CHECK(pattern_reasons(p, 0, 2) == (mask_causal | mask_window | mask_stride));
  MaskPattern g;
  g.window = 1;
  g.global = {0};
  CHECK(pattern_reasons(g, 6, 0) == 0u);
  CHECK(pattern_reasons(g, 0, 6) == 0u);
  CHECK(pattern_reasons(g, 6, 2) == static_cast<unsigned>(mask_window));
  MaskPattern s;
  s.stride = 3;  // no window: the diagonal is kept
  CHECK(pattern_reasons(s, 4, 4) == 0u);
  CHECK(pattern_reasons(s, 4, 3) == static_cast<unsigned>(mask_stride));
  CHECK(pattern_reasons(s, 4, 5) == 0u);  // 5 mod 3 = 2
}

TEST_CASE("mask patterns: the row-by-row count equals the cells the rule keeps") {
  for (std::uint64_t n = 1; n <= 40; ++n)
    for (int variant = 0; variant < 16; ++variant) {
      MaskPattern p;
      p.causal = variant & 1;
      if (variant & 2) p.window = n % 5;
      if (variant & 4) p.stride = 1 + n % 7;
      if ((variant & 8) && p.sparse()) p.global = {0, n / 2, n - 1};
      p.global.erase(std::unique(p.global.begin(), p.global.end()), p.global.end());
      std::uint64_t kept = 0;
      for (std::uint64_t i = 0; i < n; ++i)
        for (std::uint64_t j = 0; j < n; ++j) kept += pattern_reasons(p, i, j) == 0u;
      CAPTURE(n);
      CAPTURE(variant);
      CHECK(attended_cells(p, n) == kept);
    }
  const ChunkCount c = chunk_cells(2000, 512, 128);
  CHECK(c.chunks == 5);
  CHECK(c.last == 464);
  CHECK(c.cells == 4 * 512 * 512 + 464 * 464);
  CHECK(chunk_cells(3136, 49, 0).cells == 64u * 49u * 49u);
  CHECK(chunk_cells(512, 512, 128).chunks == 1);
}

TEST_CASE("mask patterns: the lessons' masks, weights and attended-cells claims") {
  Traced w("sliding-window-global");
  const Trace& t = w.truth;
  CHECK(t.mask(3, 6) == static_cast<unsigned>(mask_window));
  CHECK(arma::accu(t.mask.row(0)) == 0u);  // [CLS] attends everywhere
  CHECK(arma::accu(t.mask.col(0)) == 0u);  // and is attended by everyone
  CHECK(arma::accu(t.mask == 0u) == 29u);
  CHECK(t.at("head0.weights").value(3, 6) == 0.0);
  CHECK(arma::accu(t.at("head0.weights").value.row(3)) == doctest::Approx(1.0).epsilon(1e-15));
  const std::vector<QuantityVerdict> verdicts = check_quantity_claims(w.lesson, t);
  REQUIRE(verdicts.size() == 5);
  for (const QuantityVerdict& v : verdicts) CHECK_MESSAGE(v.agrees, v.details);
  CHECK(*verdicts[0].computed_value == 29.0);
  CHECK(*verdicts[1].computed_value == 988414.0);
  CHECK(*verdicts[2].computed_value == doctest::Approx(2043134.0 / 16777216.0).epsilon(1e-15));
  CHECK(*verdicts[3].computed_value == 1263872.0);
  CHECK(has(verdicts[3].details, "5 chunks of 512 tokens overlapping by 128 (the last 464 long)"));
  CHECK(*verdicts[4].computed_value == 0.015625);

  Traced s("strided-sparse");
  CHECK(s.truth.mask(6, 1) == (mask_window | mask_stride));
  CHECK(s.truth.mask(7, 3) == 0u);
  CHECK(arma::accu(s.truth.mask == 0u) == 18u);
  const std::vector<QuantityVerdict> sv = check_quantity_claims(s.lesson, s.truth);
  REQUIRE(sv.size() == 3);
  CHECK(*sv[1].computed_value == doctest::Approx(1007875.0 / 64e6).epsilon(1e-15));
  CHECK(sv[1].agrees);
}

TEST_CASE("mask patterns: --expand says why a cell is masked, or which global token keeps it") {
  Traced w("sliding-window-global");
  const CellExpansion m = expand_cell(w.lesson, w.truth, "head0.masked", 3, 6);
  CHECK(m.mask_reasons == static_cast<unsigned>(mask_window));
  CHECK(std::isinf(m.value));
  CHECK(has(expansion_text(m, 4),
            "window: key flooded is 3 positions from query of, beyond the window of 1"));
  CHECK(has(expansion_json(m, 4), "\"reasons\": [\"window\"]"));
  const CellExpansion kept = expand_cell(w.lesson, w.truth, "head0.masked", 6, 0);
  CHECK(kept.mask_reasons == 0u);
  CHECK(has(expansion_text(kept, 4), "key [CLS] is a global token"));

  Traced s("strided-sparse");
  const CellExpansion both = expand_cell(s.lesson, s.truth, "head0.masked", 6, 1);
  const std::string text = expansion_text(both, 4);
  CHECK(has(text, "window: key rose is 5 positions from query too"));
  CHECK(has(text, "stride: key rose is not a stride key (1 mod 4 = 1, not 3)"));
  CHECK(has(expansion_json(both, 4), "\"reasons\": [\"window\", \"stride\"]"));
  set_languages(Language::zh, Language::zh);
  const std::string zh_text = expansion_text(both, 4);
  set_languages(Language::en, Language::en);
  CHECK(has(zh_text, "窗口"));
  CHECK(has(zh_text, "步长"));
  RenderOptions options;
  options.steps = {"head0.masked"};
  options.width = 400;
  const std::string formula = render_text(s.lesson, s.truth, options);
  CHECK(has(formula, "attended: 18 of 64 cells (window 1, stride 4)"));
}

TEST_CASE("mask patterns: verify marks a row that forgot the window wrong, the right one ok") {
  Traced w("sliding-window-global");
  const arma::rowvec right = w.truth.at("head0.weights").value.row(3);
  // Forgetting the window: the softmax over every key of row 3.
  const arma::rowvec scaled = w.truth.at("head0.scaled").value.row(3);
  const arma::rowvec all = arma::exp(scaled) / arma::accu(arma::exp(scaled));
  const auto row = [](const arma::rowvec& r) {
    std::string out;
    for (const double v : r) out += fmt::format("{}{:.4f}", out.empty() ? "" : ", ", v);
    return out;
  };
  const auto mark = [&](const arma::rowvec& r) {
    const std::string toml =
        "[[answer]]\nstep = \"head0.weights\"\nrow = 3\nvalues = [" + row(r) + "]\n";
    return verify_answers(w.lesson, *w.backend, parse_answers(toml, "a.toml", w.truth));
  };
  const VerifyReport ok = mark(right);
  CHECK(ok.ok == 7);
  CHECK(ok.wrong == 0);
  const VerifyReport wrong = mark(all);
  CHECK(wrong.wrong >= 4);  // the three masked keys got weight, the kept ones too little
}

TEST_CASE("mask patterns: practice asks a masked cell of the strided lesson and takes -inf") {
  Traced s("strided-sparse");
  PracticeSession p(s.lesson, *s.backend, {.steps = {"head0.masked"}, .cells = 2});
  bool masked_asked = false;
  for (int guard = 0; !p.finished() && guard < 20; ++guard) {
    const PracticeCell c = p.current().cell;
    const double truth = p.truth().at(c.step).value(c.row, c.col);
    const bool masked = p.truth().mask(c.row, c.col) != 0u;
    masked_asked = masked_asked || masked;
    const CellMark m = p.answer(masked ? "-inf" : fmt::format("{:.4f}", truth));
    CHECK(m.cell.verdict == Verdict::ok);
  }
  CHECK(masked_asked);
}

}  // namespace attn
