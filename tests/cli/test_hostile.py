#!/usr/bin/python3
"""A lesson whose tokens, title, source and story hold newlines, a blank line,
tabs, C0 control characters, DEL and the specials of Markdown and LaTeX, in
every format of `run`; and student names with every special in every format of
`exercise`. Each output must stay valid: one line per table row with the
right number of cells (Markdown), no raw control character, JSON that parses
and gives the tokens back exactly, HTML and XML that parse, and (mode latex)
LaTeX that compiles: the trace with pdflatex, the sheets with LuaLaTeX.

Usage: test_hostile.py PATH/TO/attn-trace [main|latex]
  latex: exit 77 (skipped) when neither pdflatex nor lualatex is installed.
"""
import csv
import html.parser
import io
import json
import os
import pathlib
import shutil
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET

from clitest import check, failures, runner

BIN = sys.argv[1]
MODE = sys.argv[2] if len(sys.argv) > 2 else "main"
SKIP = 77

# Also read by the unit tests (tests/support/hostile_lesson.hpp).
LESSON = (pathlib.Path(__file__).resolve().parent.parent / "support" / "hostile.toml").read_text(
    encoding="utf-8")
TITLE = "Line one\nline two\n\nafter a blank\ttab \x01 \x7f | # \\ { $ % & _ ^ ~"
TOKENS = ["new\nline", "blank\n\nline", "tab\t|#", "\x01\\{$", "%&_^~\x7f`"]
NAMES = ["Ann | #1 \\ {x} $5", "Bo % & _ ^ ~ `y` *z* <w>"]


run = runner(BIN)


def raw_controls(text):
    """The control characters of `text` other than the line feed."""
    return sorted({c for c in text if (ord(c) < 0x20 and c != "\n") or c == "\x7f"})


def cells(row):
    """The cells of a Markdown table row, split at the '|' GitHub splits at
    (a backslash before one escapes it)."""
    parts, cell, i = [], "", 0
    while i < len(row):
        if row[i] == "\\" and i + 1 < len(row) and row[i + 1] == "|":
            cell += "\\|"
            i += 2
            continue
        if row[i] == "|":
            parts.append(cell)
            cell = ""
        else:
            cell += row[i]
        i += 1
    parts.append(cell)
    return parts[1:-1]  # outside the first and last bar


def tables(md):
    """Every table of `md`: its lines (a run of lines that start with '|')."""
    out, table = [], []
    for line in md.split("\n") + [""]:
        if line.startswith("|"):
            table.append(line)
        elif table:
            out.append(table)
            table = []
    return out


def check_tables(md, what, expected_count=None):
    found = tables(md)
    if expected_count is not None:
        check(len(found) == expected_count, f"{what}: {expected_count} tables, found {len(found)}")
    for table in found:
        if len(table) < 2 or not set(table[1]) <= set("|-:"):
            check(False, f"{what}: no |---| line under {table[0]!r}")
            continue
        width = len(cells(table[1]))
        for row in table:
            check(len(cells(row)) == width, f"{what}: {len(cells(row))} cells, not {width}: {row!r}")


class Parser(html.parser.HTMLParser):
    """The text of every <h1>, and the tags left open (void elements aside)."""
    VOID = {"meta", "br", "hr", "img", "input", "link"}

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.open, self.h1, self.errors = [], [], []

    def handle_starttag(self, tag, attrs):
        if tag not in self.VOID:
            self.open.append(tag)
        if tag == "h1":
            self.h1.append("")

    def handle_endtag(self, tag):
        if not self.open or self.open[-1] != tag:
            self.errors.append(f"</{tag}> closes {self.open[-1:]}")
        else:
            self.open.pop()

    def handle_data(self, data):
        if self.open and self.open[-1] == "h1":
            self.h1[-1] += data


