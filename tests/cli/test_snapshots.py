#!/usr/bin/python3
"""Text snapshots of `attn-trace run LESSON --color never` for a few lessons at
80 columns (the width when piped) and 120, and of the heatmap view of a
64-token lesson, compared after normalising (escape codes removed, trailing spaces and blank
lines dropped); a mismatch prints a unified diff. Approve a deliberate change
with --update, then review the diff of tests/snapshots/ before committing.

Usage: test_snapshots.py PATH/TO/attn-trace [--update]
"""
import difflib
import pathlib
import re
import subprocess
import sys

BIN = sys.argv[1]
UPDATE = "--update" in sys.argv[2:]
SNAPSHOTS = pathlib.Path(__file__).resolve().parent.parent / "snapshots"
# A single head with the documents' errata, a causal mask, two heads with W_O,
# and a 16-wide input split into column blocks; each at 80 and 120 columns.
LESSONS = ["river-bank", "causal-decoder", "two-heads", "fill-values-1e9", "shapes-and-costs"]
CASES = [(f"{lesson}.txt" if width == 80 else f"{lesson}@{width}.txt",
          [lesson, "--width", str(width)]) for lesson in LESSONS for width in (80, 120)]
# 64 tokens: one glyph per weight (no colour), every line within 80 columns.
CASES.append(("causal-64-heatmap.txt",
              [str(SNAPSHOTS / "causal-64.toml"), "--view", "heatmap", "--width", "80"]))


def normalise(text):
    text = re.sub(r"\x1b\[[0-9;]*m", "", text)
    lines = [line.rstrip() for line in text.splitlines()]
    while lines and not lines[-1]:
        lines.pop()
    return "\n".join(lines) + "\n"


failed = 0
for name, args in CASES:
    lesson = " ".join(args)
    r = subprocess.run([BIN, "run", *args, "--color", "never"], capture_output=True, text=True)
    if r.returncode != 0:
        print(f"FAIL: run {lesson} exited {r.returncode}: {r.stderr}")
        failed += 1
        continue
    actual = normalise(r.stdout)
    path = SNAPSHOTS / name
    if UPDATE:
        path.write_text(actual, encoding="utf-8")
        print(f"updated {path}")
        continue
    expected = path.read_text(encoding="utf-8") if path.exists() else ""
    if actual != expected:
        failed += 1
        print(f"FAIL: snapshot {path.name} differs from `attn-trace run {lesson}`:")
        sys.stdout.writelines(difflib.unified_diff(
            expected.splitlines(True), actual.splitlines(True),
            fromfile=f"tests/snapshots/{name}", tofile=f"attn-trace run {lesson}"))
    else:
        print(f"ok   {lesson}")
sys.exit(1 if failed else 0)
