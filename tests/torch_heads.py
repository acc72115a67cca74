#!/usr/bin/python3
"""Grouped K/V heads, RoPE and ALiBi against PyTorch (float64): every lesson
whose [model] sets kv_heads or positional_encoding = "rope" / "alibi" is run
through torch.nn.functional.multi_head_attention_forward and compared with its
golden file.

torch 1.13 has no grouped-query flag, no rotary positions and no ALiBi, so the
comparison builds each from its definition (docs/steps.md) with torch ops and
hands PyTorch's attention what it would get in a model that has them:
- kv_heads = g: K and V with each K/V head repeated per group
  (repeat_interleave(heads / g) over the heads), so query head h reads K/V head
  h // (heads / g);
- RoPE: q and k of each head rotated by the formula, pairs (2i, 2i+1) by
  p·10000^(−2i/d_k), before attention (identity in-projections);
- ALiBi: a float attn_mask per head, −m_h·|i − j| with m_h = 2^(−8(h+1)/H),
  plus −inf where the lesson masks (PyTorch adds a float mask to the scaled
  scores; masking a cell by −inf and replacing it by −inf give the same).
The per-head weights (average_attn_weights=False) and the heads' contexts side
by side (identity out-projection) must equal the golden head{h}.weights and
concat, and the rotations, biases and scores the golden head{h}.q_rot,
.k_rot, .alibi_bias and .scores, each within 1e-12 relative to the cell's size
(the largest difference is printed). --self-test moves one golden weight by
1e-9 in a copy and must see the comparison fail. Exit 77 (skipped) without
torch.

Usage: torch_heads.py [--lessons DIR] [--golden DIR] [--self-test]
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
    import torch
    import torch.nn.functional as F
except ModuleNotFoundError as missing:
    print(f"SKIPPED: {sys.executable} has no {missing.name} (apt-get install python3-torch)")
    sys.exit(77)  # CTest's SKIP_RETURN_CODE

ROOT = pathlib.Path(__file__).resolve().parent.parent
TOLERANCE = 1e-12  # relative to max(1, |cell|)


def tensor(value):
    return torch.tensor(np.array(value, dtype=float), dtype=torch.float64)


def weight(w, key, size):
    return torch.eye(size, dtype=torch.float64) if w[key] == "identity" else tensor(w[key])


def rope(x, shift=0):
    """x (n, d): row p's pairs (2i, 2i+1) turned by (p + shift)·10000^(−2i/d)."""
    n, d = x.shape
    theta = torch.pow(10000.0, -torch.arange(0, d, 2, dtype=torch.float64) / d)
    angle = (torch.arange(n, dtype=torch.float64).unsqueeze(1) + shift) * theta
    out = torch.empty_like(x)
    out[:, 0::2] = x[:, 0::2] * angle.cos() - x[:, 1::2] * angle.sin()
    out[:, 1::2] = x[:, 0::2] * angle.sin() + x[:, 1::2] * angle.cos()
    return out


def blocked(lesson, n, m):
    """(n, m) True where the lesson masks a cell (causal, key padding, keep)."""
    model, inp = lesson.get("model", {}), lesson["input"]
    out = torch.zeros(n, m, dtype=torch.bool)
    if model.get("causal", False):
        out |= torch.triu(torch.ones(n, m, dtype=torch.bool), diagonal=1)
    if "key_padding" in inp:
        out |= torch.tensor([bool(p) for p in inp["key_padding"]]).unsqueeze(0)
    if "keep" in inp:
        out |= torch.tensor(inp["keep"]) == 0
    return out


def projections(lesson):
    """Q (n, h·d_k), K and V (m, g·d) with their biases, as the lesson gives them."""
    w, inp = lesson["weights"], lesson["input"]
    X = tensor(inp["X"])
    source = tensor(inp["memory"]) if "memory" in inp else X
    out = []
    for letter, x in (("Q", X), ("K", source), ("V", source)):
        P = x @ weight(w, "W_" + letter, x.shape[1])
        if "b_" + letter in w:
            P = P + tensor(w["b_" + letter])
        out.append(P)
    return out


