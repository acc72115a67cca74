#!/usr/bin/env python3
"""`attn-trace practice` driven through piped stdin by scripted learners
(issue 22, item 1): right answers, a forgotten scale, softmax down the columns,
a rounding habit, hints, back, quit and resume, restart; every verdict printed
must be the one `verify --format json` gives the saved answers file.

Usage: test_practice.py BIN
"""
import json
import os
import re
import subprocess
import sys
import tempfile

import numpy as np

from clitest import check, failures, environment, runner

BIN = sys.argv[1]
run = runner(BIN)
STATE = tempfile.mkdtemp(prefix="practice-state-")
ENV = environment({"XDG_STATE_HOME": STATE, "NO_COLOR": "1", "LC_ALL": "C.UTF-8"})
PROMPT = re.compile(r"(\S+)\[([^,\]]+), ([^\]]+)\](?: \(you wrote [^)]*\))? = \? $")
VERDICT = re.compile(r"^  (ok|carried|rounded|imprecise|wrong)\b(?: — mistake: (\w+))?", re.M)


def trace(lesson):
    steps = json.loads(run("run", lesson, "--format", "json", env=ENV).stdout)["steps"]
    for s in steps:  # -inf is written as a string
        s["data"] = [[float(x) for x in row] for row in s["data"]]
    return {s["id"]: s for s in steps}


def cell_index(step, row, col):
    return step["rows"].index(row), step["cols"].index(col)


def converse(args, answer_for, limit=200):
    """Runs practice with `args`, answering each prompt with answer_for(step, row, col, times)
    (a line, or None to close stdin). Returns (output, [(cell, typed, verdict, mistake)]):
    the verdict printed after each answer."""
    p = subprocess.Popen([BIN, "practice", *args], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         stderr=subprocess.STDOUT, env=ENV)
    out, marks, seen, pos, last = b"", [], {}, 0, None

    def record(text, end):
        if last and last[1] not in ("h", "s", "b", "q", "?"):
            v = VERDICT.findall(text[last[2]:end])
            if v:
                marks.append((last[0], last[1], v[0][0], v[0][1]))

    while len(marks) < limit:
        chunk = p.stdout.read1(4096)
        if not chunk:
            break
        out += chunk
        text = out.decode(errors="replace")
        m = PROMPT.search(text, pos)
        if not m:
            continue
        record(text, m.start())
        pos = m.end()
        key = (m.group(1), m.group(2), m.group(3))
        seen[key] = seen.get(key, 0) + 1
        line = answer_for(*key, seen[key])
        if line is None:
            last = None
            p.stdin.close()
            break
        p.stdin.write((line + "\n").encode())
        p.stdin.flush()
        last = (key, line, pos)
    if not p.stdin.closed:
        p.stdin.close()
    rest = p.stdout.read()
    p.wait(timeout=60)
    text = (out + rest).decode(errors="replace")
    record(text, len(text))
    check(p.returncode == 0, f"practice {args} exits 0 (got {p.returncode})\n{text[-2000:]}")
    return text, marks


def verify_json(lesson, path):
    r = run("verify", lesson, "--answers", path, "--format", "json", env=ENV)
    check(r.returncode in (0, 1), f"verify of the saved file runs: {r.stderr}")
    return json.loads(r.stdout)


def same_verdicts(lesson, path, marks, t, what):
    """The last verdict practice printed for each cell equals verify's on the saved file."""
    last = {}
    for (step, row, col), _typed, verdict, mistake in marks:
        last[(step, *cell_index(t[step], row, col))] = (verdict, mistake)
    report = verify_json(lesson, path)
    got = {(a["step"], *a["cell"]): (a["status"], a.get("diagnosis") or "")
           for a in report["answers"]}
    check(set(got) == set(last), f"{what}: the saved file answers the cells answered "
                                 f"({sorted(got)} vs {sorted(last)})")
    for key, verdict in last.items():
        if key in got:
            check(got[key][0] == verdict[0],
                  f"{what}: {key}: practice printed {verdict}, verify says {got[key]}")
            if verdict[1]:
                check(got[key][1] == verdict[1], f"{what}: {key}: mistake {verdict} vs {got[key]}")
    return report


