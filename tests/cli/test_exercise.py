#!/usr/bin/env python3
"""Command-line tests of `attn-trace exercise` (stdlib only).

Usage: test_exercise.py ATTN_TRACE [main|verify]
  main    reproducibility, roster stability, names in any script (NFC, folders,
          roster.csv, a roster that is not UTF-8), refusals and bad input, the
          key against `run --format json`, worked cells against `run --expand`,
          Markdown tables and self-contained HTML;
  verify  the key written as an answers file verifies all ok, and one perturbed
          value gives exactly one wrong at that cell.
"""
import csv
import hashlib
import html.parser
import json
import math
import os
import re
import shutil
import sys
import tempfile
import tomllib

from clitest import check, failures, runner

BIN = os.path.abspath(sys.argv[1])
MODE = sys.argv[2] if len(sys.argv) > 2 else "main"
SKIP = 77


run = runner(BIN)


def generate(out, *args, env=None):
    result = run("exercise", *args, "--out", out, env=env)
    if result.returncode != 0:
        raise SystemExit(f"exercise {' '.join(args)} failed ({result.returncode}): {result.stderr}")
    return result


def tree(folder):
    """Every file under `folder`, relative path -> bytes."""
    files = {}
    for root, _, names in os.walk(folder):
        for name in names:
            path = os.path.join(root, name)
            with open(path, "rb") as f:
                files[os.path.relpath(path, folder)] = f.read()
    return files


def read(path):
    with open(path, encoding="utf-8") as f:
        return f.read()


def markdown_tables(text):
    """`### ... `id` ...` headings -> the table below each: list of (row label, [cells])."""
    tables, current = {}, None
    for line in text.splitlines():
        heading = re.match(r"^### (?:\d+\. )?`([^`]+)`", line)
        if heading:
            current = heading.group(1)
            tables[current] = []
        elif current and line.startswith("| **"):
            cells = [c.strip() for c in line.strip().strip("|").split(" | ")]
            tables[current].append((cells[0], cells[1:]))
        elif current and line.startswith("## "):
            current = None
    return tables


def key_decimals(key_text):
    return int(re.search(r"answers to (\d+) decimals", key_text).group(1))


def fmt_fixed(value, decimals):
    if isinstance(value, str):  # "-inf", "inf", "nan" as the JSON writes them
        return value
    text = f"{value:.{decimals}f}"
    return text[1:] if re.fullmatch(r"-0\.?0*", text) else text


CONFIGS = [
    ["--seed", "1", "--students", "3"],
    ["--seed", "2", "--students", "2", "--tokens", "4", "--heads", "2", "--causal",
     "--key-padding", "--ask", "Q", "K", "V", "scores", "scaled", "masked", "exp", "row_sum",
     "weights", "context", "head1.weights", "concat"],
    ["--seed", "3", "--students", "2", "--tokens", "2", "--cross", "3", "--decimals", "2",
     "--d-model", "2", "--d-k", "1"],
]


def test_reproducible(tmp):
    args = ["--seed", "42", "--students", "3", "--causal", "--format", "markdown", "latex", "html"]
    generate(os.path.join(tmp, "a"), *args)
    generate(os.path.join(tmp, "elsewhere-b"), *args)
    a, b = tree(os.path.join(tmp, "a")), tree(os.path.join(tmp, "elsewhere-b"))
    check(len(a) == 3 * 8 + 4 + 3,
          f"3 students × 8 files (answers.toml too) + 4 combined + roster.csv, answers.csv and "
          f"index: got {len(a)}")
    check(a == b, "same arguments and seed give byte-identical files")
    # Another machine's BLAS: OpenBLAS's oldest x86-64 kernels (no FMA) sum the
    # products differently in the last bits; the printed files must not change.
    generate(os.path.join(tmp, "prescott"), *args, env={**os.environ, "OPENBLAS_CORETYPE": "Prescott"})
    check(tree(os.path.join(tmp, "prescott")) == a, "other BLAS kernels, byte-identical files")
    generate(os.path.join(tmp, "c"), "--seed", "43", "--students", "3", "--causal")
    c = tree(os.path.join(tmp, "c"))
    check(a["student-01/lesson.toml"] != c["student-01/lesson.toml"], "another seed, other numbers")
    lessons = [tomllib.loads(a[f"student-0{i}/lesson.toml"].decode()) for i in (1, 2, 3)]
    xs = [l["input"]["X"] for l in lessons]
    check(len({json.dumps(x) for x in xs}) == 3, "each student gets their own X")
    for lesson in lessons:
        for name in ("X",):
            for row in lesson["input"][name]:
                check(all(abs(v) <= 1 and abs(v * 10 - round(v * 10)) < 1e-9 for v in row),
                      f"X on the 1-decimal grid in [-1, 1]: {row}")


