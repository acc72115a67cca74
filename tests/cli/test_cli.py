#!/usr/bin/env python3
"""Command-line tests of `attn-trace run` and `lessons`: every embedded lesson
in every format, the JSON against an independent plain-Python computation,
colour and NO_COLOR, summaries, and every bad input of issue 2 (exit 2 with a
message naming the file, key, shapes and fix).

Usage: test_cli.py PATH/TO/attn-trace [latex]
  latex: the LaTeX output compiles with pdflatex (exit 77 = skipped without it)."""
import re
import json
import math
import os
import shutil
import subprocess
import sys
import tempfile
import tomllib

from clitest import check, environment, failures, run_program

BIN = sys.argv[1]
MODE = sys.argv[2] if len(sys.argv) > 2 else "main"
SKIP = 77  # CTest's SKIP_RETURN_CODE for these tests
SRC = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def run(*args, env=None, cwd=None):
    return run_program(BIN, *args, cwd=cwd, env=environment(env, drop=("NO_COLOR",)))


# A lesson whose title and tokens hold Unicode symbols, CJK and LaTeX specials.
UNICODE_LESSON = ('[lesson]\ntitle = "√d_k · Q×Kᵀ → weights ≈ 1 — 银行 & co_#%"\n[model]\ncausal = true\n'
                  '[input]\ntokens = ["银行", "river_1", "a^b", "<s>"]\nX = [[1, 0], [0, 1], [1, 1], [0.5, 0.5]]\n'
                  '[weights]\nW_Q = "identity"\nW_K = "identity"\nW_V = "identity"\n')


def listed_lessons(listing):
    """The ids `lessons` lists, in its order: the numbered lines, and the variants
    named on the lines under them (a title wraps onto lines of its own first)."""
    ids = []
    in_variants = False
    for line in listing.splitlines():
        words = line.split()
        numbered = re.match(r" ?\d+  (\S+) +\d +\S+", line)
        if numbered:
            ids.append(numbered.group(1))
            in_variants = False
        elif words[:1] == ["variants:"]:
            ids += [w.rstrip(",") for w in words[1:]]
            in_variants = True
        elif in_variants and words and line.startswith(" "):
            ids += [w.rstrip(",") for w in words]  # a wrapped variants line
        else:
            in_variants = False
    return ids


def pdflatex(tmp, body, preamble=""):
    """Compiles a LaTeX fragment of `run` in a minimal document; the finished process."""
    with open(os.path.join(tmp, "t.tex"), "w") as f:
        f.write("\\documentclass{article}\\usepackage{amsmath}" + preamble + "\\begin{document}\n" + body
                + "\\end{document}\n")
    return subprocess.run(["pdflatex", "-interaction=nonstopmode", "-halt-on-error", "t.tex"],
                          cwd=tmp, capture_output=True, text=True)


def latex_compiles():
    """Every lesson's LaTeX, Unicode tokens and --expand compile; skipped without pdflatex."""
    if shutil.which("pdflatex") is None:
        print("SKIPPED: pdflatex is not installed (apt-get install texlive-latex-base)")
        return SKIP
    ids = listed_lessons(run("lessons").stdout)
    check("river-bank" in ids, "lessons lists river-bank")
    with tempfile.TemporaryDirectory() as tmp:
        for lesson in ids:
            body = run("run", lesson, "--format", "latex").stdout
            r = pdflatex(tmp, body, preamble="\\setcounter{MaxMatrixCols}{40}")
            check(r.returncode == 0, f"latex of {lesson} compiles: {r.stdout[-400:]}")
        with open(os.path.join(tmp, "u.toml"), "w", encoding="utf-8") as f:
            f.write(UNICODE_LESSON)
        r = pdflatex(tmp, run("run", os.path.join(tmp, "u.toml"), "--format", "latex", "--expand", "1,0").stdout)
        check(r.returncode == 0, f"latex with Unicode tokens compiles: {r.stdout[-400:]}")
        # The arithmetic of --expand breaks across lines instead of running off the page.
        r = pdflatex(tmp, run("run", "two-heads", "--format", "latex", "--expand", "1,1").stdout)
        check(r.returncode == 0 and "Overfull" not in r.stdout,
              f"latex --expand compiles with nothing running off the page: {r.stdout[-400:]}")
    print(f"{len(failures)} failure(s)")
    return 1 if failures else 0


