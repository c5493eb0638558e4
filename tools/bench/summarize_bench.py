#!/usr/bin/env python3
"""Summary of every ratio in several accel-bench --json runs.

usage: summarize_bench.py RESULT.json...

For each ratio a scenario reports as paired-round statistics (% of bound, speedups, replay
over eager, accel over baseline) prints the median of the runs' medians, the range of the runs'
medians and the range of every round of every run, grouped by scenario, CPU model and device
(figures from different machines are never pooled), and counts the medians above 100% of a
bound (of either bound: the host loop's, pct_of_bound, or on an OpenCL device the loop through
the device, pct_of_cl_bound).
"""
import json
import statistics
import sys

RATIO_KEYS = ("pct_of_bound", "pct_of_cl_bound", "speedup", "speedup_all_cpus",
              "speedup_vs_per_tensor_eager", "replay_over_eager", "ratio",
              "torch_over_multi_tensor_graph",
              # optstep --peer deepspeed (bench_deepspeed.c)
              "deepspeed_per_tensor_over_accel", "deepspeed_flat_over_accel_flat",
              "deepspeed_flat_over_accel", "accel_over_accel_flat", "deepspeed_over_accel",
              "deepspeed_host_over_accel", "fp32_over_bf16_state", "fp32_over_8bit_state",
              "deepspeed_flat_over_accel_bf16_state", "deepspeed_flat_over_accel_8bit_state")


def walk(node, path, out):
    if isinstance(node, dict):
        label = node.get("name") or node.get("node") or node.get("preset")
        if label is not None and isinstance(node.get("n"), int) and "node" in node:
            label = f"{label} N={node['n']}"
        here = f"{path}/{label}" if label else path
        for k, v in node.items():
            if k in RATIO_KEYS and isinstance(v, dict) and isinstance(v.get("median"), (int, float)):
                out.setdefault(f"{here}: {k}", []).append(v)
            elif isinstance(v, (dict, list)):
                walk(v, here, out)
    elif isinstance(node, list):
        for v in node:
            walk(v, path, out)


def main():
    groups = {}
    for p in sys.argv[1:]:
        with open(p) as f:
            doc = json.load(f)
        m = doc.get("machine", {})
        key = (doc.get("scenario"), m.get("cpu_model"), m.get("backend"))
        g = groups.setdefault(key, {"runs": 0, "ratios": {}})
        g["runs"] += 1
        walk(doc, "", g["ratios"])
    over = 0
    for (scenario, cpu, backend), g in groups.items():
        print(f"{scenario} on {cpu} ({backend}), {g['runs']} run(s): median of the runs' "
              f"medians [their range] (every round's range)")
        for name, stats in g["ratios"].items():
            meds = [s["median"] for s in stats]
            lo = min(s["min"] for s in stats)
            hi = max(s["max"] for s in stats)
            flag = ""
            if name.endswith(("pct_of_bound", "pct_of_cl_bound")) and max(meds) > 100:
                flag = "  ABOVE THE BOUND"
                over += 1
            print(f"  {name[1:]:<70} {statistics.median(meds):9.3f} [{min(meds):.3f}.."
                  f"{max(meds):.3f}] ({lo:.3f}..{hi:.3f}){flag}")
    print(f"medians above 100% of a bound: {over}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