MASK64 = (1 << 64) - 1


def mix64(z):
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK64
    return z ^ (z >> 31)


def fnv1a64(data):
    h = 0xCBF29CE484222325
    for byte in data:
        h = ((h ^ byte) * 0x100000001B3) & MASK64
    return h


class SplitMix64:
    """docs/exercises.md's generator, written again from the page, in Python integers."""

    def __init__(self, state):
        self.state = state

    def next(self):
        self.state = (self.state + 0x9E3779B97F4A7C15) & MASK64
        return mix64(self.state)

    def below(self, bound):
        threshold = (1 << 64) % bound
        while True:
            x = self.next()
            if x >= threshold:
                return x % bound


def replay_draw(seed, name, draw_number, shapes, decimals):
    """The inputs of draw `draw_number` of a student's stream, as the docs define it."""
    rng = SplitMix64(mix64(mix64(seed) ^ fnv1a64(name.encode("utf-8"))))
    units = 10 ** decimals
    for _ in range(draw_number):
        draw = [[[(rng.below(2 * units + 1) - units) / units for _ in range(cols)]
                 for _ in range(rows)] for rows, cols in shapes]
    return draw


def test_generator_replayed(tmp):
    """The lesson files hold exactly the draws the documented algorithm gives."""
    for n, config in enumerate(CONFIGS):
        out = os.path.join(tmp, f"g{n}")
        generate(out, *config)
        seed = int(config[config.index("--seed") + 1])
        for student in sorted(d for d in os.listdir(out) if os.path.isdir(os.path.join(out, d))):
            lesson = tomllib.loads(read(os.path.join(out, student, "lesson.toml")))
            inputs, weights = lesson["input"], lesson["weights"]
            draw_number = int(re.search(r"draw (\d+)", lesson["lesson"]["source"]).group(1))
            name = re.search(r"Attention exercise: (.*)", lesson["lesson"]["title"]).group(1)
            decimals = int(config[config.index("--decimals") + 1]) if "--decimals" in config else 1
            matrices = [inputs["X"]] + ([inputs["memory"]] if "memory" in inputs else []) + [
                weights["W_Q"], weights["W_K"], weights["W_V"]]
            shapes = [(len(m), len(m[0])) for m in matrices]
            check(replay_draw(seed, name, draw_number, shapes, decimals) == matrices,
                  f"config {n} {student}: draw {draw_number} replayed from the docs gives the lesson's inputs")


def test_roster_stability(tmp):
    for folder, names in (("r1", "Ada Lovelace\nBob\n"), ("r2", "# 3B\nZed\nAda Lovelace\n\nCleo\n")):
        os.makedirs(os.path.join(tmp, folder))
        with open(os.path.join(tmp, folder, "roster.txt"), "w", encoding="utf-8") as f:
            f.write(names)
        generate(os.path.join(tmp, folder, "out"), "--seed", "9", "--roster",
                 os.path.join(tmp, folder, "roster.txt"))
    small, large = tree(os.path.join(tmp, "r1", "out")), tree(os.path.join(tmp, "r2", "out"))
    for name in ("lesson.toml", "sheet.md", "key.md"):
        check(small[f"ada-lovelace/{name}"] == large[f"ada-lovelace/{name}"],
              f"Ada's {name} does not change when other names are added")
    check(small["bob/lesson.toml"] != small["ada-lovelace/lesson.toml"], "Bob differs from Ada")
    sheet = small["ada-lovelace/sheet.md"].decode()
    check(sheet.startswith("# Attention exercise: Ada Lovelace\n"), "the name is on the sheet")
    index = large["index.md"].decode()
    check(all(n in index for n in ("Zed", "Ada Lovelace", "Cleo")), "the index lists every student")


