"""Memory you can see (docs/MEMORY.md): the snapshot validates against its JSON Schema and its
blocks add up exactly to accel_memory_stats; memory_summary, tags across threads and a graph's
figures from Python."""
import json
import pathlib
import threading

import pytest

import accel
from accel import ffi, lib

SCHEMA = pathlib.Path(__file__).resolve().parents[2] / "docs" / "memory_snapshot.schema.json"


def _validate(snap):
    schema = json.loads(SCHEMA.read_text())
    try:
        import jsonschema
    except ImportError:  # a small checker: the required members of every level
        assert set(schema["required"]) <= set(snap)
        for seg in snap["segments"]:
            assert set(schema["$defs"]["segment"]["required"]) <= set(seg)
            for b in seg["blocks"]:
                assert set(schema["$defs"]["block"]["required"]) <= set(b)
                assert b["state"] in schema["$defs"]["block"]["properties"]["state"]["enum"]
        return
    jsonschema.validate(snap, schema)


def _check_sums(snap, stats):
    """The snapshot's blocks against the statistics (registrations are not counted)."""
    counted = [s for s in snap["segments"] if s["pool"] != "registration"]
    live = [b for s in counted for b in s["blocks"] if b["state"] != "free"]
    assert sum(b["size"] for b in live) == stats["allocated_bytes"]
    assert len(live) == stats["active_blocks"]
    assert sum(s["size"] for s in counted) == stats["reserved_bytes"]
    assert len(counted) == stats["segment_count"]
    assert sum(s["size"] for s in counted if s["pool"] == "graph") == \
        stats["graph_pool_reserved_bytes"]
    for s in snap["segments"]:  # the blocks tile their segment
        at = int(s["address"], 16)
        for b in s["blocks"]:
            assert int(b["address"], 16) == at
            at += b["size"]
        assert at == int(s["address"], 16) + s["size"]
    assert snap["stats"]["allocated_bytes"] == stats["allocated_bytes"]


def _malloc_async(stream, n):
    p = ffi.new("void **")
    accel._lib.check(lib.accel_malloc_async(stream._handle(), n, p))
    return p[0]


def test_snapshot_schema_and_sums(dev, stream):
    pool = dev.pool()
    graphs = [dev.graph() for _ in range(2)]
    kept = []
    bufs = [dev.empty(n) for n in (100, 5000, 300000)]
    del bufs[1]  # a hole in a split segment
    user = dev.empty(1024)
    for g in graphs:
        with g.capture(stream, pool=pool, mode="thread_local"):
            with accel.memory_tag("captured"):
                kept.append(_malloc_async(stream, 1 << 16))
            accel._lib.check(lib.accel_memset_async(stream._handle(), user._handle(), 0,
                                                    user.nbytes))
    user.close()  # pinned by both graphs: freed_pinned until they go
    snap = accel.memory_snapshot(dev)
    _validate(snap)
    _check_sums(snap, dev.memory_stats())
    states = {b["state"] for s in snap["segments"] for b in s["blocks"]}
    assert {"allocated", "free", "freed_pinned"} <= states
    tags = [b["tag"] for s in snap["segments"] for b in s["blocks"] if b["tag"]]
    assert tags.count("captured") == 2
    info = accel.graph_memory_info(graphs[0])
    assert info["pool_graphs"] == 2 and info["pinned_blocks"] == 1
    assert info["pool_reserved_bytes"] == dev.memory_stats()["graph_pool_reserved_bytes"]
    summary = accel.memory_summary(dev)
    assert "captured" in summary and "inactive split" in summary
    for g in graphs:
        g.close()
    for p in kept:
        accel._lib.check(lib.accel_free(dev._handle(), p))
    pool.close()
    snap = accel.memory_snapshot(dev)
    _validate(snap)
    _check_sums(snap, dev.memory_stats())


def test_schema_rejects_a_broken_snapshot(dev):
    jsonschema = pytest.importorskip("jsonschema")
    snap = accel.memory_snapshot(dev)
    snap["segments"].append({"address": "12", "size": 0, "pool": "other", "pool_id": None,
                             "blocks": []})
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(snap, json.loads(SCHEMA.read_text()))


def test_tags_per_thread(dev):
    out = {}

    def work(name):
        with accel.memory_tag(name):
            with accel.memory_tag(name + "/inner"):
                out[name + "/inner"] = dev.empty(64)
            out[name] = dev.empty(64)

    threads = [threading.Thread(target=work, args=(f"t{i}",)) for i in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    by_addr = {b["address"]: b["tag"] for s in accel.memory_snapshot(dev)["segments"]
               for b in s["blocks"] if b["state"] == "allocated"}
    for name, buf in out.items():
        assert by_addr[hex(int(ffi.cast("uintptr_t", buf._handle())))] == name
    with pytest.raises(accel.StateError):
        accel._lib.check(lib.accel_memory_tag_pop())
    for buf in out.values():
        buf.close()


def test_stats_ex(dev):
    s = accel.memory_stats_ex(dev)
    assert s["allocated_bytes"] == dev.memory_stats()["allocated_bytes"]
    assert "largest_free_block" in s and isinstance(s["last_retry_reason"], str)


def test_memviz_draws(dev, tmp_path):
    pytest.importorskip("matplotlib")
    import subprocess
    import sys
    tool = pathlib.Path(__file__).resolve().parents[2] / "tools" / "accel_memviz.py"
    with accel.memory_tag("drawn"):
        buf = dev.empty(1000)
    (tmp_path / "s.json").write_text(json.dumps(accel.memory_snapshot(dev)))
    trace = [{"ph": "C", "name": "memory cpu:0", "pid": 1, "tid": 0, "ts": t,
              "args": {"allocated": a, "reserved": 2 << 20, "graph_pools": 0}}
             for t, a in ((0, 0), (5, 4096), (9, 0))]
    trace.append({"ph": "i", "name": "empty cache", "cat": "memory", "pid": 1, "tid": 1,
                  "ts": 7, "s": "t", "args": {"released": 0}})
    (tmp_path / "t.json").write_text(json.dumps(trace))
    for args in (["snapshot", tmp_path / "s.json", tmp_path / "s.svg", "--color-by", "tag"],
                 ["trace", tmp_path / "t.json", tmp_path / "t.svg"]):
        subprocess.run([sys.executable, str(tool)] + [str(x) for x in args], check=True)
    assert "drawn" in (tmp_path / "s.svg").read_text()
    assert "cpu:0 allocated" in (tmp_path / "t.svg").read_text()
    buf.close()