if MODE == "latex":
    sys.exit(latex_compiles())

# --- every embedded lesson, every format ------------------------------------
lessons = run("lessons")
check(lessons.returncode == 0, "lessons exits 0")
ids = listed_lessons(lessons.stdout)
check("river-bank" in ids, "lessons lists river-bank")

# --- lessons: a course in teaching order, each line within 100 columns -------
files = sorted(f[:-5] for f in os.listdir(os.path.join(SRC, "lessons")) if f.endswith(".toml"))
check(sorted(ids) == files, f"lessons lists every lesson once: {ids}")
headers = {}
for lesson_id in files:
    with open(os.path.join(SRC, "lessons", lesson_id + ".toml"), "rb") as f:
        headers[lesson_id] = tomllib.load(f)["lesson"]
for lesson_id, h in headers.items():
    for before in h.get("after", []) + ([h["variant_of"]] if "variant_of" in h else []):
        check(ids.index(before) < ids.index(lesson_id),
              f"lessons: {lesson_id} comes after {before}, which it builds on")


def columns(text):
    import unicodedata
    return sum(2 if unicodedata.east_asian_width(ch) in "WF" else 1 for ch in text)


check(all(columns(line) <= 80 for line in lessons.stdout.splitlines()),
      "lessons: every line fits 80 columns when piped")
for width in (40, 120):
    r = run("lessons", "--width", str(width))
    check(r.returncode == 0 and all(columns(line) <= width for line in r.stdout.splitlines())
          and all(i in r.stdout for i in headers), f"lessons --width {width}: every lesson, every line fits")
# A lesson's line: its number from the first column, id, level, document, title.
numbered = [line for line in lessons.stdout.splitlines() if re.match(r" ?\d+  \S+ +\d +\S+", line)]
check(not any("fill-values-" in line.split()[1] for line in numbered),
      "lessons: the fill-values variants share one entry, not five numbered lines")
check(any(line.split()[:2] == ["variants:", "fill-values-1e9,"] for line in lessons.stdout.splitlines()),
      "lessons: the fill-values variants are named under fill-values")
levels = {line.split()[1]: int(line.split()[2]) for line in numbered}
check(all(levels[i] == headers[i].get("level", 1) for i in levels), "lessons: each line's level")
check(any(line.split()[1:4] == ["river-bank", "1", "000"] for line in numbered),
      "lessons: river-bank, level 1, document 000")
check("003_87eaca95f9b8aedb.txt" in lessons.stdout, "lessons: the source documents are named")

# --- lessons show ID: the TOML as embedded, which loads and traces the same ---
with tempfile.TemporaryDirectory() as tmp:
    for lesson_id in ("river-bank", "fill-values-zero", "key-bias"):
        shown = run("lessons", "show", lesson_id)
        with open(os.path.join(SRC, "lessons", lesson_id + ".toml"), encoding="utf-8") as f:
            check(shown.returncode == 0 and shown.stdout == f.read(),
                  f"lessons show {lesson_id}: the file as embedded, byte for byte")
        copy = os.path.join(tmp, "copy.toml")
        with open(copy, "w", encoding="utf-8") as f:
            f.write(shown.stdout)
        a = json.loads(run("run", lesson_id, "--format", "json").stdout)
        b = json.loads(run("run", copy, "--format", "json").stdout)
        check(a["steps"] == b["steps"], f"lessons show {lesson_id}: the copy traces the same")
unknown = run("lessons", "show", "river-bnak")
check(unknown.returncode == 2 and "river-bnak" in unknown.stderr and "river-bank" in unknown.stderr,
      f"lessons show with an unknown id: exit 2, listing the ids ({unknown.stderr})")
