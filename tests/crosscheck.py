#!/usr/bin/python3
"""Independent proof of the golden files: recompute every step of every lesson
with numpy and compare with golden/<id>.toml.

Usage: crosscheck.py [--lessons DIR] [--golden DIR] [--self-test]

Nothing here calls attn-trace: the lesson format (docs/lesson-format.md) and the math
(the same document) are re-implemented from the documentation, so a golden file
written by the tool is never its own only proof. The numbers a lesson gives
(X, weights, biases) are read from the lesson file and must equal the golden
file's exactly; every other step is recomputed from the golden file's values of
the steps it reads, so that each operation is proven alone (by induction, the
whole file), and each cell must lie within what floating point allows two
correct results of that operation in any summation order (tests/bounds.py,
docs/numerics.md): numpy's BLAS adds in the order of whichever OpenBLAS kernel
runs, and its exp is not glibc's. A narrower format (f16) is emulated here as
the documentation specifies it (f32 sums in order), so its steps must be
exact, except where a library's exp or sin enters. NaN and ±inf in the same
cells. --self-test also proves that this script notices an altered golden
value (it must fail on a tampered copy). Exit 77 (skipped) when this Python
has no numpy.
"""
import argparse
import math
import pathlib
import re
import shutil
import subprocess
import sys
import tempfile
import tomllib

try:
    import numpy as np
except ModuleNotFoundError:
    print(f"SKIPPED: {sys.executable} has no numpy (apt-get install python3-numpy)")
    sys.exit(77)  # CTest's SKIP_RETURN_CODE: the cross-check cannot run here

import bounds  # noqa: E402  (the order-independent bounds, shared by the Python tests)
import numpy_backward  # noqa: E402  (the backward pass written out by hand, with numpy)

ROOT = pathlib.Path(__file__).resolve().parent.parent


def matrix(value, size=None):
    """A lesson matrix: a list of rows, or "identity" (square, of `size`)."""
    if value == "identity":
        return np.eye(size)
    return np.array(value, dtype=float)


def positional_encoding(n, d):
    """PE(pos, 2i) = sin(pos / 10000^(2i/d)), PE(pos, 2i+1) = cos(same)."""
    pe = np.zeros((n, d))
    for pos in range(n):
        for j in range(d):
            angle = pos / 10000 ** ((j - j % 2) / d)
            pe[pos, j] = math.sin(angle) if j % 2 == 0 else math.cos(angle)
    return pe


def softmax_rows(masked):
    """Stable row softmax; a row that is all -inf comes out NaN (0/0)."""
    out = np.full(masked.shape, np.nan)
    for i, row in enumerate(masked):
        top = row.max()
        if top == -np.inf:
            continue
        e = np.exp(row - top)
        out[i] = e / e.sum()
    return out


