#!/usr/bin/env python3
"""Small runs of `accel-bench kernels`, `optstep`, `graph` and `graph-cond` with --json; checks
their schema and the bound rule of issue 23.

usage: check_bench_json.py ACCEL_BENCH [extra accel-bench arguments, e.g. --device opencl]

Schema: every ratio the scenarios report is a statistics object {median, min, max, p10, p90, n}
of per-round (paired) ratios with min <= p10 <= median <= p90 <= max; every bandwidth row and
optimizer-step variant has a bound (the loop it names, its ms and GB/s) and pct_of_bound; on an
OpenCL device also the bound through the device (cl_bound) and pct_of_cl_bound; the machine
member names the CPU model.

Bound rule: no median "% of bound" above 100, of either bound (a bound is a plain loop moving
the kernel's bytes; above 100% means the bound is wrong). The device-copy reference (kind
"device-copy": a device the host cannot reach, or --bound device-copy) is a rate, not a bound:
the rule does not apply to it, and its kind must be the one --bound asked for. Timing on a machine shared with other
jobs can break it by noise alone, so a violating run is repeated twice; if every attempt
violates it while the machine is loaded (1-minute load average above its CPU count) the check is
skipped (exit status 77) with that reason, and on a machine that was not loaded it fails.
"""
import json
import math
import os
import subprocess
import sys

STATS = ("median", "min", "max", "p10", "p90", "n")


def run(bench, args, extra):
    cmd = [bench] + args + ["--json"] + extra
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if p.returncode != 0:
        raise SystemExit(f"FAIL: {' '.join(cmd)}: exit status {p.returncode}\n{p.stderr}")
    try:
        return json.loads(p.stdout)
    except ValueError as e:
        raise SystemExit(f"FAIL: {' '.join(cmd)}: stdout is not JSON: {e}\n{p.stdout}")


def check_stats(where, s, problems, positive=True):
    if not isinstance(s, dict) or any(k not in s for k in STATS):
        problems.append(f"{where}: not a statistics object: {s!r}")
        return
    vals = [s[k] for k in STATS[:5]]
    if not all(isinstance(x, (int, float)) and math.isfinite(x) for x in vals):
        problems.append(f"{where}: non-finite statistics {s}")
        return
    if positive and not all(x > 0 for x in vals):
        problems.append(f"{where}: non-positive statistics {s}")
    if not s["min"] <= s["p10"] <= s["median"] <= s["p90"] <= s["max"]:
        problems.append(f"{where}: statistics out of order {s}")
    if not (isinstance(s["n"], int) and s["n"] >= 1):
        problems.append(f"{where}: n {s['n']!r}")


def check_machine(doc, problems):
    m = doc.get("machine", {})
    if not m.get("cpu_model") or not m.get("nproc"):
        problems.append(f"{doc.get('scenario')}: machine without CPU model/count: {m}")


def check_bound(where, row, problems, key="bound"):
    b = row.get(key, {})
    if not b.get("loop"):
        problems.append(f"{where}: {key} names no loop")
    check_stats(f"{where}: {key}.ms", b.get("ms"), problems)
    if not (isinstance(b.get("gbps"), (int, float)) and b["gbps"] > 0):
        problems.append(f"{where}: {key}.gbps {b.get('gbps')!r}")


def bound_keys(doc):
    """The pct_of_* keys every row has: the host loop's, and on OpenCL the device loop's."""
    opencl = doc.get("machine", {}).get("backend") == "opencl"
    return ("pct_of_bound", "pct_of_cl_bound") if opencl else ("pct_of_bound",)


def check_kind(where, kind, want, problems):
    """kind of a bound: "host-loop" or "device-copy", the latter when want (--bound device-copy)."""
    if kind not in ("host-loop", "device-copy"):
        problems.append(f"{where}: bound kind {kind!r}")
    elif want and kind != want:
        problems.append(f"{where}: bound kind {kind}, --bound asked for {want}")
    return kind == "device-copy"


def check_pcts(where, row, keys, problems, over, reference=False):
    for key in keys:
        check_stats(f"{where}: {key}", row.get(key), problems)
        pct = row.get(key, {}).get("median")
        if key == "pct_of_bound" and reference:
            continue  # a reference rate, not a bound
        if isinstance(pct, (int, float)) and pct > 100:
            over.append(f"{where}: {pct:.1f}% ({key})")


def machine_and_rows(doc, scenario, key, want, problems):
    """Checks the machine member, then returns the list doc[key], a problem when it does not
    hold want rows."""
    check_machine(doc, problems)
    rows = doc.get(key, [])
    if len(rows) != want:
        problems.append(f"{scenario}: {len(rows)} {key} rows, want {want}")
    return rows


def adam_state(doc, problems, over, reference):
    """kernels --state 8bit (issue 39): AdamW alone with fp32 then 8-bit moments, each with
    its bytes per parameter, ms, bound and % of it; the 8-bit side's speed-up over fp32."""
    states = doc.get("states", [])
    got = [(s.get("state"), s.get("state_bytes_per_param"), s.get("bound_bytes_per_param"))
           for s in states]
    want = [("fp32", 8.0, 28.0), ("8bit", 2.03125, 16.0625)]
    if got != want:
        problems.append(f"kernels adam_state: states {got}, want {want}")
    for s in states:
        where = f"kernels adam_state {s.get('state')}"
        for key in ("ms", "bound_ms"):
            check_stats(f"{where}: {key}", s.get(key), problems)
        check_pcts(where, s, ("pct_of_bound",), problems, over, reference)  # no OpenCL loop
    if states and "speedup_vs_fp32_state" not in states[-1]:
        problems.append("kernels adam_state: no speedup_vs_fp32_state")
    elif states:
        check_stats("kernels adam_state: speedup", states[-1]["speedup_vs_fp32_state"], problems)