for lesson in ids:
    for fmt in ("text", "json", "markdown", "latex"):
        r = run("run", lesson, "--format", fmt, cwd=tempfile.gettempdir())
        check(r.returncode == 0, f"run {lesson} --format {fmt} exits 0 (got {r.returncode}: {r.stderr})")
        check(len(r.stdout) > 200, f"run {lesson} --format {fmt} prints the trace")
        check("\x1b[" not in r.stdout, f"run {lesson} --format {fmt}: no escape codes when piped")
        if fmt == "json":
            doc = json.loads(r.stdout)
            check(doc["lesson"] == lesson, f"{lesson} json names the lesson")
            ids_in_json = [s["id"] for s in doc["steps"]]
            check(ids_in_json[0] == "X" and "head0.weights" in ids_in_json, f"{lesson} json step ids")
            for s in doc["steps"]:
                check(len(s["data"]) == s["shape"][0] == len(s["rows"]), f"{lesson} {s['id']} rows")
                check(all(len(row) == s["shape"][1] == len(s["cols"]) for row in s["data"]), f"{lesson} {s['id']} cols")
            for s in doc["steps"]:
                if s["id"].endswith(".weights") and not s["id"].startswith("grad."):
                    for row in s["data"]:
                        vals = [v for v in row if not isinstance(v, str)]
                        # a fully masked row is nan or, under masked_row = "zero", all 0
                        if len(vals) == len(row) and any(vals):
                            # in f16 each weight is rounded: 3 × 0.33325 = 0.99976
                            tol = 1e-12 if "dtype" not in doc else 1e-2
                            check(abs(sum(vals) - 1) < tol, f"{lesson} {s['id']} rows sum to 1")
        if fmt == "latex":
            check(r.stdout.count("\\begin{bmatrix}") == r.stdout.count("\\end{bmatrix}") > 5,
                  f"{lesson} latex: one bmatrix per step")
        if fmt == "markdown":
            check("|---|" in r.stdout, f"{lesson} markdown has tables")

# `run` alone traces river-bank, from any folder
default = run("run", cwd="/")
check(default.returncode == 0 and "river-bank" in default.stdout.splitlines()[0], "run alone traces river-bank")

# --- river-bank JSON against plain Python, each step from the tool's values ---
# Every step from the tool's own values of the steps it reads (so each
# operation is compared alone), within what floating point allows two correct
# results of that operation in any summation order (tests/bounds.py).
with open(os.path.join(SRC, "lessons", "river-bank.toml"), "rb") as f:
    L = tomllib.load(f)
X, WQ, WK, WV = (L["input"]["X"], L["weights"]["W_Q"], L["weights"]["W_K"], L["weights"]["W_V"])


def matmul(A, B):
    return [[math.fsum(A[i][k] * B[k][j] for k in range(len(B))) for j in range(len(B[0]))] for i in range(len(A))]


doc = json.loads(run("run", "river-bank", "--format", "json").stdout)
got = {s["id"]: s for s in doc["steps"]}
tool = {sid: s["data"] for sid, s in got.items()}
sys.path.insert(0, os.path.join(SRC, "tests"))
try:
    import bounds
except ModuleNotFoundError as missing:  # bounds.py needs numpy
    print(f"skipped: river-bank against plain Python needs {missing.name} (tests/bounds.py)")
else:
    T = lambda M: [list(r) for r in zip(*M)]  # noqa: E731
    Q, K, V = tool["Q"], tool["K"], tool["V"]
    S = [[math.fsum(q * k for q, k in zip(qr, kr)) for kr in K] for qr in Q]
    scaled = [[v / 2.0 for v in row] for row in tool["head0.scores"]]
    W = [[math.exp(v) / math.fsum(math.exp(u) for u in row) for v in row] for row in tool["head0.scaled"]]
    C = matmul(tool["head0.weights"], V)
    for sid, want, bound in (
            ("Q", matmul(X, WQ), bounds.product(X, WQ, "f64")),
            ("K", matmul(X, WK), bounds.product(X, WK, "f64")),
            ("V", matmul(X, WV), bounds.product(X, WV, "f64")),
            ("head0.scores", S, bounds.product(Q, T(K), "f64")),
            ("head0.scaled", scaled, bounds.elementwise("f64", 2)),
            ("head0.weights", W, bounds.softmax(tool["head0.scaled"], "f64")),
            ("head0.context", C, bounds.product(tool["head0.weights"], V, "f64"))):
        bad, worst = bounds.compare(tool[sid], want, bound)
        check(not bad.any(), f"river-bank {sid} matches plain Python ({worst:.3g} of the bound)")
check(got["head0.weights"]["rows"] == ["river", "bank", "walk", "by"], "weights rows are tokens")
check(got["Q"]["cols"] == ["d0", "d1", "d2", "d3"], "feature columns are d0..d3")

