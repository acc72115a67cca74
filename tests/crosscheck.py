#!/usr/bin/python3
"""Independent proof of the golden files: recompute every step of every lesson
from the lesson file alone with numpy, and compare with golden/<id>.toml.

Usage: crosscheck.py [--lessons DIR] [--golden DIR] [--tol 1e-12] [--self-test]

Nothing here calls attn-trace: the lesson format (docs/lesson-format.md) and the math
(the same document) are re-implemented from the documentation, so a golden file
written by the tool is never its own only proof. --self-test also proves that
this script notices an altered golden value (it must fail on a tampered copy).
Exit 77 (skipped) when this Python has no numpy.
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
    bf16 lessons are not cross-checked here (tests/torch_dtype.py covers them)."""

    def __init__(self, dtype):
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


def layer_norm(steps, w, k, x, eps):
    """LayerNorm number k of x, as the trace shows it: mean, var, normalised, gamma, beta,
    result. The variance is biased (divided by d)."""
    d = x.shape[1]
    mean = x.mean(axis=1, keepdims=True)
    var = ((x - mean) ** 2).sum(axis=1, keepdims=True) / d
    normalised = (x - mean) / np.sqrt(var + eps)
    gamma = np.array([w.get(f"ln{k}_gamma", [1.0] * d)], dtype=float)
    beta = np.array([w.get(f"ln{k}_beta", [0.0] * d)], dtype=float)
    out = gamma * normalised + beta
    steps += [(f"layer.ln{k}.mean", mean), (f"layer.ln{k}.var", var),
              (f"layer.ln{k}.normalised", normalised), (f"ln{k}_gamma", gamma),
              (f"ln{k}_beta", beta), (f"layer.ln{k}", out)]
    return out


def gelu(x):
    """The exact GELU, x·Φ(x) with Φ by erf."""
    return np.vectorize(lambda v: 0.5 * v * (1.0 + math.erf(v / math.sqrt(2.0))))(x)