def heads_of(P, width):
    """(rows, k·width) -> (k, rows, width): the column blocks of the heads."""
    return P.view(P.shape[0], -1, width).transpose(0, 1)


def attention_inputs(lesson, found):
    """What PyTorch's attention reads: Q (n, h·d_k), K and V repeated per group,
    rotated by RoPE when the lesson has it; also every rotation, for `found`."""
    model = lesson.get("model", {})
    heads = model.get("heads", 1)
    g = model.get("kv_heads", heads)
    Q, K, V = projections(lesson)
    d_k, d_v = Q.shape[1] // heads, V.shape[1] // g
    Kh = heads_of(K, d_k).repeat_interleave(heads // g, dim=0)  # (h, m, d_k)
    Vh = heads_of(V, d_v).repeat_interleave(heads // g, dim=0)
    Qh = heads_of(Q, d_k)
    if model.get("positional_encoding") == "rope":
        Qh = torch.stack([rope(q) for q in Qh])
        Kh = torch.stack([rope(k) for k in Kh])
        for h in range(heads):
            found[f"head{h}.q_rot"], found[f"head{h}.k_rot"] = Qh[h], Kh[h]
    for h in range(heads):
        found[f"head{h}.K"], found[f"head{h}.V"] = heads_of(K, d_k)[h // (heads // g)], Vh[h]
    flat = lambda H: H.transpose(0, 1).reshape(H.shape[1], -1)  # noqa: E731 (k, rows, w) -> (rows, k·w)
    return flat(Qh), flat(Kh), flat(Vh), d_k


def alibi(heads, n, m):
    """(h, n, m): ALiBi's −m_h·|i − j|, m_h = 2^(−8(h+1)/heads)."""
    distance = (torch.arange(n).unsqueeze(1) - torch.arange(m)).abs().to(torch.float64)
    return torch.stack([-(2.0 ** (-8.0 * (h + 1) / heads)) * distance for h in range(heads)])


def float_mask(lesson, n, m):
    """(h, n, m): ALiBi's bias (0 without ALiBi), −inf where the lesson masks."""
    model = lesson.get("model", {})
    heads = model.get("heads", 1)
    out = torch.zeros(heads, n, m, dtype=torch.float64)
    if model.get("positional_encoding") == "alibi":
        out = alibi(heads, n, m)
    return out.masked_fill(blocked(lesson, n, m), -math.inf)


def torch_steps(lesson):
    """{step id: tensor} from PyTorch: the rotations and biases, each head's
    scores and weights, and concat."""
    found = {}
    Q, K, V, d_k = attention_inputs(lesson, found)
    heads = lesson.get("model", {}).get("heads", 1)
    n, m, E = Q.shape[0], K.shape[0], Q.shape[1]
    mask = float_mask(lesson, n, m)
    eye = torch.eye(E, dtype=torch.float64)
    concat, weights = F.multi_head_attention_forward(
        Q.unsqueeze(1), K.unsqueeze(1), V.unsqueeze(1), E, heads, None, None, None, None, False,
        0.0, eye, torch.zeros(E, dtype=torch.float64), training=False, need_weights=True,
        attn_mask=mask, use_separate_proj_weight=True, q_proj_weight=eye, k_proj_weight=eye,
        v_proj_weight=eye, average_attn_weights=False)
    found["concat"] = concat[:, 0, :]
    for h in range(heads):
        q, k = Q[:, h * d_k:(h + 1) * d_k], K[:, h * d_k:(h + 1) * d_k]
        found[f"head{h}.scores"] = q @ k.T
        found[f"head{h}.weights"] = weights[0, h]
        if lesson.get("model", {}).get("positional_encoding") == "alibi":
            found[f"head{h}.alibi_bias"] = alibi(heads, n, m)[h]
    return found


def applies(lesson):
    model = lesson.get("model", {})
    return "kv_heads" in model or model.get("positional_encoding") in ("rope", "alibi")


def compare(lesson_id, found, golden):
    """Problems (one line each) and the largest relative difference."""
    values = {g["id"]: np.array(g["data"], dtype=float).reshape(g["shape"])
              for g in golden["step"]}
    problems, worst = [], 0.0
    for sid, got in found.items():
        want = values[sid]
        got = got.detach().numpy()
        if got.shape != want.shape:
            problems.append(f"{lesson_id} {sid}: PyTorch shape {got.shape}, golden {want.shape}")
            continue
        finite = np.isfinite(want) & np.isfinite(got)
        same = (got == want) | (np.isnan(got) & np.isnan(want))
        apart = np.where(finite, np.abs(got - want) / np.maximum(1.0, np.abs(want)), 0.0)
        bad = ~same & ~(finite & (apart <= TOLERANCE))
        worst = max(worst, float(apart.max()))
        if bad.any():
            r, c = (int(i) for i in np.argwhere(bad)[0])
            problems.append(f"{lesson_id} {sid} [{r}, {c}]: PyTorch {got[r, c]!r}, golden "
                            f"{want[r, c]!r}")
    return problems, worst


def run(lessons_dir, golden_dir):
    problems, count = [], 0
    for path in sorted(pathlib.Path(lessons_dir).glob("*.toml")):
        lesson = tomllib.loads(path.read_text(encoding="utf-8"))
        if not applies(lesson):
            continue
        lesson_id = lesson["lesson"]["id"]
        golden = tomllib.loads((pathlib.Path(golden_dir) / f"{lesson_id}.toml").read_text("utf-8"))
        found = torch_steps(lesson)
        lesson_problems, worst = compare(lesson_id, found, golden)
        problems += lesson_problems
        count += 1
        print(f"{'ok  ' if not lesson_problems else 'FAIL'} {lesson_id}: {len(found)} steps, "
              f"largest relative difference {worst:.2g}")
    for p in problems:
        print("MISMATCH " + p)
    print(f"{count} lessons against PyTorch (float64); {len(problems)} problem(s)")
    return 0 if count and not problems else 1


def self_test(lessons_dir, golden_dir):
    """One golden weight of gqa-kv-heads moved by 1e-9 in a copy: must fail."""
    with tempfile.TemporaryDirectory() as tmp:
        copy = pathlib.Path(tmp) / "golden"
        shutil.copytree(golden_dir, copy)
        target = copy / "gqa-kv-heads.toml"
        text = target.read_text(encoding="utf-8")
        data = text.index("data = [", text.index('id = "head3.weights"'))
        number = re.compile(r"-?\d+\.\d+(e-?\d+)?").search(text, data)
        altered = repr(float(number.group(0)) + 1e-9)
        target.write_text(text[:number.start()] + altered + text[number.end():], encoding="utf-8")
        result = subprocess.run([sys.executable, __file__, "--lessons", str(lessons_dir),
                                 "--golden", str(copy)], capture_output=True, text=True)
        caught = result.returncode == 1 and "gqa-kv-heads head3.weights [0, 0]" in result.stdout
        print(f"self-test: golden gqa-kv-heads head3.weights [0, 0] moved by 1e-9: "
              f"{'detected' if caught else 'NOT detected'} (exit {result.returncode})")
        if not caught:
            print(result.stdout + result.stderr)
        return caught


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lessons", default=ROOT / "lessons")
    parser.add_argument("--golden", default=ROOT / "golden")
    parser.add_argument("--self-test", action="store_true")
    args = parser.parse_args()
    if args.self_test:
        return 0 if self_test(args.lessons, args.golden) else 1
    return run(args.lessons, args.golden)


if __name__ == "__main__":
    sys.exit(main())
