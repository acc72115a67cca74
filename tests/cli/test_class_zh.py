#!/usr/bin/python3
"""An instructor's path in Chinese (issue 23): `exercise --lang zh` writes a
small class in every format, four students fill in their answers (all right,
scores left unscaled, weights left blank, no answers file), `mark --lang zh`
marks them. Each file a person reads has its Chinese headings and phrases, and
no Latin word is left in it once what docs/chinese.md keeps in Latin is taken
out (step ids, tokens, file names, commands and options, diagnosis and status
names in brackets, formulas' symbols, the listed terms). The class is
generated twice: the same bytes. Without --lang, the same command is English.

Usage: test_class_zh.py PATH/TO/attn-trace
"""
import csv
import html
import io
import json
import pathlib
import re
import sys
import tempfile
from decimal import Decimal

from clitest import check, failures, runner

BIN = sys.argv[1]
run = runner(BIN)

# docs/chinese.md and the rules of issue 23: kept in Latin.
KEPT = set("""softmax exp max min mean std sqrt log W_Q W_K W_V W_O d_k d_v d_model d_ff FLOPs
f16 bf16 f32 f64 IEEE KV BLAS OpenBLAS CPU GPU CUDA PyTorch NumPy BERT GPT TOML JSON HTML SVG
CSV PDF LaTeX Markdown Moodle Cloze UTF-8 BOM XML inf""".split())
COMMANDS = {"exercise", "mark", "verify", "run"}
STEPS = {"scores", "scaled", "masked", "row_sum", "weights", "context", "concat", "output"}
# Row and column labels of the trace: tokens, and row_sum's one column.
TOKENS = {"the", "cat", "sat", "on", "a", "warm", "mat", "today", "pad", "sum"}
STATUS = {"ok", "carried", "rounded", "imprecise", "wrong", "missing", "unscaled"}
# (Markdown's inline code and fenced blocks, bracketed ids after Chinese, file
# names, paths, options, commands, step ids, hex variants, Cloze fields.)
REMOVED = [r"```.*?```", r"`[^`]*`", r"<code>.*?</code>", r"(?<![\w.])/[\w./\\-]+", r"（[a-z_]+(?: [a-z_]+)*(?=[），])", r"\{1:[A-Z]+:[^}]*\}",
           r"[\w./-]+\.(?:toml|md|csv|json|tex|html|xml)\b", r"\]\([^)]*\)",
           r"--[a-z][a-z-]*", r"\battn-trace(?: [a-z]+)?", r"\bhead\d+\.\w+",
           r"\b[a-z0-9]+(?:-[a-z0-9]+)+\b", r"\b[0-9a-f]{16}\b", r"\[[^\]\n]*\]",
           r"\b\w+_\w+\b", r"\bd\d+\b", r"\b[A-Z]\b|\b[a-z]\b"]


def latin_words(text):
    """The Latin words of `text` that docs/chinese.md does not keep."""
    for pattern in REMOVED:
        text = re.sub(pattern, " ", text, flags=re.S)
    words = re.findall(r"[A-Za-z][A-Za-z0-9-]*[A-Za-z0-9]", text)
    return sorted({w for w in words if w not in KEPT | COMMANDS | STEPS | TOKENS | STATUS})


def visible_html(text):
    text = re.sub(r"<style>.*?</style>|<code>.*?</code>", " ", text, flags=re.S)
    return html.unescape(re.sub(r"<[^>]+>", " ", text))


def no_latin(name, text):
    left = latin_words(text)
    check(not left, f"{name}: no Latin word left under --lang zh: {left[:20]}")


