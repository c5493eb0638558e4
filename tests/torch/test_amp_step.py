#!/usr/bin/python3
"""The whole fp16 step on the device (issue 22) against itself and against PyTorch.

usage: test_amp_step.py AMP_STEP_PROGRAM DEVICE OUT_DIR sequence   (needs torch)
       test_amp_step.py AMP_STEP_PROGRAM DEVICE OUT_DIR replay     (any python 3)

sequence: 100 steps with overflows injected at chosen steps (an Inf, a NaN, a gradient whose
  loss-scaled value overflows fp16) run eagerly, captured once and replayed, and lazily
  (amp_step_program.c): the three runs must be bitwise identical, and the per-step loss scale,
  growth tracker, found_inf and step counter must equal, exactly, GradScaler's dynamic loss
  scaling driven the same way in PyTorch (the logic of torch._amp_update_scale_ and
  _amp_foreach_non_finite_check_and_unscale_, written out below because torch 1.13 runs both
  only on CUDA and disables GradScaler on the CPU), with torch.optim.AdamW (skipped on overflow
  as GradScaler.step skips it) and torch.nn.utils.clip_grad_norm_: parameters and optimizer
  state within tolerance, the fp16 model weights exactly the fp16 rounding of the fp32 master.
replay: 1000 replays of one capture under ACCEL_TRACE: the trace of the loop must hold the
  1000 replays and no host call that writes or synchronizes (no copy, memset, synchronize,
  event query, kernel launch outside the graph) between the first and the last replay, and
  the replayed state must equal the same 1000 steps run eagerly, bitwise, with several
  overflows (the loss scale grows until fp16 overflows, then backs off) and a step counter
  that skipped them.
Exit 77 (skip) when torch (sequence) or the device is missing.
"""
import json
import os
import struct
import subprocess
import sys
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "common"))
from problems import report  # noqa: E402

NUMEL = [1000, 333, 70000]  # one tensor spans two chunks
STEPS = 100
REPLAY_STEPS = 1000
INIT_SCALE, GROWTH_INTERVAL, GROWTH_FACTOR, BACKOFF = 65536.0, 7, 2.0, 0.5
BETA1, BETA2, EPS, WD, MAX_NORM = 0.9, 0.999, 1e-8, 0.01, 0.2
OVERFLOWS = {10: "inf", 25: "nan", 40: "big", 41: "inf", 77: "big"}  # step -> injected value
RECORD = struct.Struct("<fiIf")  # scale, growth_tracker, step, found_inf


def lr_at(k):
    return 1e-3 * min(1.0, (k + 1) / 10.0)


def f32(x):
    return struct.unpack("<f", struct.pack("<f", x))[0]


def write_input(path, master, grads, lrs, init_scale=INIT_SCALE, interval=GROWTH_INTERVAL):
    n = sum(NUMEL)
    with open(path, "wb") as f:
        f.write(struct.pack("<II", len(NUMEL), len(lrs)))
        f.write(struct.pack(f"<{len(NUMEL)}I", *NUMEL))
        f.write(struct.pack("<fiff", init_scale, interval, GROWTH_FACTOR, BACKOFF))
        f.write(struct.pack("<fffff", BETA1, BETA2, EPS, WD, MAX_NORM))
        f.write(struct.pack(f"<{len(lrs)}f", *lrs))
        f.write(master)
        f.write(grads)
    assert len(master) == 4 * n


def run(prog, device, args, env=None):
    r = subprocess.run([prog, device] + args, env=env)
    if r.returncode == 77:
        print(f"SKIP: {device} is not available")
        sys.exit(77)
    if r.returncode != 0:
        print(f"FAIL: amp_step_program {device} {' '.join(args)}: exit status {r.returncode}")
        sys.exit(1)


