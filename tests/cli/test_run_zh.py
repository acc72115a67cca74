#!/usr/bin/env python3
"""`run --lang zh` in every format over every embedded lesson (issue 23):
html, svg, markdown, latex and text, each with --expand on a few cells.

Asserts the Chinese that must be there (the lesson's title_zh and story_zh,
<html lang="zh-CN">, the section names, legends and captions, the words of the
cells' arithmetic, the LaTeX's CJK set-up), that no Latin word is left outside
what stays Latin (docs/chinese.md, "Kept in Latin": the terms below, step ids,
token labels, numbers, formulas' symbols; and the lesson's own Chinese text,
whose Latin the lesson writes), and that the same outputs in English have no
Chinese word of the tool's and are those of `--lang en`.

Usage: test_run_zh.py PATH/TO/attn-trace"""
import html
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import tomllib

from clitest import check, failures

EXE = sys.argv[1]

# Terms kept in Latin (docs/chinese.md), and the symbols the formulas write.
KEPT = set("""
softmax exp max min mean std sqrt log ln sin cos erf FLOPs f16 bf16 f32 f64 IEEE KV BLAS
OpenBLAS CPU GPU CUDA PyTorch NumPy BERT GPT ReLU GELU TOML JSON HTML SVG CSV PDF LaTeX
LuaLaTeX Markdown UTF BOM NaN inf nan eps cpu cuda Softmax dk
Q K V X W O M E S A C P I PE FFN QK d n m h t i j k c a s q v x p o b e ij pos cache sum
FlashAttention elu
dA dS dL D T Post Pre LN dropout
""".split())
COMMANDS = {"run", "check", "verify", "attn-trace"}
CJK = re.compile(r"[\u4e00-\u9fff]")
WORD = r"[A-Za-z][A-Za-z'’-]*[A-Za-z]|[A-Za-z]"


def latin_of(text):
    """The Latin words of `text` and their letters' runs: "didn't", "didn", "t"."""
    return set(re.findall(WORD, text)) | set(re.findall(r"[A-Za-z]+", text))


# Where LaTeX may break a Chinese line (render/escape.cpp): no glyph, so the
# checks read the text without it (the LuaLaTeX compile below keeps it).
BREAK_GLUE = "\\hspace{0pt plus 0.1em}"


def run(*args, lang="zh", glue=False):
    r = subprocess.run([EXE, *(["--lang", lang] if lang else []), "run", *args],
                       capture_output=True, text=True, timeout=120)
    check(r.returncode == 0, f"run {' '.join(args)} --lang {lang}: exit {r.returncode} "
          f"{r.stderr[-300:]}")
    return r.stdout if glue else r.stdout.replace(BREAK_GLUE, "")


SOURCE_LINE = {  # the cited documents' sections, by their own (Chinese) headings
    "html": r'<p class="source">来源：[^<]*</p>', "svg": r"$^",
    "markdown": r"(?m)^\*来源\*：.*$", "latex": r"(?m)^\\noindent 来源：.*$",
    "text": r"(?m)^来源：.*(\n  .*)*"}


def visible_text(text, kind):
    """The words a person reads in `text`, a document of `kind`, but for the
    lesson's source: the documents' headings, checked in Chinese in check_source."""
    text = re.sub(SOURCE_LINE[kind], " ", text)
    if kind in ("html", "svg"):
        text = re.sub(r"(?is)<(script|style)\b.*?</\1>", " ", text)
        text = re.sub(r"(?s)<!--.*?-->|<\?.*?\?>|<!DOCTYPE[^>]*>", " ", text)
        text = html.unescape(re.sub(r"(?s)<[^>]*>", " ", text))
    if kind == "latex":
        text = re.sub(r"(?m)(?<!\\)%.*$", " ", text)
        text = re.sub(r"\\(begin|end)\{[^}]*\}", " ", text)
        text = re.sub(r"\\(text|mathrm|texttt|textbf|section\*?|subsection\*?)\b", " ", text)
        text = re.sub(r"\\[A-Za-z]+", " ", text)
    if kind == "markdown":
        text = text.replace("\\", "")
    if kind == "text":  # the cited documents' own headings ("  000: 从“bank”这个词开始…")
        text = re.sub(r"(?m)^  \d{3}: .*$", " ", text)
    return text


