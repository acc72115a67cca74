#!/usr/bin/python3
"""Command-line tests of `run --format html`.

Without --browser (pure Python, every embedded lesson): the page parses, has
no network reference (no http(s):// or protocol-relative src/href, no
<link>, no external script), one section per step of the JSON trace in its
order, every table cell equal to the JSON value at the shown precision (and
the shown cells those of the summary for big matrices), the weights' cells in
the viridis colour of their weight (recomputed here from the ramp's stops),
masked cells marked where the lesson's mask says, one arithmetic item per
shown cell, and each page small and made fast.

With --browser: Debian's headless Chromium loads pages from file:// and the
DOM after the script ran has every step, and a click (the test-only URL hash
#click=STEP:ROW,COL, which the page's script handles like a click) brings the
cell's arithmetic into view; with JavaScript off the tables and the arithmetic
are still in the page; a screenshot is not blank and shows the heatmap's
colours. Exit 77 (skipped) when Chromium is not installed.

Usage: test_html.py PATH/TO/attn-trace [--browser] [--keep DIR]
"""
import html.parser
import json
import math
import os
import shutil
import struct
import subprocess
import sys
import tempfile
import time
import tomllib
import zlib

from clitest import check, failures, runner
from reference import hex_colour as colour, mask_of, number, rgb

BIN = os.path.abspath(sys.argv[1])
BROWSER = "--browser" in sys.argv
KEEP = sys.argv[sys.argv.index("--keep") + 1] if "--keep" in sys.argv else None
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SUMMARY_THRESHOLD = 16  # render.hpp kSummaryThreshold


run = runner(BIN)


def shown(v, precision=4):
    """render/numbers.cpp format_fixed, written again."""
    if math.isnan(v):
        return "nan"
    if math.isinf(v):
        return "-inf" if v < 0 else "inf"
    if abs(v) >= 1e9:
        return f"{v:.{min(precision, 4)}e}"
    s = f"{v:.{precision}f}"
    return s[1:] if s.startswith("-") and not s.strip("-0.") else s


def visible(count, summarised):
    """render/numbers.cpp visible_indices: all, or the first and last three."""
    if not summarised or count <= 7:
        return list(range(count))
    return [0, 1, 2, None, count - 3, count - 2, count - 1]


class Node:
    def __init__(self, tag, attrs, parent):
        self.tag, self.attrs, self.parent, self.children = tag, dict(attrs), parent, []

    def text(self):
        return "".join(c if isinstance(c, str) else c.text() for c in self.children)

    def all(self, pred):
        for c in self.children:
            if isinstance(c, Node):
                if pred(c):
                    yield c
                yield from c.all(pred)

    def classes(self):
        return (self.attrs.get("class") or "").split()


VOID = {"meta", "br", "link", "img", "input", "hr", "col", "source", "wbr", "area", "base"}


