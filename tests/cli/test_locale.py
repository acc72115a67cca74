#!/usr/bin/python3
"""No locale changes a reproducible output (docs/chinese.md, "Which outputs
follow which"). Golden files, `run` in every document format, `check`'s and
`verify`'s JSON, the PyTorch export, `stats`' JSON, a class's exercise sheets,
keys, lesson files, answers templates, index, roster and Moodle bank, and
`mark`'s marks.csv, marks.json, summary and feedback are written under
LANG = LC_ALL = C.UTF-8, zh_CN.UTF-8 and de_DE.UTF-8 (a decimal-comma locale)
and compared byte for byte; with --lang zh, the same again, now with Chinese in
the keys and the marks. The text for the terminal follows the environment:
Chinese under zh_CN.UTF-8, and not one byte changed by de_DE.UTF-8.

The locales are generated with localedef into a folder of the test's own and
found through LOCPATH (no root needed; Debian's package locales holds their
sources), and each is shown to be really in effect (`locale`, and coreutils'
printf writing 0,5 under de_DE.UTF-8) before anything is compared. Skipped
(exit 77) without localedef or the locale sources.

Usage: test_locale.py PATH/TO/attn-trace
"""
import csv
import io
import json
import os
import pathlib
import re
import shlex
import shutil
import subprocess
import sys
import tempfile

from clitest import check, failures

BIN = os.path.abspath(sys.argv[1])
HERE = pathlib.Path(__file__).resolve().parent
ANSWERS = str(HERE / "verify" / "document-000.toml")
SOURCES = pathlib.Path("/usr/share/i18n/locales")  # Debian's package locales
LOCALES = ("C.UTF-8", "zh_CN.UTF-8", "de_DE.UTF-8")
GENERATED = ("de_DE.UTF-8", "zh_CN.UTF-8")  # C.UTF-8 comes with libc
# What libc says once each locale is loaded: charmap, decimal point,
# international currency symbol, and what a setlocale()-calling printf writes.
IN_EFFECT = {
    "C.UTF-8": ("UTF-8", ".", "", "0.5"),
    "zh_CN.UTF-8": ("UTF-8", ".", "CNY ", "0.5"),
    "de_DE.UTF-8": ("UTF-8", ",", "EUR ", "0,5"),
}
ROSTER = "Alice\n张伟\nZoë Müller\nБорис Петров\n"
LESSONS = ("river-bank", "two-heads", "causal-decoder", "fill-zero-fails")
NOTE_EN = "the tool computes it stably"
NOTE_ZH = "工具以数值稳定的方式计算"


def environment(locale_name, locpath):
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("LC_") and k not in ("LANG", "LANGUAGE", "LOCPATH")}
    env.update(LANG=locale_name, LC_ALL=locale_name, LOCPATH=locpath)
    return env


def generate_locales(folder):
    localedef = shutil.which("localedef")
    missing = [name for name in GENERATED if not (SOURCES / name.split(".")[0]).is_file()]
    if not localedef or missing:
        print(f"SKIPPED: no localedef or no locale sources for {missing} in {SOURCES} "
              "(apt-get install locales)")
        sys.exit(77)
    jobs = [(name, subprocess.Popen([localedef, "-i", name.split(".")[0], "-f", "UTF-8",
                                     str(folder / name)],
                                    stdout=subprocess.PIPE, stderr=subprocess.STDOUT))
            for name in GENERATED]
    for name, job in jobs:
        output = job.communicate()[0].decode(errors="replace")
        # localedef exits 1 when it wrote the locale with warnings only.
        check(job.returncode in (0, 1) and (folder / name / "LC_NUMERIC").is_file(),
              f"localedef {name} (exit {job.returncode}): {output}")