def latin_words(text, allowed):
    """The Latin words of `text` outside what stays Latin."""
    text = re.sub(r"`[^`\n]*`", " ", text)                       # code spans
    text = re.sub(r"[A-Za-z]+…", " ", text)                      # a label cut short
    text = re.sub(r"\S*[/\\]\S*", " ", text)                     # paths
    text = re.sub(r"(?<![\w-])--?[A-Za-z][\w-]*", " ", text)     # options
    text = re.sub(r"[A-Za-z_]*\w*[_\d.\[]\w*[\w.\[\],:'·-]*\]?", " ", text)  # ids, numbers
    left = []
    for w in re.findall(WORD, text):
        if w in COMMANDS or w in allowed:
            continue
        if not all(p in KEPT or p in allowed for p in w.split("-")):
            left.append(w)
    return left


def lesson_of(lesson):
    """The lesson's TOML, its English trace with --expand, and the Latin it may show."""
    r = subprocess.run([EXE, "lessons", "show", lesson], capture_output=True, text=True)
    toml = tomllib.loads(r.stdout)["lesson"]
    d = json.loads(run(lesson, "--format", "json", lang=None))
    allowed = latin_of(lesson)
    for s in d["steps"]:
        allowed |= latin_of(s["id"])                            # step ids: head0.masked
        for label in (s.get("rows") or []) + (s.get("cols") or []):
            allowed |= latin_of(str(label))
    for key in ("title_zh", "story_zh", "source"):             # the lesson's own text
        allowed |= latin_of(toml.get(key, ""))
    return toml, d, allowed


def cells_to_expand(d):
    """(0, 0), the first query's last key (masked under a causal mask) and the last cell."""
    weights = next(s for s in d["steps"] if s["id"].endswith("weights"))
    n, m = weights["shape"]
    return sorted({(0, 0), (0, m - 1), (n - 1, m - 1)})


def expansions(lesson, cell):
    d = json.loads(run(lesson, "--format", "json", "--expand", "%d,%d" % cell, lang=None))
    return d.get("expansions") or []


def check_html(lesson, toml, page, where):
    check('<html lang="zh-CN">' in page, f"{where}: no <html lang=\"zh-CN\">")
    shown = html.unescape(page)
    title = f"{lesson} — {toml['title_zh']}"
    check(f"<title>{title}</title>" in shown and f"<h1>{title}</h1>" in shown,
          f"{where}: title is not title_zh")
    first = next(l for l in toml["story_zh"].splitlines() if l.strip())
    check(first in shown, f"{where}: story_zh missing")
    check("<nav><h2>各步骤</h2>" in page, f"{where}: no 各步骤")
    check("<h3>每个单元格的算式</h3>" in page, f"{where}: no 每个单元格的算式")
    check("<h2>注意力权重</h2>" in page and "<span>权重</span>" in page
          and "点击单元格可查看它的算式" in page, f"{where}: heatmaps not in Chinese")
    check(re.search(r"<p class=\"shapes\">形状：", page), f"{where}: no 形状：")
    check("not written out in this page" not in page and "本页没有写出它的算式" in page,
          f"{where}: the script's message")


def check_svg(lesson, toml, svg, where):
    check(f"<title>{html.escape(lesson)}：注意力权重</title>" in svg, f"{where}: <title>")
    check(f">{lesson} — {toml['title_zh']}</text>" in html.unescape(svg),
          f"{where}: heading is not title_zh")
    check(">权重</text>" in svg and ">被掩码（权重为 0）</text>" in svg, f"{where}: legend")


def check_markdown(lesson, toml, md, where):
    check(md.startswith(f"# {lesson}: ") and toml["title_zh"] in md.replace("\\", "").split("\n")[0],
          f"{where}: heading is not title_zh")
    first = next(l for l in toml["story_zh"].splitlines() if l.strip())
    check(first in md.replace("\\", ""), f"{where}: story_zh missing")
    check("· 形状：" in md, f"{where}: no 形状：")