def test_refusals(tmp):
    out = os.path.join(tmp, "busy")
    os.makedirs(out)
    with open(os.path.join(out, "notes.txt"), "w") as f:
        f.write("mine")
    result = run("exercise", "--seed", "1", "--out", out)
    check(result.returncode == 2, f"non-empty --out: exit 2, got {result.returncode}")
    check("not empty" in result.stderr and "--force" in result.stderr,
          f"the refusal says why and names --force: {result.stderr}")
    check(sorted(os.listdir(out)) == ["notes.txt"], "nothing written into the non-empty folder")
    result = run("exercise", "--seed", "1", "--out", out, "--force")
    check(result.returncode == 0, f"--force writes: {result.stderr}")
    check(read(os.path.join(out, "notes.txt")) == "mine", "--force leaves other files alone")
    check(os.path.exists(os.path.join(out, "student-01", "key.md")), "--force wrote the key")

    # A target that cannot be written (a folder where student-02's key goes):
    # --force with another seed writes nothing, so no folder mixes two seeds.
    mixed = os.path.join(tmp, "mixed")
    generate(mixed, "--seed", "1", "--students", "2")
    os.remove(os.path.join(mixed, "student-02", "key.md"))
    os.makedirs(os.path.join(mixed, "student-02", "key.md"))
    before = tree(mixed)
    result = run("exercise", "--seed", "2", "--students", "2", "--out", mixed, "--force")
    check(result.returncode == 2 and "student-02/key.md: is a folder" in result.stderr
          and "nothing was written" in result.stderr,
          f"an unwritable target: exit 2 naming it: {result.stderr}")
    check(tree(mixed) == before, "no file of seed 2 was written beside the files of seed 1")
    check(not [n for n in os.listdir(os.path.join(mixed, "student-01")) if ".tmp-" in n],
          "no temporary file left")
    # Written again with the same seed, every file is already up to date.
    os.rmdir(os.path.join(mixed, "student-02", "key.md"))
    result = run("exercise", "--seed", "1", "--students", "2", "--out", mixed, "--force")
    check(result.returncode == 0 and "wrote 1 files" in result.stdout
          and "were already up to date" in result.stdout,
          f"the same seed again: only the missing key is written: {result.stdout}")

    roster = os.path.join(tmp, "dup.txt")
    with open(roster, "w") as f:
        f.write("Ada\nBob\nAda\n")
    a_file = os.path.join(tmp, "a-file")
    with open(a_file, "w") as f:
        f.write("x")
    bad = [
        (["--tokens", "9"], "--tokens: Value 9 not in range 1 to 8"),
        (["--ask", "softmax"], "head0.weights"),
        (["--ask", "X"], "--ask X"),
        (["--decimals", "3"], "--decimals: Value 3 not in range 0 to 2"),
        (["--heads", "3", "--d-k", "3"], "heads × d_k"),
        (["--tokens", "1", "--key-padding"], "--key-padding"),
        (["--roster", os.path.join(tmp, "missing.txt")], "missing.txt"),
        (["--roster", roster], "dup.txt:3"),
        (["--students", "2", "--roster", roster], "excludes"),
        (["--format", "pdf"], "pdf"),
        (["--cross", "0"], "--cross: Value 0 not in range 1 to 8"),
        (["--heads", "5"], "--heads: Value 5 not in range 1 to 4"),
        (["--answer-decimals", "7"], "--answer-decimals"),
    ]
    for args, message in bad:
        target = os.path.join(tmp, "never")
        result = run("exercise", "--seed", "1", *args, "--out", target)
        check(result.returncode == 2, f"{args}: exit 2, got {result.returncode} {result.stderr}")
        check(message in result.stderr, f"{args}: message names {message!r}: {result.stderr}")
        check(not os.path.exists(target), f"{args}: nothing written")
    result = run("exercise", "--seed", "1", "--out", a_file)
    check(result.returncode == 2 and "not a folder" in result.stderr, f"--out a file: {result.stderr}")
    result = run("exercise", "--out", os.path.join(tmp, "never"))
    check(result.returncode == 2 and "--seed" in result.stderr, f"--seed is required: {result.stderr}")
    # A seed past 2^64 - 1 is an error, never clamped; the largest one is a seed.
    for seed in ["18446744073709551616", "-1", "1e3", "0x10"]:
        result = run("exercise", "--seed", seed, "--out", os.path.join(tmp, "never"))
        check(result.returncode == 2 and "a seed is a whole number from 0 to 18446744073709551615"
              in result.stderr and not os.path.exists(os.path.join(tmp, "never")),
              f"--seed {seed}: exit 2 naming the range: {result.stderr}")
    result = run("exercise", "--seed", "18446744073709551615", "--out", os.path.join(tmp, "max"))
    check(result.returncode == 0 and "--seed 18446744073709551615 " in
          open(os.path.join(tmp, "max", "index.md"), encoding="utf-8").read(),
          f"the largest seed is used as given: {result.stderr}")
    # --help shows the ranges that are valid.
    result = run("exercise", "--help")
    for option, shown in [("--tokens", "[1 - 8]"), ("--heads", "[1 - 4]"), ("--decimals", "[0 - 2]"),
                          ("--cross", "[1 - 8]"), ("--answer-decimals", "[2 - 6]")]:
        line = next((l for l in result.stdout.splitlines() if l.strip().startswith(option + " ")), "")
        check(shown in line, f"--help shows {option} {shown}: {line!r}")


