#!/usr/bin/python3
"""The backward pass derived by hand in numpy (no autograd), against attn-trace:
every `grad.*` step of every lesson with a [backward] table in lessons/ and of
seeded random lessons (heads, K/V groups, masks, cross-attention, biases, W_O,
sinusoidal / RoPE / ALiBi positions, Post-LN and Pre-LN encoder layers with
ReLU or GELU, an upstream gradient or the half_sq loss).

Each lesson is run through `attn-trace run FILE --format json`. Its forward
steps are first recomputed here from the lesson's numbers (the given steps of
the JSON: X, memory, weights, biases, gammas and betas) and must agree to
1e-12; then the chain rule is applied step by step by the formulas of
docs/backward.md (dA = dC·Vᵀ, dS = A ⊙ (dA − rowsum(dA ⊙ A)), dQ = dS·K,
LayerNorm's three-term formula, ...) and every `grad.*` step must agree to
1e-12, `grad.head{h}.row_dot` and `grad.head{h}.jacobian` by their formulas.
A difference is measured against the scale of the step: |tool − here| ≤
1e-12 · max(1, largest finite |value| of the step here); NaN and ±inf must sit
in the same cells. Cells of the scores' gradients that a mask covers must be
exactly 0.

Third check, central finite differences of the loss (L = Σ upstream ⊙ result
or ½‖result − target‖²) computed by the forward here: a few cells of X and
W_Q and one unmasked cell of head0.scores, h = 1e-6, each within
1e-6 · max(1, |gradient|) + 1e-9 · max(1, |L|) of the tool's grad.X, grad.W_Q
and grad.head0.scores (the truncation error is O(h²) ≈ 1e-12 times the third
derivative, and rounding in L costs about 1e-16·|L| / h = 1e-10·|L|).

The module is also the shared part of tests/torch_backward.py (the lesson
model, the random lessons, the forward with hooks, the comparison).

Usage: numpy_backward.py [BINARY] [--random N] [--seed S] [--lessons DIR]
                         [--no-backward] [--self-test] [--keep DIR]
"""
import argparse
import json
import math
import pathlib
import random
import subprocess
import sys
import tempfile
import tomllib
import zlib

try:
    import numpy as np
except ModuleNotFoundError as missing:
    print(f"SKIPPED: {sys.executable} has no {missing.name} (apt-get install python3-numpy)")
    sys.exit(77)  # CTest's SKIP_RETURN_CODE

ROOT = pathlib.Path(__file__).resolve().parent.parent
TOLERANCE = 1e-12  # relative to max(1, the step's largest finite |value|)
FD_STEP, FD_RELATIVE, FD_LOSS = 1e-6, 1e-6, 1e-9
INF = math.inf


# ---------------------------------------------------------------- the tool ---


def run_tool(binary, path):
    """({step id: ndarray}, the step order, a crash note or None) from `run PATH
    --format json`; should that crash, the numbers are still read from
    `golden PATH --out TMP` (no formulas are rendered there), and the note
    says so, so the crash fails the test but does not hide the numbers."""
    result = subprocess.run([str(binary), "run", str(path), "--format", "json"],
                            capture_output=True, text=True)
    if result.returncode >= 0:
        if result.returncode != 0:
            raise RuntimeError(f"{path}: attn-trace exit {result.returncode}: "
                               f"{result.stderr.strip()}")
        doc = json.loads(result.stdout)
        steps = {s["id"]: to_array(s["data"], s["shape"]) for s in doc["steps"]}
        return steps, [s["id"] for s in doc["steps"]], None
    note = (f"{pathlib.Path(path).name}: `attn-trace run FILE --format json` crashed "
            f"(signal {-result.returncode}); numbers read from `attn-trace golden` instead")
    with tempfile.TemporaryDirectory() as out:
        golden = subprocess.run([str(binary), "golden", str(path), "--out", out],
                                capture_output=True, text=True)
        files = list(pathlib.Path(out).glob("*.toml"))
        if golden.returncode != 0 or len(files) != 1:
            raise RuntimeError(note.split(";")[0] + f", and `golden` exit {golden.returncode}")
        doc = tomllib.loads(files[0].read_text(encoding="utf-8"))
    steps = {s["id"]: to_array(s["data"], s["shape"]) for s in doc["step"]}
    return steps, [s["id"] for s in doc["step"]], note


def to_array(data, shape):
    def number(v):
        return float(v) if not isinstance(v, str) else {"nan": math.nan, "inf": INF,
                                                         "-inf": -INF}[v]
    rows = data if not data or isinstance(data[0], list) else [data]
    return np.array([[number(v) for v in row] for row in rows], dtype=float).reshape(shape)


# ---------------------------------------------------------- lesson model ----


class Model:
    """What the forward pass needs besides numbers, read from the lesson file."""

    def __init__(self, lesson, given):
        model = lesson.get("model", {})
        self.heads = model.get("heads", 1)
        self.kv_heads = model.get("kv_heads", self.heads)
        self.d_k = given["W_Q"].shape[1] // self.heads
        self.d_v = given["W_V"].shape[1] // self.kv_heads
        scale = model.get("scale", "sqrt_dk")
        self.scale = math.sqrt(self.d_k) if scale == "sqrt_dk" else 1.0 if scale == "none" \
            else float(scale)
        fill = model.get("mask_fill", "-inf")
        self.fill = -INF if fill == "-inf" else float(fill)
        self.masked_row = model.get("masked_row", "nan")
        self.pe = model.get("positional_encoding", "none")
        self.layer = lesson.get("layer")
        if self.layer is not None:
            self.layer = {"norm": self.layer.get("norm", "post"),
                          "activation": self.layer.get("activation", "relu"),
                          "eps": float(self.layer.get("eps", 1e-5)),
                          "residual": self.layer.get("residual", True)}
        n = given["X"].shape[0]
        m = given["memory"].shape[0] if "memory" in given else n
        self.blocked = blocked(lesson, n, m)
        self.full_rows = self.blocked.all(axis=1) if self.fill == -INF else np.zeros(n, bool)
        self.backward = lesson.get("backward")


