#!/usr/bin/python3
"""No function of src/ is longer than 60 lines (issue 21, item 5): each
function's lines, from its first line to its closing brace, as Universal
Ctags measures them. Fails listing every longer one, longest first, as
"LINES src/FILE:LINE NAME". tests/function_length_allow.txt names the ones
still waiting to be split ("src/FILE NAME" a line); an entry that is no longer
over the limit fails too, so that the list only shrinks. Before measuring
src/, the measure itself is proved on a 60- and a 61-line function. Exit 77
(skipped) without Universal Ctags (Debian's universal-ctags).

Usage: function_length.py
"""
import pathlib
import shutil
import subprocess
import sys
import tempfile

ROOT = pathlib.Path(__file__).resolve().parent.parent
ALLOW = ROOT / "tests" / "function_length_allow.txt"
LIMIT = 60


def functions(folder, cwd):
    """(lines, "FILE:LINE", NAME, "FILE NAME") of every C++ function under
    `folder`, paths relative to `cwd`."""
    r = subprocess.run(["ctags", "-R", "--languages=C++", "--kinds-C++=f", "--fields=+ne", "-x",
                        "--_xformat=%{end} %n %F %N", folder],
                       cwd=cwd, capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"function_length: ctags failed: {r.stderr.strip()}")
    out = []
    for line in r.stdout.splitlines():
        end, start, path, name = line.split(" ", 3)  # a name may hold spaces: "operator +="
        if not (end.isdigit() and start.isdigit()):
            sys.exit(f"function_length: ctags gave no line range: {line!r}")
        out.append((int(end) - int(start) + 1, f"{path}:{start}", name, f"{path} {name}"))
    return out


def prove_measure():
    """ctags counts a 60-line and a 61-line function as 60 and 61 lines (so the
    limit falls between them), or the check stops."""
    def function(lines):  # its first line, lines - 2 statements, its closing brace
        return f"void f{lines}() {{\n" + "  ;\n" * (lines - 2) + "}\n"
    with tempfile.TemporaryDirectory() as folder:
        text = function(LIMIT) + function(LIMIT + 1)
        (pathlib.Path(folder) / "probe.cpp").write_text(text, encoding="utf-8")
        measured = {name: lines for lines, _, name, _ in functions(".", folder)}
    if measured != {f"f{LIMIT}": LIMIT, f"f{LIMIT + 1}": LIMIT + 1}:
        sys.exit(f"function_length: ctags measured the probe as {measured}, expected "
                 f"f{LIMIT}: {LIMIT} and f{LIMIT + 1}: {LIMIT + 1} lines")


def allowed():
    """The "FILE NAME" entries of the allow-list, comments and blank lines left out."""
    entries = set()
    for line in ALLOW.read_text(encoding="utf-8").splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            entries.add(" ".join(line.split()))
    return entries


def main():
    if shutil.which("ctags") is None:
        print("SKIP: ctags is not installed (Debian: universal-ctags)")
        return 77
    version = subprocess.run(["ctags", "--version"], capture_output=True, text=True).stdout
    if "Universal Ctags" not in version:
        print("SKIP: ctags is not Universal Ctags (Debian: universal-ctags)")
        return 77
    prove_measure()
    found = functions("src", ROOT)
    if len(found) < 100:
        sys.exit(f"function_length: ctags found only {len(found)} functions in src/")
    allow = allowed()
    long = sorted((f for f in found if f[0] > LIMIT), key=lambda f: (-f[0], f[1]))
    failures = [f"{lines} {where} {name}" for lines, where, name, key in long if key not in allow]
    stale = sorted(allow - {key for _, _, _, key in long})
    if failures:
        print(f"FAIL: {len(failures)} function(s) longer than {LIMIT} lines; split each into "
              "helpers, one idea each:")
        print("\n".join(f"  {f}" for f in failures))
    if stale:
        print(f"FAIL: {len(stale)} function(s) named in {ALLOW.relative_to(ROOT)} no longer over "
              f"{LIMIT} lines (or gone); remove them from it:")
        print("\n".join(f"  {s}" for s in stale))
    print(f"{len(found)} functions measured, {len(long)} over {LIMIT} lines, "
          f"{len(long) - len(failures)} of them allowed")
    return 1 if failures or stale else 0


if __name__ == "__main__":
    sys.exit(main())
