#!/usr/bin/env python3
"""No English left under --lang zh (issue 23, docs/chinese.md "Kept in Latin").

Runs every command and format a person reads over every embedded lesson with
--lang zh — run (text, --expand, --summary, html, svg, markdown, latex),
check, verify, practice (terminal and page), lessons, stats, bench, golden,
export, every --help and a set of command-line errors — and an exercise class
marked with `mark --lang zh`; takes away what stays Latin (step ids, numbers,
formulas' symbols, file names, options, the lesson's own token labels and the
short documented list of terms), and fails on any Latin word left.

Usage: test_no_english.py ATTN_TRACE [--report] [--only KIND]
  --report  print the count of Latin words left per kind of output, and the
            most frequent words, instead of failing on them"""
import collections
import glob
import html
import json
import os
import re
import subprocess
import sys
import tempfile
import tomllib

EXE = os.path.abspath(sys.argv[1])
REPORT = "--report" in sys.argv
ONLY = sys.argv[sys.argv.index("--only") + 1] if "--only" in sys.argv else None

# Terms kept in Latin in Chinese text (docs/chinese.md, "Kept in Latin").
KEPT = set("""
softmax exp max min mean std sqrt log argmax arg ln sin cos mod
Q K V X W PE Q K V O I q k v x d n m h t i j c a e E S A C b
FLOPs FLOP GFLOP GFLOPs MiB KiB GiB MB GB KB ms
f16 bf16 f32 f64 IEEE KV BLAS OpenBLAS CPU GPU CUDA PyTorch NumPy BERT GPT ReLU GELU
TOML JSON HTML SVG CSV PDF LaTeX Markdown Moodle Cloze UTF BOM WebAssembly
WordPiece inf NaN nan eps pid XDG Box Muller SplitMix N Transformer LN Pre-LN Post-LN seq id QK
Softmax dk dropout erf FFN tril triu ones RSS LANG LC_ALL LC_MESSAGES memory
text json svg pdf tokens heads d_model file_mb step_mcells trace_gb output_mb
Var tanh MultiHead MHA JavaScript MQA GQA RoPE ALiBi
FlashAttention elu
dA dS dQ dK dV dC dX dY dL D grad GELU' T L ID upstream half_sq
auto always never global row numbers heatmap csv dir lesson README dtype samples Python
batch queries keys view transpose forward True true
Longformer Swin
cpu cuda none markdown latex html moodle pytorch en zh
s h b q
ok carried rounded imprecise wrong blank missing unreadable unscaled rounding
agrees disagrees slip pass fail
scores scaled masked row_sum sum weights context concat output
""".split())
COMMANDS = {"run", "verify", "check", "lessons", "practice", "exercise", "mark", "golden",
            "stats", "bench", "export", "show", "help", "attn-trace"}
ALL_TOKENS = set()
# The practice page needs the WebAssembly engine beside the program (a build
# with -DATTN_WASM=OFF, as the sanitizer builds, has none: the page is skipped).
HAS_ENGINE = os.path.exists(os.path.join(os.path.dirname(EXE), "attn-engine.wasm.gz"))
failures = []
counts = collections.Counter()
words_left = collections.Counter()
examples = {}


def zh(*args, stdin=None, cwd=None):
    r = subprocess.run([EXE, "--lang", "zh", *args], input=stdin, capture_output=True,
                       text=True, cwd=cwd, timeout=120)
    return r.stdout + "\n" + r.stderr


