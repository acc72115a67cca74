#!/usr/bin/env python3
"""`attn-trace --lang zh check` on every embedded lesson (issue 23): the report
in Chinese — the source line with the documents' own section headings, the
golden line, the claims' counts, each claim's status and its `says_zh` label,
the shape and cost claims, the closing summary — no Latin word left outside
the terms kept in Latin (docs/chinese.md), and every line within the width
(80 columns when standard output is not a terminal, COLUMNS=80). The English
report keeps its words and is wrapped to the width too.

Usage: test_check_zh.py PATH/TO/attn-trace
"""
import os
import pathlib
import re
import sys
import tomllib
import unicodedata

from clitest import check, environment, failures, run_program

BIN = os.path.abspath(sys.argv[1])
SRC = pathlib.Path(__file__).resolve().parent.parent.parent
GOLDEN = str(SRC / "golden")
WIDTH = 80

# Kept in Latin (docs/chinese.md and the rules of issue 23): terms, symbols and units.
KEPT = set("""softmax exp max min mean std sqrt log Q K V X W_Q W_K W_V W_O d_k d_v d_model
d_ff FLOPs f16 bf16 f32 f64 IEEE KV BLAS OpenBLAS CPU GPU CUDA PyTorch NumPy BERT GPT TOML
JSON HTML SVG CSV PDF LaTeX Markdown Moodle Cloze UTF-8 BOM NaN
agrees disagrees carried slip pass FAIL MISSING
B KB MB GB KiB MiB GiB Var inf nan
BERT-base seq PE WordPiece GELU ReLU Pre-LN Post-LN concat
MQA GQA RoPE ALiBi Longformer Swin FlashAttention elu dL dA dS""".split())
# BERT-base: the model's name as the documents write it; seq, PE, WordPiece, GELU, ReLU,
# Pre-LN, Post-LN: in lessons' title_zh, as the documents write them; concat: a step id;
# MQA, GQA, RoPE, ALiBi: names of attention variants (issue 26); Longformer, Swin: model
# names, as the documents write them.


def run(*args):
    return run_program(BIN, *args, env=environment({"COLUMNS": str(WIDTH)},
                                                   drop=("LC_ALL", "LC_MESSAGES", "LANG")))


def columns(line):
    """Display columns of a line: East Asian wide and fullwidth characters count 2."""
    return sum(2 if unicodedata.east_asian_width(ch) in "WF" else 1 for ch in line)


def token_labels(path):
    """The lesson's token labels (queries and memory), kept in Latin in any language."""
    lesson = tomllib.loads(path.read_text(encoding="utf-8"))
    given = lesson.get("input", {})
    return set(given.get("tokens", [])) | set(given.get("memory_tokens", []))


def squeeze(text):
    """`text` without white space: lines broken between two Chinese characters join again."""
    return "".join(text.split())


def latin_words(text, labels):
    """The Latin words of `text` outside what stays Latin: the source line (the
    documents' own headings), step ids and cell references, identifiers, file
    names, commands in backticks, token labels, numbers and the KEPT terms."""
    text = re.sub(r"来源：.*?(?=基准文件：)", " ", text, flags=re.S)
    text = re.sub(r"`[^`]*`", " ", text)
    # The slips' causes (teach/slips.cpp, helper zh-cli's part of issue 23) while
    # they are still English: "term 3: used W_K[d1,d3] = 0.2 instead of …".
    text = re.sub(r"(可能的原因|全部差值)：\s*(?=term )[^；]*(；\s*或[^；]*)*", " ", text)
    text = re.sub(r"[\w.*<>/-]*\[[^\]]*\]", " ", text)  # head0.scores[0,1], W_K[d2,d3]
    text = re.sub(r"\S+\.(toml|txt)\b", " ", text)
    # Token labels as whole words: "bank(river)", "<pad>", "I".
    for label in sorted(labels, key=len, reverse=True):
        text = re.sub(rf"(?<![\w<]){re.escape(label)}(?![\w>])", " ", text)
    labels = labels | {w for label in labels for w in re.findall(r"[A-Za-z]+", label)}
    words = re.findall(r"[A-Za-z][\w'.*-]*[ᵀ²]?", text)
    left = []
    for w in words:
        w = w.rstrip(".")
        if w in KEPT or w in labels or len(w) == 1 or re.search("[ᵀ²]", w):  # q, QKᵀ, n²
            continue
        if re.search(r"[_\d.*]", w) or "head" in w and "." in w:  # ids: head0.scores, qk_std
            continue
        left.append(w)
    return left


