#!/usr/bin/python3
"""How attn-trace runs OpenBLAS (src/core/blas_loader.cpp): OpenBLAS is
opened by the first BLAS call, not by the loader at start, so a command that
multiplies nothing big never loads it; when it is opened, on a CPU with AVX2
or AVX-512 it computes with the kernel of those features, never with the
generic Prescott ones OpenBLAS falls back to on a CPU newer than itself, and
with one thread; a kernel or thread count the user chose is kept; and the
numbers equal those of the generic kernels to 1e-12. OPENBLAS_VERBOSE=2 makes
OpenBLAS print "Core: NAME" each time it loads. Skipped (exit 77) when the
BLAS under the binary is not OpenBLAS.

Usage: test_blas.py PATH/TO/attn-trace
"""
import json
import os
import pathlib
import re
import sys

from clitest import check, failures, run_program

BIN = sys.argv[1]
SRC = pathlib.Path(__file__).resolve().parent.parent.parent


def run(*args, env_extra=None, stdin=None):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENBLAS_", "GOTO_", "OMP_"))}
    env["OPENBLAS_VERBOSE"] = "2"
    env.update(env_extra or {})
    result = run_program(BIN, *args, env=env, stdin=stdin)
    cores = re.findall(r"^Core: (\S+)", result.stderr, re.M)
    return result, cores


def cpu_flags():
    try:
        text = pathlib.Path("/proc/cpuinfo").read_text()
    except OSError:
        return set()
    line = re.search(r"^flags\s*:(.*)$", text, re.M)
    return set(line.group(1).split()) if line else set()


def numbers(value, out):
    """Every number of a JSON document, in order."""
    if isinstance(value, bool) or value is None:
        return out
    if isinstance(value, (int, float)):
        out.append(float(value))
    elif isinstance(value, dict):
        for v in value.values():
            numbers(v, out)
    elif isinstance(value, list):
        for v in value:
            numbers(v, out)
    return out


# A lesson whose products are big enough for BLAS (d_model 512).
BIG = "d512-walkthrough"
_, cores = run("run", BIG, "--summary")
if not cores:
    print("SKIP: the BLAS under attn-trace is not OpenBLAS (no 'Core:' line with OPENBLAS_VERBOSE=2)")
    sys.exit(77)

flags = cpu_flags()
avx512 = {"avx512f", "avx512dq", "avx512bw", "avx512vl", "avx512cd"} <= flags
avx2 = {"avx2", "fma"} <= flags
expected = "SkylakeX" if avx512 else "Haswell" if avx2 else None
print(f"OpenBLAS loads with core {cores[0]}; CPU has AVX-512: {avx512}, AVX2+FMA: {avx2}")

# 1. Nothing big to multiply, nothing loaded: the commands people type most.
ANSWERS = '[[answer]]\nstep = "head0.scores"\ncell = [0, 1]\nvalue = 1.68\n'
for args in (["--version"], ["--help"], ["lessons"], ["run", "river-bank"],
             ["verify", "river-bank", "--answers", "-"]):
    result, cores = run(*args, stdin=ANSWERS)
    check(result.returncode in (0, 1) and cores == [],
          f"{' '.join(args)}: OpenBLAS is not loaded (exit {result.returncode}, loads {cores})")

# 2. The kernel the program computes with: opened once, with this CPU's kernel.
result, cores = run("run", BIG, "--format", "json")
check(result.returncode == 0, f"run {BIG} exits 0, got {result.returncode}: {result.stderr}")
check(len(cores) == 1, f"OpenBLAS is opened once: {cores}")
if expected:
    check(cores == [expected], f"computes with {expected} on a CPU with its features: {cores}")
_, bench_cores = run("bench", "--seq", "64", "--d-model", "64", "--heads", "2", "--runs", "1")
check(len(bench_cores) == 1 and (not expected or bench_cores == [expected]),
      f"bench opens OpenBLAS once, with {expected}: {bench_cores}")

# 3. The user's kernel is kept.
generic, cores_user = run("run", BIG, "--format", "json",
                          env_extra={"OPENBLAS_CORETYPE": "Prescott"})
check(cores_user == ["Prescott"], f"OPENBLAS_CORETYPE=Prescott is kept: loaded as {cores_user}")

# 4. Same arguments, same numbers: every number of the trace within 1e-12.
a, b = numbers(json.loads(result.stdout), []), numbers(json.loads(generic.stdout), [])
check(len(a) == len(b) and len(a) > 100, f"both traces have the same numbers ({len(a)} vs {len(b)})")
worst = max((abs(x - y) / max(1.0, abs(y)) for x, y in zip(a, b) if x != y), default=0.0)
check(worst <= 1e-12, f"the kernels agree to 1e-12 (worst relative difference {worst:.3g})")
print(f"{len(a)} numbers, worst difference between kernels {worst:.3g}")

# 5. A lesson on stdin is read once, as by name.
lesson = (SRC / "lessons" / f"{BIG}.toml").read_text(encoding="utf-8")
piped, _ = run("run", "-", "--format", "json", stdin=lesson)
check(piped.returncode == 0 and numbers(json.loads(piped.stdout), []) == a,
      f"a lesson on stdin gives the same trace as by name: exit {piped.returncode} {piped.stderr}")

if failures:
    print(f"{len(failures)} failure(s)")
    sys.exit(1)
print("ok")