def check_in_effect(locale_name, env):
    """libc loads the locale: no complaint from `locale`, and its own data shown."""
    locale_bin = shutil.which("locale")
    r = subprocess.run([locale_bin, "charmap"], env=env, capture_output=True, text=True)
    k = subprocess.run([locale_bin, "-k", "decimal_point", "int_curr_symbol"], env=env,
                       capture_output=True, text=True)
    printf = subprocess.run(["/usr/bin/printf", "%.1f", "0.5"], env=env, capture_output=True,
                            text=True)
    seen = (r.stdout.strip(), re.search(r'decimal_point="(.*)"', k.stdout),
            re.search(r'int_curr_symbol="(.*)"', k.stdout), printf.stdout)
    seen = (seen[0], seen[1] and seen[1].group(1), seen[2] and seen[2].group(1), seen[3])
    return check(r.stderr + k.stderr + printf.stderr == "" and seen == IN_EFFECT[locale_name],
                 f"{locale_name} is not in effect: charmap, decimal point, currency, printf "
                 f"{seen} (expected {IN_EFFECT[locale_name]}); {r.stderr}{k.stderr}"
                 f"{printf.stderr}")


def answers_text(template, trace):
    """A student's answers: head0.scores right to 3 decimals, head0.scaled
    written unscaled (a known mistake), the rest blank."""
    header = "".join(line + "\n" for line in template.splitlines()
                     if line.startswith(("student = ", "variant = ")))
    scores = next(s for s in trace["steps"] if s["id"] == "head0.scores")["data"]
    rows = ",\n  ".join("[" + ", ".join(f'"{v:.3f}"' for v in row) + "]" for row in scores)
    return header + "".join(f'\n[[answer]]\nstep = "{step}"\nvalues = [\n  {rows},\n]\n'
                            for step in ("head0.scores", "head0.scaled"))


def fill_class(class_dir, env, fills):
    """The second student answers (the same bytes in every locale: `fills` is
    made once), the last one hands in a file TOML cannot read, the others
    leave their templates blank."""
    rows = list(csv.DictReader(io.StringIO((class_dir / "roster.csv").read_text("utf-8"))))
    answered, broken = rows[1]["folder"], rows[-1]["folder"]
    if class_dir.name not in fills:
        template = (class_dir / answered / "answers.toml").read_text("utf-8")
        r = subprocess.run([BIN, "run", str(class_dir / answered / "lesson.toml"), "--format",
                            "json", "--step", "head0.scores"], env=env, capture_output=True)
        fills[class_dir.name] = answers_text(template, json.loads(r.stdout))
    (class_dir / answered / "answers.toml").write_text(fills[class_dir.name], "utf-8")
    (class_dir / broken / "answers.toml").write_text('student = "x"\n[[answer]\n', "utf-8")


def reproducible_outputs(locale_name, env, work, fills):
    """Every reproducible output of one locale: name -> bytes."""
    work.mkdir()
    out = {}

    def run(*args, name=None, code=0):
        r = subprocess.run([BIN, *args], cwd=work, env=env, capture_output=True)
        check(r.returncode == code, f"{locale_name}: {' '.join(args)}: exit {r.returncode}, "
              f"expected {code}: {r.stderr.decode(errors='replace')[:400]}")
        if name:
            out[name] = r.stdout

    run("golden", "river-bank", "two-heads", "causal-decoder", "--out", "golden-few")
    run("golden", "--all", "--out", "golden-all")
    for lesson in LESSONS:
        for fmt in ("json", "markdown", "latex", "html", "svg"):
            run("run", lesson, "--format", fmt, name=f"run {lesson} --format {fmt}")
        for fmt in ("json", "markdown", "latex", "html"):
            run("run", lesson, "--format", fmt, "--expand", "0,1",
                name=f"run {lesson} --format {fmt} --expand 0,1")
    run("--lang", "zh", "run", "river-bank", "--format", "markdown", "--expand", "0,1",
        name="--lang zh run river-bank --format markdown --expand 0,1")
    run("check", "--all", "--format", "json", name="check --all --format json")
    run("verify", "river-bank", "--answers", ANSWERS, "--format", "json", code=1,
        name="verify --format json")
    run("export", "two-heads", "--to", "pytorch", name="export two-heads")
    run("lessons", "show", "river-bank", name="lessons show river-bank")
    run("stats", "--d-k", "8", "--samples", "2000", "--seed", "7", "--format", "json",
        name="stats --format json")
    (work / "roster.txt").write_text(ROSTER, "utf-8")
    # Without --lang (English whatever the locale), and with --lang zh.
    for lang, folder in (((), "class"), (("--lang", "zh"), "class-zh")):
        run(*lang, "exercise", "--seed", "2026", "--roster", "roster.txt", "--format",
            "markdown", "latex", "html", "moodle", "--out", folder)
        fill_class(work / folder, env, fills)
        # Exit 1: the student whose file cannot be read is not marked.
        run(*lang, "mark", folder, code=1)
        run(*lang, "mark", folder, "--format", "json", "--force", code=1)
    for path in sorted(work.rglob("*")):
        if path.is_file() and path.name != "roster.txt":
            out[f"file {path.relative_to(work)}"] = path.read_bytes()
    return out


