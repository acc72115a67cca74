#!/usr/bin/env python3
"""Command-line tests of `attn-trace exercise --format moodle` (stdlib + numpy).

Usage: test_moodle.py ATTN_TRACE

For a few classes (the default shape; two heads with a causal mask, key padding
and the masked scores asked; a roster of awkward names) moodle.xml must be:
UTF-8 with an XML declaration, well-formed (xml.etree), shaped as Moodle's
importer reads it (root <quiz>, one category question first, one cloze question
per student, question text in CDATA with format html, no student names; the
sub-questions read with Moodle's own Cloze regexes), and every sub-question
must agree with an independent recomputation: each
student's lesson.toml recomputed with numpy (tests/crosscheck.py, each step
from the tool's values of the steps it reads, within the bound two correct
results of that operation may differ by: tests/bounds.py), every asked cell
rounded to the answer decimals, the tolerance verify gives a number written
with that many decimals. A cell whose bound reaches a rounding midpoint may be
written either way. Exit 77 (skipped) without numpy.
"""
import json
import os
import re
import subprocess
import sys
import tempfile
import tomllib
import xml.etree.ElementTree as ET
from decimal import Decimal

from clitest import check, failures

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import crosscheck  # noqa: E402  (exits 77 when numpy is missing)

BIN = os.path.abspath(sys.argv[1])

# Moodle's own Cloze parser (question/type/multianswer/questiontype.php,
# qtype_multianswer_extract_question), its regexes in Python's syntax: the
# variable-width look-behind (?<!\\|&|&amp;) written as three.
FRACTION = r"=|%(-?[0-9]+(?:[.,][0-9]*)?)%"
ANSWER = r".+?(?<!\\)(?<!&)(?<!&amp;)(?=[~#}]|$)"
FEEDBACK = r".*?(?<!\\)(?=[~}]|$)"
ALTERNATIVE = f"({FRACTION})?({ANSWER})(#({FEEDBACK}))?"
TYPES = ("(NUMERICAL|NM)|(MULTICHOICE|MC)|(MULTICHOICE_V|MCV)|(MULTICHOICE_H|MCH)|"
         "(SHORTANSWER|SA|MW)|(SHORTANSWER_C|SAC|MWC)|"
         "(MULTICHOICE_S|MCS)|(MULTICHOICE_VS|MCVS)|(MULTICHOICE_HS|MCHS)|"
         "(MULTIRESPONSE|MR)|(MULTIRESPONSE_H|MRH)|(MULTIRESPONSE_S|MRS)|(MULTIRESPONSE_HS|MRHS)")
SUBQUESTION = re.compile(r"\{([0-9]*):(" + TYPES + f"):({ALTERNATIVE}(~{ALTERNATIVE})*)\\}}", re.S)
NUMBER = r"-?(([0-9]+[.,]?[0-9]*|[.,][0-9]+)([eE][-+]?[0-9]+)?)"
NUMERICAL_ALTERNATIVE = re.compile(f"^({NUMBER})(:{NUMBER})?$", re.S)
PLAIN_DECIMAL = re.compile(r"-?[0-9]+\.[0-9]+")


def cloze_subquestions(text):
    """[(mark, type, [(fraction, answer, tolerance or None)])] as Moodle reads them."""
    found = []
    while (m := SUBQUESTION.search(text)) is not None:
        kind = "NUMERICAL" if m.group(3) else "SHORTANSWER" if m.group(7) else m.group(2)
        alternatives, rest = [], m.group(16)
        while rest and (alt := re.match("~?" + ALTERNATIVE, rest, re.S)) is not None:
            answer, tol = alt.group(3), None
            if kind == "NUMERICAL" and (num := NUMERICAL_ALTERNATIVE.match(answer)):
                answer, tol = num.group(1), num.group(6)
            alternatives.append((alt.group(1), answer, tol))
            rest = rest[alt.end():]
        found.append((m.group(1), kind, alternatives))
        text = text[:m.start()] + f"{{#{len(found)}}}" + text[m.end():]
    return found


def generate(out, *args):
    result = subprocess.run([BIN, "exercise", *args, "--out", out], capture_output=True,
                            text=True)
    if result.returncode != 0:
        raise SystemExit(f"exercise {' '.join(args)} failed ({result.returncode}): "
                         f"{result.stderr}")


def lessons(out):
    """Every student's lesson under `out`: variant -> (folder, parsed lesson)."""
    found = {}
    for folder in sorted(os.listdir(out)):
        path = os.path.join(out, folder, "lesson.toml")
        if os.path.isfile(path):
            with open(path, "rb") as f:
                lesson = tomllib.load(f)
            variant = re.search(r"variant ([0-9a-f]{16})", lesson["lesson"]["source"]).group(1)
            found[variant] = (folder, lesson)
    return found


