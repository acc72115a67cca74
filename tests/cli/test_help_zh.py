#!/usr/bin/env python3
"""Every --help and CLI11's own errors under --lang zh (issue 23, docs/chinese.md):
CLI11's words (Usage, Options, Positionals, Subcommands, REQUIRED, Excludes, the
type names TEXT, INT, UINT and their ranges) and its parse errors are Chinese,
with the same facts (option, value, range, choices); no Latin word is left but
option names, values, command names and the terms docs/chinese.md keeps in
Latin; and --lang en is CLI11's English, unchanged."""
import os
import re
import sys

from clitest import check, environment, failures, run_program

BIN = os.path.abspath(sys.argv[1])
COMMANDS = ["run", "lessons", "verify", "practice", "exercise", "mark", "check", "golden",
            "stats", "bench", "export"]
# Commands whose option descriptions are another helper's to translate (issue 23):
# their --help is checked for CLI11's own words only, until they are done.
DESCRIPTIONS_PENDING = {"exercise", "mark", "check"}

# Latin words a Chinese text may keep (docs/chinese.md): the kept terms, the
# command names, option values, environment variables, units, placeholders.
KEPT = set("""softmax exp max min mean std sqrt log Q K V X W_Q W_K W_V W_O d_k d_v d_model d_ff
FLOPs f16 bf16 f32 f64 IEEE KV BLAS OpenBLAS CPU GPU CUDA PyTorch NumPy BERT GPT TOML JSON HTML
SVG CSV PDF LaTeX Markdown Moodle Cloze UTF-8 BOM Python float64 cuBLAS SplitMix64 Box Muller
GFLOP MiB GiB ms id ids en zh attn trace README LESSON COMMAND LC_ALL LC_MESSAGES LANG NO_COLOR
XDG_STATE_HOME samples Transformer attn-trace river-bank ROW COL dtype weights
text json markdown latex html svg cpu cuda auto always never global row numbers heatmap pytorch
csv""".split()) | set(COMMANDS) | {"show"}


def run(*args):
    return run_program(BIN, *args, env=environment(drop=("LC_ALL", "LC_MESSAGES", "LANG")))


def latin_words(text):
    """The Latin words of `text` once option names, {choices}, `code`, paths,
    step ids, NAME=VALUE pairs and the kept terms are taken out."""
    for pattern in (r"`[^`]*`", r"\{[^}]*\}", r"(?<![\w-])--?[A-Za-z][\w-]*", r"\S*/\S*",
                    r"\S*\.(toml|md|csv|json|py|xml)\b", r"\[+\w+\]+", r"\b\w+=\w+", r"\b[a-z_]+\d*\.[a-z_.]+\b",
                    r"\$\w+"):
        text = re.sub(pattern, " ", text)
    return sorted({w for w in re.findall(r"[A-Za-z][A-Za-z0-9_-]*", text)
                   if len(w) > 1 and w not in KEPT})


def positionals(help_text):
    """The names of a help's positionals (lesson, id, dir), kept in Latin like option names."""
    block = help_text.split("位置参数：", 1)[1].split("\n\n", 1)[0] if "位置参数：" in help_text else ""
    return {line.split()[0] for line in block.splitlines() if line.strip()}


# --- every --help in Chinese ---------------------------------------------------
for args in ([], *([c] for c in COMMANDS), ["lessons", "show"]):
    r = run("--lang", "zh", *args, "--help")
    name = " ".join(args) or "attn-trace"
    check(r.returncode == 0 and r.stderr == "", f"{name} --help: exit 0, nothing on stderr")
    out = r.stdout
    check(out.count("用法：attn-trace") == 1 and "选项：" in out and "显示此帮助信息并退出" in out,
          f"{name} --help: 用法、选项 and the help flag in Chinese:\n{out[:400]}")
    for english in ("Usage", "Options:", "Positionals:", "Subcommands:", "REQUIRED", "TEXT",
                    "INT", "UINT", "FLOAT", "Excludes", "Needs", "Print this help"):
        check(english not in out, f"{name} --help: CLI11's {english!r} is translated")
    if args and args[0] in DESCRIPTIONS_PENDING:
        continue
    if not args:  # the pending commands' one-line descriptions
        out = "\n".join(l for l in out.splitlines()
                        if not any(l.startswith(f"  {c} ") for c in DESCRIPTIONS_PENDING))
    left = [w for w in latin_words(out) if w not in positionals(out)]
    check(not left, f"{name} --help: no Latin word left, found {left}")

top = run("--lang", "zh", "--help").stdout
check("子命令：" in top and "用法：attn-trace [选项] 子命令" in top
      and "显示程序版本信息并退出" in top and "--limit 名称=值 ..." in top,
      f"the top help: 子命令, the usage line, --version and --limit in Chinese:\n{top[:600]}")
r = run("--lang", "zh", "run", "--help").stdout
check("位置参数：\n  lesson 文本" in r and "--precision 整数（0 到 17）" in r
      and "--format {text,json,markdown,latex,html,svg}" in r
      and "--summary 不能与 --full 同用" in r and "--width 非负整数（40 到 100000）" in r,
      f"run --help: positionals, a range, choices and an exclusion in Chinese:\n{r}")
