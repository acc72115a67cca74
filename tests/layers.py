#!/usr/bin/python3
"""The layers of src/ include only downward: core <- backend <- render, teach <- web <- cli
(teach may use render, never the other way; web, the practice page's engine, may
use teach, render and core but not backend, which its WebAssembly build lacks). Every #include "layer/..." in a
file of src/LAYER/ must name a layer LAYER may use; this fails on the first
file that includes against the arrows, naming the file, the line and the rule.

Usage: layers.py [--self-test]   (--self-test: proves a wrong include is caught)
"""
import pathlib
import re
import sys
import tempfile

SRC = pathlib.Path(__file__).resolve().parent.parent / "src"
MAY_USE = {
    "core": {"core"},
    "backend": {"backend", "core"},
    "render": {"render", "backend", "core"},
    "teach": {"teach", "render", "backend", "core"},
    # the practice page's engine, also compiled to WebAssembly: no backend layer there
    "web": {"web", "teach", "render", "core"},
    "cli": {"cli", "web", "teach", "render", "backend", "core"},
}
INCLUDE = re.compile(r'^\s*#\s*include\s+"([a-z_]+)/')


def violations(src):
    out = []
    for layer, allowed in MAY_USE.items():
        for path in sorted((src / layer).glob("*")):
            if path.suffix not in {".cpp", ".hpp", ".cu", ".cuh"}:
                continue
            for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
                m = INCLUDE.match(line)
                if m and m.group(1) not in allowed:
                    out.append(f"{path.relative_to(src.parent)}:{number}: {layer}/ includes "
                               f"{m.group(1)}/ but {layer} may use only {', '.join(sorted(allowed))}")
    unknown = sorted(p.name for p in src.iterdir() if p.is_dir() and p.name not in MAY_USE)
    out += [f"src/{name}/: a folder no layer rule covers; add it to MAY_USE" for name in unknown]
    return out


def self_test():
    """A copy of src/ with render including teach must be refused."""
    with tempfile.TemporaryDirectory() as tmp:
        root = pathlib.Path(tmp) / "src"
        for layer in MAY_USE:
            (root / layer).mkdir(parents=True)
        (root / "render" / "bad.cpp").write_text('#include "teach/verify.hpp"\n', encoding="utf-8")
        (root / "teach" / "good.cpp").write_text('#include "render/render.hpp"\n', encoding="utf-8")
        found = violations(root)
        if len(found) != 1 or "render/bad.cpp:1" not in found[0]:
            print(f"FAIL: self-test expected one violation in render/bad.cpp, got {found}")
            return 1
    print("layers self-test: a wrong include is caught")
    return 0


if __name__ == "__main__":
    if "--self-test" in sys.argv[1:]:
        sys.exit(self_test())
    found = violations(SRC)
    for v in found:
        print(v)
    if found:
        sys.exit(1)
    print(f"layers: every include of src/ goes downward ({', '.join(MAY_USE)})")