def key_text(x, decimals):
    """The key's text of a value: `decimals` places, no "-0.000"."""
    s = f"{x:.{decimals}f}"
    return s[1:] if s.startswith("-") and set(s[1:]) <= set("0.") else s


def tolerance(decimals):
    """What verify allows a number written with `decimals` decimals, exactly."""
    return Decimal(5) / 10 ** (decimals + 1) + Decimal(5) / 10 ** (decimals + 3)


def tool_values(lesson_path):
    """The tool's trace of a lesson file: {step id: matrix}."""
    r = subprocess.run([BIN, "run", lesson_path, "--format", "json"], capture_output=True,
                       text=True, check=True)
    number = {"nan": float("nan"), "inf": float("inf"), "-inf": float("-inf")}
    return {s["id"]: crosscheck.np.array([[number.get(x, x) if isinstance(x, str) else x
                                          for x in row] for row in s["data"]], dtype=float)
            for s in json.loads(r.stdout)["steps"]}


def check_cells(label, subs, lesson, lesson_path):
    """The sub-questions of one question against the numpy recomputation."""
    recomputed = crosscheck.recompute(lesson, tool_values(lesson_path))
    steps = {sid: value for sid, value, _ in recomputed}
    bound = {sid: b for sid, _, b in recomputed}
    asked = lesson["exercise"]["ask"]
    decimals = lesson["exercise"]["answer_decimals"]
    cells = [(step, r, c, steps[step][r, c]) for step in asked
             for r in range(steps[step].shape[0]) for c in range(steps[step].shape[1])]
    check(len(subs) == len(cells),
          f"{label}: {len(subs)} sub-questions for {len(cells)} asked cells")
    for (step, r, c, x), (norm, kind, alternatives) in zip(cells, subs):
        where = f"{label}: {step}[{r},{c}]"
        check(norm == "1", f"{where}: mark {norm!r}, expected 1")
        if x == float("-inf"):
            check(kind == "SHORTANSWER" and ("=", "-inf", None) in alternatives,
                  f"{where}: a masked cell should accept -inf, got {kind}:{alternatives}")
            continue
        check(kind == "NUMERICAL" and len(alternatives) == 1 and alternatives[0][0] == "="
              and alternatives[0][2] is not None,
              f"{where}: expected one right NUMERICAL answer with a tolerance, got "
              f"{kind}:{alternatives}")
        if kind != "NUMERICAL" or len(alternatives) != 1 or alternatives[0][2] is None:
            continue
        _, value, tol = alternatives[0]
        check(PLAIN_DECIMAL.fullmatch(value) and PLAIN_DECIMAL.fullmatch(tol),
              f"{where}: {value}:{tol} are not plain decimals")
        # The answer is the true value itself (verify's interval is the true
        # value ± the tolerance), to at most 9 more decimals than asked, within
        # the bound of numpy's value.
        slack = 2 * float(crosscheck.np.broadcast_to(bound[step].limit(x, x),
                                                     steps[step].shape)[r, c])
        places = len(value.split(".")[1]) if "." in value else 0
        check(decimals <= places <= decimals + 9 and abs(float(value) - x) <= slack + 10.0 ** -(decimals + 9),
              f"{where}: value {value}, numpy gives {x!r}")
        # Every number written with the asked decimals near it: Moodle (|y - value|
        # <= tol) accepts it exactly when verify (|y - true| <= tol) does, unless it
        # is within numpy's bound of the edge.
        unit = Decimal(1) / 10 ** decimals
        centre = Decimal(key_text(x, decimals))
        for k in range(-3, 4):
            y = centre + k * unit
            edge = abs(abs(float(y) - x) - float(tolerance(decimals)))
            if edge <= 2 * slack + 1e-12:
                continue
            moodle = abs(Decimal(value) - y) <= Decimal(tol)
            check(moodle == (abs(float(y) - x) <= float(tolerance(decimals))),
                  f"{where}: {y} is {'in' if moodle else 'out of'} {value} ± {tol}, "
                  f"verify says otherwise of {x!r}")
        check(Decimal(tol) == tolerance(decimals),
              f"{where}: tolerance {tol}, verify's is {tolerance(decimals)}")
        check(abs(float(value) - x) <= float(tol) + slack,
              f"{where}: {x!r} outside {value} ± {tol}")


