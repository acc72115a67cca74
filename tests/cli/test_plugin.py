#!/usr/bin/python3
"""The CUDA backend as a plugin (docs/backends.md#the-plugin): the program
links no CUDA library; `--backend cuda` opens libattn-trace-cuda.so with
dlopen; every way that can fail is exit 3 with a message naming what is
missing and `--backend cpu`; and the seam works end to end, on any machine,
with the host-kernels plugin (the CUDA backend's layout and row functions on
the host) standing in for the GPU: numpy recomputes every step of its trace
from the trace's own inputs, within what floating point allows in any
summation order (crosscheck.py), as it does for the golden files.

Usage: test_plugin.py ATTN_TRACE HOST_KERNELS_PLUGIN [CUDA_PLUGIN]
(CUDA_PLUGIN: the real plugin where the build has one.)
"""
import json
import os
import pathlib
import subprocess
import sys
import tempfile
import tomllib

from clitest import check, environment, failures, run_program

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))
try:
    import crosscheck  # noqa: E402  (numpy's recomputation of every step)
except ModuleNotFoundError as missing:
    print(f"SKIPPED: {sys.executable} has no {missing.name} (apt-get install python3-numpy)")
    sys.exit(77)

BIN = sys.argv[1]
HOST_PLUGIN = sys.argv[2]
CUDA_PLUGIN = sys.argv[3] if len(sys.argv) > 3 and sys.argv[3] else None
CUDA_LIBRARIES = ("libcuda.", "libcudart", "libcublas", "libnvrtc", "libcusparse", "libnvjitlink")


def run(*args, plugin=None):
    changes = {"ATTN_CUDA_PLUGIN": plugin} if plugin is not None else {}
    return run_program(BIN, *args, env=environment(changes, drop=("ATTN_CUDA_PLUGIN",)))


def needed(path):
    """The DT_NEEDED libraries of an ELF file, as readelf lists them."""
    out = subprocess.run(["readelf", "-d", path], capture_output=True, text=True, check=True).stdout
    return [line.split("[", 1)[1].split("]", 1)[0] for line in out.splitlines()
            if "(NEEDED)" in line]


def exported_functions(path):
    out = subprocess.run(["nm", "-D", "--defined-only", path], capture_output=True, text=True,
                         check=True).stdout
    return sorted(line.split()[-1] for line in out.splitlines() if line.split()[1:2] == ["T"])


def refused(r, *phrases):
    """Exit 3, one line, every phrase in it, and the way out."""
    return (r.returncode == 3 and r.stdout == "" and r.stderr.count("\n") == 1
            and "--backend cpu" in r.stderr and all(p in r.stderr for p in phrases))


def compile_library(tmp, name, source, *flags):
    c = pathlib.Path(tmp) / (name + ".c")
    c.write_text(source)
    out = pathlib.Path(tmp) / ("lib" + name + ".so")
    subprocess.run(["cc", "-shared", "-fPIC", "-o", str(out), str(c), *flags], check=True)
    return str(out)


def step_values(trace):
    return {s["id"]: s["data"] for s in json.loads(trace)["steps"]}


def proven(lesson, trace):
    """Problems found when numpy recomputes every step of `trace` (a JSON trace)
    from the trace's own values of the steps it reads, each within what floating
    point allows in any summation order (crosscheck.py, tests/bounds.py)."""
    as_golden = {"golden": {"lesson": trace["lesson"]},
                 "step": [{"id": s["id"], "shape": s["shape"], "data": s["data"]}
                          for s in trace["steps"]
                          # big given matrices are left out of golden files, and so here
                          if not (crosscheck.given(s["id"]) and
                                  s["shape"][0] * s["shape"][1] > crosscheck.GOLDEN_GIVEN_CELLS)]}
    steps = crosscheck.recompute(lesson, crosscheck.golden_values(as_golden))
    return crosscheck.compare(trace["lesson"], steps, as_golden)[0]


# 1. The program itself: no CUDA library among what the loader maps at start.
libraries = needed(BIN)
check(any(lib.startswith("libc.so") for lib in libraries) and any(
    lib.startswith("libstdc++") for lib in libraries), f"readelf lists the program's libraries: {libraries}")
