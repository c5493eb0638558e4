#!/usr/bin/env python3
"""ACCEL_TRACE's memory tracks (docs/MEMORY.md): runs memory_trace_program with a trace and one
injected segment failure, then checks the trace holds the device's counters ("ph":"C":
allocated, reserved, graph_pools), an out-of-memory retry and a cache empty ("ph":"i"), and that
the counters reach the program's peak and, at the point it printed its statistics, stand where
those statistics stand.

usage: check_memory_trace.py PROGRAM OUT_DIR"""
import json
import os
import subprocess
import sys


def main():
    program, out_dir = sys.argv[1], sys.argv[2]
    os.makedirs(out_dir, exist_ok=True)
    trace = os.path.join(out_dir, "memory-trace.json")
    env = dict(os.environ, ACCEL_TRACE=trace, ACCEL_FAULT_INJECT="alloc:2", ACCEL_LOG="error")
    run = subprocess.run([program], env=env, capture_output=True, text=True, timeout=60)
    if run.returncode != 0:
        sys.exit(f"{program} failed ({run.returncode}): {run.stderr}")
    final = json.loads(run.stdout.splitlines()[0])
    with open(trace) as f:
        events = json.load(f)
    counters = [e for e in events if e.get("ph") == "C" and e["name"] == "memory cpu:0"]
    instants = [e for e in events if e.get("ph") == "i"]
    problems = []
    if not counters:
        problems.append("no memory counter events")
    for e in counters:
        if set(e["args"]) != {"allocated", "reserved", "graph_pools"} or "ts" not in e:
            problems.append(f"malformed counter {e}")
    retries = [e for e in instants if e["name"] == "out-of-memory retry"]
    if len(retries) != final["alloc_retries"] or not retries or not retries[0]["args"]["recovered"]:
        problems.append(f"retries in the trace {retries}, in the stats {final['alloc_retries']}")
    elif "out of device memory" not in retries[0]["args"]["reason"]:
        problems.append(f"retry without its reason: {retries[0]}")
    if not any(e["name"] == "empty cache" for e in instants):
        problems.append("no cache-empty event")
    if max((e["args"]["allocated"] for e in counters), default=0) != final["peak_allocated"]:
        problems.append("the allocated counter never reaches the peak")
    # the program printed its stats after its last allocation call before teardown: the counter
    # sample of that call (the last one before the teardown frees) is where the stats are
    frees_after = 2  # accel_free of b and of g follow the print
    at_print = counters[-1 - frees_after]["args"] if len(counters) > frees_after else {}
    want = {k: final[k] for k in ("allocated", "reserved", "graph_pools")}
    if at_print != want:
        problems.append(f"counters at the print {at_print}, stats {want}")
    last = counters[-1]["args"] if counters else {}
    if last.get("allocated") != 0:
        problems.append(f"counters end with {last}: everything was freed")
    for p in problems:
        print("FAIL:", p)
    print(f"{len(counters)} counter samples, {len(instants)} instant events")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
