#!/usr/bin/python3
"""The mutation mode of scripts/fuzz (docs/fuzzing.md), the approach of the
outside fuzzer of issue 25: mutations of the project's own lessons, answers
and golden files (ranges deleted, duplicated, repeated, spliced from another
file, TOML tokens inserted), scaled to every size up to a little above the
file limit, each run through the real binary as a user would run it. A finding
is a run killed by a signal, an exit code other than 0, 1 or 2 (4 is out of
memory or an internal error), or a run over the timeout (a hang); its input
and command line are kept in the findings folder.

Usage: mutate.py BINARY SECONDS FINDINGS_DIR [--limit-mb MB] [--seed N] [--jobs N]
Exits 1 when there is a finding. Prints the executions and what they gave.
"""
import argparse
import collections
import concurrent.futures
import glob
import math
import os
import random
import shutil
import subprocess
import tempfile
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# Bytes that make TOML structure: what the outside fuzzer inserted and repeated.
TOKENS = [b"[", b"]", b"[[", b"]]", b"{", b"}", b"=", b" = ", b".", b",", b'"', b"'", b'"""',
          b"'''", b"#", b"\n", b"\\", b"a.", b"[a.", b"{a=", b"[.a]", b'"a"', b"1.5e300",
          b"-inf", b"nan", b"\xc3\xa9", b"\xef\xbb\xbf", b"\x00", b"\r\n", b"\x1b]0;x\x07"]
# Repeated to scale a file up: each of these, many times, builds depth or width.
GROWERS = [b"a.", b"[", b"{a=", b"[[", b"# padding\n", b"0.5, ", b"[0.5, 0.25], ", b"\n"]

# What to fuzz: the seeds, and the command that reads a file of that kind
# (small compute limits: the readers are under test, not the machine's memory).
KINDS = {
    "lesson": (["lessons/*.toml", "tests/support/*.toml", "fuzz/corpus/lesson/*"],
               lambda path: ["run", path, "--summary"]),
    "answers": (["tests/cli/verify/*.toml", "fuzz/corpus/answers/*"],
                lambda path: ["verify", "river-bank", "--answers", path]),
    "golden": (["golden/*.toml", "fuzz/corpus/golden/*"],
               lambda path: ["check", "river-bank", "--golden", path]),
}
SMALL_LIMITS = ["--limit", "tokens=256", "--limit", "d_model=256", "--limit", "heads=16",
                "--limit", "trace_gb=1", "--limit", "output_mb=64"]


def seeds_of(kind):
    files = []
    for pattern in KINDS[kind][0]:
        files += sorted(glob.glob(os.path.join(ROOT, pattern)))
    return [open(f, "rb").read() for f in files if os.path.isfile(f)]


def a_range(rng, data):
    if not data:
        return 0, 0
    start = rng.randrange(len(data))
    return start, min(len(data), start + 1 + int(rng.expovariate(1 / 64)))


def mutate_once(rng, data, others):
    """One of the outside fuzzer's mutations of `data`."""
    op = rng.randrange(6)
    start, end = a_range(rng, data)
    at = rng.randrange(len(data) + 1)
    if op == 0:  # delete a range
        return data[:start] + data[end:]
    if op == 1:  # duplicate a range in place
        return data[:end] + data[start:end] + data[end:]
    if op == 2:  # insert a TOML token
        return data[:at] + rng.choice(TOKENS) + data[at:]
    if op == 3:  # repeat a range a few times
        return data[:end] + data[start:end] * rng.randint(2, 16) + data[end:]
    if op == 4:  # splice a range of another file
        other = rng.choice(others)
        s, e = a_range(rng, other)
        return data[:at] + other[s:e] + data[at:]
    return data[:at] + bytes([rng.randrange(256)]) + data[at + 1:]  # a byte replaced