class Tree(html.parser.HTMLParser):
    """A DOM-like tree; every non-void element must be closed in order."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.root = Node("#root", {}, None)
        self.cur = self.root
        self.errors = []

    def handle_starttag(self, tag, attrs):
        node = Node(tag, attrs, self.cur)
        self.cur.children.append(node)
        if tag not in VOID:
            self.cur = node

    def handle_startendtag(self, tag, attrs):
        self.cur.children.append(Node(tag, attrs, self.cur))

    def handle_endtag(self, tag):
        if tag in VOID:
            return
        if self.cur.tag != tag:
            self.errors.append(f"</{tag}> closes <{self.cur.tag}>")
            while self.cur is not self.root and self.cur.tag != tag:
                self.cur = self.cur.parent
        if self.cur is not self.root:
            self.cur = self.cur.parent

    def handle_data(self, data):
        self.cur.children.append(data)


def parse(page):
    t = Tree()
    t.feed(page)
    t.close()
    return t


def no_network(lesson, tree, page):
    for node in tree.root.all(lambda n: True):
        for name in ("src", "href", "action", "data", "poster"):
            v = (node.attrs.get(name) or "").strip().lower()
            check(not (v.startswith(("http:", "https:", "//", "ftp:"))),
                  f"{lesson}: <{node.tag} {name}={v}> reaches the network")
        check(node.tag not in ("link", "img", "iframe", "object", "embed"),
              f"{lesson}: <{node.tag}> element")
        check(not (node.tag == "script" and "src" in node.attrs), f"{lesson}: external script")
    low = page.lower()
    check("@import" not in low and "url(" not in low and "@font-face" not in low,
          f"{lesson}: CSS loads something")


def check_tables(lesson, tree, steps, precision=4):
    """Every table: labels, cells, colours and mask marks against the JSON trace."""
    tables = list(tree.root.all(lambda n: n.tag == "table"))
    items = {n.attrs.get("id"): n for n in tree.root.all(lambda n: n.tag == "li" and n.attrs.get("id"))}
    heat_tables = 0
    for table in tables:
        step = steps[table.attrs["data-step"]]
        sid = step["id"]
        n, m = step["shape"]
        summarised = n > SUMMARY_THRESHOLD or m > SUMMARY_THRESHOLD
        rows_shown, cols_shown = visible(n, summarised), visible(m, summarised)
        heat = "heat" in table.classes()
        heat_tables += heat
        want_heat = ((sid.endswith(".weights") and not sid.startswith("grad.")) or sid in ("heads.mean", "heads.max"))
        check(heat == want_heat, f"{lesson} {sid}: coloured {heat}, want {want_heat}")
        header = [th.text() for th in next(table.all(lambda x: x.tag == "thead")).all(
            lambda x: x.tag == "th")][1:]
        check(header == [step["cols"][c] if c is not None else "…" for c in cols_shown],
              f"{lesson} {sid}: column labels {header[:5]}")
        labels = [th.text() for th in table.all(lambda x: x.tag == "th" and x.parent.parent.tag == "tbody")]
        check(labels == [step["rows"][r] if r is not None else "⋮" for r in rows_shown],
              f"{lesson} {sid}: row labels {labels[:5]}")
        cells = list(table.all(lambda x: x.tag == "td" and "data-row" in x.attrs))
        want_cells = [(r, c) for r in rows_shown for c in cols_shown if r is not None and c is not None]
        check([(int(c.attrs["data-row"]), int(c.attrs["data-col"])) for c in cells] == want_cells,
              f"{lesson} {sid}: {len(cells)} cells, want {len(want_cells)}")
        # A decoding step's weights: one query against the keys cached so far, nothing masked.
        marks_mask = (sid.endswith((".masked", ".exp")) or want_heat) and not sid.startswith("decode.")
        mask = mask_of(lesson, n, m) if marks_mask else None
        for c in cells:
            i, j = int(c.attrs["data-row"]), int(c.attrs["data-col"])
            v = number(step["data"][i][j])
            check(c.text() == shown(v, precision), f"{lesson} {sid}[{i},{j}]: {c.text()} vs {v}")
            cls = c.classes()
            is_masked = marks_mask and mask[i][j]
            check(("masked" in cls) == is_masked, f"{lesson} {sid}[{i},{j}]: masked mark {cls}")
            style = c.attrs.get("style")
            if math.isnan(v):
                check("nan" in cls and style is None, f"{lesson} {sid}[{i},{j}]: NaN as {cls}")
            elif heat and is_masked and v == 0:
                check(style is None, f"{lesson} {sid}[{i},{j}]: masked cell coloured {style}")
            elif heat:
                check(style is not None and style.startswith(f"background:{colour(v)};"),
                      f"{lesson} {sid}[{i},{j}]: {style} for {v}, want {colour(v)}")
                check(("leaked" in cls) == is_masked, f"{lesson} {sid}[{i},{j}]: leaked {cls}")
            else:
                check(style is None, f"{lesson} {sid}[{i},{j}]: uncoloured step coloured")
            item = items.get(f"x:{sid}:{i},{j}")
            if sid.startswith(("W_", "b_")) or step.get("rows") is None:
                continue
            check(item is not None and item.text().startswith(f"{sid}["),
                  f"{lesson} {sid}[{i},{j}]: no arithmetic item")
    return heat_tables


def structure():
    lessons = sorted(f[:-5] for f in os.listdir(os.path.join(ROOT, "lessons")) if f.endswith(".toml"))
    listed = run("lessons").stdout
    check(len(lessons) >= 30 and all(l in listed for l in lessons), f"lessons: {len(lessons)}")
    sizes = {}
    for lesson in lessons:
        start = time.monotonic()
        r = run("run", lesson, "--format", "html")
        took = time.monotonic() - start
        check(r.returncode == 0, f"{lesson}: exit {r.returncode} {r.stderr[-200:]}")
        # How long a page takes is reported below, not checked: a timed test
        # fails on a loaded machine or under the sanitizers (targets live in
        # benchmarks).
        sizes[lesson] = (len(r.stdout.encode()), took)
        check(len(r.stdout.encode()) < 4_000_000, f"{lesson}: {len(r.stdout)} bytes")
        tree = parse(r.stdout)
        check(not tree.errors, f"{lesson}: markup {tree.errors[:3]}")
        check(r.stdout.startswith("<!DOCTYPE html>"), f"{lesson}: doctype")
        no_network(lesson, tree, r.stdout)
        trace = json.loads(run("run", lesson, "--format", "json").stdout)
        steps = {s["id"]: s for s in trace["steps"]}
        sections = [s.attrs.get("data-step") for s in tree.root.all(
            lambda n: n.tag == "section" and "step" in n.classes())]
        check(sections == [s["id"] for s in trace["steps"]], f"{lesson}: sections {sections[:4]}")
        for s in tree.root.all(lambda n: n.tag == "section" and "step" in n.classes()):
            check(s.attrs.get("id") == "step-" + s.attrs["data-step"], f"{lesson}: section id")
            math_nodes = list(s.all(lambda n: n.tag == "math"))
            check(len(math_nodes) == 1, f"{lesson}: {len(math_nodes)} MathML formulas")
            # Every LaTeX command of the formulas is converted: none is left as its name.
            for t in (m for m in math_nodes[0].all(lambda n: n.tag == "mtext")):
                check(not t.text().startswith("\\"), f"{lesson} {s.attrs['data-step']}: {t.text()}")
        heat = check_tables(lesson, tree, steps)
        weights = [s for s in steps if (s.endswith(".weights") and not s.startswith("grad.")) or s in ("heads.mean", "heads.max")]
        check(heat == 2 * len(weights), f"{lesson}: {heat} heatmaps, want {2 * len(weights)}")
        maps = [f for f in tree.root.all(lambda n: n.tag == "section" and "heatmaps" in n.classes())]
        check(len(maps) == (1 if weights else 0), f"{lesson}: heatmap section")
        if weights:
            check(any(True for _ in maps[0].all(lambda n: "legend" in n.classes())), f"{lesson}: legend")
        for w in trace["warnings"]:
            check(w.replace("&", "&amp;").replace("<", "&lt;")[:40] in r.stdout
                  or w[:20] in tree.root.text(), f"{lesson}: warning not shown: {w[:40]}")
        with open(os.path.join(ROOT, "lessons", lesson + ".toml"), "rb") as f:
            title = tomllib.load(f).get("lesson", {}).get("title", "")
        h1 = next(tree.root.all(lambda n: n.tag == "h1")).text()
        check(title in h1, f"{lesson}: title {h1!r}")

    # Hostile text: a lesson whose tokens and title hold markup and control characters.
    with tempfile.TemporaryDirectory() as d:
        shown_lesson = run("lessons", "show", "three-words").stdout
        hostile = shown_lesson.replace('title = "', 'title = "<b>&amp;\\"\\u0007 ', 1)
        for tok in ('"The"', '"the"'):
            hostile = hostile.replace(tok, '"<script>x</script>&\\u0001"', 1)
        path = os.path.join(d, "hostile.toml")
        with open(path, "w") as f:
            f.write(hostile)
        r = run("run", path, "--format", "html")
        check(r.returncode == 0, f"hostile: exit {r.returncode} {r.stderr[-300:]}")
        check("<script>x" not in r.stdout and "<b>&amp;" not in r.stdout and "\x07" not in r.stdout
              and "\x01" not in r.stdout, "hostile: text not escaped")
        check(not parse(r.stdout).errors, "hostile: markup broken")

    # Precision and --step: the same checks with two decimals on one step.
    r = run("run", "river-bank", "--format", "html", "--precision", "2", "--step", "head0.weights")
    trace = json.loads(run("run", "river-bank", "--format", "json").stdout)
    tree = parse(r.stdout)
    sections = [s.attrs["data-step"] for s in tree.root.all(lambda n: n.tag == "section" and "step" in n.classes())]
    check(sections == ["head0.weights"], f"--step: {sections}")
    check_tables("river-bank", tree, {s["id"]: s for s in trace["steps"]}, precision=2)
    # Bad input: exit 2 with the fix.
    r = run("run", "river-bank", "--format", "htm")
    check(r.returncode == 2 and "html" in r.stderr, f"--format htm: {r.returncode} {r.stderr}")
    r = run("run", "river-bank", "--format", "html", "--step", "nope")
    check(r.returncode == 2, f"--step nope: {r.returncode}")

    big = max(sizes, key=lambda k: sizes[k][0])
    slow = max(sizes, key=lambda k: sizes[k][1])
    print(f"pages: {len(sizes)}, total {sum(s for s, _ in sizes.values()) / 1e6:.2f} MB; "
          f"largest {big} {sizes[big][0] / 1e3:.0f} kB; slowest {slow} {sizes[slow][1] * 1e3:.0f} ms")
    return lessons


# ---- A real browser ----------------------------------------------------------

def chromium():
    for name in (os.environ.get("ATTN_CHROMIUM"), "chromium", "chromium-browser", "google-chrome"):
        if name and shutil.which(name):
            return shutil.which(name)
    return None


def browse(exe, profile, *args):
    cmd = [exe, "--headless=new", "--no-sandbox", "--disable-gpu", "--no-first-run",
           "--no-default-browser-check", "--disable-extensions", "--hide-scrollbars",
           f"--user-data-dir={profile}", *args]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=90)
    check(r.returncode == 0, f"chromium {' '.join(args)[-80:]}: exit {r.returncode} {r.stderr[-300:]}")
    return r.stdout


def png_pixels(path):
    """(width, height, list of RGB tuples) of an 8-bit RGB or RGBA PNG."""
    with open(path, "rb") as f:
        data = f.read()
    check(data[:8] == b"\x89PNG\r\n\x1a\n", f"{path}: not a PNG")
    pos, idat, width = 8, b"", 0
    while pos < len(data):
        (length,) = struct.unpack(">I", data[pos:pos + 4])
        kind, body = data[pos + 4:pos + 8], data[pos + 8:pos + 8 + length]
        if kind == b"IHDR":
            width, height, depth, ctype = struct.unpack(">IIBB", body[:10])
        elif kind == b"IDAT":
            idat += body
        pos += 12 + length
    check(depth == 8 and ctype in (2, 6), f"{path}: PNG depth {depth} type {ctype}")
    bpp = 4 if ctype == 6 else 3
    raw, stride = zlib.decompress(idat), width * bpp
    prev, pixels = bytearray(stride), []
    for y in range(height):
        f, line = raw[y * (stride + 1)], bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        if f == 1:
            for x in range(bpp, stride):
                line[x] = (line[x] + line[x - bpp]) & 255
        elif f == 2:
            line = bytearray((a + b) & 255 for a, b in zip(line, prev))
        elif f == 3:
            for x in range(stride):
                line[x] = (line[x] + ((line[x - bpp] if x >= bpp else 0) + prev[x]) // 2) & 255
        elif f == 4:
            for x in range(stride):
                a = line[x - bpp] if x >= bpp else 0
                b, c = prev[x], prev[x - bpp] if x >= bpp else 0
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[x] = (line[x] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        pixels.extend(tuple(line[x:x + 3]) for x in range(0, stride, bpp))
        prev = line
    return width, height, pixels


def browser(out_dir):
    exe = chromium()
    if not exe:
        print("SKIPPED: no Chromium (install the Debian package chromium: scripts/setup "
              "--with-test-tools)")
        sys.exit(77)
    profile = tempfile.mkdtemp(prefix="attn-chromium-")
    try:
        pages = {}
        for lesson in ("river-bank", "two-heads", "causal-decoder"):
            path = os.path.join(out_dir, lesson + ".html")
            with open(path, "w") as f:
                f.write(run("run", lesson, "--format", "html").stdout)
            pages[lesson] = "file://" + path
        trace = json.loads(run("run", "river-bank", "--format", "json").stdout)
        ids = [s["id"] for s in trace["steps"]]

        # JavaScript on: a click through the test-only hash.
        cell = "x:head0.weights:1,2"
        dom = parse(browse(exe, profile, "--dump-dom", pages["river-bank"] + "#click=head0.weights:1,2"))
        html_node = next(dom.root.all(lambda n: n.tag == "html"))
        check("js" in html_node.classes(), "JS on: the script did not run")
        sections = [s.attrs.get("data-step") for s in dom.root.all(lambda n: n.tag == "section" and "step" in n.classes())]
        check(sections == ids, f"JS on: sections {len(sections)} of {len(ids)}")
        item = [n for n in dom.root.all(lambda n: n.attrs.get("id") == cell)]
        check(len(item) == 1 and "shown" in item[0].classes(), f"JS on: {cell} not shown")
        want = run("run", "river-bank", "--step", "head0.weights", "--expand", "1,2").stdout
        line = [l.strip() for l in want.splitlines() if l.strip().startswith("head0.weights[")]
        picked = [n for n in dom.root.all(lambda n: n.attrs.get("id") == "picked")]
        check(line and picked and line[0] in picked[0].text(),
              f"JS on: the arithmetic {line[:1]} is not in #picked: {picked[0].text()[:120] if picked else ''}")
        selected = [n for n in dom.root.all(lambda n: "selected" in n.classes())]
        check(len(selected) == 2 and all(n.attrs.get("data-row") == "1" and n.attrs.get("data-col") == "2"
                                         for n in selected), f"JS on: {len(selected)} cells selected")

        # JavaScript off. --dump-dom and --screenshot work through script, which
        # scriptEnabled=false stops (they write nothing), so the page's own
        # script is replaced by a probe that only counts what the page's CSS,
        # without the script's "js" class, leaves visible.
        with open(pages["river-bank"][len("file://"):]) as f:
            page = f.read()
        start, end = page.index("<script>"), page.index("</script>") + len("</script>")
        probe = ("<script>var v = 0, t = 0; document.querySelectorAll('.cells li').forEach("
                 "function (e) { if (getComputedStyle(e).display !== 'none' && e.offsetHeight > 0) v++; });"
                 "document.querySelectorAll('table').forEach(function (e) { if (e.offsetHeight > 0) t++; });"
                 "document.body.dataset.visibleItems = v; document.body.dataset.visibleTables = t;</script>")
        variant = os.path.join(out_dir, "river-bank-nojs.html")
        with open(variant, "w") as f:
            f.write(page[:start] + probe + page[end:])
        dom = parse(browse(exe, profile, "--dump-dom", "file://" + variant))
        html_node = next(dom.root.all(lambda n: n.tag == "html"))
        body = next(dom.root.all(lambda n: n.tag == "body"))
        check("js" not in html_node.classes(), "JS off: the page's script ran")
        items = sum(1 for _ in dom.root.all(lambda n: n.tag == "li" and "x:" in n.attrs.get("id", "")))
        tables = sum(1 for _ in dom.root.all(lambda n: n.tag == "table"))
        check(items > 100 and body.attrs.get("data-visible-items") == str(items),
              f"JS off: {body.attrs.get('data-visible-items')} of {items} arithmetic items visible")
        check(body.attrs.get("data-visible-tables") == str(tables),
              f"JS off: {body.attrs.get('data-visible-tables')} of {tables} tables visible")
        sections = [s.attrs.get("data-step") for s in dom.root.all(lambda n: n.tag == "section" and "step" in n.classes())]
        check(sections == ids, f"JS off: sections {len(sections)} of {len(ids)}")
        check(line and line[0] in dom.root.text(), "JS off: the arithmetic text is missing")
        check_tables("river-bank", dom, {s["id"]: s for s in trace["steps"]})

        # Screenshots: not blank; the heatmap's colours on screen.
        for lesson in ("river-bank", "two-heads", "causal-decoder"):
            shot = os.path.join(out_dir, lesson + ".png")
            # river-bank as without JS (the variant: the arithmetic lists unfolded; a screenshot,
            # like --dump-dom, needs script), the others with JS.
            url = "file://" + variant if lesson == "river-bank" else pages[lesson]
            browse(exe, profile, f"--screenshot={shot}", "--window-size=1200,1400", url)
            if not os.path.exists(shot):
                check(False, f"{lesson}: no screenshot")
                continue
            w, h, pixels = png_pixels(shot)
            distinct = set(pixels)
            check(w == 1200 and h == 1400, f"{lesson}: screenshot {w}×{h}")
            check(len(distinct) > 200, f"{lesson}: screenshot has {len(distinct)} colours")
            t = json.loads(run("run", lesson, "--format", "json").stdout)
            weights = next(s for s in t["steps"] if s["id"] == "head0.weights")
            want_colours = {rgb(number(v)) for row in weights["data"] for v in row
                            if not math.isnan(number(v)) and number(v) > 0}
            found = sum(1 for c in want_colours if c in distinct)
            check(found >= 0.8 * len(want_colours),
                  f"{lesson}: {found} of {len(want_colours)} heatmap colours on screen")
            print(f"{lesson}: screenshot {w}×{h}, {len(distinct)} colours, "
                  f"{found}/{len(want_colours)} heatmap colours")
    finally:
        shutil.rmtree(profile, ignore_errors=True)


if BROWSER:
    if KEEP:
        os.makedirs(KEEP, exist_ok=True)
        browser(os.path.abspath(KEEP))
    else:
        with tempfile.TemporaryDirectory() as d:
            browser(d)
else:
    structure()

if failures:
    print(f"{len(failures)} failure(s)")
    sys.exit(1)
print("OK")