def check_bank(out, names, expect_in_text=()):
    path = os.path.join(out, "moodle.xml")
    with open(path, "rb") as f:
        raw = f.read()
    label = os.path.basename(out)
    check(raw.startswith(b'<?xml version="1.0" encoding="UTF-8"?>\n<quiz>'),
          f"{label}: the XML declaration is not the first line, before <quiz>")
    text = raw.decode("utf-8")  # raises on anything but UTF-8
    root = ET.fromstring(raw)  # raises when not well-formed
    check(root.tag == "quiz", f"{label}: root <{root.tag}>, expected <quiz>")
    questions = root.findall("question")
    check(len(questions) == len(root), f"{label}: <quiz> holds something other than <question>")
    types = [q.get("type") for q in questions]
    check(types == ["category"] + ["cloze"] * len(names),
          f"{label}: question types {types}, expected one category then {len(names)} cloze")
    category = questions[0].findtext("category/text") or ""
    check(category.startswith("$course$/top/attn-trace/seed "),
          f"{label}: category {category!r}")
    check(text.count('<questiontext format="html"><text><![CDATA[') == len(names),
          f"{label}: not every question text is HTML in CDATA")
    for name in names:
        check(name not in text, f"{label}: the student name {name!r} is in the bank")

    by_variant = lessons(out)
    check(len(by_variant) == len(names), f"{label}: {len(by_variant)} lessons for {len(names)}")
    seen = set()
    for q in questions[1:]:
        qname = q.findtext("name/text") or ""
        m = re.fullmatch(r"Attention exercise, variant ([0-9a-f]{16})", qname)
        check(m is not None, f"{label}: question name {qname!r}")
        if m is None:
            continue
        variant = m.group(1)
        seen.add(variant)
        qtext = q.find("questiontext")
        check(qtext is not None and qtext.get("format") == "html",
              f"{label} {variant}: questiontext format is not html")
        body = q.findtext("questiontext/text") or ""
        for expected in expect_in_text:
            check(expected in body, f"{label} {variant}: {expected!r} not in the question text")
        feedback = q.findtext("generalfeedback/text") or ""
        check("Answer key" in feedback and "Worked cell" in feedback,
              f"{label} {variant}: the general feedback has no key")
        check(q.findtext("penalty") is not None and q.findtext("hidden") == "0",
              f"{label} {variant}: <penalty> missing or <hidden> not 0")
        if variant in by_variant:
            folder, lesson = by_variant[variant]
            check_cells(f"{label} {folder}", cloze_subquestions(body), lesson,
                        os.path.join(out, folder, "lesson.toml"))
    check(seen == set(by_variant), f"{label}: variants {sorted(seen)} != {sorted(by_variant)}")
    return raw


def main():
    with tempfile.TemporaryDirectory() as tmp:
        default = os.path.join(tmp, "default")
        generate(default, "--seed", "2026", "--students", "4", "--format", "markdown", "moodle")
        raw = check_bank(default, [f"Student {i}" for i in range(1, 5)])
        with open(os.path.join(default, "index.md"), encoding="utf-8") as f:
            check("[moodle.xml](moodle.xml)" in f.read(), "index.md does not link moodle.xml")
        check(os.path.isfile(os.path.join(default, "student-01", "sheet.md")),
              "markdown and moodle together: no sheet.md")
        again = os.path.join(tmp, "again")
        generate(again, "--seed", "2026", "--students", "4", "--format", "markdown", "moodle")
        with open(os.path.join(again, "moodle.xml"), "rb") as f:
            check(f.read() == raw, "the same seed gave a different moodle.xml")

        masked = os.path.join(tmp, "masked")
        generate(masked, "--seed", "7", "--students", "3", "--heads", "2", "--causal",
                 "--key-padding", "--ask", "scores", "masked", "weights", "head1.weights",
                 "head1.context", "--format", "moodle")
        check_bank(masked, [f"Student {i}" for i in range(1, 4)],
                   expect_in_text=["&lt;pad&gt;", "head1.context", "Write a masked score"])

        roster = os.path.join(tmp, "roster.txt")
        names = ["Zoë <&]]>}# O'Brien", "张伟", "Ana María López"]
        with open(roster, "w", encoding="utf-8") as f:
            f.write("\n".join(names) + "\n")
        named = os.path.join(tmp, "named")
        generate(named, "--seed", "5", "--roster", roster, "--decimals", "2",
                 "--answer-decimals", "4", "--cross", "2", "--format", "moodle")
        check_bank(named, names)

    if failures:
        print(f"{len(failures)} failure(s)")
        return 1
    print("ok: moodle.xml is well-formed, shaped for Moodle's importer, and agrees with numpy")
    return 0


if __name__ == "__main__":
    sys.exit(main())