def test_run(tmp):
    lesson = tmp / "hostile.toml"
    lesson.write_text(LESSON, encoding="utf-8")
    # text: one line per row, no escape code reaches a terminal.
    r = run("run", str(lesson), "--width", "200")  # the title and source unwrapped
    check(r.returncode == 0, f"text: exit 0 ({r.stderr})")
    check(raw_controls(r.stdout) == [], f"text: no raw control character: {raw_controls(r.stdout)}")
    check(r.stdout.startswith("attn-trace · hostile — Line one␊line two␊␊after a blank␉tab ␁ ␡ | # "
                              "\\ { $ % & _ ^ ~\nsource: a source␊with ␛[31m colour\n"),
          f"text: the title and source on one line each: {r.stdout[:200]!r}")
    rows = [line for line in r.stdout.split("\n") if line.startswith("  new␊line ")]
    check(len(rows) > 5, "text: the token with a newline labels its rows on one line")

    # json: parses, and the tokens and title come back exactly.
    r = run("run", str(lesson), "--format", "json", "--expand", "1,4")
    doc = json.loads(r.stdout)
    check(doc["title"] == TITLE, f"json: the title as written: {doc['title']!r}")
    x = doc["steps"][0]
    check(x["id"] == "X" and x["rows"] == TOKENS, f"json: X's rows are the tokens: {x['rows']!r}")
    check(all(s["rows"] == TOKENS for s in doc["steps"] if s["id"].endswith(".weights")),
          "json: the weights' rows are the tokens")
    # Round trip: a lesson written from the JSON's tokens traces the same labels.
    copy = tmp / "copy.toml"
    copy.write_text("[input]\ntokens = [" + ", ".join(json.dumps(t) for t in x["rows"]) + "]\n"
                    f"X = {json.dumps(x['data'])}\n[weights]\nW_Q = \"identity\"\n"
                    "W_K = \"identity\"\nW_V = \"identity\"\n", encoding="utf-8")
    again = json.loads(run("run", str(copy), "--format", "json").stdout)
    check(again["steps"][0]["rows"] == TOKENS, "json: the tokens round-trip through a lesson")

    # markdown: every table keeps its cells, the heading and the code span one line.
    r = run("run", str(lesson), "--format", "markdown", "--expand", "1,4")
    md = r.stdout
    check(r.returncode == 0 and raw_controls(md) == [],
          f"markdown: exit 0, no raw control character: {raw_controls(md)}")
    check(md.startswith("# hostile: Line one␊line two␊␊after a blank␉tab ␁ ␡ \\| \\# \\\\ \\{ \\$ % \\& "
                        "\\_ ^ \\~\n\n"), f"markdown: the heading on one line: {md[:120]!r}")
    check("\n> First \\| \\# \\\\ \\{ \\} \\$ % \\& \\_ ^ \\~\n>\n> Second␉with ␁ and ␡.\n> Third\n\n" in md,
          "markdown: the story quoted line by line, its blank line a paragraph break")
    check_tables(md, "markdown", len(doc["steps"]))
    header = tables(md)[0][0]
    check([c.strip() for c in cells(header)][1:] == ["d0", "d1"], f"markdown: X's header: {header!r}")
    labels = [cells(row)[0].strip() for row in tables(md)[0][2:]]
    check(labels == ["**new␊line**", "**blank␊␊line**", "**tab␉\\|\\#**", "**␁\\\\\\{\\$**",
                     "**%\\&\\_^\\~␡\\`**"], f"markdown: X's row labels: {labels}")
    spans = [line for line in md.split("\n") if line.startswith("``head0.scores[")]
    check(len(spans) == 1 and spans[0].endswith("``"),
          f"markdown: the worked cell is one code span past the token's backtick: {spans}")
    return lesson


def exercise(tmp):
    roster = tmp / "roster.txt"
    roster.write_text("\n".join(NAMES) + "\n", encoding="utf-8")
    out = tmp / "sheets"
    r = run("exercise", "--seed", "5", "--roster", str(roster), "--format", "markdown", "latex",
            "html", "moodle", "--out", str(out))
    check(r.returncode == 0, f"exercise with special names: exit 0 ({r.stderr})")
    return out


