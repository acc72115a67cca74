// Shapes, FLOPs and bytes of the steps of a trace, read from its graph.
#include "core/costs.hpp"

#include <fmt/format.h>

#include "core/ops/op.hpp"

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

// The sizes a FLOP count is written with: the output (n×m) and the inner width k.
FlopSizes terms(const Trace& trace, const Step& step, const CostSizes& sizes) {
  const auto [n, m] = step_shape(trace, step, sizes);
  FlopSizes out{n, 0, m};
  if (!step.made.inputs.empty()) {
    const auto [rows, cols] = step_shape(trace, trace.input(step, 0), sizes);
    out.k = cols;
    out.rows_in = rows;
  }
  if (step.made.inputs.size() > 1)
    out.rows_in2 = step_shape(trace, trace.input(step, 1), sizes).first;
  return out;
}

}  // namespace

std::pair<std::size_t, std::size_t> step_shape(const Trace& trace, const Step& step,
                                               const CostSizes& sizes) {
  return {dimension(trace, step.rows, step.value.n_rows, sizes),
          dimension(trace, step.cols, step.value.n_cols, sizes)};
}

std::uint64_t step_flops(const Trace& trace, const Step& step, const CostSizes& sizes) {
  return op_facets(step.made.op).flops(step, terms(trace, step, sizes)).flops;
}

std::string flops_formula(const Trace& trace, const Step& step, const CostSizes& sizes) {
  return op_facets(step.made.op).flops(step, terms(trace, step, sizes)).formula;
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

bool is_second_computation(const Trace& trace, const Step& step) {
  const StepId& id = step.step_id;
  if (id.family() == StepFamily::tile || id.family() == StepFamily::tiled) return true;
  if (id.family() == StepFamily::linear)
    return id.linear_part() >= LinearStep::similarity;  // the n × m order, for comparison
  // Linear attention's heads record the softmax of the same Q and K beside it.
  const bool linear = trace.find(StepId::linear(0, LinearStep::phi_q));
  return linear && id.family() == StepFamily::head && id.head_part() >= HeadStep::scores &&
         id.head_part() <= HeadStep::weights;
}

bool is_backward_step(const Step& step) {
  const StepFamily family = step.step_id.family();
  return family == StepFamily::gradient || family == StepFamily::backward ||
         step.step_id == StepId::given(Given::target);
}

std::uint64_t backward_pass_flops(const Trace& trace) {
  std::uint64_t total = 0;
  for (const Step& step : trace.steps)
    if (is_backward_step(step)) total += step_flops(trace, step);
  return total;
}

bool counts_in_pass(const Trace& trace, const Step& step) {
  if (step.kind == StepKind::head_summary || is_decode_step(step)) return false;
  if (is_backward_step(step)) return false;
  if (is_second_computation(trace, step)) return false;
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
