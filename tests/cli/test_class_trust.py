#!/usr/bin/python3
"""A class folder that cannot be turned against its teacher (issue 25, items 4, 5,
7 and finding 10), with the issue's reproducers:

- roster.csv's folder column names a sub-folder of the class, nothing else: an
  absolute path or ../../victim makes `mark` (with and without --force) exit 2
  naming roster.csv's line and the fix, and a victim folder outside the class
  stays byte for byte as it was;
- a student who edits their lesson.toml (X set to zeros, answers 0 / 0.333) is
  `tampered`, not 4 of 4; a folder copied over another's is tampered and names
  whose lesson it holds; a name in lesson.toml that is not the roster's is
  tampered; names in marks.csv come from roster.csv; an older roster.csv
  without fingerprints still marks, saying what it could not check;
- a 1 MB roster name is refused by `exercise` (the 23 MB reproducer, scaled);
- `exercise --force` with another seed replaces blank answers.toml files and
  keeps filled ones, saying why;
- a whole simulated class of 20 (honest students right and wrong, a few
  tampering): every honest student's row is the same as before anyone tampered.

Usage: test_class_trust.py PATH/TO/attn-trace
"""
import csv
import io
import math
import pathlib
import re
import shutil
import sys
import tempfile
import tomllib

from clitest import check, failures, fill_template, runner

try:
    import numpy as np
except ModuleNotFoundError:
    print(f"SKIPPED: {sys.executable} has no numpy (apt-get install python3-numpy)")
    sys.exit(77)

run = runner(sys.argv[1])


def tree(folder):
    """Every file under `folder` (relative path -> bytes), and every folder."""
    folder = pathlib.Path(folder)
    return {str(p.relative_to(folder)): (p.read_bytes() if p.is_file() else None)
            for p in sorted(folder.rglob("*"))}


def exercise(out, names, *extra, seed="2026"):
    roster = out.parent / f"{out.name}.txt"
    roster.write_text("\n".join(names) + "\n", encoding="utf-8")
    r = run("exercise", "--seed", seed, "--roster", str(roster), "--out", str(out), *extra)
    check(r.returncode == 0, f"{out.name}: exercise exits 0: {r.stderr}")
    return r


def folder_of(out, name):
    for row in roster_rows(out):
        if row["name"] == name:
            return out / row["folder"]
    raise KeyError(name)


def roster_rows(out):
    with open(out / "roster.csv", encoding="utf-8", newline="") as f:
        return list(csv.DictReader(f))


def marks(out):
    raw = (out / "marks.csv").read_bytes()
    return list(csv.DictReader(io.StringIO(raw.decode("utf-8-sig"), newline="")))


