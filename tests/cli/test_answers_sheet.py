#!/usr/bin/python3
"""A class typed into one spreadsheet (issue 24): `exercise` writes answers.csv,
an assistant types every student's numbers into it the way people type them
(a typographic minus, full-width digits from a Chinese input method, quoted
decimal commas, a stray letter, cells left blank, real mistakes), and
`mark --answers answers.csv` gives the same marks.csv and summary.md as the
same numbers typed into each folder's answers.toml. Then the sheet goes
through LibreOffice (`soffice --headless`, the command lines of
docs/marking.md): to .xlsx and .ods with its columns as Text, and marked from
those, with the same marks and the Chinese names intact; and what a General
(number) import does to 0.250, "0,042" and an all-digit variant, as the docs
say. The LibreOffice part is reported skipped (exit 77) without soffice,
after everything else has run. Error cases: a row for no folder, a variant on
two rows, a variant a spreadsheet turned into a number (exit 2), a student
with no row (not marked), an .xlsx without soffice on PATH (exit 2).

Usage: test_answers_sheet.py PATH/TO/attn-trace
"""
import csv
import io
import json
import os
import pathlib
import re
import shutil
import subprocess
import sys
import tempfile

from clitest import check, environment, failures, runner

BIN = sys.argv[1]
run = runner(BIN)
ROSTER = ["王小明", "李华", "José Núñez", "Zoë Ölçer", "O'Neil", "Анна Петрова", "张伟", "Ada"]
FULL = str.maketrans("0123456789.-", "０１２３４５６７８９．－")


def truth(folder):
    out = run("run", str(folder / "lesson.toml"), "--format", "json")
    return {s["id"]: s["data"] for s in json.loads(out.stdout)["steps"]}


def typed_cells(habit, values, asked):
    """{(step, r, c): text} as this student's habit writes the true values."""
    cells = {}
    for step in asked:
        for r, row in enumerate(values[step]):
            for c, v in enumerate(row):
                text = f"{v:.3f}"
                if habit == "minus" and v < 0:
                    text = "\u2212" + text[1:]
                elif habit == "fullwidth" and step.endswith("weights"):
                    text = text.translate(FULL)
                elif habit == "comma" and step.endswith("context"):
                    text = text.replace(".", ",")
                elif habit == "unreadable" and (step, r, c) == (asked[1], 0, 0):
                    text += "l"
                elif habit == "blank" and step == asked[-1]:
                    text = ""
                elif habit == "unscaled" and step.endswith("scaled"):
                    text = f"{values[asked[0]][r][c]:.3f}"
                elif habit == "two_decimals":
                    text = f"{v:.2f}"
                cells[(step, r, c)] = text
    return cells


def write_toml(folder, cells, asked):
    text = open(folder / "answers.toml", encoding="utf-8").read()
    head = text.split("[[answer]]")[0]
    parts = [head]
    for step in asked:
        rows = sorted({r for (s, r, _c) in cells if s == step})
        lines = []
        for r in rows:
            row = [json.dumps(cells[(step, r, c)], ensure_ascii=False)
                   for c in sorted(c for (s, rr, c) in cells if s == step and rr == r)]
            lines.append("  [" + ", ".join(row) + "],")
        parts.append(f'\nstep = "{step}"\nvalues = [\n' + "\n".join(lines) + "\n]\n")
    (folder / "answers.toml").write_text("[[answer]]".join(parts), encoding="utf-8")


def fill_sheet(path, filled):
    """answers.csv with each row's cells typed in; the header and first columns kept."""
    raw = path.read_bytes()
    check(raw.startswith(b"\xef\xbb\xbf"), "answers.csv starts with a UTF-8 byte-order mark")
    check(b"\r\n" in raw and raw.count(b"\n") == raw.count(b"\r\n"), "answers.csv has CRLF line ends")
    rows = list(csv.reader(io.StringIO(raw.decode("utf-8-sig"), newline="")))
    header = rows[0]
    for row in rows[1:]:
        for k, column in enumerate(header[3:], start=3):
            row[k] = filled[row[2]].get(column, "")
    out = io.StringIO(newline="")
    csv.writer(out, lineterminator="\r\n").writerows(rows)
    path.write_bytes(b"\xef\xbb\xbf" + out.getvalue().encode("utf-8"))
    return header, rows


