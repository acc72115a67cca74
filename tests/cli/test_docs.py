#!/usr/bin/env python3
"""The pages of docs/ against the real binary.

- Every fenced block preceded by a line `<!-- file: NAME -->` is a file the
  page's examples use; all of them (from every page) are written into a fresh
  folder before a page's commands run.
- Every ```console block is a transcript: each line `$ attn-trace ARGS` is run
  in that folder (in page order, so `golden` can come before `check`), and the
  lines after it, up to the next `$ ` line, must be exactly its standard output
  and standard error.
- Every relative link of README.md and docs/*.md points to a file that exists.

Usage: test_docs.py BIN [--update]
--update rewrites each transcript's output with what the tool prints now;
review the diff of docs/ before committing.
"""
import os
import re
import shlex
import subprocess
import sys
import tempfile

from clitest import check, failures

BIN = os.path.abspath(sys.argv[1])
UPDATE = "--update" in sys.argv[2:]
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DOCS = os.path.join(ROOT, "docs")


FENCE = re.compile(r"^```(\w*)\n(.*?)^```\n", re.S | re.M)
FILE_MARK = re.compile(r"<!-- file: ([\w.-]+) -->\n$")


def blocks(text):
    """(kind, body, file name or None) for every fenced block of a page."""
    for m in FENCE.finditer(text):
        before = text[: m.start()]
        mark = FILE_MARK.search(before)
        yield m.group(1), m.group(2), mark.group(1) if mark else None


def transcript(body):
    """(args, expected output) for each `$ attn-trace ...` line of a console block."""
    steps = []
    for line in body.splitlines(keepends=True):
        if line.startswith("$ "):
            words = shlex.split(line[2:])
            steps.append([words, ""])
        elif steps:
            steps[-1][1] += line
    return steps


pages = sorted(f for f in os.listdir(DOCS) if f.endswith(".md"))
files = {}
for page in pages:
    for kind, body, name in blocks(open(os.path.join(DOCS, page), encoding="utf-8").read()):
        if name:
            check(name not in files, f"{page}: file {name} is defined once")
            files[name] = body

commands = 0
for page in pages:
    text = open(os.path.join(DOCS, page), encoding="utf-8").read()
    with tempfile.TemporaryDirectory() as tmp:
        for name, body in files.items():
            with open(os.path.join(tmp, name), "w", encoding="utf-8") as f:
                f.write(body)
        updated = text
        for kind, body, _ in blocks(text):
            if kind != "console":
                continue
            fresh = ""
            for words, expected in transcript(body):
                check(words and words[0] == "attn-trace", f"{page}: a console line runs attn-trace: {words}")
                r = subprocess.run([BIN, *words[1:]], cwd=tmp, capture_output=True, text=True,
                                   env={**os.environ, "NO_COLOR": "1"})
                commands += 1
                got = r.stdout + r.stderr
                fresh += "$ " + shlex.join(words) + "\n" + got
                if not UPDATE:
                    check(got == expected,
                          f"{page}: `{' '.join(words)}` prints what the page shows\n--- page\n{expected}"
                          f"--- tool\n{got}")
            if UPDATE and fresh != body:
                updated = updated.replace("```console\n" + body + "```", "```console\n" + fresh + "```", 1)
        if UPDATE and updated != text:
            with open(os.path.join(DOCS, page), "w", encoding="utf-8") as f:
                f.write(updated)
            print(f"updated {page}")

# Relative links ([text](path), [text](path#anchor), [text](#anchor)) point to
# existing files and headings (anchors as GitHub makes them from a heading).
LINK = re.compile(r"\]\(([^)#\s]*)(?:#([^)\s]*))?\)")


def anchors(path):
    text = FENCE.sub("", open(path, encoding="utf-8").read())
    return {re.sub(r"[^\w\- ]", "", h.strip().lower()).replace(" ", "-")
            for h in re.findall(r"^#+ (.*)$", text, re.M)}


for path in [os.path.join(ROOT, "README.md")] + [os.path.join(DOCS, p) for p in pages]:
    text = open(path, encoding="utf-8").read()
    for target, anchor in LINK.findall(text):
        if "://" in target or not (target or anchor):
            continue
        where = os.path.join(os.path.dirname(path), target) if target else path
        check(os.path.exists(where), f"{os.path.relpath(path, ROOT)}: link {target} exists")
        if anchor and where.endswith(".md") and os.path.exists(where):
            check(anchor in anchors(where),
                  f"{os.path.relpath(path, ROOT)}: link {target}#{anchor} names a heading")

check(commands > 0, "the docs have console examples")
print(f"{commands} command(s) checked, {len(failures)} failure(s)")
sys.exit(1 if failures else 0)
