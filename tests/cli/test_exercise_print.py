#!/usr/bin/env python3
"""Printing the exercise sheets (issue 10): the class compiled with LuaLaTeX and
read back page by page with pdftotext (exit 77 = skipped without lualatex,
pdfinfo or pdftotext).

Usage: test_exercise_print.py ATTN_TRACE

For a roster with names in Chinese, Cyrillic, Polish, Spanish and with TeX's
special characters, at the default size and at a larger one, checks on the
compiled sheets.tex and keys.tex that:
  - every page carries its student's name as text (the same Unicode as the roster)
    and variant, and "page k of n" numbered per student;
  - a sheet is one page per student at the default size (two at most larger),
    a key at most two pages per head;
  - every student starts on an odd page (double-sided printing never puts two
    students on one sheet of paper), with a blank page only where needed;
  - the sheet leaves room for working (the lowest text of the page, above the
    footer, is at most 2/3 down the page);
  - a student's own sheet.tex and key.tex compile too, and nothing runs off the page.
Prints the pages per student it measured.
"""
import csv
import os
import re
import shutil
import subprocess
import sys
import tempfile

from clitest import check, failures

BIN = os.path.abspath(sys.argv[1])
SKIP = 77
NAMES = ["张伟", "José Núñez", "Łukasz Dvořák", "Алексей Смирнов", "O'Brien",
         "Ann & Bo_1 50% <b>|{x}"]
SIZES = {
    "default": ([], 1, 2),  # extra arguments, sheet pages at most, key pages per head at most
    "larger": (["--tokens", "4", "--d-model", "4", "--d-k", "2", "--heads", "2", "--causal"], 2, 2),
}


def lualatex(folder, name):
    """Compiles twice (the second run writes "page k of n"); returns the last log."""
    for _ in range(2):
        result = subprocess.run(["lualatex", "-interaction=nonstopmode", "-halt-on-error", name],
                                cwd=folder, capture_output=True, text=True, errors="replace")
        if result.returncode != 0:
            break
    check(result.returncode == 0, f"lualatex {name}: {result.stdout[-800:]}")
    log = result.stdout
    check("Overfull \\hbox" not in log, f"{name}: nothing runs off the page")
    check("Missing character" not in read(os.path.join(folder, name[:-4] + ".log")),
          f"{name}: every character has a glyph")
    check("Rerun to get" not in log and "may have changed" not in log,
          f"{name}: page references settled after two runs")
    return result.returncode == 0


def read(path):
    with open(path, encoding="utf-8", errors="replace") as f:
        return f.read()


def page_count(pdf):
    info = subprocess.run(["pdfinfo", pdf], capture_output=True, text=True).stdout
    return int(re.search(r"^Pages:\s+(\d+)", info, re.M).group(1))


def page_text(pdf, page):
    text = subprocess.run(["pdftotext", "-f", str(page), "-l", str(page), "-enc", "UTF-8", pdf, "-"],
                          capture_output=True, text=True).stdout
    return text.replace("’", "'")  # TeX typesets an apostrophe as a right quote


def lowest_text(pdf, page):
    """The lowest word above the footer, as a fraction of the page height."""
    box = subprocess.run(["pdftotext", "-bbox", "-f", str(page), "-l", str(page), pdf, "-"],
                         capture_output=True, text=True).stdout
    height = float(re.search(r'<page width="[\d.]+" height="([\d.]+)"', box).group(1))
    bottoms = [float(y) for y, word in re.findall(r'yMax="([\d.]+)">([^<]*)</word>', box)]
    body = [y for y in bottoms if y < height - 20 * 72 / 25.4]  # above the footer
    return max(body) / height


