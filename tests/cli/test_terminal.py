#!/usr/bin/python3
"""The terminal view of `attn-trace run`: every line within --width (English
and Chinese, numbers and heatmap, with and without colour), wide matrices in
column blocks with their values where the JSON trace has them, the colours of
the cells against an independent viridis ramp and 256-colour palette, masked
and leaked cells, the heatmap's glyphs and half blocks, --full, and bad widths.

Usage: test_terminal.py PATH/TO/attn-trace
"""
import json
import math
import os
import re
import sys
import tempfile
import unicodedata

from clitest import check, environment, failures, run_program
from reference import number, ramp

BIN = sys.argv[1]
SNAPSHOTS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "snapshots")

MASKED = (58, 58, 58)
LEAKED = (255, 95, 95)
SGR = re.compile(r"\x1b\[[0-9;]*m")


def run(*args, env=None):
    return run_program(BIN, *args, env=environment(env, drop=("NO_COLOR",)))


def columns(line):
    plain = SGR.sub("", line)
    return sum(2 if unicodedata.east_asian_width(c) in "WF" else 1 for c in plain)


def palette(rgb):
    """The nearest of xterm's 256 colours: the 6×6×6 cube or the grey ramp."""
    levels = [0, 95, 135, 175, 215, 255]
    cube = [min(range(6), key=lambda k: (abs(c - levels[k]), k)) for c in rgb]
    d_cube = sum((c - levels[k]) ** 2 for c, k in zip(rgb, cube))
    grey = min(23, max(0, round((sum(rgb) / 3 - 8) / 10)))
    g = 8 + 10 * grey
    d_grey = sum((c - g) ** 2 for c in rgb)
    return 232 + grey if d_grey < d_cube else 16 + 36 * cube[0] + 6 * cube[1] + cube[2]


def trace(lesson, *extra):
    r = run("run", lesson, "--format", "json", *extra)
    return {s["id"]: s for s in json.loads(r.stdout)["steps"]}


def lessons():
    r = run("lessons", "--width", "1000")
    return [m.group(1) for m in re.finditer(r"^ ?\d+  (\S+) ", r.stdout, re.M)] + \
        [i.rstrip(",") for line in r.stdout.splitlines() if "variants:" in line
         for i in line.split("variants:")[1].split()]


# --- every line within the width ---------------------------------------------
ids = lessons()
check(len(ids) >= 34 and "river-bank" in ids, f"lessons lists the embedded lessons: {ids}")
cases = [(w, lang, []) for w in (40, 80, 120) for lang in ("en",)] + \
        [(80, "zh", []), (80, "en", ["--view", "heatmap"]), (40, "zh", ["--view", "heatmap"]),
         (80, "en", ["--summary", "--expand", "1,1"])]
for lesson in ids:
    for width, lang, extra in cases:
        r = run("--lang", lang, "run", lesson, "--width", str(width), "--color", "always", *extra)
        long = [line for line in r.stdout.splitlines() if columns(line) > width]
        check(r.returncode == 0 and not long,
              f"run {lesson} --lang {lang} --width {width} {' '.join(extra)}: exit {r.returncode}, "
              f"{len(long)} line(s) too wide: {long[:2]}")
for width in (40, 80, 120):
    for lang in ("en", "zh"):
        r = run("--lang", lang, "lessons", "--width", str(width))
        check(r.returncode == 0 and all(columns(l) <= width for l in r.stdout.splitlines()),
              f"lessons --lang {lang} --width {width}: every line fits")
# Piped, the width is 80.
r = run("run", "shapes-and-costs")
check(all(columns(l) <= 80 for l in r.stdout.splitlines()), "run piped: every line within 80")

