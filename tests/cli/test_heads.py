#!/usr/bin/env python3
"""Grouped K/V heads, RoPE and ALiBi through the command line (issue 26,
items 2 and 5): run --expand of the new steps against plain Python, verify and
practice marking their cells (right, wrong, carried), every --format rendering
them, the Chinese text, the KV-cache claims, and bad lessons exiting 2 with the
key and the fix.

Usage: test_heads.py BIN
"""
import json
import math
import os
import re
import subprocess
import sys
import tempfile

from clitest import check, environment, failures, runner

BIN = os.path.abspath(sys.argv[1])
run = runner(BIN)
ENV = environment({"NO_COLOR": "1", "LC_ALL": "C.UTF-8", "XDG_STATE_HOME": tempfile.mkdtemp()})


def trace(lesson):
    r = run("run", lesson, "--format", "json")
    check(r.returncode == 0, f"{lesson} runs: {r.stderr!r}")
    steps = json.loads(r.stdout)["steps"]
    return {s["id"]: [[float(x) for x in row] for row in s["data"]] for s in steps}


def expansion(lesson, step, cell):
    r = run("run", lesson, "--step", step, "--expand", cell, "--format", "json")
    check(r.returncode == 0, f"{lesson} --expand {cell} at {step}: {r.stderr!r}")
    return json.loads(r.stdout)["expansions"][0]


# --- RoPE: the rotation of one cell, worked out, against plain Python ---------
rope = trace("rope-relative")
q = rope["head0.Q"]
angle = 2 * 10000 ** (-2 / 4)  # row 2, pair (2, 3): p·θ_1, θ_1 = 10000^(−2/4)
e = expansion("rope-relative", "head0.q_rot", "2,3")
want = q[2][2] * math.sin(angle) + q[2][3] * math.cos(angle)
check(e["kind"] == "rotate" and e["position"] == 2 and e["pair"] == 1
      and abs(e["angle"] - angle) < 1e-15 and abs(e["value"] - want) < 1e-14,
      f"q_rot[2,3] = x·sin + y·cos at angle 2·10000^(−1/2): {e}")
check("head0.Q[word3,d2]×sin(0.02) + head0.Q[word3,d3]×cos(0.02)" in e["text"],
      f"the expansion names both cells of the pair: {e['text']}")
e = expansion("rope-relative", "head0.k_rot", "1,0")
want = rope["head0.K"][1][0] * math.cos(1.0) - rope["head0.K"][1][1] * math.sin(1.0)
check(abs(e["value"] - want) < 1e-14, f"k_rot[1,0] = x·cos 1 − y·sin 1: {e}")
# the scores read the rotated q and k: their product, not Q·Kᵀ
scores = rope["head0.scores"]
dot = sum(a * b for a, b in zip(rope["head0.q_rot"][1], rope["head0.k_rot"][2]))
check(abs(scores[1][2] - dot) < 1e-14, "head0.scores = q_rot·k_rotᵀ")
plain = sum(a * b for a, b in zip(q[1], rope["head0.K"][2]))
check(abs(scores[1][2] - plain) > 1e-3, "and not Q·Kᵀ: RoPE changes the scores")
check(all(abs(v[0]) <= 1e-12 for v in rope["head0.shift_check"]),
      f"shifting every position by 3 moves no score: {rope['head0.shift_check']}")
shifted = rope["head0.scores_shifted"]
check(max(abs(a - b) for ra, rb in zip(shifted, scores) for a, b in zip(ra, rb)) <= 1e-12,
      "scores_shifted equals scores")
check(abs(rope["head0.q_rot_shifted"][0][0] - rope["head0.q_rot"][0][0]) > 1e-3,
      "while the shifted rotations themselves differ")
e = expansion("rope-relative", "head0.shift_check", "1,0")
check(e["kind"] == "max_abs_diff" and len(e["row"]) == 3, f"shift_check expands its row: {e}")

