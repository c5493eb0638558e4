#!/usr/bin/env python3
"""Runs `accel-bench optstep --preset tiny-fp16|tiny-bf16 --steps 12 --repeat 2 --json` (the
mixed-precision step presets of issue 22, here on the tiny model) and checks the JSON.

usage: check_ampstep_json.py ACCEL_BENCH

Wants, per preset: one run with the three variants (host scalars, device sync/step, device
loop), each with a positive finite ms median and mean and the same digest, agreement true, and
the overflow schedule: with a scale of 2^15 growing every 9 clean steps and one gradient of 1.0,
step 10 of 12 overflows in fp16 (1.0 * 2^16 > 65504); bf16 has no loss scale and never does.
"""
import json
import math
import os
import subprocess
import sys
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "common"))
from problems import report  # noqa: E402

VARIANTS = ["host scalars", "device, sync/step", "device loop"]


def check(bench, preset, want_overflows, problems):
    cmd = [bench, "optstep", "--preset", preset, "--steps", "12", "--repeat", "2", "--json",
           "--device", "cpu"]
    p = subprocess.run(cmd, stdout=subprocess.PIPE, text=True)
    if p.returncode != 0:
        problems.append(f"{preset}: exit status {p.returncode}")
    try:
        doc = json.loads(p.stdout)
    except ValueError as e:
        problems.append(f"{preset}: stdout is not JSON: {e}")
        return
    runs = doc.get("runs", [])
    if doc.get("agreement") is not True or len(runs) != 1 or runs[0].get("preset") != preset:
        problems.append(f"{preset}: want one agreeing run of {preset}, got {doc}")
        return
    run = runs[0]
    if run.get("overflowed_steps") != want_overflows:
        problems.append(f"{preset}: {run.get('overflowed_steps')} overflowed steps, "
                        f"want {want_overflows}")
    variants = run.get("variants", [])
    if [v.get("name") for v in variants] != VARIANTS:
        problems.append(f"{preset}: variants {[v.get('name') for v in variants]}")
    for v in variants:
        for value in (v.get("ms", {}).get("median"), v.get("mean_ms")):
            if not (isinstance(value, (int, float)) and math.isfinite(value) and value > 0):
                problems.append(f"{preset} {v.get('name')}: bad time {value}")
    if len({v.get("digest") for v in variants}) != 1:
        problems.append(f"{preset}: digests differ: {[v.get('digest') for v in variants]}")


def main():
    problems = []
    check(sys.argv[1], "tiny-fp16", 1, problems)
    check(sys.argv[1], "tiny-bf16", 0, problems)
    return report(problems, "ampstep JSON OK (tiny-fp16, tiny-bf16)")


if __name__ == "__main__":
    sys.exit(main())