# --- column blocks: every value where the JSON has it ------------------------
steps = trace("shapes-and-costs")
X = steps["X"]
r = run("run", "shapes-and-costs", "--step", "X", "--width", "80", "--color", "never")
blocks = re.split(r"  columns (\d+)–(\d+) of 16:\n", r.stdout)
check(len(blocks) == 1 + 3 * 2, f"X (5×16) at 80 columns: two column blocks: {len(blocks)}")
seen = set()
for k in range(1, len(blocks), 3):
    first, last, body = int(blocks[k]), int(blocks[k + 1]), blocks[k + 2]
    lines = body.splitlines()
    header = lines[0].split()
    check(header == X["cols"][first:last + 1], f"block {first}–{last}: its column labels {header}")
    for i, token in enumerate(X["rows"]):
        cells = lines[1 + i].split()
        check(cells[0] == token, f"block {first}–{last}: row {i} labelled {token} again: {cells[0]}")
        for j, text in zip(range(first, last + 1), cells[1:]):
            check(abs(float(text) - X["data"][i][j]) <= 5e-5, f"X[{i},{j}] = {text}")
            seen.add((i, j))
check(len(seen) == 5 * 16, f"every cell of X shown once across the blocks: {len(seen)}")

# --- colours: truecolor and 256 against an independent ramp ------------------
CELL = re.compile(r"\x1b\[48;(?:2;(\d+);(\d+);(\d+)|5;(\d+));38;[0-9;]+m\s*(\S+)\x1b\[0m")


def coloured_rows(text):
    """Each table row's cells: (background, shown number)."""
    rows = []
    for line in text.splitlines():
        cells = CELL.findall(line)
        if cells:
            rows.append([((int(a), int(b), int(c)) if a else int(p), v) for a, b, c, p, v in cells])
    return rows


def expected_colours(data, per_row, masked=lambda i, j: False, leaked=lambda i, j: False,
                     from_zero=False):
    """The colours of a step's cells: the ramp over each row's (or the step's)
    lowest to highest value, from 0 for weights; masked and leaked apart."""
    out = []
    finite = [[v for j, v in enumerate(row) if not masked(i, j) and math.isfinite(v)]
              for i, row in enumerate(data)]
    everything = [v for row in finite for v in row]
    for i, row in enumerate(data):
        pool = finite[i] if per_row else everything
        lo, hi = (min(pool), max(pool)) if pool else (0.0, 0.0)
        lo = min(lo, 0.0) if from_zero else lo
        line = []
        for j, v in enumerate(row):
            if leaked(i, j):
                line.append(LEAKED)
            elif masked(i, j):
                line.append(MASKED)
            else:
                line.append(ramp((v - lo) / (hi - lo)) if hi > lo else ramp(1.0))
        out.append(line)
    return out


def colour_case(lesson, step, extra, per_row, depth, masked=lambda i, j: False,
                leaked=lambda i, j: False):
    data = [[number(v) for v in row] for row in trace(lesson)[step]["data"]]
    env = {"COLORTERM": "truecolor"} if depth == "truecolor" else {"COLORTERM": ""}
    r = run("run", lesson, "--step", step, "--color", "always", "--width", "200", *extra, env=env)
    rows = coloured_rows(r.stdout)
    want = expected_colours(data, per_row, masked, leaked, from_zero=step.endswith("weights"))
    check(len(rows) == len(data), f"{lesson} {step} {depth}: one coloured row per row")
    for i, (got_row, want_row) in enumerate(zip(rows, want)):
        for j, ((got, shown), expected) in enumerate(zip(got_row, want_row)):
            expected = expected if depth == "truecolor" else palette(expected)
            close = got == expected if depth != "truecolor" else \
                all(abs(g - e) <= 0.5 for g, e in zip(got, expected))
            check(close, f"{lesson} {step} [{i},{j}] ({depth}, {'row' if per_row else 'global'}): "
                         f"colour {got}, expected {expected}")
            if math.isfinite(data[i][j]):
                check(abs(float(shown) - data[i][j]) <= 5e-5, f"{lesson} {step} [{i},{j}] shows {shown}")
    return r.stdout


for depth in ("truecolor", "256"):
    # Weights: each row on its own by default; scores: the whole step.
    out = colour_case("river-bank", "head0.weights", [], True, depth)
    check("scale: 0 " in SGR.sub("", out) and "(each row on its own)" in SGR.sub("", out),
          "weights legend: from 0, each row on its own")
    out = colour_case("river-bank", "head0.scores", [], False, depth)
    lo, hi = min(min(r) for r in trace("river-bank")["head0.scores"]["data"]), \
        max(max(r) for r in trace("river-bank")["head0.scores"]["data"])
    check(f"scale: {lo:.4f}" in SGR.sub("", out) and f"{hi:.4f}" in SGR.sub("", out),
          f"scores legend names the lowest and highest: {lo:.4f}, {hi:.4f}")
    colour_case("river-bank", "head0.weights", ["--scale", "global"], False, depth)
    colour_case("river-bank", "head0.scores", ["--scale", "row"], True, depth)
    # Causal: the cells above the diagonal are masked, in grey, off the scale.
    colour_case("causal-decoder", "head0.weights", [], True, depth, masked=lambda i, j: j > i)
    colour_case("causal-decoder", "head0.masked", [], False, depth, masked=lambda i, j: j > i)
