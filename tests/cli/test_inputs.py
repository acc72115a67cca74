#!/usr/bin/python3
"""Command-line tests of what attn-trace reads (issue 25, findings 1, 6, 10):
TOML nested or dotted past toml++'s stack (the issue's reproducers, full size)
refused with exit 2, file:line and the fix, by every command that reads TOML;
a header like [.a] refused the same way; only regular files read, or standard
input given as -: a named pipe without a writer, a device, a folder, and
/dev/stdin as a pipe refused at once; standard input stopped at file_mb.
Each case asserts the exit code, the message, and that nothing was written.

Usage: test_inputs.py PATH/TO/attn-trace
"""
import os
import subprocess
import sys
import tempfile
import time

from clitest import check, failures, run_program

BIN = os.path.abspath(sys.argv[1])
SOURCE = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def run(*args, stdin=None, timeout=20, cwd=None):
    """The program's result, with `stdin` (bytes, or an open file) as its standard input."""
    started = time.monotonic()
    r = subprocess.run([BIN, *args], input=stdin if isinstance(stdin, bytes) else None,
                       stdin=None if isinstance(stdin, bytes) else (stdin or subprocess.DEVNULL),
                       capture_output=True, timeout=timeout, cwd=cwd)
    r.stdout, r.stderr = r.stdout.decode(errors="replace"), r.stderr.decode(errors="replace")
    r.seconds = time.monotonic() - started
    return r


def tree(folder):
    """Every path under `folder`, relative, sorted: what a command left there."""
    return sorted(os.path.relpath(os.path.join(d, f), folder)
                  for d, dirs, files in os.walk(folder) for f in dirs + files)


def refused(r, message, what):
    """Exit 2, `message` in the error, nothing on standard output."""
    return check(r.returncode == 2 and message in r.stderr and r.stdout == "",
                 f"{what}: exit {r.returncode}, {r.stderr[:400]!r}")


PARTS = ":1: a dotted key or table header of more than 64 parts; attn-trace's files need " \
        "only a few. Shorten the key."
NESTING = ":1: arrays and inline tables nested more than 64 deep"
MISSING = ":1:2: a key is missing here: a table header or dotted key cannot have an empty part"

tmp_root = tempfile.TemporaryDirectory()
tmp = tmp_root.name


def write(name, text):
    path = os.path.join(tmp, name)
    with open(path, "w") as f:
        f.write(text)
    return path


# The reproducers, full size: 300000 parts, 300000 levels.
key = ".".join(["a"] * 300000)
deep = {
    "deep-key.toml": (key + " = 1\n", PARTS),
    "deep-header.toml": ("[" + key + "]\n", PARTS),
    "deep-array-header.toml": ("[[" + key + "]]\n", PARTS),
    "deep-arrays.toml": ("x = " + "[" * 300000 + "]" * 300000 + "\n", NESTING),
    "deep-tables.toml": ("x = " + "{a=" * 300000 + "1" + "}" * 300000 + "\n", NESTING),
    "dot-header.toml": ("[.a]\n", MISSING),
}
paths = {name: write(name, text) for name, (text, _) in deep.items()}

for name, (_, message) in deep.items():
    path = paths[name]
    r = run("verify", "river-bank", "--answers", path)
    refused(r, path + message, f"verify --answers {name}")
    check(r.seconds < 10, f"verify --answers {name}: {r.seconds:.1f} s")
    refused(run("run", path), path + message, f"run {name}")
    refused(run("check", "river-bank", "--golden", path), path + message, f"check --golden {name}")
    # Through standard input, named stdin.
    with open(path, "rb") as f:
        refused(run("run", "-", stdin=f), "stdin" + message, f"run - < {name}")

# `mark --points` with a deep points file: refused before anything is written.
cls = os.path.join(tmp, "class")
r = run("exercise", "--students", "2", "--seed", "25", "--out", cls)
check(r.returncode == 0, f"exercise: {r.stderr}")
before = tree(cls)
r = run("mark", cls, "--points", paths["deep-key.toml"])
refused(r, paths["deep-key.toml"] + PARTS, "mark --points deep-key.toml")
check(tree(cls) == before, f"mark --points deep: nothing written: {tree(cls)}")

# One student's deep answers.toml: that student is not marked (the reason is in
# their feedback), every other student is, and mark does not crash.
students = sorted(d for d in os.listdir(cls) if os.path.isdir(os.path.join(cls, d)))
with open(os.path.join(cls, students[0], "answers.toml"), "w") as f:
    f.write("[" + key + "]\n")
r = run("mark", cls)
check(r.returncode in (0, 1) and os.path.exists(os.path.join(cls, "marks.csv")),
      f"mark with one deep answers.toml: exit {r.returncode}, {r.stderr[:300]}")
with open(os.path.join(cls, students[0], "feedback.md")) as f:
    check("a dotted key or table header of more than 64 parts" in f.read(),
          "the deep student's feedback says why")