def first_difference(a, b):
    la, lb = a.decode(errors="replace").splitlines(), b.decode(errors="replace").splitlines()
    for i, (x, y) in enumerate(zip(la, lb)):
        if x != y:
            return f"line {i + 1}:\n    {x[:200]}\n    {y[:200]}"
    return f"{len(la)} lines against {len(lb)}"


def compare(outputs):
    base_name = LOCALES[0]
    base = outputs[base_name]
    for name in LOCALES[1:]:
        other = outputs[name]
        check(sorted(other) == sorted(base),
              f"{name} writes other files than {base_name}: "
              f"{sorted(set(other) ^ set(base))[:10]}")
        differ = [k for k in sorted(base) if k in other and other[k] != base[k]]
        check(not differ, f"{len(differ)} of {len(base)} outputs differ between {base_name} "
              f"and {name}: {differ[:8]}")
        for k in differ[:3]:
            print(f"  {k}: {first_difference(base[k], other[k])}")
    return base


def check_contents(base):
    """The outputs compared are the real thing: every file there, a student
    marked above 0, Chinese exactly where --lang zh asked for it."""
    files = [k for k in base if k.startswith("file ")]
    golden = [k for k in files if k.startswith("file golden-all/")]
    check(len(golden) >= 20, f"golden --all wrote {len(golden)} files")
    for folder in ("class", "class-zh"):
        for name in ("index.md", "roster.csv", "moodle.xml", "sheets.tex", "keys.html",
                     "marks.csv", "marks.json", "summary.md"):
            check(f"file {folder}/{name}" in base, f"{folder}/{name} written")
        keys = [k for k in files if k.startswith(f"file {folder}/") and "/key." in k]
        check(len(keys) == 4 * 3, f"{folder}: a key in 3 formats per student: {keys}")
        note = NOTE_ZH if folder == "class-zh" else NOTE_EN
        other = NOTE_EN if folder == "class-zh" else NOTE_ZH
        md = [base[k].decode() for k in keys if k.endswith(".md")]
        check(all(note in t and other not in t for t in md),
              f"{folder}: every key.md has the softmax note in {'Chinese' if other == NOTE_EN else 'English'} only")
        marks = list(csv.reader(io.StringIO(base[f"file {folder}/marks.csv"].decode())))
        check(len(marks) == 5, f"{folder}/marks.csv: a header and 4 students: {marks}")
        if len(marks) == 5:
            # The header follows --lang (docs/marking.md); the rows are the same.
            names = ("总分", "问题") if folder == "class-zh" else ("total", "problem")
            total, problem = (marks[0].index(name) for name in names)
            check(float(marks[2][total]) > 0, f"{folder}: 张伟 has points: {marks[2]}")
            syntax = "TOML 语法错误" if folder == "class-zh" else "TOML syntax error"
            check(syntax in marks[4][problem], f"{folder}: the unreadable answers' problem "
                  f"says {syntax!r}: {marks[4][problem]!r}")
        feedback = base.get(f"file {folder}/张伟/feedback.md", b"").decode()
        check("unscaled" in feedback, f"{folder}: 张伟's feedback names the mistake: {feedback}")
    zh_doc = base["--lang zh run river-bank --format markdown --expand 0,1"].decode()
    en_doc = base["run river-bank --format markdown --expand 0,1"].decode()
    check(NOTE_ZH in zh_doc and NOTE_EN in en_doc,
          "run --format markdown --expand: the note in --lang's language")


