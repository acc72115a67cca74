#!/usr/bin/python3
"""The mask-pattern lessons (window / global / stride, docs/lesson-format.md)
against PyTorch: nn.MultiheadAttention in float64, loaded with each lesson's
projections, given the lesson's pattern as a float attn_mask (-inf where a
query may not attend, 0 elsewhere) built here from the lesson file alone, must
give the golden file's head{h}.weights and head{h}.context within 1e-12.

Usage: torch_masks.py [--lessons DIR] [--golden DIR] [--self-test]

The mask is written from SPEC section 11, not from the tool: key j is kept
for query i when |i - j| <= window, or j mod stride = stride - 1, or i or j is
a global token (a stride without a window keeps the diagonal); causal, key
padding and keep are ANDed in. nn.MultiheadAttention's out_proj is set to the
identity so that its output is the heads' contexts side by side. --self-test
moves one golden weight by 1e-9 in a copy and must see the comparison fail.
Exit 77 (skipped) when this Python has no torch.
"""
import argparse
import pathlib
import re
import shutil
import sys
import tempfile
import tomllib

try:
    import numpy as np
    import torch
except ModuleNotFoundError as missing:
    print(f"SKIPPED: {sys.executable} has no {missing.name} (apt-get install python3-torch)")
    sys.exit(77)  # CTest's SKIP_RETURN_CODE

ROOT = pathlib.Path(__file__).resolve().parent.parent
TOLERANCE = 1e-12


def tensor(value):
    return torch.tensor(np.array(value, dtype=float), dtype=torch.float64)


def float_mask(lesson):
    """(n, n) float attn_mask: -inf where the lesson's masks block, 0 elsewhere."""
    model, inp = lesson.get("model", {}), lesson["input"]
    n = len(inp["X"])
    i, j = torch.arange(n)[:, None], torch.arange(n)[None, :]
    kept = (i - j).abs() <= model.get("window", 0)
    if "stride" in model:
        kept |= j % model["stride"] == model["stride"] - 1
    is_global = torch.zeros(n, dtype=torch.bool)
    is_global[model.get("global", [])] = True
    kept |= is_global[:, None] | is_global[None, :]
    if model.get("causal", False):
        kept &= j <= i
    if "key_padding" in inp:
        kept &= ~torch.tensor([bool(p) for p in inp["key_padding"]])[None, :]
    if "keep" in inp:
        kept &= torch.tensor(inp["keep"]) != 0
    blocked = torch.zeros(n, n, dtype=torch.float64)
    blocked[~kept] = float("-inf")
    return blocked


def torch_attention(lesson):
    """Every head's weights (heads, n, n) and the contexts side by side (n, h·d_v)."""
    w, model = lesson["weights"], lesson.get("model", {})
    heads = model.get("heads", 1)
    W_Q, W_K, W_V = (tensor(w[k]) for k in ("W_Q", "W_K", "W_V"))
    d_model = W_Q.shape[0]
    mha = torch.nn.MultiheadAttention(d_model, heads, bias=True, batch_first=True,
                                      dtype=torch.float64)
    with torch.no_grad():
        mha.in_proj_weight.copy_(torch.cat([W_Q.T, W_K.T, W_V.T]))
        mha.in_proj_bias.copy_(torch.cat([tensor(w.get(k, [0.0] * d_model))
                                          for k in ("b_Q", "b_K", "b_V")]))
        mha.out_proj.weight.copy_(torch.eye(d_model, dtype=torch.float64))
        mha.out_proj.bias.zero_()
    X = tensor(lesson["input"]["X"])[None]
    with torch.no_grad():
        out, weights = mha.eval()(X, X, X, attn_mask=float_mask(lesson), need_weights=True,
                                  average_attn_weights=False)
    return weights[0], out[0]


def comparable(lesson):
    """Pattern lessons this comparison covers: square projections (out_proj = I)."""
    model, w = lesson.get("model", {}), lesson["weights"]
    if "window" not in model and "stride" not in model:
        return False
    W_Q = np.array(w["W_Q"], dtype=float)
    return (model.get("scale", "sqrt_dk") == "sqrt_dk" and
            model.get("positional_encoding", "none") == "none" and
            W_Q.shape[0] == W_Q.shape[1] == np.array(w["W_V"]).shape[1])


def compare(lessons_dir, golden_dir):
    """(problems, lessons compared, largest difference)."""
    problems, count, worst = [], 0, 0.0
    for path in sorted(pathlib.Path(lessons_dir).glob("*.toml")):
        lesson = tomllib.loads(path.read_text(encoding="utf-8"))
        if not comparable(lesson):
            continue
        lesson_id = lesson["lesson"].get("id", path.stem)
        golden = tomllib.loads((pathlib.Path(golden_dir) / f"{lesson_id}.toml")
                               .read_text(encoding="utf-8"))
        values = {s["id"]: np.array(s["data"], dtype=float) for s in golden["step"]}
        weights, contexts = torch_attention(lesson)
        heads = weights.shape[0]
        d_v = contexts.shape[1] // heads
        for h in range(heads):
            for step, ours in ((f"head{h}.weights", weights[h]),
                               (f"head{h}.context", contexts[:, h * d_v:(h + 1) * d_v])):
                diff = float(np.abs(values[step] - ours.numpy()).max())
                worst = max(worst, diff)
                if not diff <= TOLERANCE:
                    problems.append(f"{lesson_id} {step}: max |golden - torch| = {diff:.3g}")
        count += 1
        print(f"{lesson_id}: weights and contexts of {heads} head(s) match torch float64")
    return problems, count, worst


def self_test(lessons_dir, golden_dir):
    """Move golden strided-sparse head0.weights [0, 0] by 1e-9: the comparison must fail."""
    with tempfile.TemporaryDirectory() as tmp:
        copy = pathlib.Path(tmp) / "golden"
        shutil.copytree(golden_dir, copy)
        target = copy / "strided-sparse.toml"
        text = target.read_text(encoding="utf-8")
        data = text.index("data = [", text.index('id = "head0.weights"'))
        number = re.compile(r"-?\d+\.\d+(e-?\d+)?|\b1\b").search(text, data)
        altered = repr(float(number.group(0)) - 1e-9)
        target.write_text(text[:number.start()] + altered + text[number.end():], encoding="utf-8")
        problems, _, _ = compare(lessons_dir, copy)
        caught = any(p.startswith("strided-sparse head0.weights") for p in problems)
        print(f"self-test: golden strided-sparse head0.weights altered by 1e-9: "
              f"{'detected' if caught else 'NOT detected'}")
        return caught


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lessons", default=ROOT / "lessons")
    parser.add_argument("--golden", default=ROOT / "golden")
    parser.add_argument("--self-test", action="store_true")
    args = parser.parse_args()
    if args.self_test:
        return 0 if self_test(args.lessons, args.golden) else 1
    problems, count, worst = compare(args.lessons, args.golden)
    for p in problems:
        print("MISMATCH " + p)
    print(f"{count} mask-pattern lessons against torch {torch.__version__} float64; "
          f"largest difference {worst:.3g} (allowed {TOLERANCE:g}); {len(problems)} problem(s)")
    return 1 if problems or count < 2 else 0


if __name__ == "__main__":
    sys.exit(main())
