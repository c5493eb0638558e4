#!/usr/bin/env python3
"""Checks the ACCEL_TRACE output of trace_program (a normal exit and an exit(1) error path).

usage: check_trace.py TRACE_PROGRAM OUT_DIR

Each trace must be valid JSON (Chrome trace-event array), hold complete events for launches,
copies, memsets, synchronizes, a lazy flush, a graph capture and replay, and name every track
an event uses with thread_name metadata: one track per stream (default, two created ones).
"""
import json
import os
import subprocess
import sys
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "common"))
from problems import report  # noqa: E402

REQUIRED = {
    "launch": {"launch"},
    "copy": {"accel_memcpy_async"},
    "memset": {"accel_memset_async"},
    "sync": {"accel_stream_synchronize"},
    "flush": {"accel_stream_flush", "lazy_flush"},
    "capture": {"accel_graph_capture_end"},
    "replay": {"accel_graph_replay"},
}


def check(path, problems):
    try:
        with open(path) as f:
            events = json.load(f)
    except (OSError, ValueError) as e:
        problems.append(f"{path}: not valid JSON: {e}")
        return
    if not isinstance(events, list):
        problems.append(f"{path}: top level is not an array")
        return
    names = {}
    for e in events:
        if e.get("ph") == "M" and e.get("name") == "thread_name":
            names[e["tid"]] = e["args"]["name"]
    complete = [e for e in events if e.get("ph") == "X"]
    for e in complete:
        for key in ("name", "pid", "tid", "ts", "dur"):
            if key not in e:
                problems.append(f"{path}: event without {key}: {e}")
        if e.get("dur", 0) < 0:
            problems.append(f"{path}: negative duration: {e}")
    seen = {e["name"] for e in complete}
    for what, options in REQUIRED.items():
        if not seen & options:
            problems.append(f"{path}: no {what} event (one of {sorted(options)})")
    unnamed = sorted({(e["tid"], e["name"]) for e in complete if e["tid"] not in names})
    if unnamed:
        problems.append(f"{path}: events on tracks without thread_name metadata: {unnamed}")
    if len(set(names.values())) != len(names):
        problems.append(f"{path}: two tracks share a name: {sorted(names.values())}")
    streams = [t for t, n in names.items() if "stream" in n]
    used = {e["tid"] for e in complete}
    if len([t for t in streams if t in used]) < 3:
        problems.append(f"{path}: want >= 3 stream tracks with events (default + 2 created), "
                        f"got {[names[t] for t in streams if t in used]}")
    by_name = {}
    for e in complete:
        by_name.setdefault(e["name"], set()).add(e["tid"])
    if by_name.get("accel_graph_replay", set()) & by_name.get("accel_memcpy_async", set()):
        problems.append(f"{path}: replay (created stream) and copy (default stream) share a track")


def main():
    prog, out_dir = sys.argv[1], sys.argv[2]
    os.makedirs(out_dir, exist_ok=True)
    problems = []
    for mode, want_rc in (("ok", 0), ("error", 1)):
        path = os.path.join(out_dir, f"trace_{mode}.json")
        if os.path.exists(path):
            os.remove(path)
        env = dict(os.environ, ACCEL_TRACE=path)
        rc = subprocess.run([prog, mode], env=env).returncode
        if rc != want_rc:
            problems.append(f"trace_program {mode}: exit status {rc}, want {want_rc}")
            continue
        check(path, problems)
    return report(problems, "trace OK (normal exit and exit(1) error path)")


if __name__ == "__main__":
    sys.exit(main())
