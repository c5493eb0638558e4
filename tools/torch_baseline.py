#!/usr/bin/env python3
"""PyTorch CPU peer for accel-bench (the same tensor shapes, measured the same way).

usage: torch_baseline.py clip    --sizes FILE [--count N] [--threads T]
       torch_baseline.py optstep|ampstep-fp16|ampstep-bf16 --sizes FILE [--count N] [--threads T]

T: torch.set_num_threads(T); 0 keeps PyTorch's own default (this build starts with one thread
here); without --threads, os.cpu_count().

FILE holds one tensor numel per line (accel-bench writes it). The last line printed is one JSON
object: {"available": true, "mode", "torch_version", "threads", "ms": {"median", "min", "max",
"p10", "p90", "n"}, ...} or {"available": false, "reason": ...} when torch cannot be imported.

clip:    torch.nn.utils.clip_grad_norm_ over fp32 grads; call k uses max_norm = initial norm
         / 2^(k+1), so every call scales by ~0.5 (as accel-bench does). Timed per call; N calls
         after one warm-up.
optstep: the mixed-precision step accel-bench's optstep runs: fresh bf16 grads (copy from a
         pristine buffer), fp32 grads zeroed and += bf16 (lp -> hp), bf16 grads zeroed, unscale
         with an overflow check, clip_grad_norm_, torch.optim.AdamW(foreach=True).step().
         N timed steps after one warm-up step (AdamW creates its state on the first step).
ampstep-fp16, ampstep-bf16: accel-bench's optstep presets gpt2-fp16 / gpt2-bf16 (see
         bench_ampstep), timed the same way.
"""
import argparse
import json
import os
import statistics
import sys
import time


def stats(samples_ms):
    s = sorted(samples_ms)

    def pct(q):
        pos = q * (len(s) - 1)
        lo = int(pos)
        if lo + 1 >= len(s):
            return s[-1]
        return s[lo] + (s[lo + 1] - s[lo]) * (pos - lo)

    return {"median": statistics.median(s), "min": s[0], "max": s[-1],
            "p10": pct(0.1), "p90": pct(0.9), "n": len(s)}


def make_tensors(torch, sizes, dtype, seed):
    gen = torch.Generator().manual_seed(seed)
    return [(torch.rand(n, generator=gen) * 2 - 1).to(dtype) for n in sizes]


def bench_clip(torch, sizes, count):
    params = [torch.nn.Parameter(torch.zeros(n)) for n in sizes]
    for p, g in zip(params, make_tensors(torch, sizes, torch.float32, 1)):
        p.grad = g
    with torch.no_grad():
        norm = torch.linalg.vector_norm(torch.stack([torch.linalg.vector_norm(p.grad)
                                                     for p in params]))
    max_norm = float(norm)
    times = []
    for i in range(count + 1):
        max_norm *= 0.5
        t0 = time.perf_counter()
        torch.nn.utils.clip_grad_norm_(params, max_norm)
        t1 = time.perf_counter()
        if i > 0:
            times.append((t1 - t0) * 1e3)
    return times


def unscale_and_check(torch, grads, inv_scale, found_inf):
    """torch's AMP helper where this build has it on the CPU, else foreach_mul + isfinite."""
    try:
        torch._amp_foreach_non_finite_check_and_unscale_(grads, found_inf, inv_scale)
        return "torch._amp_foreach_non_finite_check_and_unscale_"
    except (RuntimeError, NotImplementedError):
        torch._foreach_mul_(grads, float(inv_scale))
        bad = torch.stack([torch.logical_not(torch.isfinite(g).all()) for g in grads]).any()
        found_inf.copy_(bad.to(found_inf.dtype))
        return "torch._foreach_mul_ + isfinite().all() per tensor"


def master_state(torch, params):
    """Zero fp32 gradients on params (the hp grads) and the AdamW(foreach=True) both steps use."""
    for p in params:
        p.grad = torch.zeros_like(p)
    opt = torch.optim.AdamW(params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.01,
                            foreach=True)
    return [p.grad for p in params], opt