# 17 significant digits, -inf / nan as strings
tmp = tempfile.mkdtemp()
try:
    causal = os.path.join(tmp, "causal.toml")
    with open(causal, "w") as f:
        f.write('[model]\ncausal = true\n[input]\ntokens = ["a", "b"]\nX = [[0.1, 0.2], [0.3, 0.4]]\n'
                '[weights]\nW_Q = "identity"\nW_K = "identity"\nW_V = "identity"\n')
    doc = json.loads(run("run", causal, "--format", "json").stdout)
    masked = next(s for s in doc["steps"] if s["id"] == "head0.masked")["data"]
    check(masked[0][1] == "-inf", "json writes -inf as a string")
    check(abs(masked[1][0] - 0.11 / math.sqrt(2)) < 1e-15, "json masked value to 17 digits")
    with open(causal, "a") as f:
        f.write('[[claim]]\nstep = "head0.masked"\ncell = [0, 1]\nvalue = "-inf"\n')
    r = run("check", causal, "--format", "json", "--golden", os.path.join(tmp, "none.toml"))
    claims = json.loads(r.stdout)["claims"]
    check(claims[0]["stated"] == "-inf" and claims[0]["status"] == "agrees",
          "check --format json writes a -inf claim as a string, and it agrees")
    text = run("run", causal, "--step", "head0.masked").stdout
    check("-inf" in text, "text shows masked cells as -inf")

    # fully masked row: NaN policy warns, JSON writes "nan"
    full = os.path.join(tmp, "full.toml")
    with open(full, "w") as f:
        f.write('[input]\nX = [[1, 0], [0, 1]]\nkeep = [[0, 0], [1, 1]]\n'
                '[weights]\nW_Q = "identity"\nW_K = "identity"\nW_V = "identity"\n')
    r = run("run", full, "--format", "json")
    doc = json.loads(r.stdout)
    weights = next(s for s in doc["steps"] if s["id"] == "head0.weights")["data"]
    check(weights[0] == ["nan", "nan"], "fully masked row is nan in json")
    check(any("row 0 (t0)" in w for w in doc["warnings"]), "json warnings name the row")
    check("row 0 (t0)" in r.stderr, "the warning also reaches stderr")

    # colour: always / never / NO_COLOR / piped auto
    check("\x1b[48;5;" in run("run", "--color", "always").stdout, "--color always shades the weights")
    check("\x1b[" not in run("run", "--color", "never").stdout, "--color never: no escapes")
    check("\x1b[" not in run("run", env={"NO_COLOR": "1"}).stdout, "NO_COLOR respected")

    # --step / --head / --summary
    r = run("run", "--step", "head0.weights", "--step", "Q")
    check(r.returncode == 0 and "head0.weights" in r.stdout and "Step 5 · K" not in r.stdout and "Step 4 · W_K" not in r.stdout, "--step filters")
    r = run("run", "--step", "head0.weight")
    check(r.returncode == 2 and "unknown step id 'head0.weight'" in r.stderr and "head0.weights" in r.stderr,
          "unknown --step lists the valid ids")
    r = run("run", "--head", "3")
    check(r.returncode == 2 and "has 1 head(s)" in r.stderr, "--head out of range")
    r = run("run", "--summary", "--step", "head0.scores")
    check("summary: 4×4" in r.stdout, "--summary")

    # a 512-token lesson prints a readable page
    big = os.path.join(tmp, "big.toml")
    rows = ", ".join("[" + ", ".join(f"{((i * 7 + j) % 10) / 10}" for j in range(8)) + "]" for i in range(512))
    with open(big, "w") as f:
        f.write(f'[model]\ncausal = true\n[input]\nX = [{rows}]\n'
                '[weights]\nW_Q = "identity"\nW_K = "identity"\nW_V = "identity"\n')
    r = run("run", big)
    check(r.returncode == 0 and len(r.stdout) < 30000 and "summary: 512×512" in r.stdout,
          f"512-token lesson is summarised ({len(r.stdout)} bytes)")

    # --- bad input: exit 2, one message naming file, key (line), shapes, fix --
    weights = '[weights]\nW_Q = "identity"\nW_K = "identity"\nW_V = "identity"\n'
    bad = {
        "syntax": ("[input]\nX = [[1, 2]\n" + weights, ["syntax.toml:", "TOML syntax error"]),
        "ragged": ("[input]\nX = [[1, 2], [3]]\n" + weights, ["ragged.toml:2", "input.X", "ragged matrix"]),
        "x-vs-wq": ("[input]\nX = [[1, 2, 3]]\n[weights]\nW_Q = [[1, 0], [0, 1]]\nW_K = \"identity\"\nW_V = \"identity\"\n",
                    ["x-vs-wq.toml:4", "weights.W_Q", "X is 1×3 and W_Q is 2×2"]),
        "q-vs-k": ("[input]\nX = [[1, 2]]\n[weights]\nW_Q = \"identity\"\nW_K = [[1], [0]]\nW_V = \"identity\"\n",
                   ["q-vs-k.toml:5", "Q and K must have the same number of columns", "W_K is 2×1"]),
        "heads": ("[model]\nheads = 3\n[input]\nX = [[1, 2, 3, 4]]\n" + weights,
                  ["heads.toml:2", "model.heads", "does not divide the projection width 4"]),
        "tokens": ("[input]\ntokens = [\"a\"]\nX = [[1, 2], [3, 4]]\n" + weights,
                   ["tokens.toml:2", "input.tokens", "1 tokens but X has 2 rows"]),
        "padding": ("[input]\nX = [[1, 2], [3, 4]]\nkey_padding = [true]\n" + weights,
                    ["padding.toml:3", "input.key_padding", "1 entries but there are 2 keys"]),
        "keep": ("[input]\nX = [[1, 2], [3, 4]]\nkeep = [[1, 0]]\n" + weights,
                 ["keep.toml:3", "input.keep", "keep is 1×2 but the scores are 2×2"]),
        "nan": ("[input]\nX = [[1, nan]]\n" + weights, ["nan.toml:2", "input.X[0][1]", "NaN is not allowed"]),
        "inf": ("[input]\nX = [[1, 2]]\n[weights]\nW_Q = [[inf, 0], [0, 1]]\nW_K = \"identity\"\nW_V = \"identity\"\n",
                ["inf.toml:4", "weights.W_Q[0][0]", "infinity is not allowed"]),
        "scale-zero": ("[model]\nscale = 0\n[input]\nX = [[1, 2]]\n" + weights,
                       ["scale-zero.toml:2", "model.scale", "positive number"]),
        "scale-negative": ("[model]\nscale = -1.5\n[input]\nX = [[1, 2]]\n" + weights,
                           ["scale-negative.toml:2", "model.scale", "positive number"]),
        "typo": ("[input]\nX = [[1, 2]]\n[weights]\nW_Q = \"identity\"\nW_q = \"identity\"\nW_K = \"identity\"\nW_V = \"identity\"\n",
                 ["typo.toml:5", "weights.W_q", "did you mean 'W_Q'?"]),
    }
    for name, (body, wants) in bad.items():
        path = os.path.join(tmp, name + ".toml")
        with open(path, "w") as f:
            f.write(body)
        for fmt in ("text", "json"):
            r = run("run", path, "--format", fmt)
            check(r.returncode == 2, f"bad {name} ({fmt}): exit 2 (got {r.returncode})")
            check(r.stdout == "", f"bad {name} ({fmt}): nothing on stdout")
            for w in wants:
                check(w in r.stderr, f"bad {name}: message contains {w!r}: {r.stderr.strip()}")
            check(r.stderr.count("\n") == 1, f"bad {name}: one message")
    r = run("run", os.path.join(tmp, "missing.toml"))
    check(r.returncode == 2 and "missing.toml: cannot open (no such file)" in r.stderr, "missing file")
    r = run("run", "river-bnak")
    check(r.returncode == 2 and "unknown lesson 'river-bnak'" in r.stderr and "river-bank" in r.stderr,
          "unknown lesson name lists the known ones")
    r = run("run", "a" * 5000)
    check(r.returncode == 2 and "unknown lesson" in r.stderr, "a name too long for a path is exit 2")
    # Unicode in titles and tokens: symbols become LaTeX, CJK a [U+XXXX] placeholder.
    with open(os.path.join(tmp, "u.toml"), "w", encoding="utf-8") as f:
        f.write(UNICODE_LESSON)
    body = run("run", os.path.join(tmp, "u.toml"), "--format", "latex", "--expand", "1,0").stdout
    check("$\\surd$d\\_k" in body and "[U+94F6][U+884C]" in body, "latex maps Unicode symbols")
    r = run("run", "--expand", "0,99")
    check(r.returncode == 2 and "no step of lesson river-bank has that cell" in r.stderr,
          "--expand with a column no step has is exit 2")
    # Without a CUDA build, or without a usable GPU: exit 3 with the reason. With
    # one, the same trace as the CPU's (the backend harness compares every cell).
    r = run("run", "--backend", "cuda")
    if r.returncode == 0:
        check("· backend cuda" in r.stdout, "--backend cuda runs on a GPU and says so")
    else:
        check(r.returncode == 3 and ("no CUDA plugin: " in r.stderr
                                     or "no CUDA device: " in r.stderr)
              and "--backend cpu" in r.stderr and r.stderr.count("\n") == 1,
              f"--backend cuda exits 3 with the reason: {r.stderr!r}")
    r = run("run", "--format", "yaml")
    check(r.returncode == 2, "unknown format is a usage error (exit 2)")
    r = run("frobnicate")
    check(r.returncode == 2, "unknown command is a usage error (exit 2)")
    check(run("--help").returncode == 0, "--help exits 0")
    # An error that echoes a name, key or value shows its control characters as
    # control pictures: an escape sequence in it cannot reach the terminal.
    bad_key = os.path.join(tmp, "escape.toml")
    with open(bad_key, "w") as f:
        f.write('"k\\u001b]0;pwned\\u0007" = 1\n')
    for args in (["verify", "river-bank", "--answers", bad_key], ["run", "x\x1b[31my\x07"]):
        r = run(*args)
        check(r.returncode == 2 and "\x1b" not in r.stderr and "\x07" not in r.stderr
              and "\u241b" in r.stderr, f"{args[0]}: controls shown, not sent: {r.stderr!r}")
    # Output that cannot be written (a full disk: /dev/full) is a write error,
    # exit 2, said once, never exit 0 (coreutils' close_stdout).
    if os.path.exists("/dev/full"):
        answers = os.path.join(os.path.dirname(os.path.abspath(__file__)), "verify",
                               "all-right.toml")
        full_class = os.path.join(tmp, "full-class")
        check(run("exercise", "--seed", "2", "--students", "2", "--out", full_class).returncode == 0,
              "a class for mark > /dev/full")
        # Every command that writes to standard output, every format of run.
        for args in (["run", "river-bank"], ["run", "d512-walkthrough", "--format", "json"],
                     *(["run", "river-bank", "--format", f] for f in
                       ("markdown", "latex", "html", "svg")),
                     ["run", "river-bank", "--summary"], ["run", "river-bank", "--expand", "1,2"],
                     ["lessons"], ["lessons", "show", "river-bank"], ["check", "river-bank"],
                     ["check", "river-bank", "--format", "json"],
                     ["verify", "river-bank", "--answers", answers],
                     ["verify", "river-bank", "--answers", answers, "--format", "json"],
                     ["stats", "--d-k", "4", "--samples", "100"],
                     ["export", "river-bank", "--to", "pytorch"],
                     ["bench", "--seq", "8", "--runs", "1"],
                     ["golden", "river-bank", "--out", os.path.join(tmp, "full-golden")],
                     ["exercise", "--seed", "1", "--students", "1", "--out",
                      os.path.join(tmp, "full-exercise")],
                     ["mark", full_class], ["--version"],
                     ["--help"], ["run", "river-bank", "--lang", "zh"]):
            with open("/dev/full", "w") as full:
                r = subprocess.run([BIN, *args], stdout=full, stderr=subprocess.PIPE, text=True,
                                   env=environment(None, drop=("NO_COLOR",)))
            said = "写入错误：" if "zh" in args else "write error: No space left on device"
            check(r.returncode == 2 and r.stderr.count("\n") == 1 and said in r.stderr,
                  f"{' '.join(args)} > /dev/full: exit 2, one write error: "
                  f"{r.returncode} {r.stderr!r}")
finally:
    shutil.rmtree(tmp)

print(f"{len(failures)} failure(s)")
sys.exit(1 if failures else 0)
