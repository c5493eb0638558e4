#!/usr/bin/python3
"""accel-bench's Python peer: accel.torch against PyTorch's own CPU optimizer path (and
DeepSpeed's CPU Adam when it is importable), on accel-bench's optstep presets.

usage: bench_python.py [--preset gpt2|many-small] [--threads T] [--rounds R] [--steps K]
                       [--amsgrad] [--json]

Everything runs in one process on the same parameter and gradient tensors (fp32), T threads
for every implementation (ACCEL_CPU_THREADS and torch.set_num_threads). In each of R rounds
every variant takes K timed steps, in an order that rotates from round to round (the machine's
memory bandwidth drifts; see docs/PERFORMANCE.md); a variant's round time is the median of its
K steps, and a ratio is taken between two variants within each round. Reported: the median and
[min..max] of those per-round ratios.

python_over_c is measured apart, on --pairs back-to-back pairs per round (a C-driven replay,
then opt.step()), the ratio taken within each pair.

Variants:
  accel C-driven     the AdamW step's captured graph replayed from a C loop (replay + sync)
  accel.torch.AdamW  opt.step() from Python (the same graph, plus the per-step Python work)
  torch foreach      torch.optim.AdamW(foreach=True).step()
  torch default      torch.optim.AdamW().step() (torch 1.13 on CPU: the single-tensor loop)
  DeepSpeed CPU Adam DeepSpeedCPUAdam(adamw_mode=True).step(), when deepspeed imports
and, for clipping, accel.torch.clip_grad_norm_ against torch.nn.utils.clip_grad_norm_
(max_norm large enough that nothing is scaled, so every call does the same work).
With --amsgrad also (8 bytes per parameter more state each):
  accel amsgrad      accel.torch.AdamW(amsgrad=True).step()
  torch foreach amsgrad  torch.optim.AdamW(amsgrad=True, foreach=True).step()
and their ratios to accel.torch.AdamW (amsgrad's cost) and to accel amsgrad.
"""
import argparse
import json
import math
import os
import statistics
import sys
import time

from deepspeed_peer import deepspeed_adam  # tools/: DeepSpeedCPUAdam built as C++17


def splitmix64(state):
    state = (state + 0x9E3779B97F4A7C15) & 0xFFFFFFFFFFFFFFFF
    z = state
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & 0xFFFFFFFFFFFFFFFF
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & 0xFFFFFFFFFFFFFFFF
    return state, z ^ (z >> 31)


def preset_sizes(preset):
    """The tensor sizes of accel-bench's presets (tools/bench/optstep_model.c)."""
    if preset == "gpt2":
        d = 768
        sizes = [50257 * d, 1024 * d]
        for _ in range(12):
            sizes += [d, d, d * 3 * d, 3 * d, d * d, d, d, d, d * 4 * d, 4 * d, 4 * d * d, d]
        return sizes + [d, d]
    if preset == "many-small":
        state, sizes = 5, []
        for _ in range(3000):
            state, r = splitmix64(state)
            x = (r >> 40) * (1.0 / 16777216.0) * 2.0 - 1.0  # exact in float32 too
            u = 0.5 * (x + 1.0)
            sizes.append(min(max(int(math.exp(u * math.log(65536))), 1), 65536))
        return sizes
    raise SystemExit(f"unknown preset {preset!r} (gpt2, many-small)")