def test_key_equals_run(tmp):
    for n, config in enumerate(CONFIGS):
        out = os.path.join(tmp, f"k{n}")
        generate(out, *config)
        for student in sorted(d for d in os.listdir(out) if os.path.isdir(os.path.join(out, d))):
            lesson = os.path.join(out, student, "lesson.toml")
            key = read(os.path.join(out, student, "key.md"))
            sheet = read(os.path.join(out, student, "sheet.md"))
            decimals = key_decimals(key)
            result = run("run", lesson, "--format", "json")
            check(result.returncode == 0, f"run {lesson}: {result.stderr}")
            steps = {s["id"]: s for s in json.loads(result.stdout)["steps"]}
            tables = markdown_tables(key.split("## Worked cells")[0])
            check(len(tables) >= 7, f"{student}: the key shows every step ({list(tables)})")
            for step_id, rows in tables.items():
                if step_id in ("X", "M", "W_Q", "W_K", "W_V"):
                    continue
                data = steps[step_id]["data"]
                check(len(rows) == len(data), f"{student} {step_id}: rows")
                for r, (_, cells) in enumerate(rows):
                    for c, cell in enumerate(cells):
                        want = fmt_fixed(data[r][c], decimals)
                        check(cell == want, f"{student} {step_id}[{r},{c}]: key {cell}, run {want}")
                        if not isinstance(data[r][c], str):
                            check(abs(float(cell) - data[r][c]) <= 0.5 * 10 ** -decimals + 1e-12,
                                  f"{student} {step_id}[{r},{c}] within half a unit")
            # The sheet: blank grids for the asked steps only, the inputs exactly as in the lesson.
            asked = re.findall(r"^### \d+\. `([^`]+)`", sheet, re.M)
            starred = re.findall(r"^### `([^`]+)` — .* ★$", key, re.M)
            check(asked == starred and asked, f"{student}: sheet asks {asked}, key stars {starred}")
            sheet_tables = markdown_tables(re.sub(r"^\*\*(.+?)\*\* — ", r"### `\1` — ", sheet, flags=re.M))
            check(all(cell == "" for step in asked for _, cells in sheet_tables[step] for cell in cells),
                  f"{student}: the asked grids are blank")
            x = tomllib.loads(read(lesson))["input"]["X"]
            shown = [[float(v) for v in cells] for _, cells in sheet_tables["X"]]
            check(shown == x, f"{student}: the sheet's X is the lesson's X")
            # Each worked cell is what `run --expand` prints for that cell and step.
            for step_id, r, c, line in re.findall(
                    r"^### `([^`]+)` \[(\d+), (\d+)\].*\n\n(`.*`)$", key, re.M):
                expand = run("run", lesson, "--expand", f"{r},{c}", "--precision",
                             str(decimals + 2), "--format", "markdown", "--step", step_id)
                check(expand.returncode == 0 and line in expand.stdout,
                      f"{student} {step_id}[{r},{c}]: worked cell = run --expand: {line}")
            check(key.count("\n### `") - len(tables) == len(asked), f"{student}: one worked cell per asked step")