def column_names(values, step, r, c, lesson_rows, lesson_cols):
    return f"{step}[{lesson_rows[r]},{lesson_cols[c]}]"


def build_class(root):
    (root / "roster.txt").write_text("\n".join(ROSTER) + "\n", encoding="utf-8")
    folder = root / "class"
    out = run("exercise", "--seed", "24", "--roster", str(root / "roster.txt"), "--out", str(folder))
    check(out.returncode == 0, f"exercise wrote the class: {out.stderr}")
    return folder


def students(folder):
    with open(folder / "roster.csv", encoding="utf-8-sig", newline="") as f:
        return list(csv.DictReader(f))


def simulate(folder):
    """Types each student's habit into the folders' answers.toml; returns the sheet's cells."""
    habits = ["right", "minus", "fullwidth", "comma", "unreadable", "blank", "unscaled",
              "two_decimals"]
    filled = {}
    for habit, student in zip(habits, students(folder)):
        sub = folder / student["folder"]
        lesson = open(sub / "lesson.toml", encoding="utf-8").read()
        asked = json.loads(lesson.split("ask = ")[1].split("\n")[0])
        values = truth(sub)
        trace = json.loads(run("run", str(sub / "lesson.toml"), "--format", "json").stdout)
        labels = {s["id"]: (s["rows"], s["cols"]) for s in trace["steps"]}
        cells = typed_cells(habit, values, asked)
        write_toml(sub, cells, asked)
        filled[student["variant"]] = {
            f"{s}[{labels[s][0][r]},{labels[s][1][c]}]": t for (s, r, c), t in cells.items()}
    return filled


def marks(folder, *extra):
    out = run("mark", str(folder), "--force", *extra)
    return out, (folder / "marks.csv").read_text(encoding="utf-8-sig") if (folder / "marks.csv").exists() else ""


def check_marks_values(text):
    rows = {r["name"]: r for r in csv.DictReader(io.StringIO(text))}
    right, unreadable = rows[ROSTER[0]], rows[ROSTER[4]]
    check(right["total"] == right["out of"], f"the all-right student has every point: {right}")
    for name in ROSTER[1:4]:
        check(rows[name]["total"] == rows[name]["out of"] and not rows[name]["problem"],
              f"{name}: typed minus / full-width / decimal comma cost nothing: {rows[name]}")
    # One unreadable cell of 9 in a 1-point step: every other point (4 - 1/9).
    check(abs(float(unreadable["total"]) - (float(unreadable["out of"]) - 1 / 9)) < 0.006 and
          not unreadable["problem"], f"one unreadable cell costs that cell only: {unreadable}")
    check(float(rows[ROSTER[5]]["total"]) == float(rows[ROSTER[5]]["out of"]) - 1,
          f"a step left blank costs that step: {rows[ROSTER[5]]}")
    check(rows[ROSTER[6]]["mistake"] == "unscaled", f"the unscaled student: {rows[ROSTER[6]]}")


