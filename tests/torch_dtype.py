#!/usr/bin/python3
"""--dtype f32 / f16 / bf16 against PyTorch on the CPU (docs/numerics.md).

Usage: torch_dtype.py ATTN_TRACE [--lessons DIR] [--verbose]

Every lesson without an encoder layer is rebuilt in torch.float32,
torch.float16 and torch.bfloat16, as 002's code writes attention: inputs and
weights cast from float64, X @ W (+ b), Q_h @ K_hᵀ, / s, masked_fill, the
softmax in float32 cast back, weights @ V_h. Each step is compared with
`attn-trace run ID --format json --dtype D`: NaN and ±inf must sit in the same
cells, and every finite cell must be within a bound in units in the last place
(ulps) of the format. The largest difference per format is printed.

PyTorch 1.13 has no float16 matmul, exp or softmax on the CPU; there the test
computes them in float32 and casts the result to float16, which is what a
GPU's f16 GEMM with f32 accumulation returns. Torch's float32 matmul adds in a
blocked order with fused multiply-adds (the tool sums in order, rounding every
product and partial sum), and its exp is a vectorised approximation: so exact
equality is not promised, only the bound. Exit 77 (skipped) without torch.
"""
import argparse
import json
import math
import pathlib
import subprocess
import sys
import tomllib

try:
    import numpy as np
    import torch
except ModuleNotFoundError as missing:
    print(f"SKIPPED: {sys.executable} has no {missing.name} (apt-get install python3-torch)")
    sys.exit(77)  # CTest's SKIP_RETURN_CODE

from crosscheck import positional_encoding  # noqa: E402  (the same table, computed once)

ROOT = pathlib.Path(__file__).resolve().parent.parent
FORMATS = {"f32": torch.float32, "f16": torch.float16, "bf16": torch.bfloat16}
# (significand bits, smallest normal exponent) of each format, for ulps.
SHAPES = {"f32": (24, -126), "f16": (11, -14), "bf16": (8, -126)}
# The bound, in ulps of the format, that every finite cell must meet.
BOUND_ULPS = {"f32": 4, "f16": 1, "bf16": 1}


def ulps(a, b, fmt):
    """|a − b| in units in the last place of the format at max(|a|, |b|)."""
    p, emin = SHAPES[fmt]
    top = max(abs(a), abs(b))
    if top == 0:
        return 0.0
    exponent = max(math.frexp(top)[1] - 1, emin)
    return abs(a - b) / math.ldexp(1.0, exponent - (p - 1))


def torch_steps(lesson, fmt, mine):
    """Every step the comparison covers, computed by PyTorch in `fmt` from the
    tool's own values of the steps it is made from (`mine`), so that each
    operation is compared alone and a difference never carries forward."""
    dt = FORMATS[fmt]
    narrow = dt != torch.float32  # computed in float32, then cast

    def t(step_id):
        return torch.tensor(mine[step_id]).to(dt)  # exact: the tool's values are in the format

    def given(value, size=None):
        if value == "identity":
            value = np.eye(size)
        return torch.tensor(np.array(value, dtype=float), dtype=torch.float64).to(dt)

    def matmul(A, B):
        return (A.float() @ B.float()).to(dt) if narrow else A @ B

    model, inp, w = lesson.get("model", {}), lesson["input"], lesson["weights"]
    heads = model.get("heads", 1)
    steps = {"X": given(inp["X"])}
    n, d_model = steps["X"].shape
    X = t("X")
    pe_on = model.get("positional_encoding", "none") == "sinusoidal"
    if pe_on:
        steps["PE"] = torch.tensor(positional_encoding(n, d_model)).float().to(dt)
        steps["X+PE"] = t("X") + t("PE")
        X = t("X+PE")
    source = X
    if "memory" in inp:
        steps["memory"] = given(inp["memory"])
        source = t("memory")
        if pe_on:
            source = steps["memory+PE"] = source + torch.tensor(
                positional_encoding(*source.shape)).float().to(dt)
            source = t("memory+PE")

    def project(x, name, out, size):
        steps[name] = given(w[name], size)
        P = matmul(x, t(name))
        bias = "b_" + name[2:]
        if bias in w:
            steps[bias] = given([w[bias]])
            P = P + t(bias)
        steps[out] = P
        return t(out)

    Q = project(X, "W_Q", "Q", d_model)
    K = project(source, "W_K", "K", source.shape[1])
    V = project(source, "W_V", "V", source.shape[1])
    d_k, d_v = Q.shape[1] // heads, V.shape[1] // heads
    m = K.shape[0]  # each head reads the tool's own head{h}.Q, .K, .V
    scale = model.get("scale", "sqrt_dk")
    s = math.sqrt(d_k) if scale == "sqrt_dk" else 1.0 if scale == "none" else float(scale)
    masked_cells = torch.zeros((n, m), dtype=torch.bool)
    if model.get("causal", False):
        masked_cells |= torch.triu(torch.ones((n, m), dtype=torch.bool), diagonal=1)
    if "key_padding" in inp:
        masked_cells |= torch.tensor([bool(p) for p in inp["key_padding"]])[None, :]
    if "keep" in inp:
        masked_cells |= torch.tensor(inp["keep"]) == 0
    fill_spec = model.get("mask_fill", "-inf")
    # A 0-dim tensor: masked_fill refuses the Python number -1e9 for a float16
    # tensor ("cannot be converted to type at::Half without overflow").
    fill = torch.tensor(-math.inf if fill_spec == "-inf" else float(fill_spec),
                        dtype=torch.float64).to(dt)
    policy = model.get("masked_row", "nan")
    contexts = []
    for h in range(heads):
        p = f"head{h}."
        steps[p + "scores"] = matmul(t(p + "Q"), t(p + "K").T)
        steps[p + "scaled"] = t(p + "scores") / s
        steps[p + "masked"] = t(p + "scaled").masked_fill(masked_cells, fill)
        masked = t(p + "masked")
        steps[p + "exp"] = torch.exp(masked.float() if narrow else masked).to(dt)
        steps[p + "row_sum"] = t(p + "exp").float().sum(1, keepdim=True).to(dt)
        weights = torch.softmax(masked.float(), dim=-1).to(dt)
        for i in range(n):
            if torch.all(masked[i] == -math.inf) and policy != "nan":
                weights[i] = 0.0 if policy == "zero" else 1.0 / m
        steps[p + "weights"] = weights
        steps[p + "context"] = matmul(t(p + "weights"), t(p + "V"))
        contexts.append(t(p + "context"))
    if heads > 1:
        stacked = torch.stack([t(f"head{h}.weights") for h in range(heads)])
        steps["heads.mean"] = stacked.float().mean(0).to(dt)
        steps["heads.max"] = stacked.max(0).values
    steps["concat"] = torch.cat(contexts, dim=1)
    if "W_O" in w:
        project(t("concat"), "W_O", "output", steps["concat"].shape[1])
    return {k: v.double().numpy() for k, v in steps.items()}