class TagChecker(html.parser.HTMLParser):
    VOID = {"meta", "br", "hr", "img", "link", "input"}

    def __init__(self):
        super().__init__()
        self.stack, self.errors, self.sections = [], [], 0

    def handle_starttag(self, tag, attrs):
        if ("class", "student") in attrs:
            self.sections += 1
        if tag not in self.VOID:
            self.stack.append(tag)

    def handle_endtag(self, tag):
        if not self.stack or self.stack.pop() != tag:
            self.errors.append(tag)


def test_html_and_markdown(tmp):
    out = os.path.join(tmp, "h")
    generate(out, "--seed", "5", "--students", "3", "--key-padding", "--format", "html", "markdown")
    for name in ("sheets.html", "keys.html", "student-02/sheet.html", "student-02/key.html"):
        text = read(os.path.join(out, name))
        for external in ("http:", "https:", "src=", "<link", "@import", "<script", "url("):
            check(external not in text, f"{name} is self-contained (no {external})")
        check("@media print" in text and "break-after: page" in text, f"{name}: print CSS")
        parser = TagChecker()
        parser.feed(text)
        check(not parser.errors and not parser.stack, f"{name}: tags balanced {parser.errors}")
        check(parser.sections == (3 if "/" not in name else 1), f"{name}: one section per student")
    for name in ("student-01/sheet.md", "student-01/key.md", "index.md"):
        header = None
        for line in read(os.path.join(out, name)).splitlines():
            if not line.startswith("|"):
                header = None
                continue
            cells = line.count(" |") if header is None else header
            if header is None:
                header = cells
            check(line.count(" |") == header or line.startswith("|---"),
                  f"{name}: every table row has the header's cells: {line}")


def write_roster(path, names, encoding="utf-8"):
    with open(path, "w", encoding=encoding, newline="\n") as f:
        f.write("".join(n + "\n" for n in names))