def test_exercise(tmp):
    out = exercise(tmp)
    index = (out / "index.md").read_text(encoding="utf-8")
    check_tables(index, "index.md", 1)
    names = [cells(row)[0].strip() for row in tables(index)[0][2:]]
    check(names == ["Ann \\| \\#1 \\\\ \\{x\\} \\$5", "Bo % \\& \\_ ^ \\~ \\`y\\` \\*z\\* \\<w\\>"],
          f"index.md: the names escaped in their cells: {names}")
    with open(out / "roster.csv", encoding="utf-8", newline="") as f:
        check([row["name"] for row in csv.DictReader(f)] == NAMES, "roster.csv: the names exactly")
    folders = sorted(p for p in out.iterdir() if p.is_dir())
    check(len(folders) == 2, f"one folder per student: {folders}")
    for folder in folders:
        for name in ("sheet.md", "key.md"):
            md = (folder / name).read_text(encoding="utf-8")
            check(raw_controls(md) == [], f"{folder.name}/{name}: no raw control character")
            check_tables(md, f"{folder.name}/{name}")
    for name in ("sheets.html", "keys.html"):
        parser = Parser()
        parser.feed((out / name).read_text(encoding="utf-8"))
        parser.close()
        check(parser.errors == [] and parser.open == [], f"{name}: every tag closed: {parser.errors}")
        prefix = "Answer key: " if name == "keys.html" else "Attention exercise: "
        check(parser.h1 == [prefix + n for n in NAMES], f"{name}: each name as its heading: {parser.h1}")
    ET.parse(out / "moodle.xml")  # raises (fails the test) on malformed XML
    # A control character in a name is refused, naming the line.
    bad = tmp / "bad.txt"
    bad.write_text("Ann\nBo\x07b\n", encoding="utf-8")
    r = run("exercise", "--seed", "5", "--roster", str(bad), "--out", str(tmp / "never"))
    check(r.returncode == 2 and "bad.txt:2: the name contains a control character" in r.stderr
          and not (tmp / "never").exists(), f"a name with a control character: exit 2: {r.stderr}")


# A lesson whose title, source, tokens and a claim's words try to take over
# the terminal that shows `check` and `verify`: an escape sequence that would
# retitle it, a C1 control, a right-to-left override and a zero width space.
TERMINAL_LESSON = r"""
[lesson]
id = "terminal"
title = "t\u001B]0;pwned\u0007 \u202Eevil"
source = "s\u009B2J \u200Bsource"

[input]
tokens = ["a\u001B[2J", "b\u202E", "c\u200B"]
X = [[1, 0], [0, 1], [1, 1]]

[weights]
W_Q = "identity"
W_K = "identity"
W_V = "identity"

[[claim]]
step = "head0.scores"
cell = [0, 0]
value = 1
says = "said \u001B]0;pwned\u0007 here \u202E"
"""

# What a report for a terminal may not hold: C0 controls but the line feed,
# DEL, the C1 controls, the bidirectional controls and the invisible marks.
HIDDEN = set(chr(c) for c in range(0x20) if c != 0x0A) | {chr(0x7F)} | set(
    chr(c) for c in range(0x80, 0xA0)) | set("\u061c\u200b\u200e\u200f\u202a\u202b\u202c"
                                              "\u202d\u202e\u2060\u2066\u2067\u2068\u2069\ufeff")


def check_shown(r, what, expected_code, expected):
    hidden = sorted(hex(ord(c)) for c in set(r.stdout + r.stderr) & HIDDEN)
    check(r.returncode == expected_code and hidden == [] and all(
        e in r.stdout + r.stderr for e in expected),
          f"{what}: exit {r.returncode}, no control or bidi character reaches the terminal "
          f"({hidden}), each shown: {expected}: {(r.stdout + r.stderr)[:600]!r}")


