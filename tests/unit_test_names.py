#!/usr/bin/python3
"""Every doctest case must really run under CTest. doctest_discover_tests splits
a test name at ';' (CMake's list separator); each piece then matches no test
case, runs nothing and passes. This fails naming every test case with a ';'.

Usage: unit_test_names.py ATTN_TESTS_BINARY
"""
import subprocess
import sys

listing = subprocess.run([sys.argv[1], "--list-test-cases", "--no-skip"],
                         capture_output=True, text=True, check=True).stdout
names = [line for line in listing.splitlines()
         if line and not line.startswith("[doctest]") and not line.startswith("=====")]
bad = [name for name in names if ";" in name]
for name in bad:
    print(f"FAIL: test case name has a ';', so CTest runs none of it: {name!r}; "
          "write the two parts with ' — ' or ', ' instead")
if not names:
    print("FAIL: no test case names listed")
sys.exit(1 if bad or not names else 0)
