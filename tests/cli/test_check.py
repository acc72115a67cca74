#!/usr/bin/python3
"""Command-line tests of `attn-trace check` and `attn-trace golden`: every
committed golden file passes, an altered copy fails with its step and cell,
the JSON report has the schema of issue 3 and its numbers match a plain-Python
recomputation, golden writes all or nothing (never a changed golden file
without --force), and usage errors exit 2.

Usage: test_check.py PATH/TO/attn-trace
"""
import json
import math
import os
import pathlib
import re
import subprocess
import sys
import tempfile

from clitest import check, failures, runner

BIN = sys.argv[1]
SRC = pathlib.Path(__file__).resolve().parent.parent.parent
GOLDEN = SRC / "golden"


run = runner(BIN)


NUMBER = re.compile(r"-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?")


def same_up_to_last_bits(a, b):
    """Two golden files: equal text around the numbers, numbers equal to 13 significant
    digits, or within 1e-13 (a gradient of the backward pass carries the rounding of
    every step before it: 1.3e-15 on a cell of 0.012 between OpenBLAS kernels)."""
    ta, tb = a.read_text(encoding="utf-8"), b.read_text(encoding="utf-8")
    if NUMBER.sub("#", ta) != NUMBER.sub("#", tb):
        return False
    for x, y in zip(NUMBER.findall(ta), NUMBER.findall(tb)):
        fx, fy = float(x), float(y)
        if not math.isclose(fx, fy, rel_tol=1e-13, abs_tol=1e-13):
            return False
    return True


def dot(a, b):
    return sum(x * y for x, y in zip(a, b))


# --- every lesson against its committed golden file -------------------------
r = run("check", "--all", "--golden-dir", str(GOLDEN))
check(r.returncode == 0, f"check --all exits 0 (got {r.returncode}: {r.stdout[-600:]} {r.stderr})")
lesson_count = len(list((SRC / "lessons").glob("*.toml")))
check(f"{lesson_count} lesson(s): golden {lesson_count} pass, 0 fail" in r.stdout,
      "check --all: every lesson passes its golden file")
r = run("check", "--all", "--format", "json", "--golden-dir", str(GOLDEN))
reports = json.loads(r.stdout)
check(len(reports) == lesson_count, "check --all --format json: one object per lesson")
check(all(rep["golden"]["status"] == "pass" for rep in reports), "json: every golden passes")
for rep in reports:
    check(set(rep) >= {"lesson", "golden", "claims"}, f"{rep['lesson']}: lesson, golden, claims")
    for c in rep["claims"]:
        check(set(c) >= {"step", "says", "stated", "computed", "status", "explanation"},
              f"{rep['lesson']}: claim keys")
        check(c["status"] in ("agrees", "carried", "disagrees"), f"{rep['lesson']}: claim status")
        check((c["explanation"] is None) == (c["status"] == "agrees"),
              f"{rep['lesson']}: an explanation exactly for claims that do not agree")
        cells = c["cell_status"] if isinstance(c["cell_status"], list) else [c["cell_status"]]
        cells = [x for row in cells for x in (row if isinstance(row, list) else [row])]
        expected = ("disagrees" if "slip" in cells else "carried" if "carried" in cells
                    else "agrees")
        check(c["status"] == expected, f"{rep['lesson']} {c['step']}: status from its cells")

# --- river-bank: the errata against a plain-Python computation ---------------
r = run("check", "river-bank", "--format", "json", "--golden", str(GOLDEN / "river-bank.toml"))
check(r.returncode == 0, "check river-bank exits 0")
rep = json.loads(r.stdout)
X = {"river": [0.6, 0.2, 0.7, 0.1], "bank": [0.5, 0.3, 0.6, 0.2]}
W_Q = [[0.8, 0.1, 0.2, 0.9], [0.3, 0.7, 0.4, 0.1], [0.2, 0.4, 0.9, 0.3], [0.1, 0.2, 0.3, 0.8]]
W_K = [[0.9, 0.2, 0.1, 0.3], [0.1, 0.8, 0.3, 0.2], [0.2, 0.3, 0.8, 0.1], [0.3, 0.1, 0.2, 0.9]]
col = lambda W, j: [row[j] for row in W]
q_river = [dot(X["river"], col(W_Q, j)) for j in range(4)]
k_bank = [dot(X["bank"], col(W_K, j)) for j in range(4)]
claims = {(c["step"], str(c.get("cell", c.get("row")))): c for c in rep["claims"]}
kb = claims[("K", "1")]
check(kb["status"] == "disagrees", "K(bank) disagrees")
check(kb["stated"] == [0.66, 0.54, 0.66, 0.51], "K(bank) stated as written")
check(abs(kb["computed_exact"][3] - k_bank[3]) < 1e-12 and abs(k_bank[3] - 0.45) < 1e-12,
      "K(bank)[3] computed 0.45")
