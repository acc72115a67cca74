// Not compiled. The messages of src/render/text.cpp, src/cli/run.cpp and
// src/cli/lessons.cpp, which are being rewritten elsewhere and not yet marked
// with tr(): listed here, exactly as those files write them, so that
// scripts/update-po keeps them in po/attn-trace.pot and their translations in
// po/zh_CN.po. Once a file wraps its strings (fmt::runtime(tr("..."))),
// delete its lines here and run scripts/update-po (docs/chinese.md).
#include "core/i18n.hpp"

namespace attn::pending {

// src/render/text.cpp
const char* const text[] = {
    N_("  summary: {} · {}\n"),
    N_("none"),
    N_(" ({} in {})"),
    N_("source: {}\n"),
    N_("{} queries × {} keys{} · d_model {} · heads {} · d_k {} · d_v {} · scale ÷ {} · mask "
       "fill {}{} · backend {}\n"),
    N_(" (cross-attention)"),
    N_("numbers: {}\n"),
    N_("Step {} · {} · {}"),
    N_("  {}\n  shapes: {}\n"),
    N_("  FLOPs: {} ({})\n"),
    N_("  (subtracting the row max changes nothing: the factor exp(-max) cancels between\n"
       "   numerator and denominator; it only keeps exp() from overflowing)\n"),
    N_("  warning: "),
    N_("\nFLOPs of the whole pass: {} (the steps above added up, but for heads.mean/max, which "
       "only compare the heads; a product (n×k)·(k×m), k the shared inner width, counts "
       "2·n·k·m: a multiply and an add per term)\n"),
    N_("FLOPs per decoding step with the KV cache (all heads; not in the pass above): {}. Step t "
       "attends over t+1 cached tokens, so its cost grows with t; the projections of the new "
       "token (x_t·W_Q, x_t·W_K, x_t·W_V) cost the same at every step and are not counted here\n"),
    N_("\nwarnings:\n"),
};

// src/cli/run.cpp
const char* const run[] = {
    N_("--expand {}: expected ROW,COL, two integers counted from 0 (e.g. --expand 0,1)"),
    N_("attn-trace: warning: {}\n"),
    N_("attn-trace: removed {}: a temporary file an interrupted run left\n"),
    N_("Trace a lesson: every step of attention, shown"),
    N_("Embedded lesson id or path to a lesson .toml (default: river-bank)"),
    N_("text, json, markdown, latex, or svg (the weights as heatmap pictures)"),
    N_("cpu or cuda"),
    N_("f64, f32, f16 or bf16: the number format, emulated exactly on the CPU "
       "(default: the lesson's [model] dtype, else f64)"),
    N_("Show only these step ids (e.g. head0.weights, or weights for head 0)"),
    N_("Show only this head's per-head steps"),
    N_("Decimals shown (default 4)"),
    N_("auto, always or never (NO_COLOR is respected)"),
    N_("ROW,COL: write out that cell's arithmetic at every step, with the numbers"),
    N_("Shape, min/max/mean/std and corners instead of every cell"),
};

// src/cli/lessons.cpp
const char* const lessons[] = {
    N_("The embedded lessons in teaching order: each after the lessons it builds on.\n"
       "Levels: 1 one head by hand, 2 scaling and softmax, 3 masks and positions,\n"
       "4 several heads and sequences. `attn-trace lessons show ID` prints a lesson's TOML.\n\n"
       "{:>{}}  {:<{}}  level  doc  title\n"),
    N_("variants: "),
    N_("\nThe source documents (Chinese articles; each lesson cites its file and section):\n"),
    N_("List the embedded lessons in teaching order, or show one"),
    N_("Print a lesson's TOML as embedded (copy, change)"),
    N_("Embedded lesson id"),
};

}  // namespace attn::pending