def fill_answers(folder, how):
    """answers.toml of `folder` filled in from `run --format json`, to 3 decimals."""
    steps = {s["id"]: s for s in json.loads(run("run", str(folder / "lesson.toml"), "--format",
                                                  "json").stdout)["steps"]}
    text = (folder / "answers.toml").read_text("utf-8")
    out, step = [], None
    for line in text.splitlines():
        if line.startswith("step = "):
            step, row = json.loads(line[7:]), 0
        elif line.startswith("  [") and step:
            source = steps["head0.scores" if how == "unscaled" and step == "head0.scaled" else step]
            cells = ", ".join('""' if how == "blank" and step == "head0.weights"
                              else ("\"-inf\"" if v is None or v == "-inf" else f"\"{v:.3f}\"")
                              for v in source["data"][row])
            line, row = f"  [{cells}],", row + 1
        out.append(line)
    (folder / "answers.toml").write_text("\n".join(out) + "\n", "utf-8")


def generate(work, name, *lang):
    run(*lang, "exercise", "--seed", "23", "--students", "4", "--causal", "--format", "markdown",
        "latex", "html", "moodle", "--out", str(work / name))
    return {p.relative_to(work / name): p.read_bytes() for p in (work / name).rglob("*")
            if p.is_file()}


def check_sheets(c):
    sheet = (c / "student-01" / "sheet.md").read_text("utf-8")
    key = (c / "student-01" / "key.md").read_text("utf-8")
    for heading in ("# 注意力练习卷：学生 1", "## 约定", "## 已知", "## 待计算", "输入保留 1 位小数"):
        check(heading in sheet, f"sheet.md has {heading!r}")
    for heading in ("# 参考答案：学生 1", "## 全部步骤", "## 单元格计算示例", "因果掩码："):
        check(heading in key, f"key.md has {heading!r}")
    page = (c / "student-01" / "sheet.html").read_text("utf-8")
    check('<html lang="zh-CN">' in page and "<h2>待计算</h2>" in page,
          "sheet.html: lang zh-CN and Chinese headings")
    tex = (c / "student-01" / "sheet.tex").read_text("utf-8")
    check("\\subsection*{约定}" in tex and "Noto Serif CJK SC" in tex,
          "sheet.tex: Chinese headings, the CJK font kept")
    answers = (c / "student-01" / "answers.toml").read_text("utf-8")
    comments = "\n".join(l for l in answers.splitlines() if l.lstrip().startswith("#"))
    check("# 学生 1 的答案" in comments, f"answers.toml's comments in Chinese: {comments[:200]}")
    moodle = (c / "moodle.xml").read_text("utf-8")
    questions = " ".join(re.findall(r"<(?:questiontext|generalfeedback|name|info)[^>]*><text>"
                                    r"(?:<!\[CDATA\[)?(.*?)(?:\]\]>)?</text>", moodle, re.S))
    check("注意力练习，版本" in questions and "待计算" in questions, "moodle.xml: Chinese questions")
    index = (c / "index.md").read_text("utf-8")
    check(index.startswith("# 练习卷\n") and "| 学生 | 版本 | 抽取次数 | 文件 |" in index,
          "index.md in Chinese")
    for name, text in (("sheet.md", sheet), ("key.md", key), ("sheet.html", visible_html(page)),
                       ("answers.toml comments", comments), ("moodle.xml questions",
                                                             visible_html(questions)),
                       ("index.md", index)):
        no_latin(name, text)


