// Looking steps up in a trace by id.
#include "core/trace.hpp"

#include <fmt/format.h>

#include "core/error.hpp"

namespace attn {

std::string head_step_id(std::size_t head, HeadStep step) {
  static constexpr const char* names[] = {"Q",      "K",   "V",       "scores",  "scaled",
                                          "masked", "exp", "row_sum", "weights", "context"};
  return fmt::format("head{}.{}", head, names[static_cast<int>(step)]);
}

const Step* Trace::find(std::string_view id) const {
  for (const Step& step : steps)
    if (step.id == id) return &step;
  return nullptr;
}

const Step& Trace::at(std::string_view id) const {
  if (const Step* step = find(id)) return *step;
  throw InputError(fmt::format("unknown step id '{}' for lesson {}; valid ids: {}", id, lesson_id,
                               fmt::join(ids(), ", ")));
}

std::vector<std::string> Trace::ids() const {
  std::vector<std::string> out;
  for (const Step& step : steps) out.push_back(step.id);
  return out;
}

}  // namespace attn
