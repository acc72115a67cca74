#!/usr/bin/python3
"""Command-line tests of `run --format svg`: for every embedded lesson the SVG
parses as XML, has one panel per weights step (every head, and heads.mean and
heads.max when there are several), one cell per weight whose value equals the
JSON trace's, masked cells drawn as masked and NaN as NaN, every other cell in
the viridis colour of its weight (recomputed here from the ramp's stops), and
a legend; the README's picture is what the tool draws today (its numbers to
1e-12, as golden files: another OpenBLAS kernel moves their last bits).

Usage: test_svg.py PATH/TO/attn-trace [--update]
"""
import json
import math
import os
import re
import sys
import xml.etree.ElementTree as ET

from clitest import check, failures, runner
from reference import hex_colour as colour, mask_of, number

BIN = sys.argv[1]
UPDATE = "--update" in sys.argv
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
NS = {"s": "http://www.w3.org/2000/svg"}


run = runner(BIN)


lessons = sorted(f[:-5] for f in os.listdir(os.path.join(ROOT, "lessons")) if f.endswith(".toml"))
check(len(lessons) >= 30, f"lessons listed: {len(lessons)}")
for lesson in lessons:
    r = run("run", lesson, "--format", "svg")
    check(r.returncode == 0, f"{lesson}: exit {r.returncode} {r.stderr[-200:]}")
    try:
        root = ET.fromstring(r.stdout)
    except ET.ParseError as e:
        check(False, f"{lesson}: not XML: {e}")
        continue
    trace = json.loads(run("run", lesson, "--format", "json").stdout)
    steps = {s["id"]: s for s in trace["steps"]}
    wanted = [s["id"] for s in trace["steps"]
              if s["id"].endswith(".weights") and s["id"].startswith("head")
              or s["id"] in ("heads.mean", "heads.max")]
    panels = root.findall(".//s:g[@class='panel']", NS)
    check([p.get("data-step") for p in panels] == wanted, f"{lesson}: panels {len(panels)}")
    check(root.find(".//s:g[@class='legend']", NS) is not None, f"{lesson}: a legend")
    for p in panels:
        step = steps[p.get("data-step")]
        cells = p.findall("s:rect", NS)
        n, m = step["shape"]
        mask = mask_of(lesson, n, m)
        check(len(cells) == n * m, f"{lesson} {step['id']}: {len(cells)} cells, want {n * m}")
        for c in cells:
            i, j = int(c.get("data-row")), int(c.get("data-col"))
            want = number(step["data"][i][j])
            got = number(c.get("data-value")) if c.get("data-value") in ("nan", "inf", "-inf") \
                else float(c.get("data-value"))
            same = (math.isnan(want) and math.isnan(got)) or got == want
            check(same, f"{lesson} {step['id']}[{i},{j}]: {got} vs {want}")
            is_masked = mask[i][j]
            cls = c.get("class")
            if isinstance(want, float) and math.isnan(want):
                check(cls == "cell nan", f"{lesson} {step['id']}[{i},{j}]: NaN drawn as {cls}")
            elif is_masked and want == 0:
                check(cls == "cell masked" and c.get("fill") == "url(#masked)",
                      f"{lesson} {step['id']}[{i},{j}]: masked drawn as {cls}")
            elif is_masked:  # a fill too small to hide the key: coloured, outlined
                check(cls == "cell masked leaked" and c.get("fill") == colour(want),
                      f"{lesson} {step['id']}[{i},{j}]: leaked weight drawn as {cls}")
            else:
                check(cls == "cell" and c.get("fill") == colour(want),
                      f"{lesson} {step['id']}[{i},{j}]: {c.get('fill')} for {want}, "
                      f"want {colour(want)}")

# Only weights can be drawn: another step is refused with the fix.
r = run("run", "river-bank", "--format", "svg", "--step", "Q")
check(r.returncode == 2 and "draws attention weights" in r.stderr, f"svg of Q: {r.stderr}")

# The README's picture.
picture = os.path.join(ROOT, "docs", "images", "two-heads.svg")
drawn = run("run", "two-heads", "--format", "svg").stdout
if UPDATE:
    with open(picture, "w") as f:
        f.write(drawn)


def same_drawing(a, b):
    """The same text around the numbers, and the numbers equal to 1e-12 (absolute,
    relative for large ones), the golden files' tolerance: the picture is the tool's
    own output, and another OpenBLAS kernel (OPENBLAS_CORETYPE) moves a weight's
    last bits, which data-value writes in full."""
    numbers = re.compile(r"-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?")
    if numbers.sub("#", a) != numbers.sub("#", b):
        return False
    # x == y first: a colour such as #3e4989 reads as a number, 3e4989 = inf.
    return all(x == y or abs(float(x) - float(y)) <= 1e-12 * max(1.0, abs(float(y)))
               for x, y in zip(numbers.findall(a), numbers.findall(b)))


with open(picture) as f:
    check(same_drawing(drawn, f.read()), "docs/images/two-heads.svg is not what `run two-heads "
          "--format svg` draws: run tests/cli/test_svg.py build/attn-trace --update")

if failures:
    print(f"{len(failures)} failure(s)")
    sys.exit(1)
print(f"OK: {len(lessons)} lessons")
