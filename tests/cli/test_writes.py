#!/usr/bin/python3
"""What attn-trace writes, attacked (issue 25, findings 4 and 9): no command
writes through a symbolic link planted in a class folder, a golden folder or
at an export target, with or without --force (exit 2, the victim unchanged
byte for byte); one writer of a folder at a time (a second mark while another
holds the folder's lock exits 2 at once, naming it, and two marks at once
never mix their files); and a commit killed during its renames is completed by
the next run (every file from one run).

Usage: test_writes.py PATH/TO/attn-trace
"""
import csv
import fcntl
import io
import os
import pathlib
import shutil
import subprocess
import sys
import tempfile

from clitest import check, environment, failures, runner

BIN = sys.argv[1]
run = runner(BIN)
LINK = "and attn-trace never writes through a link: remove the link (or write elsewhere) and run again"


def tree(root):
    """Every file below `root` (relative path -> bytes)."""
    root = pathlib.Path(root)
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*"))
            if p.is_file() and not p.is_symlink()}


def folders(class_dir):
    """The student folders of a class, from its roster.csv."""
    text = (class_dir / "roster.csv").read_text(encoding="utf-8")
    return [row["folder"] for row in csv.DictReader(io.StringIO(text))]


def exercise(out, seed, students, *extra, env=None):
    return run("exercise", "--seed", str(seed), "--students", str(students), "--out", str(out),
               *extra, env=env)


def refused_link(r, path, to, what):
    """exit 2, naming the path, the link's text and that nothing was written."""
    check(r.returncode == 2 and f"{path}: is a symbolic link to {to}, {LINK}" in r.stderr
          and "nothing was written" in r.stderr and "earlier mark" not in r.stderr,
          f"{what}: exit 2 naming the link: {r.returncode} {r.stderr}")


def test_planted_links(tmp):
    """marks.csv, a student's feedback.md, a golden file and an export target
    planted as links to a victim: refused, with and without --force."""
    victim = tmp / "victim"
    victim.mkdir()
    cls = tmp / "class"
    check(exercise(cls, 7, 3).returncode == 0, "exercise writes the class")
    first = run("mark", str(cls))
    check(first.returncode in (0, 1), f"a first mark: {first.returncode} {first.stderr}")
    s1, s2, s3 = folders(cls)
    name, target = "marks.csv", cls / "marks.csv"
    (victim / name).write_bytes(b"the victim's own " + name.encode())
    target.unlink()
    text = f"../victim/{name}"
    target.symlink_to(text)
    before = tree(cls)
    for force in ([], ["--force"]):
        r = run("mark", str(cls), "--points", str(points(tmp)), *force)
        refused_link(r, target, text, f"mark {' '.join(force)} with {name} a link")
        check((victim / name).read_bytes() == b"the victim's own " + name.encode(),
              f"mark {force}: the victim of {name} unchanged")
        check(tree(cls) == before and target.is_symlink(),
              f"mark {force}: nothing in the class changed")
    target.unlink()
    # A student's own feedback.md or answers.toml made a link (what a student
    # who can write only in their folder can do): that student is not marked
    # and gets no feedback; the rest of the class is marked and written.
    (victim / "feedback.md").write_bytes(b"the victim's own feedback.md")
    (cls / s2 / "feedback.md").unlink()
    (cls / s2 / "feedback.md").symlink_to("../../victim/feedback.md")
    (cls / s3 / "answers.toml").unlink()
    (cls / s3 / "answers.toml").symlink_to(f"../{s1}/answers.toml")
    r = run("mark", str(cls), "--force")
    check(r.returncode == 1 and f"not marked: {s2}: {cls / s2 / 'feedback.md'} is a symbolic link "
          "to ../../victim/feedback.md: mark reads and writes a student's folder only as real "
          "files and folders" in r.stdout
          and f"not marked: {s3}: {cls / s3 / 'answers.toml'} is a symbolic link to "
          f"../{s1}/answers.toml" in r.stdout
          and "marked 0 of 3 student(s), 1 not handed in" in r.stdout,  # s1: the blank template
          f"mark with a student's feedback.md and another's answers.toml links: exit 1, those two "
          f"not marked: {r.returncode} {r.stdout} {r.stderr}")
    check((victim / "feedback.md").read_bytes() == b"the victim's own feedback.md"
          and (cls / s2 / "feedback.md").is_symlink() and (cls / s1 / "feedback.md").is_file()
          and "symbolic link" in (cls / "marks.csv").read_text(encoding="utf-8-sig"),
          "the linked feedback.md's victim unchanged, the others' feedback and marks.csv written")
    (cls / s2 / "feedback.md").unlink()
    check(not (cls / ".attn-trace.lock").exists() and not (cls / ".attn-trace.journal").exists(),
          "a run leaves no lock file and no journal behind")

    golden = tmp / "golden"
    check(run("golden", "animal", "river-bank", "--out", str(golden)).returncode == 0,
          "golden writes two files")
    (victim / "animal.toml").write_bytes(b"the victim's golden file")
    (golden / "animal.toml").unlink()
    (golden / "animal.toml").symlink_to(victim / "animal.toml")
    for force in ([], ["--force"]):
        r = run("golden", "animal", "river-bank", "--out", str(golden), *force)
        refused_link(r, golden / "animal.toml", victim / "animal.toml", f"golden {force}")
        check((victim / "animal.toml").read_bytes() == b"the victim's golden file",
              f"golden {force}: the victim unchanged")
    check(sorted(p.name for p in golden.iterdir()) == ["animal.toml", "river-bank.toml"],
          "golden: no lock file, journal or temporary left")

    script = tmp / "script.py"
    (victim / "script.py").write_bytes(b"# the victim's script\n")
    script.symlink_to(victim / "script.py")
    for force in ([], ["--force"]):
        r = run("export", "animal", "--to", "pytorch", "--out", str(script), *force)
        refused_link(r, script, victim / "script.py", f"export {force}")
        check((victim / "script.py").read_bytes() == b"# the victim's script\n",
              f"export {force}: the victim unchanged")