# --- ALiBi: the bias and the biased scores -------------------------------------
alibi = trace("alibi-bias")
for h, slope in ((0, 2 ** -4), (1, 2 ** -8)):
    bias = alibi[f"head{h}.alibi_bias"]
    check(all(bias[i][j] == -slope * abs(i - j) for i in range(4) for j in range(4)),
          f"head{h}.alibi_bias = −{slope}·|i − j|")
    biased = alibi[f"head{h}.biased"]
    scaled = alibi[f"head{h}.scaled"]
    check(all(biased[i][j] == scaled[i][j] + bias[i][j] for i in range(4) for j in range(4)),
          f"head{h}.biased = scaled + alibi_bias")
    masked = alibi[f"head{h}.masked"]
    check(masked[3][1] == biased[3][1] and masked[0][1] == -math.inf,
          f"head{h}.masked masks the biased scores (causal)")
e = expansion("alibi-bias", "head0.alibi_bias", "3,0")
check(e["kind"] == "alibi" and e["slope"] == 0.0625 and e["value"] == -0.1875
      and "-0.0625×3" in e["text"], f"alibi_bias[3,0] = −0.0625×3: {e}")
e = expansion("alibi-bias", "head1.biased", "2,1")
check(e["kind"] == "add" and abs(e["value"] - (alibi["head1.scaled"][2][1] - 2 ** -8)) < 1e-15,
      f"biased[2,1] = scaled + bias: {e}")
e = expansion("alibi-bias", "head0.masked", "2,1")
check("head0.biased" in e["text"], f"masked reads the biased scores: {e['text']}")

# --- grouped K/V heads: which K/V head a query head reads ------------------------
gqa = trace("gqa-kv-heads")
check(gqa["head0.K"] == gqa["head1.K"] and gqa["head2.V"] == gqa["head3.V"]
      and gqa["head1.K"] != gqa["head2.K"], "heads 0–1 share K/V head 0, heads 2–3 K/V head 1")
r = run("run", "gqa-kv-heads", "--step", "head3.V")
flat = " ".join(r.stdout.split())
check("V₃ = V[:, 2:4] (K/V head 1 of 2: query heads 2–3 share it, ⌊3 / 2⌋ = 1)" in flat
      and "K/V heads: 2 (query head h reads K/V head ⌊h / 2⌋)" in flat,
      f"the formula says which K/V head head 3 reads: {flat[:800]}")
e = expansion("gqa-kv-heads", "head3.K", "0,1")
check(e["kind"] == "slice" and e["value"] == gqa["K"][0][3], f"head3.K[0,1] is K[0,3]: {e}")
mqa = trace("mqa-one-kv-head")
check(all(mqa[f"head{h}.K"] == mqa["K"] for h in range(4)), "MQA: every head reads the one K")
check(all(v[0] <= 1e-12 for h in range(4) for v in mqa[f"decode.head{h}.check"]),
      "MQA decoded with a KV cache equals the full causal rows")

# --- verify: cells of the new steps, right, wrong and carried ----------------------
with tempfile.TemporaryDirectory() as tmp:
    answers = os.path.join(tmp, "a.toml")
    q_rot = rope["head0.q_rot"]
    with open(answers, "w", encoding="utf-8") as f:
        f.write(f'[[answer]]\nstep = "head0.q_rot"\ncell = [1, 0]\nvalue = {q_rot[1][0]:.4f}\n'
                f'[[answer]]\nstep = "head0.q_rot"\ncell = [1, 1]\nvalue = 0.6000\n'
                f'[[answer]]\nstep = "head0.shift_check"\ncell = [2, 0]\nvalue = 0\n')
    r = run("verify", "rope-relative", "--answers", answers, "--format", "json")
    doc = json.loads(r.stdout)
    got = {(a["step"], tuple(a["cell"])): a["status"] for a in doc["answers"]}
    check(r.returncode == 1 and got[("head0.q_rot", (1, 0))] == "ok"
          and got[("head0.q_rot", (1, 1))] == "wrong" and got[("head0.shift_check", (2, 0))] == "ok",
          f"verify marks rotated cells: {got}")
    with open(answers, "w", encoding="utf-8") as f:  # a wrong scaled score, then its biased cell
        f.write('[[answer]]\nstep = "head0.scaled"\ncell = [2, 1]\nvalue = 1.0\n'
                f'[[answer]]\nstep = "head0.biased"\ncell = [2, 1]\nvalue = {1.0 - 0.0625:.4f}\n'
                f'[[answer]]\nstep = "head0.alibi_bias"\ncell = [3, 0]\nvalue = -0.1875\n')
    r = run("verify", "alibi-bias", "--answers", answers, "--format", "json")
    doc = json.loads(r.stdout)
    got = {(a["step"], tuple(a["cell"])): a["status"] for a in doc["answers"]}
    check(got[("head0.scaled", (2, 1))] == "wrong" and got[("head0.biased", (2, 1))] == "carried"
          and got[("head0.alibi_bias", (3, 0))] == "ok",
          f"verify: biased = your scaled + the bias is carried credit: {got}")

