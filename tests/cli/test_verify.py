#!/usr/bin/env python3
"""Command-line tests of `attn-trace verify` (issue 4) and `run --expand`:
the document-000 answers (an arithmetic slip, credit carried from it, an
unrelated value), JSON per docs/json.md, exit codes 0 / 1 / 2 with the bad
answers files, the expansions against plain Python, and the README walkthrough
against the tool's real output."""
import json
import math
import os
import re
import sys
import tempfile

from clitest import check, failures, runner

BIN = os.path.abspath(sys.argv[1])
HERE = os.path.dirname(os.path.abspath(__file__))
FIXTURES = os.path.join(HERE, "verify")
SRC = os.path.dirname(os.path.dirname(HERE))


run = runner(BIN)


def fixture(name):
    return os.path.join(FIXTURES, name)


# --- the document's own numbers, marked ---------------------------------------
r = run("verify", "river-bank", "--answers", fixture("document-000.toml"))
check(r.returncode == 1, f"wrong answers exit 1 (got {r.returncode}: {r.stderr})")
out = " ".join(r.stdout.split())  # the report wraps at 100 columns
check(all(len(line) <= 100 for line in r.stdout.splitlines()), "no report line is longer than 100")
check("10 values in 4 answers: 7 ok · 1 carried · 2 wrong · first wrong: K[1,3] (bank, d3)" in out,
      f"summary line names the counts and the first wrong cell:\n{out[:400]}")
check("right given your K, which was wrong at K[1,3]" in out, "carried answer says whose values")
check("mistake: arithmetic_slip — one product term is off: a product should be 0.06, not 0.12" in out,
      "the slip in K(bank) is named with what the product should be")
check("on paper: K[bank,d3] = X[bank,:]·W_K[:,d3] = 0.50×0.30 + 0.30×0.20 + 0.60×0.10 + 0.20×0.90 = 0.45"
      in out, "a wrong cell is worked out on paper")
check("given 0.982 · true 1.8455" in out and "none of the common mistakes gives this value" in out,
      "the unrelated 0.982 gets no diagnosis")

r = run("verify", "river-bank", "--answers", fixture("document-000.toml"), "--format", "json")
check(r.returncode == 1, "json: exit 1")
doc = json.loads(r.stdout)
check(doc["first_wrong"] == {"step": "K", "cell": [1, 3]}, f"json first_wrong: {doc['first_wrong']}")
check(doc["summary"] == {"ok": 7, "carried": 1, "rounded": 0, "imprecise": 0, "wrong": 2, "unreadable": 0,
                        "blank": 0, "missing": 0},
      f"json summary counts cells, as the text does: {doc['summary']}")
entries = {(a["step"], tuple(a["cell"])): a for a in doc["answers"]}
for a in doc["answers"]:
    for key in ("step", "cell", "given", "expected", "status", "diagnosis"):
        check(key in a, f"json answer has {key}")
    if a["status"] != "wrong":
        check(a["diagnosis"] is None, f"{a['step']}{a['cell']}: no diagnosis unless wrong")
slip = entries[("K", (1, 3))]
check(slip["status"] == "wrong" and slip["diagnosis"] == "arithmetic_slip", f"K[1,3]: {slip}")
check(abs(slip["given"] - 0.51) < 1e-12 and abs(slip["expected"] - 0.45) < 1e-12, "K[1,3] values")
carried = entries[("head0.scores", (0, 1))]
check(carried["status"] == "carried", f"scores[0,1] carried: {carried}")
# 0.69×0.66 + 0.50×0.54 + 0.86×0.66 + 0.85×0.51, from the document's own K
check(abs(carried["carried_expected"] - (0.69 * 0.66 + 0.50 * 0.54 + 0.86 * 0.66 + 0.85 * 0.51)) < 1e-9,
      "carried_expected is recomputed from the learner's K")
check(carried["carried_from"] == [{"step": "K", "cell": [1, 3], "wrong": True}],
      f"carried_from names K[1,3]: {carried['carried_from']}")
check(entries[("head0.scores", (0, 2))]["diagnosis"] is None, "0.982 undiagnosed in json")

# --- the softmax on paper: E / Σ with the exp and row_sum values, its note once ---
with tempfile.TemporaryDirectory() as tmp:
    path = os.path.join(tmp, "w.toml")
    with open(path, "w", encoding="utf-8") as f:
        f.write('[[answer]]\nstep = "head0.weights"\nrow = 0\nvalues = ["0.3000", "0.2000", "0.2500", "0.2500"]\n')
    r = run("verify", "river-bank", "--answers", path)
    flat = " ".join(r.stdout.split())
    check(r.returncode == 1, "wrong weights exit 1")
    # E[river,river] / Σ[river], the numbers of the exp and row_sum steps (2.3149 / 9.8255)
    check("= exp(0.8394) / (exp(0.8394) + exp(0.8378) + exp(0.9228) + exp(0.9871)) = 2.3149 / 9.8255"
          in flat, f"softmax on paper as E / Σ: {flat[:600]}")
    check(flat.count("the factor exp(−max) cancels") == 1, "the stable-softmax note is said once")
    check(all(len(line) <= 100 for line in r.stdout.splitlines()), "no line longer than 100")