# A fill of 0: masked keys keep weight, shown as leaked (the lesson masks
# query 0 (<pad>) and the padded key 0, and every key after its query).
pad_masked = lambda i, j: j == 0 or j > i
out = colour_case("fill-zero-fails", "head0.weights", [], True, "truecolor",
                  masked=pad_masked, leaked=pad_masked)
check("masked, yet weighted (the fill is too small)" in SGR.sub("", out), "the leak is in the legend")
r = run("run", "river-bank", "--color", "never")
check("\x1b[" not in r.stdout, "--color never: no escape code")
r = run("run", "river-bank", "--color", "auto")
check("\x1b[" not in r.stdout, "--color auto, piped: no escape code")

# --- the heatmap view ----------------------------------------------------------
causal64 = os.path.join(SNAPSHOTS, "causal-64.toml")
w64 = trace(causal64)["head0.weights"]["data"]
r = run("run", causal64, "--view", "heatmap", "--step", "head0.weights", "--color", "never",
        "--width", "200")
lines = r.stdout.splitlines()
ruler = next(line for line in lines if re.match(r"^ +0 +5 +10 ", line))  # a tick every 5 keys
start = ruler.index("0")  # where the first key's cell begins
grid = [line for line in lines if re.match(r"^ +\d+ \S+ ", line) and len(line) > start
        and line[:start].strip() and line[start - 1] == " "]
check(len(grid) == 64, f"64-token heatmap: one line per query: {len(grid)}")
GLYPHS = " ░▒▓█"
for i, line in enumerate(grid):
    # Two columns a cell at this width; trailing spaces (the lowest level) are trimmed.
    body = line[start:].ljust(128)
    row = w64[i]
    lo, hi = 0.0, max(row[: i + 1])  # weights: from 0 to the row's highest
    for j in range(64):
        glyph = body[2 * j]
        if j > i:
            want = "·"
        else:
            t = (row[j] - lo) / (hi - lo) if hi > lo else 1.0
            want = GLYPHS[min(4, int(t * 5))]
        check(glyph == want and body[2 * j + 1] == want,
              f"heatmap row {i} key {j}: {glyph!r}, expected {want!r} (weight {row[j]:.4f})")
check("[ ░▒▓█]" in r.stdout and "· masked" in r.stdout, "heatmap legend: the glyphs and the mask")

