// Golden files: write, read and compare (17 significant digits; a tolerance
// absolute up to 1, relative to the golden value above it).
#include "core/golden.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <filesystem>

#include "core/atomic_file.hpp"
#include "core/error.hpp"
#include "core/i18n.hpp"
#include "core/number_text.hpp"
#include "core/toml_read.hpp"

namespace attn {

namespace {

// 17 significant digits as a TOML float: "0.5", "2.0", "-inf", "nan".
std::string toml_float(double v) {
  std::string s = format_exact(v);
  if (std::isfinite(v) && s.find_first_of(".eE") == std::string::npos) s += ".0";
  return s;
}

// Any TOML number, including inf and nan, as a double.
double golden_number(const TomlReader& toml, const toml::node& node, std::string_view key) {
  if (node.is_floating_point()) return node.as_floating_point()->get();
  if (node.is_integer()) return static_cast<double>(node.as_integer()->get());
  toml.fail(&node, key,
            tr("expected a number (nan, inf and -inf allowed); regenerate the file with "
               "`attn-trace golden`"));
}

arma::mat golden_matrix(const TomlReader& toml, const toml::node& node, std::string_view key,
                        std::size_t rows, std::size_t cols) {
  const toml::array* data = node.as_array();
  if (!data || data->size() != rows)
    toml.fail(&node, key,
              tr_format("expected {} rows (shape {}); regenerate the file with "
                        "`attn-trace golden`",
                        rows, shape_str(rows, cols)));
  for (std::size_t r = 0; r < rows; ++r) {  // every row checked before the matrix is made
    const toml::array* row = data->get(r)->as_array();
    if (!row || row->size() != cols)
      toml.fail(
          data->get(r), key,
          tr_format("row {} must hold {} numbers (shape {})", r, cols, shape_str(rows, cols)));
  }
  arma::mat M(rows, cols);
  for (std::size_t r = 0; r < rows; ++r)
    for (std::size_t c = 0; c < cols; ++c)
      M(r, c) = golden_number(toml, *data->get(r)->as_array()->get(c), key);
  return M;
}

}  // namespace

bool kept_in_golden(const Step& step) {
  return step.made.op != Op::given || step.value.n_elem <= kGoldenGivenCells;
}

std::string golden_toml(const Trace& trace) {
  std::string out = fmt::format(
      "# Golden values of lesson {}: every step of its trace, 17 significant digits.\n"
      "# Written by `attn-trace golden`; regenerate with the update-golden target, review the "
      "diff,\n# and never edit by hand. tests/crosscheck.py proves them with numpy.\n\n"
      "[golden]\nlesson = \"{}\"\n",
      trace.lesson_id, trace.lesson_id);
  for (const Step& step : trace.steps) {
    if (!kept_in_golden(step)) {
      out += fmt::format("\n# {} ({}) is the lesson's own matrix, not repeated here.\n", step.id,
                         shape_str(step.value.n_rows, step.value.n_cols));
      continue;
    }
    out += fmt::format("\n[[step]]\nid = \"{}\"\nshape = [{}, {}]\ndata = [\n", step.id,
                       step.value.n_rows, step.value.n_cols);
    for (std::size_t r = 0; r < step.value.n_rows; ++r) {
      out += "  [";
      for (std::size_t c = 0; c < step.value.n_cols; ++c)
        out += fmt::format("{}{}", c ? ", " : "", toml_float(step.value(r, c)));
      out += "],\n";
    }
    out += "]\n";
  }
  return out;
}

Golden parse_golden(std::string_view text, const std::string& origin) {
  const TomlReader toml(text, origin);
  toml.require_known_keys(toml.root(), "", {"golden", "step"});
  Golden golden;
  const toml::table* header = toml.table(toml.root(), "golden");
  if (!header)
    throw InputError(
        tr_format("{}: missing [golden] lesson = \"id\"; this is not a golden file "
                  "written by `attn-trace golden`",
                  origin));
  toml.require_known_keys(*header, "golden", {"lesson"});
  if (const toml::node* id = header->get("lesson"))
    golden.lesson_id = toml.string(*id, "golden.lesson");
  const toml::node* steps = toml.root().get("step");
  if (!steps) return golden;
  if (!steps->is_array_of_tables())
    toml.fail(steps, "step", tr("write each step as a [[step]] table"));
  std::size_t i = 0;
  for (const toml::node& item : *steps->as_array()) {
    const toml::table& t = *item.as_table();
    const std::string where = fmt::format("step[{}]", i++);
    toml.require_known_keys(t, where, {"id", "shape", "data"});
    const toml::node* id = t.get("id");
    const toml::node* shape = t.get("shape");
    const toml::node* data = t.get("data");
    if (!id || !shape || !data)
      toml.fail(&item, where,
                tr("each [[step]] needs id, shape = [rows, cols] and data = [[...]]"));
    const auto [rows, cols] = toml.cell(*shape, where + ".shape");
    GoldenStep step;
    step.id = toml.string(*id, where + ".id");
    step.value = golden_matrix(toml, *data, where + ".data", rows, cols);
    golden.steps.push_back(std::move(step));
  }
  return golden;
}

std::optional<Golden> read_golden_file(const std::string& path) {
  std::error_code error;
  if (!std::filesystem::exists(path, error)) return std::nullopt;
  return parse_golden(read_file(path), path);
}

bool same_number(double golden, double computed, double tolerance) {
  if (std::isnan(golden) || std::isnan(computed)) return std::isnan(golden) && std::isnan(computed);
  if (std::isinf(golden) || std::isinf(computed)) return golden == computed;
  return std::abs(golden - computed) <= tolerance_at(golden, tolerance);
}

double tolerance_at(double golden, double tolerance) {
  // Above 1 an absolute 1e-12 is finer than one ulp (e^10.49 = 35789 has ulps
  // of 7e-12): another BLAS kernel's summation order could never meet it.
  return tolerance * std::max(1.0, std::abs(golden));
}

std::vector<GoldenMismatch> compare_with_golden(const Golden& golden, const Trace& trace,
                                                double tolerance) {
  std::vector<GoldenMismatch> out;
  if (!golden.lesson_id.empty() && golden.lesson_id != trace.lesson_id)
    out.push_back({"golden.lesson", std::nullopt, 0, 0,
                   Message(N_("the golden file is for lesson '{}', not '{}'; give the right "
                              "--golden file"),
                           {golden.lesson_id, trace.lesson_id})});
  for (const Step& step : trace.steps) {
    const GoldenStep* kept = nullptr;
    for (const GoldenStep& g : golden.steps)
      if (g.id == step.id) kept = &g;
    if (!kept && !kept_in_golden(step)) continue;
    if (!kept) {
      out.push_back({step.id, std::nullopt, 0, 0,
                     N_("the step is not in the golden file; regenerate it with `attn-trace "
                        "golden`")});
      continue;
    }
    const arma::mat& G = kept->value;
    const arma::mat& C = step.value;
    if (G.n_rows != C.n_rows || G.n_cols != C.n_cols) {
      out.push_back({step.id, std::nullopt, 0, 0,
                     Message(N_("shape {} in the golden file but {} computed"),
                             {shape_str(G.n_rows, G.n_cols), shape_str(C.n_rows, C.n_cols)})});
      continue;
    }
    for (std::size_t r = 0; r < C.n_rows; ++r) {
      std::size_t c = 0;
      while (c < C.n_cols && same_number(G(r, c), C(r, c), tolerance)) ++c;
      if (c == C.n_cols) continue;
      const double diff = std::abs(G(r, c) - C(r, c));
      out.push_back({step.id, std::make_pair(r, c), G(r, c), C(r, c),
                     std::isfinite(diff)
                         ? Message(N_("differs by {} (tolerance {})"),
                                   {fmt::format("{:.3g}", diff),
                                    fmt::format("{:.3g}", tolerance_at(G(r, c), tolerance))})
                         : Message(N_("golden {} but computed {}"),
                                   {format_exact(G(r, c)), format_exact(C(r, c))})});
      break;
    }
  }
  for (const GoldenStep& g : golden.steps)
    if (!trace.find(g.id))
      out.push_back({g.id, std::nullopt, 0, 0,
                     N_("the golden file has this step but the trace does not; regenerate it "
                        "with `attn-trace golden`")});
  return out;
}

}  // namespace attn