class Numbers:
    """The arithmetic of a lesson's dtype (docs/numerics.md), written again with
    numpy's own float32 and float16: f64 as it is; given numbers rounded to the
    format; a computed value rounded to float32, then to the format; products
    summed in float32 in order; the softmax in float32. numpy has no bfloat16:
    bf16 lessons are not cross-checked here (tests/torch_dtype.py covers them).
    With each operation, the bound its result must meet (tests/bounds.py): in
    f64, whatever order numpy adds in; in a narrower format, the documented
    order is followed here too, so only a library's exp or sin may differ."""

    def __init__(self, dtype):
        self.dtype = dtype
        self.fmt = {"f64": None, "f32": np.float32, "f16": np.float16}[dtype]

    def given(self, x):
        if self.fmt is None:
            return x
        with np.errstate(over="ignore"):
            return np.asarray(x, dtype=float).astype(self.fmt).astype(float)

    def store(self, x):
        if self.fmt is None:
            return x
        with np.errstate(over="ignore", invalid="ignore"):
            return np.asarray(x, dtype=float).astype(np.float32).astype(self.fmt).astype(float)

    def matmul(self, A, B):
        if self.fmt is None:
            return A @ B
        A32, B32 = A.astype(np.float32), B.astype(np.float32)
        acc = np.zeros((A.shape[0], B.shape[1]), dtype=np.float32)
        for t in range(A.shape[1]):
            acc = acc + A32[:, t:t + 1] * B32[t:t + 1, :]  # each product and sum in float32
        return self.store(acc)

    def scalar(self, s):
        """A constant as a kernel holds it: float32 in a narrower format."""
        return s if self.fmt is None else float(np.float32(s))

    def row_sum(self, E):
        if self.fmt is None:
            return E.sum(axis=1, keepdims=True)
        out = np.zeros((E.shape[0], 1))
        for i, row in enumerate(E):
            total = np.float32(0)
            for v in row.astype(np.float32):
                total = np.float32(total + v)
            out[i, 0] = total
        return self.store(out)

    def softmax_rows(self, masked):
        if self.fmt is None:
            return softmax_rows(masked)
        out = np.zeros(masked.shape)
        with np.errstate(invalid="ignore"):
            for i, row in enumerate(masked.astype(np.float32)):
                shifted = row - row.max()
                e = np.exp(shifted.astype(float)).astype(np.float32)
                total = np.float32(0)
                for v in e:
                    total = np.float32(total + v)
                out[i] = e / total
        return self.store(out)

    # --- the bound each operation's result must meet ---------------------------
    def in_order(self, f64_bound):
        """A sum the documentation orders (narrow formats): exact; in f64, any order."""
        return f64_bound if self.fmt is None else bounds.exact()

    def product_bound(self, A, B, bias=None):
        return self.in_order(bounds.product(A, B, "f64", bias=bias) if self.fmt is None else None)

    def row_sum_bound(self, E):
        return self.in_order(bounds.row_sum(E, "f64") if self.fmt is None else None)

    def divide_bound(self):
        """One division (in f64 perhaps a product by a rounded 1/s); in a
        narrower format the one IEEE division the documentation specifies."""
        return self.in_order(bounds.elementwise("f64", 2))

    def exp_bound(self):
        return bounds.library(self.dtype)

    def softmax_bound(self, masked):
        return bounds.softmax(masked, self.dtype)

    def positions_bound(self, n, d):
        return bounds.computed_in_double(self.dtype, bounds.positional_error(n, d))


def layer_norm(take, w, k, x, eps):
    """LayerNorm number k of x, as the trace shows it: mean, var, normalised,
    gamma, beta, result, each from the golden values of what it reads. The
    variance is biased (divided by d)."""
    d = x.shape[1]
    mean = take(f"layer.ln{k}.mean", x.mean(axis=1, keepdims=True), bounds.row_mean(x))
    var = take(f"layer.ln{k}.var", ((x - mean) ** 2).sum(axis=1, keepdims=True) / d,
               bounds.row_var(x, mean))
    normalised = take(f"layer.ln{k}.normalised", (x - mean) / np.sqrt(var + eps),
                      bounds.normalise())
    gamma = take(f"ln{k}_gamma", np.array([w.get(f"ln{k}_gamma", [1.0] * d)], dtype=float),
                 bounds.exact())
    beta = take(f"ln{k}_beta", np.array([w.get(f"ln{k}_beta", [0.0] * d)], dtype=float),
                bounds.exact())
    return take(f"layer.ln{k}", gamma * normalised + beta,
                bounds.scale_shift(gamma, normalised, beta))


def gelu(x):
    """The exact GELU, x·Φ(x) with Φ by erf."""
    return np.vectorize(lambda v: 0.5 * v * (1.0 + math.erf(v / math.sqrt(2.0))))(x)


class Recomputed:
    """The steps recomputed so far, in trace order: [(id, value, bound)]. Each
    step is computed from the golden file's values of the steps it reads
    (`take` returns the golden value to go on with), so that an operation's
    bound is its own, never its inputs' errors carried along."""

    def __init__(self, golden_values):
        self.golden = golden_values
        self.steps = []

    def take(self, step_id, value, bound):
        self.steps.append((step_id, np.asarray(value, dtype=float), bound))
        return self.value(step_id)

    def value(self, step_id):
        """The golden value of a step, or the one recomputed here where the
        golden values do not have it (recompute(lesson, {}): from the lesson alone)."""
        if step_id in self.golden:
            return self.golden[step_id]
        return next(v for sid, v, _ in reversed(self.steps) if sid == step_id)


def pattern_blocked(spec, n):
    """The cells a window / global / stride pattern (SPEC section 11) blocks in an
    n x n self-attention score matrix, built here from the keys as written:
    kept when |i - j| <= window, or j mod stride = stride - 1, or i or j is a
    global token; a stride without a window keeps the diagonal. Causal,
    padding and keep are ANDed in by the caller."""
    if "window" not in spec and "stride" not in spec:
        return np.zeros((n, n), dtype=bool)  # global alone is refused on load
    i, j = np.arange(n)[:, None], np.arange(n)[None, :]
    kept = np.abs(i - j) <= spec.get("window", 0)
    if "stride" in spec:
        kept = kept | (j % spec["stride"] == spec["stride"] - 1)
    is_global = np.zeros(n, dtype=bool)
    is_global[list(spec.get("global", []))] = True
    return ~(kept | is_global[:, None] | is_global[None, :])