def check_marks(c, result):
    check(result.returncode == 1, f"mark: exit 1 (a student not marked): {result.returncode}")
    check(result.stdout.startswith("4 名学生中批改了 3 名"), f"mark's summary line: {result.stdout}")
    check("未批改：student-04：" in result.stdout, f"mark's not-marked line: {result.stdout}")
    header = next(csv.reader(io.StringIO((c / "marks.csv").read_text("utf-8-sig"))))
    check(header[:5] == ["学号", "姓名", "文件夹", "版本", "状态"] and header[-6:] == ["总分", "满分", "第一个错误",
                                                                  "错误类型", "问题", "无法读取的单元格"],
          f"marks.csv's header in Chinese: {header}")
    no_latin("marks.csv header", " ".join(header))
    summary = (c / "summary.md").read_text("utf-8")
    for phrase in ("# 全班成绩汇总", "## 需要重讲的内容", "没有缩放（unscaled）", "## 各步骤", "## 未批改"):
        check(phrase in summary, f"summary.md has {phrase!r}")
    no_latin("summary.md", summary)
    feedback = {n: (c / f"student-0{n}" / "feedback.md").read_text("utf-8") for n in (1, 2, 3, 4)}
    check("要求计算的数值全部正确" in feedback[1], f"student 1 all right: {feedback[1]}")
    check("**第一个错误**：" in feedback[2] and "没有缩放（unscaled）" in feedback[2],
          f"student 2's first mistake named: {feedback[2]}")
    check("个未作答" in feedback[3], f"student 3's blank weights: {feedback[3]}")
    check("未批改：" in feedback[4], f"student 4 not marked: {feedback[4]}")
    for n, text in feedback.items():
        check(text.startswith(f"# 反馈：学生 {n}\n"), f"feedback {n}'s heading: {text[:40]}")
        no_latin(f"student-0{n}/feedback.md", text)


def fill_weights_two_decimals(folder):
    """Every asked value right, the weights written with 2 decimals where 3 are asked."""
    fill_answers(folder, "right")
    text = (folder / "answers.toml").read_text("utf-8")
    out, step = [], None
    for line in text.splitlines():
        if line.startswith("step = "):
            step = json.loads(line[7:])
        elif line.startswith("  [") and step == "head0.weights":
            line = re.sub(r'"(-?\d+\.\d{3})"',
                          lambda m: f'"{float(m.group(1)):.2f}"', line)
        out.append(line)
    (folder / "answers.toml").write_text("\n".join(out) + "\n", "utf-8")


