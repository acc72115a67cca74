// Shapes, FLOPs and bytes of the steps of a trace, read from its graph.
#include "core/costs.hpp"

#include <fmt/format.h>

namespace attn {

namespace {

const std::vector<std::string>& query_labels(const Trace& trace) {
  return trace.at("X").rows;
}
const std::vector<std::string>& key_labels(const Trace& trace) {
  const Step* memory = trace.find("memory");
  return memory ? memory->rows : query_labels(trace);
}

// One dimension at `sizes`: tokens of the queries or of the keys, or fixed.
std::size_t dimension(const Trace& trace, const std::vector<std::string>& labels,
                      std::size_t actual, const CostSizes& sizes) {
  if (sizes.queries && labels == query_labels(trace)) return *sizes.queries;
  if (sizes.keys && labels == key_labels(trace)) return *sizes.keys;
  return actual;
}

// The sizes a formula is written with: the output (n×m) and the inner width k.
struct FlopTerms {
  std::uint64_t n = 0, k = 0, m = 0;
};

FlopTerms terms(const Trace& trace, const Step& step, const CostSizes& sizes) {
  const auto [n, m] = step_shape(trace, step, sizes);
  std::uint64_t k = 0;
  if (!step.made.inputs.empty()) k = step_shape(trace, trace.input(step, 0), sizes).second;
  return {n, k, m};
}

}  // namespace

std::pair<std::size_t, std::size_t> step_shape(const Trace& trace, const Step& step,
                                               const CostSizes& sizes) {
  return {dimension(trace, step.rows, step.value.n_rows, sizes),
          dimension(trace, step.cols, step.value.n_cols, sizes)};
}

std::uint64_t step_flops(const Trace& trace, const Step& step, const CostSizes& sizes) {
  const FlopTerms t = terms(trace, step, sizes);
  switch (step.made.op) {
    case Op::matmul:  // (n×k)·(k×m), + a bias row
      return 2 * t.n * t.k * t.m + (step.made.inputs.size() > 2 ? t.n * t.m : 0);
    case Op::matmul_t:  // (n×k)·(m×k)ᵀ
      return 2 * t.n * t.k * t.m;
    case Op::softmax:
      // exp / row sum: one division per cell, where the exponentials and row
      // sums are steps of their own; a softmax alone (a decoding step) also
      // counts its exp per cell and its m−1 additions per row.
      if (step.made.inputs.size() == 1) return 2 * t.n * t.m + t.n * (t.m - 1);
      return t.n * t.m;
    case Op::add_positions:
    case Op::divide:
    case Op::exp:
      return t.n * t.m;
    case Op::row_sum:  // m−1 additions per row, m the columns summed
      return t.k > 0 ? t.n * (t.k - 1) : 0;
    case Op::mean:  // h−1 additions and one division per cell
      return step.made.inputs.size() * t.n * t.m;
    case Op::add:   // a residual sum
    case Op::gelu:  // x·Φ(x), counted as one operation per cell
      return t.n * t.m;
    case Op::row_mean:  // k−1 additions and one division per row
      return t.n * t.k;
    case Op::row_var:  // k subtractions, k squares, k−1 additions, one division per row
      return 3 * t.n * t.k;
    case Op::max_abs_diff:  // a subtraction and a comparison per cell of the full context
      return 2 * t.n * t.k;
    case Op::normalise:    // (x − mean) / √(var + ε): a subtraction and a division per cell
    case Op::scale_shift:  // γ ⊙ x + β
      return 2 * t.n * t.m;
    case Op::relu:      // a comparison
    case Op::identity:  // a name for the layer's result
    case Op::given:
    case Op::positional:  // a constant table, computed once for every input
    case Op::slice:
    case Op::rows:  // a query or a cache is read, not computed
    case Op::mask:  // a choice, not arithmetic
    case Op::max:   // comparisons
    case Op::concat:
      return 0;
  }
  return 0;
}

std::string flops_formula(const Trace& trace, const Step& step, const CostSizes& sizes) {
  const FlopTerms t = terms(trace, step, sizes);
  switch (step.made.op) {
    case Op::matmul:
      if (step.made.inputs.size() > 2)
        return fmt::format("2·n·k·m + n·m = 2·{}·{}·{} + {}·{}", t.n, t.k, t.m, t.n, t.m);
      return fmt::format("2·n·k·m = 2·{}·{}·{}", t.n, t.k, t.m);
    case Op::matmul_t:
      return fmt::format("2·n·d_k·m = 2·{}·{}·{}", t.n, t.k, t.m);
    case Op::softmax:
      if (step.made.inputs.size() == 1)
        return fmt::format("exp, sum and divide: 2·n·m + n·(m−1) = 2·{}·{} + {}·{}", t.n, t.m, t.n,
                           t.m - 1);
      return fmt::format("one per cell: {}·{}", t.n, t.m);
    case Op::add_positions:
    case Op::divide:
    case Op::exp:
      return fmt::format("one per cell: {}·{}", t.n, t.m);
    case Op::row_sum:
      return fmt::format("n·(m−1) = {}·{}", t.n, t.k > 0 ? t.k - 1 : 0);
    case Op::mean:
      return fmt::format("h·n·m = {}·{}·{}", step.made.inputs.size(), t.n, t.m);
    case Op::add:
    case Op::gelu:
      return fmt::format("one per cell: {}·{}", t.n, t.m);
    case Op::row_mean:
      return fmt::format("n·d = {}·{}", t.n, t.k);
    case Op::row_var:
      return fmt::format("3·n·d = 3·{}·{}", t.n, t.k);
    case Op::max_abs_diff:
      return fmt::format("2·n·d_v = 2·{}·{}", t.n, t.k);
    case Op::normalise:
    case Op::scale_shift:
      return fmt::format("two per cell: 2·{}·{}", t.n, t.m);
    case Op::relu:
    case Op::identity:
    case Op::given:
    case Op::positional:
    case Op::slice:
    case Op::rows:
    case Op::mask:
    case Op::max:
    case Op::concat:
      return "no arithmetic";
  }
  return "no arithmetic";
}

std::uint64_t step_bytes(const Trace& trace, const Step& step, Dtype dtype, std::uint64_t batch,
                         const CostSizes& sizes) {
  const auto [rows, cols] = step_shape(trace, step, sizes);
  return static_cast<std::uint64_t>(rows) * cols * batch * dtype_bytes(dtype);
}

bool is_decode_step(const Step& step) {
  switch (step.kind) {
    case StepKind::decode_query:
    case StepKind::decode_cache:
    case StepKind::decode_scores:
    case StepKind::decode_scaled:
    case StepKind::decode_weights:
    case StepKind::decode_context:
    case StepKind::decode_check:
      return true;
    default:
      return false;
  }
}

std::vector<std::uint64_t> decoding_flops(const Trace& trace, const CostSizes& sizes) {
  std::vector<std::uint64_t> out;
  for (std::size_t t = 0; trace.find(decode_step_id(t, 0, DecodeStep::q)); ++t) {
    std::uint64_t total = 0;
    for (std::size_t h = 0; trace.find(decode_step_id(t, h, DecodeStep::q)); ++h)
      for (int part = 0; part <= static_cast<int>(DecodeStep::context); ++part)
        total +=
            step_flops(trace, trace.at(decode_step_id(t, h, static_cast<DecodeStep>(part))), sizes);
    out.push_back(total);
  }
  return out;
}

bool counts_in_pass(const Trace& trace, const Step& step) {
  if (step.kind == StepKind::head_summary || is_decode_step(step)) return false;
  if (step.made.op != Op::given) return true;
  return step.rows == query_labels(trace) || step.rows == key_labels(trace);  // X, memory
}

std::uint64_t pass_flops(const Trace& trace, const CostSizes& sizes) {
  std::uint64_t total = 0;
  for (const Step& step : trace.steps)
    if (counts_in_pass(trace, step)) total += step_flops(trace, step, sizes);
  return total;
}

std::uint64_t pass_bytes(const Trace& trace, Dtype dtype, std::uint64_t batch,
                         const CostSizes& sizes) {
  std::uint64_t total = 0;
  for (const Step& step : trace.steps)
    if (counts_in_pass(trace, step)) total += step_bytes(trace, step, dtype, batch, sizes);
  return total;
}

ForwardFlops forward_flops(std::uint64_t n, std::uint64_t d_model, std::uint64_t heads) {
  const std::uint64_t d = d_model, d_k = d_model / heads;
  ForwardFlops f;
  f.qkv = 3 * (2 * n * d * d);
  f.scores = heads * (2 * n * d_k * n);
  f.softmax = heads * (3 * n * n + (n > 0 ? n * (n - 1) : 0));
  f.context = heads * (2 * n * n * d_k);
  f.output = 2 * n * d * d;
  return f;
}

}  // namespace attn
