// The facets of each operation, defined in its family's file and gathered by
// op_table.cpp; and the few helpers the families share. Internal to core/ops.
#pragma once

#include <fmt/format.h>

#include "core/ops/op.hpp"

namespace attn::ops {

// inputs.cpp: the lesson's own numbers.
extern const OpFacets given;
// positional.cpp: sinusoidal positions.
extern const OpFacets positional, add_positions;
// products.cpp: products of matrices.
extern const OpFacets matmul, matmul_t;
// heads.cpp: splitting into heads, joining them, summarising them.
extern const OpFacets slice, concat, mean, max;
// masks.cpp
extern const OpFacets mask;
// softmax.cpp: the pieces of the scaled softmax.
extern const OpFacets divide, exp, row_sum, softmax;
// layer_norm.cpp
extern const OpFacets row_mean, row_var, normalise, scale_shift;
// ffn.cpp: the encoder layer's residual sums, activations and result.
extern const OpFacets add, relu, gelu, identity;
// decoding.cpp: the KV cache.
extern const OpFacets rows, max_abs_diff;
// positions_rope_alibi.cpp: rotary positions, linear biases, the shift check.
extern const OpFacets rotate, alibi, row_max_abs_diff;
// tiles.cpp: the tiled (online) softmax; linear.cpp: linear attention. All
// Op::efficient: `efficient` dispatches on Operation::efficient (op_table.cpp).
extern const OpFacets tile_block, running_max, rescale, running_sum, running_acc, divide_rows,
    row_diff;
extern const OpFacets elu_plus_one, matmul_tn, normaliser;
extern const OpFacets efficient;
// backward.cpp: the gradient steps of the backward pass (Op::backward).
extern const OpFacets backward;

// e's next source: cell (row, col) of the step `id`.
void add_source(CellExpansion& e, const Trace& trace, const std::string& id, std::size_t row,
                std::size_t col);

// One operation per output cell.
FlopCount per_cell(const Step& step, const FlopSizes& s);
// No arithmetic: a choice, a copy or a given number.
FlopCount no_flops(const Step& step, const FlopSizes& s);

// The same bounds as the input's (a copy).
Bounds same_bounds(const BoundsContext& c);
// The step as it is: exact.
Bounds exact_step_bounds(const BoundsContext& c);

}  // namespace attn::ops
