#!/usr/bin/python3
"""--dtype f32 / f16 / bf16 against PyTorch on the CPU (docs/numerics.md).

Usage: torch_dtype.py ATTN_TRACE [--lessons DIR] [--verbose] [--self-test]

Every lesson without an encoder layer is rebuilt in torch.float32,
torch.float16 and torch.bfloat16, as 002's code writes attention: inputs and
weights cast from float64, X @ W (+ b), Q_h @ K_hᵀ, / s, masked_fill, the
softmax in float32 cast back, weights @ V_h. Each step is compared with
`attn-trace run ID --format json --dtype D`, computed from the tool's own
values of the steps it reads (so each operation is compared alone): NaN and
±inf must sit in the same cells, and every finite cell must be within the
bound that floating point allows two correct implementations of that one
operation, whatever order each adds in (tests/bounds.py, docs/numerics.md):
2·γ_k·Σ|terms| for a product of k terms in f32 arithmetic (plus the rounding
to f16 or bf16), a few units of roundoff for one operation, the library's
ulps for exp. The largest difference per format is printed as a fraction of
its bound.

PyTorch 1.13 has no float16 matmul, exp or softmax on the CPU; there the test
computes them in float32 and casts the result to float16, which is what a
GPU's f16 GEMM with f32 accumulation returns. Torch's float32 matmul adds in
the blocked order of whichever OpenBLAS kernel runs (OPENBLAS_CORETYPE), with
fused multiply-adds; the tool sums in order, rounding every product and
partial sum; a sum that cancels to nearly 0 then differs by many ulps of
itself and still lies within the bound. --self-test alters one of the tool's
values by a little more than its bound and must see it fail. Exit 77
(skipped) without torch.
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

import bounds  # noqa: E402  (the order-independent bounds, shared by the Python tests)
from crosscheck import positional_encoding  # noqa: E402  (the same table, computed once)

ROOT = pathlib.Path(__file__).resolve().parent.parent
FORMATS = {"f32": torch.float32, "f16": torch.float16, "bf16": torch.bfloat16}


def torch_steps(lesson, fmt, mine):
    """Every step the comparison covers, computed by PyTorch in `fmt` from the
    tool's own values of the steps it is made from (`mine`), so that each
    operation is compared alone and a difference never carries forward; with
    each, the bound two correct results of that operation stay within:
    {step id: (value, bounds.Bound)}."""
    dt = FORMATS[fmt]
    narrow = dt != torch.float32  # computed in float32, then cast
    steps = {}

    def t(step_id):
        return torch.tensor(mine[step_id]).to(dt)  # exact: the tool's values are in the format

    def given(value, size=None):
        if value == "identity":
            value = np.eye(size)
        return torch.tensor(np.array(value, dtype=float), dtype=torch.float64).to(dt)

    def matmul(A, B):
        return (A.float() @ B.float()).to(dt) if narrow else A @ B

    def np_(step_id):
        return mine[step_id]

    model, inp, w = lesson.get("model", {}), lesson["input"], lesson["weights"]
    heads = model.get("heads", 1)
    steps["X"] = (given(inp["X"]), bounds.given(fmt))
    n, d_model = steps["X"][0].shape
    X = t("X")
    pe_on = model.get("positional_encoding", "none") == "sinusoidal"
    if pe_on:
        steps["PE"] = (torch.tensor(positional_encoding(n, d_model)).float().to(dt),
                       bounds.computed_in_double(fmt, bounds.positional_error(n, d_model)))
        steps["X+PE"] = (t("X") + t("PE"), bounds.elementwise(fmt))
        X = t("X+PE")
    source = X
    if "memory" in inp:
        steps["memory"] = (given(inp["memory"]), bounds.given(fmt))
        source = t("memory")
        if pe_on:
            # The memory's positions are not a step: each side adds its own
            # table (they may differ by PE's bound), then rounds the sum.
            table = positional_encoding(*source.shape)
            pe = bounds.computed_in_double(fmt, bounds.positional_error(*source.shape))
            steps["memory+PE"] = (source + torch.tensor(table).float().to(dt), bounds.Bound(
                pe.limit(table, table) * (1 + 4 * pe.relative), bounds.elementwise(fmt).relative))
            source = t("memory+PE")

    def project(x, name, out, size):
        steps[name] = (given(w[name], size), bounds.given(fmt))
        P = matmul(x, t(name))
        bias = "b_" + name[2:]
        b = None
        if bias in w:
            steps[bias] = (given([w[bias]]), bounds.given(fmt))
            P = P + t(bias)
            b = np_(bias)
        # the product rounded to the format, then the bias added and rounded: two stores
        steps[out] = (P, bounds.product(x.double().numpy(), np_(name), fmt, bias=b, stores=2))
        return t(out)

    Q = project(X, "W_Q", "Q", d_model)
    K = project(source, "W_K", "K", source.shape[1])
    project(source, "W_V", "V", source.shape[1])  # recorded in steps; each head reads head{h}.V
    d_k = Q.shape[1] // heads
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
    if "window" in model or "stride" in model:  # SPEC section 11 (self-attention: n = m)
        i, j = torch.arange(n)[:, None], torch.arange(m)[None, :]
        kept = (i - j).abs() <= model.get("window", 0)
        if "stride" in model:
            kept |= j % model["stride"] == model["stride"] - 1
        is_global = torch.zeros(n, dtype=torch.bool)
        is_global[model.get("global", [])] = True
        masked_cells |= ~(kept | is_global[:, None] | is_global[None, :])
    fill_spec = model.get("mask_fill", "-inf")
    # A 0-dim tensor: masked_fill refuses the Python number -1e9 for a float16
    # tensor ("cannot be converted to type at::Half without overflow").
    fill = torch.tensor(-math.inf if fill_spec == "-inf" else float(fill_spec),
                        dtype=torch.float64).to(dt)
    policy = model.get("masked_row", "nan")
    contexts = []
    encoding = model.get("positional_encoding", "none")
    for h in range(heads):
        p = f"head{h}."
        q, k = p + "Q", p + "K"
        if encoding == "rope":  # RoPE: q and k rotated in double, then stored in the format
            for x, rot in ((q, p + "q_rot"), (k, p + "k_rot")):
                steps[rot] = (rope(t(x).double()).to(dt), bounds.computed_in_double(
                    fmt, bounds.rope(np_(x), 0).absolute / 2))
            q, k = p + "q_rot", p + "k_rot"
        steps[p + "scores"] = (matmul(t(q), t(k).T), bounds.product(np_(q), np_(k).T, fmt))
        # s rounded to f32, the division (or a product by a rounded 1/s): three roundings
        steps[p + "scaled"] = (t(p + "scores") / s, bounds.elementwise(fmt, 3))
        scaled = p + "scaled"
        if encoding == "alibi":  # ALiBi: −m_h·|i − j| and its sum with scaled, each stored once
            distance = (torch.arange(n).unsqueeze(1) - torch.arange(m)).abs().double()
            steps[p + "alibi_bias"] = ((-(2.0 ** (-8.0 * (h + 1) / heads)) * distance).to(dt),
                                       bounds.elementwise(fmt))
            steps[p + "biased"] = ((t(scaled).double() + t(p + "alibi_bias").double()).to(dt),
                                   bounds.elementwise(fmt))
            scaled = p + "biased"
        # unmasked cells are the tool's own scaled values; masked ones the fill, rounded
        steps[p + "masked"] = (t(scaled).masked_fill(masked_cells, fill),
                               bounds.given(fmt).where(masked_cells.numpy(), bounds.exact()))
        masked = t(p + "masked")
        steps[p + "exp"] = (torch.exp(masked.float() if narrow else masked).to(dt),
                            bounds.library(fmt))
        steps[p + "row_sum"] = (t(p + "exp").float().sum(1, keepdim=True).to(dt),
                                bounds.row_sum(np_(p + "exp"), fmt))
        weights = torch.softmax(masked.float(), dim=-1).to(dt)
        no_key = torch.all(masked == -math.inf, dim=1).numpy()
        for i in range(n):
            if no_key[i] and policy != "nan":
                weights[i] = 0.0 if policy == "zero" else 1.0 / m
        # a row without keys is NaN, 0 or 1/m (rounded) on both sides
        steps[p + "weights"] = (weights, bounds.given(fmt).where(
            np.broadcast_to(no_key[:, None], (n, m)), bounds.softmax(np_(p + "masked"), fmt)))
        steps[p + "context"] = (matmul(t(p + "weights"), t(p + "V")),
                                bounds.product(np_(p + "weights"), np_(p + "V"), fmt))
        contexts.append(t(p + "context"))
    if heads > 1:
        stacked = torch.stack([t(f"head{h}.weights") for h in range(heads)])
        steps["heads.mean"] = (stacked.float().mean(0).to(dt), bounds.mean(stacked.double().numpy(), fmt))
        steps["heads.max"] = (stacked.max(0).values, bounds.exact())
    steps["concat"] = (torch.cat(contexts, dim=1), bounds.exact())
    if "W_O" in w:
        project(t("concat"), "W_O", "output", steps["concat"][0].shape[1])
    return {k: (v.double().numpy(), bound) for k, (v, bound) in steps.items()}


def tool_steps(binary, lesson_id, fmt):
    out = subprocess.run([binary, "run", lesson_id, "--format", "json", "--dtype", fmt],
                         capture_output=True, text=True, check=True)
    trace = json.loads(out.stdout)
    assert trace["dtype"] == fmt, f"{lesson_id}: the JSON says dtype {trace.get('dtype')}"
    number = {"nan": math.nan, "inf": math.inf, "-inf": -math.inf}
    return {s["id"]: np.array([[number.get(x, x) if isinstance(x, str) else x for x in row]
                               for row in s["data"]], dtype=float) for s in trace["steps"]}


class Tally:
    """Cells compared, cells identical, and the largest difference as a
    fraction of its bound, per format."""

    def __init__(self):
        self.cells = self.identical = 0
        self.worst = (0.0, "", "")  # (|a − b| / bound, lesson, step[cell])


def rope(x):
    """RoPE (docs/steps.md): row p's pairs (2i, 2i+1) turned by p·10000^(−2i/d), in float64."""
    n, d = x.shape
    angle = torch.arange(n, dtype=torch.float64).unsqueeze(1) * torch.pow(
        10000.0, -torch.arange(0, d, 2, dtype=torch.float64) / d)
    out = torch.empty_like(x)
    out[:, 0::2] = x[:, 0::2] * angle.cos() - x[:, 1::2] * angle.sin()
    out[:, 1::2] = x[:, 0::2] * angle.sin() + x[:, 1::2] * angle.cos()
    return out