def test_unicode_names(tmp):
    """NFC and NFD spellings are one student; folders readable in any script; roster.csv."""
    import unicodedata
    names = ["张伟", "José Núñez", "Łukasz Dvořák", "Алексей Смирнов", "O'Brien", "Smith, \"Jo\""]
    folders = ["张伟", "josé-núñez", "łukasz-dvořák", "алексей-смирнов", "o-brien", "smith-jo"]
    runs = {}
    for form in ("NFC", "NFD"):
        os.makedirs(os.path.join(tmp, form))
        roster = os.path.join(tmp, form, "class.txt")  # one file name: the same command line
        write_roster(roster, [unicodedata.normalize(form, n) for n in names])
        out = os.path.join(tmp, f"u-{form}")
        generate(out, "--seed", "12", "--roster", roster, "--format", "markdown", "html")
        runs[form] = tree(out)
        with open(os.path.join(out, "roster.csv"), encoding="utf-8", newline="") as f:
            rows = list(csv.reader(f))
        check(rows[0] == ["name", "folder", "variant", "fingerprint"],
              f"{form}: roster.csv header: {rows[0]}")
        check([r[0] for r in rows[1:]] == names, f"{form}: roster.csv names, in NFC: {rows[1:]}")
        check([r[1] for r in rows[1:]] == folders, f"{form}: roster.csv folders: {rows[1:]}")
        for name, folder, variant, fingerprint in rows[1:]:
            lesson_path = os.path.join(out, folder, "lesson.toml")
            with open(lesson_path, "rb") as f:
                # The file as exercise writes it: LF line ends, nothing to normalise.
                check(fingerprint == "sha256:" + hashlib.sha256(f.read()).hexdigest(),
                      f"{form}: {name}'s fingerprint is the SHA-256 of lesson.toml (hashlib)")
            lesson = tomllib.loads(read(lesson_path))
            check(f"variant {variant}," in lesson["lesson"]["source"], f"{form}: {name}'s variant")
            check(re.fullmatch(r"[A-Za-z0-9._-]+", lesson["lesson"]["id"]) is not None,
                  f"{form}: {name}'s lesson id is a valid id: {lesson['lesson']['id']}")
            result = run("run", os.path.join(out, folder, "lesson.toml"), "--summary")
            check(result.returncode == 0, f"{form}: {folder}/lesson.toml runs: {result.stderr}")
        index = runs[form]["index.md"].decode()
        check("roster.csv" in index, f"{form}: index.md mentions roster.csv")
    nfc, nfd = runs["NFC"], runs["NFD"]
    check(nfc == nfd, f"NFD roster: byte-identical files: {sorted(p for p in nfc if nfc[p] != nfd.get(p))}")
    # A student's folder does not depend on the rest of the roster.
    os.makedirs(os.path.join(tmp, "alone"))
    alone = os.path.join(tmp, "alone", "class.txt")
    write_roster(alone, ["José Núñez"])
    generate(os.path.join(tmp, "u-alone"), "--seed", "12", "--roster", alone, "--format", "markdown",
             "html")
    check(tree(os.path.join(tmp, "u-alone"))["josé-núñez/lesson.toml"] == nfc["josé-núñez/lesson.toml"],
          "José's folder and lesson are the same on a roster of one")
    # Numbered students: a folder that does not depend on how many there are.
    generate(os.path.join(tmp, "n120"), "--seed", "12", "--students", "120", "--ask", "scores")
    listing = os.listdir(os.path.join(tmp, "n120"))
    check("student-05" in listing and "student-100" in listing and "student-005" not in listing,
          "--students 120: student-05 ... student-99, student-100 ...")


def test_roster_errors(tmp):
    latin1 = os.path.join(tmp, "latin1.txt")
    write_roster(latin1, ["Ada", "José Núñez"], encoding="latin-1")
    result = run("exercise", "--seed", "1", "--roster", latin1, "--out", os.path.join(tmp, "never"))
    check(result.returncode == 2, f"a Latin-1 roster: exit 2, got {result.returncode}")
    check("latin1.txt:2: this line is not UTF-8" in result.stderr and "save the roster as UTF-8"
          in result.stderr, f"a Latin-1 roster names the file and line: {result.stderr}")
    clash = os.path.join(tmp, "clash.txt")
    write_roster(clash, ["Ana B", "Bob", "ana-b"])
    result = run("exercise", "--seed", "1", "--roster", clash, "--out", os.path.join(tmp, "never"))
    check(result.returncode == 2 and "clash.txt:3" in result.stderr and "line 1" in result.stderr
          and "ana-b" in result.stderr, f"two names, one folder: both lines named: {result.stderr}")
    # An id,name roster: every bad row is exit 2 naming the file, the line and the fix.
    for rows, where, words in [
            ("id,name\r\n2024001,Ada\r\n2024001,Bob\r\n", "ids.csv:3",
             "ID 2024001 is already on line 2"),
            ("id,name\r\n2024001,Ada\r\n,Bob\r\n", "ids.csv:3", "the ID of \"Bob\" is empty"),
            ("id,name\r\n" + "9" * 33 + ",Ada\r\n", "ids.csv:2", "33 characters long (at most 32)"),
            ("id,name\r\n20\x0724,Ada\r\n", "ids.csv:2", "has a control character"),
            ("id,name\r\n2024 001,Ada\r\n", "ids.csv:2", "has the character ' '")]:
        ids = os.path.join(tmp, "ids.csv")
        with open(ids, "w", encoding="utf-8", newline="") as f:
            f.write(rows)
        result = run("exercise", "--seed", "1", "--roster", ids, "--out",
                     os.path.join(tmp, "never"))
        check(result.returncode == 2 and f"{where}: " in result.stderr and words in result.stderr
              and "\x07" not in result.stderr,
              f"id roster {rows!r}: exit 2 naming {where} and {words!r}: {result.stderr}")
    check(not os.path.exists(os.path.join(tmp, "never")), "nothing written for a bad roster")


