#!/usr/bin/env python3
"""Plots of accel-bench JSON results (docs/PERFORMANCE.md shows them).

usage: plot_bench.py [--out DIR] RESULT.json...

Each RESULT.json is the --json output of one run of `accel-bench kernels`, `optstep` or
`graph` (several runs of a scenario may be given: each is drawn). Writes, for the scenarios
present:
  DIR/bench-bounds.svg  every kernel row and optimizer-step variant as % of its bound: the
                        median of the run's paired rounds, whiskers from the rounds' min to max,
                        one marker per run; the bound (100%) is the plain loop moving the same
                        bytes (the kernel's streams; the step's compulsory traffic)
  DIR/bench-graph.svg   host cost per node, eager vs captured + replayed, against node count
Needs matplotlib (Debian: python3-matplotlib; scripts/install-deps --tests).
"""
import argparse
import json
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

# Reproducible SVGs: no timestamp, fixed ids.
plt.rcParams["svg.hashsalt"] = "accel-bench"
METADATA = {"Date": None}


def load(paths):
    docs = {"kernels": [], "optstep": [], "graph": []}
    for p in paths:
        with open(p) as f:
            doc = json.load(f)
        if doc.get("scenario") in docs:
            docs[doc["scenario"]].append(doc)
        else:
            print(f"plot_bench: {p}: scenario {doc.get('scenario')!r} has no plot", file=sys.stderr)
    return docs


def machine_line(docs):
    names = sorted({f"{d['machine']['cpu_model']}, {d['machine']['nproc']} CPUs, "
                    f"{d['machine']['backend']}" for ds in docs.values() for d in ds})
    return "; ".join(names)


# Each bound a row may be judged against: (pct key, bound key, label suffix). On an OpenCL
# device the loop through the device (cl_bound) comes beside the host loop.
BOUNDS = (("pct_of_bound", "bound", ""), ("pct_of_cl_bound", "cl_bound", " (OpenCL loop)"))


def save(fig, ax, path, docs, title):
    """Title (with the machine line under it), layout, the file, and the figure closed."""
    ax.set_title(f"{title}\n{machine_line(docs)}", fontsize=9)
    fig.tight_layout()
    fig.savefig(path, metadata=METADATA)
    plt.close(fig)


def bound_rows(docs):
    """(label, [(median, min, max, achieved GB/s, bound GB/s) per run]) in display order."""
    # (label, the row with the percentages and GB/s, the row that holds its bounds)
    measured = [(f"kernel: {r['name']}", r, r) for d in docs["kernels"] for r in d["bandwidth"]]
    measured += [(f"step {run['preset']}: {v['name']}", v, run)
                 for d in docs["optstep"] for run in d["runs"] for v in run["variants"]]
    rows = {}
    for pct, bound, suffix in BOUNDS:
        for label, r, bounds in measured:
            if pct in r:
                p = r[pct]
                rows.setdefault(label + suffix, []).append(
                    (p["median"], p["min"], p["max"], r["gbps"], bounds[bound]["gbps"]))
    return list(rows.items())


def plot_bounds(docs, path):
    rows = bound_rows(docs)
    fig, ax = plt.subplots(figsize=(9, 0.42 * len(rows) + 1.6))
    notes = []
    for i, (label, runs) in enumerate(rows):
        for k, (med, lo, hi, _, _) in enumerate(runs):
            y = i + (k - (len(runs) - 1) / 2) * 0.12
            ax.plot([lo, hi], [y, y], color="0.6", linewidth=1)
            ax.plot([med], [y], "o", color="C0", markersize=4)
        meds = sorted(r[0] for r in runs)
        gb = sorted(r[3] for r in runs)
        bgb = sorted(r[4] for r in runs)
        notes.append(f"{meds[len(meds) // 2]:.0f}%: {gb[len(gb) // 2]:.1f} of "
                     f"{bgb[len(bgb) // 2]:.1f} GB/s")
    ax.axvline(100, color="C3", linewidth=1)
    ax.set_yticks(range(len(rows)))
    ax.set_yticklabels([r[0] for r in rows], fontsize=8)
    ax.set_ylim(len(rows) - 0.5, -0.5)
    right = ax.twinx()
    right.set_ylim(ax.get_ylim())
    right.set_yticks(range(len(rows)))
    right.set_yticklabels(notes, fontsize=7)
    top = max([120.0] + [r[2] for _, runs in rows for r in runs])
    ax.set_xlim(0, top * 1.03)
    ax.set_xlabel("% of bound = bound ms / accel ms in each paired round (dot: a run's median, "
                  "line: its rounds' range; right: median of the runs, accel of bound GB/s)",
                  fontsize=7)
    ax.grid(axis="x", color="0.9")
    save(fig, ax, path, docs, f"accel against its bandwidth bounds ({len(docs['kernels'])} "
         f"kernels run(s), {len(docs['optstep'])} optstep run(s))")


def plot_graph(docs, path):
    fig, ax = plt.subplots(figsize=(7, 4.2))
    for d in docs["graph"]:
        for kind, color in (("memset 4 B", "C0"), ("fill 1 x f32", "C1")):
            rows = [r for r in d["rows"] if r["node"] == kind]
            n = [r["n"] for r in rows]
            for key, style, what in (("eager_ns_per_node", "-o", "eager"),
                                     ("replay_ns_per_node", "--s", "replay")):
                med = [r[key]["median"] for r in rows]
                ax.plot(n, med, style, color=color, markersize=4, linewidth=1,
                        label=f"{kind}: {what}")
                ax.fill_between(n, [r[key]["p10"] for r in rows], [r[key]["p90"] for r in rows],
                                color=color, alpha=0.12, linewidth=0)
    handles, labels = ax.get_legend_handles_labels()
    seen = {}
    for h, l in zip(handles, labels):
        seen.setdefault(l, h)
    ax.legend(seen.values(), seen.keys(), fontsize=8)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("nodes in the chain (N)")
    ax.set_ylabel("host ns per node (submit + synchronize) / N")
    ax.grid(color="0.9", which="both")
    save(fig, ax, path, docs, f"eager vs captured + replayed, {len(docs['graph'])} run(s) "
         "(line: median, band: p10..p90)")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default=".")
    ap.add_argument("results", nargs="+")
    args = ap.parse_args()
    docs = load(args.results)
    if docs["kernels"] or docs["optstep"]:
        plot_bounds(docs, f"{args.out}/bench-bounds.svg")
        print(f"wrote {args.out}/bench-bounds.svg")
    if docs["graph"]:
        plot_graph(docs, f"{args.out}/bench-graph.svg")
        print(f"wrote {args.out}/bench-graph.svg")
    return 0


if __name__ == "__main__":
    sys.exit(main())
