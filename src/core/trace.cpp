// Looking steps up in a trace by id.
#include "core/trace.hpp"

#include <fmt/format.h>

#include "core/error.hpp"

namespace attn {

bool is_row_parameter(const Step& step) {
  return step.made.op == Op::given && step.rows.size() == 1 && step.rows[0] == step.id;
}

const Step* Trace::find(std::string_view id) const {
  for (const Step& step : steps)
    if (step.id == id) return &step;
  return nullptr;
}

const Step* Trace::find(const StepId& id) const {
  for (const Step& step : steps)
    if (step.step_id == id) return &step;
  return nullptr;
}

std::string Trace::id_of(std::string_view name) const {
  if (const std::optional<StepId> id = parse_step_id(name); id && find(*id)) return id->str();
  if (const std::optional<HeadStep> part = parse_head_step(name))
    if (const Step* step = find(StepId::head_step(0, *part))) return step->id;
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

bool operator==(const Warning& a, const Warning& b) {
  return a.step == b.step && a.text.format == b.text.format && a.text.args == b.text.args;
}

std::vector<std::string> shown_warnings(const Trace& trace) {
  std::vector<std::string> out;
  for (const Warning& w : trace.warnings) out.push_back(w.text.shown());
  return out;
}

std::vector<std::string> english_warnings(const Trace& trace) {
  std::vector<std::string> out;
  for (const Warning& w : trace.warnings) out.push_back(w.text.in(Language::en));
  return out;
}

}  // namespace attn
