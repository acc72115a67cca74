// The attention pipeline: numbered passes, each a named function, each
// recorded in the trace under its stable step id.
#include "core/pipeline.hpp"

#include <fmt/format.h>

#include <cmath>

#include "core/error.hpp"

namespace attn {

namespace {

std::string subscript(std::size_t n) {
  static const char* digits[] = {"₀", "₁", "₂", "₃", "₄", "₅", "₆", "₇", "₈", "₉"};
  if (n < 10) return digits[n];
  return subscript(n / 10) + digits[n % 10];
}

std::string dims(const arma::mat& M) {
  return shape_str(M.n_rows, M.n_cols);
}

// Records steps with their labels; keeps run_pipeline readable.
class TraceBuilder {
 public:
  TraceBuilder(Trace& trace, const Overrides& overrides) : trace_(trace), overrides_(overrides) {}

  // `computed`, with the cells the caller overrides for step `id` replaced.
  arma::mat take(const std::string& id, arma::mat computed) const {
    const auto it = overrides_.find(id);
    if (it == overrides_.end()) return computed;
    const StepOverride& o = it->second;
    if (o.value.n_rows != computed.n_rows || o.value.n_cols != computed.n_cols ||
        o.given.n_rows != computed.n_rows || o.given.n_cols != computed.n_cols)
      throw InputError(fmt::format("values given for step {} are {}, but the step is {}", id,
                                   dims(o.value), dims(computed)));
    const arma::uvec cells = arma::find(o.given);
    computed.elem(cells) = o.value.elem(cells);
    return computed;
  }

  bool overrides(const std::string& id) const { return overrides_.contains(id); }

  Step& add(std::string id, std::string name, StepKind kind, int head, arma::mat value,
            std::vector<std::string> rows, std::vector<std::string> cols) {
    Step step;
    step.id = std::move(id);
    step.name = std::move(name);
    step.kind = kind;
    step.head = head;
    step.value = std::move(value);
    step.rows = std::move(rows);
    step.cols = cols.empty() ? feature_labels(step.value.n_cols) : std::move(cols);
    trace_.steps.push_back(std::move(step));
    return trace_.steps.back();
  }