def sequence(prog, device, out):
    try:
        import torch
    except ImportError as e:
        print(f"SKIP: torch is not importable: {e}")
        sys.exit(77)
    torch.manual_seed(22)
    n = sum(NUMEL)
    master0 = torch.rand(n) * 2 - 1
    grads = torch.randn(STEPS, n) * 1e-3
    for k, what in OVERFLOWS.items():
        grads[k, 1000 + 7] = {"inf": float("inf"), "nan": float("nan"), "big": 4.0}[what]
    lrs = [lr_at(k) for k in range(STEPS)]
    write_input(os.path.join(out, "input.bin"), master0.numpy().tobytes(),
                grads.numpy().tobytes(), lrs)
    results = {}
    for mode in ("eager", "graph", "lazy"):
        run(prog, device, [mode, out])
        with open(os.path.join(out, f"out-{mode}.bin"), "rb") as f:
            results[mode] = f.read()
    problems = []
    for mode in ("graph", "lazy"):
        if results[mode] != results["eager"]:
            problems.append(f"{mode} differs from eager (bitwise)")
    data = results["eager"]
    records = [RECORD.unpack_from(data, k * RECORD.size) for k in range(STEPS)]
    off = STEPS * RECORD.size
    state = torch.frombuffer(bytearray(data[off:off + 12 * n]), dtype=torch.float32)
    master, exp_avg, exp_avg_sq = state[:n], state[n:2 * n], state[2 * n:]
    model = torch.frombuffer(bytearray(data[off + 12 * n:]), dtype=torch.float16)

    # PyTorch, driven the same way
    params = [p.clone().requires_grad_(True) for p in torch.split(master0.clone(), NUMEL)]
    opt = torch.optim.AdamW(params, lr=lrs[0], betas=(BETA1, BETA2), eps=EPS, weight_decay=WD,
                            foreach=False)
    scale = torch.tensor([INIT_SCALE], dtype=torch.float32)
    tracker = 0
    for k in range(STEPS):
        for grp in opt.param_groups:
            grp["lr"] = lrs[k]
        # backward: fp16 grads of the scaled loss (fp32 product, rounded to fp16)
        lp = [(g * scale).half() for g in torch.split(grads[k], NUMEL)]
        inv_scale = scale.double().reciprocal().float()
        found_inf = 0.0
        for p, g in zip(params, lp):
            p.grad = g.float() * inv_scale  # _amp_foreach_non_finite_check_and_unscale_
            if not torch.isfinite(p.grad).all():
                found_inf = 1.0
        torch.nn.utils.clip_grad_norm_(params, MAX_NORM)
        if not found_inf:  # GradScaler.step skips optimizer.step()
            opt.step()
        # torch._amp_update_scale_
        if found_inf:
            scale = (scale.double() * BACKOFF).float()
            tracker = 0
        elif tracker + 1 == GROWTH_INTERVAL:
            grown = (scale.double() * GROWTH_FACTOR).float()
            if torch.isfinite(grown).all():
                scale = grown
            tracker = 0
        else:
            tracker += 1
        step = int(opt.state[params[0]]["step"]) if params[0] in opt.state else 0
        want = (f32(scale.item()), tracker, step, found_inf)
        if records[k] != want:
            problems.append(f"step {k}: accel (scale, tracker, step, found_inf) {records[k]}, "
                            f"torch {want}")
    skipped = sum(1 for r in records if r[3] != 0)
    missed = [k for k in OVERFLOWS if records[k][3] == 0]
    if missed:  # the scale may also grow into a natural overflow: torch agrees on those above
        problems.append(f"injected overflows at steps {missed} were not found")
    t_master = torch.cat([p.detach() for p in params])
    t_m = torch.cat([opt.state[p]["exp_avg"] for p in params])
    t_v = torch.cat([opt.state[p]["exp_avg_sq"] for p in params])
    for name, got, want, rtol, atol in (("master", master, t_master, 1e-5, 1e-6),
                                        ("exp_avg", exp_avg, t_m, 1e-4, 1e-9),
                                        ("exp_avg_sq", exp_avg_sq, t_v, 1e-4, 1e-12)):
        if not torch.allclose(got, want, rtol=rtol, atol=atol):
            err = (got - want).abs().max().item()
            problems.append(f"{name} differs from torch: max abs error {err:g}")
    if not torch.equal(model.view(torch.int16), master.half().view(torch.int16)):
        problems.append("model weights are not the fp16 rounding of the master weights")
    moved = (master - master0).abs().max().item()
    if not moved > 1e-3:
        problems.append(f"master weights barely moved ({moved:g}): the steps did not run")
    return report(problems, f"{device}: eager == graph == lazy bitwise over {STEPS} steps; "
                  f"{skipped} overflowed steps skipped; scale/tracker/step exact vs torch; "
                  f"final scale {records[-1][0]:g}, step {records[-1][2]}")