def id_class(work):
    """A Chinese id,name roster (学号, a byte-order mark, CRLF, a quoted name,
    full-width digits): IDs on the sheets, the answers template, roster.csv,
    marks.csv's first column and the feedback; two students never hand in."""
    roster = work / "名单.csv"
    roster.write_bytes("\ufeff学号,姓名\r\n2021012345,张伟\r\n２０２１０１２３４６,李娜\r\n"
                       "2021012347,\"王芳\"\r\n2021012348,刘洋\r\n".encode("utf-8"))
    c = work / "ids"
    r = run("--lang", "zh", "exercise", "--seed", "24", "--roster", str(roster), "--format",
            "markdown", "latex", "html", "--out", str(c))
    check(r.returncode == 0, f"id,name roster: exercise exits 0: {r.stderr}")
    rows = list(csv.reader(io.StringIO((c / "roster.csv").read_text("utf-8"))))
    check(rows[0] == ["id", "name", "folder", "variant", "fingerprint"] and
          [row[:3] for row in rows[1:]] == [["2021012345", "张伟", "张伟"],
                                           ["2021012346", "李娜", "李娜"],
                                           ["2021012347", "王芳", "王芳"],
                                           ["2021012348", "刘洋", "刘洋"]],
          f"roster.csv: the IDs first, full-width digits as ASCII: {rows}")
    # The ID does not change a variant: the names-only roster gives the same ones.
    plain = work / "plain.txt"
    plain.write_text("张伟\n李娜\n王芳\n刘洋\n", "utf-8")
    run("--lang", "zh", "exercise", "--seed", "24", "--roster", str(plain), "--out",
        str(work / "plain"))
    plain_rows = list(csv.reader(io.StringIO((work / "plain" / "roster.csv").read_text("utf-8"))))
    check([row[2] for row in plain_rows[1:]] == [row[3] for row in rows[1:]],
          f"the same variants with and without IDs: {plain_rows} {rows}")
    sheet = (c / "张伟" / "sheet.md").read_text("utf-8")
    check(sheet.startswith("# 注意力练习卷：张伟（学号 2021012345）\n"), f"sheet.md's header: {sheet[:60]}")
    check((c / "张伟" / "key.md").read_text("utf-8").startswith(
        "# 参考答案：张伟（学号 2021012345）\n"), "key.md's header has the ID")
    check("<h1>注意力练习卷：李娜（学号 2021012346）</h1>" in (c / "李娜" / "sheet.html").read_text("utf-8"),
          "sheet.html's header has the ID")
    tex = re.sub(r"\\hspace\{[^}]*\}", "", (c / "sheets.tex").read_text("utf-8"))
    check("\\startstudent{1}{张伟（学号 2021012345）}" in tex,
          "sheets.tex: the ID in every page's header")
    check("张伟，学号 2021012345" in (c / "张伟" / "answers.toml").read_text("utf-8").split("\n")[0],
          "answers.toml's first comment has the ID")
    fill_answers(c / "张伟", "right")
    fill_weights_two_decimals(c / "李娜")
    r = run("--lang", "zh", "mark", str(c))
    check(r.returncode == 0, f"absentees are normal: mark exits 0: {r.returncode} {r.stderr}")
    check(r.stdout.startswith("4 名学生中批改了 2 名，2 名未交（not handed in）"),
          f"mark counts the absentees apart: {r.stdout}")
    marks = list(csv.reader(io.StringIO((c / "marks.csv").read_text("utf-8-sig"))))
    by_id = {row[0]: row for row in marks[1:]}
    check([row[0] for row in marks[1:]] == ["2021012345", "2021012346", "2021012347",
                                            "2021012348"], f"marks.csv's first column: {marks}")
    check(by_id["2021012345"][4:10] == ["marked", "1", "1", "1", "1", "4"],
          f"张伟: all right: {by_id['2021012345']}")
    for absent in ("2021012347", "2021012348"):
        row = by_id[absent]
        check(row[4] == "not handed in" and row[5:10] == ["", "", "", "", ""] and row[10] == "4",
              f"not handed in: a status, no points, out of 4: {row}")
    for row in marks[1:]:
        if row[4] == "marked":
            check(sum(Decimal(x) for x in row[5:9]) == Decimal(row[9]),
                  f"the printed steps add up to the printed total: {row}")
    summary = (c / "summary.md").read_text("utf-8")
    check("4 名学生 · 已批改 2 名 · 2 名未交（not handed in，见下文）" in summary,
          f"summary.md counts them apart: {summary[:200]}")
    check("| 王芳 | 2021012347 | 王芳 |" in summary and "| 刘洋 | 2021012348 | 刘洋 |" in summary,
          "summary.md lists who did not hand in, with their IDs")
    check("| 小数位数不足（imprecise）：要写 3 位小数 | 1 | 李娜 |" in summary,
          "summary.md: who wrote too few decimals, in what to re-teach")
    no_latin("summary.md (ids)", summary)
    feedback = (c / "李娜" / "feedback.md").read_text("utf-8")
    check(feedback.startswith("# 反馈：李娜（学号 2021012346）\n") and "**写 3 位小数**" in feedback
          and str(c) not in feedback, f"李娜's feedback: ID, 'write 3 decimals', no path: {feedback}")
    no_latin("李娜/feedback.md", feedback)
    absent = (c / "王芳" / "feedback.md").read_text("utf-8")
    check("未交（not handed in）" in absent, f"王芳's feedback says not handed in: {absent}")


def main():
    with tempfile.TemporaryDirectory() as tmp:
        work = pathlib.Path(tmp)
        first = generate(work, "zh", "--lang", "zh")
        check(first == generate(work, "zh-again", "--lang", "zh"),
              "the same seed and --lang zh: byte-identical files")
        english = generate(work, "en")
        check(b"# Answer key: Student 1" in english[pathlib.Path("student-01/key.md")],
              "without --lang the sheets are English")
        c = work / "zh"
        check_sheets(c)
        for n, how in ((1, "right"), (2, "unscaled"), (3, "blank")):
            fill_answers(c / f"student-0{n}", how)
        (c / "student-04" / "answers.toml").unlink()
        result = run("--lang", "zh", "mark", str(c))
        check_marks(c, result)
        id_class(work)
    print(f"{len(failures)} failure(s)")
    sys.exit(1 if failures else 0)


main()