# --- all right: exit 0 --------------------------------------------------------
r = run("verify", "river-bank", "--answers", fixture("all-right.toml"))
check(r.returncode == 0, f"all right exits 0 (got {r.returncode}: {r.stdout[-300:]} {r.stderr})")
check(" in 3 answers: " in r.stdout and " ok · 0 carried · 0 wrong · first wrong: none" in r.stdout,
      "all-right summary")
r = run("verify", "river-bank", "--answers", fixture("all-right.toml"), "--format", "json")
check(json.loads(r.stdout)["first_wrong"] is None, "json: first_wrong null when all right")

# --- bad answers files: exit 2, the file, the line, the fix, nothing on stdout ---
bad = {
    "bad-unknown-step.toml": ["bad-unknown-step.toml:2", "unknown step id 'head0.score'",
                              "valid ids: X, W_Q, Q, W_K, K, W_V, V, head0.Q"],
    "bad-cell-outside.toml": ["bad-cell-outside.toml:3", "cell [0, 7] is outside", "4×4"],
    "bad-row-shape.toml": ["bad-row-shape.toml:4", "a row of K has 4 numbers, but 3 were given"],
    "bad-matrix-shape.toml": ["bad-matrix-shape.toml:3", "K is 4×4, but the values given are 2 rows of 4"],
}
for name, needles in bad.items():
    r = run("verify", "river-bank", "--answers", fixture(name))
    check(r.returncode == 2, f"{name}: exit 2 (got {r.returncode})")
    check(r.stdout == "", f"{name}: nothing on stdout")
    for needle in needles:
        check(needle in r.stderr, f"{name}: message has {needle!r}: {r.stderr}")
# A string that is no number is that cell's status `unreadable` (issue 24): the
# rest is marked, the reason says the fix, exit 1.
r = run("verify", "river-bank", "--answers", fixture("bad-not-number.toml"), "--format", "json")
doc = json.loads(r.stdout)
check(r.returncode == 1 and doc["summary"]["unreadable"] == 1 and
      [a["note"] for a in doc["answers"] if a["status"] == "unreadable"] ==
      ['"about 0.84" is not a number; write a number such as 0.250'],
      f"a cell that is no number is unreadable, with its reason: {r.stdout} {r.stderr}")
r = run("verify", "river-bank", "--answers", fixture("no-such-file.toml"))
check(r.returncode == 2 and "no-such-file.toml" in r.stderr, f"missing answers file: {r.stderr}")
r = run("verify", "river-bank")
check(r.returncode == 2, "verify without --answers is a usage error")

# --- run --expand: every format; JSON against plain Python ---------------------
r = run("run", "river-bank", "--expand", "0,1", "--width", "1000")  # each expansion on one line
check(r.returncode == 0, "run --expand exits 0")
check("head0.scores[river,bank] = head0.Q[river,:]·head0.K[bank,:] = "
      "0.69×0.66 + 0.50×0.54 + 0.86×0.66 + 0.85×0.45 = 1.6755" in r.stdout, "text expansion of a score")
check("head0.scaled[river,bank] = head0.scores[river,bank] / √4 = 1.6755 / 2.00 = 0.8378" in r.stdout,
      "text expansion of the scale")
check("the factor exp(-max) cancels" in r.stdout, "softmax note that the shift cancels, once at the weights step")
check("kept: no mask covers key bank for query river" in r.stdout, "mask decision and why")
r = run("run", "river-bank", "--expand", "0,1", "--format", "json")
trace = json.loads(r.stdout)
steps = {s["id"]: s["data"] for s in trace["steps"]}
exps = {e["step"]: e for e in trace["expansions"]}
check(len(trace["expansions"]) == len(trace["steps"]), "one expansion per step")
Q, K = steps["head0.Q"], steps["head0.K"]
score = sum(Q[0][k] * K[1][k] for k in range(4))
check(abs(exps["head0.scores"]["value"] - score) < 1e-12, "json score expansion value")
check([round(t["product"], 12) for t in exps["head0.scores"]["terms"]] ==
      [round(Q[0][k] * K[1][k], 12) for k in range(4)], "json score terms are Q[river,k]·K[bank,k]")