check(kb["computed"][3] == 0.45, "computed given to the claim's 2 decimals")
check("W_K[d2,d3] written 0.2 (true 0.1; = W_K[d1,d3], another row)" in kb["explanation"],
      "K(bank): names the third factor, written 0.6×0.2 where W_K[2][3] is 0.1")
s01 = claims[("head0.scores", "[0, 1]")]
check(abs(s01["computed_exact"] - dot(q_river, k_bank)) < 1e-12, "Q(river)·K(bank) = 1.6755")
check(s01["stated"] == 1.727 and s01["computed"] == 1.676, "stated 1.727, computed 1.676")
check(claims[("Q", "0")]["status"] == "agrees", "Q(river) agrees")

# Carried or a real slip, recomputed here from the document's own stated numbers
# (a value exactly half a unit away rounds up, as the document rounds).
def rounds_to(value, stated, decimals):
    return abs(value - stated) <= 0.5 * 10 ** -decimals + 1e-12

doc_q, doc_kb = claims[("Q", "0")]["stated"], kb["stated"]
own01 = dot(doc_q, doc_kb)  # 0.69×0.66 + 0.50×0.54 + 0.86×0.66 + 0.85×0.51 = 1.7265
check(rounds_to(own01, 1.727, 3) and not rounds_to(s01["computed_exact"], 1.727, 3),
      "independently: Q(river)·K(bank) is right on the document's own K(bank) only")
check(s01["status"] == "carried" and abs(s01["own"] - own01) < 1e-12,
      f"Q(river)·K(bank) carried, own 1.7265 ({s01['status']}, {s01['own']})")
doc_scores = [claims[("head0.scores", f"[0, {j}]")]["stated"] for j in range(4)]
scaled = claims[("head0.scaled", "0")]
expect = ["carried" if rounds_to(s / 2, st, 4 if j == 1 else 3) else "slip"
          for j, (s, st) in enumerate(zip(doc_scores, scaled["stated"]))]
check(expect == ["carried"] * 4 and scaled["cell_status"] == expect and scaled["status"] == "carried",
      f"the scaled row: all four are the document's scores / 2, carried ({scaled['cell_status']})")
exp_row = claims[("head0.exp", "0")]
expect = ["carried" if rounds_to(math.exp(x), st, 3) else "slip"
          for x, st in zip(scaled["stated"], exp_row["stated"])]
check(expect == ["carried", "slip", "carried", "carried"], "independently: e^0.8635 is the one slip")
check(exp_row["cell_status"] == expect and exp_row["status"] == "disagrees",
      f"exp row: three carried, e^0.8635 a real slip ({exp_row['cell_status']})")
check(abs(exp_row["own"][1] - math.exp(0.8635)) < 1e-12, "its own arithmetic: e^0.8635 = 2.3714")
check("e^0.8635 = 2.37145, not 2.372" in exp_row["explanation"] and "off by" not in exp_row["explanation"],
      "the slip is named with the value of the document's own arithmetic")
r = run("check", "river-bank", "--golden", str(GOLDEN / "river-bank.toml"))
check("DISAGREES  K[1,:] (bank)" in r.stdout, "text report lists the K(bank) erratum")
check("carried    head0.scaled[0,:] (river)" in r.stdout, "text report: the scaled row carried")
check("real slip  head0.exp[river,bank]: stated 2.372" in r.stdout, "text report names the real slip")
# The report is wrapped to the width (80 here): compared with its lines joined.
check("11 checked, 1 agree, 2 carried (right on the document's own numbers), 8 with a real slip"
      in " ".join(r.stdout.split()), f"river-bank: 11 claims, 1 agrees, 2 carried, 8 real slips: {r.stdout[:400]}")

# why-scale-unscaled: 0.999 is 5000 / (5000 + 7.4) = 0.99852, the document's own numbers.
r = run("check", "why-scale-unscaled", "--format", "json", "--golden",
        str(GOLDEN / "why-scale-unscaled.toml"))
w = [c for c in json.loads(r.stdout)["claims"] if c["step"] == "head0.weights"][0]
check(rounds_to(5000 / (5000 + 7.4), 0.999, 3) and not rounds_to(w["computed_exact"], 0.999, 3),
      "independently: 0.999 is right on 5000 and 7.4, not on e^8.5 and e^2")
check(w["status"] == "carried" and abs(w["own"] - 5000 / 5007.4) < 1e-12,
      f"why-scale-unscaled's 0.999 is carried ({w['status']})")