def check_latex(lesson, toml, tex, where):
    heading = next(l for l in tex.splitlines() if l.startswith("\\section*{"))
    title_cjk = "".join(CJK.findall(toml["title_zh"]))
    check("".join(CJK.findall(heading)) == title_cjk, f"{where}: \\section* is not title_zh")
    check("LuaLaTeX" in tex and "% \\usepackage{fontspec}" in tex and "Noto Serif CJK SC" in tex,
          f"{where}: no CJK set-up")
    check("[U+" not in tex, f"{where}: Chinese written as [U+XXXX]")
    check(re.search(r"(?m)^行：.*。列：.*。$", tex), f"{where}: no 行：…。列：…。")


def check_source(toml, kind, text, where):
    """The source's sections as the documents number them: "003_….txt 第 3.3 节"."""
    if kind == "svg" or not toml.get("source"):
        return
    line = re.search(SOURCE_LINE[kind], text)
    check(line, f"{where}: no 来源：")
    if line and "section" in toml["source"]:
        check(re.search(r"第 [\d.]+ 节", line.group(0)) and "section" not in line.group(0),
              f"{where}: the source's sections not in Chinese: {line.group(0)[:200]}")


def check_expansion_words(outputs, cells, where):
    """The words of --expand: a masked cell's decision and the fill in every format."""
    masked = [e for e in cells if e["kind"] == "mask" and e.get("masked")]
    kept = [e for e in cells if e["kind"] == "mask" and not e.get("masked")]
    for kind, text in outputs.items():
        if kind == "svg":
            continue
        if masked:
            check("掩码填充值" in text and "被掩码（" in text, f"{where} {kind}: a masked cell's words")
        if kept:
            check("保留：对查询" in re.sub(r"\s", "", text), f"{where} {kind}: a kept cell's words")
        if any(e["kind"] == "input" for e in cells):
            check("本课给定" in text, f"{where} {kind}: 本课给定")
        check("the fill" not in text and "given in the lesson" not in text,
              f"{where} {kind}: English words of --expand")


def check_lesson(lesson):
    toml, d, allowed = lesson_of(lesson)
    check(bool(toml.get("title_zh")) and bool(toml.get("story_zh")), f"{lesson}: no title_zh/story_zh")
    for cell in cells_to_expand(d):
        expand = "%d,%d" % cell
        where = f"run {lesson} --expand {expand} --lang zh"
        outputs = {kind: run(lesson, *(["--format", kind] if kind != "text" else []),
                             "--expand", expand)
                   for kind in ("html", "svg", "markdown", "latex", "text")}
        check_html(lesson, toml, outputs["html"], where + " --format html")
        check_svg(lesson, toml, outputs["svg"], where + " --format svg")
        check_markdown(lesson, toml, outputs["markdown"], where + " --format markdown")
        check_latex(lesson, toml, outputs["latex"], where + " --format latex")
        check(re.sub(r"\s", "", toml["title_zh"]) in re.sub(r"\s", "", outputs["text"]),
              f"{where}: text title")
        check_expansion_words(outputs, expansions(lesson, cell), where)
        for kind, text in outputs.items():
            check_source(toml, kind, text, where + " --format " + kind)
            left = latin_words(visible_text(text, kind), allowed)
            check(not left, f"{where} --format {kind}: Latin words left: {sorted(set(left))[:20]}")
            if kind != "text":  # English: no Chinese of the tool's, and what --lang en writes
                english = run(lesson, "--format", kind, "--expand", expand, lang=None)
                check(english == run(lesson, "--format", kind, "--expand", expand, lang="en"),
                      f"{where} --format {kind}: English differs from --lang en")
                lesson_cjk = json.dumps([d, toml], ensure_ascii=False)
                tool_cjk = set(CJK.findall(english)) - set(CJK.findall(lesson_cjk))
                check(not tool_cjk, f"{where} --format {kind}: Chinese in English: {sorted(tool_cjk)[:10]}")