def compare_lesson(lesson, lesson_id, fmt, mine, tally):
    """Failure lines for one lesson in one format (empty: every step within its bound)."""
    failures = []
    for step, (expected, bound) in torch_steps(lesson, fmt, mine).items():
        got = mine[step]
        if got.shape != expected.shape:
            failures.append(f"FAIL {fmt} {lesson_id} {step}: shape {got.shape} vs {expected.shape}")
            continue
        bad, worst = bounds.compare(got, expected, bound)
        tally.cells += got.size
        tally.identical += int(np.sum((got == expected) | (np.isnan(got) & np.isnan(expected))))
        if worst > tally.worst[0]:
            ratios = np.abs(got - expected) / np.maximum(bound.limit(got, expected), 1e-300)
            cell = np.unravel_index(np.nanargmax(np.where(np.isfinite(ratios), ratios, -1)),
                                    got.shape)
            tally.worst = (worst, lesson_id, f"{step}[{cell[0]},{cell[1]}]")
        for i, j in zip(*np.nonzero(bad)):
            g, e = got[i, j], expected[i, j]
            limit = np.broadcast_to(bound.limit(got, expected), got.shape)[i, j]
            failures.append(f"FAIL {fmt} {lesson_id} {step}[{i},{j}]: {g!r} vs torch {e!r} "
                            f"(|difference| {abs(g - e):.3g} > bound {limit:.3g})"
                            if np.isfinite(g) and np.isfinite(e) else
                            f"FAIL {fmt} {lesson_id} {step}[{i},{j}]: {g} vs torch {e}")
    return failures