def attended_count(claim, lesson):
    """An attended-cells claim recounted by brute force: (cells, total)."""
    seq = claim.get("seq")
    if "chunk" in claim:  # chunks of `chunk`, each starting chunk - overlap after the last
        step, cells, start = claim["chunk"] - claim.get("overlap", 0), 0, 0
        while True:
            cells += min(claim["chunk"], seq - start) ** 2
            if start + claim["chunk"] >= seq:
                return cells, seq * seq
            start += step
    own = any(k in claim for k in ("window", "global", "stride", "causal"))
    if not own and seq is None:
        blocked = blocked_cells(lesson)
        return int((~blocked).sum()), blocked.size
    spec = claim if own else lesson.get("model", {})
    blocked = pattern_blocked(spec, seq)
    if spec.get("causal", False):
        blocked |= np.triu(np.ones((seq, seq), dtype=bool), k=1)
    return int((~blocked).sum()), seq * seq


def blocked_cells(lesson):
    """The lesson's (n, m) masked cells: causal, key padding, keep and the
    window / global / stride pattern, combined by OR of what each blocks."""
    model, inp = lesson.get("model", {}), lesson["input"]
    n = len(inp["X"])
    m = len(inp["memory"]) if "memory" in inp else n
    blocked = np.zeros((n, m), dtype=bool)
    if model.get("causal", False):
        blocked |= np.triu(np.ones((n, m), dtype=bool), k=1)
    if "key_padding" in inp:
        blocked |= np.array([bool(p) for p in inp["key_padding"]])[None, :]
    if "keep" in inp:
        blocked |= np.array(inp["keep"]) == 0
    if "window" in model or "stride" in model:  # refused with memory: then n = m
        blocked |= pattern_blocked(model, n)
    return blocked


def check_attended_claims(lesson_id, lesson):
    """Each quantity = "attended" / "attended_fraction" claim, recounted."""
    problems = []
    for k, claim in enumerate(lesson.get("claim", [])):
        if claim.get("quantity") not in ("attended", "attended_fraction"):
            continue
        cells, total = attended_count(claim, lesson)
        value = cells / total if claim["quantity"] == "attended_fraction" else cells
        text = repr(claim["value"])
        decimals = len(text.split(".")[1]) if "." in text and "e" not in text else 0
        allowed = claim.get("tolerance", 0.5 * 10 ** -decimals)
        if abs(value - claim["value"]) > allowed:
            problems.append(f"{lesson_id} claim[{k}]: {claim['quantity']} stated "
                            f"{claim['value']}, counted {value} ({cells} of {total})")
    return problems


