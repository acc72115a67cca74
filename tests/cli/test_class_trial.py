#!/usr/bin/python3
"""The instructor's trial: a class of 30 marked from paper, judged like a teacher.

A class of 30 (18 Chinese names, accents, Cyrillic, an apostrophe, a name
typed in decomposed Unicode) with student IDs on an `id,name` roster gets its
sheets from `exercise`; each student works from their own lesson.toml alone
(numpy here: 5 decimals kept while working, 3 written) with one habit real
students have: right; right but typed with U+2212 minus signs, with a Chinese
input method's full-width digits, or with decimal commas; one cell typed
unreadably; forgot to scale; divided by d_k; softmax down the columns; one
product term slipped; digits truncated instead of rounded; the scaled scores
rounded to 1 decimal before exp; √2 taken as 1.414; 2 decimals where 3 were
asked; the exponentials handed in as the weights; K computed as X·W_Kᵀ; the
softmax taken of the unscaled scores; the weights written into [col, row];
one weight rounded the wrong way beside a score written to 1 decimal; a step
left blank; the template never touched.

What a teacher would give each habit is written down here, independently of
the tool (points per step, the mistake's name, which students are absent), and
compared with marks.csv, verify's JSON, feedback.md and summary.md. The same
class typed into one spreadsheet (answers.csv, and the .xlsx LibreOffice
saves from it when soffice is installed) must mark exactly as the folders do.

Usage: test_class_trial.py PATH/TO/attn-trace [--report] [--before OLD_BINARY]
  --report   print each student's habit, total, mistake and the hit rates
  --before   also mark the same class with an older attn-trace (names-only
             roster: variants depend on seed and name only) and list whose
             marks changed
"""
import csv
import io
import json
import math
import os
import pathlib
import re
import shutil
import subprocess
import sys
import tempfile
import tomllib
import unicodedata

from clitest import check, failures, fill_template, runner

try:
    import numpy as np
except ModuleNotFoundError:
    print(f"SKIPPED: {sys.executable} has no numpy (apt-get install python3-numpy)")
    sys.exit(77)

BIN = sys.argv[1]
REPORT = "--report" in sys.argv
BEFORE = sys.argv[sys.argv.index("--before") + 1] if "--before" in sys.argv else None
KEEP, WRITE = 5, 3
STEPS = ["K", "head0.scores", "head0.scaled", "head0.weights", "head0.context"]
ASK = ["K", "scores", "scaled", "weights", "context"]
EXERCISE = ["--seed", "2026", "--d-model", "2", "--d-k", "2", "--ask", *ASK]

run = runner(BIN)

NAMES = ["张伟", "王芳", "李娜", "刘洋", "陈静", "杨磊", "赵敏", "黄晓明", "周杰", "吴婷",
         "徐强", "孙丽", "马超", "朱琳", "胡军", "郭晶", "何勇", "林雪",
         "José Núñez", "Zoë Brontë", "François Lefèvre", "Ana María Gómez",
         "Анна Иванова", "Дмитрий Смирнов", "Seán O'Brien", "Siobhán Ní Bhriain",
         unicodedata.normalize("NFD", "Renée Dubois"), "Ada Lovelace", "Alan Turing",
         "Grace Hopper"]

# Each habit, with the mistake label a teacher expects named (marks.csv's
# "mistake": the diagnosis of the first wrong value) and the first wrong step.
HABITS = {
    "right": ("", ""), "minus_sign": ("", ""), "full_width": ("", ""),
    "decimal_comma": ("", ""), "unreadable_cell": ("", ""),
    "unscaled": ("unscaled", "head0.scaled"), "scaled_by_dk": ("scaled_by_dk", "head0.scaled"),
    "wrong_axis": ("softmax_wrong_axis", "head0.weights"),
    "slip": ("arithmetic_slip", "head0.scores"), "truncated": ("truncated", None),
    "rounds_early": ("", ""), "sqrt2_1414": (None, None), "two_decimals": ("", ""),
    "exps_as_weights": ("exps_as_weights", "head0.weights"),
    "transposed_weights": ("transposed_weights", "K"),
    "softmax_of_unscaled": ("softmax_of_unscaled", "head0.weights"),
    "transposed_answer": ("transposed_answer", "head0.weights"),
    "wrong_way": (None, "head0.weights"), "blank_step": ("", ""),
    "not_handed_in": ("", ""),
}
CLASS = ["right", "minus_sign", "full_width", "decimal_comma", "unreadable_cell", "unscaled",
         "scaled_by_dk", "wrong_axis", "slip", "truncated", "rounds_early", "sqrt2_1414",
         "two_decimals", "exps_as_weights", "transposed_weights", "softmax_of_unscaled",
         "transposed_answer", "wrong_way", "blank_step", "not_handed_in",
         "right", "unscaled", "truncated", "two_decimals", "exps_as_weights",
         "softmax_of_unscaled", "transposed_answer", "right", "not_handed_in", "right"]