def fmt(v, decimals=4):
    return f"{v:.{decimals}f}"


# 1. river-bank: right answers, a forgotten scale, a rounding habit, hints.
t = trace("river-bank")
scores = np.array(t["head0.scores"]["data"])
river = os.path.join(STATE, "river.answers.toml")
state = {"forgot": False, "rounded": False, "hinted": False}


def learner(step, row, col, times):
    r, c = cell_index(t[step], row, col)
    value = t[step]["data"][r][c]
    if step == "head0.scaled" and not state["forgot"]:
        state["forgot"] = True
        return fmt(scores[r][c])  # forgot to divide by √d_k
    if step == "head0.weights" and not state["hinted"]:
        state["hinted"] = True
        return "h"
    if step == "head0.weights" and not state["rounded"]:
        state["rounded"] = True
        return fmt(value, 1)  # writes one decimal: imprecise
    return fmt(value)


out, marks = converse(["river-bank", "--step", "head0.scores", "--step", "scaled",
                       "--step", "head0.weights", "--cells", "2", "--save", river], learner)
check("head0.scores[river, bank] = ? " in out, "asks by token names")
check("  S₀ = Q₀·K₀ᵀ\n" in out and "shapes: (4×4)·(4×4)ᵀ → 4×4" in out, "the step's formula and shape")
check("── Step 2 · W_Q · Weights W_Q" in out and "river  0.6000  0.2000  0.7000  0.1000" in out,
      "the given matrices, labelled as run shows them")
check("mistake: unscaled: the scores were not divided by 2" in out, f"the forgotten scale is named\n{out}")
check("why: Dividing by √d_k" in out and "see: attn-trace run why-scale" in out, "its why and lesson")
check("One more cell of head0.scaled comes next" in out, "a follow-up cell after a named mistake")
check("hint 1 of 3, the formula: A₀ = softmax(masked)" in out, f"the first hint\n{out}")
check(out.count("hint 1 of 3") == 2 and "scores were not divided by 2\n" in out and
      out.index("hint 1 of 3, the formula: S₀ / √d_k") > out.index("mistake: unscaled"),
      f"a wrong answer brings the next hint\n{out}")
verdicts = [m[2] for m in marks]
check(verdicts.count("wrong") == 1 and "imprecise" in verdicts, f"marks: {marks}")
report = same_verdicts("river-bank", river, marks, t, "river-bank")
check(report["summary"]["wrong"] == 0 and report["summary"]["imprecise"] == 1, f"{report['summary']}")
check("1 right at the first try" not in out and "── Summary: every cell asked" in out, "the end summary")
check("head0.scaled[river, bank]: unscaled — attn-trace run why-scale" in out,
      "the summary names the mistake and what to reread")
saved = open(river).read()
check("# practice: finished" in saved and "hints 1" in saved, "hints and the end are recorded")

# 2. causal-decoder: softmax down the columns, a masked cell, a rounding habit.
t2 = trace("causal-decoder")
masked = np.array(t2["head0.masked"]["data"])
columns = np.exp(masked - masked.max(axis=0)) / np.exp(masked - masked.max(axis=0)).sum(axis=0)
causal = os.path.join(STATE, "causal.answers.toml")


def column_learner(step, row, col, times):
    r, c = cell_index(t2[step], row, col)
    value = t2[step]["data"][r][c]
    if step == "head0.weights" and times == 1:
        return fmt(columns[r][c])
    if step == "head0.masked" and np.isinf(value):
        return "-inf"
    return fmt(value)


out2, marks2 = converse(["causal-decoder", "--step", "head0.masked", "--step", "head0.weights",
                         "--save", causal], column_learner)
check("head0.masked[<s>, The] = ? -inf" in out2, f"a masked cell is asked\n{out2}")
check(any(m[3] == "softmax_wrong_axis" for m in marks2), f"softmax down the columns is named: {marks2}")
same_verdicts("causal-decoder", causal, marks2, t2, "causal-decoder")