def blocked(lesson, n, m):
    """(n, m) True where a mask covers the cell: causal, key padding, keep and
    the window / stride / global pattern (docs/lesson-format.md)."""
    model, inp = lesson.get("model", {}), lesson["input"]
    i, j = np.arange(n)[:, None], np.arange(m)[None, :]
    out = np.zeros((n, m), bool)
    if model.get("causal", False):
        out |= j > i
    if "key_padding" in inp:
        out |= np.array([bool(p) for p in inp["key_padding"]])[None, :]
    if "keep" in inp:
        out |= np.array(inp["keep"], dtype=float) == 0
    if "window" in model or "stride" in model:
        w = model.get("window", 0)
        near = (0 <= i - j) & (i - j <= w) if model.get("causal", False) else abs(i - j) <= w
        kept = near
        if "stride" in model:
            s = model["stride"]
            kept = kept | (j % s == s - 1)
        for g in model.get("global", []):
            kept = kept | (i == g) | (j == g)
        out |= ~kept
    return out


GIVEN = ["X", "memory", "W_Q", "b_Q", "W_K", "b_K", "W_V", "b_V", "W_O", "b_O", "W_1", "b_1",
         "W_2", "b_2", "ln1_gamma", "ln1_beta", "ln2_gamma", "ln2_beta"]


def load(binary, path, lesson=None):
    """(lesson dict, Model, given numbers, tool steps, tool step order, crash note)."""
    lesson = lesson or tomllib.loads(pathlib.Path(path).read_text(encoding="utf-8"))
    steps, order, note = run_tool(binary, path)
    given = {k: steps[k] for k in GIVEN if k in steps}
    return lesson, Model(lesson, given), given, steps, order, note


