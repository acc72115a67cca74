// Looking steps up in a trace by id.
#include "core/trace.hpp"

#include <fmt/format.h>

#include <iterator>

#include "core/error.hpp"

namespace attn {

namespace {

constexpr const char* kHeadStepNames[] = {"Q",      "K",   "V",       "scores",  "scaled",
                                          "masked", "exp", "row_sum", "weights", "context"};

constexpr const char* kLayerStepIds[] = {
    "layer.residual1", "layer.ln1.mean",   "layer.ln1.var",        "layer.ln1.normalised",
    "layer.ln1",       "layer.ffn.hidden", "layer.ffn.activation", "layer.ffn.out",
    "layer.residual2", "layer.ln2.mean",   "layer.ln2.var",        "layer.ln2.normalised",
    "layer.ln2",       "layer.output"};

constexpr const char* kDecodeStepNames[] = {"q",      "K_cache", "V_cache", "scores",
                                            "scaled", "weights", "context"};

}  // namespace

std::string decode_step_id(std::size_t t, std::size_t head, DecodeStep step) {
  return fmt::format("decode.t{}.head{}.{}", t, head, kDecodeStepNames[static_cast<int>(step)]);
}

std::string decode_check_id(std::size_t head) {
  return fmt::format("decode.head{}.check", head);
}

std::string layer_step_id(LayerStep step) {
  return kLayerStepIds[static_cast<int>(step)];
}

bool is_row_parameter(const Step& step) {
  return step.made.op == Op::given && step.rows.size() == 1 && step.rows[0] == step.id;
}

std::string head_step_id(std::size_t head, HeadStep step) {
  return fmt::format("head{}.{}", head, kHeadStepNames[static_cast<int>(step)]);
}

const Step* Trace::find(std::string_view id) const {
  for (const Step& step : steps)
    if (step.id == id) return &step;
  return nullptr;
}

std::string Trace::id_of(std::string_view name) const {
  if (find(name)) return std::string(name);
  for (int k = 0; k < static_cast<int>(std::size(kHeadStepNames)); ++k)
    if (name == kHeadStepNames[k]) {
      const std::string id = head_step_id(0, static_cast<HeadStep>(k));
      if (find(id)) return id;
    }
  return std::string(name);
}

const Step& Trace::at(std::string_view id) const {
  if (const Step* step = find(id)) return *step;
  throw InputError(tr_format("unknown step id '{}' for lesson {}; valid ids: {}", id, lesson_id,
                             fmt::format("{}", fmt::join(ids(), ", "))));
}

std::vector<std::string> Trace::ids() const {
  std::vector<std::string> out;
  for (const Step& step : steps) out.push_back(step.id);
  return out;
}

std::string step_display_name(const Step& step) {
  return step.title.format.empty() ? std::string(tr(step.name)) : step.title.shown();
}

std::vector<std::string> shown_warnings(const Trace& trace) {
  if (trace.warning_messages.size() != trace.warnings.size()) return trace.warnings;
  std::vector<std::string> out;
  for (const Message& m : trace.warning_messages) out.push_back(m.shown());
  return out;
}

}  // namespace attn
