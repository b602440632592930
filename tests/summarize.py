#!/usr/bin/env python3
"""Prints one line "N passed, N failed, N skipped" over meson's test logs.

Each argument is a testlog*.json written by `meson test` (one JSON object per
test). A test counts as failed when its result is FAIL, TIMEOUT, ERROR or
UNEXPECTEDPASS; skipped when SKIP; passed when OK or EXPECTEDFAIL.
"""
import json
import sys

passed = failed = skipped = 0
for path in sys.argv[1:]:
    try:
        lines = open(path, encoding="utf-8").read().splitlines()
    except OSError:
        continue
    for line in lines:
        if not line.strip():
            continue
        result = json.loads(line).get("result")
        if result in ("OK", "EXPECTEDFAIL"):
            passed += 1
        elif result == "SKIP":
            skipped += 1
        else:
            failed += 1
print(f"{passed} passed, {failed} failed, {skipped} skipped")
sys.exit(1 if failed else 0)
