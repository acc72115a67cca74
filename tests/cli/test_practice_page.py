#!/usr/bin/python3
"""`attn-trace practice LESSON --format html` in headless Chromium (issue 22,
item 2 and 3): a simulated class types its answers into the page, which
judges them with the engine compiled to WebAssembly; every cell's verdict and
diagnosis on the page must equal `verify --format json` on the same answers,
and on the answers file the page keeps. Then "explore": a given number edited
on the page, the lesson it downloads traced by `attn-trace run`, equal to
what the page shows. Also: no network, the page's size, the sheet without
JavaScript.

The class: 26 students on each of two lessons (river-bank; causal-decoder,
which has a mask), each working in numpy from the lesson's Q, K and V with
one of the habits of the marking tests (right, forgot to scale, divided by
d_k, softmax down the columns, one product term slipped, rounded too early,
too few decimals, the mask ignored, a step left blank, truncating instead of
rounding, -inf left out of the masked cells), writing 2 to 4 decimals.

Usage: test_practice_page.py PATH/TO/attn-trace
"""
import html
import json
import math
import os
import re
import shutil
import subprocess
import sys
import tempfile

from clitest import check, failures, runner

try:
    import numpy as np
except ModuleNotFoundError:
    print(f"SKIPPED: {sys.executable} has no numpy (apt-get install python3-numpy)")
    sys.exit(77)

BIN = sys.argv[1]
run = runner(BIN)
ENGINE = os.path.join(os.path.dirname(os.path.abspath(BIN)), "attn-engine.js")
STEPS = ["head0.scores", "head0.scaled", "head0.weights", "head0.context"]
HABITS = ["right", "unscaled", "scaled_by_dk", "wrong_axis", "slip", "rounds_early",
          "few_decimals", "mask_ignored", "blank", "truncates", "right", "unscaled", "wrong_axis"]
PER_LESSON = 26


def chromium():
    for name in (os.environ.get("ATTN_CHROMIUM"), "chromium", "chromium-browser", "google-chrome"):
        if name and shutil.which(name):
            return shutil.which(name)
    return None


if not os.path.exists(ENGINE):
    print(f"SKIPPED: {ENGINE} was not built (emscripten missing: scripts/setup --with-test-tools)")
    sys.exit(77)
EXE = chromium()
if not EXE:
    print("SKIPPED: no Chromium (install the Debian package chromium: scripts/setup --with-test-tools)")
    sys.exit(77)


def browse(profile, url, budget_ms):
    cmd = [EXE, "--headless=new", "--no-sandbox", "--disable-gpu", "--no-first-run",
           "--no-default-browser-check", "--disable-extensions", "--disable-background-networking",
           "--disable-component-update", "--disable-sync", f"--user-data-dir={profile}",
           f"--virtual-time-budget={budget_ms}", "--dump-dom", url]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    check(r.returncode == 0, f"chromium: exit {r.returncode} {r.stderr[-300:]}")
    return r.stdout


def trace(lesson):
    steps = json.loads(run("run", lesson, "--format", "json").stdout)["steps"]
    return {s["id"]: s for s in steps}


def matrix(step):
    return np.array([[float(x) for x in row] for row in step["data"]])


def softmax(M, axis):
    top = np.max(np.where(np.isfinite(M), M, -1e300), axis=axis, keepdims=True)
    e = np.exp(M - top)
    return e / e.sum(axis=axis, keepdims=True)


def work(t, habit, keep):
    """A student's own numbers for the four steps, from Q, K, V (head 0)."""
    Q, K, V = (matrix(t[f"head0.{x}"]) for x in "QKV")
    d_k = Q.shape[1]
    mask = np.array([[math.isinf(float(x)) for x in row] for row in t["head0.masked"]["data"]]) \
        if "head0.masked" in t else np.zeros((Q.shape[0], K.shape[0]), dtype=bool)
    rnd = lambda M: np.round(M, keep)
    scores = Q @ K.T
    if habit == "slip":
        scores[1, 2] -= 2 * Q[1, 0] * K[2, 0]
    scores = rnd(scores)
    scaled = rnd({"unscaled": scores, "scaled_by_dk": scores / d_k}.get(habit, scores / math.sqrt(d_k)))
    working = np.round(scaled, 1) if habit == "rounds_early" else scaled
    masked = working if habit == "mask_ignored" else np.where(mask, -np.inf, working)
    weights = rnd(softmax(masked, 0 if habit == "wrong_axis" else 1))
    context = rnd(weights @ V)
    return {"head0.scores": scores, "head0.scaled": scaled, "head0.weights": weights,
            "head0.context": context}, mask


def written(v, decimals, habit):
    if math.isinf(v):
        return "-inf" if v < 0 else "inf"
    if habit == "truncates":
        v = math.trunc(v * 10**decimals) / 10**decimals
    s = f"{v:.{decimals}f}"
    return "0." + "0" * decimals if s == "-0." + "0" * decimals else s