r = run("--lang", "zh", "stats", "--help").stdout
check("--d-k 文本 必需" in r and "每个向量的分量数，1 到 100000" in r, f"stats --help:\n{r}")
r = run("--lang", "zh", "bench", "--help").stdout
check("在不同序列长度上为注意力的前向计算计时" in r and "头数 h，须整除 d_model" in r, f"bench --help:\n{r}")
r = run("--lang", "zh", "golden", "--help").stdout
check("写出基准文件" in r and "内置课程" in r, f"golden --help:\n{r}")
r = run("--lang", "zh", "export", "--help").stdout
check("PyTorch 脚本" in r and "lesson 文本 必需" in r, f"export --help:\n{r}")
# The columns stay aligned when the left one holds Chinese (display width, not bytes).
r = run("--lang", "zh", "verify", "--help").stdout
line = next(l for l in r.splitlines() if l.startswith("  --answers"))
check(line.startswith("  --answers 文本 必需" + " " * 9 + "答案文件"),
      f"verify --help: the description at column 30 (文本 and 必需 are 4 columns each): {line!r}")

# --- CLI11's errors in Chinese, with their facts; English unchanged --------------
FRAME = "。请参阅 `attn-trace --help` 和 `attn-trace COMMAND --help`。\n"
ERRORS = [
    ([], "需要给出一个子命令", "A subcommand is required"),
    (["run", "--bogus"], "无法识别的参数：--bogus", "The following argument was not expected: --bogus"),
    (["run", "river-bank", "extra"], "无法识别的参数：extra",
     "The following argument was not expected: extra"),
    (["run", "river-bank", "x", "y"], "无法识别的参数：y x",  # CLI11 lists them last first
     "The following arguments were not expected: y x"),
    (["run", "--precision", "20"], "--precision：值 20 不在 0 到 17 的范围内",
     "--precision: Value 20 not in range 0 to 17"),
    (["run", "--width", "abc"], "--width：值 abc 不在 40 到 100000 的范围内",
     "--width: Value abc not in range 40 to 100000"),
    (["run", "--format", "x"], "--format：x 不是可选值 {text,json,markdown,latex,html,svg} 之一",
     "--format: x not in {text,json,markdown,latex,html,svg}"),
    (["stats", "--d-k", "4", "--format", "xml"], "--format：xml 不是可选值 {text,json} 之一",
     "--format: xml not in {text,json}"),
    (["run", "--precision"], "--precision 后面缺少 1 个值：整数（0 到 17）",
     "--precision: 1 required INT:INT in [0 - 17] missing"),
    (["verify", "river-bank"], "缺少必需的 --answers", "--answers is required"),
    (["lessons", "show"], "缺少必需的 id", "id is required"),
    (["check", "--tol", "abc"], "无法识别的值：--tol = abc", "Could not convert: --tol = abc"),
    (["run", "--summary", "--full"], "--summary 不能与 --full 同时使用", "--summary excludes --full"),
]
for args, zh_words, en_words in ERRORS:
    r = run("--lang", "zh", *args)
    check(r.returncode == 2 and r.stdout == "", f"{args}: exit 2, nothing on stdout ({r.returncode})")
    check(r.stderr == f"attn-trace：错误：{zh_words}{FRAME}", f"{args} in Chinese: {r.stderr!r}")
    said = r.stderr.replace(FRAME, "")
    for arg in args:  # the values given are echoed as they are
        said = said.replace(arg, " ")
    check(not latin_words(said), f"{args}: no Latin word: {r.stderr!r}")
    e = run("--lang", "en", *args)
    check(e.returncode == 2 and e.stderr == f"attn-trace: error: {en_words}. See `attn-trace --help` "
          "and `attn-trace COMMAND --help`.\n", f"{args} in English as CLI11 says it: {e.stderr!r}")

# --- English help is CLI11's own ------------------------------------------------
r = run("--lang", "en", "run", "--help").stdout
check(r.startswith("Trace a lesson") and "Usage: attn-trace run [OPTIONS] [lesson]" in r
      and "\nPositionals:\n  lesson TEXT " in r and "--precision INT:INT in [0 - 17]" in r
      and "--summary Excludes: --full" in r and "Print this help message and exit" in r,
      f"run --help in English:\n{r}")
r = run("--lang", "en", "exercise", "--help").stdout
check("--seed TEXT:UINT64 REQUIRED" in r and "--students UINT:INT in [1 - 1000] Excludes: --roster" in r,
      f"exercise --help in English:\n{r}")

# --- the commands' own messages ---------------------------------------------------
for args, words in ((["stats", "--d-k", "x"], "stats：--d-k 必须是 1 到 100000 之间的整数，而不是 'x'"),
                    (["bench", "--seq", "0"], "bench：--seq 必须是 1 到 65536 之间的整数，而不是 '0'"),
                    (["bench", "--dtype", "f32"], "bench 只为 f64 计时，不支持 --dtype f32"),
                    (["golden"], "golden：请列出课程（id 或路径），或给出 --all，二者选其一"),
                    # the plugin is not built, or is built but finds no GPU here
                    (["run", "--backend", "cuda"], ("没有 CUDA 插件", "没有 CUDA 设备")),
                    (["--limit", "tokens=2", "run"], "超过了 2 的限制"),
                    (["--limit", "bogus=1", "run"], "名称取以下之一")):
    r = run("--lang", "zh", *args)
    wanted = (words,) if isinstance(words, str) else words
    check(r.returncode in (2, 3) and any(w in r.stderr for w in wanted),
          f"{args}: {words!r} in {r.stderr!r}")

print(f"{len(failures)} failure(s)")
sys.exit(1 if failures else 0)