def recompute(lesson):
    """Every step of the lesson, in trace order: [(id, matrix)]."""
    model = lesson.get("model", {})
    inp = lesson["input"]
    w = lesson["weights"]
    heads = model.get("heads", 1)
    num = Numbers(model.get("dtype", "f64"))
    X = num.given(np.array(inp["X"], dtype=float))
    n, d_model = X.shape
    steps = [("X", X)]
    pe_on = model.get("positional_encoding", "none") == "sinusoidal"
    if pe_on:
        PE = num.store(positional_encoding(n, d_model))
        X = num.store(X + PE)
        steps += [("PE", PE), ("X+PE", X)]
    source = X
    if "memory" in inp:
        source = num.given(np.array(inp["memory"], dtype=float))
        steps.append(("memory", source))
        if pe_on:
            source = num.store(source + num.store(positional_encoding(*source.shape)))
            steps.append(("memory+PE", source))
    m, d_mem = source.shape
    layer = lesson.get("layer")
    eps = float(layer.get("eps", 1e-5)) if layer else 0.0
    pre_ln = bool(layer) and layer.get("norm", "post") == "pre"
    x_in = X  # the layer's input (X, or X+PE): the residual sums start from it
    if pre_ln:
        X = source = layer_norm(steps, w, 1, X, eps)

    def given_weights(name, size):
        """The weight matrix (and bias) as steps, as the trace shows them."""
        W = num.given(matrix(w[name], size))
        steps.append((name, W))
        bias = "b_" + name[2:]  # W_Q -> b_Q, W_1 -> b_1
        if bias in w:
            steps.append((bias, num.given(np.array([w[bias]], dtype=float))))
        return W, (num.given(np.array(w[bias], dtype=float)) if bias in w else 0.0)

    def project(inputs, letter, name, size):
        W, b = given_weights(name, size)
        P = num.store(num.matmul(inputs, W) + b)
        steps.append((letter, P))
        return P

    Q = project(X, "Q", "W_Q", d_model)
    K = project(source, "K", "W_K", d_mem)
    V = project(source, "V", "W_V", d_mem)
    d_k = Q.shape[1] // heads
    d_v = V.shape[1] // heads
    scale = model.get("scale", "sqrt_dk")
    s = math.sqrt(d_k) if scale == "sqrt_dk" else 1.0 if scale == "none" else float(scale)

    masked_cells = np.zeros((n, m), dtype=bool)
    if model.get("causal", False):
        masked_cells |= np.triu(np.ones((n, m), dtype=bool), k=1)
    if "key_padding" in inp:
        masked_cells |= np.array([bool(p) for p in inp["key_padding"]])[None, :]
    if "keep" in inp:
        masked_cells |= np.array(inp["keep"]) == 0
    fill_spec = model.get("mask_fill", "-inf")
    fill = num.given(-np.inf if fill_spec == "-inf" else float(fill_spec))
    policy = model.get("masked_row", "nan")

    contexts = []
    for h in range(heads):
        Qh, Kh = Q[:, h * d_k:(h + 1) * d_k], K[:, h * d_k:(h + 1) * d_k]
        Vh = V[:, h * d_v:(h + 1) * d_v]
        scores = num.matmul(Qh, Kh.T)
        scaled = num.store(scores / num.scalar(s))
        masked = np.where(masked_cells, fill, scaled)
        exps = num.store(np.exp(masked))
        row_sum = num.row_sum(exps)
        weights = num.softmax_rows(masked)
        for i in range(n):
            if masked[i].max() == -np.inf:
                weights[i] = {"nan": np.nan, "zero": 0.0, "uniform": 1.0 / m}[policy]
        context = num.matmul(weights, Vh)
        contexts.append(context)
        p = f"head{h}."
        steps += [(p + "Q", Qh), (p + "K", Kh), (p + "V", Vh), (p + "scores", scores),
                  (p + "scaled", scaled), (p + "masked", masked), (p + "exp", exps),
                  (p + "row_sum", row_sum), (p + "weights", weights), (p + "context", context)]
    if heads > 1:
        stacked = np.stack([dict(steps)[f"head{h}.weights"] for h in range(heads)])
        steps += [("heads.mean", num.store(stacked.mean(axis=0))), ("heads.max", stacked.max(axis=0))]
    concat = np.hstack(contexts)
    steps.append(("concat", concat))
    if "W_O" in w:
        output = project(concat, "output", "W_O", concat.shape[1])
    if layer:  # Post-LN: y = LN2(h + FFN(h)), h = LN1(x + out); Pre-LN: y = h + FFN(LN2(h)), h = x + out
        residual1 = x_in + output
        steps.append(("layer.residual1", residual1))
        h = residual1 if pre_ln else layer_norm(steps, w, 1, residual1, eps)
        ffn_in = layer_norm(steps, w, 2, h, eps) if pre_ln else h
        hidden = project(ffn_in, "layer.ffn.hidden", "W_1", None)
        act = gelu(hidden) if layer.get("activation", "relu") == "gelu" else np.maximum(hidden, 0)
        steps.append(("layer.ffn.activation", act))
        ffn_out = project(act, "layer.ffn.out", "W_2", None)
        residual2 = h + ffn_out
        steps.append(("layer.residual2", residual2))
        y = residual2 if pre_ln else layer_norm(steps, w, 2, residual2, eps)
        steps.append(("layer.output", y))
    if lesson.get("decode", {}).get("kv_cache", False):
        steps += decode_with_cache(w, X, heads, d_k, d_v, s, contexts)
    return steps


def decode_with_cache(w, X, heads, d_k, d_v, s, contexts):
    """[decode] kv_cache: token by token, as a decoder with a KV cache runs.
    Step t projects token t alone (x_t·W + b), appends its key and value rows
    to each head's cache, and attends from its query over the cache; then per
    head the largest |difference| of each step's context from the full one."""
    d_model = X.shape[1]

    def weights_of(name):
        bias = "b_" + name[2:]
        return matrix(w[name], d_model), (np.array(w[bias], dtype=float) if bias in w else 0.0)

    (W_Q, b_Q), (W_K, b_K), (W_V, b_V) = weights_of("W_Q"), weights_of("W_K"), weights_of("W_V")
    K_cache = [np.zeros((0, d_k)) for _ in range(heads)]
    V_cache = [np.zeros((0, d_v)) for _ in range(heads)]
    decoded = [[] for _ in range(heads)]
    steps = []
    for t in range(X.shape[0]):
        x = X[t:t + 1]
        q_all, k_all, v_all = x @ W_Q + b_Q, x @ W_K + b_K, x @ W_V + b_V
        for h in range(heads):
            q = q_all[:, h * d_k:(h + 1) * d_k]
            K_cache[h] = np.vstack([K_cache[h], k_all[:, h * d_k:(h + 1) * d_k]])
            V_cache[h] = np.vstack([V_cache[h], v_all[:, h * d_v:(h + 1) * d_v]])
            scores = q @ K_cache[h].T
            scaled = scores / s
            weights = softmax_rows(scaled)
            context = weights @ V_cache[h]
            decoded[h].append(context)
            p = f"decode.t{t}.head{h}."
            steps += [(p + "q", q), (p + "K_cache", K_cache[h].copy()),
                      (p + "V_cache", V_cache[h].copy()), (p + "scores", scores),
                      (p + "scaled", scaled), (p + "weights", weights), (p + "context", context)]
    for h in range(heads):
        difference = np.abs(np.vstack(decoded[h]) - contexts[h]).max(axis=1, keepdims=True)
        assert difference.max() <= 1e-12, f"head {h}: decoding differs by {difference.max()}"
        steps.append((f"decode.head{h}.check", difference))
    return steps