# --- a deliberately altered golden copy fails with step and cell -------------
with tempfile.TemporaryDirectory() as tmp:
    text = (GOLDEN / "river-bank.toml").read_text(encoding="utf-8")
    start = text.index("data = [", text.index('id = "head0.weights"'))
    rows = text[start:].split("\n")
    row1 = rows[2]  # data = [, row 0, row 1
    numbers = re.findall(r"[-0-9.e]+", row1)
    altered_row = row1.replace(numbers[2], repr(float(numbers[2]) + 1e-10), 1)
    altered = text[:start] + text[start:].replace(row1, altered_row, 1)
    copy = pathlib.Path(tmp) / "river-bank.toml"
    copy.write_text(altered, encoding="utf-8")
    r = run("check", "river-bank", "--golden", str(copy))
    check(r.returncode == 1, f"altered golden: exit 1 (got {r.returncode})")
    check("head0.weights [1, 2]" in r.stdout, f"altered golden: names head0.weights [1, 2]: {r.stdout[:500]}")
    r = run("check", "river-bank", "--golden", str(copy), "--format", "json")
    mism = json.loads(r.stdout)["golden"]
    check(mism["status"] == "fail" and mism["mismatches"][0]["step"] == "head0.weights"
          and mism["mismatches"][0]["cell"] == [1, 2], "altered golden: json step and cell")
    r = run("check", "river-bank", "--golden", str(copy), "--tol", "1e-9")
    check(r.returncode == 0, "--tol 1e-9 accepts a 1e-10 change")
    r = run("check", "river-bank", "--golden", str(pathlib.Path(tmp) / "none.toml"), "--format", "json")
    check(r.returncode == 1 and json.loads(r.stdout)["golden"]["status"] == "missing",
          "a missing golden file: exit 1, status missing")

# --- golden: writes what is committed, atomically, nothing on bad input ------
with tempfile.TemporaryDirectory() as tmp:
    out = pathlib.Path(tmp) / "g"
    r = run("golden", "--all", "--out", str(out))
    check(r.returncode == 0, f"golden --all exits 0 ({r.stderr})")
    written = sorted(p.name for p in out.glob("*.toml"))
    check(written == sorted(p.name for p in GOLDEN.glob("*.toml")), "golden --all: one file per lesson")
    # The same text, and the same numbers to 13 significant digits: OpenBLAS
    # picks its kernels by CPU, and kernels with and without FMA round a
    # product's terms differently in the last bits (check's --tol is 1e-12).
    check(all(same_up_to_last_bits(out / n, GOLDEN / n) for n in written),
          "committed golden files are what `golden --all` writes (run the update-golden target)")
    check(not [p for p in out.iterdir() if p.name.startswith(".")], "no temporary files left")
    bad = pathlib.Path(tmp) / "bad.toml"
    bad.write_text("[input]\nX = [[1, 2]]\n[weights]\nW_Q = [[1, 2]]\nW_K = \"identity\"\n"
                   "W_V = \"identity\"\n", encoding="utf-8")
    fresh = pathlib.Path(tmp) / "fresh"
    r = run("golden", "river-bank", str(bad), "--out", str(fresh))
    check(r.returncode == 2 and "bad.toml" in r.stderr and "W_Q" in r.stderr,
          f"golden with a bad lesson: exit 2 naming file and key ({r.stderr})")
    check(not fresh.exists() or not any(fresh.iterdir()), "golden with a bad lesson writes nothing")
    before = (out / "river-bank.toml").read_bytes()
    r = run("golden", "river-bank", "--out", str(out / "river-bank.toml"))
    check(r.returncode == 2, "golden --out onto a file: exit 2")
    check((out / "river-bank.toml").read_bytes() == before, "the old golden file stays whole")