def stats(xs):
    return {"median": statistics.median(xs), "min": min(xs), "max": max(xs), "n": len(xs)}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--preset", default="gpt2")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--steps", type=int, default=5)
    ap.add_argument("--pairs", type=int, default=10,
                    help="back-to-back C-driven / Python-driven step pairs per round")
    ap.add_argument("--amsgrad", action="store_true",
                    help="also time AMSGrad: accel's against its plain step and torch's")
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args()
    os.environ["ACCEL_CPU_THREADS"] = str(a.threads)
    os.environ.setdefault("OMP_NUM_THREADS", str(a.threads))
    import torch
    import accel
    import accel.torch as at
    torch.set_num_threads(a.threads)

    sizes = preset_sizes(a.preset)
    gen = torch.Generator().manual_seed(0)
    params = [torch.nn.Parameter(torch.rand(n, generator=gen) * 2 - 1) for n in sizes]
    for p in params:
        p.grad = (torch.rand(p.shape, generator=gen) * 2 - 1) * 1e-3
    # Each optimizer keeps its own state; all step the same parameters with the same grads.
    ours = at.AdamW(params, lr=1e-3, weight_decay=0.01)
    ours.step()  # builds the lists and captures the graph
    plan = ours._plan
    variants = {
        "accel C-driven": lambda: plan.graph.replay_timed(plan.stream, 1)[0] / 1e3,
        "accel.torch.AdamW": ours.step,
        "torch foreach": torch.optim.AdamW(params, lr=1e-3, weight_decay=0.01, foreach=True).step,
        "torch default": torch.optim.AdamW(params, lr=1e-3, weight_decay=0.01).step,
        "accel clip_grad_norm_": lambda: at.clip_grad_norm_(params, 1e30),
        "torch clip_grad_norm_": lambda: torch.nn.utils.clip_grad_norm_(params, 1e30),
    }
    if a.amsgrad:
        variants["accel amsgrad"] = at.AdamW(params, lr=1e-3, weight_decay=0.01,
                                             amsgrad=True).step
        variants["torch foreach amsgrad"] = torch.optim.AdamW(
            params, lr=1e-3, weight_decay=0.01, amsgrad=True, foreach=True).step
    ds, ds_reason = deepspeed_adam(params)
    if ds is not None:
        variants["DeepSpeed CPU Adam"] = ds.step
    for fn in variants.values():  # warm-up: optimizer state, plans, first touch
        fn()
    names = list(variants)
    times = {n: [] for n in names}
    paired = []  # Python-driven step / C-driven replay, taken back to back
    for r in range(a.rounds):
        time.sleep(0.5)  # OpenMP workers of the previous variant stop spinning
        for i in range(a.pairs):
            if i % 2:
                c_s = variants["accel C-driven"]()
            t0 = time.perf_counter()
            ours.step()
            py_s = time.perf_counter() - t0
            if not i % 2:  # alternate which of the two goes first
                c_s = variants["accel C-driven"]()
            paired.append(py_s / c_s)
        order = names[r % len(names):] + names[:r % len(names)]
        for n in order:
            samples = []
            for _ in range(a.steps):
                t0 = time.perf_counter()
                inner = variants[n]()
                dt = time.perf_counter() - t0
                # the C-driven variant reports its own C-measured time
                samples.append(inner if n == "accel C-driven" else dt)
            times[n].append(statistics.median(samples) * 1e3)
        print(f"round {r + 1}/{a.rounds} done", file=sys.stderr)

    def ratios(num, den):
        return stats([x / y for x, y in zip(times[num], times[den])])

    load = os.getloadavg()
    res = {"preset": a.preset, "tensors": len(sizes), "params": sum(sizes),
           "threads": a.threads, "rounds": a.rounds, "steps_per_round": a.steps,
           "torch": torch.__version__, "accel": accel.version(), "loadavg": load,
           "ms": {n: stats(times[n]) for n in names},
           "python_over_c": stats(paired),
           "torch_foreach_over_accel": ratios("torch foreach", "accel.torch.AdamW"),
           "torch_default_over_accel": ratios("torch default", "accel.torch.AdamW"),
           "torch_clip_over_accel_clip": ratios("torch clip_grad_norm_", "accel clip_grad_norm_"),
           "deepspeed": ("available" if ds is not None else ds_reason)}
    if ds is not None:
        res["deepspeed_over_accel"] = ratios("DeepSpeed CPU Adam", "accel.torch.AdamW")
    if a.amsgrad:
        res["accel_amsgrad_over_accel"] = ratios("accel amsgrad", "accel.torch.AdamW")
        res["torch_foreach_amsgrad_over_accel_amsgrad"] = ratios("torch foreach amsgrad",
                                                                 "accel amsgrad")
    if a.json:
        print(json.dumps(res))
        return
    print(f"preset {a.preset}: {len(sizes)} tensors, {sum(sizes)} params, {a.threads} threads, "
          f"{a.rounds} rounds x {a.steps} steps, torch {torch.__version__}, "
          f"load average {load[0]:.2f}")
    for n in names:
        s = res["ms"][n]
        print(f"  {n:24s} {s['median']:9.3f} ms/step  [{s['min']:.3f}..{s['max']:.3f}]")
    for key in ("python_over_c", "torch_foreach_over_accel", "torch_default_over_accel",
                "torch_clip_over_accel_clip", "deepspeed_over_accel", "accel_amsgrad_over_accel",
                "torch_foreach_amsgrad_over_accel_amsgrad"):
        if key in res:
            s = res[key]
            print(f"  {key:40s} {s['median']:.3f}x  [{s['min']:.3f}..{s['max']:.3f}]")
    if ds is None:
        print(f"  DeepSpeed CPU Adam: not run: {ds_reason}")


if __name__ == "__main__":
    main()
