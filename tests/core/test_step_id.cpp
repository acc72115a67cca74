// Step ids as a type (core/step_id.hpp): every id of every embedded lesson
// printed from its StepId and read back, and the ids people mistype refused.
#include <doctest/doctest.h>

#include <memory>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include "support/host_backend.hpp"
#include "core/lesson_library.hpp"
#include "core/pipeline.hpp"
#include "core/step_id.hpp"

namespace attn {

namespace {

// Every id with the given heads and decoding steps, one per constructor and part.
std::vector<StepId> every_id(std::size_t heads, std::size_t tokens) {
  std::vector<StepId> out;
  for (int k = 0; k <= static_cast<int>(Given::b_2); ++k)
    out.push_back(StepId::given(static_cast<Given>(k)));
  for (int k = 0; k <= static_cast<int>(Positional::memory_PE); ++k)
    out.push_back(StepId::positional(static_cast<Positional>(k)));
  for (int k = 0; k <= static_cast<int>(Projection::output); ++k)
    out.push_back(StepId::projection(static_cast<Projection>(k)));
  for (int k = 0; k <= static_cast<int>(HeadSummary::max); ++k)
    out.push_back(StepId::heads(static_cast<HeadSummary>(k)));
  out.push_back(StepId::concat());
  for (int k = 0; k <= static_cast<int>(LayerStep::output); ++k)
    out.push_back(StepId::layer(static_cast<LayerStep>(k)));
  for (std::size_t h = 0; h < heads; ++h) {
    for (int k = 0; k <= static_cast<int>(HeadStep::context); ++k)
      out.push_back(StepId::head_step(h, static_cast<HeadStep>(k)));
    for (std::size_t t = 0; t < tokens; ++t)
      for (int k = 0; k <= static_cast<int>(DecodeStep::context); ++k)
        out.push_back(StepId::decode(t, h, static_cast<DecodeStep>(k)));
    out.push_back(StepId::decode_check(h));
    for (int k = 0; k <= static_cast<int>(TileStep::acc); ++k)
      out.push_back(StepId::tile(h, 1, 2, static_cast<TileStep>(k)));
    for (int k = 0; k <= static_cast<int>(TiledStep::check); ++k)
      out.push_back(StepId::tiled(h, static_cast<TiledStep>(k)));
    for (int k = 0; k <= static_cast<int>(LinearStep::check); ++k)
      out.push_back(StepId::linear(h, static_cast<LinearStep>(k)));
  }
  return out;
}

}  // namespace

TEST_CASE("every step of every embedded lesson: its id printed from its StepId and read back") {
  attn::testing::HostBackend cpu;
  std::size_t steps = 0;
  for (const Lesson& lesson : all_embedded_lessons()) {
    const Trace trace = run_pipeline(lesson, cpu);
    for (const Step& step : trace.steps) {
      CAPTURE(lesson.id);
      CAPTURE(step.id);
      CHECK(step.step_id.str() == step.id);
      const std::optional<StepId> read = parse_step_id(step.id);
      REQUIRE(read.has_value());
      CHECK(*read == step.step_id);
      CHECK(step.step_id.head() == step.head);
      CHECK(step.step_id.decoding() == step.decoding);
      CHECK(trace.find(step.step_id) == &step);
      ++steps;
    }
  }
  CHECK(steps > 1000);
}

TEST_CASE("every constructor and part: printed once, read back, all different") {
  const std::vector<StepId> ids = every_id(12, 11);
  std::set<std::string> printed;
  for (const StepId& id : ids) {
    CAPTURE(id.str());
    CHECK(parse_step_id(id.str()) == id);
    CHECK(printed.insert(id.str()).second);
  }
  CHECK(StepId::head_step(12, HeadStep::Q).str() == "head12.Q");
  CHECK(StepId::decode(10, 3, DecodeStep::K_cache).str() == "decode.t10.head3.K_cache");
  CHECK(StepId::decode_check(2).str() == "decode.head2.check");
  CHECK(StepId::positional(Positional::X_PE).str() == "X+PE");
  CHECK(StepId::layer(LayerStep::ln2_normalised).str() == "layer.ln2.normalised");
  CHECK(StepId().str() == "X");
  CHECK(head_step_id(1, HeadStep::row_sum) == "head1.row_sum");
  CHECK(layer_step_id(LayerStep::ffn_out) == "layer.ffn.out");
  CHECK(decode_step_id(2, 0, DecodeStep::q) == "decode.t2.head0.q");
  CHECK(decode_check_id(0) == "decode.head0.check");
}

TEST_CASE("the fields: family, head, decoding step and part") {
  const StepId d = StepId::decode(4, 1, DecodeStep::weights);
  CHECK(d.family() == StepFamily::decode);
  CHECK(d.head() == 1);
  CHECK(d.decoding() == 4);
  CHECK(d.decode_part() == DecodeStep::weights);
  const StepId h = *parse_step_id("head3.masked");
  CHECK(h.family() == StepFamily::head);
  CHECK(h.head() == 3);
  CHECK(h.decoding() == -1);
  CHECK(h.head_part() == HeadStep::masked);
  CHECK(StepId::decode_check(5).head() == 5);
  CHECK(StepId::concat().head() == -1);
  // A part read as another family's is a bug, not a guess.
  CHECK_THROWS_AS((void)h.decode_part(), std::logic_error);
  CHECK_THROWS_AS((void)StepId::concat().given_part(), std::logic_error);
}

TEST_CASE("what a given matrix or a LayerNorm step is") {
  CHECK(is_bias(StepId::given(Given::b_O)));
  CHECK(is_bias(StepId::given(Given::b_2)));
  CHECK_FALSE(is_bias(StepId::given(Given::W_Q)));
  CHECK_FALSE(is_bias(StepId::projection(Projection::Q)));
  CHECK(is_weight(StepId::given(Given::W_1)));
  CHECK_FALSE(is_weight(StepId::given(Given::X)));
  CHECK(is_layer_norm_scale(StepId::given(Given::ln2_gamma)));
  CHECK_FALSE(is_layer_norm_scale(StepId::given(Given::ln2_beta)));
  CHECK(layer_norm_number(StepId::given(Given::ln2_beta)) == 2);
  CHECK(layer_norm_number(StepId::layer(LayerStep::ln1_var)) == 1);
  CHECK(layer_norm_number(StepId::layer(LayerStep::ln2)) == 2);
  CHECK_FALSE(layer_norm_number(StepId::layer(LayerStep::ffn_hidden)).has_value());
  CHECK_FALSE(layer_norm_number(StepId::head_step(0, HeadStep::scores)).has_value());
}

TEST_CASE("parse_step_id refuses what is not an id, spelled exactly") {
  for (const char* text : {"",
                           "head",
                           "head0",
                           "head0.",
                           "head.scores",
                           "head0.Scores",
                           "head01.scores",
                           "head-1.scores",
                           "head+1.scores",
                           "head 0.scores",
                           "head0.scores ",
                           " X",
                           "x",
                           "head0x.scores",
                           "head99999999999999999999.scores",
                           "head*.scores",
                           "weights",
                           "scores",
                           "decode",
                           "decode.t0",
                           "decode.t0.head0",
                           "decode.t0.head0.masked",
                           "decode.t0.head0.q.",
                           "decode.t00.head0.q",
                           "decode.head0",
                           "decode.head0.checks",
                           "decode.t0.head0.check",
                           "layer",
                           "layer.ln3.mean",
                           "layer.ln1.",
                           "ln3_gamma",
                           "b_X",
                           "W_3",
                           "heads.min",
                           "heads",
                           "X+pe",
                           "memory+",
                           "concat.",
                           "output.",
                           "Q.",
                           "head0.Q\n"}) {
    CAPTURE(text);
    CHECK_FALSE(parse_step_id(text).has_value());
  }
  CHECK(parse_step_id("head0.Q") == StepId::head_step(0, HeadStep::Q));
  CHECK(parse_step_id("Q") == StepId::projection(Projection::Q));
}

TEST_CASE("a head step by its short name, and every head's step as a claim writes it") {
  CHECK(parse_head_step("row_sum") == HeadStep::row_sum);
  CHECK(parse_head_step("Q") == HeadStep::Q);
  CHECK_FALSE(parse_head_step("head0.row_sum").has_value());
  CHECK_FALSE(parse_head_step("rowsum").has_value());
  CHECK(parse_every_head_step("head*.scores") == HeadStep::scores);
  CHECK_FALSE(parse_every_head_step("head*.nonsense").has_value());
  CHECK_FALSE(parse_every_head_step("head0.scores").has_value());
  CHECK_FALSE(parse_every_head_step("head*scores").has_value());
}

TEST_CASE("warnings carry their step: the one their English text is about") {
  attn::testing::HostBackend cpu;
  std::size_t with_step = 0, without = 0;
  for (const Lesson& lesson : all_embedded_lessons()) {
    const Trace trace = run_pipeline(lesson, cpu);
    for (const Warning& w : trace.warnings) {
      const std::string text = w.text.in(Language::en);
      CAPTURE(text);
      if (w.step) {
        CHECK(trace.find(*w.step) != nullptr);
        CHECK(text.starts_with(w.step->str() + " "));
        ++with_step;
      } else {
        for (const Step& step : trace.steps) CHECK_FALSE(text.starts_with(step.id + " "));
        ++without;
      }
    }
  }
  CHECK(with_step > 0);
  CHECK(without > 0);
}

}  // namespace attn
