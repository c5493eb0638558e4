#!/usr/bin/env python3
"""Runs `accel-bench optstep --preset tiny --steps 3 --json` and checks its JSON.

usage: check_optstep_json.py ACCEL_BENCH [extra accel-bench arguments]

Wants: scenario "optstep", one run of preset tiny with the five variants (per-tensor /
multi-tensor x eager / graph, and the unfused graph), each with a positive finite ms median and spread, graph variants
with a node count, the same digest everywhere, and agreement true (exit status 0).
"""
import math
import os
import sys
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "common"))
from problems import report  # noqa: E402
from bench_run import run_json  # noqa: E402

VARIANTS = ["per-tensor eager", "per-tensor graph", "multi-tensor eager", "multi-tensor graph",
            "unfused graph"]


def main():
    cmd = [sys.argv[1], "optstep", "--preset", "tiny", "--steps", "3", "--json"] + sys.argv[2:]
    problems = []
    doc = run_json(cmd, problems)
    if doc is None:
        return report(problems)
    if doc.get("scenario") != "optstep":
        problems.append(f"scenario {doc.get('scenario')!r}")
    if doc.get("agreement") is not True:
        problems.append("top-level agreement is not true")
    runs = doc.get("runs", [])
    if len(runs) != 1 or runs[0].get("preset") != "tiny":
        problems.append(f"want one run of preset tiny, got {[r.get('preset') for r in runs]}")
    for run in runs:
        if run.get("agreement") is not True:
            problems.append(f"{run.get('preset')}: agreement is not true")
        names = [v.get("name") for v in run.get("variants", [])]
        if names != VARIANTS:
            problems.append(f"variants {names}, want {VARIANTS}")
        digests = {v.get("digest") for v in run.get("variants", [])}
        if len(digests) != 1:
            problems.append(f"digests differ: {digests}")
        for v in run.get("variants", []):
            ms = v.get("ms", {})
            vals = [ms.get(k) for k in ("median", "min", "max", "p10", "p90")]
            if not all(isinstance(x, (int, float)) and math.isfinite(x) and x > 0 for x in vals):
                problems.append(f"{v.get('name')}: bad ms {ms}")
            elif not ms["min"] <= ms["median"] <= ms["max"]:
                problems.append(f"{v.get('name')}: median outside [min, max]: {ms}")
            if "graph" in v.get("name", "") and not v.get("graph_nodes", 0) > 0:
                problems.append(f"{v.get('name')}: no graph_nodes")
            for key in ("gbps", "calls_per_step"):
                if not isinstance(v.get(key), (int, float)):
                    problems.append(f"{v.get('name')}: missing {key}")
            for key in ("pct_of_bound", "speedup_vs_per_tensor_eager"):
                if not isinstance(v.get(key, {}).get("median"), (int, float)):
                    problems.append(f"{v.get('name')}: missing {key}.median")
        if "torch" not in run:
            problems.append("no torch member")
    return report(problems, "optstep JSON OK:",
                  ", ".join(f"{v['name']} {v['ms']['median']:.3f} ms" for v in runs[0]["variants"]))


if __name__ == "__main__":
    sys.exit(main())
