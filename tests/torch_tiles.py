#!/usr/bin/python3
"""The tiled softmax and linear attention against PyTorch, float64.

Usage: torch_tiles.py [--lessons DIR] [--golden DIR] [--self-test]

For every lesson with [model] tile: each head's head{h}.tiled_context (the
tool's FlashAttention arithmetic, block by block) against PyTorch's ordinary
attention of the tool's head{h}.Q, K and V: softmax(QKᵀ/s + mask)·V written
with torch ops (torch 1.13 has no scaled_dot_product_attention), the mask a
float -inf where the lesson masks; a row with every key masked follows the
lesson's masked_row policy. For every lesson with attention = "linear": each
head's head{h}.context, head{h}.linear_weights and head{h}.normaliser against
linear attention written from its formula with torch.nn.functional.elu:
φ(x) = elu(x) + 1, context = φ(Q)(φ(K)ᵀV) / (φ(Q)·Σ_j φ(k_j)).

Each comparison allows twice the error a float64 computation of the formula
can make from the same Q, K and V in any order (tests/bounds.py's Carried and
Higham's γ): the tiles reorder the softmax's sum and add a rescale per key
block, PyTorch adds in its own order, and neither is the other's reference.
--self-test moves one golden value of each kind by 1.5 times its bound and
must see the comparison fail. Exit 77 (skipped) without torch.
"""
import argparse
import pathlib
import sys
import tomllib

try:
    import numpy as np
    import torch
    import torch.nn.functional as F
except ModuleNotFoundError as missing:
    print(f"SKIPPED: {sys.executable} has no {missing.name} (apt-get install python3-torch)")
    sys.exit(77)  # CTest's SKIP_RETURN_CODE

import bounds  # noqa: E402  (the order-independent bounds, shared by the Python tests)

ROOT = pathlib.Path(__file__).resolve().parent.parent
U = bounds.FORMATS["f64"].u


def golden_values(golden):
    return {g["id"]: np.array(g["data"], dtype=float).reshape(g["shape"])
            for g in golden.get("step", [])}


def blocked(lesson, n, m):
    """(n, m) True where the lesson masks: causal, key padding, keep == 0."""
    model, inp = lesson.get("model", {}), lesson["input"]
    cells = np.zeros((n, m), dtype=bool)
    if model.get("causal", False):
        cells |= np.triu(np.ones((n, m), dtype=bool), k=1)
    if "key_padding" in inp:
        cells |= np.array([bool(p) for p in inp["key_padding"]])[None, :]
    if "keep" in inp:
        cells |= np.array(inp["keep"]) == 0
    return cells


def torch_attention(Q, K, V, mask, s, policy):
    """softmax(QKᵀ/s + mask)·V in torch, float64; rows with every key masked by `policy`."""
    q, k, v = (torch.tensor(x, dtype=torch.float64) for x in (Q, K, V))
    additive = torch.zeros(mask.shape, dtype=torch.float64).masked_fill(
        torch.tensor(mask), float("-inf"))
    weights = torch.softmax(q @ k.T / s + additive, dim=-1)
    context = (weights @ v).numpy()
    empty = mask.all(axis=1)
    context[empty] = {"nan": np.nan, "zero": 0.0, "uniform": V.mean(axis=0)}[policy]
    return context