def kernels(doc, problems, over, want_kind):
    keys = bound_keys(doc)
    reference = check_kind("kernels", doc.get("bound_kind"), want_kind, problems)
    for row in machine_and_rows(doc, "kernels", "bandwidth", 7, problems):
        where = f"kernels {row.get('name')}"
        check_stats(f"{where}: ms", row.get("ms"), problems)
        check_bound(where, row, problems)
        if "pct_of_cl_bound" in keys:
            check_bound(where, row, problems, "cl_bound")
        check_pcts(where, row, keys, problems, over, reference)
    flat = doc.get("adam_flat", {})
    for key in ("list_ms", "flat_ms", "list_over_flat"):
        check_stats(f"kernels adam_flat: {key}", flat.get(key), problems)
    if not flat.get("tensors", 0) > 1:
        problems.append(f"kernels adam_flat: tensors {flat.get('tensors')}")
    adam_state(doc.get("adam_state", {}), problems, over, reference)
    for row in doc.get("vs_torch", []):
        check_stats(f"kernels {row.get('name')}: ms", row.get("ms"), problems)
        if row.get("torch", {}).get("available"):
            check_stats(f"kernels {row.get('name')}: speedup", row.get("speedup"), problems)


def optstep(doc, problems, over, want_kind):
    check_machine(doc, problems)
    keys = bound_keys(doc)
    if doc.get("agreement") is not True:
        problems.append("optstep: agreement is not true")
    for run_ in doc.get("runs", []):
        if not run_.get("bytes_per_step", 0) > 0:
            problems.append(f"optstep {run_.get('preset')}: bytes_per_step")
        check_bound(f"optstep {run_.get('preset')}", run_, problems)
        reference = check_kind(f"optstep {run_.get('preset')}",
                               run_.get("bound", {}).get("kind"), want_kind, problems)
        if "pct_of_cl_bound" in keys:
            check_bound(f"optstep {run_.get('preset')}", run_, problems, "cl_bound")
        for v in run_.get("variants", []):
            where = f"optstep {run_.get('preset')} {v.get('name')}"
            check_stats(f"{where}: ms", v.get("ms"), problems)
            check_stats(f"{where}: speedup", v.get("speedup_vs_per_tensor_eager"), problems)
            check_pcts(where, v, keys, problems, over, reference)


def graph(doc, problems, over):
    for row in machine_and_rows(doc, "graph", "rows", 8, problems):
        where = f"graph {row.get('node')} N={row.get('n')}"
        check_stats(f"{where}: eager", row.get("eager_ns_per_node"), problems)
        check_stats(f"{where}: replay", row.get("replay_ns_per_node"), problems)
        check_stats(f"{where}: replay_over_eager", row.get("replay_over_eager"), problems)


def graph_cond(doc, problems):
    """graph-cond: per length, the three ways' ms and ratio to plain, then the region's cost
    per node (a difference of medians' rounds: it may be negative)."""
    if doc.get("conditionals") not in ("native", "predicated"):
        problems.append(f"graph-cond: conditionals {doc.get('conditionals')!r}")
    for row in machine_and_rows(doc, "graph-cond", "rows", 12, problems):
        where = f"graph-cond {row.get('way')} N={row.get('n')}"
        if row.get("way") == "region-per-node-us":
            check_stats(f"{where}: us", row.get("us"), problems, positive=False)
            continue
        check_stats(f"{where}: ms", row.get("ms"), problems)
        check_stats(f"{where}: over_plain", row.get("over_plain"), problems)


def attempt(bench, extra):
    problems, over = [], []
    want_kind = extra[extra.index("--bound") + 1] if "--bound" in extra else None
    want_kind = "host-loop" if want_kind == "host" else want_kind
    kernels(run(bench, ["kernels", "--size-mb", "24", "--repeat", "5", "--no-torch", "--state",
                        "8bit"], extra),
            problems, over, want_kind)
    optstep(run(bench, ["optstep", "--preset", "tiny", "--steps", "6"], extra), problems, over,
            want_kind)
    graph(run(bench, ["graph", "--repeat", "3"], extra), problems, over)
    graph_cond(run(bench, ["graph-cond", "--repeat", "3"], extra), problems)
    return problems, over


def main():
    bench, extra = sys.argv[1], sys.argv[2:]
    for k in range(3):
        problems, over = attempt(bench, extra)
        for msg in problems:
            print("FAIL:", msg)
        if problems:
            return 1
        if not over:
            print("bench JSON OK; no median % of bound above 100")
            return 0
        print(f"attempt {k + 1}: above the bound:", "; ".join(over))
    load, cpus = os.getloadavg()[0], os.cpu_count() or 1
    if load > cpus:
        print(f"SKIP: the bound rule broke in 3 attempts with the machine loaded "
              f"(load {load:.1f} on {cpus} CPUs): timing is noise here")
        return 77
    print("FAIL: % of bound above 100 in 3 attempts on a machine that was not loaded")
    return 1


if __name__ == "__main__":
    sys.exit(main())
