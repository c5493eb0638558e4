#!/usr/bin/env python3
"""Runs `accel-bench optstep --sweeps --preset tiny --steps 3 --json` and checks its JSON.

usage: check_optstep_sweeps_json.py ACCEL_BENCH [extra accel-bench arguments]

Wants: one run of preset tiny with the six sweeps in their order (the norm sweep, the update and
its three variants, accel_fused_adam), each with its bytes per parameter, a positive finite ms
median and spread and a positive GB/s that is those bytes over that time; --sweeps with --state
is refused (exit status 2).
"""
import math
import os
import subprocess
import sys
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "common"))
from problems import report  # noqa: E402
from bench_run import run_json  # noqa: E402

SWEEPS = [("norm sweep (bf16 grads)", 2), ("update (optstep's form)", 32),
          ("update, grads not zeroed", 30), ("update, no hp stored", 28),
          ("update, f32 grads in place", 32), ("accel_fused_adam (f32 grads)", 28)]


def main():
    bench = sys.argv[1]
    cmd = [bench, "optstep", "--sweeps", "--preset", "tiny", "--steps", "3", "--json"]
    problems = []
    doc = run_json(cmd + sys.argv[2:], problems)
    if doc is None:
        return report(problems)
    runs = doc.get("runs", [])
    if len(runs) != 1 or runs[0].get("preset") != "tiny":
        problems.append(f"want one run of preset tiny, got {[r.get('preset') for r in runs]}")
    for run in runs:
        params = run.get("params", 0)
        got = [(s.get("sweep"), s.get("bytes_per_param")) for s in run.get("sweeps", [])]
        if got != SWEEPS:
            problems.append(f"sweeps {got}, want {SWEEPS}")
        for s in run.get("sweeps", []):
            ms = s.get("ms", {})
            vals = [ms.get(k) for k in ("median", "min", "max")]
            if not all(isinstance(v, (int, float)) and math.isfinite(v) and v > 0 for v in vals):
                problems.append(f"{s.get('sweep')}: ms {ms}")
                continue
            want = s["bytes_per_param"] * params / (ms["median"] * 1e6)
            if not math.isclose(s.get("gbps", 0), want, rel_tol=1e-4):
                problems.append(f"{s.get('sweep')}: gbps {s.get('gbps')}, want {want}")
    p = subprocess.run([bench, "optstep", "--sweeps", "--state", "bf16"], capture_output=True,
                       text=True)
    if p.returncode != 2 or "--sweeps" not in p.stderr:
        problems.append(f"--sweeps --state: exit {p.returncode}, {p.stderr.strip()!r}")
    return report(problems)


if __name__ == "__main__":
    sys.exit(main())