def visible_text(text, kind):
    """The words a person reads in `text`, a document of `kind`."""
    if kind in ("html", "svg", "xml"):
        text = re.sub(r"(?is)<(script|style)\b.*?</\1>", " ", text)
        text = re.sub(r"(?s)<!--.*?-->", " ", text)
        text = re.sub(r"(?s)<[^>]*>", " ", text)
        text = html.unescape(html.unescape(text))  # Moodle's question text is escaped twice
        text = re.sub(r"(?s)<[^>]*>", " ", text)
    if kind == "latex":
        text = text.replace("\\hspace{0pt plus 0.1em}", "")  # where Chinese may break
        text = re.sub(r"(?s)^.*?\\begin\{document\}", " ", text)  # the preamble: fonts, macros
        text = re.sub(r"(?m)(?<!\\)%.*$", " ", text)
        text = re.sub(r"\\(begin|end|usepackage|documentclass|setCJK\w*|[a-z]*skip|hspace|vspace|"
                      r"rule|hline|cline|multicolumn|newcommand|renewcommand)\*?(\[[^\]]*\])?(\{[^}]*\})*",
                      " ", text)
        text = re.sub(r"\$[^$]*\$", " ", text)
        text = re.sub(r"\\[A-Za-z]+\*?", " ", text)
    if kind == "toml":  # an answers template: its comments are read, its keys are the format
        text = "\n".join(l.split("#", 1)[1] for l in text.splitlines() if "#" in l)
    if kind == "csv":
        text = text.splitlines()[0] if text else ""
    return text


LETTERS = "A-Za-z\u00c0-\u00d6\u00d8-\u00f6\u00f8-\u024f"  # Latin letters, accented ones too (Müller is one word)
LETTER = f"[{LETTERS}]"


# A lesson's sources: the documents' own headings, quoted as they are written
# (some hold Latin: "Multi-Head", "Maskpadding"), on the 来源 line and the
# lines of the documents' titles under it.
SOURCE = re.compile(r"(?m)^(\s*\*?来源\*?：.*(\n  (?!\S*：).*)*|  \d{3}: .*)$|"
                    r'<p class="source">[^<]*</p>|\\noindent 来源：.*$')


def latin_words(text, allowed):
    """The Latin words of `text` outside what stays Latin."""
    text = SOURCE.sub(" ", text)
    text = re.sub(r"“[^”\u4e00-\u9fff]*”", " ", text)  # a Latin phrase quoted as written
    text = re.sub(r"\bnot handed in\b", " ", text)  # a status name (kept in Latin)
    text = re.sub(r"\bid,name\b", " ", text)  # a CSV header, as the roster's first line
    text = re.sub(f"(?<!{LETTER})[A-Za-z](?![{LETTERS}'’])", " ", text)  # one letter: a symbol
    text = re.sub(r"`[^`\n]*`", " ", text)                       # code spans
    text = re.sub(r"https?://\S+", " ", text)
    text = re.sub(r"\S*[/\\]\S*", " ", text)                     # paths
    text = re.sub(r"\S+\.(toml|md|csv|json|html|svg|tex|xml|py|pdf|txt|mo|po)\b", " ", text)
    text = re.sub(r"(?<![\w-])--?[A-Za-z][\w-]*", " ", text)     # options
    text = re.sub(r"[A-Za-z_]*\w*[_\d.\[]\w*[\w.\[\],:'’·-]*\]?", " ", text)  # ids, numbers, refs
    out = []
    for w in re.findall(f"{LETTER}(?:[{LETTERS}'’-]*{LETTER})?", text):
        if w in KEPT or w in COMMANDS or w in allowed or w.lower() in {a.lower() for a in allowed}:
            continue
        if len(w) >= 2 and any(a.startswith(w) for a in allowed):  # a label clipped to fit: "rive…"
            continue
        if "-" in w and all(p in allowed or p in KEPT for p in w.split("-")):
            continue
        out.append(w)
    return out


def scan(kind, text, allowed, where):
    if ONLY and ONLY != kind:
        return
    left = latin_words(text, allowed)
    counts[kind] += len(left)
    words_left.update(left)
    if left and kind not in examples:
        examples[kind] = (where, left[:12])
    if left and not REPORT:
        failures.append(f"{kind}: {where}: Latin words left: {sorted(set(left))[:20]}")


def lesson_ids():
    """Every embedded lesson's id, variants included (the files of lessons/)."""
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    return sorted(os.path.basename(p)[:-5] for p in glob.glob(os.path.join(root, "lessons", "*.toml")))