def points(tmp):
    path = tmp / "points.toml"
    path.write_text("[points]\nscores = 2\n")
    return path


def test_linked_student_folder(tmp):
    """A student folder that is a link to elsewhere: exercise --force and mark refuse it."""
    cls = tmp / "linked"
    check(exercise(cls, 7, 3).returncode == 0, "exercise writes the class")
    s2 = folders(cls)[1]
    elsewhere = tmp / "elsewhere"
    shutil.move(str(cls / s2), str(elsewhere))
    (cls / s2).symlink_to(elsewhere)
    away, before = tree(elsewhere), tree(cls)
    r = exercise(cls, 8, 3, "--force")
    message = (f"{cls / s2}/lesson.toml: the folder {cls / s2} is a symbolic link to {elsewhere}, "
               f"{LINK}; nothing was written")
    check(r.returncode == 2 and message in r.stderr,
          f"exercise --force into a linked student folder: exit 2 naming it: {r.stderr}")
    check(tree(elsewhere) == away and tree(cls) == before,
          "exercise --force: nothing written, here or where the link leads")
    r = run("mark", str(cls), "--force")
    check(r.returncode == 1 and f"not marked: {s2}: {cls / s2} is a symbolic link to {elsewhere}: "
          in r.stdout, f"mark --force with a linked student folder: that student not marked: "
          f"{r.returncode} {r.stdout} {r.stderr}")
    check(tree(elsewhere) == away and not (elsewhere / "feedback.md").exists()
          and (cls / "marks.csv").exists(), "mark: no feedback.md where the link leads, the "
          "class marked")
    # The folder the user names may itself be a link (a teacher's ~/classes).
    top = tmp / "top-link"
    top.symlink_to(cls)
    (cls / s2).unlink()
    shutil.move(str(elsewhere), str(cls / s2))
    r = run("mark", str(top), "--force")
    check(r.returncode in (0, 1) and (cls / s2 / "feedback.md").is_file(),
          f"mark through a link the user named: written where it leads: {r.returncode} {r.stderr}")