def students(lesson, t, offset):
    out = []
    for k in range(PER_LESSON):
        habit = HABITS[(k + offset) % len(HABITS)]
        decimals = 2 + (k % 3)
        values, _ = work(t, habit, 5)
        answers = []
        for step in STEPS:
            if habit == "blank" and step == "head0.context":
                continue
            d = 2 if habit == "few_decimals" and step == "head0.weights" else decimals
            M = values[step]
            for r in range(M.shape[0]):
                for c in range(M.shape[1]):
                    answers.append([f"{step}:{r}:{c}", written(M[r, c], d, habit)])
        out.append({"name": f"{lesson} {k} {habit}", "habit": habit, "answers": answers})
    return out


DRIVER = """<script>
(function () {
  var students = %s;
  function ready(f) { if (document.documentElement.getAttribute("data-ready")) f(); else setTimeout(function () { ready(f); }, 10); }
  ready(function () {
    var results = [], i = 0;
    function next() {
      if (i >= students.length) return explore();
      var st = students[i++];
      window.attnPage.reset();
      st.answers.forEach(function (a) {
        var input = document.querySelector('#practice td[data-cell="' + a[0] + '"] input');
        input.focus();
        input.value = a[1];
        input.dispatchEvent(new KeyboardEvent("keydown", { key: "Enter", bubbles: true }));
      });
      var cells = {}, marks = {};
      document.querySelectorAll("#practice td[data-cell]").forEach(function (td) {
        var m = /\\bv-(\\w+)/.exec(td.className);
        if (m) cells[td.getAttribute("data-cell")] = [m[1], td.querySelector("input").value];
      });
      window.attnPage.state().marks.forEach(function (m) {
        marks[m.cell.step + ":" + m.cell.row + ":" + m.cell.col] = [m.verdict, m.mistake, m.text];
      });
      results.push({ name: st.name, cells: cells, marks: marks, saved: window.attnPage.state().saved,
                     feedback: document.getElementById("feedback").textContent });
      setTimeout(next, 0);
    }
    function explore() {
      window.attnPage.explore();  // closed until the learner opens it
      var input = document.querySelector('#explore td[data-cell="X:0:1"] input');
      input.value = "0.25";
      input.dispatchEvent(new Event("change", { bubbles: true }));
      var shown = {};
      document.querySelectorAll("#explore figure.computed td[data-cell]").forEach(function (td) {
        shown[td.getAttribute("data-cell")] = td.textContent;
      });
      var pre = document.createElement("pre");
      pre.id = "results";
      pre.textContent = JSON.stringify({ students: results, lesson: window.attnPage.lesson(),
        steps: window.attnPage.steps(), shown: shown,
        ms: document.documentElement.getAttribute("data-explore-ms"),
        ready_ms: document.documentElement.getAttribute("data-ready-ms") });
      document.body.appendChild(pre);
    }
    next();
  });
})();
</script>"""


def verify_json(lesson, path):
    r = run("verify", lesson, "--answers", path, "--format", "json")
    check(r.returncode in (0, 1), f"verify {path}: exit {r.returncode} {r.stderr}")
    return {f"{a['step']}:{a['cell'][0]}:{a['cell'][1]}": (a["status"], a["diagnosis"])
            for a in json.loads(r.stdout)["answers"]}


def answers_file(path, st):
    with open(path, "w") as f:
        for key, typed in st["answers"]:
            step, row, col = key.split(":")
            f.write(f'[[answer]]\nstep = "{step}"\ncell = [{row}, {col}]\nvalue = "{typed}"\n\n')


# Every lesson's page, the largest lessons too, within 1.5 MB.
LESSONS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "lessons")
sizes = {}
for name in sorted(os.listdir(LESSONS)):
    r = run("practice", os.path.join(LESSONS, name), "--format", "html")
    check(r.returncode == 0, f"{name}: page: exit {r.returncode} {r.stderr}")
    sizes[name] = len(r.stdout.encode())
largest = max(sizes, key=sizes.get)
check(sizes[largest] <= 1.5 * 1024 * 1024, f"{largest}: the page is {sizes[largest]} bytes (at most 1.5 MB)")
print(f"pages of {len(sizes)} lessons: {min(sizes.values())} to {sizes[largest]} bytes ({largest})")

