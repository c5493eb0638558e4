#!/usr/bin/env python3
"""Peak allocated versus peak reserved with captured steps (docs/MEMORY.md).

Two graphs are captured, a "train step" and an "eval step", each allocating its activations on
the capturing stream (graph-pool memory), freeing them before the step ends and keeping one
output. With --pool separate each graph gets its own pool, so the device reserves both steps'
peaks at once; with --pool shared both capture into one pool (accel_graph_pool_create), and the
eval step reuses what the train step freed: the same bytes allocated, fewer reserved.

    ACCEL_TRACE=trace.json python3 examples/python/memory_pools.py --pool shared --out DIR

prints the figures and writes DIR/snapshot-<pool>.json (draw it, and the trace, with
tools/accel_memviz.py)."""
import argparse
import json
import os

import accel
from accel import ffi, lib

MiB = 1 << 20
STEPS = {"train step": [6 * MiB, 6 * MiB, 4 * MiB, 4 * MiB, 2 * MiB],
         "eval step": [8 * MiB, 4 * MiB, 4 * MiB]}


def capture_step(dev, stream, name, sizes, pool):
    """Captures one step: activations allocated layer by layer on the stream, each written, all
    freed at the end but the output (1 MiB), which the graph keeps."""
    graph = dev.graph()
    out = ffi.new("void **")
    with accel.memory_tag(name), graph.capture(stream, pool=pool, mode="thread_local"):
        acts = []
        for n in sizes:
            accel._lib.check(lib.accel_malloc_async(stream._handle(), n, out))
            accel._lib.check(lib.accel_memset_async(stream._handle(), out[0], 0, n))
            acts.append(out[0])
        accel._lib.check(lib.accel_malloc_async(stream._handle(), MiB, out))
        for p in acts:
            accel._lib.check(lib.accel_free_async(stream._handle(), p))
    return graph, out[0]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--pool", choices=("shared", "separate"), default="shared")
    ap.add_argument("--out", default=".")
    ap.add_argument("--device", default="cpu")
    a = ap.parse_args()
    dev = accel.Device(a.device)
    stream = dev.stream(lazy=False)
    with accel.memory_tag("params"):
        params = [dev.empty(n // 4) for n in (3 * MiB, MiB, 512 * 1024)]
    shared = dev.pool() if a.pool == "shared" else None
    graphs, outputs = [], []
    for name, sizes in STEPS.items():
        g, o = capture_step(dev, stream, name, sizes, shared)
        graphs.append((name, g))
        outputs.append(o)
    for _, g in graphs:
        g.replay(stream)
    stream.synchronize()
    s = accel.memory_stats_ex(dev)
    print(f"pool: {a.pool}")
    print(f"  peak allocated {s['peak_allocated_bytes'] / MiB:6.1f} MiB   "
          f"peak reserved {s['peak_reserved_bytes'] / MiB:6.1f} MiB   "
          f"graph pools {s['graph_pool_reserved_bytes'] / MiB:6.1f} MiB")
    for name, g in graphs:
        i = accel.graph_memory_info(g)
        print(f"  {name:<11} pool reserved {i['pool_reserved_bytes'] / MiB:5.1f} MiB "
              f"(shared by {i['pool_graphs']}), capture peak "
              f"{i['capture_peak_allocated_bytes'] / MiB:5.1f} MiB allocated, "
              f"pins {i['pinned_bytes'] / MiB:.1f} MiB")
    print(accel.memory_summary(dev))
    os.makedirs(a.out, exist_ok=True)
    with open(os.path.join(a.out, f"snapshot-{a.pool}.json"), "w") as f:
        json.dump(accel.memory_snapshot(dev), f, indent=1)
    for _, g in graphs:
        g.close()
    for o in outputs:
        accel._lib.check(lib.accel_free(dev._handle(), o))
    if shared:
        shared.close()
    for p in params:
        p.close()
    stream.close()
    dev.close()


if __name__ == "__main__":
    main()