def check_unreadable(folder, filled, out):
    """The student who typed 0.xxxl: the cell named to the student and the instructor."""
    student = students(folder)[4]
    column, typed = next((k, v) for k, v in filled[student["variant"]].items() if v.endswith("l"))
    step, labels = column[:-1].split("[")
    trace = json.loads(run("run", str(folder / student["folder"] / "lesson.toml"),
                           "--format", "json").stdout)
    rows, cols = next((s["rows"], s["cols"]) for s in trace["steps"] if s["id"] == step)
    r, c = rows.index(labels.split(",")[0]), cols.index(labels.split(",")[1])
    text = (folder / "marks.csv").read_text(encoding="utf-8-sig")
    row = next(x for x in csv.DictReader(io.StringIO(text)) if x["name"] == ROSTER[4])
    check(row["unreadable cells"] == f'{step}[{r},{c}] "{typed}"' and row["first wrong"] == "" and
          row["status"] == "marked", f"marks.csv names the unreadable cell and what was typed: {row}")
    others = [x["unreadable cells"] for x in csv.DictReader(io.StringIO(text)) if x["name"] != ROSTER[4]]
    check(others == [""] * 7, f"no other student has an unreadable cell: {others}")
    feedback = (folder / student["folder"] / "feedback.md").read_text(encoding="utf-8")
    shown = f"`{step}` [{r}, {c}] ({rows[r]}, {cols[c]})"
    check(f'- **Not read as a number:** {shown}: "{typed}" has "l" after the number; write the '
          f"number alone, such as {typed[:-1]}\n" in feedback, f"feedback names the cell: {feedback}")
    summary = (folder / "summary.md").read_text(encoding="utf-8")
    check(f'| {ROSTER[4]} |  | {shown} | "{typed}" |' in summary and
          "## Cells to read again" in summary, f"summary.md lists it to read again: {summary}")
    check(f"1 cell could not be read as a number (no points); {folder / 'summary.md'} lists it "
          'under "Cells to read again"' in out.stdout, f"mark's line says so: {out.stdout}")
    out = run("mark", str(folder), "--force", "--format", "json", "--answers",
              str(folder / "answers.csv"))
    got = {x["name"]: x["unreadable"] for x in
           json.loads((folder / "marks.json").read_text(encoding="utf-8"))["students"]}
    check(got[ROSTER[4]] == [{"cell": f"{step}[{r},{c}]", "typed": typed, "reason":
                              f'"{typed}" has "l" after the number; write the number alone, '
                              f"such as {typed[:-1]}"}] and got[ROSTER[0]] == [],
          f"marks.json's unreadable: {got}")
    (folder / "marks.json").unlink()


def libreoffice(root, folder, folder_marks):
    soffice = shutil.which("soffice")
    if not soffice:
        print("SKIP: soffice (LibreOffice) is not installed: the spreadsheet round trip was not run")
        return False
    sheet = folder / "answers.csv"
    work = root / "lo"
    work.mkdir()
    # A LibreOffice profile of this test's own (HOME), so that a soffice run
    # by another test at the same time is not handed the conversion.
    (work / "home").mkdir()
    os.environ["HOME"] = str(work / "home")
    columns = (sheet.read_text(encoding="utf-8-sig").splitlines()[0].count('"[') +
               len(next(csv.reader([sheet.read_text(encoding="utf-8-sig").splitlines()[0]]))))
    # docs/marking.md's command line, run as it is written (every column Text),
    # for .xlsx and for .ods; and the conversion mark runs is the one it names.
    docs = (pathlib.Path(__file__).parents[2] / "docs" / "marking.md").read_text(encoding="utf-8")
    command = docs.split("  soffice --headless --infilter=")[1].split("\n  ```")[0]
    command = "soffice --headless --infilter=" + command.replace("\\\n", " ")
    check(" ".join(command.split()).endswith("--convert-to xlsx DIR/answers.csv"),
          f"the docs' command line: {command}")
    source = (pathlib.Path(__file__).parents[2] / "src" / "teach" / "answers_csv.cpp").read_text()
    check("--convert-to 'csv:Text - txt - csv (StarCalc):44,34,76,1,,0,true,true,true'" in docs and
          '"csv:Text - txt - csv (StarCalc):44,34,76,1,,0,true,true,true"' in source,
          "the conversion mark runs is the one docs/marking.md names")
    for target in ("xlsx", "ods"):
        line = command.replace("DIR/answers.csv", str(sheet)).replace("xlsx", target)
        out = subprocess.run(["bash", "-c", line], capture_output=True, text=True, cwd=work)
        made = work / f"answers.{target}"
        check(out.returncode == 0 and made.exists(), f"soffice made {made}: {out.stderr}")
        out, text = marks(folder, "--answers", str(made))
        check(out.returncode == 0 and "warning" not in out.stderr,
              f"mark --answers {made.name}, every column Text: no warning: {out.stderr}")
        check(text == folder_marks, f"marks from {made.name} equal the folders':\n{text}\n{folder_marks}")
    check(columns > 3, "answers.csv has cell columns")
    # What a General (number) import does, as docs/marking.md says.
    plain = work / "general.csv"
    plain.write_bytes(b"\xef\xbb\xbfid,name,variant,x\r\n1,\xe7\x8e\x8b,0012345678901234,0.250\r\n"
                      b"2,b,abc,\"0,042\"\r\n")
    subprocess.run([soffice, "--headless", "--infilter=CSV:44,34,76,1", "--convert-to", "xlsx",
                    "--outdir", str(work), str(plain)], capture_output=True)
    subprocess.run([soffice, "--headless", "--convert-to",
                    "csv:Text - txt - csv (StarCalc):44,34,76,1", "--outdir", str(work / "back"),
                    str(work / "general.xlsx")], capture_output=True)
    back = (work / "back" / "general.csv").read_text(encoding="utf-8")
    cells = list(csv.reader(io.StringIO(back)))
    check(cells[1][2:] == ["12345678901234", "0.25"] and cells[2][3] == "42" and cells[1][1] == "王",
          f"a General import drops 0.250's zero and reads \"0,042\" as 42 (docs/marking.md): {back}")
    general_import(soffice, work, folder, sheet)
    return True