def test_lock_held(tmp):
    """While another process holds the folder's lock, mark and exercise exit 2 at once."""
    cls = tmp / "locked"
    check(exercise(cls, 7, 2).returncode == 0, "exercise writes the class")
    before = tree(cls)
    with open(cls / ".attn-trace.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        lock.write(f"{os.getpid()}\n")
        lock.flush()
        busy = (f"another attn-trace run (pid {os.getpid()}) is writing {cls}; wait for it to "
                "finish, then run again; nothing was written")
        r = run("mark", str(cls))
        check(r.returncode == 2 and busy in r.stderr, f"mark on a locked folder: {r.stderr}")
        r = exercise(cls, 8, 2, "--force")
        check(r.returncode == 2 and busy in r.stderr, f"exercise on a locked folder: {r.stderr}")
        check(tree(cls) == {**before, ".attn-trace.lock": f"{os.getpid()}\n".encode()},
              "nothing written while the lock is held")
    os.unlink(cls / ".attn-trace.lock")


def test_two_marks_at_once(tmp):
    """Two marks with different --points started together: each either marks the
    whole class or exits 2; the files always come from one run."""
    cls = tmp / "race"
    check(exercise(cls, 7, 150).returncode == 0, "exercise writes 150 students")
    one, two = tmp / "one.toml", tmp / "two.toml"
    one.write_text("[points]\nscores = 2\n")
    two.write_text("[points]\nscores = 5\n")
    outputs = {}
    for name, path in (("one", one), ("two", two)):
        r = run("mark", str(cls), "--points", str(path), "--force")
        check(r.returncode in (0, 1), f"mark --points {name}: {r.stderr}")
        outputs[name] = {k: v for k, v in tree(cls).items()
                         if k.endswith(("marks.csv", "summary.md", "feedback.md"))}
    check(outputs["one"] != outputs["two"], "the two point schemes give other files")
    refused = 0
    for _ in range(4):
        procs = [subprocess.Popen([BIN, "mark", str(cls), "--points", str(p), "--force"],
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
                 for p in (one, two)]
        results = [(p.wait(), p.stderr.read()) for p in procs]
        for p in procs:
            p.stdout.close()
            p.stderr.close()
        for code, err in results:
            check(code in (0, 1) or (code == 2 and "another attn-trace run (pid " in err
                                     and f"is writing {cls}; wait for it to finish" in err),
                  f"two marks at once: each marks or exits 2 naming the other: {code} {err}")
            refused += code == 2
        now = {k: v for k, v in tree(cls).items()
               if k.endswith(("marks.csv", "summary.md", "feedback.md"))}
        check(now in (outputs["one"], outputs["two"]),
              "two marks at once: every file from one of the runs, never a mix")
    print(f"two marks at once, 4 rounds: {refused} run(s) refused with exit 2")


def test_interrupted_commit(tmp):
    """exercise --force killed after 5 of its renames (the testing hook): the
    next mark, or the next exercise, completes it; every file from one run."""
    ref = tmp / "ref"
    exercise(ref, 7, 4)
    exercise(ref, 8, 4, "--force")
    expected = tree(ref)
    for next_run in ("mark", "exercise"):
        cls = tmp / f"killed-{next_run}"
        exercise(cls, 7, 4)
        seed7 = tree(cls)
        killer = environment({"ATTN_TRACE_TEST_KILL_AFTER_RENAMES": "5"})
        proc = subprocess.Popen([BIN, "exercise", "--seed", "8", "--students", "4", "--out",
                                 str(cls), "--force"], env=killer,
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        check(proc.wait() == -9, "the hook kills exercise after 5 renames")
        half = tree(cls)
        new = sum(half.get(k) == v and seed7.get(k) != v for k, v in expected.items())
        old = sum(half.get(k) == seed7.get(k) != v for k, v in expected.items())
        check(new == 5 and old > 0 and ".attn-trace.journal" in half,
              f"killed half way: 5 files of seed 8, {old} of seed 7, and the journal")
        if next_run == "mark":
            r = run("mark", str(cls))
            written = ("marks.csv", "summary.md", "feedback.md")
            after = {k: v for k, v in tree(cls).items() if not k.endswith(written)}
        else:
            r = exercise(cls, 8, 4, "--force")
            after = tree(cls)
        check(f"attn-trace: completed the interrupted run (pid {proc.pid}) that "
              f"{cls / '.attn-trace.journal'} names: " in r.stderr,
              f"the next {next_run} says it completed the killed run: {r.stderr}")
        check(after == expected,
              f"after the next {next_run}, every file is the killed run's (seed 8): "
              f"{sorted(k for k in expected if after.get(k) != expected[k])}")


with tempfile.TemporaryDirectory(prefix="attn-writes-") as tmp_name:
    tmp = pathlib.Path(tmp_name)
    for test in (test_planted_links, test_linked_student_folder, test_lock_held,
                 test_two_marks_at_once, test_interrupted_commit):
        sub = tmp / test.__name__
        sub.mkdir()
        test(sub)

sys.exit(1 if failures else 0)
