#!/usr/bin/env python3
"""Command-line tests of `attn-trace exercise` with a backward pass (stdlib only).

Usage: test_exercise_backward.py ATTN_TRACE

A backprop sheet (--ask grad.scores ..., --backward upstream|half_sq): the
lesson has its [backward] table, every number of the key equals `run`'s, the
key's answers verify all ok, a perturbed cell is the one wrong, a scale left
out on the way back is named grad_unscaled (by verify and by mark), and the
files are reproducible.
"""
import json
import os
import re
import sys
import tempfile
import tomllib

from clitest import check, failures, runner
import test_exercise as ex

BIN = os.path.abspath(sys.argv[1])
run = runner(BIN)

CONFIGS = [
    ["--seed", "27", "--students", "2", "--ask", "grad.weights", "grad.masked", "grad.scores"],
    ["--seed", "5", "--students", "1", "--causal", "--backward", "half_sq", "--ask",
     "grad.head0.scores", "grad.head0.K", "grad.W_Q"],
]
INPUTS = ("X", "M", "W_Q", "W_K", "W_V", "grad.concat", "target")


def key_of(folder):
    key = ex.read(os.path.join(folder, "key.md"))
    return key, ex.key_decimals(key), ex.markdown_tables(key.split("## Worked cells")[0])


def test_lesson_and_key(tmp):
    for n, config in enumerate(CONFIGS):
        out = os.path.join(tmp, f"b{n}")
        ex.generate(out, *config)
        again = os.path.join(tmp, f"b{n}-again")
        ex.generate(again, *config)
        check(ex.tree(out) == ex.tree(again), f"config {n}: the same files twice")
        index = ex.read(os.path.join(out, "index.md"))
        want = "--backward half_sq" if "half_sq" in config else "--backward upstream"
        check(want in index, f"config {n}: the command that regenerates names {want}")
        for student in sorted(d for d in os.listdir(out) if os.path.isdir(os.path.join(out, d))):
            folder = os.path.join(out, student)
            lesson = os.path.join(folder, "lesson.toml")
            table = tomllib.loads(ex.read(lesson))["backward"]
            if "half_sq" in config:
                check(table.get("loss") == "half_sq" and len(table["target"]) == 3,
                      f"{student}: a drawn target")
            else:
                check(len(table["upstream"]) == 3 and all(any(v != 0 for v in row)
                                                         for row in table["upstream"]),
                      f"{student}: a drawn upstream, no row of zeros")
            key, decimals, tables = key_of(folder)
            result = run("run", lesson, "--format", "json")
            check(result.returncode == 0, f"run {lesson}: {result.stderr}")
            steps = {s["id"]: s for s in json.loads(result.stdout)["steps"]}
            grads = [s for s in tables if s.startswith("grad.")]
            check(len(grads) >= 8, f"{student}: the key shows the gradient steps ({grads})")
            for step_id, rows in tables.items():
                if step_id in INPUTS:
                    continue
                data = steps[step_id]["data"]
                for r, (_, cells) in enumerate(rows):
                    for c, cell in enumerate(cells):
                        want = ex.fmt_fixed(data[r][c], decimals)
                        check(cell == want, f"{student} {step_id}[{r},{c}]: key {cell}, run {want}")
            sheet = ex.read(os.path.join(folder, "sheet.md"))
            check("**grad.concat**" in sheet or "**target**" in sheet,
                  f"{student}: the sheet gives the upstream gradient or the target")
            check("dK = dSᵀ·Q" in sheet, f"{student}: the convention states the rules back")


