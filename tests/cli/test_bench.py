#!/usr/bin/python3
"""Command-line tests of `attn-trace bench` (docs/bench.md) on small sizes:
the numbers of its JSON against their definitions recomputed here (FLOPs by
the formula, medians of the listed runs, GFLOP/s, growth, the plan's bytes as
documented), the text table, and exit 2 with a clear message on bad input.
Nothing here is timed against a target: speed is the benchmark's business.

Usage: test_bench.py PATH/TO/attn-trace
"""
import json
import statistics
import sys

from clitest import check, failures, runner

BIN = sys.argv[1]


run = runner(BIN, "bench")


def close(a, b, rel=1e-12):
    return abs(a - b) <= rel * max(abs(a), abs(b))


def flops(n, d, h):
    """docs/bench.md: QKV, scores, softmax (scaled, exp, row sum, weights), context, output."""
    d_k = d // h
    return {"qkv": 3 * 2 * n * d * d, "scores": h * 2 * n * d_k * n,
            "softmax": h * (n * n + n * n + n * (n - 1) + n * n),
            "context": h * 2 * n * n * d_k, "output": 2 * n * d * d}


def attention_block(n):
    """docs/bench.md: queries per block of attention work."""
    return min(n, 256)


def plan_bytes(n, d, threads):
    """docs/bench.md: W_QKV, W_O, X, [Q|K|V], concat, output, a scores block per thread."""
    return 8 * (3 * d * d + d * d + n * d + 3 * n * d + n * d + n * d
                + threads * n * attention_block(n))


