#!/usr/bin/env python3
"""The gettext catalog is complete and in step with the sources (docs/chinese.md):
po/attn-trace.pot is what scripts/update-po extracts now, po/zh_CN.po has no
untranslated or fuzzy message and compiles with msgfmt --check, and every
msgstr has the same fmt placeholders as its msgid ({} numbered in order;
explicit indices may reorder them). Exit 77 (skipped) without GNU gettext.

Usage: test_po.py [--self-test]"""
import os
import re
import shutil
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PO = os.path.join(ROOT, "po", "zh_CN.po")
failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL:", what)


def placeholders(text):
    """The {…} fields of a fmt format string as a sorted list of (index, spec);
    automatic fields are numbered in order. Mixing both kinds is an error (fmt
    refuses it at run time): returned as None."""
    text = text.replace("{{", "").replace("}}", "")
    fields, auto, manual = [], 0, False
    depth, start = 0, 0
    for k, c in enumerate(text):
        if c == "{":
            if depth == 0:
                start = k
            depth += 1
        elif c == "}" and depth:
            depth -= 1
            if depth == 0:
                field = text[start + 1:k]
                m = re.match(r"(\d*)(.*)", field, re.S)
                if m.group(1):
                    manual = True
                    fields.append((int(m.group(1)), m.group(2)))
                else:
                    fields.append((auto, m.group(2)))
                    auto += 1
    if manual and auto:
        return None
    return sorted(set(fields))


def unescape(s):
    return re.sub(r'\\(.)', lambda m: {"n": "\n", "t": "\t"}.get(m.group(1), m.group(1)), s)


def entries(po_text):
    """(msgid, msgstr, fuzzy) of each message, the header left out."""
    out = []
    for block in po_text.split("\n\n"):
        lines = [l for l in block.splitlines() if l and not l.startswith("#~")]
        fuzzy = any(l.startswith("#,") and "fuzzy" in l for l in lines)
        parts, key = {}, None
        for l in lines:
            m = re.match(r'(msgid|msgstr) (".*")$', l)
            if m:
                key = m.group(1)
                parts[key] = m.group(2)[1:-1]
            elif l.startswith('"') and key:
                parts[key] += l[1:-1]
        if "msgid" in parts and parts["msgid"]:
            out.append((unescape(parts["msgid"]), unescape(parts.get("msgstr", "")), fuzzy))
    return out


def self_test():
    check(placeholders("{} and {}") == [(0, ""), (1, "")], "automatic fields numbered")
    check(placeholders("{1} 和 {0}") == placeholders("{} and {}"), "reordering by index allowed")
    check(placeholders("{:>{}}  {:<{}}") == placeholders("{:>{}}  {:<{}}"), "nested widths")
    check(placeholders("{} {1}") is None, "mixed automatic and manual refused")
    check(placeholders("{:g}") != placeholders("{}"), "a format spec must be kept")
    check(placeholders("{} of {}") != placeholders("{} 个"), "a dropped value is caught")
    check(placeholders("{{literal}} {}") == [(0, "")], "escaped braces are not fields")


def main():
    if "--self-test" in sys.argv:
        self_test()
        print(f"{len(failures)} failure(s)")
        sys.exit(1 if failures else 0)

    tools = ["xgettext", "msgmerge", "msgattrib", "msgfmt"]
    if any(shutil.which(t) is None for t in tools):
        print("SKIP: GNU gettext (xgettext, msgmerge, msgattrib, msgfmt) is not installed")
        sys.exit(77)

    r = subprocess.run([os.path.join(ROOT, "scripts", "update-po"), "--check"], capture_output=True,
                       text=True)
    check(r.returncode == 0, f"po/attn-trace.pot is in step with the sources:\n{r.stderr}")

    r = subprocess.run(["msgfmt", "--check", "--statistics", "-o", os.devnull, PO], capture_output=True,
                       text=True)
    check(r.returncode == 0, f"msgfmt --check accepts po/zh_CN.po: {r.stderr}")
    check("untranslated" not in r.stderr and "fuzzy" not in r.stderr,
          f"msgfmt --statistics counts only translated messages: {r.stderr.strip()}")
    for flag in ("--untranslated", "--only-fuzzy"):
        r = subprocess.run(["msgattrib", flag, "--no-obsolete", PO], capture_output=True, text=True)
        left = [m for m in re.findall(r'\nmsgid "(.*)"', r.stdout) if m]
        check(r.returncode == 0 and not left, f"msgattrib {flag}: none, found {left[:5]}")

    with open(PO, encoding="utf-8") as f:
        messages = entries(f.read())
    with open(os.path.join(ROOT, "po", "attn-trace.pot"), encoding="utf-8") as f:
        template = {m for m, _, _ in entries(f.read())}
    check(len(messages) >= 300, f"the catalog holds every message ({len(messages)})")
    check({m for m, _, _ in messages} == template, "zh_CN.po has exactly the template's messages")
    for msgid, msgstr, fuzzy in messages:
        check(msgstr and not fuzzy, f"translated and not fuzzy: {msgid!r}")
        check(placeholders(msgstr) is not None and placeholders(msgstr) == placeholders(msgid),
              f"same placeholders: {msgid!r} -> {msgstr!r}")
        check(msgid.endswith("\n") == msgstr.endswith("\n"), f"ends with a newline as msgid: {msgid!r}")
    print(f"{len(messages)} messages checked, {len(failures)} failure(s)")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
