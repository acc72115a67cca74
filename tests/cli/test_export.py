#!/usr/bin/python3
"""Command-line tests of `attn-trace export LESSON --to pytorch` (docs/pytorch.md).

Every embedded lesson, and a few written here for what no embedded lesson has
(PyTorch's out × in layout, in_proj_weight, a memory narrower than the
queries, a Pre-LN layer with masks, a KV cache after a Pre-LN LayerNorm), is
exported and its script run with this Python: it must exit 0 and print one
"ok" line for every step of the trace (the ids of `run --format json`), and
nn.MultiheadAttention / nn.TransformerEncoderLayer must agree where the lesson
fits them. Each step is computed from the tool's values of the steps it
reads and must lie within what floating point allows two correct results of
that operation in any summation order; the module comparisons within twice the
error carried through them (docs/pytorch.md). A script whose embedded value is
altered must fail at that step (the scripts really compare), one altered by
less than its bound must not, one altered by twice its bound must. The
options: --out writes atomically and refuses to overwrite without --force.

Usage: test_export.py PATH/TO/attn-trace [--only LESSON,...]
--only exports and runs those embedded lessons' scripts and nothing else: the
part whose numbers depend on the BLAS kernel (CTest export_pytorch_kernels,
label blas_kernels, run once per kernel).
Exit 77 (skipped) when this Python cannot import torch (apt-get install python3-torch).
"""
import concurrent.futures
import json
import os
import re
import subprocess
import sys
import tempfile

from clitest import check, failures, runner

BIN = sys.argv[1]
ONLY = sys.argv[3].split(",") if sys.argv[2:3] == ["--only"] else None
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
try:
    import torch  # noqa: F401  (only whether the scripts can run here)
except ModuleNotFoundError:
    print(f"SKIPPED: {sys.executable} has no torch (apt-get install python3-torch)")
    sys.exit(77)  # CTest's SKIP_RETURN_CODE

# The "ok" lines a script may print besides one per step.
EXTRA_OK = ("nn.MultiheadAttention:", "nn.TransformerEncoderLayer:", "float32:", "float16:",
            "bfloat16:")


run = runner(BIN)