# Every lesson, golden and answers file the project ships still reads.
for folder, command in (("lessons", lambda p: ["run", p, "--summary"]),
                        ("golden", lambda p: ["check", os.path.basename(p)[:-5], "--golden", p])):
    for name in sorted(os.listdir(os.path.join(SOURCE, folder))):
        if name.endswith(".toml"):
            r = run(*command(os.path.join(SOURCE, folder, name)), timeout=120)
            check(r.returncode == 0, f"{folder}/{name}: exit {r.returncode}, {r.stderr[:300]}")

# A named pipe with no writer: refused at once (it used to hang run, verify and
# exercise --roster), nothing written.
fifo = os.path.join(tmp, "fifo")
os.mkfifo(fifo)
pipe_message = fifo + ": is a pipe (FIFO), not a regular file; attn-trace reads only regular " \
               "files, so that it never waits for a writer."
out = os.path.join(tmp, "out")
for args in (["run", fifo], ["verify", "river-bank", "--answers", fifo],
             ["exercise", "--seed", "1", "--roster", fifo, "--out", out], ["mark", cls, "--points", fifo],
             ["check", "river-bank", "--golden", fifo]):
    r = run(*args, timeout=5)
    refused(r, pipe_message, " ".join(args[:2]) + " FIFO")
    check(r.seconds < 1.0, f"{args[0]} FIFO: refused in {r.seconds:.2f} s")
check(not os.path.exists(out), "exercise --roster FIFO: no --out folder")

# A device: refused without reading (it used to read /dev/zero to 10 GB).
for device in ("/dev/zero", "/dev/null"):
    r = run("run", device, timeout=5)
    refused(r, f"{device}: is a device, not a regular file; give a regular file", f"run {device}")
    check(r.seconds < 1.0, f"run {device}: refused in {r.seconds:.2f} s")
# A folder.
refused(run("verify", "river-bank", "--answers", tmp), f"{tmp}: is a folder, not a file",
        "verify --answers FOLDER")

# /dev/stdin when standard input is a pipe: refused, with the way to read it.
lesson_path = os.path.join(SOURCE, "lessons", "river-bank.toml")
with open(lesson_path, "rb") as f:
    lesson = f.read()
refused(run("run", "/dev/stdin", stdin=lesson),
        "/dev/stdin: is standard input, a pipe; give - instead to read standard input",
        "run /dev/stdin from a pipe")
# ... and when it is a regular file, it is read as one.
with open(lesson_path, "rb") as f:
    r = run("run", "/dev/stdin", stdin=f)
check(r.returncode == 0 and "river-bank" in r.stdout, f"run /dev/stdin < file: {r.stderr[:300]}")

# `-`: the lesson and the answers from a pipe, as from the file.
by_file = run("run", lesson_path, "--format", "json")
by_pipe = run("run", "-", "--format", "json", stdin=lesson)
check(by_pipe.returncode == 0 and by_pipe.stdout == by_file.stdout.replace(lesson_path, "stdin"),
      f"run - : {by_pipe.returncode} {by_pipe.stderr[:300]}")
answers_path = os.path.join(SOURCE, "tests", "cli", "verify", "all-right.toml")
if check(os.path.exists(answers_path), f"{answers_path} exists"):
    with open(answers_path, "rb") as f:
        answers = f.read()
    # A short name, so that the report's first line is not wrapped either way.
    by_file = run("verify", "river-bank", "--answers", "all-right.toml", cwd=os.path.dirname(answers_path))
    by_pipe = run("verify", "river-bank", "--answers", "-", stdin=answers)
    check(by_pipe.returncode == by_file.returncode == 0 and
          by_pipe.stdout == by_file.stdout.replace("all-right.toml", "stdin"),
          f"verify --answers - : {by_pipe.returncode} {by_pipe.stderr[:300]}")
# Standard input is read once.
refused(run("verify", "-", "--answers", "-", stdin=lesson),
        "stdin: standard input was read already for another file of this command; give a file "
        "for one of them", "verify - --answers -")

# Standard input stops at file_mb: a 2 MiB pipe, and /dev/zero, under file_mb=1.
over = b"# " + b"x" * (2 << 20) + b"\n"
over_message = "stdin: more than 1 MiB, above the limit of 1 MiB per file; --limit file_mb=N " \
               "raises it (N in MiB, above its size)"
refused(run("--limit", "file_mb=1", "run", "-", stdin=over), over_message, "run - (2 MiB pipe)")
with open("/dev/zero", "rb") as zero:
    r = run("--limit", "file_mb=1", "run", "-", stdin=zero, timeout=10)
refused(r, over_message, "run - < /dev/zero")
check(r.seconds < 5, f"run - < /dev/zero: {r.seconds:.1f} s")
# The issue's `cat big.toml | attn-trace run /dev/stdin`: a pipe, refused before reading.
refused(run("--limit", "file_mb=1", "run", "/dev/stdin", stdin=over),
        "/dev/stdin: is standard input, a pipe", "cat big | run /dev/stdin")

sys.exit(1 if failures else 0)