def test_reports(tmp):
    lesson = tmp / "terminal.toml"
    lesson.write_text(TERMINAL_LESSON, encoding="utf-8")
    r = run("check", str(lesson), "--golden", str(tmp / "none.toml"))
    check_shown(r, "check", 1, ["t\u241b]0;pwned\u2407 <U+202E>evil", "s<U+009B>2J <U+200B>source",
                                "said \u241b]0;pwned\u2407 here <U+202E>", "(a\u241b[2J, a\u241b[2J)"])
    answers = tmp / "terminal-answers.toml"
    answers.write_text('[[answer]]\nstep = "head0.scores"\ncell = [1, 0]\nvalue = 5\n',
                       encoding="utf-8")
    r = run("verify", str(lesson), "--answers", str(answers))
    check_shown(r, "verify", 1, ["a\u241b[2J", "b<U+202E>"])
    # mark: a student whose answers file holds such a key is not marked, and
    # the reason, which echoes the key, is shown on the teacher's terminal.
    roster = tmp / "terminal-roster.txt"
    roster.write_text("Ann\nBo\u202Eb\n", encoding="utf-8")
    out = tmp / "terminal-class"
    check(run("exercise", "--seed", "3", "--roster", str(roster), "--out",
              str(out)).returncode == 0, "exercise for the terminal class")
    folder = next(p for p in sorted(out.iterdir()) if p.is_dir())
    (folder / "answers.toml").write_text('"k\\u001b]0;pwned\\u0007\\u202e" = 1\n',
                                         encoding="utf-8")
    r = run("mark", str(out))
    check_shown(r, "mark", 1, ["k\u241b]0;pwned\u2407<U+202E>"])


def pdf_text(tmp, pdf):
    if shutil.which("pdftotext") is None:
        return None
    return subprocess.run(["pdftotext", str(pdf), "-"], capture_output=True, text=True, cwd=tmp).stdout


def test_latex(tmp):
    ran = False
    if shutil.which("pdflatex"):
        ran = True
        lesson = tmp / "hostile.toml"
        lesson.write_text(LESSON, encoding="utf-8")
        body = run("run", str(lesson), "--format", "latex", "--expand", "1,4").stdout
        check(raw_controls(body) == [], f"latex: no raw control character: {raw_controls(body)}")
        (tmp / "t.tex").write_text("\\documentclass{article}\\usepackage{amsmath}\\begin{document}\n"
                                   + body + "\\end{document}\n", encoding="utf-8")
        r = subprocess.run(["pdflatex", "-interaction=nonstopmode", "-halt-on-error", "t.tex"],
                           cwd=tmp, capture_output=True, text=True)
        check(r.returncode == 0, f"latex of the hostile lesson compiles: {r.stdout[-600:]}")
        text = pdf_text(tmp, tmp / "t.pdf")
        if text is not None:
            check("Line one[U+000A]line two[U+000A][U+000A]after" in text,
                  f"the PDF shows the title's newlines: {text[:200]!r}")
    else:
        print("SKIPPED (part): pdflatex is not installed (apt-get install texlive-latex-base)")
    if shutil.which("lualatex"):
        ran = True
        out = exercise(tmp)
        for name in ("sheets.tex", "keys.tex"):
            r = subprocess.run(["lualatex", "-interaction=nonstopmode", "-halt-on-error", name],
                               cwd=out, capture_output=True, text=True)
            check(r.returncode == 0, f"{name} with special names compiles: {r.stdout[-600:]}")
            text = pdf_text(out, out / name.replace(".tex", ".pdf"))
            if text is not None:
                check(all(n in text for n in ("Ann | #1 \\ {x} $5", "Bo % & _ ^ ~")),
                      f"{name}: the names as typed in the PDF")
    else:
        print("SKIPPED (part): lualatex is not installed (apt-get install texlive-luatex)")
    return 0 if ran else SKIP


def main():
    with tempfile.TemporaryDirectory() as name:
        tmp = pathlib.Path(name)
        if MODE == "latex":
            status = test_latex(tmp)
        else:
            test_run(tmp)
            test_exercise(tmp)
            test_reports(tmp)
            status = 0
    if status == SKIP:
        print("SKIPPED: no LaTeX installed")
        return SKIP
    print(f"{len(failures)} failure(s)" if failures else "all hostile-text checks passed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