check(not [lib for lib in libraries if lib.startswith(CUDA_LIBRARIES)],
      f"the program links no CUDA library: {libraries}")

with tempfile.TemporaryDirectory() as tmp:
    # 2. No plugin where it was asked for.
    missing = os.path.join(tmp, "nowhere", "libattn-trace-cuda.so")
    r = run("run", "--backend", "cuda", plugin=missing)
    check(refused(r, "no CUDA plugin: ATTN_CUDA_PLUGIN names ", missing, "correct or unset it"),
          f"a missing plugin: exit 3, where it looked and the fix: {r.stderr!r}")
    # 3. Not a shared library at all.
    junk = os.path.join(tmp, "junk.so")
    pathlib.Path(junk).write_text("not an ELF file\n")
    r = run("run", "--backend", "cuda", plugin=junk)
    check(refused(r, "could not be loaded", junk), f"a file that is no library: {r.stderr!r}")
    # 4. A plugin whose own libraries are missing (libcublas on a machine without
    # the CUDA runtime): the loader's message names the library.
    dependency = compile_library(tmp, "fakecublas", "int fake_cublas(void) { return 1; }\n")
    orphan = compile_library(tmp, "orphan", "int fake_cublas(void);\n"
                             "int use(void) { return fake_cublas(); }\n", "-L" + tmp, "-lfakecublas")
    os.remove(dependency)
    r = run("run", "--backend", "cuda", plugin=orphan)
    check(refused(r, "could not be loaded", "libfakecublas.so"),
          f"a plugin whose library is missing names it: {r.stderr!r}")
    # 5. A shared library that is not a plugin.
    plain = compile_library(tmp, "plain", "int nothing(void) { return 0; }\n")
    r = run("run", "--backend", "cuda", plugin=plain)
    check(refused(r, "is not an attn-trace CUDA plugin", "attn_cuda_plugin_table"),
          f"a library without the entry: {r.stderr!r}")
    # 6. A plugin of another build (another interface version).
    other = compile_library(tmp, "other", "struct t { int abi; unsigned long a, b; };\n"
                            "static const struct t table = {999, 0, 0};\n"
                            "const struct t* attn_cuda_plugin_table(void) { return &table; }\n")
    r = run("run", "--backend", "cuda", plugin=other)
    check(refused(r, "built for another version of attn-trace", "999"),
          f"a plugin of another build is refused: {r.stderr!r}")
    # bench goes through the same door.
    r = run("bench", "--backend", "cuda", "--seq", "8", "--d-model", "16", "--heads", "2",
            "--runs", "1", plugin=missing)
    check(refused(r, "no CUDA plugin: "), f"bench --backend cuda without a plugin: {r.stderr!r}")

# 7. The seam end to end: the host-kernels plugin in the CUDA backend's place.
LESSONS = sorted((pathlib.Path(__file__).resolve().parents[2] / "lessons").glob("*.toml"))
check(len(LESSONS) >= 30, f"the lessons are found: {len(LESSONS)}")
for path in LESSONS:
    lesson = str(path)
    cpu = run("run", lesson, "--format", "json", "--backend", "cpu")
    check(cpu.returncode == 0, f"{path.name} runs on the CPU: {cpu.stderr!r}")
    seam = run("run", lesson, "--format", "json", "--backend", "cuda", plugin=HOST_PLUGIN)
    dtype = tomllib.loads(path.read_text(encoding="utf-8")).get("model", {}).get("dtype", "f64")
    if dtype != "f64":
        check(refused(seam, f"dtype {dtype} is emulated exactly on the CPU only"),
              f"{path.name}: a {dtype} lesson is the CPU's alone: {seam.stderr!r}")
        continue
    check(seam.returncode == 0 and json.loads(seam.stdout)["backend"] == "cuda",
          f"{lesson}: the host-kernels plugin runs as the CUDA backend: {seam.stderr!r}")
    if seam.returncode == 0:
        mine, theirs = step_values(seam.stdout), step_values(cpu.stdout)
        check(list(mine) == list(theirs), f"{path.name}: the same steps as on the CPU")
        problems = proven(tomllib.loads(path.read_text(encoding="utf-8")), json.loads(seam.stdout))
        check(not problems, f"{path.name}: numpy proves every step through the plugin: {problems[:3]}")