# 3. Back, quit and resume, restart (the default file under XDG_STATE_HOME).
default = os.path.join(STATE, "attn-trace", "river-bank.answers.toml")
script = iter(["1.6755", "b", "1.676", "q"])
out3, marks3 = converse(["river-bank", "--step", "head0.scores"], lambda *a: next(script))
check(os.path.exists(default), f"progress saved under XDG_STATE_HOME: {default}")
check("head0.scores[river, bank] (you wrote 1.6755) = ? 1.676" in out3, f"back shows the answer\n{out3}")
check("To go on where you stopped: attn-trace practice river-bank" in out3, "quit says how to go on")
saved = open(default).read()
check(saved.count("[[answer]]") == 1 and "value = 1.676\n" in saved, f"back replaced the answer\n{saved}")
script = iter([None])
out4, _ = converse(["river-bank"], lambda *a: next(script))
check("Resuming: 1 of 3 cells done" in out4, f"resumes with the saved steps\n{out4}")
check("head0.scores[bank, river] = ? " in out4, "resumes at the next cell")
out5, _ = converse(["river-bank", "--restart"], lambda *a: None)
check("Resuming" not in out5 and "cells to work out, step by step: 27" in out5, f"--restart starts over\n{out5[-600:]}")

# 4. Bad input: not a number, a given step, the page.
script = iter(["1,5", "q"])
out6, _ = converse(["river-bank", "--restart", "--step", "head0.scores"], lambda *a: next(script))
check("'1,5' is not a number" in out6, "a typed non-number is explained, the prompt comes back")
r = run("practice", "river-bank", "--step", "W_Q", env=ENV, stdin="")
check(r.returncode == 2 and "the lesson gives W_Q" in r.stderr, f"a given step: exit 2 ({r.stderr})")
r = run("practice", "river-bank", "--format", "html", env=ENV, stdin="")
if os.path.exists(os.path.join(os.path.dirname(os.path.abspath(BIN)), "attn-engine.js")):
    check(r.returncode == 0 and r.stdout.startswith("<!DOCTYPE html>") and "AttnEngine" in r.stdout,
          f"--format html: the page ({r.returncode} {r.stderr})")
else:  # a build without emscripten (tests/cli/test_practice_page.py tests the page)
    check(r.returncode == 2 and "this build has no WebAssembly engine" in r.stderr and r.stdout == "",
          f"--format html without the engine: exit 2 ({r.stderr})")

# 5. The default lesson: the first of the course not finished.
first = run("lessons", env=ENV).stdout.split("\n 1  ")[1].split()[0]
out7, _ = converse([], lambda *a: None)
check(f"attn-trace · {first}" in out7, f"the default lesson is the course's first ({first})")

# 5b. Quit before the first answer, then resume (the saved file has no [[answer]] yet);
# a hint's two lines come out as two lines, not joined by a shown control (␊).
quit_early = os.path.join(STATE, "quit-early.toml")
r1 = run("practice", "river-bank", "--save", quit_early, env=ENV, stdin="q\n")
r2 = run("practice", "river-bank", "--save", quit_early, env=ENV, stdin="1.5\nq\n")
check(r1.returncode == 0 and r2.returncode == 0 and "Resuming: 0 of 27 cells done" in r2.stdout,
      f"resume after quitting at once: exit {r2.returncode} {r2.stderr}")
check("\u240a" not in r2.stdout and "\n  with your numbers: Q[river,d1] = " in r2.stdout,
      f"the hint's lines\n{r2.stdout[-500:]}")
saved = open(quit_early).read()
check(saved.count("[[answer]]") == 1 and "value = 1.5\n" in saved, f"the answer after resuming is kept\n{saved}")

# 6. --lang zh throughout.
out8, _ = converse(["river-bank", "--restart", "--lang", "zh", "--step", "head0.scores"],
                   lambda *a: None)
check(re.search(r"个单元格；\s*进度保存在", out8) and "── 目前的小结" in out8, f"--lang zh: practice in Chinese\n{out8[:1500]}")
r = run("practice", "river-bank", "--restart", "--lang", "zh", "--step", "head0.scores", env=ENV,
        stdin="7\n")
check(r.returncode == 0 and "\n  错误（wrong）——" in r.stdout,
      f"--lang zh: the verdict's word in Chinese\n{r.stdout[-400:]}")

print(f"{len(failures)} failure(s)")
sys.exit(1 if failures else 0)