masked_row = steps["head0.masked"][0]
on_paper = [math.exp(x) for x in masked_row]
w = exps["head0.weights"]
check(w["shifted"] is False and all(abs(a - b) < 1e-12 for a, b in zip(w["exps"], on_paper)),
      "json softmax: the exponentials as on paper, exp(x), no shift")
check(abs(w["denominator"] - sum(on_paper)) < 1e-12, "json softmax denominator")
check(abs(w["value"] - on_paper[1] / sum(on_paper)) < 1e-12, "json softmax value")
V, A = steps["head0.V"], steps["head0.weights"]
check(abs(exps["head0.context"]["value"] - sum(A[0][j] * V[j][1] for j in range(4))) < 1e-12,
      "json context = weights row · V column")
r = run("run", "causal-decoder", "--expand", "0,2", "--format", "json")
m = {e["step"]: e for e in json.loads(r.stdout)["expansions"]}["head0.masked"]
check(m["masked"] is True and m["reasons"] == ["causal"] and m["value"] == "-inf", f"json mask: {m}")
r = run("run", "river-bank", "--expand", "0,1", "--format", "markdown")
check("`head0.scores[river,bank] = " in r.stdout, "markdown expansion")
r = run("run", "river-bank", "--expand", "0,1", "--format", "latex")
check("0.69 \\times 0.66" in r.stdout and "\\frac{\\exp(" in r.stdout, "latex expansion")
r = run("run", "river-bank", "--expand", "0,1", "--step", "head0.scores", "--format", "json")
check([e["step"] for e in json.loads(r.stdout)["expansions"]] == ["head0.scores"],
      "--step limits the expansions")
for bad_cell in ("9,9", "x", "1", "-1,0"):
    r = run("run", "river-bank", "--expand", bad_cell)
    check(r.returncode == 2 and r.stdout == "" and "--expand" in r.stderr,
          f"--expand {bad_cell}: exit 2 with a message ({r.returncode}: {r.stderr})")

# --- --brief: one line per step, then the result line (issue 24) -------------
r = run("verify", "river-bank", "--answers", fixture("document-000.toml"), "--brief", "--width", "200")
check(r.returncode == 1, f"--brief: exit 1 as the full report ({r.returncode})")
check(r.stdout == "Q: 4 ok\n"
      "K: 3 ok · 1 wrong — first: K[1,3] (bank, d3) wrong · mistake: arithmetic_slip\n"
      "head0.scores: 0 ok · 1 carried · 1 wrong — first: head0.scores[0,2] (river, walk) wrong\n"
      "result: not passed — 2 values wrong\n", "--brief: a line per step, then the result:\n" + r.stdout)
full = run("verify", "river-bank", "--answers", fixture("document-000.toml"), "--width", "200")
check(full.stdout.endswith("\nresult: not passed — 2 values wrong\n"), "the full report ends with the same result line")
r = run("verify", "river-bank", "--answers", fixture("document-000.toml"), "--brief", "--lang", "zh", "--width", "200")
check(r.returncode == 1 and r.stdout.splitlines()[-1] == "结论：未通过——2 个值错误"
      and r.stdout.splitlines()[0] == "Q：4 个正确", "--brief --lang zh:\n" + r.stdout)
r = run("verify", "river-bank", "--answers", fixture("all-right.toml"), "--brief")
check(r.returncode == 0 and r.stdout.endswith("result: passed — every value is ok or carried\n"),
      f"--brief on a right page: exit 0, passed ({r.returncode}: {r.stdout})")
r = run("verify", "river-bank", "--answers", fixture("all-right.toml"), "--brief", "--format", "json")
check(r.returncode == 2 and r.stdout == "" and "--brief" in r.stderr, f"--brief with --format: exit 2 ({r.stderr})")

# --- the README walkthrough is the tool's real output --------------------------
readme = open(os.path.join(SRC, "README.md"), encoding="utf-8").read()
section = readme.split("## Check a hand calculation", 1)
check(len(section) == 2, "README has the 'Check a hand calculation' section")
if len(section) == 2:
    body = section[1].split("\n## ", 1)[0]
    answers = re.search(r"```toml\n(.*?)```", body, re.S)
    shown = re.search(r"```console\n\$ attn-trace verify river-bank --answers mine.toml\n(.*?)```", body, re.S)
    check(answers is not None and shown is not None, "README walkthrough has the file and the output")
    if answers and shown:
        with tempfile.TemporaryDirectory() as tmp:
            with open(os.path.join(tmp, "mine.toml"), "w", encoding="utf-8") as f:
                f.write(answers.group(1))
            r = run("verify", "river-bank", "--answers", "mine.toml", cwd=tmp)
        check(r.stdout == shown.group(1), "README walkthrough output matches the tool:\n" + r.stdout)

print(f"{len(failures)} failure(s)")
sys.exit(1 if failures else 0)