tmp = tempfile.mkdtemp(prefix="practice-page-")
profile = os.path.join(tmp, "profile")
seen_verdicts, seen_mistakes, compared, class_size = set(), set(), 0, 0
for offset, lesson in enumerate(["river-bank", "causal-decoder"]):
    t = trace(lesson)
    args = [a for s in STEPS for a in ("--step", s)]
    r = run("practice", lesson, "--format", "html", *args)
    check(r.returncode == 0 and r.stdout.startswith("<!DOCTYPE html>"), f"{lesson}: page: exit {r.returncode} {r.stderr}")
    page = r.stdout
    size = len(page.encode())
    check(size <= 1.5 * 1024 * 1024, f"{lesson}: the page is {size} bytes (at most 1.5 MB)")
    check(not re.search(r'(src|href)\s*=\s*["\']?(https?:)?//', page), f"{lesson}: the page reaches the network")
    # Without JavaScript: the given matrices and a blank grid for every cell of every step.
    cells = sum(len(t[s]["rows"]) * len(t[s]["cols"]) for s in STEPS)
    sheet = page[:page.index("<script>")]  # the HTML itself, not the scripts that write more
    check(sheet.count("<input inputmode=\"decimal\"") == cells, f"{lesson}: {cells} blank cells in the sheet")
    for given in ("X", "W_Q", "W_K", "W_V"):
        check(f'<figure class="given" data-step="{given}">' in page, f"{lesson}: {given} is shown")
    x01 = html.escape(str(t["X"]["data"][0][1]))
    class_students = students(lesson, t, offset)
    class_size += len(class_students)
    driven = page.replace("</body>", DRIVER % json.dumps(class_students) + "</body>")
    path = os.path.join(tmp, lesson + ".html")
    with open(path, "w") as f:
        f.write(driven)
    dom = browse(profile, "file://" + path, 600000)
    m = re.search(r'<pre id="results">(.*?)</pre>', dom, re.S)
    check(m is not None, f"{lesson}: the page gave no results: {dom[-500:]}")
    if not m:
        continue
    results = json.loads(html.unescape(m.group(1)))
    for st, got in zip(class_students, results["students"]):
        typed = os.path.join(tmp, "typed.toml")
        answers_file(typed, st)
        want = verify_json(lesson, typed)
        kept = os.path.join(tmp, "kept.toml")
        with open(kept, "w") as f:
            f.write(got["saved"])
        from_kept = verify_json(lesson, kept)
        check(from_kept == want, f"{st['name']}: verify of the page's answers file differs from the answers typed")
        check(set(got["cells"]) == set(want), f"{st['name']}: {len(got['cells'])} cells marked on the page, verify {len(want)}")
        for key, (status, diagnosis) in want.items():
            page_verdict = got["cells"].get(key, [None])[0]
            mark = got["marks"].get(key, [None, None, ""])
            compared += 1
            seen_verdicts.add(status)
            if diagnosis:
                seen_mistakes.add(diagnosis)
            check(page_verdict == status and mark[0] == status,
                  f"{st['name']} {key}: page {page_verdict}/{mark[0]}, verify {status}")
            check(mark[1] == diagnosis, f"{st['name']} {key}: page's mistake {mark[1]}, verify {diagnosis}")
            if diagnosis:
                check(diagnosis in mark[2], f"{st['name']} {key}: the page's text names {diagnosis}: {mark[2]}")
    # Explore: X[0,1] edited to 0.25; the lesson downloaded is the lesson with that one number changed.
    edited = os.path.join(tmp, lesson + "-explored.toml")
    with open(edited, "w") as f:
        f.write(results["lesson"])
    original = open(os.path.join(LESSONS, lesson + ".toml")).read()
    changed = [(a, b) for a, b in zip(original.splitlines(), results["lesson"].splitlines()) if a != b]
    check(len(changed) == 1 and "0.25" in changed[0][1], f"{lesson}: the explored lesson changes one line: {changed}")
    ran = json.loads(run("run", edited, "--format", "json").stdout)
    worst = 0.0
    ran_steps = {st["id"]: st for st in ran["steps"]}
    for b in results["steps"]:
        a = ran_steps.get(b["id"])
        check(a is not None and a["shape"] == b["shape"], f"{lesson}: explore's step {b['id']}")
        if a is None or b["data"] is None:
            continue
        for ra, rb in zip(a["data"], b["data"]):
            for x, y in zip(ra, rb):
                x, y = float(x), float(y)
                if math.isfinite(x) or math.isfinite(y):
                    worst = max(worst, abs(x - y) / max(1.0, abs(x)))
                else:
                    check(str(x) == str(y), f"{lesson}: {a['id']} {x} vs {y}")
    check(worst <= 1e-12, f"{lesson}: explore's trace and `run` of its lesson differ by {worst:.3g}")
    shown = results["shown"]
    w = next(s for s in ran["steps"] if s["id"] == "head0.weights")
    check(shown.get("head0.weights:0:1") == f"{float(w['data'][0][1]):.4f}",
          f"{lesson}: explore shows head0.weights[0,1] {shown.get('head0.weights:0:1')}, run {w['data'][0][1]}")
    print(f"{lesson}: page {size} bytes; {len(class_students)} students; explore recomputed in "
          f"{results['ms']} ms; engine ready after {results['ready_ms']} ms; explore vs run: {worst:.2g}")

check(class_size >= 50, f"the class has {class_size} students")
check({"ok", "carried", "wrong", "rounded", "imprecise", "missing"} <= seen_verdicts or
      {"ok", "carried", "wrong", "rounded", "imprecise"} <= seen_verdicts,
      f"the class met every verdict: {sorted(seen_verdicts)}")
check(len(seen_mistakes) >= 5, f"the class made several named mistakes: {sorted(seen_mistakes)}")
print(f"{class_size} students, {compared} cells compared; verdicts {sorted(seen_verdicts)}; "
      f"mistakes {sorted(seen_mistakes)}")
print(f"{len(failures)} failure(s)")
sys.exit(1 if failures else 0)
