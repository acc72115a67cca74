"""What every command-line test (tests/cli/test_*.py) shares, written once: the
list of failures, check(), which records and prints one, and the running of the
program under test with its output captured as text.

    from clitest import check, failures, runner
    run = runner(BIN)           # run("run", "river-bank", cwd=...) -> CompletedProcess
    ...
    sys.exit(1 if failures else 0)
"""
import functools
import os
import subprocess

# What failed, in order; a test's exit status is 1 when it is not empty.
failures = []


def check(cond, what):
    """Records `what` as a failure, printed at once, unless `cond` holds; returns `cond`."""
    if not cond:
        failures.append(what)
        print("FAIL:", what)
    return cond


def run_program(program, *args, cwd=None, env=None, stdin=None, preexec_fn=None):
    """`program` run with `args`; stdout and stderr captured as text. Its exit
    status is the caller's to check (no exception)."""
    return subprocess.run([program, *args], capture_output=True, text=True, cwd=cwd, env=env,
                          input=stdin, preexec_fn=preexec_fn)


def runner(program, *first):
    """run(*args, cwd=None, env=None, ...): `program` run with `first` and then `args`."""
    return functools.partial(run_program, program, *first)


def environment(changes=None, drop=()):
    """This process's environment without the variables named in `drop`, then
    with `changes` set."""
    env = {k: v for k, v in os.environ.items() if k not in drop}
    env.update(changes or {})
    return env


def fill_template(folder, cells_of_row):
    """Fills the blank cells of the answers.toml that `exercise` wrote in
    `folder`, as a student would: cells_of_row(step, row) gives that row's
    cells as written (strings, without quotes)."""
    path = folder / "answers.toml"
    step, row, out = None, 0, []
    for line in path.read_text(encoding="utf-8").split("\n"):
        if line.startswith("step = "):
            step, row = line.split('"')[1], 0
        elif line.startswith('  ["') and step:
            quoted = ['"' + cell + '"' for cell in cells_of_row(step, row)]
            line = "  [" + ", ".join(quoted) + "]," + line.split("],", 1)[1]
            row += 1
        out.append(line)
    path.write_text("\n".join(out), encoding="utf-8")