# The JSON's numbers against their definitions.
for seqs, d, h, runs in (([8, 16], 16, 2, "1"), ([16, 8, 5], 12, 3, "3"), ([1], 4, 4, "2")):
    r = run("--seq", *map(str, seqs), "--d-model", str(d), "--heads", str(h), "--runs", runs,
            "--seed", "7", "--format", "json")
    check(r.returncode == 0, f"bench {seqs} d {d} h {h} exits 0: {r.stderr}")
    if r.returncode != 0:
        continue
    doc = json.loads(r.stdout)
    what = f"seq {seqs} d {d} h {h}"
    check(doc["command"] == "bench" and doc["backend"] == "cpu" and doc["dtype"] == "f64",
          f"{what}: command, backend, dtype")
    check((doc["d_model"], doc["heads"], doc["d_k"], doc["seed"]) == (d, h, d // h, 7),
          f"{what}: sizes and seed as asked")
    check(doc["runs_asked"] == int(runs) and doc["warm_up_runs"] == 1, f"{what}: runs asked")
    check([x["n"] for x in doc["lengths"]] == seqs, f"{what}: one entry per length, in order")
    previous = None
    for x in doc["lengths"]:
        n = x["n"]
        at = f"{what}, n {n}"
        check(x["runs"] == int(runs) and x["fewer_runs"] is None, f"{at}: --runs is kept")
        for key in ("compute_s", "upload_s", "download_s"):
            check(len(x[key]) == int(runs) and all(t >= 0 for t in x[key]), f"{at}: {key} per run")
            check(close(x["median_" + key], statistics.median(x[key])), f"{at}: median_{key}")
        check(x["median_compute_s"] > 0, f"{at}: the computation takes time")
        terms = flops(n, d, h)
        check(x["flops_terms"] == terms, f"{at}: FLOPs per term {x['flops_terms']} == {terms}")
        check(x["flops"] == sum(terms.values()), f"{at}: FLOPs {x['flops']}")
        check(x["flops"] == 8 * n * d * d + 4 * n * n * d + h * (4 * n * n - n),
              f"{at}: FLOPs by the closed formula {doc['flops_formula']}")
        check(close(x["gflop_per_s"], x["flops"] / x["median_compute_s"] / 1e9),
              f"{at}: GFLOP/s = flops / median time")
        if previous is None:
            check(x["growth"] is None, f"{at}: no growth for the first length")
        else:
            check(close(x["growth"], x["median_compute_s"] / previous["median_compute_s"]),
                  f"{at}: growth = median / previous median")
        check(x["plan_bytes"] == plan_bytes(n, d, doc["cpu_threads"]),
              f"{at}: plan bytes {x['plan_bytes']} == {plan_bytes(n, d, doc['cpu_threads'])}")
        check(x["peak_rss_bytes"] >= x["plan_bytes"], f"{at}: peak RSS holds the plan")
        previous = x

# The text table: a header naming the settings, one row per length, the formula.
r = run("--seq", "8", "16", "--d-model", "16", "--heads", "2", "--runs", "1")
check(r.returncode == 0, f"bench text exits 0: {r.stderr}")
lines = r.stdout.splitlines()
check(lines and "backend cpu · f64 · d_model 16 · 2 heads of 8 · seed 1" in lines[0],
      f"text header: {lines[:1]}")
rows = [line.split() for line in lines if line.split() and line.split()[0] in ("8", "16")]
check(len(rows) == 2 and rows[0][3] == "—" and rows[1][3].startswith("×"),
      f"text: a row per length, growth from the second: {rows}")
check("8·n·d² + 4·n²·d + h·(4·n² − n)" in r.stdout, "text: the FLOPs formula")

# Bad input: exit 2 and a message naming the option and the fix.
for args, message in (
        (["--seq", "0"], "--seq must be a whole number from 1 to 65536, not '0'"),
        (["--seq", "8", "x"], "--seq must be a whole number from 1 to 65536, not 'x'"),
        (["--d-model", "10", "--heads", "3"],
         "--d-model 10 is not divisible by --heads 3: each head takes d_model / heads columns; "
         "give a number of heads that divides 10 (e.g. 2)"),
        (["--heads", "0"], "--heads must be a whole number from 1 to 8192, not '0'"),
        (["--runs", "0"], "--runs must be a whole number from 1 to 1000, not '0'"),
        (["--dtype", "f32"], "bench times f64 only, not --dtype f32"),
        (["--backend", "tpu"], "unknown backend 'tpu'; use cpu or cuda"),
        (["--format", "csv"], "--format"),
):
    r = run(*args)
    check(r.returncode == 2, f"bench {' '.join(args)} exits 2 (got {r.returncode})")
    check(message in r.stderr, f"bench {' '.join(args)} says '{message}': {r.stderr!r}")
    check(r.stdout == "", f"bench {' '.join(args)} prints nothing on stdout")

# A length that does not fit in this machine's memory (weights and activations
# alone: 8·(4d² + 6nd) bytes, 28 GB here) is refused before anything is allocated.
with open("/proc/meminfo") as f:
    memory = int(f.readline().split()[1]) * 1024
if memory < 8 * (4 * 8192**2 + 6 * 65536 * 8192):
    r = run("--d-model", "8192", "--seq", "65536")
    check(r.returncode == 2 and "needs at least" in r.stderr
          and "give a smaller --seq or --d-model" in r.stderr,
          f"a pass bigger than the memory is refused: {r.returncode} {r.stderr!r}")

# --backend cuda: exit 3 saying why in a build without CUDA or on a machine
# without a GPU; where a GPU answers, the same JSON as the CPU's.
r = run("--backend", "cuda", "--seq", "8", "--d-model", "16", "--heads", "2", "--runs", "1",
        "--format", "json")
if r.returncode == 3:
    check("cuda" in r.stderr.lower() or "CUDA" in r.stderr, f"cuda: exit 3 says why: {r.stderr!r}")
else:
    check(r.returncode == 0 and json.loads(r.stdout)["backend"] == "cuda",
          f"cuda: exit 3, or a bench on the GPU: {r.returncode} {r.stderr!r}")

print(f"{len(failures)} failure(s)")
sys.exit(1 if failures else 0)