def check_regenerates(work, env):
    """index.md's command, --lang zh included, gives the --lang zh class again."""
    index = (work / "class-zh" / "index.md").read_text("utf-8")
    command = re.search(r"^attn-trace (exercise .*) --out DIR$", index, re.M)
    if not check(command and command.group(1).endswith(" --lang zh"),
                 f"class-zh/index.md's command keeps --lang zh: {index[:400]}"):
        return
    r = subprocess.run([BIN, *shlex.split(command.group(1)), "--out", "again"], cwd=work,
                       env=env, capture_output=True, text=True)
    check(r.returncode == 0, f"the command of class-zh/index.md runs: {r.stderr}")
    rows = list(csv.DictReader(io.StringIO((work / "again" / "roster.csv").read_text("utf-8"))))
    filled = {f"{rows[1]['folder']}/answers.toml", f"{rows[-1]['folder']}/answers.toml"}
    again = [p.relative_to(work / "again") for p in (work / "again").rglob("*") if p.is_file()]
    differ = [str(p) for p in again if str(p) not in filled
              and (work / "again" / p).read_bytes() != (work / "class-zh" / p).read_bytes()]
    check(len(again) > 20 and not differ,
          f"index.md's command gives the same {len(again)} files again: {differ[:5]} differ")


def check_terminal(env_of):
    """Text for a person follows the environment: Chinese under zh_CN.UTF-8,
    English under C.UTF-8 and de_DE.UTF-8, byte for byte the same."""

    def run(locale_name, *args):
        return subprocess.run([BIN, *args], env=env_of[locale_name], capture_output=True,
                              text=True)

    # (check's report is not in the catalog: English under zh_CN.UTF-8 too.)
    commands = [("run", "river-bank"), ("run", "river-bank", "--expand", "0,1", "--width", "100"),
                ("verify", "river-bank", "--answers", ANSWERS), ("check", "river-bank"),
                ("lessons",), ("--help",), ("run", "river-bank", "--step", "nope"),
                ("run", "fill-zero-fails", "--format", "json")]
    for args in commands:
        c, zh, de = (run(name, *args) for name in ("C.UTF-8", "zh_CN.UTF-8", "de_DE.UTF-8"))
        what = " ".join(args)
        check((c.stdout, c.stderr, c.returncode) == (de.stdout, de.stderr, de.returncode),
              f"{what}: de_DE.UTF-8 changes the terminal's text")
        check(args[0] == "check" or (zh.stdout, zh.stderr) != (c.stdout, c.stderr),
              f"{what}: the same under zh_CN.UTF-8 as under C.UTF-8")
    checks = [
        (("run", "river-bank"), "stdout", "分数", "Scores"),
        (("verify", "river-bank", "--answers", ANSWERS), "stdout", "错误（wrong）", "wrong"),
        (("run", "river-bank", "--step", "nope", "--format", "json"), "stderr",
         "attn-trace：错误：", "attn-trace: error:"),
        (("run", "fill-zero-fails", "--format", "json"), "stderr", "起不到掩码作用",
         "does not mask"),
    ]
    for args, stream, chinese, english in checks:
        zh, c = run("zh_CN.UTF-8", *args), run("C.UTF-8", *args)
        check(chinese in getattr(zh, stream), f"{' '.join(args)}: {stream} in Chinese under "
              f"zh_CN.UTF-8: {getattr(zh, stream)[:300]}")
        check(english in getattr(c, stream) and chinese not in getattr(c, stream),
              f"{' '.join(args)}: {stream} in English under C.UTF-8")
    en = run("zh_CN.UTF-8", "--lang", "en", "run", "river-bank")
    check(en.stdout == run("C.UTF-8", "run", "river-bank").stdout,
          "--lang en under zh_CN.UTF-8: the terminal in English")


def main():
    with tempfile.TemporaryDirectory(prefix="attn-locale-") as tmp:
        tmp = pathlib.Path(tmp)
        locpath = tmp / "locales"
        locpath.mkdir()
        generate_locales(locpath)
        env_of = {name: environment(name, str(locpath)) for name in LOCALES}
        if not all([check_in_effect(name, env_of[name]) for name in LOCALES]):
            print(f"{len(failures)} failure(s)")
            return 1
        fills = {}
        outputs = {name: reproducible_outputs(name, env_of[name], tmp / name, fills)
                   for name in LOCALES}
        base = compare(outputs)
        print(f"{len(base)} outputs compared under {', '.join(LOCALES)}")
        check_contents(base)
        check_regenerates(tmp / "de_DE.UTF-8", env_of["de_DE.UTF-8"])
        check_terminal(env_of)
    print(f"{len(failures)} failure(s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
