// Builds the sheet/key model of an exercise from its lesson and trace: what is
// given, what is asked, every intermediate matrix, and the convention in words.
#include "teach/exercise_sheets.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "core/error.hpp"
#include "core/i18n.hpp"
#include "core/number_text.hpp"
#include "core/pipeline.hpp"
#include "render/formula.hpp"

namespace attn {

namespace {

SheetMatrix input_matrix(std::string id, std::string name, const arma::mat& value,
                         std::vector<std::string> rows) {
  SheetMatrix m;
  m.id = std::move(id);
  m.name = std::move(name);
  m.shapes = shape_str(value.n_rows, value.n_cols);
  m.value = value;
  m.rows = std::move(rows);
  m.cols = feature_labels(value.n_cols);
  return m;
}

// Every occurrence of `from` in `text` replaced by `to`.
std::string replace_all(std::string text, std::string_view from, std::string_view to) {
  for (std::size_t at = text.find(from); at != std::string::npos;
       at = text.find(from, at + to.size()))
    text.replace(at, from.size(), to);
  return text;
}

// A step's formula as a sheet writes it, in the documents' language: the
// softmax from the step the student has computed (`scaled`, or `masked` when
// something is masked) without E and Σ, which the sheet does not define; with
// one head, no head subscript (the convention's Q is the head's Q).
StepFormula sheet_formula(const Exercise& exercise, const Step& step) {
  StepFormula f = step_formula(exercise.lesson, exercise.trace, step, language());
  const bool any_masked = arma::any(arma::vectorise(exercise.trace.mask));
  const std::size_t h = step.head < 0 ? 0 : static_cast<std::size_t>(step.head);
  const std::string input = any_masked ? "masked" : "scaled", sub = subscript(h);
  if (step.kind == StepKind::exp) {
    f.text = any_masked ? tr_format("E{0} = exp({1}{0}), cell by cell (exp(−∞) = 0)", sub, input)
                        : tr_format("E{0} = exp({1}{0}), cell by cell", sub, input);
    f.latex = fmt::format("E_{{{0}}} = \\exp(\\text{{{1}}}_{{{0}}})", h, input);
  } else if (step.kind == StepKind::weights) {
    f.text = tr_format(
        "A{0} = softmax({1}{0}) by rows: A{0}[i, j] = exp({1}{0}[i, j]) / Σ_k exp({1}{0}[i, k])",
        sub, input);
    f.latex = fmt::format(
        "A_{{{0}}}[i,j] = e^{{\\text{{{1}}}_{{{0}}}[i,j]}} \\big/ \\textstyle\\sum_k "
        "e^{{\\text{{{1}}}_{{{0}}}[i,k]}}",
        h, input);
  }
  const bool one_head =
      exercise.lesson.heads == 1 && step.head >= 0 && step.kind != StepKind::head_slice;
  if (one_head) {
    f.text = replace_all(f.text, subscript(0), "");
    f.latex = replace_all(f.latex, "_{0}", "");
  }
  return f;
}

SheetMatrix step_matrix(const Exercise& exercise, const Step& step) {
  const StepFormula formula = sheet_formula(exercise, step);
  const std::vector<std::string>& asked = exercise.asked;
  SheetMatrix m;
  m.id = step.id;
  m.name = step_display_name(step);
  m.formula = formula.text;
  m.latex = formula.latex;
  m.shapes = formula.shapes;
  m.value = step.value;
  m.rows = step.rows;
  m.cols = step.cols;
  m.asked = std::find(asked.begin(), asked.end(), step.id) != asked.end();
  return m;
}

// "√2 ≈ 1.41421356" or "√4 = 2": the divisor as a student uses it.
ConventionLine scale_line(std::size_t d_k) {
  const double root = std::sqrt(static_cast<double>(d_k));
  const bool whole = root == std::floor(root);
  const std::string value =
      whole ? fmt::format("{}", static_cast<long long>(root)) : fmt::format("{:.8f}", root);
  return {tr_format("Scores S = Q·Kᵀ (each query row against each key row); scaled = S / √d_k "
                    "with d_k = {}, √{} {} {}.",
                    d_k, d_k, whole ? "=" : "≈", value),
          tr_format("Scores $S = Q K^\\top$ (each query row against each key row); scaled "
                    "$= S / \\sqrt{{d_k}}$ with $d_k = {}$, $\\sqrt{{{}}} {} {}$.",
                    d_k, d_k, whole ? "=" : "\\approx", value)};
}

// The backward pass's lines: where the gradient starts and the rule of each step back.
void backward_lines(const Lesson& lesson, std::vector<ConventionLine>& lines) {
  if (lesson.backward->target)
    lines.push_back(
        {std::string(tr("Loss L = ½‖C − T‖² of the context C and the target T, so grad.concat = "
                        "dL/dC = C − T.")),
         std::string(tr("Loss $L = \\tfrac12 \\lVert C - T \\rVert^2$ of the context $C$ and the "
                        "target $T$, so $\\partial L / \\partial C = C - T$."))});
  lines.push_back(
      {std::string(tr("Backward, with G = dL/dC: dA = G·Vᵀ, dV = Aᵀ·G; D_i = Σ_k dA[i,k]·A[i,k], "
                      "dS = A ⊙ (dA − D) ÷ √d_k (0 where masked) is grad.scores; dQ = dS·K, "
                      "dK = dSᵀ·Q; dW_Q = Xᵀ·dQ (K, V alike); dX adds up what comes back through "
                      "every product that reads X.")),
       std::string(tr("Backward, with $G = \\partial L / \\partial C$: $dA = G V^\\top$, "
                      "$dV = A^\\top G$; $D_i = \\sum_k dA_{ik} A_{ik}$, $dS = A \\odot (dA - D) \\div "
                      "\\sqrt{d_k}$ (0 where masked) is grad.scores; $dQ = dS\\,K$, "
                      "$dK = dS^\\top Q$; $dW_Q = X^\\top dQ$ ($K$, $V$ alike); $dX$ adds up what "
                      "comes back through every product that reads $X$."))});
}

// The convention's lines in the documents' language (tr): each in Unicode and
// in LaTeX, the same words.
std::vector<ConventionLine> convention(const ExerciseSpec& spec, const Lesson& lesson) {
  std::vector<ConventionLine> lines;
  if (lesson.is_cross())
    lines.push_back(
        {std::string(tr("Row vectors: each token is one row. Q = X·W_Q from the sentence X; "
                        "K = M·W_K and V = M·W_V from the memory M (the source sentence).")),
         std::string(tr("Row vectors: each token is one row. $Q = X W_Q$ from the sentence $X$; "
                        "$K = M W_K$ and $V = M W_V$ from the memory $M$ (the source "
                        "sentence)."))});
  else
    lines.push_back(
        {std::string(tr("Row vectors: each token is one row. Q = X·W_Q, K = X·W_K, V = X·W_V.")),
         std::string(tr("Row vectors: each token is one row. $Q = X W_Q$, $K = X W_K$, "
                        "$V = X W_V$."))});
  if (spec.heads > 1)
    lines.push_back(
        {tr_format("{} heads: head h uses columns h·{} to h·{}+{} of Q, K and V (columns "
                   "counted from 0).",
                   spec.heads, spec.d_k, spec.d_k, spec.d_k - 1),
         tr_format("{} heads: head $h$ uses columns $h \\cdot {}$ to $h \\cdot {} + {}$ of $Q$, "
                   "$K$ and $V$ (columns counted from 0).",
                   spec.heads, spec.d_k, spec.d_k, spec.d_k - 1)});
  lines.push_back(scale_line(spec.d_k));
  if (lesson.causal)
    lines.push_back(
        {std::string(tr("Causal mask: a query may not look at keys after it (key j > query i); "
                        "those scores become −∞.")),
         std::string(tr("Causal mask: a query may not look at keys after it (key $j >$ query "
                        "$i$); those scores become $-\\infty$."))});
  if (!lesson.key_padding.empty())
    lines.push_back(
        {std::string(tr("Key padding: the key <pad> is padding; every query's score for it "
                        "becomes −∞.")),
         std::string(tr("Key padding: the key \\textless{}pad\\textgreater{} is padding; every "
                        "query's score for it becomes $-\\infty$."))});
  lines.push_back(
      {std::string(tr("Weights: softmax of each row, w_j = exp(x_j) / Σ_k exp(x_k); exp(−∞) = 0, "
                      "so a masked key gets weight 0.")),
       std::string(tr("Weights: softmax of each row, $w_j = e^{x_j} / \\sum_k e^{x_k}$; "
                      "$e^{-\\infty} = 0$, so a masked key gets weight 0."))});
  lines.push_back(
      spec.heads > 1
          ? ConventionLine{std::string(tr("Context of head h = its weights · V_h (a weighted sum "
                                          "of the rows of V_h).")),
                           std::string(tr("Context of head $h$ $= A_h V_h$ (a weighted sum of the "
                                          "rows of $V_h$)."))}
          : ConventionLine{
                std::string(tr("Context = weights · V (a weighted sum of the rows of V).")),
                std::string(tr("Context $= A V$ (a weighted sum of the rows of $V$)."))});
  if (lesson.backward) backward_lines(lesson, lines);
  const std::string answers = tr_format(
      "Write each answer to {0} decimals. Keep at least {1} decimals while you work "
      "and round only the answers you write.",
      spec.answer_decimals, spec.answer_decimals + 2);
  lines.push_back({answers, answers});
  return lines;
}

}  // namespace

std::string student_label(const SheetModel& model) {
  return model.student_id.empty() ? model.student
                                  : tr_format("{} (ID {})", model.student, model.student_id);
}

std::string sheet_title(const SheetModel& model, bool key) {
  return key ? tr_format("Answer key: {}", student_label(model))
             : tr_format("Attention exercise: {}", student_label(model));
}

std::string sheet_meta(const SheetModel& model) {
  return model.input_decimals == 1
             ? tr_format("Variant {}, inputs with {} decimal, answers to {} decimals",
                         model.variant, model.input_decimals, model.answer_decimals)
             : tr_format("Variant {}, inputs with {} decimals, answers to {} decimals",
                         model.variant, model.input_decimals, model.answer_decimals);
}

std::string key_note(const SheetModel& model) {
  return tr_format(
      "Every step to {} decimals; the steps asked on the sheet are starred. The exercise as a "
      "lesson: {} (attn-trace run shows it in full precision, attn-trace verify marks answers).",
      model.answer_decimals, model.lesson_file);
}

SheetModel make_sheet_model(const ExerciseSpec& spec, const Exercise& exercise) {
  const Lesson& lesson = exercise.lesson;
  SheetModel model;
  model.student = exercise.student.name;
  model.student_id = exercise.student.id;
  model.variant = fmt::format("{:016x}", exercise.stream_seed);
  model.lesson_file = fmt::format("{}/lesson.toml", exercise.student.slug);
  model.command = spec.command;
  model.input_decimals = spec.decimals;
  model.answer_decimals = spec.answer_decimals;
  model.convention = convention(spec, lesson);

  const auto name = [](std::string_view english) { return std::string(tr(english)); };
  model.inputs.push_back(input_matrix("X", name(N_("Input embeddings")), lesson.X, lesson.tokens));
  if (lesson.memory)
    model.inputs.push_back(input_matrix("M", name(N_("Memory (the source sentence)")), *lesson.memory,
                                        lesson.memory_tokens));
  const std::vector<std::string> model_rows = feature_labels(lesson.X.n_cols);
  model.inputs.push_back(input_matrix("W_Q", name(N_("Query weights")), lesson.W_Q, model_rows));
  model.inputs.push_back(input_matrix("W_K", name(N_("Key weights")), lesson.W_K, model_rows));
  model.inputs.push_back(input_matrix("W_V", name(N_("Value weights")), lesson.W_V, model_rows));
  if (lesson.backward && lesson.backward->upstream)
    model.inputs.push_back(input_matrix("grad.concat", name(N_("Upstream gradient dL/dC")),
                                        *lesson.backward->upstream, lesson.tokens));
  if (lesson.backward && lesson.backward->target)
    model.inputs.push_back(
        input_matrix("target", name(N_("Target T")), *lesson.backward->target, lesson.tokens));

  for (const std::string& id : exercise.asked)
    model.asked.push_back(step_matrix(exercise, exercise.trace.at(id)));
  for (const Step* step : key_steps(spec, exercise.trace))
    model.key.push_back(step_matrix(exercise, *step));
  model.worked = exercise.worked;
  return model;
}

}  // namespace attn
