// Which steps a render shows: --step and --head filters.
#include <fmt/format.h>

#include <algorithm>

#include "core/error.hpp"
#include "core/i18n.hpp"
#include "render/render.hpp"

namespace attn {

std::vector<const Step*> select_steps(const Trace& trace, const RenderOptions& options) {
  for (const std::string& id : options.steps) trace.at(id);  // unknown ids are errors
  if (options.head) {
    int heads = 0;
    for (const Step& step : trace.steps) heads = std::max(heads, step.head + 1);
    if (*options.head >= static_cast<std::size_t>(heads))
      throw InputError(tr_format("--head {}: lesson {} has {} head(s), numbered 0 to {}",
                                 *options.head, trace.lesson_id, heads, heads - 1));
  }
  std::vector<const Step*> out;
  for (const Step& step : trace.steps) {
    if (!options.steps.empty() &&
        std::find(options.steps.begin(), options.steps.end(), step.id) == options.steps.end())
      continue;
    if (options.head && step.head >= 0 && static_cast<std::size_t>(step.head) != *options.head)
      continue;
    out.push_back(&step);
  }
  if (out.empty())
    throw InputError(
        tr_format("--step {} and --head {} select no step: those steps belong to "
                  "another head; drop --head or pick a step of head {}",
                  fmt::format("{}", fmt::join(options.steps, " ")), *options.head, *options.head));
  return out;
}

}  // namespace attn