assert len(CLASS) == len(NAMES) == 30


def softmax(M, axis=1):
    e = np.exp(M - np.max(M, axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def matrices(lesson):
    m = lambda key: np.array(lesson["weights"][key], dtype=float)
    return np.array(lesson["input"]["X"], dtype=float), m("W_Q"), m("W_K"), m("W_V")


def truth(lesson):
    X, W_Q, W_K, W_V = matrices(lesson)
    K = X @ W_K
    scores = (X @ W_Q) @ K.T
    scaled = scores / math.sqrt(lesson["model"]["d_k"])
    weights = softmax(scaled)
    return dict(zip(STEPS, [K, scores, scaled, weights, weights @ (X @ W_V)]))


def work(lesson, habit):
    """A student's own numbers, kept to 5 decimals while working."""
    keep = lambda M: np.round(M, KEEP)
    X, W_Q, W_K, W_V = matrices(lesson)
    d_k = lesson["model"]["d_k"]
    Q, V = keep(X @ W_Q), keep(X @ W_V)
    K = keep(X @ (W_K.T if habit == "transposed_weights" else W_K))
    scores = Q @ K.T
    if habit == "slip":  # one product term of scores[1,2] with the wrong sign
        scores[1, 2] -= 2 * Q[1, 0] * K[2, 0]
    scores = keep(scores)
    divisor = {"unscaled": 1, "scaled_by_dk": d_k, "sqrt2_1414": 1.414}.get(habit, math.sqrt(d_k))
    scaled = keep(scores / divisor)
    working = np.round(scaled, 1) if habit == "rounds_early" else scaled
    source = scores if habit == "softmax_of_unscaled" else working
    if habit == "exps_as_weights":
        weights = keep(np.exp(source))
    else:
        weights = keep(softmax(source, 0 if habit == "wrong_axis" else 1))
    context = keep(weights @ V)
    if habit == "transposed_answer":
        weights = weights.T.copy()
    return dict(zip(STEPS, [K, scores, scaled, weights, context]))


FULL_WIDTH = str.maketrans("0123456789.-", "０１２３４５６７８９．－")


def typed(value, habit, step, r, c):
    """The cell as the student (or whoever typed their paper) wrote it."""
    decimals = 2 if habit == "two_decimals" else WRITE
    if habit == "wrong_way" and (step, r, c) == ("head0.scores", 0, 0):
        decimals = 1
    if habit == "truncated":
        text = f"{math.trunc(value * 10**WRITE) / 10**WRITE:.{WRITE}f}"
    elif habit == "wrong_way" and (step, r, c) == ("head0.weights", 0, 0):
        near = round(value, 2)
        text = f"{near - 0.01 if near > value else near + 0.01:.2f}"  # the other neighbour
    else:
        text = f"{value:.{decimals}f}"
    if text.startswith("-") and float(text) == 0:
        text = text[1:]
    if habit == "minus_sign":
        text = text.replace("-", "\u2212")
    elif habit == "full_width":
        text = text.translate(FULL_WIDTH)
    elif habit == "decimal_comma":
        text = text.replace(".", ",")
    elif habit == "unreadable_cell" and (step, r, c) == ("head0.weights", 1, 1):
        text = "O" + text[1:] if text.startswith("0") else text + "l"
    return text


def cells_of(lesson, habit):
    """{step: matrix of typed strings}; None for a template left untouched."""
    if habit == "not_handed_in":
        return None
    values = work(lesson, habit)
    return {step: [["" if habit == "blank_step" and step == "head0.context"
                    else typed(v, habit, step, r, c) for c, v in enumerate(row)]
                   for r, row in enumerate(values[step])] for step in STEPS}


def fill_toml(folder, cells):
    fill_template(folder, lambda step, row: cells[step][row])


def read_csv(path):
    return list(csv.DictReader(io.StringIO(path.read_text(encoding="utf-8-sig"), newline="")))


def teacher(lesson, habit, cells):
    """(points low, points high) of 5, from the true values and the habit alone."""
    if cells is None:
        return None
    T = truth(lesson)
    tol = lambda d: 0.5 * 10**-d + 0.5 * 10**-(d + 2)
    method = {"unscaled": "head0.scaled", "scaled_by_dk": "head0.scaled",
              "wrong_axis": "head0.weights", "slip": "head0.scores",
              "exps_as_weights": "head0.weights", "transposed_weights": "K",
              "softmax_of_unscaled": "head0.weights", "transposed_answer": "head0.weights"}
    low = high = 0.0
    for step in STEPS:
        got = [[cell for cell in row] for row in cells[step]]
        n = sum(len(row) for row in got)
        step_low = step_high = 0.0
        for r, row in enumerate(got):
            for c, text in enumerate(row):
                t = T[step][r, c]
                if text == "" or (habit == "unreadable_cell" and (step, r, c) ==
                                  ("head0.weights", 1, 1)):
                    continue  # blank or unreadable: nothing
                plain = unicodedata.normalize("NFKC", text).replace("\u2212", "-").replace(",", ".")
                v, d = float(plain), len(plain.split(".")[1]) if "." in plain else 0
                right = abs(v - t) <= tol(d)
                credit = cell_credit(habit, step, method.get(habit), d, v, t, right)
                step_low, step_high = step_low + credit[0], step_high + credit[1]
        low, high = low + step_low / n, high + step_high / n
    return low, high


def cell_credit(habit, step, method_step, d, v, t, right):
    """(low, high) credit of one cell a teacher would give."""
    if d < WRITE and right:  # right, but too few decimals to show it
        return (1, 1) if abs(v - t) < 1e-12 else (0.5, 0.5)
    if right:
        return 1, 1
    if step == method_step or habit == "wrong_way":
        return 0, 0  # wrong where the mistake was made
    if habit == "truncated":  # the digits were cut: wrong where first cut; later
        return (0, 0) if step == STEPS[0] else (0, 1)  # maybe right on their own cut numbers
    if habit in ("rounds_early", "sqrt2_1414"):
        return 0, 1  # rounded too early, or right on the student's own numbers
    return 1, 1  # right on the student's own earlier numbers


def make_class(tmp, label, binary, roster_text):
    out = tmp / label
    roster = tmp / f"{label}.roster"
    roster.write_text(roster_text, encoding="utf-8")
    r = subprocess.run([binary, "exercise", *EXERCISE, "--roster", str(roster), "--out", str(out)],
                       capture_output=True, text=True)
    check(r.returncode == 0, f"{label}: exercise exits 0: {r.stderr}")
    folders = {}
    for folder in sorted(p for p in out.iterdir() if p.is_dir()):
        lesson = tomllib.loads((folder / "lesson.toml").read_text(encoding="utf-8"))
        folders[unicodedata.normalize("NFC", lesson["exercise"]["student"])] = (folder, lesson)
    return out, folders


def total_of(row):
    return float(row["total"]) if row.get("total") not in (None, "") else None


def main():
    ids = [f"2026{1001 + i}" for i in range(30)]
    id_roster = "id,name\n" + "".join(f"{i},\"{n}\"\n" for i, n in zip(ids, NAMES))
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = pathlib.Path(tmp_name)
        names_only = "--names-only" in sys.argv  # for an attn-trace without IDs
        out, folders = make_class(tmp, "trial", BIN,
                                  "".join(n + "\n" for n in NAMES) if names_only else id_roster)
        pristine = tmp / "pristine"
        shutil.copytree(out, pristine, symlinks=True)
        expect, typed_cells = {}, {}
        for name, habit in zip(NAMES, CLASS):
            key = unicodedata.normalize("NFC", name)
            folder, lesson = folders[key]
            typed_cells[key] = cells_of(lesson, habit)
            if typed_cells[key] is not None:
                fill_toml(folder, typed_cells[key])
            expect[key] = teacher(lesson, habit, typed_cells[key])
        r = run("mark", str(out))
        check(r.returncode in (0, 1), f"mark exits 0 or 1: {r.returncode} {r.stderr}")
        rows = {unicodedata.normalize("NFC", row["name"]): row for row in read_csv(out / "marks.csv")}
        first_column = (out / "marks.csv").read_text(encoding="utf-8-sig").split(",", 1)[0]
        check(first_column == "id", f"marks.csv's first column is the ID: {first_column!r}")
        judge_class(out, folders, rows, expect, ids)
        spreadsheet_route(tmp, out, pristine, typed_cells)
        if BEFORE:
            compare_before(tmp, rows, typed_cells)


def judge_class(out, folders, rows, expect, ids):
    hits = misses = false_labels = 0
    summary = (out / "summary.md").read_text(encoding="utf-8")
    for i, (name, habit) in enumerate(zip(NAMES, CLASS)):
        key = unicodedata.normalize("NFC", name)
        row = rows.get(key, {})
        check(row.get("id") == ids[i], f"{name}: marks.csv has the ID {ids[i]}: {row.get('id')!r}")
        folder, lesson = folders[key]
        label, first = HABITS[habit]
        got_label = row.get("mistake", "")
        if expect[key] is None:
            check(row.get("total", "") == "" and "not handed in" in json.dumps(row),
                  f"{name}: an untouched template is not handed in, no points: {row}")
            check(name in summary or key in summary, f"summary.md lists {name} apart")
            continue
        low, high = expect[key]
        total = total_of(row)
        check(total is not None and low - 0.006 <= total <= high + 0.006,
              f"{name} ({habit}): total {row.get('total')}, a teacher gives {low:.2f} to {high:.2f}")
        if label:
            hits += got_label == label
            misses += got_label != label
            check(got_label == label, f"{name} ({habit}): mistake {got_label!r}, expected {label!r}")
        elif label == "":
            false_labels += got_label not in ("", "rounding")
            check(got_label in ("", "rounding"), f"{name} ({habit}): no mistake named, got "
                                                 f"{got_label!r}")
        if habit == "unreadable_cell":
            check("head0.weights[1,1]" in row.get("unreadable cells", ""),
                  f"{name}: marks.csv names the unreadable cell: {row}")
            check("Cells to read again" in summary and key in summary.split(
                "Cells to read again", 1)[1], f"summary.md lists {name}'s cell to read again")
        if habit == "wrong_way":
            check(got_label != "unscaled", f"{name}: a weight rounded the wrong way is not "
                                           f"'unscaled'")
        if first is not None:
            got_first = row.get("first wrong", "").split("[")[0]
            check(got_first == first, f"{name} ({habit}): first wrong {got_first!r}, expected "
                                      f"{first!r}")
        verify_one(folder, habit, name)
        if REPORT:
            print(f"{name:22} {habit:20} {row.get('total'):>5} (teacher {low:.2f}–{high:.2f}) "
                  f"{got_label}")
    absent = sum(1 for h in CLASS if h == "not_handed_in")
    if REPORT:
        print(f"diagnoses: {hits} of {hits + misses} habits named right; "
              f"{false_labels} mistake(s) named for an honest student; {absent} not handed in")


def verify_one(folder, habit, name):
    """What the student sees: verify's JSON and the feedback file."""
    r = run("verify", str(folder / "lesson.toml"), "--answers", str(folder / "answers.toml"),
            "--format", "json")
    check(r.returncode in (0, 1), f"{name}: verify exits 0 or 1: {r.stderr}")
    try:
        report = json.loads(r.stdout)
    except json.JSONDecodeError:
        check(False, f"{name}: verify --format json prints JSON: {r.stdout[:200]}")
        return
    statuses = [cell.get("status") for a in report.get("answers", []) for cell in
                a.get("cells", [a])]
    if habit in ("right", "minus_sign", "full_width", "decimal_comma"):
        check(r.returncode == 0 and set(statuses) <= {"ok"},
              f"{name} ({habit}): all ok, exit 0: {r.returncode} {set(statuses)}")
    if habit in ("minus_sign", "full_width", "decimal_comma"):
        check("note" in r.stdout, f"{name} ({habit}): verify notes how the number was read")
    if habit == "unreadable_cell":
        check("unreadable" in statuses and statuses.count("ok") == len(statuses) - 1,
              f"{name}: one cell unreadable, every other ok: {statuses}")
    if habit in ("rounds_early",):
        check(r.returncode == 1, f"{name}: rounded too early exits 1")
    if habit == "sqrt2_1414":
        check("carried" not in statuses, f"{name}: √2 ≈ 1.414 on exact earlier numbers is never "
                                          f"'carried': {statuses}")
    feedback = (folder / "feedback.md").read_text(encoding="utf-8")
    if habit == "two_decimals":
        check("3 decimals" in feedback, f"{name}: feedback says to write 3 decimals")
    named = set(re.findall(r"`((?:head\d+\.)?[A-Za-z_]+)`", feedback))
    check(named <= set(STEPS) and str(folder.parent) not in feedback,
          f"{name}: feedback.md names only the sheet's steps, and no path: {named - set(STEPS)}")


def spreadsheet_route(tmp, out, pristine, typed_cells):
    """The same class typed into answers.csv marks exactly as the folders."""
    sheet = pristine / "answers.csv"
    check(sheet.exists(), "exercise writes answers.csv")
    if not sheet.exists():
        return
    rows = list(csv.reader(io.StringIO(sheet.read_text(encoding="utf-8-sig"), newline="")))
    header, body = rows[0], rows[1:]
    check(header[:3] == ["id", "name", "variant"], f"answers.csv starts id,name,variant: {header[:3]}")
    check(any(h.startswith("head0.weights[the,cat]") or h == "weights[the,cat]" for h in header),
          f"a column is headed like head0.weights[the,cat]: {header[3:8]}")
    filled = []
    for row in body:
        name = unicodedata.normalize("NFC", row[1].lstrip("'"))
        cells = typed_cells[name]
        flat = [] if cells is None else [c for step in STEPS for r in cells[step] for c in r]
        filled.append(row[:3] + (flat or [""] * (len(header) - 3)))
    text = "\ufeff" + "".join(",".join('"' + c.replace('"', '""') + '"' for c in row) + "\r\n"
                              for row in [header] + filled)
    typed_sheet = tmp / "typed.csv"
    typed_sheet.write_text(text, encoding="utf-8", newline="")
    r = run("mark", str(pristine), "--answers", str(typed_sheet))
    check(r.returncode in (0, 1), f"mark --answers exits 0 or 1: {r.returncode} {r.stderr}")
    check((pristine / "marks.csv").read_bytes() == (out / "marks.csv").read_bytes(),
          "the class marked from answers.csv equals the class marked from its folders")
    if shutil.which("soffice") is None:
        print("SKIPPED (part): no soffice, the .xlsx route is not tried")
        return
    text_columns = "/".join(f"{n}/2" for n in range(1, 201))  # docs/marking.md: every column Text
    convert = subprocess.run(["soffice", "--headless", f"--infilter=CSV:44,34,76,1,{text_columns}",
                              "--convert-to", "xlsx", "--outdir", str(tmp), str(typed_sheet)],
                             capture_output=True, text=True, timeout=300,
                             env=dict(os.environ, HOME=str(tmp)))  # a profile of its own
    xlsx = tmp / "typed.xlsx"
    check(xlsx.exists(), f"LibreOffice saves the sheet as .xlsx: {convert.stderr}")
    again = tmp / "again"
    shutil.copytree(pristine, again)
    (again / "marks.csv").unlink()
    for feedback in again.glob("*/feedback.md"):
        feedback.unlink()
    (again / "summary.md").unlink(missing_ok=True)
    r = run("mark", str(again), "--answers", str(xlsx))
    check(r.returncode in (0, 1) and (again / "marks.csv").read_bytes() ==
          (out / "marks.csv").read_bytes(), f"the .xlsx marks as the folders: {r.stderr}")


def compare_before(tmp, rows, typed_cells):
    names_only = "".join(n + "\n" for n in NAMES)
    old, folders = make_class(tmp, "before", BEFORE, names_only)
    for key, (folder, lesson) in folders.items():
        if typed_cells[key] is not None:
            fill_toml(folder, typed_cells[key])
    subprocess.run([BEFORE, "mark", str(old)], capture_output=True)
    before = {unicodedata.normalize("NFC", row["name"]): row for row in read_csv(old / "marks.csv")}
    changed = 0
    for name, habit in zip(NAMES, CLASS):
        key = unicodedata.normalize("NFC", name)
        a, b = before[key], rows.get(key, {})
        if (a.get("total"), a.get("mistake")) != (b.get("total"), b.get("mistake")):
            changed += 1
            print(f"changed: {name:22} {habit:20} {a.get('total')} {a.get('mistake')!r} -> "
                  f"{b.get('total')} {b.get('mistake')!r}")
    print(f"{changed} of 30 students' marks changed")


main()
if failures:
    print(f"{len(failures)} failure(s)")
    sys.exit(1)
print("ok")
