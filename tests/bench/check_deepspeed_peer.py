#!/usr/bin/env python3
"""`accel-bench optstep --peer deepspeed`: skipped cleanly where the peer cannot run, and its JSON
when it does.

usage: check_deepspeed_peer.py ACCEL_BENCH [accel-bench arguments: --python VENV/bin/python]

1. With ACCEL_BENCH_DEEPSPEED_SCRIPT naming no file: exit status 0, runs[0].deepspeed is
   {"available": false, "reason": "... not readable"}, the table says "DeepSpeed peer skipped".
2. As given (by default /usr/bin/python3, which has no deepspeed in CI): exit status 0 and
   either a skip with a reason, or, where DeepSpeed's CPU Adam imports (a venv of
   scripts/peer-deepspeed-setup), the three phases with their bound, every variant's positive
   times and % of bound (none for the compressed moments of phase state, which move fewer
   bytes than its bound), the ratios, and agreement true.
3. An unknown peer is a usage error (exit status 2).
"""
import json
import math
import os
import subprocess
import sys
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "common"))
from problems import report  # noqa: E402

ADAMW = ["accel_list", "accel_flat", "ds_per_tensor", "ds_flat"]
STATE = ["accel_list", "accel_list_bf16", "accel_list_8bit", "ds_flat"]
FEWER_BYTES = ("accel_list_bf16", "accel_list_8bit")
STEP = ["accel_step", "ds_step", "ds_step_host"]
RATIOS = {"adamw": ["deepspeed_per_tensor_over_accel", "deepspeed_flat_over_accel_flat",
                    "deepspeed_flat_over_accel", "accel_over_accel_flat"],
          "state": ["fp32_over_bf16_state", "fp32_over_8bit_state",
                    "deepspeed_flat_over_accel_bf16_state", "deepspeed_flat_over_accel_8bit_state"],
          "step": ["deepspeed_over_accel", "deepspeed_host_over_accel"]}


def run(bench, extra, what, problems, env=None):
    """The process and its runs[0].deepspeed ({} after a problem)."""
    cmd = [bench, "optstep", "--preset", "tiny", "--steps", "3", "--json", "--peer",
           "deepspeed"] + extra
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    if p.returncode != 0:
        problems.append(f"{what}: exit status {p.returncode}\n{p.stderr[-2000:]}")
    try:
        return p, json.loads(p.stdout)["runs"][0]["deepspeed"]
    except (ValueError, KeyError, IndexError) as e:
        problems.append(f"{what}: no runs[0].deepspeed: {e}\n{p.stderr[-2000:]}")
        return p, {}


def positive_stats(s):
    vals = [s.get(k) for k in ("median", "min", "max")]
    return all(isinstance(x, (int, float)) and math.isfinite(x) and x > 0 for x in vals)


def check_available(ds, problems):
    for key in ("version", "simd", "threads", "rounds"):
        if key not in ds:
            problems.append(f"deepspeed: no {key}")
    for phase, names in (("adamw", ADAMW), ("state", STATE), ("step", STEP)):
        ph = ds.get(phase, {})
        if not positive_stats(ph.get("bound", {}).get("ms", {})):
            problems.append(f"{phase}: bad bound {ph.get('bound')}")
        got = [v.get("key") for v in ph.get("variants", [])]
        if got != names:
            problems.append(f"{phase}: variants {got}, want {names}")
        for v in ph.get("variants", []):
            fewer = phase == "state" and v.get("key") in FEWER_BYTES
            pct_ok = ("pct_of_bound" not in v if fewer
                      else positive_stats(v.get("pct_of_bound", {})))
            if not positive_stats(v.get("ms", {})) or not pct_ok:
                problems.append(f"{phase} {v.get('key')}: bad ms or pct_of_bound")
        for r in RATIOS[phase]:
            if not positive_stats(ph.get(r, {})):
                problems.append(f"{phase}: bad ratio {r}: {ph.get(r)}")
    agree = ds.get("agreement", {})
    if agree.get("agreement") is not True or agree.get("accel_flat_equals_list") is not True:
        problems.append(f"agreement: {agree}")


def main():
    bench, extra = sys.argv[1], sys.argv[2:]
    problems = []

    env = dict(os.environ, ACCEL_BENCH_DEEPSPEED_SCRIPT="/nonexistent/deepspeed_peer.py")
    p, ds = run(bench, extra, "without the script", problems, env)
    if ds.get("available") is not False or "not readable" not in ds.get("reason", ""):
        problems.append(f"without the script: want a skip naming it, got {ds}")
    if "DeepSpeed peer skipped" not in p.stderr:
        problems.append("without the script: the table does not say the peer was skipped")

    _, ds = run(bench, extra, "as given", problems)
    if ds.get("available") is True:
        check_available(ds, problems)
        what = "ran: " + ", ".join(f"{v['key']} {v['ms']['median']:.3f} ms"
                                   for v in ds.get("adamw", {}).get("variants", []))
    elif ds.get("available") is False and ds.get("reason"):
        what = f"skipped: {ds['reason']}"
    else:
        problems.append(f"deepspeed member: {ds}")
        what = ""

    p = subprocess.run([bench, "optstep", "--preset", "tiny", "--peer", "nope"],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if p.returncode != 2:
        problems.append(f"--peer nope: exit status {p.returncode}, want 2")

    return report(problems, "DeepSpeed peer OK:", what)


if __name__ == "__main__":
    sys.exit(main())