# --- practice: asks cells of the new steps and marks them --------------------------
PROMPT = re.compile(r"(\S+)\[([^,\]]+), ([^\]]+)\](?: \(you wrote [^)]*\))? = \? $")
for lesson, step, values in (("alibi-bias", "head1.alibi_bias", alibi["head1.alibi_bias"]),
                             ("rope-relative", "head0.k_rot", rope["head0.k_rot"])):
    rows_cols = json.loads(run("run", lesson, "--step", step, "--format", "json").stdout)["steps"][0]
    p = subprocess.Popen([BIN, "practice", lesson, "--step", step, "--cells", "2", "--save",
                          os.path.join(tempfile.mkdtemp(), "p.toml")], stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=ENV)
    out, pos, asked = b"", 0, 0
    while asked < 2:
        chunk = p.stdout.read1(4096)
        if not chunk:
            break
        out += chunk
        m = PROMPT.search(out.decode(errors="replace"), pos)
        if not m:
            continue
        pos = m.end()
        i, j = rows_cols["rows"].index(m.group(2)), rows_cols["cols"].index(m.group(3))
        p.stdin.write(f"{values[i][j]:.6f}\n".encode())
        p.stdin.flush()
        asked += 1
    p.stdin.close()
    out += p.stdout.read()
    p.wait()
    text = out.decode(errors="replace")
    check(asked == 2 and len(re.findall(r"^  ok\b", text, re.M)) == 2,
          f"practice {lesson} --step {step}: two cells asked, both marked ok: {text[-600:]!r}")

# --- every format renders the new steps; the Chinese text --------------------------
for lesson, step in (("rope-relative", "head0.q_rot"), ("alibi-bias", "head1.alibi_bias"),
                     ("gqa-kv-heads", "head3.K"), ("mqa-one-kv-head", "decode.t2.head3.K_cache")):
    for fmt in ("text", "json", "markdown", "latex"):
        r = run("run", lesson, "--format", fmt, "--expand", "1,0")
        shown = step.replace("_", "\\_") if fmt == "latex" else step
        check(r.returncode == 0 and shown in r.stdout, f"{lesson} --format {fmt} shows {step}")
    r = run("export", lesson, "--to", "pytorch")
    check(r.returncode == 0 and step.split(".")[0] in r.stdout, f"{lesson}: export --to pytorch")
r = run("--lang", "zh", "run", "rope-relative", "--step", "head0.q_rot", "--step", "head0.shift_check")
check("第 0 个头旋转后的 q（RoPE）" in r.stdout and "每个列对 (2i, 2i+1) = (a, b) 旋转角度" in r.stdout
      and "RoPE 平移检查" in r.stdout, f"the RoPE steps in Chinese: {r.stdout[:900]}")
r = run("--lang", "zh", "run", "alibi-bias", "--step", "head0.alibi_bias", "--step", "head0.biased")
check("第 0 个头的 ALiBi 偏置" in r.stdout and "斜率 m₀ = 2^(−8·1/2) = 0.0625" in r.stdout,
      f"the ALiBi steps in Chinese: {r.stdout[:900]}")
