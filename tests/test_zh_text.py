#!/usr/bin/env python3
"""The Chinese the tool writes follows docs/chinese.md: one term per concept
(the glossary: every chosen term is used by the catalog, none of the variants
in its column "not" is), and the typography rule (full-width punctuation inside
Chinese, no space next to it, one space between Chinese and Latin, digits or a
{} value). Read: every msgstr of po/zh_CN.po and the lessons' title_zh,
story_zh and says_zh.

Usage: test_zh_text.py [glossary|typography|--self-test]"""
import glob
import os
import re
import sys
import tomllib

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from test_po import entries  # noqa: E402  (the catalog's reader, shared)

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
HAN = r"\u3400-\u9fff"
FULL_PUNCT = "，。：；！？（）、“”《》"
failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL:", what)


def glossary():
    """(English, [chosen terms], [rejected variants]) from docs/chinese.md's table."""
    text = open(os.path.join(ROOT, "docs", "chinese.md"), encoding="utf-8").read()
    table = text.split("## The glossary", 1)[1].split("\n## ", 1)[0]
    rows = []
    for line in table.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) < 3 or cells[0] in ("English", "") or set(cells[0]) <= set("-"):
            continue
        chosen = [t.strip() for t in re.split(r"/", cells[1]) if t.strip()]
        rejected = [t.strip() for t in re.split(r"、", cells[2]) if t.strip()]
        rows.append((cells[0], chosen, rejected))
    return rows


def chinese_texts():
    """(where, text) of every Chinese text: msgstrs and the lessons' *_zh."""
    with open(os.path.join(ROOT, "po", "zh_CN.po"), encoding="utf-8") as f:
        out = [(f"msgid {m!r}", s) for m, s, _ in entries(f.read())]
    for path in sorted(glob.glob(os.path.join(ROOT, "lessons", "*.toml"))):
        with open(path, "rb") as f:
            lesson = tomllib.load(f)
        name = os.path.basename(path)
        for key in ("title_zh", "story_zh"):
            if key in lesson.get("lesson", {}):
                out.append((f"{name} {key}", lesson["lesson"][key]))
        for k, claim in enumerate(lesson.get("claim", [])):
            if "says_zh" in claim:
                out.append((f"{name} claim {k} says_zh", claim["says_zh"]))
    return out


def without_terms(text, rows):
    """`text` with every chosen term blanked, longest first, so that a rejected
    variant inside a chosen term (分数 in 注意力分数) is not counted."""
    terms = sorted({t for _, chosen, _ in rows for t in chosen}, key=len, reverse=True)
    for t in terms:
        text = text.replace(t, "\u3000")
    return text


def check_glossary(texts):
    rows = glossary()
    check(len(rows) >= 40, f"the glossary has its rows ({len(rows)})")
    catalog = "\n".join(t for where, t in texts if where.startswith("msgid"))
    for english, chosen, rejected in rows:
        for term in chosen:
            if re.search(f"[{HAN}]", term):
                check(term in catalog, f"glossary: the catalog uses {term} ({english})")
    for where, text in texts:
        rest = without_terms(text, rows)
        for english, chosen, rejected in rows:
            for bad in rejected:
                check(bad not in rest, f"glossary: {where} writes {bad} for {english}; "
                                       f"use {' / '.join(chosen)}: {text!r}")


# A Latin run: a letter or digit (a {} value may hold a Chinese word, glued); `%`, `×`, `²` and the like may
# touch a number without a space, so they are not in it.
LATIN = r"[A-Za-z0-9_\]\)\[\(]"


def typography_faults(text):
    """What `text` breaks of the typography rule, as short descriptions."""
    faults = []
    text = re.sub(r"`[^`]*`", "`x`", text)  # code spans are Latin, quoted whole
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", text)  # a Markdown link: its words
    for m in re.finditer(f"[{HAN}][,;:!?]|[,;:!?][{HAN}]|[{HAN}]\\.(?!\\d)", text):
        faults.append(f"half-width punctuation in Chinese: {m.group()!r}")
    for m in re.finditer(f"[{HAN}]\\(|\\)[{HAN}]|\\([{HAN}]|[{HAN}。]\\)", text):
        faults.append(f"half-width bracket in Chinese: {m.group()!r}")
    # (two spaces or more are a column's gap, not a space in a sentence)
    for m in re.finditer(f"[{FULL_PUNCT}] (?=\\S)|(?<=\\S) [{FULL_PUNCT}]", text):
        faults.append(f"space next to full-width punctuation: {text[max(0, m.start() - 3):m.end() + 3]!r}")
    for m in re.finditer(f"[{HAN}]{LATIN}|{LATIN}[{HAN}]", text):
        faults.append(f"no space between Chinese and Latin: {m.group()!r}")
    for m in re.finditer(f"[{HAN}`]  +[{HAN}`]", text):
        faults.append(f"more than one space in Chinese: {m.group()!r}")
    return faults


def check_typography(texts):
    for where, text in texts:
        for fault in typography_faults(text):
            check(False, f"typography: {where}: {fault}")


def self_test():
    check(typography_faults("课程 {} 中没有步骤 id。") == [], "the rule's own example passes")
    check(typography_faults("值为 0.25，即 softmax(x) 的和") == [], "Latin inside Chinese, spaced")
    check(len(typography_faults("值为0.25")) == 1, "a digit against Chinese is caught")
    check(len(typography_faults("一个句子。 下一个")) == 1, "a space after 。 is caught")
    check(len(typography_faults("掩码(mask)")) == 2, "half-width brackets in Chinese are caught")
    check(len(typography_faults("如下,然后")) >= 1, "a half-width comma in Chinese is caught")
    check(typography_faults("用 `--lang zh`。") == [], "a code span is one Latin word")
    rows = [("scores", ["注意力分数"], ["得分"]), ("marks", ["成绩"], ["分数"])]
    check("分数" not in without_terms("注意力分数", rows), "a chosen term hides its part")
    check("分数" in without_terms("缩放后的分数", rows), "a lone 分数 is still seen")


if "--self-test" in sys.argv:
    self_test()
else:
    texts = chinese_texts()
    if len(sys.argv) < 2 or sys.argv[1] == "glossary":
        check_glossary(texts)
    if len(sys.argv) < 2 or sys.argv[1] == "typography":
        check_typography(texts)
    print(f"{len(texts)} Chinese texts checked")
print(f"{len(failures)} failure(s)")
sys.exit(1 if failures else 0)