def recompute(lesson, golden_values):
    """Every step of the lesson, in trace order: [(id, matrix, bound)], each
    from `golden_values` ({id: matrix}) of the steps it reads; with {}, from
    the lesson alone (each step from the ones recomputed before it)."""
    model = lesson.get("model", {})
    inp = lesson["input"]
    w = lesson["weights"]
    heads = model.get("heads", 1)
    num = Numbers(model.get("dtype", "f64"))
    out = Recomputed(golden_values)
    take = out.take
    X = take("X", num.given(np.array(inp["X"], dtype=float)), bounds.exact())
    n, d_model = X.shape
    pe_on = model.get("positional_encoding", "none") == "sinusoidal"
    if pe_on:
        PE = take("PE", num.store(positional_encoding(n, d_model)), num.positions_bound(n, d_model))
        X = take("X+PE", num.store(X + PE), bounds.exact())  # one addition, correctly rounded
    source = X
    if "memory" in inp:
        source = take("memory", num.given(np.array(inp["memory"], dtype=float)), bounds.exact())
        if pe_on:
            # the memory's positions are not a step: each side adds its own table
            table = num.store(positional_encoding(*source.shape))
            pe = num.positions_bound(*source.shape)
            source = take("memory+PE", num.store(source + table), bounds.Bound(
                pe.limit(table, table) * (1 + 4 * pe.relative),
                bounds.elementwise(num.dtype).relative))
    m, d_mem = source.shape
    layer = lesson.get("layer")
    eps = float(layer.get("eps", 1e-5)) if layer else 0.0
    pre_ln = bool(layer) and layer.get("norm", "post") == "pre"
    x_in = X  # the layer's input (X, or X+PE): the residual sums start from it
    if pre_ln:
        X = source = layer_norm(take, w, 1, X, eps)

    def project(inputs, letter, name, size):
        """The weight matrix (and bias) as steps, as the trace shows them, then the product."""
        W = take(name, num.given(matrix(w[name], size)), bounds.exact())
        bias = "b_" + name[2:]  # W_Q -> b_Q, W_1 -> b_1
        b = None
        if bias in w:
            b = take(bias, num.given(np.array([w[bias]], dtype=float)), bounds.exact())
        return take(letter, num.store(num.matmul(inputs, W) + (0.0 if b is None else b)),
                    num.product_bound(inputs, W, b))

    Q = project(X, "Q", "W_Q", d_model)
    K = project(source, "K", "W_K", d_mem)
    V = project(source, "V", "W_V", d_mem)
    d_k = Q.shape[1] // heads
    d_v = V.shape[1] // heads
    scale = model.get("scale", "sqrt_dk")
    s = math.sqrt(d_k) if scale == "sqrt_dk" else 1.0 if scale == "none" else float(scale)

    masked_cells = blocked_cells(lesson)
    fill_spec = model.get("mask_fill", "-inf")
    fill = num.given(-np.inf if fill_spec == "-inf" else float(fill_spec))
    policy = model.get("masked_row", "nan")

    contexts, all_weights = [], []
    kv_heads = model.get("kv_heads", heads)  # query head h reads K/V head h // (heads / kv_heads)
    d_v = V.shape[1] // kv_heads
    encoding = model.get("positional_encoding", "none")
    for h in range(heads):
        p = f"head{h}."
        kv = h // (heads // kv_heads)
        Qh = take(p + "Q", Q[:, h * d_k:(h + 1) * d_k], bounds.exact())
        Kh = take(p + "K", K[:, kv * d_k:(kv + 1) * d_k], bounds.exact())
        Vh = take(p + "V", V[:, kv * d_v:(kv + 1) * d_v], bounds.exact())
        if encoding == "rope":
            Qh = take(p + "q_rot", rope_rotate(Qh, 0), bounds.rope(Qh, 0))
            Kh = take(p + "k_rot", rope_rotate(Kh, 0), bounds.rope(Kh, 0))
        scores = take(p + "scores", num.matmul(Qh, Kh.T), num.product_bound(Qh, Kh.T))
        scaled = take(p + "scaled", num.store(scores / num.scalar(s)), num.divide_bound())
        if encoding == "alibi":
            slope = 2.0 ** (-8.0 * (h + 1) / heads)
            distance = np.abs(np.arange(n)[:, None] - np.arange(m)[None, :]).astype(float)
            bias = take(p + "alibi_bias", -slope * distance, bounds.alibi())
            scaled = take(p + "biased", scaled + bias, bounds.elementwise("f64"))
        masked = take(p + "masked", np.where(masked_cells, fill, scaled), bounds.exact())
        exps = take(p + "exp", num.store(np.exp(masked)), num.exp_bound())
        take(p + "row_sum", num.row_sum(exps), num.row_sum_bound(exps))
        weights = num.softmax_rows(masked)
        no_key = masked.max(axis=1) == -np.inf
        for i in range(n):
            if no_key[i]:
                weights[i] = {"nan": np.nan, "zero": 0.0, "uniform": num.store(1.0 / m)}[policy]
        weights = take(p + "weights", weights, num.softmax_bound(masked))
        if model.get("attention", "softmax") == "linear":
            contexts.append(linear_attention(take, p, Qh, Kh, Vh))
        else:
            contexts.append(take(p + "context", num.matmul(weights, Vh),
                                 num.product_bound(weights, Vh)))
        if "tile" in model:
            tiled_softmax(take, out.value, p, model["tile"], policy)
        all_weights.append(weights)
        if "rope_shift" in model:
            rope_shift_check(take, out.value, h, model["rope_shift"])
    if heads > 1:
        stacked = np.stack(all_weights)
        take("heads.mean", num.store(stacked.mean(axis=0)), bounds.mean(stacked, num.dtype))
        take("heads.max", stacked.max(axis=0), bounds.exact())
    concat = take("concat", np.hstack(contexts), bounds.exact())
    if "W_O" in w:
        output = project(concat, "output", "W_O", concat.shape[1])
    if layer:  # Post-LN: y = LN2(h + FFN(h)), h = LN1(x + out); Pre-LN: y = h + FFN(LN2(h)), h = x + out
        skip = 1.0 if layer.get("residual", True) else 0.0  # residual = false: no sums
        residual1 = take("layer.residual1", skip * x_in + output, bounds.exact())
        h = residual1 if pre_ln else layer_norm(take, w, 1, residual1, eps)
        ffn_in = layer_norm(take, w, 2, h, eps) if pre_ln else h
        hidden = project(ffn_in, "layer.ffn.hidden", "W_1", None)
        if layer.get("activation", "relu") == "gelu":
            act = take("layer.ffn.activation", gelu(hidden), bounds.gelu(hidden))
        else:
            act = take("layer.ffn.activation", np.maximum(hidden, 0), bounds.exact())
        ffn_out = project(act, "layer.ffn.out", "W_2", None)
        residual2 = take("layer.residual2", skip * h + ffn_out, bounds.exact())
        y = residual2 if pre_ln else layer_norm(take, w, 2, residual2, eps)
        take("layer.output", y, bounds.exact())
    if lesson.get("decode", {}).get("kv_cache", False):
        decode_with_cache(take, out.value, heads, s, n)
    if "backward" in lesson:
        backward_steps(lesson, golden_values, out)
    return out.steps


