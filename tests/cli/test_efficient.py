#!/usr/bin/env python3
"""The tiled softmax and linear attention (issue 26, items 1 and 4) from the
command line: the new steps' values and arithmetic (run --expand), verify on
them (right, carried and wrong), practice through piped stdin, every output
format, --dtype f16 (the tiles in the format's arithmetic), the step ids
printed and parsed, and the lessons refused with exit 2 naming the key.

Usage: test_efficient.py BIN
"""
import json
import math
import os
import re
import subprocess
import sys
import tempfile

from clitest import check, environment, failures, runner

BIN = sys.argv[1]
run = runner(BIN)
TMP = tempfile.mkdtemp(prefix="efficient-")
ENV = environment({"XDG_STATE_HOME": TMP, "NO_COLOR": "1", "LC_ALL": "C.UTF-8"})


def trace(lesson, *extra):
    out = run("run", lesson, "--format", "json", *extra, env=ENV)
    check(out.returncode == 0, f"run {lesson} --format json: exit {out.returncode} {out.stderr}")
    steps = json.loads(out.stdout)["steps"]
    return {s["id"]: [[float(x) for x in row] for row in s["data"]] for s in steps}


def near(a, b, tol=1e-12):
    return abs(a - b) <= tol * max(1.0, abs(b))


# --- values: the online softmax by hand from the trace's own steps ------------
T = trace("flash-tiles")
S = T["head0.tile1_1.scores"]
m_old, m = T["head0.tile1_0.m"][1][0], T["head0.tile1_1.m"][1][0]
check(near(m, max(m_old, *S[1])), f"tile1_1.m row 1 {m} = max(m_old, scores)")
alpha = math.exp(m_old - m)
check(near(T["head0.tile1_1.rescale"][1][0], alpha), "tile1_1.rescale row 1 = exp(m_old − m)")
check(alpha < 1, "key block 1 raises the max of row t3: the rescale is below 1")
l = alpha * T["head0.tile1_0.l"][1][0] + sum(math.exp(s - m) for s in S[1])
check(near(T["head0.tile1_1.l"][1][0], l), "tile1_1.l row 1 = α·ℓ_old + Σ exp(s − m)")
V = T["head0.V"]
acc = alpha * T["head0.tile1_0.acc"][1][0] + sum(math.exp(s - m) * V[2 + j][0]
                                                 for j, s in enumerate(S[1]))
check(near(T["head0.tile1_1.acc"][1][0], acc), "tile1_1.acc [1,0] = α·O_old + Σ p·V")
check(T["head0.tile0_1.rescale"] == [[1.0], [1.0]], "a block masked whole rescales by exactly 1")
check(T["head0.tile0_0.rescale"] == [[0.0], [0.0]], "key block 0 rescales nothing: exp(−inf) = 0")
check(len(T["head0.tile2_0.scores"]) == 1, "the edge query block holds one row (5 = 2 + 2 + 1)")
check(len(T["head0.tile0_2.scores"][0]) == 1, "the edge key block holds one column")
check(all(near(a, b) for ra, rb in zip(T["head0.tiled_context"], T["head0.context"])
          for a, b in zip(ra, rb)), "tiled context = context to 1e-12")
check(max(r[0] for r in T["head0.tiled_check"]) <= 1e-12, "tiled_check ≤ 1e-12 in f64")

F16 = trace("flash-tiles", "--dtype", "f16")
worst = max(r[0] for r in F16["head0.tiled_check"])
check(1e-6 < worst < 1e-2, f"--dtype f16: the tiles differ from the whole softmax by {worst}")

L = trace("linear-attention")
phi = lambda x: x + 1 if x > 0 else math.exp(x)  # noqa: E731
check(near(L["head0.phi_q"][2][1], phi(L["head0.Q"][2][1])), "phi_q = elu(Q) + 1")
kv = sum(L["head0.phi_k"][j][1] * L["head0.V"][j][2] for j in range(6))
check(near(L["head0.kv"][1][2], kv), "kv[1,2] = Σ_j φ(K)[j,1]·V[j,2]")
norm = sum(L["head0.phi_q"][3][c] * sum(L["head0.phi_k"][j][c] for j in range(6)) for c in range(4))
check(near(L["head0.normaliser"][3][0], norm), "normaliser row 3 = φ(q)·Σφ(k)")
check(all(near(sum(row), 1.0) for row in L["head0.linear_weights"]),
      "linear attention's implied weights sum to 1 per row")
