// The mask: a score whose key the query may not see (causal, padding, keep, a
// window or stride pattern) is replaced by the fill (-inf, or the lesson's
// number); the others are kept.
//   mask  scaled:(n,m) -> masked:(n,m), the cells of Trace::mask set to fill
#include "core/ops/families.hpp"
#include "core/pipeline.hpp"

namespace attn::ops {

namespace {

bool is_masked(const Trace& trace, std::size_t row, std::size_t col) {
  return row < trace.mask.n_rows && col < trace.mask.n_cols && trace.mask(row, col) != 0;
}

double mask_cell(const CellContext& c, std::size_t row, std::size_t col) {
  return is_masked(c.trace, row, col) ? c.step.made.fill : c.read(0, row, col);
}

void mask_expand(const ExpandContext& c, CellExpansion& e) {
  e.kind = ExpansionKind::mask;
  add_source(e, c.trace, c.step.made.inputs[0], e.row, e.col);
  e.mask_reasons = static_cast<unsigned>(c.trace.mask(e.row, e.col));
  e.pattern = c.trace.mask_pattern;
  e.fill = c.step.made.fill;
}

Bounds mask_bounds(const BoundsContext& c) {
  Bounds out = c.in(0);
  const arma::uvec masked = arma::find(c.trace.mask);
  out.lo.elem(masked).fill(c.step.made.fill);
  out.hi.elem(masked).fill(c.step.made.fill);
  return out;
}

}  // namespace

// A choice, not arithmetic: no FLOPs.
const OpFacets mask{Op::mask,     "mask",   "the scaled scores", &mask_cell, &mask_expand,
                    &mask_bounds, &no_flops};

}  // namespace attn::ops

namespace attn {

// The whole step at once, as the pipeline computes it (core/pipeline.hpp).

// -> (n,m)
arma::umat mask_reasons(const Lesson& lesson) {
  const std::size_t n = lesson.queries(), m = lesson.keys();
  arma::umat mask(n, m, arma::fill::zeros);
  const MaskPattern pattern = lesson.mask_pattern();
  for (std::size_t i = 0; i < n; ++i)
    for (std::size_t j = 0; j < m; ++j) {
      mask(i, j) |= pattern_reasons(pattern, i, j);  // causal, window, stride
      if (!lesson.key_padding.empty() && lesson.key_padding[j]) mask(i, j) |= mask_padding;
      if (lesson.keep && (*lesson.keep)(i, j) == 0) mask(i, j) |= mask_keep;
    }
  return mask;
}

}  // namespace attn