 private:
  Trace& trace_;
  const Overrides& overrides_;
};

void describe(Step& step, std::string formula, std::string latex, std::string shapes) {
  step.formula = std::move(formula);
  step.latex = std::move(latex);
  step.shapes = std::move(shapes);
}

// "causal: 3 cells, padding: 2 cells" — which mask sources masked how many cells.
std::string describe_mask_sources(const arma::umat& mask) {
  static const std::pair<unsigned, const char*> sources[] = {
      {mask_causal, "causal: key after the query"},
      {mask_padding, "padding: the key is padding"},
      {mask_keep, "keep: 0 in the keep matrix"}};
  std::string out;
  for (const auto& [bit, what] : sources) {
    arma::uword cells = 0;
    for (const arma::uword reasons : mask) cells += (reasons & bit) != 0u;
    if (cells)
      out += fmt::format("{}{}, {} cell{}", out.empty() ? "" : "; ", what, cells,
                         cells == 1 ? "" : "s");
  }
  return out;
}

// A weight matrix (and its bias, when there is one) as the lesson gives it,
// so that every product can be checked by hand.
void record_weights(TraceBuilder& record, const std::string& w_name, const arma::mat& W,
                    const std::optional<arma::rowvec>& b) {
  describe(record.add(w_name, fmt::format("Weights {}", w_name), StepKind::input, -1, W,
                      feature_labels(W.n_rows), {}),
           fmt::format("{}: given in the lesson (rows: input features, columns: output features)",
                       w_name),
           w_name, dims(W));
  if (!b) return;
  const std::string b_name = "b_" + w_name.substr(2);
  describe(record.add(b_name, fmt::format("Bias {}", b_name), StepKind::input, -1, arma::mat(*b),
                      {b_name}, {}),
           fmt::format("{}: given in the lesson, added to every row", b_name), b_name,
           shape_str(1, b->n_elem));
}

}  // namespace

std::vector<std::string> feature_labels(std::size_t count) {
  std::vector<std::string> out;
  for (std::size_t i = 0; i < count; ++i) out.push_back(fmt::format("d{}", i));
  return out;
}

// -> PE:(n,d)
arma::mat positional_encoding(std::size_t n, std::size_t d) {
  arma::mat PE(n, d);
  for (std::size_t pos = 0; pos < n; ++pos)
    for (std::size_t j = 0; j < d; ++j) {
      const double two_i = static_cast<double>(j - j % 2);
      const double angle =
          static_cast<double>(pos) / std::pow(10000.0, two_i / static_cast<double>(d));
      PE(pos, j) = (j % 2 == 0) ? std::sin(angle) : std::cos(angle);
    }
  return PE;
}

// X:(n,d) W:(d,p) b:(p) -> (n,p)
arma::mat project(Backend& backend, const arma::mat& X, const arma::mat& W,
                  const std::optional<arma::rowvec>& b) {
  arma::mat P = backend.matmul(X, W);
  if (b) P.each_row() += *b;
  return P;
}

// M:(n,h·w) -> (n,w)
arma::mat split_head(const arma::mat& M, std::size_t head, std::size_t width) {
  return M.cols(head * width, (head + 1) * width - 1);
}

// Q:(n,d_k) K:(m,d_k) -> (n,m)
arma::mat attention_scores(Backend& backend, const arma::mat& Q, const arma::mat& K) {
  return backend.matmul_transposed(Q, K);
}

// (n,m) -> (n,m)
arma::mat scale_scores(const arma::mat& scores, double s) {
  return scores / s;
}

// -> (n,m)
arma::umat mask_reasons(const Lesson& lesson) {
  const std::size_t n = lesson.queries(), m = lesson.keys();
  arma::umat mask(n, m, arma::fill::zeros);
  for (std::size_t i = 0; i < n; ++i)
    for (std::size_t j = 0; j < m; ++j) {
      if (lesson.causal && j > i) mask(i, j) |= mask_causal;
      if (!lesson.key_padding.empty() && lesson.key_padding[j]) mask(i, j) |= mask_padding;
      if (lesson.keep && (*lesson.keep)(i, j) == 0) mask(i, j) |= mask_keep;
    }
  return mask;
}

// scaled:(n,m) mask:(n,m) -> (n,m)
arma::mat apply_mask(const arma::mat& scaled, const arma::umat& mask, double fill) {
  arma::mat masked = scaled;
  masked.elem(arma::find(mask)).fill(fill);
  return masked;
}

// masked:(n,m) -> (n,m)
arma::mat attention_weights(Backend& backend, const arma::mat& masked, MaskedRowPolicy policy,
                            const std::vector<std::string>& row_tokens, int head,
                            std::vector<std::string>& warnings) {
  arma::mat weights = backend.row_softmax(masked);
  for (std::size_t i = 0; i < masked.n_rows; ++i) {
    if (masked.row(i).max() != -arma::datum::inf) continue;  // at least one key is open
    const std::string where = fmt::format("head{}.weights row {} ({})", head, i, row_tokens.at(i));
    switch (policy) {
      case MaskedRowPolicy::nan:
        weights.row(i).fill(arma::datum::nan);
        warnings.push_back(where +
                           ": every key is masked, softmax is 0/0 = NaN "
                           "(masked_row = \"nan\", as PyTorch's plain softmax)");
        break;
      case MaskedRowPolicy::zero:
        weights.row(i).zeros();
        warnings.push_back(where +
                           ": every key is masked; the row is set to 0 "
                           "(masked_row = \"zero\")");
        break;
      case MaskedRowPolicy::uniform:
        weights.row(i).fill(1.0 / static_cast<double>(masked.n_cols));
        warnings.push_back(where +
                           ": every key is masked; the row is set to 1/m "
                           "(masked_row = \"uniform\")");
        break;
    }
  }
  return weights;
}

// weights:(n,m) V:(m,d_v) -> (n,d_v)
arma::mat weighted_sum(Backend& backend, const arma::mat& weights, const arma::mat& V) {
  return backend.matmul(weights, V);
}

// h × (n,m) -> (n,m)
arma::mat mean_over_heads(const std::vector<arma::mat>& weights) {
  arma::mat sum = weights.at(0);
  for (std::size_t h = 1; h < weights.size(); ++h) sum += weights[h];
  return sum / static_cast<double>(weights.size());
}

// h × (n,m) -> (n,m)
arma::mat max_over_heads(const std::vector<arma::mat>& weights) {
  arma::mat out = weights.at(0);
  for (std::size_t h = 1; h < weights.size(); ++h) out = arma::max(out, weights[h]);
  return out;
}

// h × (n,d_v) -> (n,h·d_v)
arma::mat concat_heads(const std::vector<arma::mat>& contexts) {
  arma::mat out;
  for (const arma::mat& c : contexts) out = arma::join_rows(out, c);
  return out;
}

Trace run_pipeline(const Lesson& lesson, Backend& backend, const Overrides& overrides) {
  Trace trace;
  trace.lesson_id = lesson.id;
  trace.backend = std::string(backend.name());
  trace.scale = lesson.scale_divisor();
  TraceBuilder record(trace, overrides);
  const std::vector<std::string>& qtok = lesson.tokens;
  const std::vector<std::string>& ktok = lesson.key_tokens();
  const bool pe = lesson.positional_encoding == PositionalEncoding::sinusoidal;

  // 1. Inputs, with positions added when the lesson asks for them.
  describe(record.add("X", "Input embeddings", StepKind::input, -1, lesson.X, qtok, {}),
           "X: one row per token", "X", dims(lesson.X));
  arma::mat X = lesson.X;
  if (pe) {
    const arma::mat PE = record.take("PE", positional_encoding(X.n_rows, X.n_cols));
    describe(record.add("PE", "Positional encoding", StepKind::positional, -1, PE, qtok, {}),
             "PE(pos,2i) = sin(pos/10000^(2i/d)), PE(pos,2i+1) = cos(pos/10000^(2i/d))",
             R"(PE_{pos,2i} = \sin(pos/10000^{2i/d}),\ PE_{pos,2i+1} = \cos(pos/10000^{2i/d}))",
             dims(PE));
    X = record.take("X+PE", X + PE);
    describe(record.add("X+PE", "Input plus positions", StepKind::positional, -1, X, qtok, {}),
             "X + PE", "X + PE", fmt::format("{} + {} → {}", dims(X), dims(PE), dims(X)));
  }
  arma::mat source = X;  // what keys and values are computed from
  std::string source_name = pe ? "(X+PE)" : "X";
  if (lesson.memory) {
    source = *lesson.memory;
    describe(record.add("memory", "Memory (encoder output)", StepKind::input, -1, source, ktok, {}),
             "memory: one row per source token; keys and values come from it", "M", dims(source));
    source_name = "M";
    if (pe) {
      source = record.take("memory+PE", source + positional_encoding(source.n_rows, source.n_cols));
      describe(record.add("memory+PE", "Memory plus positions", StepKind::positional, -1, source,
                          ktok, {}),
               "M + PE", "M + PE", dims(source));
      source_name = "(M+PE)";
    }
  }
  const std::string x_name = pe ? "(X+PE)" : "X";

  // 2. Projections: Q from the queries' side, K and V from the source.
  auto projection = [&](const char* id, const char* name, const arma::mat& in,
                        const std::string& in_name, const arma::mat& W, const char* w_name,
                        const std::optional<arma::rowvec>& b,
                        const std::vector<std::string>& rows) {
    record_weights(record, w_name, W, b);
    const arma::mat P = record.take(id, project(backend, in, W, b));
    const std::string bias = b ? fmt::format(" + b_{}", id) : "";
    describe(record.add(id, name, StepKind::projection, -1, P, rows, {}),
             fmt::format("{} = {}·{}{}", id, in_name, w_name, bias),
             fmt::format("{} = {} W_{}{}", id, in_name, id, b ? fmt::format(" + b_{}", id) : ""),
             fmt::format("({})·({}) → {}", dims(in), dims(W), dims(P)));
    return P;
  };
  const arma::mat Q = projection("Q", "Queries", X, x_name, lesson.W_Q, "W_Q", lesson.b_Q, qtok);
  const arma::mat K =
      projection("K", "Keys", source, source_name, lesson.W_K, "W_K", lesson.b_K, ktok);
  const arma::mat V =
      projection("V", "Values", source, source_name, lesson.W_V, "W_V", lesson.b_V, ktok);

  // 3. Attention, head by head.
  trace.mask = mask_reasons(lesson);
  const bool any_masked = arma::any(arma::vectorise(trace.mask));
  const std::string mask_sources = describe_mask_sources(trace.mask);
  const double s = trace.scale;
  std::vector<arma::mat> contexts;
  std::vector<arma::mat> head_weights;
  for (std::size_t h = 0; h < lesson.heads; ++h) {
    const int hi = static_cast<int>(h);
    const std::string sub = subscript(h);
    const std::string p = fmt::format("head{}.", h);
    auto slice = [&](const arma::mat& M, const char* name, std::size_t width,
                     const std::vector<std::string>& rows) {
      const arma::mat part = record.take(p + name, split_head(M, h, width));
      describe(
          record.add(p + name, fmt::format("Head {} {}", h, name), StepKind::head_slice, hi, part,
                     rows, {}),
          fmt::format("{}{} = {}[:, {}:{}]", name, sub, name, h * width, (h + 1) * width),
          fmt::format("{}_{{{}}} = {}_{{:,\\,{}:{}}}", name, h, name, h * width, (h + 1) * width),
          fmt::format("({}) → {}", dims(M), dims(part)));
      return part;
    };
    const arma::mat Qh = slice(Q, "Q", lesson.d_k, qtok);
    const arma::mat Kh = slice(K, "K", lesson.d_k, ktok);
    const arma::mat Vh = slice(V, "V", lesson.d_v, ktok);

    const arma::mat scores = record.take(p + "scores", attention_scores(backend, Qh, Kh));
    describe(record.add(p + "scores", "Scores", StepKind::scores, hi, scores, qtok, ktok),
             fmt::format("S{0} = Q{0}·K{0}ᵀ", sub),
             fmt::format("S_{{{0}}} = Q_{{{0}}} K_{{{0}}}^\\top", h),
             fmt::format("({})·({})ᵀ → {}", dims(Qh), dims(Kh), dims(scores)));

    const arma::mat scaled = record.take(p + "scaled", scale_scores(scores, s));
    std::string divisor, divisor_tex;
    switch (lesson.scale_kind) {
      case ScaleKind::sqrt_dk:
        divisor = fmt::format("√d_k, with √d_k = √{} = {}", lesson.d_k, short_number(s));
        divisor_tex =
            fmt::format("\\sqrt{{d_k}},\\ \\text{{with}}\\ \\sqrt{{d_k}} = \\sqrt{{{}}} = {}",
                        lesson.d_k, short_number(s));
        break;
      case ScaleKind::none:
        divisor = "1 (no scaling)";
        divisor_tex = "1\\ (\\text{no scaling})";
        break;
      case ScaleKind::number:
        divisor = divisor_tex = short_number(s);
        break;
    }
    describe(record.add(p + "scaled", "Scaled scores", StepKind::scaled, hi, scaled, qtok, ktok),
             fmt::format("S{} / {}", sub, divisor), fmt::format("S_{{{}}} / {}", h, divisor_tex),
             fmt::format("{} / scalar → {}", dims(scores), dims(scaled)));

    const arma::mat masked =
        record.take(p + "masked", apply_mask(scaled, trace.mask, lesson.mask_fill));
    const std::string fill =
        std::isinf(lesson.mask_fill) ? "-inf" : fmt::format("{:g}", lesson.mask_fill);
    describe(record.add(p + "masked", "Masked scores", StepKind::masked, hi, masked, qtok, ktok),
             any_masked ? fmt::format("masked cells := {} ({}); the others are unchanged", fill,
                                      mask_sources)
                        : "nothing is masked: masked = scaled",
             any_masked ? fmt::format("\\text{{masked cells}} := {}",
                                      std::isinf(lesson.mask_fill) ? "-\\infty" : fill)
                        : "\\text{nothing masked}",
             fmt::format("{} → {}", dims(scaled), dims(masked)));

    // The softmax as done on paper: exp of each masked score, then the row sums.
    const arma::mat exps = record.take(p + "exp", arma::exp(masked));
    describe(record.add(p + "exp", "Exponentials", StepKind::exp, hi, exps, qtok, ktok),
             fmt::format("E{} = exp(masked), cell by cell (exp(-inf) = 0)", sub),
             fmt::format("E_{{{}}} = \\exp(\\text{{masked}})", h),
             fmt::format("{} → {}", dims(masked), dims(exps)));
    const arma::mat row_sums = record.take(p + "row_sum", arma::sum(exps, 1));
    describe(record.add(p + "row_sum", "Row sums", StepKind::row_sum, hi, row_sums, qtok, {"sum"}),
             fmt::format("Σ{0} = Σ_j E{0}[i, j]", sub),
             fmt::format("\\Sigma_{{{}}} = \\textstyle\\sum_j E_{{{}}}[i,j]", h, h),
             fmt::format("{} → {}", dims(exps), dims(row_sums)));

    arma::mat weights =
        attention_weights(backend, masked, lesson.masked_row, qtok, hi, trace.warnings);
    // Given exponentials or row sums (a learner's, for carried credit) are
    // divided as on paper: A = E / Σ.
    if (record.overrides(p + "exp") || record.overrides(p + "row_sum")) {
      weights = exps;
      weights.each_col() /= row_sums;
    }
    weights = record.take(p + "weights", weights);
    for (std::size_t i = 0; i < weights.n_rows; ++i)
      if (masked.row(i).max() != -arma::datum::inf && !weights.row(i).is_finite())
        trace.warnings.push_back(fmt::format(
            "head{}.weights row {} ({}): not a number — a score of this row is infinite or NaN "
            "(head{}.scores overflowed double precision); use smaller inputs",
            h, i, qtok.at(i), h));
    if (std::isfinite(lesson.mask_fill))
      for (std::size_t i = 0; i < trace.mask.n_rows; ++i)
        if (arma::all(trace.mask.row(i) != 0u))
          trace.warnings.push_back(fmt::format(
              "head{}.weights row {} ({}): every key is masked, but the fill {} is finite, so the "
              "softmax is defined and the row comes out uniform (masked_row is not used). On paper "
              "exp({}) underflows to 0, so head{}.exp and head{}.row_sum show 0 and E/Σ would be "
              "0/0; only the row-max shift, exp(fill − fill) = 1 per key, gives 1/m",
              h, i, qtok.at(i), fill, fill, h, h));
    describe(
        record.add(p + "weights", "Attention weights", StepKind::weights, hi, weights, qtok, ktok),
        fmt::format("A{0} = E{0} / Σ{0}: each exp(masked) over its row's sum; computed stably as "
                    "exp(x − row max) / Σ exp(x − row max)",
                    sub),
        fmt::format("A_{{{}}} = \\mathrm{{softmax}}_{{\\text{{row}}}}(\\text{{masked}})", h),
        fmt::format("{} → {}, each row sums to 1", dims(masked), dims(weights)));

    arma::mat context = record.take(p + "context", weighted_sum(backend, weights, Vh));
    describe(record.add(p + "context", "Context", StepKind::context, hi, context, qtok, {}),
             fmt::format("C{0} = A{0}·V{0}", sub),
             fmt::format("C_{{{0}}} = A_{{{0}}} V_{{{0}}}", h),
             fmt::format("({})·({}) → {}", dims(weights), dims(Vh), dims(context)));
    contexts.push_back(std::move(context));
    head_weights.push_back(weights);
  }

  // 4. How the heads compare: the weights averaged and maxed over heads (004 section 5.3).
  if (lesson.heads > 1) {
    std::string all;
    for (std::size_t h = 0; h < lesson.heads; ++h) all += (h ? ", A" : "A") + subscript(h);
    const std::string shapes =
        fmt::format("{} × ({}) → {}", lesson.heads, dims(head_weights[0]), dims(head_weights[0]));
    describe(record.add("heads.mean", "Mean of the weights over heads", StepKind::head_summary, -1,
                        mean_over_heads(head_weights), qtok, ktok),
             fmt::format("mean of {}, cell by cell (each row still sums to 1)", all),
             "\\frac{1}{h}\\textstyle\\sum_h A_h", shapes);
    describe(record.add("heads.max", "Max of the weights over heads", StepKind::head_summary, -1,
                        max_over_heads(head_weights), qtok, ktok),
             fmt::format("max of {}, cell by cell (rows no longer sum to 1)", all), "\\max_h A_h",
             shapes);
  }

  // 5. Heads side by side, then the output projection.
  const arma::mat concat = record.take("concat", concat_heads(contexts));
  std::string parts, parts_tex;
  for (std::size_t h = 0; h < lesson.heads; ++h) {
    parts += (h ? " | C" : "C") + subscript(h);
    parts_tex += fmt::format("{}C_{{{}}}", h ? " \\mid " : "", h);
  }
  describe(record.add("concat", "Concatenated heads", StepKind::concat, -1, concat, qtok, {}),
           fmt::format("concat = [{}]", parts), fmt::format("\\mathrm{{concat}} = [{}]", parts_tex),
           fmt::format("{} × ({}) → {}", lesson.heads, shape_str(concat.n_rows, lesson.d_v),
                       dims(concat)));
  if (lesson.W_O) {
    record_weights(record, "W_O", *lesson.W_O, lesson.b_O);
    const arma::mat out = record.take("output", project(backend, concat, *lesson.W_O, lesson.b_O));
    describe(record.add("output", "Output projection", StepKind::output, -1, out, qtok, {}),
             lesson.b_O ? "output = concat·W_O + b_O" : "output = concat·W_O",
             lesson.b_O ? "\\mathrm{output} = \\mathrm{concat}\\, W_O + b_O"
                        : "\\mathrm{output} = \\mathrm{concat}\\, W_O",
             fmt::format("({})·({}) → {}", dims(concat), dims(*lesson.W_O), dims(out)));
  }
  return trace;
}

}  // namespace attn