def backward_steps(lesson, golden, out):
    """The backward pass ([backward]) by the chain rule written out with numpy
    (tests/numpy_backward.py, which tests/torch_backward.py checks against
    autograd), from the golden forward values, in the golden file's order of
    the grad.* steps. Bound: 1e-12 of the largest |value| of the gradients, at
    least 1 (each gradient is a chain of products and sums of those sizes)."""
    found = dict(golden)
    for sid, value, _ in out.steps:
        found.setdefault(sid, value)
    given = {k: found[k] for k in numpy_backward.GIVEN if k in found}
    model = numpy_backward.Model(lesson, given)
    grads = numpy_backward.numpy_backward(model, given, found)
    grads.update(numpy_backward.formula_steps(model, found, grads))
    if "target" in lesson["backward"]:
        grads["loss.target"] = np.array(lesson["backward"]["target"], dtype=float)
    scale = max([1.0] + [float(np.nanmax(np.abs(v))) for v in grads.values() if np.isfinite(v).any()])
    order = [sid for sid in golden if sid.startswith("grad.") or sid == "loss.target"]
    for sid in order + sorted(set(grads) - set(order)):
        out.take(sid, grads[sid], bounds.Bound(absolute=1e-12 * scale))


def rope_rotate(x, shift):
    """RoPE (docs/steps.md): row p's pairs (2i, 2i+1) turned by the angle
    (p + shift)·10000^(−2i/d): x·cos − y·sin, x·sin + y·cos."""
    n, d = x.shape
    theta = 10000.0 ** (-np.arange(0, d, 2, dtype=float) / d)
    angle = (np.arange(n, dtype=float)[:, None] + shift) * theta[None, :]
    out = np.empty_like(x)
    out[:, 0::2] = x[:, 0::2] * np.cos(angle) - x[:, 1::2] * np.sin(angle)
    out[:, 1::2] = x[:, 0::2] * np.sin(angle) + x[:, 1::2] * np.cos(angle)
    return out


def rope_shift_check(take, value, h, shift):
    """[model] rope_shift: q and k rotated with every position moved by
    `shift`, their scores, and row by row the largest |difference| from the
    head's scores, which RoPE makes 0 up to rounding: asserted within what two
    correct rotations and products of the same numbers may differ by."""
    p = f"head{h}."
    Qh, Kh = value(p + "Q"), value(p + "K")
    q = take(p + "q_rot_shifted", rope_rotate(Qh, shift), bounds.rope(Qh, shift))
    k = take(p + "k_rot_shifted", rope_rotate(Kh, shift), bounds.rope(Kh, shift))
    shifted = take(p + "scores_shifted", q @ k.T, bounds.product(q, k.T, "f64"))
    scores = value(p + "scores")
    difference = np.abs(shifted - scores).max(axis=1, keepdims=True)
    allowed = 1e-12 * max(1.0, float(np.abs(scores).max()))
    assert np.all(difference <= allowed), f"head {h}: RoPE scores move by {difference.max()}"
    take(p + "shift_check", difference, bounds.elementwise("f64"))