def lesson_words(lesson):
    """What a lesson's outputs may show in Latin: lesson ids and its token labels."""
    d = json.loads(subprocess.run([EXE, "run", lesson, "--format", "json"], capture_output=True,
                                  text=True).stdout)
    words = set(LESSON_IDS) | {p for i in LESSON_IDS for p in i.split("-")}
    for s in d["steps"]:
        for labels in (s.get("rows") or [], s.get("cols") or []):
            for label in labels:
                words.update(re.findall(r"[A-Za-z]+", str(label)))
                words.update(re.findall(r"[A-Za-z][A-Za-z'’]*[A-Za-z]", str(label)))
    return words, d


def wrong_answers(d):
    """An answers file with the habits verify diagnoses: unscaled scores as the
    scaled ones, exponentials as the weights, one right row."""
    steps = {s["id"]: s for s in d["steps"]}
    out = []
    pairs = [("head0.scaled", "head0.scores"), ("head0.weights", "head0.exp"),
             ("head0.scores", "head0.scores")]
    for step, source in pairs:
        if step in steps and source in steps and steps[source].get("data"):
            row = steps[source]["data"][0]
            if all(isinstance(v, (int, float)) for v in row):
                out.append(f'[[answer]]\nstep = "{step}"\nrow = 0\nvalues = {json.dumps(row)}\n')
    return "\n".join(out)


def scan_lesson(lesson, tmp):
    allowed, d = lesson_words(lesson)
    for args, kind in [((), "run"), (("--expand", "0,1"), "run --expand"),
                       (("--summary",), "run --summary"), (("--format", "html"), "html"),
                       (("--format", "html", "--expand", "0,1"), "html"),
                       (("--format", "svg"), "svg"), (("--format", "markdown", "--expand", "0,1"),
                                                     "markdown"),
                       (("--format", "latex", "--expand", "0,1"), "latex")]:
        kind_of = kind.split()[0] if kind in ("html", "svg", "markdown", "latex") else "text"
        scan(kind, visible_text(zh("run", lesson, *args), kind_of), allowed, f"run {lesson} {' '.join(args)}")
    scan("check", zh("check", lesson), allowed, f"check {lesson}")
    answers = wrong_answers(d)
    if answers:
        path = os.path.join(tmp, f"{lesson}.answers.toml")
        with open(path, "w") as f:
            f.write(answers)
        scan("verify", zh("verify", lesson, "--answers", path), allowed, f"verify {lesson}")
    scan("practice", zh("practice", lesson, "--save", os.path.join(tmp, f"{lesson}.p.toml"),
                        stdin="0.5\nh\nh\ns\nb\n?\nq\n"), allowed, f"practice {lesson}")
    if not HAS_ENGINE:
        return
    r = subprocess.run([EXE, "--lang", "zh", "practice", lesson, "--format", "html"],
                       capture_output=True, text=True, timeout=120)
    if not r.stdout.startswith("<!DOCTYPE html>"):
        failures.append(f"practice {lesson} --format html wrote no page: {r.stderr[:300]}")
    scan("practice page", visible_text(r.stdout, "html") + r.stderr, allowed,
         f"practice {lesson} --format html")