text = run("run", "--backend", "cuda", plugin=HOST_PLUGIN)
check(text.returncode == 0 and "· backend cuda" in text.stdout, "the trace says which backend ran it")
# What the backend does not compute (ALiBi's bias and the steps after it, RoPE's
# rotations) the run names, in its text (English and Chinese) and its JSON.
ALIBI_HOST = [f"head{h}.{s}" for h in range(2) for s in
              ("alibi_bias", "biased", "masked", "exp", "row_sum", "weights", "context")]
ROPE_HOST = ["head0.q_rot", "head0.k_rot", "head0.q_rot_shifted", "head0.k_rot_shifted",
             "head0.scores_shifted", "head0.shift_check"]
for lesson, host in (("alibi-bias", ALIBI_HOST), ("rope-relative", ROPE_HOST)):
    r = run("run", lesson, "--backend", "cuda", "--format", "json", plugin=HOST_PLUGIN)
    check(r.returncode == 0 and json.loads(r.stdout).get("host_steps") == host,
          f"{lesson}: JSON host_steps names the steps computed on the host: {r.stdout[:300]!r}")
    r = run("run", lesson, "--backend", "cuda", "--summary", plugin=HOST_PLUGIN)
    flat = " ".join(r.stdout.split())
    check(r.returncode == 0 and "computed on the host, not by backend cuda: " + ", ".join(host)
          in flat, f"{lesson}: the text says which steps the host computed: {r.stdout[:600]!r}")
    r = run("--lang", "zh", "run", lesson, "--backend", "cuda", "--summary", plugin=HOST_PLUGIN)
    check(r.returncode == 0 and "在主机上计算" in r.stdout,
          f"{lesson}: the Chinese text says so too: {r.stdout[:600]!r}")
    r = run("run", lesson, "--backend", "cpu", "--format", "json")
    check(r.returncode == 0 and "host_steps" not in json.loads(r.stdout),
          f"{lesson}: on the CPU nothing is 'on the host instead': no host_steps")
r = run("run", "gqa-kv-heads", "--backend", "cuda", "--format", "json", plugin=HOST_PLUGIN)
check(r.returncode == 0 and "host_steps" not in json.loads(r.stdout),
      "grouped K/V heads run whole on the backend (K and V repeated per group): no host_steps")
r = run("bench", "--backend", "cuda", "--seq", "8", "16", "--d-model", "16", "--heads", "2",
        "--runs", "2", "--format", "json", plugin=HOST_PLUGIN)
check(r.returncode == 0 and json.loads(r.stdout)["backend"] == "cuda",
      f"bench runs its forward plan through the plugin: {r.returncode} {r.stderr!r}")

# 8. The real plugin, where this build has one: it is the one that carries CUDA,
# exports only its entry, and says why where there is no GPU.
if CUDA_PLUGIN:
    plugin_libraries = needed(CUDA_PLUGIN)
    check(any(lib.startswith("libcublas") for lib in plugin_libraries)
          and any(lib.startswith("libcudart") for lib in plugin_libraries),
          f"the plugin links cuBLAS and the CUDA runtime: {plugin_libraries}")
    check(exported_functions(CUDA_PLUGIN) == ["attn_cuda_plugin_table"],
          f"the plugin exports only its entry: {exported_functions(CUDA_PLUGIN)}")
    beside = os.path.join(os.path.dirname(os.path.abspath(BIN)), "libattn-trace-cuda.so")
    check(os.path.exists(beside), f"the plugin is built beside the program: {beside}")
    r = run("run", "--backend", "cuda")
    if r.returncode != 0:
        check(refused(r, "no CUDA device: "), f"no GPU here: the driver's reason: {r.stderr!r}")
    else:
        check("· backend cuda" in r.stdout, "a GPU here: the trace ran on it")
else:
    print("this build has no CUDA plugin (no nvcc): its own checks were not run")

print(f"{len(failures)} failure(s)")
sys.exit(1 if failures else 0)