r = run("--lang", "zh", "run", "gqa-kv-heads", "--step", "head1.K")
check("0 号 K/V 头，共 2 个：查询头 0–1 共享它" in r.stdout and "K/V 头：2 个" in r.stdout,
      f"which K/V head, in Chinese: {r.stdout[:700]}")

# --- the KV-cache claims: checked, and a wrong one is a disagreement ---------------
r = run("check", "mqa-one-kv-head", "--format", "json")
doc = json.loads(r.stdout)
kinds = [c for lesson in doc.get("lessons", [doc]) for c in lesson.get("quantity_claims", [])]
check(r.returncode == 0 and sum(c["kind"] == "kv_cache_bytes" for c in kinds) == 4
      and all(c["status"] == "agrees" for c in kinds), f"MQA's cache claims agree: {kinds}")

# --- bad lessons: exit 2, naming the key and the fix --------------------------------
BASE = """[model]
heads = 4
{model}
[input]
X = [[0.1, 0.2], [0.3, 0.4], [0.5, 0.6]]
[weights]
W_Q = [[1, 0, 0, 1, 1, 0, 0, 1], [0, 1, 1, 0, 0, 1, 1, 0]]
W_K = {W_K}
W_V = {W_K}
{extra}"""
TWO = "[[1, 0, 0, 1], [0, 1, 1, 0]]"
CASES = [
    ("kv_heads = 3", TWO, "", "model.kv_heads", "choose kv_heads dividing 4"),
    ("kv_heads = 0", TWO, "", "model.kv_heads", "must be at least 1"),
    ("kv_heads = 2", "[[1, 0, 0], [0, 1, 1]]", "", "weights.W_K", "W_K needs kv_heads·d_k = 4"),
    ('positional_encoding = "none"\nrope_shift = 2', "[[1, 0, 0, 1, 1, 0, 0, 1], [0, 1, 1, 0, 0, 1, 1, 0]]",
     "", "model.rope_shift", 'set positional_encoding = "rope"'),
    ('positional_encoding = "alibi"\ncausal = true', "[[1, 0, 0, 1, 1, 0, 0, 1], [0, 1, 1, 0, 0, 1, 1, 0]]",
     "[decode]\nkv_cache = true\n", "decode.kv_cache", "set kv_cache = false"),
    ('kv_heads = 2', TWO,
     '[[claim]]\nquantity = "kv_cache_bytes"\nper = "token"\nbatch = 2\nvalue = 1\n', "claim[0].batch",
     "a per-token count has no batch"),
    ('kv_heads = 2', TWO, '[[claim]]\nquantity = "bytes"\nkv_heads = 2\nvalue = 1\n', "claim[0].kv_heads",
     "only a KV-cache claim"),
]
with tempfile.TemporaryDirectory() as tmp:
    for model, W_K, extra, key, fix in CASES:
        path = os.path.join(tmp, "bad.toml")
        with open(path, "w", encoding="utf-8") as f:
            f.write(BASE.format(model=model, W_K=W_K, extra=extra))
        r = run("run", path)
        check(r.returncode == 2 and key in r.stderr and fix in " ".join(r.stderr.split())
              and "bad.toml" in r.stderr, f"{model!r}: exit 2 naming {key} and the fix: {r.stderr!r}")
    path = os.path.join(tmp, "odd.toml")
    with open(path, "w", encoding="utf-8") as f:
        f.write('[model]\npositional_encoding = "rope"\n[input]\nX = [[1, 2, 3]]\n'
                '[weights]\nW_Q = "identity"\nW_K = "identity"\nW_V = "identity"\n')
    r = run("run", path)
    check(r.returncode == 2 and "model.positional_encoding" in r.stderr and "d_k = 3 is odd" in r.stderr,
          f"RoPE with an odd d_k: exit 2: {r.stderr!r}")

print(f"{len(failures)} failure(s)")
sys.exit(1 if failures else 0)
