#!/usr/bin/python3
"""Every doctest case must really run under CTest. doctest_discover_tests splits
a test name at ';' (CMake's list separator); each piece then matches no test
case, runs nothing and passes. A '[' without its ']' is worse: CMake does not
split a list inside brackets, so the name swallows every name listed after it
into one test that runs nothing. This fails naming every test case with a ';'
or an unbalanced bracket, in every unit-test executable (one per layer), and a
name listed twice (CTest runs a test by its name: two cases of one name cannot
be told apart).

Usage: unit_test_names.py UNIT_TESTS_BINARY...
"""
import subprocess
import sys


def balanced(name):
    depth = 0
    for c in name:
        depth += {"[": 1, "]": -1}.get(c, 0)
        if depth < 0:
            return False
    return depth == 0


names = []
for binary in sys.argv[1:]:
    listing = subprocess.run([binary, "--list-test-cases", "--no-skip"],
                             capture_output=True, text=True, check=True).stdout
    names += [line for line in listing.splitlines()
              if line and not line.startswith("[doctest]") and not line.startswith("=====")]
bad = [name for name in names if ";" in name or not balanced(name)]
for name in bad:
    print(f"FAIL: test case name has a ';' or an unbalanced bracket, so CTest runs none of it: "
          f"{name!r}; write it with ' — ' or ', ', and brackets in pairs")
twice = sorted({name for name in names if names.count(name) > 1})
for name in twice:
    print(f"FAIL: test case name listed twice, so CTest cannot tell the two apart: {name!r}")
if not names:
    print("FAIL: no test case names listed")
sys.exit(1 if bad or twice or not names else 0)