def same(golden, computed, tol):
    if math.isnan(golden) or math.isnan(computed):
        return math.isnan(golden) and math.isnan(computed)
    if math.isinf(golden) or math.isinf(computed):
        return golden == computed
    return abs(golden - computed) <= tol


GOLDEN_GIVEN_CELLS = 4096  # a larger matrix the lesson gives is not in its golden file


def given(step_id):
    """A matrix the lesson file itself gives (inputs, weights, biases, LayerNorm's)."""
    return (step_id in ("X", "memory") or step_id.startswith(("W_", "b_"))
            or step_id.endswith(("_gamma", "_beta")))


def compare(lesson_id, steps, golden, tol):
    """Problems found, one line each (empty: the golden file is proven)."""
    problems = []
    steps = [(sid, v) for sid, v in steps if not (given(sid) and v.size > GOLDEN_GIVEN_CELLS)]
    if golden.get("golden", {}).get("lesson") != lesson_id:
        problems.append(f"{lesson_id}: golden file names lesson {golden.get('golden')}")
    kept = golden.get("step", [])
    ids = [g["id"] for g in kept]
    if ids != [sid for sid, _ in steps]:
        problems.append(f"{lesson_id}: golden steps {ids} but recomputed {[s for s, _ in steps]}")
        return problems
    for (sid, value), g in zip(steps, kept):
        data = np.array(g["data"], dtype=float).reshape(g["shape"])
        if data.shape != value.shape:
            problems.append(f"{lesson_id} {sid}: golden shape {data.shape}, numpy {value.shape}")
            continue
        for (r, c), gv in np.ndenumerate(data):
            if not same(gv, value[r, c], tol):
                problems.append(f"{lesson_id} {sid} [{r}, {c}]: golden {gv!r}, numpy "
                                f"{value[r, c]!r}")
                break
    return problems


def crosscheck(lessons_dir, golden_dir, tol):
    problems, count = [], 0
    for path in sorted(pathlib.Path(lessons_dir).glob("*.toml")):
        lesson = tomllib.loads(path.read_text(encoding="utf-8"))
        lesson_id = lesson["lesson"].get("id", path.stem)
        dtype = lesson.get("model", {}).get("dtype", "f64")
        if dtype == "bf16" or (dtype != "f64" and "layer" in lesson):
            print(f"skip {lesson_id}: dtype {dtype} is not re-implemented here")
            continue
        golden_path = pathlib.Path(golden_dir) / f"{lesson_id}.toml"
        if not golden_path.exists():
            problems.append(f"{lesson_id}: no golden file {golden_path}")
            continue
        steps = recompute(lesson)
        golden = tomllib.loads(golden_path.read_text(encoding="utf-8"))
        found = compare(lesson_id, steps, golden, tol)
        problems += found
        count += 1
        print(f"{'ok  ' if not found else 'FAIL'} {lesson_id}: {len(steps)} steps")
    return problems, count


def self_test(lessons_dir, golden_dir, tol):
    """Alter one golden value in a copy; the cross-check must fail and name it."""
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
                              "--golden", str(copy), "--tol", repr(tol)],
                             capture_output=True, text=True)
        caught = run.returncode == 1 and "river-bank head0.scores [0, 0]" in run.stdout
        print(f"self-test: golden river-bank head0.scores [0, 0] altered by 1e-9: "
              f"{'detected' if caught else 'NOT detected'} (exit {run.returncode})")
        if not caught:
            print(run.stdout + run.stderr)
        return caught


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lessons", default=ROOT / "lessons")
    parser.add_argument("--golden", default=ROOT / "golden")
    parser.add_argument("--tol", type=float, default=1e-12)
    parser.add_argument("--self-test", action="store_true")
    args = parser.parse_args()
    if args.self_test:
        return 0 if self_test(args.lessons, args.golden, args.tol) else 1
    problems, count = crosscheck(args.lessons, args.golden, args.tol)
    for p in problems:
        print("MISMATCH " + p)
    print(f"{count} lessons recomputed with numpy; {len(problems)} problem(s) at tolerance "
          f"{args.tol:g}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