def softmax_rows(S):
    e = np.exp(S - S.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def solve(lesson, wrong=False):
    """The asked steps from the lesson alone (wrong: forgot to scale)."""
    X = np.array(lesson["input"]["X"], dtype=float)
    w = lesson["weights"]
    Q, K, V = (X @ np.array(w[k], dtype=float) for k in ("W_Q", "W_K", "W_V"))
    scores = Q @ K.T
    scaled = scores if wrong else scores / math.sqrt(lesson["model"]["d_k"])
    weights = softmax_rows(scaled)
    return {"head0.scores": scores, "head0.scaled": scaled, "head0.weights": weights,
            "head0.context": weights @ V}


def fill(folder, values):
    """Writes `values` (step -> matrix) into the template's cells, to 3 decimals."""
    fill_template(folder, lambda step, row: [f"{v:.3f}" for v in values[step][row]])


def lesson_of(folder):
    return tomllib.loads((folder / "lesson.toml").read_text(encoding="utf-8"))


def zero_x(folder):
    """The reproducer: X set to zeros in lesson.toml; answers 0 and 0.333 (weights 1/3)."""
    path = folder / "lesson.toml"
    text = path.read_text(encoding="utf-8")
    text = re.sub(r"X = \[\[.*?\]\]\n",
                  lambda m: re.sub(r"-?\d\.\d", "0.0", m.group(0)), text, flags=re.S)
    path.write_text(text, encoding="utf-8")
    lesson = lesson_of(folder)
    n, d_k = len(lesson["input"]["tokens"]), lesson["model"]["d_k"]
    fill(folder, {"head0.scores": np.zeros((n, n)), "head0.scaled": np.zeros((n, n)),
                  "head0.weights": np.full((n, n), 1 / 3), "head0.context": np.zeros((n, d_k))})


def test_roster_folders(tmp):
    """Item 4: a folder is one name of a sub-folder; anything else is exit 2, nothing written."""
    out = tmp / "a" / "cls"
    out.parent.mkdir()
    exercise(out, ["Ada", "Bob", "Eve"])
    for name in ("Ada", "Bob", "Eve"):
        fill(folder_of(out, name), solve(lesson_of(folder_of(out, name))))
    r = run("mark", str(out))
    check(r.returncode == 0, f"the honest class marks: {r.stdout}{r.stderr}")
    victim = tmp / "victim"
    (victim / "s2").mkdir(parents=True)
    (victim / "s2" / "feedback.md").write_text("the victim's own file\n")
    (victim / "s2" / "lesson.toml").write_bytes((out / "ada" / "lesson.toml").read_bytes())
    victim_before = tree(victim)
    class_before = tree(out)
    original = (out / "roster.csv").read_bytes()
    bad = [(str(victim / "created" / "deep"), "is a path, not the name of one folder"),
           ("../../victim/s2", "is a path, not the name of one folder"),
           ("..", "leaves the class folder"), (".", "leaves the class folder"),
           ("", "is empty"), (".git", "starts with '.'"), ("a\\b", "is a path"),
           ("e\x01ve", "has a control character"), ("e" * 256, "is longer than 255 bytes"),
           ("ada", "is already on line 2")]
    for folder, says in bad:
        text = original.decode("utf-8").replace("Eve,eve,", f'Eve,"{folder}",')
        (out / "roster.csv").write_bytes(text.encode("utf-8"))
        for force in ([], ["--force"]):
            r = run("mark", str(out), *force)
            fix = "remove one of the rows" if says.startswith("is already") else \
                "correct the row or remove it"
            check(r.returncode == 2 and f"{out / 'roster.csv'}:4: folder" in r.stderr
                  and says in r.stderr and fix in r.stderr and r.stdout == "",
                  f"roster folder {folder[:40]!r} {force}: exit 2 naming roster.csv:4 and the "
                  f"fix: {r.returncode} {r.stderr}")
    check(tree(victim) == victim_before and not (victim / "created").exists(),
          "nothing outside the class folder is created or changed")
    (out / "roster.csv").write_bytes(original)
    check(tree(out) == class_before, "nothing inside the class folder changed either")
    # A name or a fingerprint that is not what exercise writes: exit 2 naming the line.
    for old, new, says in [("Eve,eve,", ",eve,", "4: no name for folder \"eve\""),
                           ("Eve,eve,", "Ada,eve,", "4: \"Ada\" is already on line 2"),
                           ("Eve,eve,", "E" * 201 + ",eve,", "4: the name is 201 characters long"),
                           (",sha256:", ",sha1:", "2: fingerprint \"sha1:")]:
        (out / "roster.csv").write_bytes(original.decode().replace(old, new, 1).encode())
        r = run("mark", str(out), "--force")
        check(r.returncode == 2 and says in r.stderr, f"roster.csv {says}: {r.returncode} {r.stderr}")
    (out / "roster.csv").write_bytes(original)


def test_tampering(tmp):
    """Item 5: an edited lesson, a copied folder, another name; names from the roster."""
    out = tmp / "tamper"
    names = ["Ada", "Bob", "Eve", "Zoe"]
    exercise(out, names)
    for name in names:
        fill(folder_of(out, name), solve(lesson_of(folder_of(out, name))))
    r = run("mark", str(out))
    honest = {row["name"]: row for row in marks(out)}
    check(r.returncode == 0 and all(row["total"] == "4" for row in honest.values()),
          f"before tampering, everyone has 4 of 4: {r.stdout}")
    # The reproducer: Eve sets X to zeros and answers 0 / 0.333; before: 4 of 4, no warning.
    zero_x(out / "eve")
    r = run("verify", str(out / "eve" / "lesson.toml"), "--answers", str(out / "eve" / "answers.toml"))
    check(r.returncode == 0, f"the edited lesson verifies on its own: {r.returncode}")
    # Bob's folder copied over by Ada's (Bob hands in Ada's work); Zoe renames herself in lesson.toml.
    for f in (out / "ada").iterdir():
        shutil.copy(f, out / "bob" / f.name)
    zoe = out / "zoe" / "lesson.toml"
    zoe.write_text(zoe.read_text(encoding="utf-8").replace('student = "Zoe"', 'student = "Mallory"'),
                   encoding="utf-8")
    roster_before = (out / "roster.csv").read_bytes()
    r = run("mark", str(out), "--force")
    check(r.returncode == 1, f"tampered folders are problems: exit 1, got {r.returncode} {r.stderr}")
    rows = marks(out)
    check([row["name"] for row in rows] == names, f"one row per roster student, roster's names: "
                                                  f"{[row['name'] for row in rows]}")
    by = {row["name"]: row for row in rows}
    check(by["Ada"] == honest["Ada"], f"Ada, whose folder was copied, is marked as before: {by['Ada']}")
    eve, bob, zoe_row = by["Eve"], by["Bob"], by["Zoe"]
    check(eve["problem"].startswith(f"tampered: {out / 'eve' / 'lesson.toml'} is not the lesson "
                                    "exercise wrote for Eve: its fingerprint is not the one on "
                                    "roster.csv line 4;") and eve["total"] == "0"
          and eve["head0.scores (1)"] == "" and eve["variant"] == honest["Eve"]["variant"],
          f"Eve's zeroed X is tampered, 0 points: {eve}")
    check(bob["problem"].startswith(f"tampered: {out / 'bob' / 'lesson.toml'} is the lesson of Ada "
                                    "(folder ada), not Bob's: copied from that folder?")
          and bob["total"] == "0", f"Bob's folder holds Ada's lesson: {bob}")
    check(zoe_row["problem"].startswith("tampered:") and zoe_row["name"] == "Zoe",
          f"a renamed lesson.toml is tampered; the name is the roster's: {zoe_row}")
    check(f"not marked: eve: tampered: " in r.stdout and "not marked: bob: tampered: " in r.stdout,
          f"mark's output lists the tampered folders: {r.stdout}")
    summary = (out / "summary.md").read_text(encoding="utf-8")
    check("4 students · 1 marked · 3 tampered (below)" in summary and "\n## Tampered\n" in summary
          and "## Not marked" not in summary
          and "| Ada | ada | marked; its lesson.toml is also in folder bob (copied?) |" in summary
          and "| Bob | bob | tampered: " in summary and "| Eve | eve | tampered: " in summary,
          f"summary.md lists the tampered apart, and the copied student: {summary}")
    feedback = (out / "eve" / "feedback.md").read_text(encoding="utf-8")
    check(feedback.startswith("# Feedback: Eve\n\nNot marked: tampered: "), f"Eve's feedback: {feedback}")
    check((out / "roster.csv").read_bytes() == roster_before, "mark never writes roster.csv")
    # The fix the message gives: the command at the top of index.md, with --force.
    command = re.search(r"```\n(attn-trace exercise .*) --out DIR\n", (out / "index.md").read_text())
    args = command.group(1).split()[1:]
    args[args.index("--roster") + 1] = str(tmp / "tamper.txt")
    r = run(*args, "--out", str(out), "--force")
    check(r.returncode == 0 and r.stderr.count("attn-trace: kept ") == 4,
          f"exercise --force puts the lessons back and keeps the 4 filled answers: {r.stderr}")
    r = run("mark", str(out), "--force")
    rows = {row["name"]: row for row in marks(out)}
    check(r.returncode == 1 and rows["Ada"] == honest["Ada"] and rows["Zoe"] == honest["Zoe"]
          and rows["Eve"]["problem"] == "" and rows["Eve"]["total"] != "4"
          and "these are the answers of Ada" in rows["Bob"]["problem"],
          f"after the lessons are put back: Zoe as before, Eve's zeros marked wrong, Bob holds "
          f"Ada's answers: {rows}")
    # A copy of a folder beside the roster's: tampered, naming whose lesson it is.
    shutil.copytree(out / "ada", out / "ada-2")
    r = run("mark", str(out), "--force")
    rows = {row["folder"]: row for row in marks(out)}
    check(rows["ada-2"]["problem"].startswith(
        f"tampered: {out / 'ada-2' / 'lesson.toml'}, in a folder not on roster.csv, is the lesson "
        "of Ada (folder ada)") and rows["ada-2"]["name"] == "ada-2" and rows["ada"] == honest["Ada"],
        f"a copied folder off the roster: {rows.get('ada-2')}")


def test_old_roster(tmp):
    """A roster.csv without fingerprints (an older attn-trace): marked, names checked, noted."""
    out = tmp / "old"
    exercise(out, ["Ada", "Bob"])
    for name in ("Ada", "Bob"):
        fill(folder_of(out, name), solve(lesson_of(folder_of(out, name))))
    r = run("mark", str(out))
    fingerprinted = (out / "marks.csv").read_bytes()
    summary = (out / "summary.md").read_text(encoding="utf-8")
    check(r.returncode == 0 and "Not checked" not in summary, f"a new class is checked: {summary}")
    text = (out / "roster.csv").read_text(encoding="utf-8")
    (out / "roster.csv").write_text(re.sub(r",[^,\n]*\n", "\n", text), encoding="utf-8", newline="")
    check((out / "roster.csv").read_bytes().startswith(b"name,folder,variant\nAda,ada,"),
          "an old roster.csv")
    r = run("mark", str(out), "--force")
    summary = (out / "summary.md").read_text(encoding="utf-8")
    check(r.returncode == 0 and (out / "marks.csv").read_bytes() == fingerprinted,
          f"an old roster.csv marks the same: {r.returncode} {r.stderr}")
    check("\n## Not checked\n\nThe lesson.toml of 2 marked students could not be checked for edits: "
          "roster.csv has no fingerprint for them" in summary and ": Ada, Bob." in summary,
          f"summary.md says what could not be checked: {summary}")
    bob = out / "bob" / "lesson.toml"
    bob.write_text(bob.read_text(encoding="utf-8").replace('student = "Bob"', 'student = "Ada"'),
                   encoding="utf-8")
    r = run("mark", str(out), "--force")
    rows = marks(out)
    check(r.returncode == 1 and [row["name"] for row in rows] == ["Ada", "Bob"]
          and rows[1]["problem"].startswith(f"tampered: {bob} is the lesson of Ada (folder ada), "
                                            "not Bob's"),
          f"without fingerprints a lesson naming another student is still caught: {rows}")


def test_long_name(tmp):
    """Finding 10, scaled: a 1 MB roster name is refused before anything is written."""
    roster = tmp / "long.txt"
    roster.write_text("Ada\n" + "x" * 1_000_000 + "\n", encoding="utf-8")
    r = run("exercise", "--seed", "1", "--roster", str(roster), "--out", str(tmp / "never"))
    check(r.returncode == 2 and f"{roster}:2: this name is 1000000 characters long; a name is at "
          "most 200 characters" in r.stderr and not (tmp / "never").exists(),
          f"a 1 MB name: exit 2 naming the line: {r.returncode} {r.stderr[:300]}")
    roster.write_text("é" * 200 + "\n", encoding="utf-8")
    r = run("exercise", "--seed", "1", "--roster", str(roster), "--out", str(tmp / "long"))
    check(r.returncode == 0, f"200 characters (400 bytes) is a name: {r.stderr}")


def test_force_new_seed(tmp):
    """Item 7: exercise --force with another seed replaces blank templates, keeps filled ones."""
    out = tmp / "reseed"
    exercise(out, ["Ada", "Bob", "Eve"], seed="7")
    fill(out / "ada", solve(lesson_of(out / "ada")))
    ada = (out / "ada" / "answers.toml").read_bytes()
    old_variant = lesson_of(out / "ada")["exercise"]["variant"]
    with open(out / "eve" / "answers.toml", "a", encoding="utf-8") as f:
        f.write("# nothing typed in yet\n")  # blank still: no number in any cell
    (out / "zed").mkdir()
    fresh = tmp / "fresh"
    exercise(fresh, ["Ada", "Bob", "Eve"], seed="8")
    r = exercise(out, ["Ada", "Bob", "Eve"], "--force", seed="8")
    new_variant = lesson_of(out / "ada")["exercise"]["variant"]
    check((out / "ada" / "answers.toml").read_bytes() == ada, "Ada's filled answers are kept")
    check(r.stderr == f"attn-trace: kept {out / 'ada' / 'answers.toml'}: it holds answers to "
          f"variant {old_variant}, but the new lesson.toml beside it is variant {new_variant}, so "
          "mark will refuse it; delete it (or move it away) and run again to get a blank template "
          "of the new variant, or run exercise with the old --seed and roster\n",
          f"one line for the kept file, with the fix: {r.stderr}")
    for name in ("bob", "eve"):
        check((out / name / "answers.toml").read_bytes() == (fresh / name / "answers.toml").read_bytes(),
              f"{name}'s blank template is the new variant's")
    r = run("mark", str(out))
    rows = {row["name"]: row for row in marks(out)}
    check(r.returncode == 1 and rows["Bob"]["problem"] == "" and rows["Eve"]["problem"] == ""
          and "these are the answers of Ada (variant " + old_variant in rows["Ada"]["problem"],
          f"only the kept file is refused; before, every student was: {rows}")
    (out / "ada" / "answers.toml").write_text("not toml [", encoding="utf-8")
    r = exercise(out, ["Ada", "Bob", "Eve"], "--force", seed="8")
    check(r.stderr == f"attn-trace: kept {out / 'ada' / 'answers.toml'}: it is not valid TOML, so "
          "it may hold a student's work; delete it (or move it away) and run again to get a blank "
          "template\n", f"a broken answers file is kept too: {r.stderr}")


def test_simulated_class(tmp):
    """20 students: honest ones right or wrong, a few tampering; honest marks unchanged."""
    out = tmp / "class20"
    names = [f"Student {chr(65 + i)}" for i in range(20)]
    exercise(out, names)
    wrong = set(names[1::3])
    for name in names:
        fill(folder_of(out, name), solve(lesson_of(folder_of(out, name)), wrong=name in wrong))
    r = run("mark", str(out))
    before = {row["name"]: row for row in marks(out)}
    check(r.returncode == 0 and all((row["total"] == "4") == (name not in wrong)
                                    for name, row in before.items()),
          f"the honest class: right ones 4 of 4, unscaled ones less: {r.stdout}")
    # Tampering habits: zeroed X (2), a folder copied over another's (1), a renamed lesson (1).
    zero_x(folder_of(out, names[0]))
    zero_x(folder_of(out, names[1]))
    for f in folder_of(out, names[2]).iterdir():
        shutil.copy(f, folder_of(out, names[3]) / f.name)
    renamed = folder_of(out, names[4]) / "lesson.toml"
    renamed.write_text(renamed.read_text(encoding="utf-8").replace(names[4], names[5]),
                       encoding="utf-8")
    tamperers = {names[0], names[1], names[3], names[4]}
    r = run("mark", str(out), "--force")
    after = {row["name"]: row for row in marks(out)}
    check(r.returncode == 1 and list(after) == names, f"20 rows in roster order: {r.returncode}")
    for name in names:
        if name in tamperers:
            check(after[name]["problem"].startswith("tampered: ") and after[name]["total"] == "0",
                  f"{name} is tampered: {after[name]}")
        else:
            check(after[name] == before[name], f"{name}'s marks are unchanged: {after[name]}")
    check(r.stdout.count(": tampered: ") == 4, f"four tampered, no false alarm: {r.stdout}")


with tempfile.TemporaryDirectory() as tmp_name:
    tmp = pathlib.Path(tmp_name)
    test_roster_folders(tmp)
    test_tampering(tmp)
    test_old_roster(tmp)
    test_long_name(tmp)
    test_force_new_seed(tmp)
    test_simulated_class(tmp)

if failures:
    print(f"{len(failures)} failure(s)")
    sys.exit(1)
print("ok")