F64 = bounds.FORMATS["f64"]


def nonnegative_sum(value, count, library_calls):
    """A sum of `count` terms that are each one or two library exps and products
    of them (|value| holds the terms' absolute sum), added in any order."""
    relative = bounds.gamma(count + 2, F64.u) + 2 * bounds.LIBRARY_ULPS * F64.u * library_calls
    return bounds.Bound(2 * relative * np.abs(value), 0.0)


def tile_exp(S, m):
    """exp(S − m) of a block, row by row; 0 where m = −inf (no open key yet)."""
    with np.errstate(invalid="ignore"):
        return np.where(m > -np.inf, np.exp(S - m), 0.0)


def tiled_softmax(take, value, p, tile, policy):
    """[model] tile = [Bq, Bk]: FlashAttention's online softmax, per query block
    and key block, each step from the golden values of what it reads."""
    masked, V = value(p + "masked"), value(p + "V")
    n, m = masked.shape
    bq, bk = tile
    rows = []
    for i, i0 in enumerate(range(0, n, bq)):
        m_old = l_old = acc_old = None
        for j, j0 in enumerate(range(0, m, bk)):
            t = f"{p}tile{i}_{j}."
            S = take(t + "scores", masked[i0:i0 + bq, j0:j0 + bk], bounds.exact())
            top = S.max(axis=1, keepdims=True)
            mm = take(t + "m", top if m_old is None else np.maximum(top, m_old), bounds.exact())
            with np.errstate(invalid="ignore"):
                old = np.full(mm.shape, -np.inf) if m_old is None else m_old
                alpha = np.where(mm == -np.inf, 1.0, np.exp(old - mm))
            alpha = take(t + "rescale", alpha, bounds.library("f64"))
            P = tile_exp(S, mm)
            total = P.sum(axis=1, keepdims=True)
            if l_old is not None:
                total = alpha * l_old + total
            l_new = take(t + "l", total, nonnegative_sum(total, S.shape[1] + 1, 1))
            Vb = V[j0:j0 + S.shape[1]]
            acc, terms = P @ Vb, P @ np.abs(Vb)
            if acc_old is not None:
                acc, terms = alpha * acc_old + acc, alpha * np.abs(acc_old) + terms
            acc = take(t + "acc", acc, nonnegative_sum(terms, S.shape[1] + 1, 1))
            m_old, l_old, acc_old = mm, l_new, acc
        with np.errstate(invalid="ignore", divide="ignore"):
            rows.append(np.where(l_old > 0, acc_old / l_old, np.nan))
    context = np.vstack(rows)
    empty = np.isnan(context).any(axis=1)
    fill = {"nan": np.nan, "zero": 0.0, "uniform": V.mean(axis=0)}[policy]
    context[empty] = fill
    context = take(p + "tiled_context", context, bounds.elementwise("f64", 1))
    take(p + "tiled_check", row_difference(context, value(p + "context")),
         bounds.elementwise("f64", 1))


def row_difference(A, B):
    """max_j |A − B| per row; a cell NaN on both sides counts 0."""
    with np.errstate(invalid="ignore"):
        d = np.where(np.isnan(A) & np.isnan(B), 0.0, np.abs(A - B))
    return d.max(axis=1, keepdims=True)


def linear_attention(take, p, Q, K, V):
    """[model] attention = "linear": φ = elu + 1, φ(K)ᵀV, the normaliser, the
    context; then (φ(Q)φ(K)ᵀ)V, the implied weights and the check. -> the context"""
    def phi(x):
        return np.where(x > 0, x + 1.0, np.exp(np.minimum(x, 0.0)))
    phi_q = take(p + "phi_q", phi(Q), bounds.library("f64"))
    phi_k = take(p + "phi_k", phi(K), bounds.library("f64"))
    kv = take(p + "kv", phi_k.T @ V, bounds.product(phi_k.T, V, "f64"))
    sums = phi_k.sum(axis=0, keepdims=True).T
    norm = take(p + "normaliser", phi_q @ sums, bounds.Bound(
        2 * bounds.gamma(phi_k.shape[0] + phi_k.shape[1] + 1, F64.u) * (np.abs(phi_q) @ sums), 0.0))
    numerator = take(p + "numerator", phi_q @ kv, bounds.product(phi_q, kv, "f64"))
    context = take(p + "context", numerator / norm, bounds.elementwise("f64", 1))
    similarity = take(p + "similarity", phi_q @ phi_k.T, bounds.product(phi_q, phi_k.T, "f64"))
    take(p + "linear_weights", similarity / norm, bounds.elementwise("f64", 1))
    product = take(p + "quadratic_numerator", similarity @ V, bounds.product(similarity, V, "f64"))
    take(p + "linear_check", row_difference(numerator, product), bounds.elementwise("f64", 1))
    return context


