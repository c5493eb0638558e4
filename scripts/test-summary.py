#!/usr/bin/env python3
"""Prints 'N passed, N failed, N skipped' for a meson testlog.json (skips listed with reasons)."""
import json
import sys

passed = failed = skipped = 0
skips = []
with open(sys.argv[1]) as f:
    for line in f:
        t = json.loads(line)
        r = t.get("result")
        if r in ("OK", "EXPECTEDFAIL"):
            passed += 1
        elif r == "SKIP":
            skipped += 1
            out = (t.get("stdout") or "").strip().splitlines()
            reason = next((l for l in reversed(out) if "SKIP" in l.upper()), out[-1] if out else "")
            skips.append(f"  skipped {t['name']}: {reason[:200]}")
        else:
            failed += 1
print("\n".join(skips))
print(f"{passed} passed, {failed} failed, {skipped} skipped")