differ = max(abs(a - b) for ra, rb in zip(L["head0.linear_weights"], L["head0.weights"])
             for a, b in zip(ra, rb))
check(differ > 1e-3, f"linear attention's weights are not the softmax's (differ by {differ})")
check(max(r[0] for r in L["head0.linear_check"]) <= 1e-12, "linear_check ≤ 1e-12")

# --- run --expand: the arithmetic of one cell of the new steps ----------------
out = run("run", "flash-tiles", "--expand", "1,0", "--format", "json", env=ENV)
expansions = {e["step"]: e for e in json.loads(out.stdout).get("expansions", [])}
e = expansions.get("head0.tile1_1.rescale")
check(e is not None and e["kind"] == "expression" and near(e["value"], alpha),
      f"--expand 1,0 head0.tile1_1.rescale: {e}")
check(e is not None and "exp(0.1299 − 0.285)" in e["text"], f"rescale's arithmetic: {e}")
e = expansions.get("head0.tile1_1.l")
check(e is not None and "0.8563 × " in e["text"], f"l's arithmetic starts α × ℓ_old: {e}")
out = run("run", "linear-attention", "--expand", "0,0", env=ENV)
check("head0.phi_q[w0,d0] = elu(head0.Q[w0,d0]) + 1" in out.stdout, "--expand phi_q")
check(re.search(r"head0\.context\[w0,d0\] = head0\.numerator\[w0,d0\] / "
                r"head0\.normaliser\[w0,sum\]", out.stdout), "--expand the linear context")

# --- verify: right, carried and wrong on the new steps ------------------------
answers = os.path.join(TMP, "tiles.answers.toml")
with open(answers, "w", encoding="utf-8") as f:
    f.write(f'[[answer]]\nstep = "head0.tile1_1.rescale"\ncell = [1, 0]\nvalue = {alpha:.4f}\n\n'
            '[[answer]]\nstep = "head0.tile1_0.l"\ncell = [1, 0]\nvalue = 1.5\n\n'
            f'[[answer]]\nstep = "head0.tile1_1.l"\ncell = [1, 0]\n'
            f'value = {alpha * 1.5 + sum(math.exp(s - m) for s in S[1]):.4f}\n\n'
            '[[answer]]\nstep = "head0.tiled_context"\ncell = [0, 0]\nvalue = 0.5\n')
out = run("verify", "flash-tiles", "--answers", answers, "--format", "json", env=ENV)
report = json.loads(out.stdout)
marks = {(a["step"], tuple(a["cell"])): a["status"] for a in report["answers"]}
check(marks.get(("head0.tile1_1.rescale", (1, 0))) == "ok", f"verify rescale ok: {marks}")
check(marks.get(("head0.tile1_0.l", (1, 0))) == "wrong", f"verify l wrong: {marks}")
check(marks.get(("head0.tile1_1.l", (1, 0))) == "carried", f"verify l carried: {marks}")
check(marks.get(("head0.tiled_context", (0, 0))) == "wrong", f"verify tiled context: {marks}")

# --- practice: the new steps asked and marked ---------------------------------
PROMPT = re.compile(r"(\S+)\[([^,\]]+), ([^\]]+)\](?: \(you wrote [^)]*\))? = \? $")


def practise(lesson, step, values):
    """Answers every prompt of `practice --step step` with the trace's value. -> output"""
    p = subprocess.Popen([BIN, "practice", lesson, "--step", step, "--cells", "2", "--restart",
                          "--save", os.path.join(TMP, f"{lesson}.practice.toml")],
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                         env=ENV)
    out, pos, asked = b"", 0, 0
    while asked < 10:
        chunk = p.stdout.read1(4096)
        if not chunk:
            break
        out += chunk
        text = out.decode(errors="replace")
        found = PROMPT.search(text, pos)
        if not found:
            continue
        pos = found.end()
        sid, row, col = found.groups()
        steps = json.loads(run("run", lesson, "--format", "json", env=ENV).stdout)["steps"]
        s = next(x for x in steps if x["id"] == sid)
        value = float(s["data"][s["rows"].index(row)][s["cols"].index(col)])
        p.stdin.write(f"{value:.6f}\n".encode())
        p.stdin.flush()
        asked += 1
    p.stdin.close()
    out += p.stdout.read()
    p.wait(timeout=30)
    return out.decode(errors="replace"), asked