def pages_per_student(pdf, students, kind):
    """Walks the PDF: each student's pages in order, then a blank page when needed."""
    total, page, counts = page_count(pdf), 1, []
    for name, variant in students:
        check(page % 2 == 1, f"{os.path.basename(pdf)}: {name} starts on page {page}, an odd page")
        first = page_text(pdf, page)
        m = re.search(rf"{kind}, page 1 of (\d+)", first)
        check(m is not None, f"{os.path.basename(pdf)} page {page}: '{kind}, page 1 of n': {first[-200:]!r}")
        n = int(m.group(1)) if m else 1
        for k in range(1, n + 1):
            text = page_text(pdf, page)
            check(name in text, f"{os.path.basename(pdf)} page {page}: the name {name!r} as text")
            check(variant in text, f"{os.path.basename(pdf)} page {page}: the variant {variant}")
            check(f"{kind}, page {k} of {n}" in text,
                  f"{os.path.basename(pdf)} page {page}: '{kind}, page {k} of {n}'")
            for other, _ in students:
                if other != name:
                    check(other not in text, f"{os.path.basename(pdf)} page {page}: only {name}, not {other}")
            page += 1
        if n % 2 == 1:
            check(page_text(pdf, page).strip() == "",
                  f"{os.path.basename(pdf)} page {page}: the blank back of {name}'s last page")
            page += 1
        counts.append(n)
    check(page - 1 == total, f"{os.path.basename(pdf)}: {total} pages, walked {page - 1}")
    return counts


def main():
    for tool in ("lualatex", "pdfinfo", "pdftotext"):
        if shutil.which(tool) is None:
            print(f"SKIPPED: {tool} is not installed (scripts/setup --with-test-tools installs "
                  "texlive-luatex, texlive-latex-recommended, fonts-noto-cjk and poppler-utils)")
            return SKIP
    with tempfile.TemporaryDirectory() as tmp:
        roster = os.path.join(tmp, "roster.txt")
        with open(roster, "w", encoding="utf-8") as f:
            f.write("\n".join(NAMES) + "\n")
        for size, (extra, sheet_most, key_most_per_head) in SIZES.items():
            out = os.path.join(tmp, size)
            result = subprocess.run([BIN, "exercise", "--seed", "10", "--roster", roster, *extra,
                                     "--format", "latex", "--out", out], capture_output=True, text=True)
            if result.returncode != 0:
                raise SystemExit(f"exercise failed: {result.stderr}")
            with open(os.path.join(out, "roster.csv"), encoding="utf-8", newline="") as f:
                rows = list(csv.DictReader(f))
            students = [(r["name"], r["variant"]) for r in rows]
            check([s[0] for s in students] == NAMES, f"roster.csv lists the roster: {students}")
            heads = int(extra[extra.index("--heads") + 1]) if "--heads" in extra else 1
            for doc, kind, most in (("sheets", "Sheet", sheet_most), ("keys", "Answer key", key_most_per_head * heads)):
                if not lualatex(out, f"{doc}.tex"):
                    continue
                pdf = os.path.join(out, f"{doc}.pdf")
                counts = pages_per_student(pdf, students, kind)
                print(f"{size}: {doc}.pdf has {page_count(pdf)} pages; pages per student {counts}")
                check(all(c <= most for c in counts), f"{size} {doc}: at most {most} page(s) per student: {counts}")
                if doc == "sheets" and size == "default":
                    check(all(c == 1 for c in counts), f"default sheets: one page per student: {counts}")
                    room = [lowest_text(pdf, p) for p in range(1, page_count(pdf) + 1, 2)]
                    print(f"{size}: the sheets' text ends at {', '.join(f'{r:.0%}' for r in room)} of the page")
                    check(all(r <= 2 / 3 for r in room), f"room for working below the grids: {room}")
            if size == "default":  # one student's own files compile the same way
                folder = os.path.join(out, rows[0]["folder"])
                for name in ("sheet.tex", "key.tex"):
                    if lualatex(folder, name):
                        pdf = os.path.join(folder, name[:-4] + ".pdf")
                        text = page_text(pdf, 1)
                        check(NAMES[0] in text and "page 1 of" in text, f"{folder}/{name}: name and page")
    print(f"{len(failures)} failure(s)" if failures else "all printing checks passed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
