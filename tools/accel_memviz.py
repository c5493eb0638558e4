#!/usr/bin/env python3
"""Draws accel's memory as SVG (docs/MEMORY.md), with matplotlib (Debian: python3-matplotlib).

    accel_memviz.py snapshot SNAPSHOT.json OUT.svg [--color-by stream|pool|tag]
        every segment of an accel_memory_snapshot as one bar, its blocks side by side at their
        share of it: coloured by the chosen key, free blocks hatched grey, the bar's length the
        segment's size.
    accel_memviz.py trace TRACE.json OUT.svg
        the memory counters of an ACCEL_TRACE file (allocated, reserved, graph pools of each
        device) over time, with its out-of-memory retries and cache empties marked.
"""
import argparse
import json
import sys

try:
    import matplotlib
    matplotlib.use("svg")
    import matplotlib.pyplot as plt
    from matplotlib.patches import Patch
except ImportError as e:  # scripts/install-deps --tests installs it
    sys.exit(f"accel_memviz.py needs matplotlib ({e}): apt-get install python3-matplotlib")

FREE = "#d9d9d9"


def _mib(n):
    return n / (1 << 20)


def _key(seg, block, color_by):
    if color_by == "pool":
        return seg["pool"] if seg["pool"] != "graph" else f"graph {seg['pool_id']}"
    if color_by == "tag":
        return block["tag"] or "(untagged)"
    return block["stream"] or "(idle)"


def draw_snapshot(snap, out, color_by):
    segs = snap["segments"]
    keys = sorted({_key(s, b, color_by) for s in segs for b in s["blocks"]
                   if b["state"] != "free"})
    cmap = plt.get_cmap("tab20")
    colors = {k: cmap(i % 20) for i, k in enumerate(keys)}
    fig, ax = plt.subplots(figsize=(10, 1.2 + 0.32 * max(len(segs), 1)))
    for row, s in enumerate(segs):
        base = int(s["address"], 16)
        for b in s["blocks"]:
            x = _mib(int(b["address"], 16) - base)
            free = b["state"] == "free"
            ax.barh(row, _mib(b["size"]), left=x, height=0.8,
                    color=FREE if free else colors[_key(s, b, color_by)],
                    hatch="//" if b["state"] == "freed_pinned" else None,
                    edgecolor="white", linewidth=0.5)
    ax.set_yticks(range(len(segs)))
    ax.set_yticklabels([f"{s['pool']} {_mib(s['size']):.0f} MiB" for s in segs], fontsize=7)
    ax.invert_yaxis()
    ax.set_xlabel("offset in segment (MiB)")
    st = snap["stats"]
    ax.set_title(f"{snap['device']}: {_mib(st['allocated_bytes']):.1f} MiB allocated of "
                 f"{_mib(st['reserved_bytes']):.1f} MiB reserved "
                 f"({_mib(st['graph_pool_reserved_bytes']):.1f} MiB in graph pools)", fontsize=9)
    handles = [Patch(color=colors[k], label=k) for k in keys] + [Patch(color=FREE, label="free")]
    ax.legend(handles=handles, title=color_by, fontsize=7, loc="center left",
              bbox_to_anchor=(1.01, 0.5))
    fig.tight_layout()
    fig.savefig(out, metadata={"Date": None})


def draw_trace(events, out):
    counters = {}
    marks = []
    for e in events:
        if e.get("ph") == "C" and e.get("name", "").startswith("memory "):
            counters.setdefault(e["name"][len("memory "):], []).append(e)
        elif e.get("ph") == "i" and e.get("cat") == "memory":
            marks.append(e)
    if not counters:
        sys.exit("accel_memviz.py: the trace has no memory counters (run with ACCEL_TRACE=...)")
    fig, ax = plt.subplots(figsize=(10, 4))
    for dev, samples in sorted(counters.items()):
        t = [e["ts"] / 1e3 for e in samples]
        for field, style in (("allocated", "-"), ("reserved", "--"), ("graph_pools", ":")):
            ax.step(t, [_mib(e["args"][field]) for e in samples], style, where="post",
                    label=f"{dev} {field.replace('_', ' ')}")
    for e in marks:
        ax.axvline(e["ts"] / 1e3, color="red" if "retry" in e["name"] else "grey",
                   linewidth=0.6, alpha=0.6)
    ax.set_xlabel("time (ms)")
    ax.set_ylabel("MiB")
    ax.set_title("device memory over the run (red: out-of-memory retry, grey: cache empty)",
                 fontsize=9)
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(out, metadata={"Date": None})


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = p.add_subparsers(dest="what", required=True)
    s = sub.add_parser("snapshot")
    s.add_argument("snapshot")
    s.add_argument("out")
    s.add_argument("--color-by", choices=("stream", "pool", "tag"), default="stream")
    t = sub.add_parser("trace")
    t.add_argument("trace")
    t.add_argument("out")
    a = p.parse_args(argv)
    with open(a.snapshot if a.what == "snapshot" else a.trace) as f:
        data = json.load(f)
    if a.what == "snapshot":
        draw_snapshot(data, a.out, a.color_by)
    else:
        draw_trace(data, a.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