def answers_toml(tables, asked, decimals, perturb=None):
    """The key's values of the asked steps as an answers file (strings keep the decimals)."""
    out = []
    for step in asked:
        rows = []
        for r, (_, cells) in enumerate(tables[step]):
            values = []
            for c, cell in enumerate(cells):
                if perturb == (step, r, c):
                    cell = f"{float(cell) + 0.1:.{decimals}f}"
                values.append(json.dumps(cell))
            rows.append("[" + ", ".join(values) + "]")
        out.append(f'[[answer]]\nstep = "{step}"\nvalues = [{", ".join(rows)}]\n')
    return "\n".join(out)


def test_verify(tmp):
    for n, config in enumerate(CONFIGS[:2]):
        out = os.path.join(tmp, f"v{n}")
        generate(out, *config)
        student = os.path.join(out, "student-01")
        key = read(os.path.join(student, "key.md"))
        decimals = key_decimals(key)
        tables = markdown_tables(key.split("## Worked cells")[0])
        asked = re.findall(r"^### `([^`]+)` — .* ★$", key, re.M)  # masked cells as "-inf"
        answers = os.path.join(student, "answers.toml")
        with open(answers, "w") as f:
            f.write(answers_toml(tables, asked, decimals))
        lesson = os.path.join(student, "lesson.toml")
        result = run("verify", lesson, "--answers", answers, "--format", "json")
        check(result.returncode == 0, f"config {n}: the key verifies (exit {result.returncode}): "
                                      f"{result.stdout[-800:]} {result.stderr}")
        report = json.loads(result.stdout) if result.stdout.strip().startswith("{") else {"answers": []}
        statuses = {a["status"] for a in report["answers"]}
        check(statuses == {"ok"}, f"config {n}: every answer ok, got {statuses}")
        check(report.get("first_wrong") is None, f"config {n}: no first wrong step")
        cells = sum(len(cells) for s in asked for _, cells in tables[s])
        check(len(report["answers"]) in (len(asked), cells), f"config {n}: one report per answer or cell")

        target = (asked[-2], 1, 0)  # the weights (or the step before the last), row 1, column 0
        with open(answers, "w") as f:
            f.write(answers_toml(tables, asked, decimals, perturb=target))
        result = run("verify", lesson, "--answers", answers, "--format", "json")
        check(result.returncode == 1, f"config {n}: a perturbed value makes verify exit 1")
        report = json.loads(result.stdout)
        wrong = [a for a in report["answers"] if a["status"] == "wrong"]
        check(len(wrong) == 1, f"config {n}: exactly one wrong, got {len(wrong)}: {wrong}")
        if wrong:
            check(wrong[0]["step"] == target[0] and wrong[0].get("cell") == [1, 0],
                  f"config {n}: the wrong one is {target}: {wrong[0]}")
        check(report["first_wrong"] == {"step": target[0], "cell": [1, 0]},
              f"config {n}: first_wrong names the cell: {report['first_wrong']}")
    return 0


def main():
    with tempfile.TemporaryDirectory() as tmp:
        if MODE == "verify":
            status = test_verify(tmp)
        else:
            test_reproducible(tmp)
            test_generator_replayed(tmp)
            test_roster_stability(tmp)
            test_unicode_names(tmp)
            test_roster_errors(tmp)
            test_refusals(tmp)
            test_key_equals_run(tmp)
            test_html_and_markdown(tmp)
            status = 0
    if status == SKIP:
        return SKIP
    print(f"{len(failures)} failure(s)" if failures else "all exercise checks passed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