def run_script(path):
    return subprocess.run([sys.executable, path], capture_output=True, text=True,
                          env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"})


def step_ids(lesson):
    """The forward pass's step ids: the backward pass (grad.*, and the loss's
    target) is not exported (docs/pytorch.md)."""
    r = run("run", lesson, "--format", "json", "--dtype", "f64")
    assert r.returncode == 0, r.stderr
    return [s["id"] for s in json.loads(r.stdout)["steps"]
            if not s["id"].startswith("grad.") and s["id"] != "loss.target"]


def verify_script(name, lesson, script_path, expect_torch_modules=()):
    """Runs an exported script; its ok lines must cover every step exactly once."""
    ids = step_ids(lesson)
    r = run_script(script_path)
    check(r.returncode == 0, f"{name}: script exits 0 (got {r.returncode}): "
                             f"{(r.stdout + r.stderr)[-600:]}")
    oks = [line.split()[1] for line in r.stdout.splitlines() if line.startswith("ok ")]
    step_oks = [token for token in oks if token not in EXTRA_OK]
    check(sorted(step_oks) == sorted(ids),
          f"{name}: one ok line per step ({len(step_oks)} lines, {len(ids)} steps; "
          f"missing {sorted(set(ids) - set(step_oks))[:5]}, "
          f"extra {sorted(set(step_oks) - set(ids))[:5]})")
    check(f"all {len(ids)} steps equal the tool's" in r.stdout, f"{name}: the closing line")
    for module in expect_torch_modules:
        check(f"ok   {module}" in r.stdout, f"{name}: {module} is run and agrees")
    return len(ids), r.stdout


def imports_of(script):
    return set(re.findall(r"^(?:import|from) ([\w.]+)", script, re.M))


with tempfile.TemporaryDirectory() as tmp:
    # --- every embedded lesson ------------------------------------------------------------
    lessons = sorted(f[:-5] for f in os.listdir(os.path.join(ROOT, "lessons")) if f.endswith(".toml"))
    if ONLY:
        check(set(ONLY) <= set(lessons), f"--only names embedded lessons: {ONLY}")
        lessons = [lesson for lesson in lessons if lesson in ONLY]
    else:
        check(len(lessons) >= 30, f"lessons listed: {len(lessons)}")
    scripts = {}
    for lesson in lessons:
        r = run("export", lesson, "--to", "pytorch")
        check(r.returncode == 0 and r.stderr == "", f"{lesson}: export exits 0 quietly: {r.stderr}")
        check(imports_of(r.stdout) <= {"math", "sys", "torch", "torch.nn.functional"},
              f"{lesson}: the script needs only torch and the standard library: "
              f"{imports_of(r.stdout)}")
        check(r.stdout.splitlines()[1].startswith("# Written by `attn-trace export"),
              f"{lesson}: line 2 is the tool's (no title read as an encoding declaration)")
        path = os.path.join(tmp, f"{lesson}.py")
        with open(path, "w", encoding="utf-8") as f:
            f.write(r.stdout)
        scripts[lesson] = r.stdout
    # Where the lesson fits them, PyTorch's modules run too.
    modules = {lesson: ("nn.MultiheadAttention:",) for lesson in
               ("river-bank", "two-heads", "causal-decoder", "padding-mask", "mask-polarity",
                "key-bias", "kv-cache", "kv-cache-two-heads", "sinusoidal-pe", "fill-values",
                "d512-walkthrough", "bert-base-shapes", "shapes-and-costs")}
    for lesson in ("encoder-layer-post-ln", "encoder-layer-pre-ln", "encoder-layer-gelu"):
        modules[lesson] = ("nn.MultiheadAttention:", "nn.TransformerEncoderLayer:")
    modules["fill-values-1e9-f16"] = ("float16:",)
    modules["fill-values-1e9-bf16"] = ("bfloat16:",)
    with concurrent.futures.ThreadPoolExecutor(max_workers=2) as pool:
        results = dict(zip(lessons, pool.map(
            lambda lesson: verify_script(lesson, lesson, os.path.join(tmp, f"{lesson}.py"),
                                         modules.get(lesson, ())), lessons)))
    total = sum(n for n, _ in results.values())
    print(f"{len(lessons)} embedded lessons exported and run: {total} steps compared")
    if ONLY:
        print(f"{len(failures)} failure(s)")
        sys.exit(1 if failures else 0)
    # Lessons PyTorch's module cannot compute say why, in the script.
    for lesson, why in (("raw-similarity", "it always divides the scores by √head_dim"),
                        ("fill-values-1e9", "replaces masked scores by the fill -1e+09"),
                        ("fill-values-zero", "masked_row = \"zero\""),
                        ("cross-attention", "d_k = 4 and d_v = 3"),
                        ("three-words", "W_Q is 4×3")):
        text = scripts[lesson].replace("\n    # ", " ")
        check("nn.MultiheadAttention is not run here: " in text and why in text,
              f"{lesson}: the script says why nn.MultiheadAttention is not run ({why})")
    check("fill = -inf" in scripts["fill-values"] and "nan" in scripts["fill-values"],
          "fill-values: -inf and NaN in the script")
    check("torch.eye(512)" in scripts["d512-walkthrough"], "identity weights as torch.eye")
    check('"W_Q": (768, 768),' in scripts["bert-base-shapes"], "a large given matrix: its shape only")

    # --- lessons for what no embedded lesson has ---------------------------------------------
    own = {
        # PyTorch's layout, cross-attention from a narrower memory (kdim = vdim = 3),
        # positions on both sides, keep and key padding, in_proj_bias, a quote in a token.
        "cross-out-in": ("nn.MultiheadAttention:",), "pre-ln-packed": (
            "nn.MultiheadAttention:", "nn.TransformerEncoderLayer:"),
        "kv-pre-ln": ("nn.MultiheadAttention:", "nn.TransformerEncoderLayer:"),
    }
    texts = {
        "cross-out-in": """
[model]
heads = 2
positional_encoding = "sinusoidal"
[input]
tokens = ["a \\"quoted\\" one", "b\\\\c"]
X = [[0.5, -0.2, 0.1, 0.9], [0.3, 0.8, -0.6, 0.2]]
memory_tokens = ["x", "y", "z"]
memory = [[1, 0.5, -0.5], [0.2, 0.1, 0.4], [-0.3, 0.7, 0.6]]
key_padding = [false, false, true]
keep = [[1, 1, 1], [0, 1, 1]]
[weights]
layout = "out_in"
W_Q = [[0.1, 0.2, 0.3, 0.4], [0.5, -0.6, 0.7, 0.8], [0.9, 1.0, -1.1, 1.2], [0.3, 0.1, 0.2, -0.4]]
W_K = [[0.2, -0.1, 0.4], [0.3, 0.5, -0.2], [0.7, 0.1, 0.6], [-0.5, 0.4, 0.3]]
W_V = [[0.6, 0.2, -0.1], [0.1, 0.9, 0.3], [-0.4, 0.2, 0.8], [0.5, 0.5, 0.5]]
W_O = [[1, 0, 0.5, 0], [0, 1, 0, -0.5], [0.25, 0, 1, 0], [0, 0.75, 0, 1]]
in_proj_bias = [0.1, 0.2, 0.3, 0.4, -0.1, -0.2, -0.3, -0.4, 0.01, 0.02, 0.03, 0.04]
b_O = [1, 2, 3, 4]
""",
        # nn.MultiheadAttention's packed weights in an encoder layer, Pre-LN, GELU, a
        # causal mask with a padded key, every bias, layout = "out_in" for the rest.
        "pre-ln-packed": """
[model]
heads = 2
causal = true
[input]
X = [[0.5, -0.2, 0.1, 0.9], [0.3, 0.8, -0.6, 0.2], [1.0, 0.4, 0.3, -0.7]]
key_padding = [false, false, true]
[layer]
norm = "pre"
activation = "gelu"
eps = 1e-6
[weights]
layout = "out_in"
in_proj_weight = [[0.1, 0.2, 0.3, 0.4], [0.5, -0.6, 0.7, 0.8], [0.9, 1.0, -1.1, 1.2],
                  [0.3, 0.1, 0.2, -0.4], [0.2, -0.1, 0.4, 0.3], [0.3, 0.5, -0.2, 0.1],
                  [0.7, 0.1, 0.6, -0.5], [-0.5, 0.4, 0.3, 0.2], [0.6, 0.2, -0.1, 0.3],
                  [0.1, 0.9, 0.3, -0.2], [-0.4, 0.2, 0.8, 0.1], [0.5, 0.5, 0.5, 0.5]]
in_proj_bias = [0.1, 0.2, 0.3, 0.4, -0.1, -0.2, -0.3, -0.4, 0.01, 0.02, 0.03, 0.04]
W_O = [[1, 0, 0.5, 0], [0, 1, 0, -0.5], [0.25, 0, 1, 0], [0, 0.75, 0, 1]]
b_O = [0.5, -0.5, 0.25, -0.25]
W_1 = [[0.1, 0.2, 0.3, 0.4], [0.5, 0.6, 0.7, 0.8], [-0.1, -0.2, 0.3, 0.4],
       [0.9, -0.8, 0.7, -0.6], [0.2, 0.2, -0.2, 0.2], [1.0, 0.0, 0.5, -1.0]]
b_1 = [0.1, -0.1, 0.2, -0.2, 0.3, -0.3]
W_2 = [[0.1, 0.2, 0.3, 0.4, 0.5, 0.6], [-0.6, 0.5, -0.4, 0.3, -0.2, 0.1],
       [0.7, 0.7, -0.7, 0.7, 0.0, 0.1], [0.2, -0.3, 0.4, -0.5, 0.6, -0.7]]
b_2 = [0.05, 0.1, -0.05, -0.1]
ln1_gamma = [1.5, 0.5, 1.0, 2.0]
ln1_beta = [0.1, 0.0, -0.1, 0.2]
ln2_gamma = [0.9, 1.1, 1.2, 0.8]
ln2_beta = [0.0, 0.3, 0.0, -0.3]
""",
        # A KV cache whose tokens are decoded from LayerNorm 1's rows (Pre-LN), with positions.
        "kv-pre-ln": """
[model]
heads = 2
causal = true
positional_encoding = "sinusoidal"
[input]
X = [[0.5, -0.2, 0.1, 0.9], [0.3, 0.8, -0.6, 0.2], [1.0, 0.4, 0.3, -0.7], [0.2, 0.2, 0.9, 0.1]]
[layer]
norm = "pre"
[weights]
W_Q = [[0.1, 0.2, 0.3, 0.4], [0.5, -0.6, 0.7, 0.8], [0.9, 1.0, -1.1, 1.2], [0.3, 0.1, 0.2, -0.4]]
W_K = "identity"
W_V = [[0.6, 0.2, -0.1, 0.3], [0.1, 0.9, 0.3, -0.2], [-0.4, 0.2, 0.8, 0.1], [0.5, 0.5, 0.5, 0.5]]
W_O = "identity"
b_K = [0.1, 0.2, 0.3, 0.4]
W_1 = [[1, 0, 1], [0, 1, 1], [1, 1, 0], [0.5, 0.5, 0.5]]
W_2 = [[1, 0, 0, 1], [0, 1, 1, 0], [0.5, -0.5, 0.5, -0.5]]
[decode]
kv_cache = true
""",
    }
    for name, text in texts.items():
        lesson = os.path.join(tmp, f"{name}.toml")
        with open(lesson, "w", encoding="utf-8") as f:
            f.write(text)
        path = os.path.join(tmp, f"{name}.py")
        r = run("export", lesson, "--to", "pytorch", "--out", path)
        check(r.returncode == 0, f"{name}: export exits 0: {r.stderr}")
        n, out = verify_script(name, lesson, path, own[name])
        print(f"{name}: {n} steps compared")
    check("kdim=3, vdim=3" in open(os.path.join(tmp, "cross-out-in.py"), encoding="utf-8").read(),
          "cross-out-in: a memory narrower than embed_dim gives kdim and vdim")

    # --- the scripts really compare ----------------------------------------------------------
    def altered(lesson, step, change, code_line=None, text=None):
        """The lesson's script (or `text`) with the first number of `step`'s value (at the
        end of the file) changed by `change`, or with `code_line` (old, new) replaced in
        the code."""
        text = scripts[lesson] if text is None else text
        if code_line:
            assert code_line[0] in text
            return text.replace(code_line[0], code_line[1], 1)
        head = f'    "{step}": [\n        ['
        at = text.index(head) + len(head)
        end = min(text.index(",", at), text.index("]", at))
        return text[:at] + change(text[at:end]) + text[end:]

    def run_altered(name, text):
        path = os.path.join(tmp, f"altered-{name}.py")
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)
        return run_script(path)

    cases = [
        ("a weight 1e-9 off", "river-bank", "head0.weights",
         lambda v: repr(float(v) * (1 + 1e-9)), "FAIL head0.weights: cell (0, 0)"),
        ("a score 1e-11 off", "two-heads", "head1.scores",
         lambda v: repr(float(v) + 1e-11), "FAIL head1.scores: cell (0, 0)"),
        ("NaN where the tool has a number", "river-bank", "head0.context", lambda v: "nan",
         "FAIL head0.context: cell (0, 0)"),
        ("a number where the tool has NaN", "fill-values", "head0.weights", lambda v: "0.0",
         "FAIL head0.weights: cell (0, 0)"),
        ("+inf where the tool has -inf", "fill-values", "head0.masked", lambda v: "inf",
         "FAIL head0.masked: cell (0, 0)"),
        ("a decoding step", "kv-cache", "decode.t0.head0.scores",
         lambda v: repr(float(v) * 1.001), "FAIL decode.t0.head0.scores: cell (0, 0)"),
        ("a LayerNorm step", "encoder-layer-pre-ln", "layer.ln2.var",
         lambda v: repr(float(v) * 1.000001), "FAIL layer.ln2.var: cell (0, 0)"),
    ]
    for what, lesson, step, change, expected in cases:
        r = run_altered(lesson, altered(lesson, step, change))
        check(r.returncode == 1 and expected in r.stdout,
              f"{what}: the altered script fails at {step} ({r.returncode}, "
              f"{(r.stdout + r.stderr)[-300:]})")
    # A given number changed in the code: the given step itself no longer matches.
    r = run_altered("river-bank", altered("river-bank", None, None, (
        "[0.6, 0.2, 0.7, 0.1],  # river", "[0.6, 0.2, 0.7, 0.11],  # river")))
    check(r.returncode == 1 and "FAIL X: cell (0, 3)" in r.stdout,
          f"an altered X in the code fails at X: {r.stdout[-300:]}")
    # Within its bound a difference passes; at twice it, it fails. head0.context's
    # cell (0, 0) is a sum of m products: the bound 2·γ_{m+1}·Σ|terms|, as the script
    # computes it. concat, its copy, is moved with it (a copy must be exact).
    trace = {s["id"]: s["data"] for s in json.loads(run("run", "river-bank", "--format", "json")
                                                    .stdout)["steps"]}
    terms = sum(abs(w * v[0]) for w, v in zip(trace["head0.weights"][0], trace["head0.V"]))
    m, u = len(trace["head0.V"]), 2.0 ** -53
    bound = 2 * (m + 1) * u / (1 - (m + 1) * u) * terms
    for share, passes in ((0.5, True), (2.0, False)):
        text = altered("river-bank", "head0.context", lambda v: repr(float(v) + share * bound))
        r = run_altered("river-bank", altered("river-bank", "concat",
                                              lambda v: repr(float(v) + share * bound), text=text))
        check(r.returncode == (0 if passes else 1)
              and passes == ("FAIL head0.context: cell (0, 0)" not in r.stdout),
              f"head0.context moved {share} times its bound ({bound:.3g}): "
              f"{'passes' if passes else 'fails'} ({r.returncode}, {r.stdout[-300:]})")
    r = run_altered("river-bank", altered("river-bank", "head0.scores",
                                          lambda v: repr(float(v) * (1 + 3e-12))))
    check(r.returncode == 1 and "FAIL head0.scores" in r.stdout,
          "a relative difference of 3e-12 on a score of 1.68 is beyond its bound")

    # --- options --------------------------------------------------------------------------
    out = os.path.join(tmp, "river.py")
    r = run("export", "river-bank", "--to", "pytorch", "--out", out)
    check(r.returncode == 0 and r.stdout.startswith(f"wrote {out}: 18 steps of river-bank"),
          f"--out reports the file: {r.stdout}{r.stderr}")
    check(open(out, encoding="utf-8").read() == scripts["river-bank"],
          "--out writes what standard output gets")
    check(run("export", "river-bank", "--to", "pytorch").stdout == scripts["river-bank"],
          "the same lesson exports byte-identical scripts")
    with open(out, "w", encoding="utf-8") as f:
        f.write("mine\n")
    r = run("export", "river-bank", "--to", "pytorch", "--out", out)
    check(r.returncode == 2 and "exists already; give --force to replace it" in r.stderr,
          f"an existing --out is refused: {r.returncode} {r.stderr}")
    check(open(out, encoding="utf-8").read() == "mine\n", "the refused file is left as it was")
    r = run("export", "river-bank", "--to", "pytorch", "--out", out, "--force")
    check(r.returncode == 0 and open(out, encoding="utf-8").read() == scripts["river-bank"],
          "--force replaces it")
    check(not any(f.startswith("river.py.") for f in os.listdir(tmp)), "no temporary file left")
    r = run("export", "river-bank", "--to", "pytorch", "--out", os.path.join(tmp, "new", "x.py"))
    check(r.returncode == 0 and open(os.path.join(tmp, "new", "x.py"), encoding="utf-8").read()
          == scripts["river-bank"], f"a missing folder is made: {r.returncode} {r.stderr}")
    r = run("export", "river-bank", "--to", "pytorch", "--out", os.path.join(out, "x.py"))
    check(r.returncode == 2 and "river.py" in r.stderr and not os.path.isdir(out),
          f"a file in the way of the folder: exit 2: {r.stderr}")
    for args, part in ((["export", "river-bank"], "--to is required"),
                       (["export", "river-bank", "--to", "numpy"], "numpy not in {pytorch}"),
                       (["export", "--to", "pytorch"], "lesson is required"),
                       (["export", "no-such-lesson", "--to", "pytorch"], "no-such-lesson")):
        r = run(*args)
        check(r.returncode == 2 and part in r.stderr, f"{args}: exit 2 naming {part!r}: {r.stderr}")

    # [layer] residual = false: nn.TransformerEncoderLayer cannot drop its residual sums.
    no_residual = os.path.join(tmp, "no-residual.toml")
    with open(os.path.join(ROOT, "lessons", "encoder-layer-post-ln.toml"), encoding="utf-8") as f:
        text = f.read().replace('[layer]\n', '[layer]\nresidual = false\n', 1)
    with open(no_residual, "w", encoding="utf-8") as f:
        f.write(text)
    r = run("export", no_residual, "--to", "pytorch")
    check(r.returncode == 2 and "residual = false" in r.stderr and r.stdout == "",
          f"a lesson without residual sums is refused: {r.returncode} {r.stderr}")

print(f"{len(failures)} failure(s)")
sys.exit(1 if failures else 0)