lessons = sorted((SRC / "lessons").glob("*.toml"))
check(len(lessons) >= 30, f"the embedded lessons are found ({len(lessons)})")
for path in lessons:
    lid = path.stem
    r = run("--lang", "zh", "check", lid, "--golden-dir", GOLDEN)
    where = f"check --lang zh {lid}"
    if not check(r.returncode == 0, f"{where}: exit 0 ({r.returncode}: {r.stderr[-300:]})"):
        continue
    out = r.stdout
    lines = out.splitlines()
    wide = [l for l in lines if columns(l) > WIDTH]
    check(not wide, f"{where}: every line within {WIDTH} columns: {wide[:2]}")
    check(lines[0].startswith(f"{lid} — "), f"{where}: the header names the lesson")
    flat = " ".join(l.strip() for l in lines)
    check(re.search(r"来源：\d{3}_[0-9a-f]{16}\.txt 第 [\d.]+ 节（", flat) is not None,
          f"{where}: the source line with a section and its Chinese heading")
    check("section" not in flat, f"{where}: no English 'section' in the source line")
    check(f"基准文件：通过（pass）——全部" in flat, f"{where}: the golden line in Chinese")
    check(re.search(r"1 课：基准文件 1 课通过，0 课不通过或缺失；文中数值检查了 \d+ 处", flat)
          is not None, f"{where}: the summary line in Chinese")
    lesson = tomllib.loads(path.read_text(encoding="utf-8"))
    claims = lesson.get("claim", [])
    values = [c for c in claims if "shape" not in c and "quantity" not in c]
    if values:
        check(re.search(rf"文中数值：检查了 {len(values)} 处，\d+ 处一致，\d+ 处沿用正确", flat)
              is not None, f"{where}: the claims' counts line in Chinese")
    elif not claims:
        check("文中数值：无" in flat, f"{where}: no claims, said in Chinese")
    if len(values) < len(claims):
        check("形状与计算量的文中数值：检查了" in flat, f"{where}: shape and cost claims in Chinese")
    for c in claims:
        check("says_zh" in c, f"{lid}: every claim has says_zh ({c.get('says', '')[:40]})")
        if "says_zh" in c:
            check(squeeze(c["says_zh"]) in squeeze(flat),
                  f"{where}: the claim's Chinese label is shown ({c['says_zh'][:20]})")
    left = latin_words(flat, token_labels(path) | {lid})
    check(not left, f"{where}: no Latin word outside the kept ones: {sorted(set(left))[:12]}")

# The documents' own headings of the sections river-bank and kv-cache cite.
r = run("--lang", "zh", "check", "river-bank", "--golden-dir", GOLDEN)
flat = " ".join(l.strip() for l in r.stdout.splitlines())
check(squeeze("第 3 节（核心细节解析手把手拆解“It’s a pleasant walk by the river bank”全程计算）")
      in squeeze(flat), "river-bank: section 3's own heading")
check("一致（agrees）" in flat and "不一致（disagrees）" in flat and "沿用正确（carried）" in flat,
      "river-bank: the claims' statuses in Chinese")
check(squeeze("按文中所写：W_K[d2,d3] 写成了 0.2（应为 0.1；这个值是另一行的 W_K[d1,d3]）；这一个值就解释了全部差值")
      in squeeze(flat), "river-bank: the written factor that explains K[bank,d3]")
check(squeeze("“bank 的 K 向量 K_bank，最后一个分量写作") in squeeze(flat), "river-bank: a claim's says_zh")
r = run("--lang", "zh", "run", "kv-cache", "--step", "X")
check(squeeze("第 4.4 节（解码器的“自回归诅咒”为什么生成速度慢得像蜗牛）") in squeeze(r.stdout),
      "run --lang zh: the source line with the section's heading")

# --- check --all: Chinese and within the width; English wrapped, words kept --
r = run("--lang", "zh", "check", "--all", "--golden-dir", GOLDEN)
check(r.returncode == 0, "check --all --lang zh exits 0")
wide = [l for l in r.stdout.splitlines() if columns(l) > WIDTH]
check(not wide, f"check --all --lang zh: every line within {WIDTH} columns: {wide[:2]}")
check(re.search(rf"{len(lessons)} 课：基准文件 {len(lessons)} 课通过", r.stdout) is not None,
      "check --all --lang zh: the summary line")
r = run("--lang", "en", "check", "--all", "--golden-dir", GOLDEN)
wide = [l for l in r.stdout.splitlines() if columns(l) > WIDTH]
check(not wide, f"check --all --lang en: every line within {WIDTH} columns: {wide[:2]}")
flat = " ".join(r.stdout.split())
check("source: 000_0ccc5db2bedb29fc.txt, section 3 (\"It's a pleasant walk by the river bank\")"
      in flat, "English: the source line as written")
check("that one value explains the whole difference" in flat, "English: the errata's words")
for width in ("40", "120"):
    r = run("--lang", "zh", "check", "river-bank", "--golden-dir", GOLDEN, "--width", width)
    wide = [l for l in r.stdout.splitlines() if columns(l) > int(width)]
    check(r.returncode == 0 and not wide, f"--width {width}: every line within it: {wide[:2]}")

print(f"check --lang zh: {len(failures)} failure(s)")
sys.exit(1 if failures else 0)