text, asked = practise("flash-tiles", "head0.tile1_1.acc", T)
check(asked == 2 and len(re.findall(r"^  ok\b", text, re.M)) == 2,
      f"practice head0.tile1_1.acc: 2 cells asked and marked ok\n{text[-600:]}")
text, asked = practise("linear-attention", "head0.normaliser", L)
check(asked == 2 and len(re.findall(r"^  ok\b", text, re.M)) == 2,
      f"practice head0.normaliser: 2 cells asked and marked ok\n{text[-600:]}")

# --- every format renders the new steps ---------------------------------------
for lesson, step in (("flash-tiles", "head0.tile1_1.acc"), ("linear-attention", "head0.kv")):
    for fmt in ("html", "latex", "markdown", "text"):
        out = run("run", lesson, "--format", fmt, env=ENV)
        check(out.returncode == 0 and step in out.stdout.replace("\\_", "_"),
              f"run {lesson} --format {fmt} shows {step} (exit {out.returncode})")
    out = run("run", lesson, "--format", "markdown", "--lang", "zh", env=ENV)
    check(out.returncode == 0 and step in out.stdout, f"run {lesson} --lang zh")
out = run("run", "flash-tiles", "--step", "head0.tile0_1.m", env=ENV)
check(out.returncode == 0 and "head0.tile0_1.m" in out.stdout, "--step head0.tile0_1.m")
out = run("run", "flash-tiles", "--step", "head0.tile9_9.m", env=ENV)
check(out.returncode == 2 and "head0.tile0_0.scores" in out.stderr, "an unknown tile id lists ids")

# --- lessons refused, exit 2 naming the key ------------------------------------
BASE = """[lesson]
id = "refused"
title = "t"
[model]
{model}
[input]
tokens = ["a", "b", "c"]
X = [[1, 0], [0, 1], [1, 1]]
{extra}
[weights]
W_Q = "identity"
W_K = "identity"
W_V = "identity"
"""
for model, extra, key, words in (
        ("tile = [4, 2]", "", "model.tile", "larger than"),
        ("tile = [0, 2]", "", "model.tile", "at least 1"),
        ("tile = [2]", "", "model.tile", "tile = [Bq, Bk]"),
        ('attention = "linear"\ncausal = true', "", "model.attention", "causal"),
        ('attention = "linear"', "key_padding = [false, false, true]", "model.attention",
         "key_padding"),
        ('attention = "linear"\ntile = [1, 1]', "", "model.attention", "tile"),
        ('attention = "kernel"', "", "model.attention", "linear")):
    path = os.path.join(TMP, "refused.toml")
    with open(path, "w", encoding="utf-8") as f:
        f.write(BASE.format(model=model, extra=extra))
    out = run("run", path, env=ENV)
    check(out.returncode == 2 and f"key '{key}'" in out.stderr and words in out.stderr
          and "refused.toml:" in out.stderr, f"{model!r} {extra!r}: exit 2 naming {key}: "
          f"{out.returncode} {out.stderr.strip()}")

# A row with every key masked: the tiles end in 0/0 and follow masked_row.
for policy, want in (("nan", None), ("zero", 0.0)):
    path = os.path.join(TMP, f"masked-{policy}.toml")
    with open(path, "w", encoding="utf-8") as f:
        f.write(BASE.format(model=f'tile = [2, 2]\nmasked_row = "{policy}"',
                            extra="keep = [[0, 0, 0], [1, 1, 0], [1, 1, 1]]"))
    M = trace(path)
    row = M["head0.tiled_context"][0]
    check(all(math.isnan(x) for x in row) if want is None else row == [want, want],
          f"masked_row = {policy}: the tiled row of a query with no key is {row}")
    check(M["head0.tile0_0.l"][0][0] == 0 and M["head0.tiled_check"][0][0] == 0,
          f"masked_row = {policy}: ℓ stays 0 and the check is 0")

print(f"{len(failures)} failure(s)")
sys.exit(1 if failures else 0)
