"""Memory you can see (docs/MEMORY.md): the growable statistics, a graph's figures, the
allocator snapshot, a torch.cuda.memory_summary-like table and memory tags."""
import contextlib
import json

from ._lib import check, ffi, lib
from ._objects import _struct_to_dict

__all__ = ["memory_stats_ex", "graph_memory_info", "memory_snapshot", "memory_summary",
           "memory_tag"]


def memory_stats_ex(device):
    """accel_memory_stats_ex as one flat dict: accel_memory_stats' figures plus fragmentation
    (largest_free_block, inactive_split_bytes, ...) and out-of-memory retries."""
    out = ffi.new("accel_memory_stats_ex_t *")
    out.struct_size = ffi.sizeof("accel_memory_stats_ex_t")
    check(lib.accel_memory_stats_ex(device._handle(), out))
    d = _struct_to_dict(out)
    d.update(_struct_to_dict(ffi.addressof(out, "stats")))
    del d["stats"], d["struct_size"]
    return d


def graph_memory_info(graph):
    """accel_graph_memory_info as a dict (pool_reserved_bytes, pool_graphs, pinned_bytes, ...)."""
    out = ffi.new("accel_graph_memory_info_t *")
    out.struct_size = ffi.sizeof("accel_graph_memory_info_t")
    check(lib.accel_graph_memory_info(graph._handle(), out))
    d = _struct_to_dict(out)
    del d["struct_size"]
    return d


def memory_snapshot(device):
    """Every segment and block of the device's allocator (docs/memory_snapshot.schema.json)."""
    out = ffi.new("char **")
    length = ffi.new("size_t *")
    check(lib.accel_memory_snapshot(device._handle(), out, length))
    try:
        return json.loads(ffi.string(out[0], length[0]).decode())
    finally:
        lib.accel_memory_snapshot_free(out[0])


def _size(n):
    for unit in ("B", "KiB", "MiB", "GiB"):
        if abs(n) < 1024 or unit == "GiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return str(n)


def _summary_rows(snap):
    """(pool, tag) -> [allocated bytes, allocated blocks, free bytes, free blocks]."""
    rows = {}
    for seg in snap["segments"]:
        for b in seg["blocks"]:
            key = (seg["pool"], b["tag"] or "-")
            row = rows.setdefault(key, [0, 0, 0, 0])
            col = 0 if b["state"] != "free" else 2
            row[col] += b["size"]
            row[col + 1] += 1
    return rows


def memory_summary(device):
    """A text table of the device's memory, like torch.cuda.memory_summary: the statistics and
    fragmentation figures, then the snapshot's blocks by pool and tag."""
    s = memory_stats_ex(device)
    snap = memory_snapshot(device)
    w = 78
    lines = ["=" * w, f" accel memory summary, device {snap['device']}".ljust(w), "-" * w]
    figures = [
        ("allocated", s["allocated_bytes"], s["peak_allocated_bytes"]),
        ("reserved", s["reserved_bytes"], s["peak_reserved_bytes"]),
        ("  of which graph pools", s["graph_pool_reserved_bytes"], None),
        ("largest free block (default pool)", s["largest_free_block"], None),
        ("inactive split", s["inactive_split_bytes"], None),
        ("cache emptied: returned", s["cache_empty_released_bytes"], None),
    ]
    lines.append(f" {'metric':<40}{'now':>18}{'peak':>18}")
    for name, now, peak in figures:
        lines.append(f" {name:<40}{_size(now):>18}{_size(peak) if peak is not None else '':>18}")
    counts = [("live blocks", s["active_blocks"]), ("segments", s["segment_count"]),
              ("graph pools", s["graph_pools"]), ("allocations", s["alloc_count"]),
              ("frees", s["free_count"]), ("cache empties", s["cache_empties"]),
              ("out-of-memory retries", s["alloc_retries"]),
              ("  recovered", s["retries_recovered"]), ("  failed (OOM)", s["ooms"])]
    for name, n in counts:
        lines.append(f" {name:<40}{n:>18}")
    if s["last_retry_bytes"]:
        lines.append(f" last retry: {_size(s['last_retry_bytes'])}: {s['last_retry_reason']}"[:w])
    lines += ["-" * w, f" {'pool':<14}{'tag':<24}{'allocated':>12}{'blocks':>7}{'free':>12}"
                       f"{'blocks':>7}"]
    for (pool, tag), r in sorted(_summary_rows(snap).items()):
        lines.append(f" {pool:<14}{tag[:23]:<24}{_size(r[0]):>12}{r[1]:>7}{_size(r[2]):>12}"
                     f"{r[3]:>7}")
    lines.append("=" * w)
    return "\n".join(lines)


@contextlib.contextmanager
def memory_tag(name):
    """Tags the calling thread's allocations inside the with block (accel_memory_tag_push/pop)."""
    check(lib.accel_memory_tag_push(name.encode()))
    try:
        yield
    finally:
        check(lib.accel_memory_tag_pop())