def tool_steps(binary, lesson_id, fmt):
    out = subprocess.run([binary, "run", lesson_id, "--format", "json", "--dtype", fmt],
                         capture_output=True, text=True, check=True)
    trace = json.loads(out.stdout)
    assert trace["dtype"] == fmt, f"{lesson_id}: the JSON says dtype {trace.get('dtype')}"
    number = {"nan": math.nan, "inf": math.inf, "-inf": -math.inf}
    return {s["id"]: np.array([[number.get(x, x) if isinstance(x, str) else x for x in row]
                               for row in s["data"]], dtype=float) for s in trace["steps"]}


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("binary")
    parser.add_argument("--lessons", default=ROOT / "lessons", type=pathlib.Path)
    parser.add_argument("--verbose", action="store_true")
    args = parser.parse_args()
    failures = 0
    for fmt in FORMATS:
        worst = (0.0, "", "")  # (ulps, lesson, step)
        cells = exact = 0
        for path in sorted(args.lessons.glob("*.toml")):
            lesson = tomllib.loads(path.read_text())
            if "layer" in lesson:
                continue  # the encoder layer: f64 only here (torch_oracle.py)
            lesson_id = lesson.get("lesson", {}).get("id", path.stem)
            mine = tool_steps(args.binary, lesson_id, fmt)
            theirs = torch_steps(lesson, fmt, mine)
            for step, expected in theirs.items():
                got = mine[step]
                if got.shape != expected.shape:
                    print(f"FAIL {fmt} {lesson_id} {step}: shape {got.shape} vs {expected.shape}")
                    failures += 1
                    continue
                for (i, j), e in np.ndenumerate(expected):
                    g = got[i, j]
                    cells += 1
                    if math.isnan(e) or math.isnan(g) or math.isinf(e) or math.isinf(g):
                        same = (math.isnan(e) and math.isnan(g)) or e == g
                        exact += same
                        if not same:
                            print(f"FAIL {fmt} {lesson_id} {step}[{i},{j}]: {g} vs torch {e}")
                            failures += 1
                        continue
                    d = ulps(g, e, fmt)
                    exact += d == 0
                    if d > worst[0]:
                        worst = (d, lesson_id, f"{step}[{i},{j}]")
                    if d > BOUND_ULPS[fmt]:
                        print(f"FAIL {fmt} {lesson_id} {step}[{i},{j}]: {g!r} vs torch {e!r} "
                              f"({d:g} ulps > {BOUND_ULPS[fmt]})")
                        failures += 1
        print(f"{fmt}: {cells} cells, {exact} identical; largest difference {worst[0]:g} ulps "
              f"of {fmt} ({worst[1]} {worst[2]}); bound {BOUND_ULPS[fmt]} ulps")
    print("FAILED" if failures else "OK")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