def test_verify(tmp):
    out = os.path.join(tmp, "v")
    ex.generate(out, *CONFIGS[0])
    folder = os.path.join(out, "student-01")
    key, decimals, tables = key_of(folder)
    asked = re.findall(r"^### `([^`]+)` — .* ★$", key, re.M)
    check(asked == ["grad.head0.weights", "grad.head0.masked", "grad.head0.scores"],
          f"the asked steps in trace order: {asked}")
    lesson = os.path.join(folder, "lesson.toml")
    answers = os.path.join(folder, "answers.toml")

    def verify(text):
        with open(answers, "w") as f:
            f.write(text)
        result = run("verify", lesson, "--answers", answers, "--format", "json")
        return result.returncode, json.loads(result.stdout)

    code, report = verify(ex.answers_toml(tables, asked, decimals))
    check(code == 0 and {a["status"] for a in report["answers"]} == {"ok"},
          f"the key verifies all ok: {code}")
    target = ("grad.head0.masked", 1, 0)
    code, report = verify(ex.answers_toml(tables, asked, decimals, perturb=target))
    wrong = [a for a in report["answers"] if a["status"] == "wrong"]
    check(code == 1 and len(wrong) == 1 and report["first_wrong"] == {"step": target[0],
                                                                      "cell": [1, 0]},
          f"a perturbed cell is the one wrong: {wrong}")
    # grad.scores written as grad.masked: the division by √d_k left out.
    tables["grad.head0.scores"] = tables["grad.head0.masked"]
    code, report = verify(ex.answers_toml(tables, asked, decimals))
    labels = {a.get("diagnosis") for a in report["answers"] if a["status"] == "wrong"}
    check(code == 1 and labels == {"grad_unscaled"}, f"grad_unscaled named: {labels}")


def fill(answers_path, steps, asked, written_as=None):
    """The blank template filled with run's values to 3 decimals; written_as
    maps an asked step to the step whose values the student wrote for it."""
    text = ex.read(answers_path)
    for step in asked:
        rows = steps[(written_as or {}).get(step, step)]["data"]
        block = re.search(r'step = "%s"\nvalues = \[\n(.*?)\n\]' % re.escape(step), text, re.S)
        lines = block.group(1).split("\n")
        filled = [lines[0]] + ["  [" + ", ".join(f'"{v:.3f}"' for v in row) + "]," for row in rows]
        text = text[:block.start(1)] + "\n".join(filled) + text[block.end(1):]
    with open(answers_path, "w") as f:
        f.write(text)


def test_mark(tmp):
    """`mark` on a backprop class: the right student full marks, the one who
    left out the scale on the way back loses grad.scores, named grad_unscaled."""
    out = os.path.join(tmp, "m")
    ex.generate(out, *CONFIGS[0])
    asked = ["grad.head0.weights", "grad.head0.masked", "grad.head0.scores"]
    for student, written_as in (("student-01", None),
                                ("student-02", {"grad.head0.scores": "grad.head0.masked"})):
        folder = os.path.join(out, student)
        result = run("run", os.path.join(folder, "lesson.toml"), "--format", "json")
        steps = {s["id"]: s for s in json.loads(result.stdout)["steps"]}
        fill(os.path.join(folder, "answers.toml"), steps, asked, written_as)
    result = run("mark", out)
    check(result.returncode == 0, f"mark: {result.stderr}")
    rows = ex.read(os.path.join(out, "marks.csv")).lstrip("\ufeff").splitlines()
    check(rows[1].split(",")[5:10] == ["1", "1", "1", "3", "3"], f"student 1 full marks: {rows[1]}")
    check(",0,2,3," in rows[2] and rows[2].endswith("grad_unscaled,,"),
          f"student 2 loses grad.scores to grad_unscaled: {rows[2]}")


def test_refusals(tmp):
    result = run("exercise", "--seed", "1", "--backward", "sideways", "--out",
                 os.path.join(tmp, "r"))
    check(result.returncode == 2 and "--backward" in result.stderr,
          f"--backward sideways refused, exit 2: {result.stderr}")
    result = run("exercise", "--seed", "1", "--ask", "grad.nothing", "--out",
                 os.path.join(tmp, "r2"))
    check(result.returncode == 2 and "grad.head0.scores" in result.stderr,
          f"an unknown gradient step lists the valid ones: {result.stderr[-300:]}")


def main():
    with tempfile.TemporaryDirectory() as tmp:
        test_lesson_and_key(tmp)
        test_verify(tmp)
        test_mark(tmp)
        test_refusals(tmp)
    print(f"{len(failures)} failure(s)" if failures else "all backward exercise checks passed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