# Host calls that must not appear in the replay loop (on any track: the program runs nothing
# else meanwhile; a replay's own nodes are not traced as calls).
FORBIDDEN = ("accel_memcpy", "accel_memset", "synchronize", "accel_event_query",
             "accel_stream_query", "accel_graph_capture", "launch", "accel_amp", "accel_cast",
             "accel_fused_adam", "accel_step_count", "lazy_flush", "accel_stream_flush")


def replay(prog, device, out):
    import random
    rnd = random.Random(22)
    n = sum(NUMEL)
    master0 = struct.pack(f"<{n}f", *[rnd.uniform(-1.0, 1.0) for _ in range(n)])
    # The gradient is the master weight itself (computed on the device). From a scale of 1024
    # growing every 20 steps, the scale grows until |w| * scale overflows fp16 (65504), backs
    # off, and grows again.
    write_input(os.path.join(out, "input.bin"), master0, bytes(4 * n), [1e-3], 1024.0, 20)
    trace = os.path.join(out, "replay-trace.json")
    if os.path.exists(trace):
        os.remove(trace)
    run(prog, device, ["replay", str(REPLAY_STEPS), out], dict(os.environ, ACCEL_TRACE=trace))
    problems = []
    with open(os.path.join(out, "replay.bin"), "rb") as f:
        data = f.read()
    dev_size = 24 + 8 + 32
    if data[:dev_size] != data[dev_size:2 * dev_size]:
        problems.append("replayed scalars differ from the eager run")
    half = (len(data) - 2 * dev_size) // 2
    if data[2 * dev_size:2 * dev_size + half] != data[2 * dev_size + half:]:
        problems.append("replayed state differs from the eager run (bitwise)")
    scale, _inv, tracker, _interval, _gf, _bf = struct.unpack_from("<ffiiff", data, 0)
    step, found = struct.unpack_from("<If", data, 32 + 20)
    skipped = REPLAY_STEPS - step
    if not 0 < skipped < REPLAY_STEPS // 10:
        problems.append(f"{skipped} of {REPLAY_STEPS} steps overflowed: want a few")
    with open(trace) as f:
        events = [e for e in json.load(f) if e.get("ph") == "X"]
    replays = sorted((e for e in events if e["name"] == "accel_graph_replay"),
                     key=lambda e: e["ts"])
    if len(replays) != REPLAY_STEPS:
        problems.append(f"trace holds {len(replays)} replays, want {REPLAY_STEPS}")
    else:
        t0, t1 = replays[0]["ts"], replays[-1]["ts"]
        inside = [e["name"] for e in events
                  if t0 <= e["ts"] <= t1 and e["name"] != "accel_graph_replay"
                  and any(w in e["name"] for w in FORBIDDEN)]
        if inside:
            problems.append(f"host calls inside the replay loop: {sorted(set(inside))} "
                            f"({len(inside)} events)")
    return report(problems, f"{device}: {REPLAY_STEPS} replays with no host write or sync in the "
                  f"loop; replay == eager bitwise; {skipped} overflowed steps skipped, "
                  f"final scale {scale:g}, tracker {tracker}, step {step}")


def main():
    prog, device, out, what = sys.argv[1:5]
    out = os.path.join(out, device, what)  # the two tests of a device may run at once
    os.makedirs(out, exist_ok=True)
    return sequence(prog, device, out) if what == "sequence" else replay(prog, device, out)


if __name__ == "__main__":
    sys.exit(main())
