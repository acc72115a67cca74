#!/usr/bin/python3
"""Command-line tests of the limits (docs/limits.md): --limit before or after
the command, each limit refusing with exit 2 and the --limit that raises it,
the JSON output limit, a file-size limit, and exit 4 with a clear message when
the machine runs out of memory (under an address-space limit; skipped in the
AddressSanitizer build, which cannot start under one).

Usage: test_limits.py PATH/TO/attn-trace
"""
import json
import os
import resource
import sys
import tempfile

from clitest import check, failures, run_program

BIN = sys.argv[1]


def run(*args, limit_as=None):
    def preexec():
        if limit_as:
            resource.setrlimit(resource.RLIMIT_AS, (limit_as, limit_as))
    return run_program(BIN, *args, preexec_fn=preexec)


# --limit before or after the command, the same effect.
for args in (["--limit", "tokens=3", "run", "river-bank"],
             ["run", "river-bank", "--limit", "tokens=3"]):
    r = run(*args)
    check(r.returncode == 2 and "the number of tokens is 4, above the limit of 3; "
          "--limit tokens=4 raises it" in r.stderr and r.stdout == "", f"{args}: {r.stderr}")
r = run("--limit", "tokens=4", "run", "river-bank", "--format", "json")
check(r.returncode == 0 and json.loads(r.stdout)["lesson"] == "river-bank", "tokens=4 allows it")

# An unknown limit lists the names and defaults.
r = run("--limit", "memory=5", "run")
check(r.returncode == 2 and "file_mb=64, tokens=16384, d_model=16384, heads=1024, "
      "step_mcells=256, trace_gb=8, output_mb=1024" in r.stderr, f"unknown limit: {r.stderr}")

# The JSON output limit: d512-walkthrough's JSON is about 20 MiB at 25 bytes a cell.
r = run("--limit", "output_mb=1", "run", "d512-walkthrough", "--format", "json")
check(r.returncode == 2 and r.stdout == "" and "pick the steps you need with --step" in r.stderr
      and "--limit output_mb=" in r.stderr, f"output limit: {r.stderr}")
r = run("--limit", "output_mb=1", "run", "d512-walkthrough", "--format", "json",
        "--step", "head0.weights")
check(r.returncode == 0 and json.loads(r.stdout)["steps"][0]["shape"] == [5, 5],
      "one step fits under 1 MiB")

# A file above file_mb (1 MiB here) is refused before it is read.
with tempfile.TemporaryDirectory() as tmp:
    path = os.path.join(tmp, "big.toml")
    with open(path, "w") as f:
        f.write("# " + "x" * (1 << 20) + "\n")
    r = run("--limit", "file_mb=1", "run", path)
    check(r.returncode == 2 and f"{path}: the file is 2 MiB, above the limit of 1 MiB per file; "
          "--limit file_mb=2 raises it" in r.stderr, f"file size: {r.stderr}")

def memory_caps(tmp):
    """Every command under an address space of 400 MB and 800 MB (the issue's
    caps) ends within seconds: it succeeds, or exits 4 saying it is out of
    memory. Before, `lessons` hung in OpenBLAS's start under 800 MB, and a
    4096-token run printed its message and then hung in OpenBLAS's shutdown."""
    import random
    import shutil
    import subprocess
    rng = random.Random(4096)
    long_lesson = os.path.join(tmp, "l4096.toml")
    with open(long_lesson, "w") as f:
        f.write("[input]\nX = [" + ",".join(
            "[" + ",".join(f"{rng.random():.3f}" for _ in range(64)) + "]" for _ in range(4096)) +
            "]\n[weights]\nW_Q = \"identity\"\nW_K = \"identity\"\nW_V = \"identity\"\n")
    answers = os.path.join(os.path.dirname(os.path.abspath(__file__)), "verify", "all-right.toml")
    commands = [["lessons"], ["run", "river-bank"], ["run", "d512-walkthrough", "--summary"],
                ["run", "d512-walkthrough", "--format", "html"], ["check", "--all"],
                ["verify", "river-bank", "--answers", answers], ["stats", "--d-k", "512"],
                ["bench", "--seq", "64", "128"], ["export", "river-bank", "--to", "pytorch"],
                ["run", long_lesson, "--summary"], ["bench", "--seq", "8192"]]
    for cap in (400, 800):
        out = os.path.join(tmp, f"class{cap}")
        for args in commands + [["exercise", "--seed", "1", "--students", "30", "--out", out],
                                ["mark", out]]:
            try:
                r = subprocess.run([BIN, *args], capture_output=True, text=True, timeout=60,
                                   preexec_fn=lambda: resource.setrlimit(
                                       resource.RLIMIT_AS, (cap << 20, cap << 20)))
            except subprocess.TimeoutExpired:
                check(False, f"under {cap} MB, {' '.join(args)} still runs after 60 s")
                continue
            ok = r.returncode in (0, 1) and "out of memory" not in r.stderr
            oom = (r.returncode == 4 and r.stderr.startswith("attn-trace: out of memory: ")
                   and "report" not in r.stderr)
            check(ok or oom, f"under {cap} MB, {' '.join(args)}: exit {r.returncode}: "
                  f"{r.stderr[-300:]}")
    shutil.rmtree(tmp)


# Out of memory: exit 4 and a message that says so (not "please report this").
# 8000 tokens: the trace's 8000×8000 mask alone is 512 MB, in a 400 MB address
# space. (Not through the BLAS: OpenBLAS retries a failed allocation forever.)
# AddressSanitizer cannot start under an address-space limit (its shadow
# memory alone is larger): in the sanitizer build (ASAN_OPTIONS set) skip it.
if "ASAN_OPTIONS" not in os.environ and run("--version", limit_as=400 << 20).returncode == 0:
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "long.toml")
        with open(path, "w") as f:
            f.write("[input]\nX = [" + ", ".join(f"[{i % 7 / 10}]" for i in range(8000)) +
                    "]\n[weights]\nW_Q = \"identity\"\nW_K = \"identity\"\nW_V = \"identity\"\n")
        r = run("run", path, "--summary", limit_as=400 << 20)
        check(r.returncode == 4 and "out of memory" in r.stderr and "report" not in r.stderr,
              f"out of memory: exit {r.returncode}: {r.stderr[-300:]}")
    # bench's forward pass too big for the memory: exit 4, saying what to ask for instead.
    r = run("bench", "--seq", "16384", "--d-model", "1024", "--heads", "8", limit_as=600 << 20)
    check(r.returncode == 4 and r.stderr.startswith("attn-trace: out of memory: bench: ")
          and "give a smaller --seq or --d-model" in r.stderr and r.stdout == "",
          f"bench out of memory: exit {r.returncode}: {r.stderr[-300:]}")
    memory_caps(tempfile.mkdtemp())
else:
    print("skipped: the out-of-memory check (an AddressSanitizer build cannot start under an "
          "address-space limit)")

if failures:
    print(f"{len(failures)} failure(s)")
    sys.exit(1)
print("OK")
