#!/usr/bin/python3
"""Command-line tests of shape and quantity claims (docs/lesson-format.md) and
of the FLOPs `run --summary` shows: each kind of claim judged right and wrong,
the JSON report (docs/json.md), FLOPs against a count written out by hand, and
bad claims exiting 2 with the file, the key and the line.

Usage: test_quantity_claims.py PATH/TO/attn-trace
"""
import json
import pathlib
import re
import sys
import tempfile

from clitest import check, failures, runner

BIN = sys.argv[1]


run = runner(BIN)


def by_says(report, words):
    return next(c for c in report["quantity_claims"] if words in c["says"])


# d512-walkthrough (d_model 512, 8 heads of d_k 64): 003's "64×64" refuted,
# 004's (2, 5, 512) input and output, 000's O(n²·d_k) as counted FLOPs.
r = run("check", "d512-walkthrough", "--format", "json")
check(r.returncode == 0, f"check d512-walkthrough: exit 0 ({r.stderr})")
rep = json.loads(r.stdout)
c = by_says(rep, "64×64")
check(c["kind"] == "shape" and c["stated"] == [64, 64] and c["computed"] == [5, 5]
      and c["status"] == "disagrees", f"QKᵀ 64×64 refuted at d_k = 64: {c}")
for words, shape in [("the test's input", [2, 5, 512]), ("concatenated", [2, 5, 512]),
                     ("(2, 8, 5, 5)", [2, 8, 5, 5]), ("d_k = 512 / 8 = 64", [5, 64])]:
    c = by_says(rep, words)
    check(c["computed"] == shape and c["status"] == "agrees", f"{words}: {shape} agrees: {c}")
n, d_k = 5, 64
for words, seq in [("2·n²·d_k", n), ("four times", 2 * n)]:
    c = by_says(rep, words)
    check(float(c["computed"]) == 2 * seq * seq * d_k and c["status"] == "agrees",
          f"scores FLOPs at seq {seq} = 2·{seq}²·{d_k}: {c}")

# shapes-and-costs: 004's (2, 8, 5, 7) and 003's bytes agree.
r = run("check", "shapes-and-costs", "--format", "json")
check(r.returncode == 0, f"check shapes-and-costs: exit 0 ({r.stderr})")
rep = json.loads(r.stdout)
c = by_says(rep, "(2, 8, 5, 7)")
check(c["computed"] == [2, 8, 5, 7] and c["status"] == "agrees" and c["batch"] == 2,
      f"weights (2, 8, 5, 7): {c}")
c = by_says(rep, "16 MB")
check(c["kind"] == "bytes" and c["unit"] == "MiB" and c["computed_exact"] == 16
      and c["status"] == "agrees" and "16777216 B" in c["details"], f"16 MB: {c}")
c = by_says(rep, "128 MB")
check(c["computed_exact"] == 128 and c["status"] == "agrees", f"128 MB: {c}")
text = run("check", "shapes-and-costs").stdout
check("shape and cost claims: 3 checked, 3 agree, 0 disagree" in text, "text: the count")
text = run("check", "d512-walkthrough").stdout
check("shape and cost claims: 7 checked, 6 agree, 1 disagree" in text, "text: the count (d512)")
check(re.search(r"DISAGREES\s+head0\.scores shape\s+\"with d_k = 64", text) is not None,
      "text: the refuted shape")

# why-scale-variance: sampled statistics judged within the sampling tolerance.
rep = json.loads(run("check", "why-scale-variance", "--format", "json").stdout)
statuses = [(c["kind"], c["status"]) for c in rep["quantity_claims"]]
check(statuses == [("qk_std", "agrees"), ("qk_std", "disagrees"), ("qk_variance", "agrees"),
                   ("qk_variance", "agrees")], f"sampled claims: {statuses}")
unit_variance = rep["quantity_claims"][1]
check(abs(unit_variance["computed_exact"] - 8) < 0.2, "0.125 read with unit variance: ≈ 8")

