// JSON renderer: the schema of docs/json.md, numbers with 17 significant
// digits, non-finite values as the strings "-inf", "inf", "nan".
#include <fmt/format.h>

#include <cmath>

#include "render/formula.hpp"
#include "render/json_writer.hpp"
#include "render/numbers.hpp"
#include "render/render.hpp"

namespace attn {

std::string render_json(const Lesson& lesson, const Trace& trace, const RenderOptions& options) {
  const std::vector<const Step*> steps = select_steps(trace, options);
  std::string out = "{";
  out += fmt::format("\"lesson\": {}, \"title\": {}, \"backend\": {},", json_string(lesson.id),
                     json_string(lesson.title), json_string(trace.backend));
  // f64 traces say nothing, as before there was a choice: "dtype" only when narrower.
  if (trace.dtype != Dtype::f64)
    out += fmt::format(" \"dtype\": {},", json_string(std::string(dtype_name(trace.dtype))));
  // Steps computed on the host although the backend is another: only when there are some.
  if (!trace.host_steps.empty())
    out += fmt::format(" \"host_steps\": {},", json_strings(trace.host_steps));
  out += "\n \"steps\": [";
  for (std::size_t k = 0; k < steps.size(); ++k) {
    const Step& s = *steps[k];
    out += fmt::format(
        "{}\n  {{\"id\": {}, \"name\": {}, \"formula\": {}, \"head\": {}, \"shape\": [{}, {}],\n"
        "   \"rows\": {},\n   \"cols\": {},\n   \"data\": {}}}",
        k ? "," : "", json_string(s.id), json_string(s.name),
        json_string(step_formula(lesson, trace, s).text),
        s.head < 0 ? std::string("null") : std::to_string(s.head), s.value.n_rows, s.value.n_cols,
        json_strings(s.rows), json_strings(s.cols), json_matrix(s.value));
  }
  out += "\n ],";
  if (!options.expansions.empty()) {
    out += "\n \"expansions\": [";
    for (std::size_t k = 0; k < options.expansions.size(); ++k)
      out += fmt::format("{}\n  {}", k ? "," : "",
                         expansion_json(options.expansions[k], options.precision));
    out += "\n ],";
  }
  out += fmt::format("\n \"warnings\": {}}}\n", json_strings(english_warnings(trace)));
  return out;
}

}  // namespace attn