def general_import(soffice, work, folder, sheet):
    """The filled sheet opened with its columns left Standard: marked, with a warning."""
    subprocess.run([soffice, "--headless", "--infilter=CSV:44,34,76,1", "--convert-to", "ods",
                    "--outdir", str(work / "general"), str(sheet)], capture_output=True)
    made = work / "general" / "answers.ods"
    rows = list(csv.reader(io.StringIO(sheet.read_text(encoding="utf-8-sig"))))
    # What LibreOffice (en-US) reads as a number: digits with a point, or a
    # comma it takes for a thousands separator; not −, full-width or 0.19l.
    numbers = sum(bool(re.fullmatch(r"-?\d+[.,]\d+", cell)) for row in rows[1:] for cell in row[3:])
    out, _ = marks(folder, "--answers", str(made))
    summary = (folder / "summary.md").read_text(encoding="utf-8")
    warning = (f"attn-trace: warning: {made}: {numbers} answer cell(s) are numbers in the "
               "spreadsheet, not text")
    check(numbers > 100 and warning in out.stderr and "docs/marking.md" in out.stderr,
          f"a Standard import is warned of, with its {numbers} number cells: {out.stderr}")
    check(out.returncode == 0, f"a warning, not an error: exit {out.returncode}")
    check(summary.split("## Spreadsheet\n\n")[1].split("\n")[0].endswith(
        f"answers.ods: {numbers} answer cell(s) are numbers in the spreadsheet, not text, so it "
        "may have changed what was typed (\"-0,289\" read as -289, 0.250 kept as 0.25) and the "
        "marks with it; open answers.csv again with every column's type set to Text "
        "(docs/marking.md), check those cells against the papers, save and mark again"),
          f"summary.md repeats the warning: {summary[:600]}")


def row_of(lines, name):
    return next(i for i, line in enumerate(lines) if f",{name}," in line or f',"{name}",' in line)