def decode_with_cache(take, value, heads, s, n):
    """[decode] kv_cache: token by token, as a decoder with a KV cache runs.
    Step t takes row t of each head's queries and rows 0..t of its keys and
    values (the cache), and attends from its query over the cache; then per
    head the largest |difference| of each step's context from the full one,
    which must lie within what two correct computations of the same row may
    differ by (bounds.Carried, from the head's Q, K and V)."""
    for t in range(n):
        for h in range(heads):
            p = f"decode.t{t}.head{h}."
            q = take(p + "q", value(f"head{h}.Q")[t:t + 1], bounds.exact())
            K_cache = take(p + "K_cache", value(f"head{h}.K")[:t + 1], bounds.exact())
            V_cache = take(p + "V_cache", value(f"head{h}.V")[:t + 1], bounds.exact())
            scores = take(p + "scores", q @ K_cache.T, bounds.product(q, K_cache.T, "f64"))
            scaled = take(p + "scaled", scores / s, bounds.elementwise("f64", 2))
            weights = take(p + "weights", softmax_rows(scaled), bounds.softmax(scaled, "f64"))
            take(p + "context", weights @ V_cache, bounds.product(weights, V_cache, "f64"))
    for h in range(heads):
        decoded = np.vstack([value(f"decode.t{t}.head{h}.context") for t in range(n)])
        difference = np.abs(decoded - value(f"head{h}.context")).max(axis=1, keepdims=True)
        # Both the decoding rows and the full rows are within `full.error` of the exact ones.
        Q, K, V = (bounds.Carried(value(f"head{h}.{x}")) for x in "QKV")
        scaled = bounds.carried_product(Q, K.T, divisor=s, extra=2)
        causal = np.triu(np.ones(scaled.value.shape, dtype=bool), k=1)
        scaled = bounds.Carried(np.where(causal, -np.inf, scaled.value),
                                np.where(causal, 0.0, scaled.error))
        full = bounds.carried_product(bounds.carried_softmax(scaled), V)
        allowed = 2 * full.error.max(axis=1, keepdims=True)
        assert np.all(difference <= allowed), (
            f"head {h}: decoding differs by {difference.max()}, more than {allowed.max()}")
        take(f"decode.head{h}.check", difference, bounds.exact())


GOLDEN_GIVEN_CELLS = 4096  # a larger matrix the lesson gives is not in its golden file


def given(step_id):
    """A matrix the lesson file itself gives (inputs, weights, biases, LayerNorm's)."""
    return (step_id in ("X", "memory") or step_id.startswith(("W_", "b_"))
            or step_id.endswith(("_gamma", "_beta")))


def golden_values(golden):
    """The golden file's steps: {id: matrix}."""
    return {g["id"]: np.array(g["data"], dtype=float).reshape(g["shape"])
            for g in golden.get("step", [])}


def compare(lesson_id, steps, golden):
    """Problems found, one line each (empty: the golden file is proven), and the
    largest difference as a fraction of its bound."""
    problems, worst = [], 0.0
    steps = [(sid, v, b) for sid, v, b in steps if not (given(sid) and v.size > GOLDEN_GIVEN_CELLS)]
    if golden.get("golden", {}).get("lesson") != lesson_id:
        problems.append(f"{lesson_id}: golden file names lesson {golden.get('golden')}")
    kept = golden.get("step", [])
    ids = [g["id"] for g in kept]
    if ids != [sid for sid, _, _ in steps]:
        problems.append(f"{lesson_id}: golden steps {ids} but recomputed {[s for s, _, _ in steps]}")
        return problems, worst
    values = golden_values(golden)
    for sid, value, bound in steps:
        data = values[sid]
        if data.shape != value.shape:
            problems.append(f"{lesson_id} {sid}: golden shape {data.shape}, numpy {value.shape}")
            continue
        bad, fraction = bounds.compare(data, value, bound)
        worst = max(worst, fraction)
        if bad.any():
            r, c = (int(i) for i in np.argwhere(bad)[0])
            limit = np.broadcast_to(bound.limit(data, value), data.shape)[r, c]
            problems.append(f"{lesson_id} {sid} [{r}, {c}]: golden {data[r, c]!r}, numpy "
                            f"{value[r, c]!r} (bound {limit:.3g})")
    return problems, worst


