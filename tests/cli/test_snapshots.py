#!/usr/bin/python3
"""Text snapshots of `attn-trace run LESSON --color never` for a few lessons,
compared after normalising (escape codes removed, trailing spaces and blank
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
# A single head with the documents' errata, a causal mask, and two heads with W_O.
LESSONS = ["river-bank", "causal-decoder", "two-heads", "fill-values-1e9"]


def normalise(text):
    text = re.sub(r"\x1b\[[0-9;]*m", "", text)
    lines = [line.rstrip() for line in text.splitlines()]
    while lines and not lines[-1]:
        lines.pop()
    return "\n".join(lines) + "\n"


failed = 0
for lesson in LESSONS:
    r = subprocess.run([BIN, "run", lesson, "--color", "never"], capture_output=True, text=True)
    if r.returncode != 0:
        print(f"FAIL: run {lesson} exited {r.returncode}: {r.stderr}")
        failed += 1
        continue
    actual = normalise(r.stdout)
    path = SNAPSHOTS / f"{lesson}.txt"
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
            fromfile=f"tests/snapshots/{lesson}.txt", tofile=f"attn-trace run {lesson}"))
    else:
        print(f"ok   {lesson}")
sys.exit(1 if failed else 0)