def bench_optstep(torch, sizes, count):
    params = [torch.nn.Parameter(t) for t in make_tensors(torch, sizes, torch.float32, 2)]
    pristine = make_tensors(torch, sizes, torch.bfloat16, 3)
    lp_grads = [torch.empty_like(t) for t in pristine]
    hp_grads, opt = master_state(torch, params)
    found_inf = torch.zeros(1)
    times = []
    how = ""
    for i in range(count + 1):
        inv_scale = torch.full((1,), 2.0 ** -(10 + i % 2))
        t0 = time.perf_counter()
        with torch.no_grad():
            torch._foreach_copy_(lp_grads, pristine) if hasattr(torch, "_foreach_copy_") else \
                [d.copy_(s) for d, s in zip(lp_grads, pristine)]
            torch._foreach_zero_(hp_grads)
            for hp, lp in zip(hp_grads, lp_grads):
                hp.add_(lp)
            torch._foreach_zero_(lp_grads)
            found_inf.zero_()
            how = unscale_and_check(torch, hp_grads, inv_scale, found_inf)
        torch.nn.utils.clip_grad_norm_(params, 1.0)
        opt.step()
        t1 = time.perf_counter()
        if i > 0:
            times.append((t1 - t0) * 1e3)
    return times, how


def bench_ampstep(torch, sizes, count, fp16):
    """accel-bench's gpt2-fp16 / gpt2-bf16 step in PyTorch on the CPU: fresh lp grads (fp16:
    times the loss scale), hp = 0, hp += lp, lp = 0, fp16: unscale + overflow check and
    GradScaler's bookkeeping on the host (found_inf.item(), skip, scale update: GradScaler
    itself is CUDA-only in torch 1.13), clip_grad_norm_, AdamW(foreach=True).step() unless
    skipped, model weights = master (copy_ with the downcast). The same overflow schedule:
    one gradient of 1.0, scale 2^15 growing every 9 clean steps."""
    lp_dtype = torch.float16 if fp16 else torch.bfloat16
    params = [torch.nn.Parameter(t) for t in make_tensors(torch, sizes, torch.float32, 2)]
    pristine = [t * 1e-3 for t in make_tensors(torch, sizes, torch.float32, 3)]
    pristine = [t.to(lp_dtype) for t in pristine]
    pristine[max(range(len(sizes)), key=sizes.__getitem__)][5] = 1.0  # as accel-bench
    lp_grads = [torch.empty_like(t) for t in pristine]
    model = [p.detach().to(lp_dtype) for p in params]
    hp_grads, opt = master_state(torch, params)
    found_inf = torch.zeros(1)
    scale, tracker, interval = 32768.0, 0, 9
    times = []
    how = ""
    for i in range(count + 1):
        t0 = time.perf_counter()
        skip = False
        with torch.no_grad():
            for d, src in zip(lp_grads, pristine):
                d.copy_(src)
            if fp16:
                torch._foreach_mul_(lp_grads, scale)
            torch._foreach_zero_(hp_grads)
            for hp, lp in zip(hp_grads, lp_grads):
                hp.add_(lp)
            torch._foreach_zero_(lp_grads)
            if fp16:
                found_inf.zero_()
                how = unscale_and_check(torch, hp_grads, torch.full((1,), 1.0 / scale),
                                        found_inf)
                skip = found_inf.item() != 0.0  # GradScaler.step's host sync
        torch.nn.utils.clip_grad_norm_(params, 1.0)
        if not skip:
            opt.step()
            with torch.no_grad():
                for m, p in zip(model, params):
                    m.copy_(p)
        if fp16:
            if skip:
                scale, tracker = scale * 0.5, 0
            elif tracker + 1 == interval:
                scale, tracker = scale * 2.0, 0
            else:
                tracker += 1
        t1 = time.perf_counter()
        if i > 0:
            times.append((t1 - t0) * 1e3)
    return times, how


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("mode", choices=["clip", "optstep", "ampstep-fp16", "ampstep-bf16"])
    ap.add_argument("--sizes", required=True)
    ap.add_argument("--count", type=int, default=5)
    ap.add_argument("--threads", type=int, default=os.cpu_count() or 1)
    args = ap.parse_args()
    try:
        import torch
    except ImportError as e:
        print(json.dumps({"available": False, "reason": f"import torch failed: {e}"}))
        return 0
    with open(args.sizes) as f:
        sizes = [int(line) for line in f if line.strip()]
    if args.threads > 0:
        torch.set_num_threads(args.threads)
    out = {"available": True, "mode": args.mode, "torch_version": torch.__version__,
           "threads": torch.get_num_threads(), "tensors": len(sizes), "numel": sum(sizes)}
    if args.mode == "clip":
        times = bench_clip(torch, sizes, max(args.count, 1))
    elif args.mode == "optstep":
        times, how = bench_optstep(torch, sizes, max(args.count, 1))
        out["unscale"] = how
    else:
        times, how = bench_ampstep(torch, sizes, max(args.count, 1), args.mode == "ampstep-fp16")
        out["unscale"] = how
    out["ms"] = stats(times)
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
