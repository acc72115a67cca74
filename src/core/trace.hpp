// The trace: every intermediate matrix of one attention forward pass, named
// by its stable step id (SPEC section 5). Renderers and teachers only read it.
#pragma once

#include <armadillo>
#include <string>
#include <string_view>
#include <vector>

namespace attn {

enum class StepKind {
  input,       // X, memory
  positional,  // PE, X+PE, memory+PE
  projection,  // Q, K, V
  head_slice,  // head{h}.Q / .K / .V
  scores,
  scaled,
  masked,
  exp,      // head{h}.exp: exp of the masked scores, as on paper
  row_sum,  // head{h}.row_sum: (n,1) sums of the exponentials
  weights,
  context,
  head_summary,  // heads.mean, heads.max: the weights summarised over heads
  concat,
  output,
};

struct Step {
  std::string id;       // stable: "head0.scores"
  std::string name;     // for people: "Scores"
  std::string formula;  // Unicode: "S₀ = Q₀·K₀ᵀ"
  std::string latex;    // the same formula in LaTeX math
  std::string shapes;   // "(4×4)·(4×4)ᵀ → 4×4"
  StepKind kind = StepKind::input;
  int head = -1;  // -1 for steps that are not per head
  arma::mat value;
  std::vector<std::string> rows;  // one label per row (tokens)
  std::vector<std::string> cols;  // one label per column (tokens or d0, d1, ...)
};

// Why a score cell is masked: bit flags, several may be set.
enum MaskReason : unsigned {
  mask_causal = 1u,   // key after the query
  mask_padding = 2u,  // the key is padding
  mask_keep = 4u,     // the keep matrix has 0 there
};

struct Trace {
  std::string lesson_id;
  std::string backend;
  std::vector<Step> steps;
  std::vector<std::string> warnings;  // e.g. a fully masked row
  arma::umat mask;                    // (n, m) MaskReason bits; 0 = may attend
  double scale = 1.0;                 // the divisor of head{h}.scaled

  const Step* find(std::string_view id) const;
  // Throws InputError listing the valid ids when `id` is not a step.
  const Step& at(std::string_view id) const;
  std::vector<std::string> ids() const;
};

}  // namespace attn