def sheet_habits(root, folder, lines):
    """Rows typed the ways a sheet goes wrong: decimal commas without quotes, a
    row or the whole sheet left empty, many unreadable cells."""
    def mark_with(new, name):
        path = root / name
        path.write_bytes(b"\xef\xbb\xbf" + "\r\n".join(new).encode("utf-8"))
        return run("mark", str(folder), "--force", "--answers", str(path))

    def row(name):
        text = (folder / "marks.csv").read_text(encoding="utf-8-sig")
        return next(r for r in csv.DictReader(io.StringIO(text)) if r["name"] == name)

    right = row_of(lines, ROSTER[0])
    cells = next(csv.reader([lines[right]]))
    # Typed in a text editor: -0,178 unquoted, two cells for one.
    commas = list(lines)
    commas[right] = ",".join(cells[:3] + [c.replace(".", ",") for c in cells[3:]])
    check(commas[right].count(",") > 2 * (len(cells) - 3), f"the row has split cells: {commas[right]}")
    out = mark_with(commas, "commas.csv")
    check(out.returncode == 0 and row(ROSTER[0])["total"] == row(ROSTER[0])["out of"],
          f"decimal commas without quotes, joined, cost nothing: {out.stderr} {row(ROSTER[0])}")
    commas[right] += ",x"
    out = mark_with(commas, "commas-extra.csv")
    check(out.returncode == 2 and "probably holds decimal commas typed without quotes" in out.stderr
          and '("-0,178")' in out.stderr and "delete" not in out.stderr,
          f"too many cells that joining does not explain: the likely cause, no 'delete': {out.stderr}")
    # The first student's row left empty: not handed in, said as a row.
    blank = list(lines)
    blank[right] = ",".join(cells[:3] + [""] * (len(cells) - 3))
    out = mark_with(blank, "blank-row.csv")
    feedback = (folder / students(folder)[0]["folder"] / "feedback.md").read_text(encoding="utf-8")
    summary = (folder / "summary.md").read_text(encoding="utf-8")
    check(out.returncode == 0 and row(ROSTER[0])["status"] == "not handed in" and
          "Not handed in: your row of the class spreadsheet is empty (no value typed)" in feedback and
          "blank template" not in feedback and
          "Their row of the class spreadsheet is empty: no points" in summary,
          f"an empty row: not handed in, said as a row: {feedback} {summary}")
    out = run("mark", str(folder), "--force", "--lang", "zh", "--answers", str(root / "blank-row.csv"))
    feedback = (folder / students(folder)[0]["folder"] / "feedback.md").read_text(encoding="utf-8")
    check("全班电子表格中你的那一行是空的" in feedback and "空白模板" not in feedback,
          f"the same in Chinese: {feedback}")
    # Nothing typed at all (the sheet not saved): exit 2, nothing written.
    for f in [folder / "marks.csv", folder / "summary.md"]:
        f.unlink()
    nothing = [lines[0]] + [",".join(next(csv.reader([line]))[:3]) for line in lines[1:] if line]
    out = mark_with(nothing, "nothing.csv")
    check(out.returncode == 2 and out.stderr.strip().endswith(
        f"{root / 'nothing.csv'}: no cell holds a value; type the students' numbers and save the "
        "sheet first") and not (folder / "marks.csv").exists(),
          f"a sheet with no value: exit 2, nothing written: {out.stderr}")
    # Five cells with a stray letter: feedback names three, then how many more.
    many = list(lines)
    many[right] = ",".join(cells[:3] + [c + "x" if 3 <= k < 8 else c for k, c in
                                        enumerate(cells) if k >= 3])
    out = mark_with(many, "many.csv")
    feedback = (folder / students(folder)[0]["folder"] / "feedback.md").read_text(encoding="utf-8")
    check(feedback.count("- **Not read as a number:**") == 3 and
          "- … and 2 more not read as a number." in feedback and
          # The class's count: these 5 and the unreadable habit's one.
          "6 cells could not be read as a number" in out.stdout and
          row(ROSTER[0])["unreadable cells"].count('x"') == 5,
          f"five unreadable cells: three named, 2 more: {out.stdout} {feedback}")