# --- golden: all or nothing, never a silent change ---------------------------
with tempfile.TemporaryDirectory() as tmp:
    tmp = pathlib.Path(tmp)
    out = tmp / "g"
    check(run("golden", "--all", "--out", str(out)).returncode == 0, "golden --all into a new folder")
    files = sorted(out.glob("*.toml"))
    first = {p.name: p.read_bytes() for p in files}
    stamps = {p.name: p.stat().st_mtime_ns for p in files}
    # Again: every file is identical, reported unchanged and not rewritten.
    r = run("golden", "--all", "--out", str(out))
    lines = r.stdout.splitlines()
    check(r.returncode == 0 and len(lines) == len(files)
          and all(line.startswith(f"unchanged {out}/") for line in lines),
          f"golden again: every file unchanged: {r.stdout[:300]}")
    check({p.name: p.stat().st_mtime_ns for p in files} == stamps, "unchanged files are not rewritten")
    # A golden file that would change (here: altered, and read-only) needs --force.
    animal, river = out / "animal.toml", out / "river-bank.toml"
    animal.write_bytes(first["animal.toml"].replace(b"[[step]]", b"# edited\n[[step]]", 1))
    river.write_bytes(first["river-bank.toml"] + b"# note\n")
    animal.chmod(0o444)
    edited = {p.name: p.read_bytes() for p in files}
    r = run("golden", "--all", "--out", str(out))
    check(r.returncode == 2 and "2 file(s) would change" in r.stderr
          and f"{animal} (read-only, mode 0444)" in r.stderr and str(river) in r.stderr
          and "--force" in r.stderr and "nothing was written" in r.stderr,
          f"changed golden files are named, the read-only one as such: {r.stderr}")
    check({p.name: p.read_bytes() for p in files} == edited, "without --force nothing changes")
    r = run("golden", "--all", "--out", str(out), "--force")
    check(r.returncode == 0 and f"replaced {animal} (" in r.stdout and f"replaced {river} (" in r.stdout
          and r.stdout.count("replaced ") == 2, f"--force replaces exactly the two: {r.stdout[:300]}")
    check({p.name: p.read_bytes() for p in files} == first, "--force restores the content")
    check(animal.stat().st_mode & 0o777 == 0o444, "a read-only golden file stays read-only")
    # One target that is a folder: exit 2 and not one file written (the 11 of 12).
    blocked = tmp / "blocked"
    (blocked / "river-bank.toml").mkdir(parents=True)
    r = run("golden", "--all", "--out", str(blocked))
    check(r.returncode == 2 and f"{blocked}/river-bank.toml: is a folder" in r.stderr,
          f"a folder in the way: exit 2 naming it: {r.stderr}")
    check([p.name for p in blocked.iterdir()] == ["river-bank.toml"], "nothing else was written")
    # Two lessons with one id: refused before anything is traced or written.
    dup = tmp / "dup"
    dup.mkdir()
    (dup / "animal.toml").write_bytes((SRC / "lessons" / "animal.toml").read_bytes())
    r = run("golden", "animal", str(dup / "animal.toml"), "--out", str(tmp / "d"))
    check(r.returncode == 2 and r.stderr.strip() == "attn-trace: error: golden: two lessons have the "
          f"id animal: lessons/animal.toml (embedded) and {dup / 'animal.toml'}; give each its own "
          "[lesson] id", f"duplicate ids: exit 2 naming both files: {r.stderr}")
    check(not (tmp / "d").exists(), "duplicate ids: nothing written")
    # A dangling --out link is named, not "(File exists)".
    (tmp / "link").symlink_to(tmp / "nowhere")
    r = run("golden", "animal", "--out", str(tmp / "link"))
    check(r.returncode == 2 and "is a symbolic link to" in r.stderr and "nowhere" in r.stderr
          and "File exists" not in r.stderr, f"a dangling --out link: {r.stderr}")
    # A temporary file an interrupted run left (its process is gone) is removed.
    gone = subprocess.Popen(["true"])
    gone.wait()
    stale = out / f".animal.toml.tmp-{gone.pid}"
    stale.write_bytes(b"half a golden file")
    r = run("golden", "animal", "--out", str(out))
    check(r.returncode == 0 and not stale.exists()
          and f"attn-trace: removed {stale}: a temporary file an interrupted run left" in r.stderr,
          f"a stale temporary file is removed and reported: {r.stderr}")

# --- usage and bad claims ----------------------------------------------------
r = run("check")
check(r.returncode == 2 and "--all" in r.stderr, "check without a lesson: exit 2")
r = run("check", "river-bank", "--all")
check(r.returncode == 2, "check LESSON --all: exit 2")
r = run("golden")
check(r.returncode == 2, "golden without lessons: exit 2")
with tempfile.TemporaryDirectory() as tmp:
    lesson = pathlib.Path(tmp) / "claims.toml"
    lesson.write_text("[input]\nX = [[1, 0], [0, 1]]\n[weights]\nW_Q = \"identity\"\n"
                      "W_K = \"identity\"\nW_V = \"identity\"\n[[claim]]\nstep = \"head0.score\"\n"
                      "cell = [0, 0]\nvalue = 1\n", encoding="utf-8")
    r = run("check", str(lesson), "--golden", str(pathlib.Path(tmp) / "none.toml"))
    check(r.returncode == 2 and "claims.toml:8: key 'claim[0].step'" in r.stderr and "head0.scores" in r.stderr,
          f"a claim on an unknown step: exit 2, file:line and the valid ids ({r.stderr})")

if failures:
    print(f"{len(failures)} failure(s)")
    sys.exit(1)
print("check and golden: all passed")
