#!/usr/bin/env python3
"""Runs `accel-bench optstep --state S --preset tiny --steps 3 --json` for S = bf16 and
bf16-master-sr and checks its JSON.

usage: check_optstep_state_json.py ACCEL_BENCH

Wants: one run of preset tiny with the states fp32 then S, their bytes per parameter (state
8 and 4, step 32 and 24 for bf16, 20 for bf16 master weights), positive finite ms and bound
ms with the median inside [min, max], a % of bound and a speed-up over the fp32 state
(exactly 1 for fp32 itself), exit status 0; and --state with an unknown format refused with
exit status 2. The same for `accel-bench kernels --state bf16` (AdamW alone: the member
adam_state, bytes 8 and 28 for fp32, 4 and 20 for bf16) and its refusal of an unknown format.
"""
import math
import os
import subprocess
import sys
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "common"))
from problems import report  # noqa: E402
from bench_run import run_json  # noqa: E402

WANT = {"bf16": [("fp32", 8.0, 32.0), ("bf16", 4.0, 24.0)],
        "bf16-master-sr": [("fp32", 8.0, 32.0), ("bf16-master-sr", 4.0, 20.0)]}


def check_stats(name, key, st, problems):
    vals = [st.get(k) for k in ("median", "min", "max")]
    if not all(isinstance(x, (int, float)) and math.isfinite(x) and x > 0 for x in vals):
        problems.append(f"{name}: bad {key} {st}")
    elif not st["min"] <= st["median"] <= st["max"]:
        problems.append(f"{name}: {key} median outside [min, max]: {st}")


def check_state(bench, fmt, problems):
    """The JSON of --state fmt; returns its states."""
    cmd = [bench, "optstep", "--state", fmt, "--preset", "tiny", "--steps", "3", "--json"]
    doc = run_json(cmd, problems)
    if doc is None:
        return []
    runs = doc.get("runs", [])
    if len(runs) != 1 or runs[0].get("preset") != "tiny":
        problems.append(f"want one run of preset tiny, got {[r.get('preset') for r in runs]}")
    states = runs[0].get("states", []) if runs else []
    got = [(s.get("state"), s.get("state_bytes_per_param"), s.get("step_bytes_per_param"))
           for s in states]
    if got != WANT[fmt]:
        problems.append(f"states {got}, want {WANT[fmt]}")
    for s in states:
        for key in ("ms", "bound_ms", "pct_of_bound", "speedup_vs_fp32_state"):
            check_stats(s.get("state"), key, s.get(key, {}), problems)
    if states and states[0].get("speedup_vs_fp32_state", {}).get("median") != 1.0:
        problems.append(f"fp32 over itself: {states[0].get('speedup_vs_fp32_state')}")
    return states


def check_kernels_state(bench, problems):
    """The JSON of kernels --state bf16; returns its states."""
    cmd = [bench, "kernels", "--state", "bf16", "--size-mb", "24", "--repeat", "3", "--no-torch",
           "--json"]
    doc = run_json(cmd, problems)
    states = (doc or {}).get("adam_state", {}).get("states", [])
    got = [(s.get("state"), s.get("state_bytes_per_param"), s.get("bound_bytes_per_param"))
           for s in states]
    want = [("fp32", 8.0, 28.0), ("bf16", 4.0, 20.0)]
    if doc is not None and got != want:
        problems.append(f"kernels --state bf16: states {got}, want {want}")
    for s in states:
        for key in ("ms", "bound_ms", "pct_of_bound"):
            check_stats(f"kernels {s.get('state')}", key, s.get(key, {}), problems)
    if states:
        check_stats("kernels bf16", "speedup_vs_fp32_state",
                    states[-1].get("speedup_vs_fp32_state", {}), problems)
    return [dict(s, state="kernels " + s["state"]) for s in states]


def refused(bench, args, problems):
    bad = subprocess.run([bench] + args, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         text=True)
    if bad.returncode != 2 or "--state" not in bad.stderr:
        problems.append(f"{' '.join(args)}: exit status {bad.returncode}, stderr {bad.stderr!r}")


def main():
    bench = sys.argv[1]
    problems = []
    states = [s for fmt in WANT for s in check_state(bench, fmt, problems)]
    states += check_kernels_state(bench, problems)
    refused(bench, ["optstep", "--state", "fp8", "--preset", "tiny"], problems)
    refused(bench, ["kernels", "--state", "fp8", "--size-mb", "24"], problems)
    return report(problems, "optstep --state JSON OK:",
                  ", ".join(f"{s['state']} {s['ms']['median']:.3f} ms" for s in states))


if __name__ == "__main__":
    sys.exit(main())