def error_cases(root, folder, filled):
    sheet = folder / "answers.csv"
    saved = sheet.read_bytes()
    lines = saved.decode("utf-8-sig").split("\r\n")

    def with_lines(new, name):
        path = root / name
        path.write_bytes(b"\xef\xbb\xbf" + "\r\n".join(new).encode("utf-8"))
        return path

    dup = with_lines(lines[:2] + [lines[1]] + lines[2:], "dup.csv")
    out = run("mark", str(folder), "--force", "--answers", str(dup))
    check(out.returncode == 2 and "also on line 2" in out.stderr, f"a variant on two rows: {out.stderr}")
    stranger = with_lines(lines + [",Nobody,0123456789abcdef"], "stranger.csv")
    out = run("mark", str(folder), "--force", "--answers", str(stranger))
    check(out.returncode == 2 and "0123456789abcdef" in out.stderr and "no student folder" in out.stderr,
          f"a row for no folder: {out.stderr}")
    number = with_lines(lines[:1] + [",x,1.23457E+15"], "number.csv")
    out = run("mark", str(folder), "--force", "--answers", str(number))
    check(out.returncode == 2 and "Text" in out.stderr, f"a variant made a number: {out.stderr}")
    missing = with_lines([lines[0]] + lines[2:], "missing.csv")
    out = run("mark", str(folder), "--force", "--answers", str(missing))
    text = (folder / "marks.csv").read_text(encoding="utf-8-sig")
    row = next(r for r in csv.DictReader(io.StringIO(text)) if r["name"] == ROSTER[0])
    check(out.returncode == 1 and "has no row for variant" in row["problem"],
          f"a student with no row is not marked, and says why: {row}")
    sheet_habits(root, folder, lines)
    empty = root / "bin"
    empty.mkdir()
    (root / "x.xlsx").write_bytes(b"PK")
    out = run("mark", str(folder), "--force", "--answers", str(root / "x.xlsx"),
              env=environment({"PATH": str(empty)}))
    check(out.returncode == 2 and "x.xlsx" in out.stderr and "libreoffice-calc-nogui" in out.stderr,
          f"an .xlsx without soffice: exit 2 naming the file and the fix: {out.stderr}")


def main():
    with tempfile.TemporaryDirectory() as tmp:
        root = pathlib.Path(tmp)
        folder = build_class(root)
        header = (folder / "answers.csv").read_text(encoding="utf-8-sig").splitlines()[0]
        check(header.startswith("id,name,variant,") and '"head0.weights[the,cat]"' in header,
              f"answers.csv's header: {header[:120]}")
        filled = simulate(folder)
        out, folder_marks = marks(folder)
        check(out.returncode == 0, f"mark from the folders: {out.stderr}")
        check_marks_values(folder_marks)
        folder_summary = (folder / "summary.md").read_text(encoding="utf-8")
        fill_sheet(folder / "answers.csv", filled)
        # The folders' answers.toml set aside: the sheet alone is marked.
        for sub in folder.iterdir():
            if (sub / "answers.toml").exists():
                (sub / "answers.toml").unlink()
        out, sheet_marks = marks(folder, "--answers", str(folder / "answers.csv"))
        check(out.returncode == 0, f"mark --answers answers.csv: {out.stderr}")
        check(sheet_marks == folder_marks, f"the same marks.csv:\n{sheet_marks}\n{folder_marks}")
        check((folder / "summary.md").read_text(encoding="utf-8") == folder_summary,
              "the same summary.md")
        feedback = (folder / students(folder)[4]["folder"] / "feedback.md").read_text(encoding="utf-8")
        check("unreadable" in feedback, f"the unreadable cell is in the feedback: {feedback}")
        check_unreadable(folder, filled, out)
        typed = (folder / "answers.csv").read_bytes()
        out = run("exercise", "--seed", "24", "--roster", str(root / "roster.txt"), "--out",
                  str(folder), "--force")
        check("kept" in out.stderr and "answers.csv" in out.stderr and
              (folder / "answers.csv").read_bytes() == typed,
              f"exercise --force keeps a typed answers.csv: {out.stderr}")
        ran = libreoffice(root, folder, folder_marks)
        error_cases(root, folder, filled)
    if failures:
        sys.exit(1)
    sys.exit(0 if ran else 77)


main()