def lessons_of(directory):
    """(lesson, id) of every lesson the comparison covers."""
    for path in sorted(directory.glob("*.toml")):
        lesson = tomllib.loads(path.read_text())
        if "layer" in lesson:
            continue  # the encoder layer: f64 only here (torch_oracle.py)
        if lesson.get("model", {}).get("attention", "softmax") == "linear":
            continue  # linear attention: in f64 against PyTorch in torch_tiles.py
        yield lesson, lesson.get("lesson", {}).get("id", path.stem)


def self_test(binary, directory):
    """One of the tool's values moved by 1.5 times its bound must fail, at that cell."""
    lesson = next(lesson for lesson, lesson_id in lessons_of(directory)
                  if lesson_id == "river-bank")
    ok = True
    for fmt, step in (("f32", "head0.context"), ("f16", "head0.scores"), ("bf16", "Q")):
        mine = tool_steps(binary, "river-bank", fmt)
        expected, bound = torch_steps(lesson, fmt, mine)[step]
        limit = float(np.broadcast_to(bound.limit(mine[step], expected), expected.shape)[0, 0])
        altered = {**mine, step: mine[step].copy()}
        altered[step][0, 0] = expected[0, 0] + 1.5 * max(limit, 1e-300)
        failures = compare_lesson(lesson, "river-bank", fmt, altered, Tally())
        caught = any(f.startswith(f"FAIL {fmt} river-bank {step}[0,0]:") for f in failures)
        print(f"self-test: {fmt} river-bank {step}[0,0] moved 1.5 bounds ({limit:.3g}) from "
              f"torch's: {'detected' if caught else 'NOT detected'}")
        ok &= caught
    print("OK" if ok else "FAILED")
    return 0 if ok else 1


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("binary")
    parser.add_argument("--lessons", default=ROOT / "lessons", type=pathlib.Path)
    parser.add_argument("--verbose", action="store_true")
    parser.add_argument("--self-test", action="store_true")
    args = parser.parse_args()
    if args.self_test:
        return self_test(args.binary, args.lessons)
    failures = []
    for fmt in FORMATS:
        tally = Tally()
        for lesson, lesson_id in lessons_of(args.lessons):
            mine = tool_steps(args.binary, lesson_id, fmt)
            found = compare_lesson(lesson, lesson_id, fmt, mine, tally)
            if args.verbose or found:
                print(f"{'FAIL' if found else 'ok  '} {fmt} {lesson_id}")
            failures += found
        worst, lesson_id, where = tally.worst
        print(f"{fmt}: {tally.cells} cells, {tally.identical} identical; largest difference "
              f"{worst:.3g} of its bound ({lesson_id} {where})")
    for line in failures:
        print(line)
    print("FAILED" if failures else "OK")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