def scale(rng, data, limit_bytes):
    """`data` grown to a size drawn log-uniformly up to 1.25 × the limit, by
    repeating one piece (a range of it, or a token that builds depth)."""
    target = int(math.exp(rng.uniform(math.log(max(len(data), 64)), math.log(limit_bytes * 1.25))))
    if target <= len(data):
        return data
    if rng.random() < 0.5:
        piece = rng.choice(GROWERS)
    else:
        start, end = a_range(rng, data)
        piece = data[start:end] or b"\n"
    at = rng.randrange(len(data) + 1)
    return data[:at] + piece * ((target - len(data)) // len(piece) + 1) + data[at:]


def make_case(rng, seeds, limit_bytes):
    data = rng.choice(seeds)
    for _ in range(rng.randint(1, 4)):
        data = mutate_once(rng, data, seeds)
    if rng.random() < 0.5:
        data = scale(rng, data, limit_bytes)
    return data


class Fuzz:
    def __init__(self, args):
        self.args = args
        self.limit_bytes = args.limit_mb << 20
        self.seeds = {kind: seeds_of(kind) for kind in KINDS}
        self.lock = threading.Lock()
        self.outcomes = collections.Counter()
        self.per_kind = collections.Counter()
        self.largest = 0
        self.findings = []

    def one(self, worker, n, tmp):
        rng = random.Random(self.args.seed * 1_000_003 + n)
        kind = rng.choice(sorted(KINDS))
        data = make_case(rng, self.seeds[kind], self.limit_bytes)
        path = os.path.join(tmp, f"case-{worker}.toml")
        with open(path, "wb") as f:
            f.write(data)
        stdin = rng.random() < 0.2  # a fifth through standard input, as -
        command = [self.args.binary, "--limit", f"file_mb={self.args.limit_mb}", *SMALL_LIMITS,
                   *KINDS[kind][1]("-" if stdin else path)]
        try:
            with open(path, "rb") as source:
                r = subprocess.run(command, stdin=source if stdin else subprocess.DEVNULL,
                                   stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                   timeout=self.args.timeout)
            outcome = r.returncode
        except subprocess.TimeoutExpired:
            outcome = "hang"
        with self.lock:
            self.outcomes[outcome] += 1
            self.per_kind[kind] += 1
            self.largest = max(self.largest, len(data))
            if outcome not in (0, 1, 2):
                self.keep(kind, n, path, command, outcome, stdin)

    def keep(self, kind, n, path, command, outcome, stdin):
        os.makedirs(self.args.findings, exist_ok=True)
        kept = os.path.join(self.args.findings, f"{kind}-{n}.toml")
        shutil.copyfile(path, kept)
        shown = " ".join(command[:-1] + ["-" if stdin else kept]) + (f" < {kept}" if stdin else "")
        with open(kept + ".cmd", "w") as f:
            f.write(f"{shown}\n# outcome: {outcome}\n")
        self.findings.append(f"{kept}: {outcome}: {shown}")
        print(f"mutate: FINDING {outcome}: {shown}", flush=True)

    def run(self):
        deadline = time.monotonic() + self.args.seconds
        with tempfile.TemporaryDirectory() as tmp:
            def worker(w):
                n = w
                while time.monotonic() < deadline:
                    self.one(w, n, tmp)
                    n += self.args.jobs
            with concurrent.futures.ThreadPoolExecutor(self.args.jobs) as pool:
                list(pool.map(worker, range(self.args.jobs)))
        total = sum(self.outcomes.values())
        kinds = ", ".join(f"{k} {self.per_kind[k]}" for k in sorted(KINDS))
        codes = ", ".join(f"{k}: {v}" for k, v in sorted(self.outcomes.items(), key=str))
        print(f"mutate: {total} executions in {self.args.seconds} s ({kinds}); exit codes {codes}; "
              f"largest input {self.largest / (1 << 20):.1f} MiB (limit {self.args.limit_mb} MiB)")
        return 1 if self.findings else 0


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("binary")
    p.add_argument("seconds", type=int)
    p.add_argument("findings")
    p.add_argument("--limit-mb", type=int, default=4, help="file_mb of the runs (default 4)")
    p.add_argument("--seed", type=int, default=int(time.time()))
    p.add_argument("--jobs", type=int, default=os.cpu_count() or 2)
    p.add_argument("--timeout", type=int, default=30, help="seconds before a run is a hang")
    args = p.parse_args()
    print(f"mutate: seed {args.seed}", flush=True)
    raise SystemExit(Fuzz(args).run())


if __name__ == "__main__":
    main()
