#!/usr/bin/python3
"""`cmake --install BUILD --prefix P` (README, Install): the program, the CUDA
plugin where the build has one, the golden files and the docs land under P,
and the installed program runs from there, finds its golden files and its
plugin from where it is, in any working folder, with the build folder and
the source tree out of its way.

Usage: test_install.py BUILD_DIR SOURCE_DIR WITH_CUDA(ON|OFF)
"""
import os
import pathlib
import subprocess
import sys
import tempfile

from clitest import check, failures

BUILD, SOURCE, WITH_CUDA = sys.argv[1], pathlib.Path(sys.argv[2]), sys.argv[3] == "ON"


with tempfile.TemporaryDirectory() as tmp:
    prefix = pathlib.Path(tmp) / "prefix"
    r = subprocess.run(["cmake", "--install", BUILD, "--prefix", str(prefix)],
                       capture_output=True, text=True)
    check(r.returncode == 0, f"cmake --install succeeds: {r.stderr}")
    program = prefix / "bin" / "attn-trace"
    plugin = prefix / "lib" / "attn-trace" / "libattn-trace-cuda.so"
    doc = prefix / "share" / "doc" / "attn-trace"
    golden = prefix / "share" / "attn-trace" / "golden"
    check(os.access(program, os.X_OK), "the program is installed in bin/")
    check(plugin.exists() == WITH_CUDA, f"the CUDA plugin is installed exactly when built ({WITH_CUDA})")
    for name in ("README.md", "LICENSE", "docs/backends.md", "docs/lesson-format.md"):
        installed, source = doc / name, SOURCE / name
        check(installed.exists() and installed.read_bytes() == source.read_bytes(),
              f"{name} is installed as it is in the project")
    sources = sorted(p.name for p in (SOURCE / "golden").glob("*.toml"))
    check(sources and sorted(p.name for p in golden.glob("*.toml")) == sources,
          f"every golden file is installed ({len(sources)})")

    # Run from an empty folder with nothing of the build around.
    work = pathlib.Path(tmp) / "elsewhere"
    work.mkdir()
    env = {k: v for k, v in os.environ.items() if k != "ATTN_CUDA_PLUGIN"}

    def installed(*args):
        return subprocess.run([str(program), *args], capture_output=True, text=True, cwd=work,
                              env=env)

    built = subprocess.run([os.path.join(BUILD, "attn-trace"), "run", "river-bank"],
                           capture_output=True, text=True)
    mine = installed("run", "river-bank")
    check(mine.returncode == 0 and mine.stdout == built.stdout and "river" in mine.stdout,
          "the installed program traces river-bank as the built one does")
    ok = installed("check", "river-bank")
    check(ok.returncode == 0, f"check finds the installed golden files: {ok.stdout[-300:]} {ok.stderr}")
    # Proof that it read the installed copy: alter it, and check fails.
    altered = golden / "river-bank.toml"
    text = altered.read_text(encoding="utf-8")
    altered.write_text(text.replace("0.69", "0.79", 1), encoding="utf-8")
    bad = installed("check", "river-bank")
    check("0.69" in text and bad.returncode == 1,
          f"an altered installed golden file fails check (read from {golden}): exit {bad.returncode}")
    cuda = installed("run", "--backend", "cuda")
    if WITH_CUDA:
        check(cuda.returncode == 0 or "no CUDA plugin" not in cuda.stderr,
              f"the installed program finds the installed plugin: {cuda.stderr!r}")
    else:
        check(cuda.returncode == 3 and "no CUDA plugin" in cuda.stderr,
              f"without a plugin, --backend cuda says so: {cuda.stderr!r}")

print(f"{len(failures)} failure(s)")
sys.exit(1 if failures else 0)
