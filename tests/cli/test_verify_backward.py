#!/usr/bin/env python3
"""verify on every gradient step of every level-5 lesson (stdlib only).

Usage: test_verify_backward.py ATTN_TRACE

For each lesson with a [backward] table: the tool's own values of every grad.*
step, written as an answers file, verify all ok (exit 0); then every cell,
one answer at a time, moved by 0.5 is wrong (exit 1) at that cell and nowhere
else, and verify never fails otherwise (a weight's gradient has more rows than
the mask: the crash a learner found).
"""
import json
import os
import sys
import tempfile

from clitest import check, failures, runner

BIN = os.path.abspath(sys.argv[1])
run = runner(BIN)


LESSONS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "lessons")


def backward_lessons():
    """The lessons of the source tree with a [backward] table."""
    out = []
    for name in sorted(os.listdir(LESSONS)):
        with open(os.path.join(LESSONS, name), encoding="utf-8") as f:
            if "\n[backward]" in f.read():
                out.append(name[:-len(".toml")])
    return out


def grad_steps(lesson):
    doc = json.loads(run("run", lesson, "--format", "json").stdout)
    return [s for s in doc["steps"] if s["id"].startswith("grad.")]


def number(v):
    return json.dumps(v) if isinstance(v, (int, float)) else f'"{v}"'


def answer(step, r, c, value):
    return f'[[answer]]\nstep = "{step}"\ncell = [{r}, {c}]\nvalue = {number(value)}\n'


def verify(lesson, text, tmp):
    path = os.path.join(tmp, "answers.toml")
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)
    return run("verify", lesson, "--answers", path, "--format", "json")


def main():
    lessons = backward_lessons()
    check(len(lessons) >= 3, f"lessons with [backward]: {lessons}")
    wrong_cells = 0
    with tempfile.TemporaryDirectory() as tmp:
        for lesson in lessons:
            steps = grad_steps(lesson)
            check(steps, f"{lesson}: has grad.* steps")
            if max(len(s["data"]) * len(s["data"][0]) for s in steps) > 200:
                continue  # d_k = 64: a second of diagnosis per answer; the small ones suffice
            right = "".join(answer(s["id"], r, c, v) for s in steps
                            for r, row in enumerate(s["data"]) for c, v in enumerate(row)
                            if isinstance(v, (int, float)))
            result = verify(lesson, right, tmp)
            check(result.returncode == 0, f"{lesson}: its own gradients verify ok "
                                          f"(exit {result.returncode}: {result.stderr[-300:]})")
            for s in steps:  # the last cell of each step: a weight's gradient's last row
                r, c = len(s["data"]) - 1, len(s["data"][0]) - 1
                v = s["data"][r][c]
                if not isinstance(v, (int, float)):
                    continue
                result = verify(lesson, answer(s["id"], r, c, v + 0.5), tmp)
                check(result.returncode == 1, f"{lesson} {s['id']}[{r},{c}] + 0.5: exit "
                                              f"{result.returncode} {result.stderr[-300:]}")
                wrong_cells += result.returncode == 1
    check(wrong_cells > 30, f"{wrong_cells} moved cells marked wrong")
    print(f"{len(lessons)} lessons, {wrong_cells} moved cells marked wrong")
    sys.exit(1 if failures else 0)


main()