def lesson_ids():
    out = subprocess.run([EXE, "lessons"], capture_output=True, text=True).stdout
    ids = re.findall(r"(?m)^ *\d+  ([a-z0-9-]+) ", out)
    in_variants = False
    for line in out.splitlines():  # "variants: a,", then one id a line
        if "variants:" in line:
            in_variants = True
            line = line.split("variants:")[1]
        elif not (in_variants and re.fullmatch(r" *[a-z0-9-]+,?", line)):
            in_variants = False
        if in_variants:
            ids += re.findall(r"[a-z0-9][a-z0-9-]+", line)
    return ids


ids = lesson_ids()
check(len(ids) >= 30, f"lessons listed: {len(ids)}")
for lesson in ids:
    check_lesson(lesson)

# The f16 lesson's number-format line, and its mask fill in f16 (issue 23's example).
text = run("fill-values-1e9-f16")
check("数值格式：f16（IEEE 半精度），在 CPU 上精确模拟" in text.replace("\n", ""), "f16 line")
check("掩码填充值 -1e+09（在 f16 中为 -inf）" in re.sub(r"\s+", " ", text).replace("值 -1e", "值 -1e"),
      f"fill in f16: {text[:400]}")
# A fully masked row's softmax note (the lesson's masked_row policy) in Chinese.
for lesson, policy in (("fill-values", "nan：0/0"), ("fill-values-zero", "zero：整行设为 0")):
    page = run(lesson, "--format", "markdown", "--expand", "0,0")
    check("这一行的所有键都被掩码" in page and policy in page, f"{lesson}: masked row note")

# Summaries (--summary, and the matrices over 16 rows or columns of bert-base-shapes),
# and a cell whose arithmetic is too long for the page.
toml, d, allowed = lesson_of("bert-base-shapes")
for kind in ("html", "markdown", "latex"):
    out = run("bert-base-shapes", "--format", kind, "--summary")
    check("概要：" in out, f"bert-base-shapes --summary --format {kind}: no 概要：")
    left = latin_words(visible_text(out, kind), allowed)
    check(not left, f"bert-base-shapes --summary --format {kind}: Latin words left: {sorted(set(left))[:20]}")
    if kind == "html":
        check("个数，本页放不下：attn-trace run bert-base-shapes --step" in html.unescape(out),
              "bert-base-shapes --format html: the arithmetic too long for the page")


def compiles_with_lualatex(lesson):
    """The Chinese LaTeX fragment in a document with the preamble lines it names:
    LuaLaTeX compiles it and finds a glyph for every character."""
    frag = run(lesson, "--format", "latex", "--expand", "0,2", glue=True)
    preamble = [l[2:] for l in frag.splitlines()
                if l.startswith("% \\") and "amsmath" not in l and "MaxMatrixCols" not in l]
    with tempfile.TemporaryDirectory() as tmp:
        with open(os.path.join(tmp, "doc.tex"), "w", encoding="utf-8") as f:
            f.write("\\documentclass{article}\n\\usepackage{amsmath}\n" + "\n".join(preamble) +
                    "\n\\begin{document}\n" + frag + "\\end{document}\n")
        r = subprocess.run(["lualatex", "-interaction=nonstopmode", "-halt-on-error", "doc.tex"],
                           cwd=tmp, capture_output=True, text=True, timeout=600)
        log = open(os.path.join(tmp, "doc.log"), encoding="utf-8", errors="replace").read()
    check(r.returncode == 0, f"lualatex {lesson}: exit {r.returncode}: {r.stdout[-400:]}")
    check("Missing character" not in log, f"lualatex {lesson}: a character without a glyph")


fonts = subprocess.run(["fc-list"], capture_output=True, text=True).stdout if shutil.which("fc-list") else ""
if shutil.which("lualatex") and "Noto Serif CJK SC" in fonts:
    compiles_with_lualatex("causal-decoder")
else:
    print("lualatex or Noto Serif CJK SC not installed: the LaTeX is not compiled")

for f in failures[:40]:
    print("FAIL:", f)
print(f"{len(failures)} failure(s)")
sys.exit(1 if failures else 0)