# Every kind, right and wrong, on a lesson written here; FLOPs by hand.
LESSON = """[lesson]
id = "q-claims"
[input]
tokens = ["a", "b", "c"]
X = [[1, 0, 0, 0], [0, 1, 0, 0], [0, 0, 1, 0]]
[model]
heads = 2
[weights]
W_Q = "identity"
W_K = "identity"
W_V = "identity"
W_O = "identity"
b_Q = [0, 0, 0, 0]
"""
# n = 3 tokens, d = 4, 2 heads of d_k = 2. Q = X·W_Q + b: 2·3·4·4 + 3·4 = 108;
# K, V: 96 each; per head: scores 2·3·2·3 = 36, scaled 9, exp 9, row sums 3·2 = 6,
# weights 9, context 2·3·3·2 = 36 -> 105; output 2·3·4·4 = 96.
PASS = 108 + 96 + 96 + 2 * 105 + 96
CLAIMS = f"""
[[claim]]
step = "head1.context"
shape = [3, 2]
says = "right shape"
[[claim]]
step = "output"
batch = 4
shape = [4, 3, 5]
says = "wrong shape"
[[claim]]
step = "head0.scores"
quantity = "flops"
value = 36
says = "right flops"
[[claim]]
quantity = "flops"
value = {PASS}
says = "whole pass flops"
[[claim]]
step = "head0.scores"
quantity = "flops"
seq = 100
batch = 2
value = 80000
says = "flops at seq 100, batch 2"
[[claim]]
step = "Q"
quantity = "bytes"
value = 96
says = "Q in f64"
[[claim]]
step = "head*.weights"
quantity = "bytes"
dtype = "bf16"
value = 40
says = "wrong bytes"
[[claim]]
quantity = "qk_mean"
d_k = 16
samples = 5000
value = 0
tolerance = 0
says = "mean 0"
"""
with tempfile.TemporaryDirectory() as tmp:
    path = pathlib.Path(tmp) / "q-claims.toml"
    path.write_text(LESSON + CLAIMS, encoding="utf-8")
    r = run("check", str(path), "--format", "json")
    rep = json.loads(r.stdout)
    got = {c["says"]: c for c in rep["quantity_claims"]}
    want = {"right shape": "agrees", "wrong shape": "disagrees", "right flops": "agrees",
            "whole pass flops": "agrees", "flops at seq 100, batch 2": "agrees",
            "Q in f64": "agrees", "wrong bytes": "disagrees", "mean 0": "agrees"}
    for says, status in want.items():
        check(got[says]["status"] == status, f"{says}: {status} ({got[says]})")
    check(got["wrong shape"]["computed"] == [4, 3, 4], "batched output shape [4, 3, 4]")
    check(got["wrong bytes"]["computed_exact"] == 2 * 9 * 2, "2 heads × 3×3 × 2 bytes = 36")
    check(got["whole pass flops"]["computed_exact"] == PASS, f"pass FLOPs {PASS}")

    # run --summary: FLOPs per step and the whole pass.
    r = run("run", str(path), "--summary")
    check("FLOPs: 36 (2·n·d_k·m = 2·3·2·3)" in r.stdout, "run --summary: the scores' FLOPs")
    check(f"FLOPs of the whole pass: {PASS} " in r.stdout, "run --summary: the total")
    check("FLOPs" not in run("run", str(path)).stdout, "without --summary: no FLOPs lines")

    # Bad claims: exit 2 naming the file, the line and the key.
    for claim, key, words in (
            ('step = "head9.scores"\nshape = [3, 3]', "claim[0].step", "unknown step id 'head9.scores'"),
            ('step = "Q"\nquantity = "bytes"\nbatch = -2\nvalue = 1', "claim[0].batch", "out of range"),
            ('step = "Q"\nquantity = "bytes"\ndtype = "f8"\nvalue = 1', "claim[0].dtype", "\"f8\" is not a dtype"),
            ('step = "Q"\nquantity = "bytes"\nunit = "MB2"\nvalue = 1', "claim[0].unit", "not a unit of bytes"),
            ('step = "Q"\nquantity = "watts"\nvalue = 1', "claim[0].quantity", "is not a quantity"),
            ('step = "Q"\nshape = [3]', "claim[0].shape", "1 dimensions given"),
            ('step = "Q"\nshape = [3, 4]\nquantity = "bytes"', "claim[0].quantity", "not both"),
            ('quantity = "flops"\ndtype = "f32"\nvalue = 1', "claim[0].dtype", "no unit or dtype"),
            ('quantity = "qk_std"\nd_k = 64\nsamples = 1000000\nvalue = 1', "claim[0].samples", "kept under a second"),
            ('quantity = "qk_std"\nstep = "Q"\nd_k = 4\nvalue = 1', "claim[0].step", "random vectors"),
            ('quantity = "max_abs"\nvalue = 1', "claim[0].step", "needs step"),
            ('step = "Q"\nquantity = "norm"\nseq = 4\nvalue = 1', "claim[0].seq", "own trace"),
            ('step = "Q"\nquantity = "norm"\nkeys = 4\nvalue = 1', "claim[0].keys", "softmax-gradient"),
            ('quantity = "qk_std"\nd_k = 4\nkeys = 4\nvalue = 1', "claim[0].keys", "softmax-gradient"),
            ('quantity = "softmax_grad_median"\nd_k = 64\nkeys = 0\nvalue = 1', "claim[0].keys", "out of range"),
            ('quantity = "softmax_grad_median"\nd_k = 256\nvalue = 1', "claim[0].samples", "kept under a second"),
            ('quantity = "softmax_grad_vanished"\nstep = "Q"\nd_k = 4\nvalue = 1', "claim[0].step", "random vectors"),
            ('quantity = "stack_grad_norm"\nlayers = 13\nat = 1\nvalue = 1', "claim[0].layers", "out of range"),
            ('quantity = "stack_grad_norm"\nlayers = 2\nat = 3\nvalue = 1', "claim[0].at", "from 1 to 2"),
            ('quantity = "stack_grad_norm"\nat = 1\nvalue = 1', "claim[0].layers", "needs layers"),
            ('quantity = "stack_grad_norm"\nstep = "Q"\nlayers = 2\nat = 1\nvalue = 1', "claim[0].step",
             "builds its own layers"),
            ('step = "Q"\nquantity = "norm"\nlayers = 2\nvalue = 1', "claim[0].layers", "builds layers"),
            ('quantity = "stack_grad_norm"\nlayers = 2\nat = 1\nvalue = 1', "claim[0].quantity",
             "add [layer]")):
        path.write_text(LESSON + "\n[[claim]]\n" + claim + "\n", encoding="utf-8")
        r = run("check", str(path))
        first = LESSON.count("\n") + 2  # the [[claim]] line; its keys follow
        m = re.search(rf"{re.escape(str(path))}:(\d+): key '{re.escape(key)}'", r.stderr)
        check(r.returncode == 2 and words in r.stderr and m is not None
              and first <= int(m.group(1)) <= first + 4,
              f"bad claim {claim!r}: exit 2 with {key} and '{words}' (got {r.returncode}: {r.stderr.strip()})")