def scan_commands(tmp):
    allowed = set(LESSON_IDS)
    scan("lessons", zh("lessons"), ALL_TOKENS, "lessons")  # titles quote their lessons' tokens
    scan("stats", zh("stats", "--d-k", "16", "--samples", "2000"), allowed, "stats")
    scan("bench", zh("bench", "--seq", "8", "16", "--d-model", "8", "--heads", "2"), allowed, "bench")
    scan("golden", zh("golden", "river-bank", "--out", os.path.join(tmp, "golden")), allowed, "golden")
    scan("export", zh("export", "river-bank", "--to", "pytorch", "--out", os.path.join(tmp, "x.py")),
         allowed, "export")
    for command in [[], ["run"], ["lessons"], ["lessons", "show"], ["verify"], ["practice"],
                    ["exercise"], ["mark"], ["check"], ["golden"], ["stats"], ["bench"], ["export"]]:
        scan("--help", zh(*command, "--help"), allowed, " ".join(command + ["--help"]))
    for bad in [["run", "--no-such-option"], ["run", "river-bank", "--precision", "99"],
                ["run", "river-bank", "--format", "pdf"], ["verify", "river-bank"],
                ["run", "river-bank", "extra"], [], ["run", "no-such-lesson"],
                ["run", "river-bank", "--expand", "x"], ["bench", "--seq", "abc"]]:
        typed = {w for a in bad for w in re.findall(r"[A-Za-z][\w-]*", a)}  # what the user typed
        scan("errors", zh(*bad), allowed | typed, " ".join(bad))


def scan_class(tmp):
    folder = os.path.join(tmp, "class")
    roster = os.path.join(tmp, "roster.csv")
    with open(roster, "w", encoding="utf-8") as f:
        f.write("张伟\nAnna Müller\n李娜\n")
    out = zh("exercise", "--seed", "7", "--roster", roster, "--out", folder, "--format", "markdown",
             "latex", "html", "moodle")
    students = sorted(e for e in os.listdir(folder) if os.path.isdir(os.path.join(folder, e)))
    allowed = {"Anna", "Müller", "pad", "anna-müller"}  # her folder too
    for student in students:  # each sheet's token labels
        lesson = os.path.join(folder, student, "lesson.toml")
        if os.path.exists(lesson):
            with open(lesson, "rb") as f:
                data = tomllib.load(f)
            for key in ("tokens", "memory_tokens"):
                for label in data.get("input", {}).get(key, []) + data.get(key, []):
                    allowed.update(re.findall(r"[A-Za-z]+", label))
    scan("exercise", out, allowed, "exercise")
    for k, student in enumerate(students[:2]):  # one hands in a filled template, one nothing
        path = os.path.join(folder, student, "answers.toml")
        if k == 0 and os.path.exists(path):
            with open(path, encoding="utf-8") as f:
                text = f.read()
            with open(path, "w", encoding="utf-8") as f:
                f.write(re.sub(r"(?m)^(value = )\S*$", r"\g<1>0.5", text))
    scan("mark", zh("mark", folder), allowed, "mark")
    kinds = {".md": "markdown", ".html": "html", ".tex": "latex", ".xml": "xml", ".csv": "csv",
             ".toml": "toml"}
    for root, _, files in os.walk(folder):
        for name in files:
            ext = os.path.splitext(name)[1]
            if ext not in kinds or name in ("lesson.toml", "marks.json") or name == "roster.csv":
                continue
            with open(os.path.join(root, name), encoding="utf-8") as f:
                text = visible_text(f.read(), kinds[ext])
            scan(f"class {name}", text, allowed, os.path.relpath(os.path.join(root, name), folder))


LESSON_IDS = lesson_ids()
if not HAS_ENGINE:
    print("no attn-engine.wasm.gz beside the program: the practice pages are not read")
with tempfile.TemporaryDirectory() as tmp:
    for lesson in LESSON_IDS:
        ALL_TOKENS.update(lesson_words(lesson)[0])
    for lesson in LESSON_IDS:
        scan_lesson(lesson, tmp)
    scan_commands(tmp)
    scan_class(tmp)

if REPORT:
    for kind, n in sorted(counts.items()):
        print(f"{n:7d}  {kind}")
    print(f"{sum(counts.values()):7d}  in all")
    print("most frequent:", ", ".join(f"{w} {n}" for w, n in words_left.most_common(40)))
    for kind, (where, left) in sorted(examples.items()):
        print(f"  e.g. {kind}: {where}: {left}")
    sys.exit(0)
for f in failures[:60]:
    print("FAIL:", f)
print(f"{sum(counts.values())} Latin word(s) left in {len(failures)} output(s)")
sys.exit(1 if failures else 0)