def crosscheck(lessons_dir, golden_dir):
    problems, count, worst = [], 0, (0.0, "")
    for path in sorted(pathlib.Path(lessons_dir).glob("*.toml")):
        lesson = tomllib.loads(path.read_text(encoding="utf-8"))
        lesson_id = lesson["lesson"].get("id", path.stem)
        dtype = lesson.get("model", {}).get("dtype", "f64")
        model = lesson.get("model", {})
        efficient = "tile" in model or model.get("attention", "softmax") == "linear"
        if dtype == "bf16" or (dtype != "f64" and ("layer" in lesson or efficient)):
            print(f"skip {lesson_id}: dtype {dtype} is not re-implemented here")
            continue
        golden_path = pathlib.Path(golden_dir) / f"{lesson_id}.toml"
        if not golden_path.exists():
            problems.append(f"{lesson_id}: no golden file {golden_path}")
            continue
        golden = tomllib.loads(golden_path.read_text(encoding="utf-8"))
        steps = recompute(lesson, golden_values(golden))
        found, fraction = compare(lesson_id, steps, golden)
        found += check_attended_claims(lesson_id, lesson)
        worst = max(worst, (fraction, lesson_id))
        problems += found
        count += 1
        print(f"{'ok  ' if not found else 'FAIL'} {lesson_id}: {len(steps)} steps")
    return problems, count, worst


def self_test(lessons_dir, golden_dir):
    """Alter one golden value in a copy by 1e-9; the cross-check must fail and name it."""
    with tempfile.TemporaryDirectory() as tmp:
        copy = pathlib.Path(tmp) / "golden"
        shutil.copytree(golden_dir, copy)
        target = copy / "river-bank.toml"
        text = target.read_text(encoding="utf-8")
        block = text.index('id = "head0.scores"')
        data = text.index("data = [", block)
        number = re.compile(r"-?\d+\.\d+(e-?\d+)?").search(text, data)
        altered = repr(float(number.group(0)) + 1e-9)
        target.write_text(text[:number.start()] + altered + text[number.end():], encoding="utf-8")
        run = subprocess.run([sys.executable, __file__, "--lessons", str(lessons_dir),
                              "--golden", str(copy)], capture_output=True, text=True)
        caught = run.returncode == 1 and "river-bank head0.scores [0, 0]" in run.stdout
        print(f"self-test: golden river-bank head0.scores [0, 0] altered by 1e-9: "
              f"{'detected' if caught else 'NOT detected'} (exit {run.returncode})")
        if not caught:
            print(run.stdout + run.stderr)
        return caught and self_test_attended(lessons_dir, golden_dir)


def self_test_attended(lessons_dir, golden_dir):
    """A window lesson whose attended-cells claim is off by one must fail, naming it."""
    with tempfile.TemporaryDirectory() as tmp:
        copy = pathlib.Path(tmp) / "lessons"
        shutil.copytree(lessons_dir, copy)
        target = copy / "sliding-window-global.toml"
        text = target.read_text(encoding="utf-8")
        target.write_text(text.replace("value = 29\n", "value = 30\n", 1), encoding="utf-8")
        run = subprocess.run([sys.executable, __file__, "--lessons", str(copy),
                              "--golden", str(golden_dir)], capture_output=True, text=True)
        caught = run.returncode == 1 and "stated 30, counted 29" in run.stdout
        print(f"self-test: sliding-window-global attended claim 29 -> 30: "
              f"{'detected' if caught else 'NOT detected'} (exit {run.returncode})")
        return caught


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lessons", default=ROOT / "lessons")
    parser.add_argument("--golden", default=ROOT / "golden")
    parser.add_argument("--self-test", action="store_true")
    args = parser.parse_args()
    if args.self_test:
        return 0 if self_test(args.lessons, args.golden) else 1
    problems, count, (worst, where) = crosscheck(args.lessons, args.golden)
    for p in problems:
        print("MISMATCH " + p)
    print(f"{count} lessons recomputed with numpy, each step from the golden values it reads; "
          f"{len(problems)} problem(s); largest difference {worst:.3g} of its bound ({where})")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
