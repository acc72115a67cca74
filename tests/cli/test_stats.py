#!/usr/bin/python3
"""Command-line tests of `attn-trace stats`: its numbers against an independent
Python implementation of the same generator (SplitMix64 + Box–Muller,
docs/stats.md), statistical bounds at a fixed seed, byte-identical output for
the same seed, and exit 2 with a clear message on bad options.

Usage: test_stats.py PATH/TO/attn-trace
"""
import json
import math
import sys

from clitest import check, failures, runner

BIN = sys.argv[1]
MASK = (1 << 64) - 1


run = runner(BIN)


class SplitMix64:
    def __init__(self, seed):
        self.state = seed & MASK

    def next(self):
        self.state = (self.state + 0x9E3779B97F4A7C15) & MASK
        z = self.state
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK
        return z ^ (z >> 31)


def normals(seed):
    rng = SplitMix64(seed)
    while True:
        u1 = ((rng.next() >> 11) + 1) * 2.0**-53
        u2 = (rng.next() >> 11) * 2.0**-53
        r = math.sqrt(-2.0 * math.log(u1))
        yield r * math.cos(2.0 * math.pi * u2)
        yield r * math.sin(2.0 * math.pi * u2)


def sample(d_k, samples, seed, unit_length):
    z = normals(seed)
    raw = []
    for _ in range(samples):
        q = [next(z) for _ in range(d_k)]
        k = [next(z) for _ in range(d_k)]
        if unit_length:
            lq, lk = math.sqrt(sum(x * x for x in q)), math.sqrt(sum(x * x for x in k))
            q, k = [x / lq for x in q], [x / lk for x in k]
        dot = 0.0
        for a, b in zip(q, k):
            dot += a * b
        raw.append(dot)
    return raw, [x / math.sqrt(d_k) for x in raw]


def moments(xs):
    n = len(xs)
    mean = sum(xs) / n
    var = sum((x - mean) ** 2 for x in xs) / (n - 1)
    return {"mean": mean, "variance": var, "std": math.sqrt(var),
            "beyond_3": sum(abs(x) > 3 for x in xs) / n}


def close(a, b, rel=1e-9):
    return abs(a - b) <= rel * max(1.0, abs(a), abs(b))


# The numbers against the independent implementation.
for d_k, samples, seed in ((64, 2000, 1), (1, 500, 7), (3, 100, 18446744073709551615)):
    r = run("stats", "--d-k", str(d_k), "--samples", str(samples), "--seed", str(seed),
            "--format", "json")
    check(r.returncode == 0, f"stats d_k {d_k}: exit 0 ({r.stderr})")
    if r.returncode != 0:
        continue
    out = json.loads(r.stdout)
    check(out["d_k"] == d_k and out["samples"] == samples and out["seed"] == seed,
          "json echoes the options")
    for kind, unit_length in (("unit_variance", False), ("unit_length", True)):
        raw, scaled = sample(d_k, samples, seed, unit_length)
        for part, xs in (("raw", raw), ("scaled", scaled)):
            want = moments(xs)
            for name, value in want.items():
                got = out[kind][part][name]["value"]
                check(close(got, value), f"d_k {d_k} {kind} {part} {name}: {got} vs Python {value}")
    theory = out["unit_variance"]["raw"]["variance"]["theory"]
    check(theory == d_k, f"theory Var(q·k) = d_k ({theory})")
    check(out["unit_variance"]["scaled"]["variance"]["theory"] == 1, "theory scaled variance 1")
    check(close(out["unit_length"]["raw"]["std"]["theory"], 1 / math.sqrt(d_k)),
          "theory unit-length std 1/√d_k")

# Statistical bounds at a fixed seed: the sampled values are within 4 standard errors.
r = run("stats", "--d-k", "64", "--samples", "20000", "--seed", "3", "--format", "json")
out = json.loads(r.stdout)
for kind in ("unit_variance", "unit_length"):
    for part in ("raw", "scaled"):
        for name in ("mean", "variance", "std"):
            e = out[kind][part][name]
            check(abs(e["value"] - e["theory"]) <= 4 * e["standard_error"] + 1e-12,
                  f"{kind} {part} {name}: {e['value']} within 4 s.e. of {e['theory']}")
check(abs(out["unit_variance"]["raw"]["std"]["value"] - 8) < 0.2, "unit variance: std near 8")
check(abs(out["unit_length"]["raw"]["std"]["value"] - 0.125) < 0.003, "unit length: std near 0.125")
check(out["unit_length"]["raw"]["beyond_3"]["value"] == 0, "unit length: never beyond ±3")
check(out["unit_variance"]["raw"]["beyond_3"]["value"] > 0.6, "unit variance: beyond ±3 often")

# Same seed, same bytes; another seed, other numbers; text shows both kinds and theory.
a = run("stats", "--d-k", "16", "--seed", "5")
b = run("stats", "--d-k", "16", "--seed", "5")
c = run("stats", "--d-k", "16", "--seed", "6")
check(a.returncode == 0 and a.stdout == b.stdout, "same seed: identical output")
check(a.stdout != c.stdout, "another seed: other numbers")
check("(= d_k)" in a.stdout and "unit-length" in a.stdout and "0.25" in a.stdout,
      "text: theory column, both kinds of vectors, 1/√16")

# Bad options: exit 2, a message naming the option and its range, nothing on stdout.
for args, words in ((["--d-k", "0"], "--d-k 0 is out of range"),
                    (["--d-k", "-3"], "--d-k must be a whole number"),
                    (["--d-k", "abc"], "--d-k must be a whole number"),
                    (["--d-k", "8", "--samples", "29"], "give 30 to 1000000 samples"),
                    (["--d-k", "8", "--samples", "2000000"], "--samples 2000000 is out of range"),
                    (["--d-k", "1000", "--samples", "10000"], "give at most 5000 samples"),
                    (["--d-k", "8", "--seed", "18446744073709551616"], "--seed must be"),
                    ([], "--d-k is required")):
    r = run("stats", *args)
    check(r.returncode == 2 and words in r.stderr and r.stdout == "",
          f"stats {' '.join(args)}: exit 2 with '{words}' (got {r.returncode}: {r.stderr.strip()})")

# --help says the range the error holds to (it said 2 to 1000000 while 29 was refused).
r = run("stats", "--help")
check(r.returncode == 0 and "Pairs (q, k) drawn, 30 to 1000000" in " ".join(r.stdout.split()),
      f"stats --help: --samples from 30: {r.stdout}")
r = run("stats", "--d-k", "8", "--samples", "x")
check(r.returncode == 2 and "--samples must be a whole number from 30 to 1000000" in r.stderr,
      f"a --samples that is not a number names the same range: {r.stderr}")

if failures:
    sys.exit(f"{len(failures)} failure(s)")
print("stats: all checks passed")