# The size of a step (max_abs, norm), recomputed here from the JSON trace.
SIZE_CLAIMS = """
[[claim]]
step = "head0.weights"
quantity = "max_abs"
value = 0.5035
says = "largest weight"
[[claim]]
step = "head*.scores"
quantity = "norm"
value = 1.7321
says = "norm of every head's scores"
[[claim]]
step = "Q"
quantity = "norm"
value = 1.8
tolerance = 0.05
says = "norm of Q, wrong"
"""
with tempfile.TemporaryDirectory() as tmp:
    path = pathlib.Path(tmp) / "q-claims.toml"
    path.write_text(LESSON + SIZE_CLAIMS, encoding="utf-8")
    trace = {s["id"]: s["data"] for s in json.loads(run("run", str(path), "--format", "json").stdout)["steps"]}
    largest = max(abs(x) for row in trace["head0.weights"] for x in row)
    norm = sum(x * x for h in (0, 1) for row in trace[f"head{h}.scores"] for x in row) ** 0.5
    q_norm = sum(x * x for row in trace["Q"] for x in row) ** 0.5
    got = {c["says"]: c for c in json.loads(run("check", str(path), "--format", "json").stdout)
           ["quantity_claims"]}
    c = got["largest weight"]
    check(abs(c["computed_exact"] - largest) < 1e-15 and c["status"] == "agrees"
          and c["kind"] == "max_abs", f"max_abs = {largest}: {c}")
    c = got["norm of every head's scores"]
    check(abs(c["computed_exact"] - norm) < 1e-14 and c["status"] == "agrees"
          and "over 18 cells" in c["details"], f"norm over both heads = {norm}: {c}")
    c = got["norm of Q, wrong"]
    check(abs(c["computed_exact"] - q_norm) < 1e-14 and c["status"] == "disagrees",
          f"norm of Q = {q_norm} (√3), not 1.8 ± 0.05: {c}")