with tempfile.TemporaryDirectory() as tmp:
    # 128 tokens at 80 columns with colour: two keys to a column, as the
    # halves of "▌" (left key in the foreground, right key in the background).
    tokens = [f"w{i}" for i in range(128)]
    X = [[round(math.sin(0.31 * i * (k + 1) + k), 3) for k in range(4)] for i in range(128)]
    path = os.path.join(tmp, "t128.toml")
    with open(path, "w") as f:
        f.write('[lesson]\nid = "t128"\n[model]\ncausal = true\n[input]\n')
        f.write("tokens = [" + ", ".join(f'"{t}"' for t in tokens) + "]\n")
        f.write("X = [" + ",\n".join(str(r) for r in X) + "]\n")
        f.write('[weights]\nW_Q = "identity"\nW_K = "identity"\nW_V = "identity"\n')
    w128 = trace(path)["head0.weights"]["data"]
    r = run("run", path, "--view", "heatmap", "--color", "always", "--width", "80",
            env={"COLORTERM": "truecolor"})
    check(r.returncode == 0 and all(columns(l) <= 80 for l in r.stdout.splitlines()),
          "128-token heatmap within 80 columns")
    HALF = re.compile(r"\x1b\[(?:38;2;(\d+);(\d+);(\d+);48;2;(\d+);(\d+);(\d+)|0;38;2;(\d+);(\d+);(\d+))m▌")
    rows = [HALF.findall(line) for line in r.stdout.splitlines() if "▌" in line]
    check(len(rows) == 128 and all(len(r) == 64 for r in rows),
          f"128 rows of 64 half blocks: {len(rows)}, {set(len(r) for r in rows)}")
    bad = 0
    for i, halves in enumerate(rows[:128]):
        lo, hi = 0.0, max(w128[i][: i + 1])
        colour = lambda j: MASKED if j > i else (ramp((w128[i][j] - lo) / (hi - lo)) if hi > lo else ramp(1.0))
        for k, h in enumerate(halves):
            left = tuple(int(v) for v in h[0:3])
            right = tuple(int(v) for v in h[3:6])
            ok = all(abs(a - b) <= 0.5 for a, b in zip(left, colour(2 * k))) and \
                all(abs(a - b) <= 0.5 for a, b in zip(right, colour(2 * k + 1)))
            bad += not ok
    check(bad == 0, f"128-token heatmap: every half block has its two keys' colours ({bad} wrong)")

    # --full: a 17×17 matrix in every cell; by default its corners.
    tokens = [f"t{i}" for i in range(17)]
    path = os.path.join(tmp, "t17.toml")
    with open(path, "w") as f:
        f.write('[lesson]\nid = "t17"\n[input]\ntokens = [' + ", ".join(f'"{t}"' for t in tokens) + "]\n")
        f.write("X = [" + ", ".join(f"[{i / 17:.3f}, {1 - i / 17:.3f}]" for i in range(17)) + "]\n")
        f.write('[weights]\nW_Q = "identity"\nW_K = "identity"\nW_V = "identity"\n')
    weights = trace(path)["head0.weights"]["data"]
    r = run("run", path, "--step", "head0.weights", "--width", "80")
    check("summary: 17×17" in r.stdout and "t8" not in r.stdout, "17 tokens: summarised by default")
    r = run("run", path, "--step", "head0.weights", "--width", "80", "--full")
    shown = {}
    for line in r.stdout.splitlines():
        parts = line.split()
        if parts and parts[0] in tokens and len(parts) > 1 and all(re.match(r"^-?\d+\.\d{4}$", p) for p in parts[1:]):
            shown.setdefault(parts[0], []).extend(float(p) for p in parts[1:])
    check("summary:" not in r.stdout and len(shown) == 17 and all(len(v) == 17 for v in shown.values()),
          f"--full: all 17×17 cells in column blocks ({ {k: len(v) for k, v in shown.items()} })")
    check(all(abs(shown[f"t{i}"][j] - weights[i][j]) <= 5e-5 for i in range(17) for j in range(17)
              if f"t{i}" in shown and len(shown[f"t{i}"]) == 17), "--full: every value right")

# --- repeated tokens are numbered, unique ones are not -------------------------
r = run("run", causal64, "--step", "head0.weights", "--width", "80")
check(re.search(r"^  63 what +0\.0151", r.stdout, re.M) and "   0 the   1 cat" in r.stdout,
      "a repeated token's rows and columns carry their numbers")
r = run("run", "river-bank", "--step", "head0.weights", "--width", "80")
check(re.search(r"^  river +0\.2356", r.stdout, re.M) and "0 river" not in r.stdout,
      "unique tokens are shown as they are")

# --- bad input ------------------------------------------------------------------
r = run("run", "river-bank", "--width", "39")
check(r.returncode == 2 and "--width" in r.stderr, f"--width 39: exit 2 naming --width ({r.returncode})")
r = run("run", "river-bank", "--full", "--summary")
check(r.returncode == 2 and "--full" in r.stderr, f"--full with --summary: exit 2 ({r.returncode})")
r = run("run", "river-bank", "--view", "pictures")
check(r.returncode == 2 and "--view" in r.stderr, f"--view pictures: exit 2 ({r.returncode})")
r = run("run", "sinusoidal-pe", "--view", "heatmap")
check(r.returncode == 0 or "no attention weights" in r.stdout, "heatmap of a lesson without weights")

print(f"{len(failures)} failure(s)")
sys.exit(1 if failures else 0)
