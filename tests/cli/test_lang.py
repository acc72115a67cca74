#!/usr/bin/env python3
"""Command-line tests of --lang (SPEC section 6, docs/chinese.md): verify
feedback, step names, warnings and errors in Simplified Chinese with their
values, the language taken from LC_ALL / LC_MESSAGES / LANG, English forced by
--lang en or LANG=C, an unknown language refused with exit 2, and JSON left in
English whatever the language."""
import os
import re
import subprocess
import sys
import tempfile

from clitest import check, environment, failures, run_program

BIN = os.path.abspath(sys.argv[1])
HERE = os.path.dirname(os.path.abspath(__file__))
ANSWERS = os.path.join(HERE, "verify", "document-000.toml")


def run(*args, env=None):
    return run_program(BIN, *args, env=environment(env, drop=("LC_ALL", "LC_MESSAGES", "LANG")))


def flat(text):
    return " ".join(text.split())


# --- verify feedback in Chinese, with its numbers ------------------------------
zh = run("--lang", "zh", "verify", "river-bank", "--answers", ANSWERS)
out = flat(zh.stdout)
check(zh.returncode == 1, f"zh verify exits 1 as in English (got {zh.returncode}: {zh.stderr})")
check("10 个值，分布在 4 个答案中：7 个正确 · 1 个沿用正确 · 2 个错误 · 第一个错误：K[1,3] (bank, d3)"
      in out, f"the summary line in Chinese with its counts:\n{out[:300]}")
check("按你前面写的 K 推算是对的（它在 K[1,3] 处有错）" in out, "carried credit in Chinese")
check("计算笔误（arithmetic_slip）——乘积中有一项算错了：某个乘积应为 0.06，而不是 0.12" in out,
      "the diagnosis named and explained in Chinese, with the product's values")
check("你的答案 0.982 · 正确值 1.8455" in out, "given and expected values in Chinese")
check("错误类型：不属于任何常见错误，请逐步重算" in out, "no diagnosis, in Chinese")
check("错误（wrong）" in out and "沿用正确（carried）" in out, "statuses in Chinese with their JSON names")
check("0.50×0.30 + 0.30×0.20 + 0.60×0.10 + 0.20×0.90 = 0.45" in out, "the arithmetic itself unchanged")

# --- the environment chooses; --lang en and LANG=C force English ----------------
for env in ({"LANG": "zh_CN.UTF-8"}, {"LC_ALL": "zh_CN.UTF-8", "LANG": "C"},
            {"LC_MESSAGES": "zh_TW", "LANG": "en_US.UTF-8"}):
    r = run("verify", "river-bank", "--answers", ANSWERS, env=env)
    check(r.stdout == zh.stdout, f"{env} without --lang gives the Chinese report")
en = run("verify", "river-bank", "--answers", ANSWERS, env={"LANG": "C"})
check("10 values in 4 answers: 7 ok · 1 carried · 2 wrong" in flat(en.stdout), "LANG=C: English")
for args, env in ((["--lang", "en"], {"LANG": "zh_CN.UTF-8"}), (["--lang=en"], {"LC_ALL": "zh_CN"}),
                  ([], {})):
    r = run(*args, "verify", "river-bank", "--answers", ANSWERS, env=env)
    check(r.stdout == en.stdout, f"{args} {env}: English report")
r = run("verify", "river-bank", "--answers", ANSWERS, "--lang", "zh", env={"LANG": "C"})
check(r.stdout == zh.stdout, "--lang after the command works too")
r = run("--lang", "zh", "verify", "river-bank", "--answers", ANSWERS, "--format", "json")
e = run("verify", "river-bank", "--answers", ANSWERS, "--format", "json")
check(r.stdout == e.stdout and '"status": "wrong"' in r.stdout, "verify JSON stays English in zh")
r = run("--lang", "zh", "run", "causal-decoder", "--format", "json")
e = run("--lang", "en", "run", "causal-decoder", "--format", "json")
check(r.returncode == 0 and r.stdout == e.stdout, "run JSON stays English in zh")

# --- an unknown language -------------------------------------------------------
for args in (["--lang", "fr", "lessons"], ["lessons", "--lang=klingon"]):
    r = run(*args)
    check(r.returncode == 2, f"{args}: exit 2 (got {r.returncode})")
    check("unknown language; use en or zh" in r.stderr and args[-1].split("=")[-1] in r.stderr
          or "--lang fr" in r.stderr, f"{args}: the message names the value and the choices: {r.stderr}")
check(r.stdout == "", "nothing printed on stdout for an unknown language")

# --- errors in Chinese, with the file, key and values ---------------------------
with tempfile.TemporaryDirectory() as tmp:
    missing = os.path.join(tmp, "nowhere.toml")
    r = run("--lang", "zh", "verify", "river-bank", "--answers", missing)
    check(r.returncode == 2 and r.stderr.startswith("attn-trace：错误：") and "nowhere.toml" in r.stderr,
          f"a missing answers file: exit 2, Chinese frame, the path named: {r.stderr}")
    lesson = os.path.join(tmp, "bad.toml")
    text = subprocess.run([BIN, "lessons", "show", "river-bank"], capture_output=True,
                          text=True).stdout
    with open(lesson, "w", encoding="utf-8") as f:
        f.write(text.replace("[lesson]\n", "[lesson]\ncolour = \"blue\"\n", 1))
    r = run("--lang", "zh", "run", lesson)
    check(r.returncode == 2, f"unknown key: exit 2 (got {r.returncode})")
    check("bad.toml:" in r.stderr and "键 'lesson.colour'：未知的键" in r.stderr
          and "[lesson] 中已知的键：" in r.stderr and "story_zh" in r.stderr,
          f"unknown key in Chinese, naming file, key and the known keys: {r.stderr}")
    r = run("--lang", "en", "run", lesson)
    check("key 'lesson.colour': unknown key (known keys in [lesson]:" in r.stderr,
          f"the same error in English: {r.stderr}")
    # title_zh and story_zh are accepted, and a wrong type is refused in Chinese.
    with open(lesson, "w", encoding="utf-8") as f:
        f.write(re.sub(r'(?m)^title_zh = .*$', "title_zh = 3", text, count=1))
    r = run("--lang", "zh", "run", lesson)
    check(r.returncode == 2 and "应为字符串，实际是" in r.stderr, f"title_zh = 3 refused: {r.stderr}")

print(f"{len(failures)} failure(s)")
sys.exit(1 if failures else 0)