def tiled_bound(Q, K, V, mask, s, tile):
    """Twice the error of a float64 attention of Q, K, V in any order, and the
    tiles' own: each key block adds a rescale (exp, a product) to every term."""
    C = bounds.Carried
    scaled = bounds.carried_product(C(Q), C(K).T, divisor=s, extra=2)
    scaled = C(np.where(mask, -np.inf, scaled.value), np.where(mask, 0.0, scaled.error))
    weights = bounds.carried_softmax(scaled)
    context = bounds.carried_product(weights, C(V))
    blocks = -(-K.shape[0] // tile[1])
    rescales = (2 * bounds.LIBRARY_ULPS + 4) * U * blocks * (weights.value @ np.abs(V))
    return 2 * (context.error + rescales)


def tiled_cases(lesson, values):
    """(label, step id, PyTorch's value, bound) of each head's tiled context."""
    model = lesson.get("model", {})
    heads = model.get("heads", 1)
    for h in range(heads):
        Q, K, V = (values[f"head{h}.{x}"] for x in "QKV")
        scale = model.get("scale", "sqrt_dk")
        s = np.sqrt(Q.shape[1]) if scale == "sqrt_dk" else 1.0 if scale == "none" else float(scale)
        mask = blocked(lesson, Q.shape[0], K.shape[0])
        theirs = torch_attention(Q, K, V, mask, s, model.get("masked_row", "nan"))
        yield (f"head{h}.tiled_context vs torch softmax(QKᵀ/s + mask)·V", f"head{h}.tiled_context",
               theirs, tiled_bound(Q, K, V, mask, s, model["tile"]))


def linear_cases(lesson, values):
    """(label, step id, PyTorch's value, bound) of each head's linear attention."""
    for h in range(lesson.get("model", {}).get("heads", 1)):
        Q, K, V = (torch.tensor(values[f"head{h}.{x}"], dtype=torch.float64) for x in "QKV")
        phi_q, phi_k = F.elu(Q) + 1, F.elu(K) + 1
        norm = phi_q @ phi_k.sum(dim=0, keepdim=True).T
        context = (phi_q @ (phi_k.T @ V)) / norm
        weights = (phi_q @ phi_k.T) / norm
        # φ: expm1 and + 1 (LIBRARY_ULPS + 2 ulps each side); the sums: γ of their terms
        g = bounds.gamma(K.shape[0] + Q.shape[1] + 4, U) + 4 * (bounds.LIBRARY_ULPS + 2) * U
        abs_context = (phi_q @ (phi_k.T @ V.abs())) / norm
        yield (f"head{h}.context vs φ(Q)(φ(K)ᵀV)/normaliser (F.elu)", f"head{h}.context",
               context.numpy(), 4 * g * abs_context.numpy())
        yield (f"head{h}.linear_weights vs φ(q)·φ(k)/normaliser", f"head{h}.linear_weights",
               weights.numpy(), 4 * g * weights.numpy())
        yield (f"head{h}.normaliser vs φ(Q)·Σφ(K)", f"head{h}.normaliser", norm.numpy(),
               2 * g * norm.numpy())


def cases(lesson, values):
    model = lesson.get("model", {})
    if "tile" in model:
        yield from tiled_cases(lesson, values)
    if model.get("attention", "softmax") == "linear":
        yield from linear_cases(lesson, values)


def lessons_with_variants(lessons_dir, golden_dir):
    """(lesson id, lesson, golden values) of every lesson with tiles or linear attention."""
    for path in sorted(pathlib.Path(lessons_dir).glob("*.toml")):
        lesson = tomllib.loads(path.read_text(encoding="utf-8"))
        model = lesson.get("model", {})
        if "tile" not in model and model.get("attention", "softmax") != "linear":
            continue
        if model.get("dtype", "f64") != "f64":
            continue  # the narrow formats show their own difference (tiled_check)
        lesson_id = lesson["lesson"].get("id", path.stem)
        golden = tomllib.loads((pathlib.Path(golden_dir) / f"{lesson_id}.toml")
                               .read_text(encoding="utf-8"))
        yield lesson_id, lesson, golden_values(golden)


def run(lessons_dir, golden_dir, alter=None):
    """Problems found (one line each) and the number of comparisons. `alter`:
    (step id, factor) moves cell [0, 0] of that golden step by factor × its bound."""
    problems, count = [], 0
    for lesson_id, lesson, values in lessons_with_variants(lessons_dir, golden_dir):
        for label, step_id, theirs, bound in cases(lesson, values):
            ours = values[step_id].copy()
            if alter and alter[0] == step_id:
                ours[0, 0] += alter[1] * bound[0, 0]
            bad, worst = bounds.compare(theirs, ours, bounds.Bound(bound))
            count += 1
            apart = np.nan_to_num(np.abs(theirs - ours), nan=0.0).max()
            print(f"{'ok  ' if not bad.any() else 'FAIL'} {lesson_id} {label}: max |diff| "
                  f"{apart:.2g} ({worst:.2g} of its bound)")
            if bad.any():
                problems.append(f"{lesson_id} {step_id}")
    return problems, count


def self_test(lessons_dir, golden_dir):
    """Each kind of comparison must fail when its golden value moves 1.5 bounds."""
    ok = True
    for step_id in ("head0.tiled_context", "head0.context"):
        problems, _ = run(lessons_dir, golden_dir, alter=(step_id, 1.5))
        caught = any(p.endswith(" " + step_id) for p in problems)
        print(f"self-test: {step_id}[0, 0] moved by 1.5 bounds: "
              f"{'detected' if caught else 'NOT detected'}")
        ok = ok and caught
    return ok


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lessons", default=ROOT / "lessons")
    parser.add_argument("--golden", default=ROOT / "golden")
    parser.add_argument("--self-test", action="store_true")
    args = parser.parse_args()
    if args.self_test:
        return 0 if self_test(args.lessons, args.golden) else 1
    problems, count = run(args.lessons, args.golden)
    print(f"{count} comparisons with PyTorch float64; {len(problems)} problem(s)")
    return 1 if problems or count == 0 else 0


if __name__ == "__main__":
    sys.exit(main())