def sinusoidal(rows, d):
    pos = np.arange(rows, dtype=float)[:, None]
    i = (np.arange(d) // 2).astype(float)[None, :]
    angle = pos / np.power(10000.0, 2 * i / d)
    return np.where(np.arange(d)[None, :] % 2 == 0, np.sin(angle), np.cos(angle))


def rope_angles(rows, d):
    theta = np.power(10000.0, -np.arange(0, d, 2, dtype=float) / d)
    return np.arange(rows, dtype=float)[:, None] * theta[None, :]


def alibi(h, heads, n, m):
    slope = 2.0 ** (-8.0 * (h + 1) / heads)
    return -slope * np.abs(np.arange(n)[:, None] - np.arange(m)[None, :]).astype(float)


def result_id(model, given):
    return "layer.output" if model.layer else "output" if "W_O" in given else "concat"


# --------------------------------------------------- forward, any array lib --


class NumpyOps:
    """The array operations the forward needs, on numpy arrays."""
    requires_grad = False

    def leaf(self, name, value):
        return value.copy()

    def const(self, value):
        return np.asarray(value, dtype=float)

    def where(self, cond, a, b):
        return np.where(cond, a, b)

    def softmax(self, x):
        with np.errstate(invalid="ignore"):
            e = np.exp(x - x.max(axis=1, keepdims=True))
            return e / e.sum(axis=1, keepdims=True)

    def cat(self, parts):
        return np.concatenate(parts, axis=1)

    def sqrt(self, x):
        return np.sqrt(x)

    def relu(self, x):
        return np.maximum(x, 0.0)

    def erf(self, x):
        return np.vectorize(math.erf)(x)

    def mean(self, x):
        return x.mean(axis=1, keepdims=True)

    def detach(self, x):
        return x


def forward(model, given, ops, record):
    """Every forward step the backward pass goes through, as docs/steps.md
    defines it; record(id, value) keeps a step and returns the value to go on
    with (a hook may move a cell)."""
    leaf = {k: record(k, ops.leaf(k, v)) for k, v in given.items()}
    x = leaf["X"]
    if model.pe == "sinusoidal":
        x = record("X+PE", x + ops.const(sinusoidal(*given["X"].shape)))
    source = None
    if "memory" in leaf:
        source = leaf["memory"]
        if model.pe == "sinusoidal":
            source = record("memory+PE", source + ops.const(sinusoidal(*given["memory"].shape)))
    lay = model.layer
    attn_in = layer_norm(model, ops, record, x, "1", leaf) if lay and lay["norm"] == "pre" else x
    output = attention(model, ops, record, leaf, attn_in, attn_in if source is None else source)
    if not lay:
        return output
    return encoder(model, ops, record, leaf, x, output)


def project(ops, record, leaf, letter, x):
    p = x @ leaf["W_" + letter]
    return record(letter, p + leaf["b_" + letter] if "b_" + letter in leaf else p)


def attention(model, ops, record, leaf, x, source):
    """Q, K, V, every head, concat and output; returns the attention's result."""
    Q, K, V = (project(ops, record, leaf, "Q", x), project(ops, record, leaf, "K", source),
               project(ops, record, leaf, "V", source))
    contexts = [head(model, ops, record, h, Q, K, V) for h in range(model.heads)]
    concat = record("concat", ops.cat(contexts))
    if "W_O" not in leaf:
        return concat
    out = concat @ leaf["W_O"]
    return record("output", out + leaf["b_O"] if "b_O" in leaf else out)


def rotate(ops, x, angle):
    """RoPE: pairs (2i, 2i+1) of row p turned by angle[p, i]."""
    c, s = ops.const(np.cos(angle)), ops.const(np.sin(angle))
    a, b = x[:, 0::2], x[:, 1::2]
    first, second = a * c - b * s, a * s + b * c
    n, d = x.shape
    order = [first[:, i // 2:i // 2 + 1] if i % 2 == 0 else second[:, i // 2:i // 2 + 1]
             for i in range(d)]
    return ops.cat(order)


def head(model, ops, record, h, Q, K, V):
    d_k, d_v, g = model.d_k, model.d_v, h // (model.heads // model.kv_heads)
    q = record(f"head{h}.Q", Q[:, h * d_k:(h + 1) * d_k])
    k = record(f"head{h}.K", K[:, g * d_k:(g + 1) * d_k])
    v = record(f"head{h}.V", V[:, g * d_v:(g + 1) * d_v])
    if model.pe == "rope":
        q = record(f"head{h}.q_rot", rotate(ops, q, rope_angles(q.shape[0], d_k)))
        k = record(f"head{h}.k_rot", rotate(ops, k, rope_angles(k.shape[0], d_k)))
    scores = record(f"head{h}.scores", q @ k.T)
    biased = scaled = record(f"head{h}.scaled", scores / model.scale)
    if model.pe == "alibi":
        bias = alibi(h, model.heads, *model.blocked.shape)
        record(f"head{h}.alibi_bias", ops.const(bias))
        biased = record(f"head{h}.biased", scaled + ops.const(bias))
    masked = record(f"head{h}.masked", ops.where(ops.const(model.blocked), ops.const(model.fill),
                                                  biased))
    weights = record(f"head{h}.weights", softmax_policy(model, ops, masked))
    with np.errstate(over="ignore", invalid="ignore"):
        e = np.exp(np.asarray(ops.detach(masked)))
        record(f"head{h}.exp", ops.const(e))
        record(f"head{h}.row_sum", ops.const(e.sum(axis=1, keepdims=True)))
    return record(f"head{h}.context", weights @ v)


def softmax_policy(model, ops, masked):
    """softmax row by row; a fully masked row (fill -inf) is 0 or 1/m by the
    lesson's policy, a constant, or NaN as the plain softmax gives."""
    full = model.full_rows
    if not full.any() or model.masked_row == "nan":
        return ops.softmax(masked)
    rows = ops.const(np.repeat(full[:, None], masked.shape[1], axis=1))
    safe = ops.softmax(ops.where(rows, ops.const(0.0), masked))
    value = 0.0 if model.masked_row == "zero" else 1.0 / masked.shape[1]
    return ops.where(rows, ops.const(value), safe)


def layer_norm(model, ops, record, x, k, leaf):
    mean = record(f"layer.ln{k}.mean", ops.mean(x))
    var = record(f"layer.ln{k}.var", ops.mean((x - mean) * (x - mean)))
    norm = record(f"layer.ln{k}.normalised", (x - mean) / ops.sqrt(var + model.layer["eps"]))
    return record(f"layer.ln{k}", norm * leaf[f"ln{k}_gamma"] + leaf[f"ln{k}_beta"])


def ffn(model, ops, record, leaf, x):
    hidden = x @ leaf["W_1"]
    hidden = record("layer.ffn.hidden", hidden + leaf["b_1"] if "b_1" in leaf else hidden)
    if model.layer["activation"] == "relu":
        act = ops.relu(hidden)
    else:
        act = hidden * (1.0 + ops.erf(hidden / math.sqrt(2.0))) / 2.0
    act = record("layer.ffn.activation", act)
    out = act @ leaf["W_2"]
    return record("layer.ffn.out", out + leaf["b_2"] if "b_2" in leaf else out)


def encoder(model, ops, record, leaf, x, output):
    """[layer] residual = false: each residual step is the sub-layer's output alone."""
    skip = (lambda a, b: a + b) if model.layer["residual"] else (lambda a, b: b)
    r1 = record("layer.residual1", skip(x, output))
    if model.layer["norm"] == "post":
        h = layer_norm(model, ops, record, r1, "1", leaf)
        r2 = record("layer.residual2", skip(h, ffn(model, ops, record, leaf, h)))
        return record("layer.output", layer_norm(model, ops, record, r2, "2", leaf))
    h2 = layer_norm(model, ops, record, r1, "2", leaf)
    r2 = record("layer.residual2", skip(r1, ffn(model, ops, record, leaf, h2)))
    return record("layer.output", r2)


def numpy_forward(model, given, hook=None):
    """({step id: value}, result) with numpy; hook(id, value) may move a cell."""
    found = {}

    def record(name, value):
        if hook is not None:
            value = hook(name, value)
        found.setdefault(name, value)
        return value

    with np.errstate(invalid="ignore"):
        result = forward(model, given, NumpyOps(), record)
    return found, result


NO_GRADIENT = ("exp", "row_sum", "alibi_bias")


def loss_of(model, result):
    """(L, dL/d(result)) of the lesson's [backward] table."""
    table = model.backward
    if table.get("loss") == "half_sq":
        diff = result - np.array(table["target"], dtype=float)
        return 0.5 * float((diff * diff).sum()), diff
    upstream = np.array(table["upstream"], dtype=float)
    return float((upstream * result).sum()), upstream


# ------------------------------------------------------ backward by hand ----


def numpy_backward(model, given, found):
    """{"grad.<id>": value} by the chain rule written out step by step."""
    _, top = loss_of(model, found[result_id(model, given)])
    g = {}
    pre = model.layer is not None and model.layer["norm"] == "pre"
    d_output, d_x = encoder_back(model, given, found, top, g) if model.layer else (top, 0.0)
    if "W_O" in given:
        g["grad.output"] = d_output
        g["grad.W_O"] = found["concat"].T @ d_output
        if "b_O" in given:
            g["grad.b_O"] = d_output.sum(axis=0, keepdims=True)
        d_concat = d_output @ given["W_O"].T
    else:
        d_concat = d_output
    g["grad.concat"] = d_concat
    dQ, dK, dV = heads_back(model, found, d_concat, g)
    x = found["X+PE"] if "X+PE" in found else found["X"]
    source = found.get("memory+PE", found.get("memory"))
    attn_in = found["layer.ln1"] if pre else x
    d_in, d_src = projections_back(given, attn_in, source, dQ, dK, dV, g)
    if pre:
        d_in = layer_norm_back(model, found, given, "1", d_in, g)
    inputs_back(model, given, d_in + d_x, d_src, g)
    return g


def heads_back(model, found, d_concat, g):
    d_v, d_k = model.d_v, model.d_k
    n = d_concat.shape[0]
    dQ = np.zeros((n, model.heads * d_k))
    dK = np.zeros((found["K"].shape[0], model.kv_heads * d_k))
    dV = np.zeros((found["V"].shape[0], model.kv_heads * d_v))
    for h in range(model.heads):
        grp = h // (model.heads // model.kv_heads)
        dq, dk, dv = head_back(model, found, h, d_concat[:, h * d_v:(h + 1) * d_v], g)
        dQ[:, h * d_k:(h + 1) * d_k] = dq
        dK[:, grp * d_k:(grp + 1) * d_k] += dk
        dV[:, grp * d_v:(grp + 1) * d_v] += dv
    g["grad.Q"], g["grad.K"], g["grad.V"] = dQ, dK, dV
    return dQ, dK, dV


def head_back(model, found, h, dC, g):
    p = f"head{h}."
    A, V = found[p + "weights"], found[p + "V"]
    g["grad." + p + "context"] = dC
    dA = g["grad." + p + "weights"] = dC @ V.T
    g["grad." + p + "V"] = A.T @ dC
    D = (dA * A).sum(axis=1, keepdims=True)
    dM = A * (dA - D)
    if model.masked_row != "nan":
        dM[model.full_rows, :] = 0.0
    g["grad." + p + "masked"] = dM
    d_scaled = np.where(model.blocked, 0.0, dM)
    if model.pe == "alibi":
        g["grad." + p + "biased"] = d_scaled
    g["grad." + p + "scaled"] = d_scaled
    dS = g["grad." + p + "scores"] = d_scaled / model.scale
    q, k = (found[p + "q_rot"], found[p + "k_rot"]) if model.pe == "rope" else \
        (found[p + "Q"], found[p + "K"])
    dq, dk = dS @ k, dS.T @ q
    if model.pe == "rope":
        g["grad." + p + "q_rot"], g["grad." + p + "k_rot"] = dq, dk
        dq = unrotate(dq, rope_angles(dq.shape[0], model.d_k))
        dk = unrotate(dk, rope_angles(dk.shape[0], model.d_k))
    g["grad." + p + "Q"], g["grad." + p + "K"] = dq, dk
    return dq, dk, g["grad." + p + "V"]


def unrotate(d, angle):
    """The transpose of RoPE's rotation (a turn by −angle) applied to a gradient."""
    c, s = np.cos(angle), np.sin(angle)
    out = np.empty_like(d)
    a, b = d[:, 0::2], d[:, 1::2]
    out[:, 0::2] = a * c + b * s
    out[:, 1::2] = -a * s + b * c
    return out


def projections_back(given, attn_in, source, dQ, dK, dV, g):
    """Weights and biases of Q, K and V; (dL/d(the queries' input), dL/d(memory
    input) or None in self-attention, where it is added to the first)."""
    keys_in = attn_in if source is None else source
    d_in = d_src = 0.0
    for letter, x, d in (("Q", attn_in, dQ), ("K", keys_in, dK), ("V", keys_in, dV)):
        g["grad.W_" + letter] = x.T @ d
        if "b_" + letter in given:
            g["grad.b_" + letter] = d.sum(axis=0, keepdims=True)
        if letter == "Q":
            d_in = d @ given["W_Q"].T
        else:
            d_src = d_src + d @ given["W_" + letter].T
    if source is None:
        return d_in + d_src, None
    return d_in, d_src


def inputs_back(model, given, d_x, d_src, g):
    if model.pe == "sinusoidal":
        g["grad.X+PE"] = d_x
    g["grad.X"] = d_x
    if d_src is not None:
        if model.pe == "sinusoidal":
            g["grad.memory+PE"] = d_src
        g["grad.memory"] = d_src


def layer_norm_back(model, found, given, k, dy, g):
    """dL/dx of LayerNorm k from dL/dy, filling its sub-steps' gradients."""
    pre = f"layer.ln{k}"
    xhat, var = found[pre + ".normalised"], found[pre + ".var"]
    eps, d = model.layer["eps"], xhat.shape[1]
    sigma = np.sqrt(var + eps)
    centred = xhat * sigma
    g["grad." + pre] = dy
    g[f"grad.ln{k}_gamma"] = (dy * xhat).sum(axis=0, keepdims=True)
    g[f"grad.ln{k}_beta"] = dy.sum(axis=0, keepdims=True)
    dxhat = g["grad." + pre + ".normalised"] = dy * given[f"ln{k}_gamma"]
    dvar = g["grad." + pre + ".var"] = (dxhat * centred).sum(axis=1, keepdims=True) * \
        (-0.5) * sigma ** -3
    dmean = -(dxhat / sigma).sum(axis=1, keepdims=True) + \
        dvar * (-2.0 / d) * centred.sum(axis=1, keepdims=True)
    g["grad." + pre + ".mean"] = dmean
    return dxhat / sigma + dvar * 2.0 * centred / d + dmean / d


def ffn_back(model, given, found, d_out, x, g):
    """dL/dx of the feed-forward network from dL/d(its output)."""
    g["grad.layer.ffn.out"] = d_out
    act, hidden = found["layer.ffn.activation"], found["layer.ffn.hidden"]
    g["grad.W_2"] = act.T @ d_out
    if "b_2" in given:
        g["grad.b_2"] = d_out.sum(axis=0, keepdims=True)
    d_act = g["grad.layer.ffn.activation"] = d_out @ given["W_2"].T
    if model.layer["activation"] == "relu":
        slope = (hidden > 0).astype(float)
    else:
        cdf = (1.0 + np.vectorize(math.erf)(hidden / math.sqrt(2.0))) / 2.0
        slope = cdf + hidden * np.exp(-hidden * hidden / 2.0) / math.sqrt(2.0 * math.pi)
    d_hidden = g["grad.layer.ffn.hidden"] = d_act * slope
    g["grad.W_1"] = x.T @ d_hidden
    if "b_1" in given:
        g["grad.b_1"] = d_hidden.sum(axis=0, keepdims=True)
    return d_hidden @ given["W_1"].T


def encoder_back(model, given, found, top, g):
    """(dL/d(output), dL/d(X or X+PE) through the residual) of an encoder layer;
    without residual sums ([layer] residual = false) the second is 0."""
    r = 1.0 if model.layer["residual"] else 0.0
    g["grad.layer.output"] = top
    if model.layer["norm"] == "post":
        d_r2 = g["grad.layer.residual2"] = layer_norm_back(model, found, given, "2", top, g)
        d_ln1 = r * d_r2 + ffn_back(model, given, found, d_r2, found["layer.ln1"], g)
        d_r1 = layer_norm_back(model, found, given, "1", d_ln1, g)
    else:
        g["grad.layer.residual2"] = top
        d_ln2 = ffn_back(model, given, found, top, found["layer.ln2"], g)
        d_r1 = r * top + layer_norm_back(model, found, given, "2", d_ln2, g)
    g["grad.layer.residual1"] = d_r1
    return d_r1, r * d_r1


def formula_steps(model, found, grads):
    """grad.head{h}.row_dot (D_i = Σ_k dA[i, k]·A[i, k]) and grad.head{h}.jacobian
    (J[i, j] = A[r, i]·(δ_ij − A[r, j]) for the lesson's jacobian_row r)."""
    r = model.backward.get("jacobian_row", 0)
    out = {}
    for h in range(model.heads):
        A, dA = found[f"head{h}.weights"], grads[f"grad.head{h}.weights"]
        out[f"grad.head{h}.row_dot"] = (dA * A).sum(axis=1, keepdims=True)
        a = A[r]
        out[f"grad.head{h}.jacobian"] = np.diag(a) - np.outer(a, a)
    return out


# ------------------------------------------------------------ random lessons -


def number(v):
    return repr(float(v))


def matrix_toml(M):
    return "[" + ", ".join("[" + ", ".join(number(v) for v in row) + "]" for row in M) + "]"


def random_masks(r, n, m, cross):
    """Mask keys of [model] and [input] (TOML lines each), drawn."""
    model, inp = [], []
    if r.random() < 1 / 3:
        model.append("causal = true")
    if r.random() < 1 / 4:
        inp.append("key_padding = [" + ", ".join("true" if r.random() < 0.25 else "false"
                                                 for _ in range(m)) + "]")
    if r.random() < 1 / 5:
        inp.append("keep = " + matrix_toml([[0 if r.random() < 0.2 else 1 for _ in range(m)]
                                            for _ in range(n)]).replace(".0", ""))
    if not cross and r.random() < 1 / 8:
        model.append(f"window = {r.randint(0, 2)}")
        if r.random() < 0.5:
            model.append(f"stride = {r.randint(1, 3)}")
        if r.random() < 0.5:
            model.append(f"global = [{r.randint(0, n - 1)}]")
    return model, inp


def random_lesson_text(seed, with_backward=True):
    """A lesson drawn from seed: every feature the backward pass goes through."""
    r = random.Random(seed)

    def mat(a, b):
        return matrix_toml([[r.uniform(-2, 2) for _ in range(b)] for _ in range(a)])

    layer = r.random() < 0.3
    heads = r.randint(1, 3)
    kv = r.choice([k for k in range(1, heads + 1) if heads % k == 0])
    pe = r.choice(["none", "sinusoidal", "rope", "alibi"])
    d_k = r.choice([2, 4]) if pe == "rope" else r.randint(1, 4)
    d_v, n, d_model = r.randint(1, 4), r.randint(1, 6), r.randint(1, 6)
    cross = not layer and r.random() < 1 / 3
    m, d_mem = (r.randint(1, 6), r.randint(1, 5)) if cross else (n, d_model)
    scale = r.choice(['"sqrt_dk"', '"none"', number(r.uniform(0.5, 4.0))])
    fill = r.choice(['"-inf"', "-1e9", "-65504"])
    policy = r.choice(["nan", "zero", "uniform"])
    forced = seed % 12 == 0 or seed % 50 == 25  # a query with every key masked, fill -inf
    if forced:
        fill, policy = '"-inf"', ("zero", "uniform")[seed // 12 % 2] if seed % 12 == 0 else "nan"
    model = [f"heads = {heads}", f"kv_heads = {kv}", f"scale = {scale}", f"mask_fill = {fill}",
             f'masked_row = "{policy}"', f'positional_encoding = "{pe}"']
    full_ok = (policy != "nan" and seed % 8 == 0) or fill != '"-inf"'
    for _ in range(50):
        mask_model, mask_input = random_masks(r, n, m, cross)
        probe = tomllib.loads("[model]\n" + "\n".join(mask_model) + "\n[input]\n" +
                              "\n".join(mask_input))
        if full_ok or not blocked(probe, n, m).all(axis=1).any():
            break
    else:
        mask_model, mask_input = [], []
    if forced:
        rows = [[0] * m] + [[int(r.random() >= 0.2) for _ in range(m)] for _ in range(n - 1)]
        mask_input = [k for k in mask_input if not k.startswith("keep")] + \
            ["keep = " + str(rows)]
    lines = [f'[lesson]\nid = "random-{seed}"\n', "[model]", *model, *mask_model, "",
             "[input]", f"X = {mat(n, d_model)}", *mask_input]
    if cross:
        lines.append(f"memory = {mat(m, d_mem)}")
    lines += ["", "[weights]", f"W_Q = {mat(d_model, heads * d_k)}",
              f"W_K = {mat(d_mem, kv * d_k)}", f"W_V = {mat(d_mem, kv * d_v)}"]
    for letter, width in (("Q", heads * d_k), ("K", kv * d_k), ("V", kv * d_v)):
        if r.random() < 0.5:
            lines.append(f"b_{letter} = {mat(1, width)[1:-1]}")
    d_out = d_model if layer else r.randint(1, 5)
    if layer or r.random() < 0.5:
        lines.append(f"W_O = {mat(heads * d_v, d_out)}")
        if r.random() < 0.5:
            lines.append(f"b_O = {mat(1, d_out)[1:-1]}")
    else:
        d_out = heads * d_v
    if layer:
        lines += layer_lines(r, mat, d_model)
    if with_backward:
        lines += backward_lines(r, mat, n, d_out)
    return "\n".join(lines) + "\n"


def layer_lines(r, mat, d_model):
    d_ff = r.randint(1, 6)
    lines = [f"W_1 = {mat(d_model, d_ff)}", f"W_2 = {mat(d_ff, d_model)}"]
    for key, width in (("b_1", d_ff), ("b_2", d_model), ("ln1_gamma", d_model),
                       ("ln1_beta", d_model), ("ln2_gamma", d_model), ("ln2_beta", d_model)):
        if r.random() < 0.6:
            lines.append(f"{key} = {mat(1, width)[1:-1]}")
    lines += ["", "[layer]", 'kind = "encoder"', f'norm = "{r.choice(["post", "pre"])}"',
              f'activation = "{r.choice(["relu", "gelu"])}"']
    if r.random() < 0.3:
        lines.append(f"eps = {number(r.choice([1e-3, 1e-6, 0.5]))}")
    if r.random() < 0.25:
        lines.append("residual = false")
    return lines


def backward_lines(r, mat, n, d_out):
    lines = ["", "[backward]"]
    if r.random() < 0.5:
        lines += ['loss = "half_sq"', f"target = {mat(n, d_out)}"]
    else:
        lines.append(f"upstream = {mat(n, d_out)}")
    lines.append(f"jacobian_row = {r.randint(0, n - 1)}")
    return lines


# ------------------------------------------------------------- comparison ---


class Tally:
    """Lessons, steps and cells compared, the largest differences, the problems."""

    def __init__(self, name):
        self.name, self.lessons, self.steps, self.cells = name, 0, 0, 0
        self.worst, self.worst_abs, self.worst_at, self.problems = 0.0, 0.0, "", []
        self.worst_own = 0.0  # the same against max(1, the step's own largest |value|)

    def compare(self, lesson_id, ref, tool, ids, running=False):
        """Each step of ids against ref; with running, the scale of a step is the
        largest |value| of it and of every step before it in ids (the backward
        order), else of the step alone; at least 1 either way."""
        carried = 1.0
        for sid in ids:
            if sid not in tool:
                self.problems.append(f"{lesson_id} {sid}: missing from attn-trace's output")
                continue
            want = np.asarray(ref[sid], dtype=float)
            finite = want[np.isfinite(want)]
            largest = float(np.abs(finite).max()) if finite.size else 0.0
            carried = max(carried, largest) if running else max(1.0, largest)
            diff = self.compare_step(lesson_id, sid, want, tool[sid], carried)
            self.worst_own = max(self.worst_own, diff / max(1.0, largest))
            if not running:
                carried = 1.0

    def compare_step(self, lesson_id, sid, want, got, scale):
        if want.shape != got.shape:
            self.problems.append(f"{lesson_id} {sid}: shape {got.shape}, expected {want.shape}")
            return 0.0
        finite = np.isfinite(want)
        same = (got == want) | (np.isnan(got) & np.isnan(want))
        both = finite & np.isfinite(got)
        with np.errstate(invalid="ignore"):
            diff = np.where(both, np.abs(got - want), 0.0)
        bad = ~same & ~(both & (diff <= TOLERANCE * scale))
        self.steps += 1
        self.cells += want.size
        if diff.size and diff.max() / scale > self.worst:
            self.worst, self.worst_at = float(diff.max()) / scale, f"{lesson_id} {sid}"
        self.worst_abs = max(self.worst_abs, float(diff.max()) if diff.size else 0.0)
        for r, c in list(np.argwhere(bad))[:1]:
            self.problems.append(
                f"{lesson_id} {sid} [{r}, {c}]: attn-trace {got[r, c]!r}, {self.name} "
                f"{want[r, c]!r} (difference {abs(got[r, c] - want[r, c]):.3g}, allowed "
                f"{TOLERANCE * scale:.3g}; {int(bad.sum())} cell(s) of {want.size} off)")
        return float(diff.max()) if diff.size else 0.0

    def exact_zeros(self, lesson_id, model, tool):
        """Masked cells of the scores' gradients, and the masked steps' rows of
        fully masked rows under "zero"/"uniform", must be exactly 0."""
        for h in range(model.heads):
            for step in ("scaled", "scores", "biased"):
                sid = f"grad.head{h}.{step}"
                if sid in tool and np.any(tool[sid][model.blocked] != 0):
                    self.problems.append(f"{lesson_id} {sid}: a masked cell is not exactly 0")
            sid = f"grad.head{h}.masked"
            if model.masked_row != "nan" and sid in tool and \
                    np.any(tool[sid][model.full_rows] != 0):
                self.problems.append(f"{lesson_id} {sid}: a fully masked row is not 0")

    def report(self, of="the step's scale"):
        own = f" ({self.worst_own:.3g} of the step's own)" if self.worst_own > self.worst else ""
        print(f"{self.name}: {self.lessons} lessons, {self.steps} steps, {self.cells} cells "
              f"compared; largest difference {self.worst:.3g} of {of}{own} ({self.worst_at}), "
              f"largest absolute {self.worst_abs:.3g}; {len(self.problems)} problem(s)")
        crashes = [p for p in self.problems if "crashed" in p]
        for p in [p for p in self.problems if "crashed" not in p][:40] + crashes[:5]:
            print("MISMATCH " + p)
        if len(crashes) > 5:
            print(f"MISMATCH ... and {len(crashes) - 5} more lessons where `run` crashed")


def check_lesson(oracle, tallies, path, lesson, binary, alter=None):
    """Run one lesson and compare its forward and backward steps with `oracle`
    (a function (model, given) -> (forward steps, grad steps or None)), in
    tallies = (forward, backward)."""
    tally, back = tallies
    lesson, model, given, tool, order, note = load(binary, path, lesson)
    if note:
        tally.problems.append(note)
    if alter:
        alter(model, tool)
    lesson_id = lesson.get("lesson", {}).get("id", pathlib.Path(path).stem)
    found, grads = oracle(model, given)
    tally.lessons += 1
    tally.compare(lesson_id, found, tool, sorted(found))
    if grads is None:
        return model, given, tool
    back.lessons += 1
    grads.update(formula_steps(model, found, grads))
    extra = sorted(s for s in tool if s.startswith("grad.") and s not in grads)
    back.problems += [f"{lesson_id} {s}: a gradient step no oracle recomputes" for s in extra]
    backward = [s for s in order if s in grads] + sorted(s for s in grads if s not in tool)
    back.compare(lesson_id, grads, tool, backward, running=True)
    back.exact_zeros(lesson_id, model, tool)
    return model, given, tool


def numpy_oracle(model, given):
    found, _ = numpy_forward(model, given)
    grads = numpy_backward(model, given, found) if model.backward else None
    return found, grads


# ------------------------------------------------------ finite differences --


def fd_cells(model, given, r):
    """(step, cell) pairs to difference: two of X, two of W_Q, one open score."""
    cells = []
    for sid in ("X", "W_Q"):
        rows, cols = given[sid].shape
        cells += [(sid, (r.randrange(rows), r.randrange(cols))) for _ in range(2)]
    open_cells = np.argwhere(~model.blocked)
    if len(open_cells):
        i, j = open_cells[r.randrange(len(open_cells))]
        cells.append(("head0.scores", (int(i), int(j))))
    return cells


def fd_loss(model, given, sid, cell, delta):
    if sid in given:
        moved = {k: v.copy() for k, v in given.items()}
        moved[sid][cell] += delta
        _, result = numpy_forward(model, moved)
    else:
        def hook(name, value):
            if name != sid:
                return value
            value = value.copy()
            value[cell] += delta
            return value
        _, result = numpy_forward(model, given, hook)
    return loss_of(model, result)[0]


def fd_check(tally, lesson_id, model, given, tool, seed):
    """Central differences of L against grad.X, grad.W_Q, grad.head0.scores."""
    r = random.Random(seed)
    for sid, cell in fd_cells(model, given, r):
        h = FD_STEP * max(1.0, abs(given[sid][cell])) if sid in given else FD_STEP
        up, down = fd_loss(model, given, sid, cell, h), fd_loss(model, given, sid, cell, -h)
        if not (math.isfinite(up) and math.isfinite(down)):
            continue
        fd = (up - down) / (2 * h)
        got = tool["grad." + sid][cell]
        allowed = FD_RELATIVE * max(1.0, abs(fd)) + FD_LOSS * max(1.0, abs(up))
        tally.cells += 1
        if abs(got - fd) / allowed >= tally.worst:
            tally.worst, tally.worst_at = abs(got - fd) / allowed, f"{lesson_id} grad.{sid}"
        tally.worst_abs = max(tally.worst_abs, abs(got - fd))
        if not abs(got - fd) <= allowed:
            tally.problems.append(f"{lesson_id} grad.{sid} [{cell[0]}, {cell[1]}]: attn-trace "
                                  f"{got!r}, central difference {fd!r} (allowed {allowed:.3g})")
    tally.lessons += 1


# ------------------------------------------------------------------- runs ---


def lesson_files(args, tmp):
    """(path, lesson) of every embedded lesson whose numbers are f64 softmax
    attention (the forward check; those with [backward] also backward), then
    the random lessons written to tmp."""
    out = []
    for path in sorted(pathlib.Path(args.lessons).glob("*.toml")):
        lesson = tomllib.loads(path.read_text(encoding="utf-8"))
        model = lesson.get("model", {})
        if model.get("dtype", "f64") == "f64" and model.get("attention", "softmax") == "softmax":
            out.append((path, lesson))
    for seed in range(args.seed, args.seed + args.random):
        path = pathlib.Path(tmp) / f"random-{seed}.toml"
        path.write_text(random_lesson_text(seed, not args.no_backward), encoding="utf-8")
        out.append((path, tomllib.loads(path.read_text(encoding="utf-8"))))
    return out


def coverage(lessons):
    """One line: how many of the lessons have each feature."""
    count = {}

    def seen(feature, yes=True):
        if yes:
            count[feature] = count.get(feature, 0) + 1

    for _, lesson in lessons:
        model, inp, w = lesson.get("model", {}), lesson["input"], lesson["weights"]
        seen("[backward]", "backward" in lesson)
        seen("half_sq", lesson.get("backward", {}).get("loss") == "half_sq")
        seen(f"heads {model.get('heads', 1)}")
        seen("kv_heads < heads", model.get("kv_heads", model.get("heads", 1)) <
             model.get("heads", 1))
        seen("memory", "memory" in inp)
        seen(model.get("positional_encoding", "none"))
        for key in ("causal", "window"):
            seen(key, bool(model.get(key)))
        for key in ("key_padding", "keep"):
            seen(key, key in inp)
        for key in ("W_O", "b_Q", "b_K", "b_V", "b_O"):
            seen(key, key in w)
        layer = lesson.get("layer")
        if layer is not None:
            seen(f"layer {layer.get('norm', 'post')}-LN {layer.get('activation', 'relu')}")
        n, m = len(inp["X"]), len(inp.get("memory", inp["X"]))
        full = blocked(lesson, n, m).all(axis=1).any()
        seen(f"fully masked row ({model.get('masked_row', 'nan')}, fill "
             f"{model.get('mask_fill', '-inf')})", full)
    return ", ".join(f"{k} {v}" for k, v in sorted(count.items()))


def summary(lessons):
    """One line: the embedded lessons and what the random ones cover."""
    drawn = [(p, lesson) for p, lesson in lessons if p.stem.startswith("random-")]
    embedded = [lesson for p, lesson in lessons if not p.stem.startswith("random-")]
    return (f"embedded lessons: {len(embedded)} (f64 softmax), "
            f"{sum('backward' in lesson for lesson in embedded)} with [backward]; "
            f"random lessons: {len(drawn)}: {coverage(drawn)}")


def common_arguments(doc):
    parser = argparse.ArgumentParser(description=doc.splitlines()[0])
    parser.add_argument("binary", nargs="?", default=ROOT / "build" / "attn-trace")
    parser.add_argument("--lessons", default=ROOT / "lessons")
    parser.add_argument("--random", type=int, default=120, help="random lessons (default 120)")
    parser.add_argument("--seed", type=int, default=1, help="first seed (default 1)")
    parser.add_argument("--no-backward", action="store_true",
                        help="random lessons without [backward] (forward check only)")
    parser.add_argument("--self-test", action="store_true")
    return parser.parse_args()


def self_test(oracle, name, binary, args):
    """A gradient of the tool moved by 1e-9 must be caught: one nonzero cell of
    grad.head0.scores, grad.W_Q and grad.X, each in the first random lesson
    from its seed on where that step has one."""
    caught = 0
    with tempfile.TemporaryDirectory() as tmp:
        for first, sid in ((2, "grad.head0.scores"), (6, "grad.W_Q"), (10, "grad.X")):
            for seed in range(first, first + 20):
                moved = moved_cell(oracle, name, binary, tmp, seed, sid)
                if moved is not None:
                    break
            hit = moved is not None and moved[1]
            caught += hit
            print(f"self-test: {moved[0] if moved else sid} moved by 1e-9: "
                  f"{'detected' if hit else 'NOT detected'}")
    return 0 if caught == 3 else 1


def moved_cell(oracle, name, binary, tmp, seed, sid):
    """(cell's label, caught) after moving the first nonzero cell of sid, or None."""
    path = pathlib.Path(tmp) / f"random-{seed}.toml"
    path.write_text(random_lesson_text(seed), encoding="utf-8")
    moved = []

    def alter(model, tool):
        cells = np.argwhere(np.isfinite(tool[sid]) & (tool[sid] != 0))
        if len(cells):
            r, c = (int(v) for v in cells[0])
            tool[sid][r, c] += 1e-9
            moved.append(f"random-{seed} {sid} [{r}, {c}]")

    tallies = (Tally(name), Tally(name))
    check_lesson(oracle, tallies, path, None, binary, alter)
    if not moved:
        return None
    return moved[0], any(p.startswith(moved[0]) for p in tallies[1].problems)


def main():
    args = common_arguments(__doc__)
    if args.self_test:
        return self_test(numpy_oracle, "numpy", args.binary, args)
    tallies = (Tally("numpy forward"), Tally("numpy gradients"))
    fd = Tally("central differences")
    with tempfile.TemporaryDirectory() as tmp:
        lessons = lesson_files(args, tmp)
        print(summary(lessons))
        for path, lesson in lessons:
            try:
                model, given, tool = check_lesson(numpy_oracle, tallies, path, lesson,
                                                  args.binary)
            except RuntimeError as error:
                tallies[0].problems.append(str(error))
                continue
            if model.backward:
                fd_check(fd, path.stem, model, given, tool, zlib.crc32(path.stem.encode()))
    for tally in tallies:
        tally.report()
    if not args.no_backward:
        fd.report("the allowed difference")
    return 0 if not any(t.problems for t in (*tallies, fd)) else 1


if __name__ == "__main__":
    sys.exit(main())