# Sampled softmax gradients: scaled, the typical row keeps about 0.2 of the
# 0.25 maximum at any d_k; unscaled at d_k 256 most rows have vanished.
GRAD_CLAIMS = """
[[claim]]
quantity = "softmax_grad_median"
d_k = 256
scaled = true
samples = 1000
value = 0.22
tolerance = 0.01
says = "scaled median"
[[claim]]
quantity = "softmax_grad_vanished"
d_k = 256
samples = 1000
value = 0.00
says = "unscaled: none vanished (wrong)"
"""
with tempfile.TemporaryDirectory() as tmp:
    path = pathlib.Path(tmp) / "q-claims.toml"
    path.write_text(LESSON + GRAD_CLAIMS, encoding="utf-8")
    got = {c["says"]: c for c in json.loads(run("check", str(path), "--format", "json").stdout)
           ["quantity_claims"]}
    c = got["scaled median"]
    check(c["status"] == "agrees" and 0.2 < c["computed_exact"] < 0.24, f"scaled median: {c}")
    c = got["unscaled: none vanished (wrong)"]
    check(c["status"] == "disagrees" and c["computed_exact"] > 0.4, f"unscaled d_k 256: {c}")

# The saturation lessons (level 5): the Jacobian's largest entry and ‖dS‖,
# recomputed here with numpy from the lessons' own vectors, and the verdicts.
import numpy as np
import tomllib

LESSONS = pathlib.Path(__file__).resolve().parents[2] / "lessons"


def softmax_rows(z):
    e = np.exp(z - z.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def saturation(lesson_id, divisor):
    """(largest |J| of jacobian_row, ‖dL/d(scores)‖) of an identity-projection
    cross-attention lesson with an upstream gradient."""
    t = tomllib.loads((LESSONS / f"{lesson_id}.toml").read_text(encoding="utf-8"))
    q, k = np.array(t["input"]["X"], float), np.array(t["input"]["memory"], float)
    up = np.array(t["backward"]["upstream"], float)
    a = softmax_rows(q @ k.T / divisor)
    r = t["backward"].get("jacobian_row", 0)
    jac = np.diag(a[r]) - np.outer(a[r], a[r])
    d_a = up @ k.T
    d_s = a * (d_a - (d_a * a).sum(axis=1, keepdims=True)) / divisor
    return np.abs(jac).max(), np.linalg.norm(d_s)


for lesson_id, divisor, vanished in (("why-scale-gradient", 8, None),
                                     ("why-scale-grad-unscaled", 1, "agrees"),
                                     ("saturation-d64", 8, None),
                                     ("saturation-d64-unscaled", 1, "disagrees")):
    largest, norm = saturation(lesson_id, divisor)
    got = {c["kind"] + " " + c["step"]: c for c in json.loads(
        run("check", lesson_id, "--format", "json").stdout)["quantity_claims"] if c["step"]}
    jac = got["max_abs grad.head0.jacobian"]
    check(abs(jac["computed_exact"] - largest) < 1e-15, f"{lesson_id}: max |J| = {largest}: {jac}")
    scores = got["norm grad.head0.scores"]
    check(abs(scores["computed_exact"] - norm) < 1e-14 and scores["status"] == "agrees",
          f"{lesson_id}: ‖dS‖ = {norm}: {scores}")
    if vanished:  # "the gradient vanishes": below 1% of 0.25
        check(jac["status"] == vanished and jac["tolerance"] == 0.0025
              and (largest < 0.0025) == (vanished == "agrees"), f"{lesson_id}: vanished? {jac}")
s0, _ = saturation("why-scale-gradient", 8)
s1, _ = saturation("why-scale-grad-unscaled", 1)
check(abs(s0 - 0.6926419834 * 0.3073580166) < 1e-9 and s1 < 0.0025 < s0, f"8.5 vs 2: {s0}, {s1}")

if failures:
    sys.exit(f"{len(failures)} failure(s)")
print("quantity claims: all checks passed")
