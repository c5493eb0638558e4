#!/usr/bin/env python3
"""DeepSpeed's CPU Adam (ZeRO-Offload's optimizer op) and accel in one process, on the same
buffers, in paired rounds: the peer of `accel-bench optstep --peer deepspeed`.

usage: deepspeed_peer.py --sizes FILE --bound-lib SO [--rounds R] [--threads T]
                         [--accel-path DIR]
       deepspeed_peer.py --check      (builds DeepSpeed's op; checks it steps as torch's AdamW)

FILE: one tensor numel per line (accel-bench's preset). T threads for everything, set before
torch is imported: ACCEL_CPU_THREADS (accel), OMP_NUM_THREADS (DeepSpeed's op and the bound
loop), torch.set_num_threads (the torch calls of DeepSpeed's step). DIR goes first on sys.path
(the build tree's Python package). SO: tools/bench's accel_bench_bound.so, whose
bench_bound_adam_best is accel-bench's own bound loop and sampling.

Phase "adamw", AdamW alone on fp32 p, g, m, v: one flat buffer of all the parameters and its
views as the preset's tensors. In every round, after a warm-up round, in an order that rotates
by one each round, one sample of each of:
  bound            bench_bound_adam on accel's buffers (reads p, g, m, v, writes p, m, v)
  accel_list       accel's fused update (accel_adam_step_update, no norm/clip/cast) over the
                   views, captured once with the upload of its arguments, replayed + synced
  accel_flat       the same over the flat buffer (one tensor)
  ds_per_tensor    DeepSpeedCPUAdam(adamw_mode=True).step(), one parameter per view
  ds_flat          the same with one flat parameter: how ZeRO-Offload calls it (one flat fp32
                   partition per parameter group)
accel's variants share p, g and their state; DeepSpeed's share p, g and theirs.

Phase "state" (issue 39), the same buffers and bound: accel's update over the views with
fp32 (accel_list), bf16 (accel_list_bf16) and 8-bit (accel_list_8bit) moments, and ds_flat
(DeepSpeed's CPU Adam keeps fp32 moments): what compressed state buys against both.

Phase "step", bf16 gradients to bf16 model weights with clipping (max_norm: half the
gradients' norm, so every step clips) and the overflow check, the same bound first:
  accel_step       accel's captured fused step over the preset's tensors: the norm sweep (L2
                   norm and overflow check of the bf16 grads), then one update pass (grads to
                   fp32, clip, AdamW, the bf16 model weights)
  ds_step          what ZeRO-Offload (stage 1/2, offload_optimizer: cpu, bf16) does between the
                   lp gradients and the lp weights, all on the CPU (DeepSpeedOffloadStep)
  ds_step_host     only its step()'s part, what the host runs in a GPU run: the per-parameter
                   norms, overflow checks and fp32 gradient copies (a GPU's work, during
                   backward) run untimed before each sample

Before the rounds, agreement: every variant runs AGREE_STEPS steps from one state on its own
copies of (a prefix of at most AGREE_PARAMS parameters of) the preset; see agreement().

The last line printed is one JSON object: {"available": false, "reason"} when DeepSpeed, accel
or the bound module cannot be loaded, else the versions, the agreement figures and, per
variant, "ms_<phase>_<variant>": its milliseconds in each round (accel-bench takes the medians,
ratios and % of bound, docs/PERFORMANCE.md). Progress goes to stderr.
"""
import argparse
import ctypes
import json
import math
import os
import sys
import time

# Adam hyper-parameters of every variant (accel-bench's optstep uses the same).
LR, BETAS, EPS, WEIGHT_DECAY = 1e-3, (0.9, 0.999), 1e-8, 0.01
CLIP_EPS = 1e-6  # torch's clip_grad_norm_ and DeepSpeed's unscale_and_clip_grads add 1e-6
AGREE_STEPS = 3
AGREE_PARAMS = 1 << 25
# Agreement tolerances (see agreement()).
TOL_P_PER_LR_STEP = 1e-3  # max |p_a - p_b| <= this x lr x steps
TOL_STATE_REL = 1e-5      # max |m_a - m_b| <= this x max |m| (and v)
TOL_NORM_REL = 1e-5
# Pause before each sample: OpenMP workers (DeepSpeed's op, torch, the bound loop: one libgomp
# team) spin for a few ms after a parallel region (bench_settle in bench_baseline.h).
SETTLE_S = 0.01


def log(msg):
    print(f"deepspeed_peer: {msg}", file=sys.stderr, flush=True)


def deepspeed_adam(params, lr=LR, weight_decay=WEIGHT_DECAY):
    """DeepSpeedCPUAdam(adamw_mode=True) over params, or (None, why it cannot run here). The op
    is JIT-built on first use (cached in ~/.cache/torch_extensions) as C++17: torch 1.13 would
    compile it as C++14, which deepspeed 0.19's sources do not accept."""
    try:
        import deepspeed.ops.adam.cpu_adam as ds_cpu_adam
        from deepspeed.ops.adam import DeepSpeedCPUAdam
    except Exception as e:  # noqa: BLE001 - any import failure means "not available"
        return None, f"deepspeed is not importable ({type(e).__name__}: {e})"

    base = ds_cpu_adam.CPUAdamBuilder
    if not getattr(base, "accel_cxx17", False):
        class CPUAdamBuilderCxx17(base):
            accel_cxx17 = True

            def cxx_args(self):
                return super().cxx_args() + ["-std=c++17"]
        ds_cpu_adam.CPUAdamBuilder = CPUAdamBuilderCxx17
    try:
        return DeepSpeedCPUAdam(params, lr=lr, betas=BETAS, eps=EPS, weight_decay=weight_decay,
                                adamw_mode=True), None
    except Exception as e:  # noqa: BLE001
        return None, f"DeepSpeedCPUAdam could not be built ({type(e).__name__}: {e})"


def ds_simd():
    """The SIMD width DeepSpeed's op was built for (its -D__AVX512__ / __AVX256__ flag)."""
    import deepspeed.ops.adam.cpu_adam as ds_cpu_adam
    args = " ".join(ds_cpu_adam.CPUAdamBuilder().cxx_args())
    return "AVX512" if "__AVX512__" in args else "AVX2" if "__AVX256__" in args else "scalar"


class DeepSpeedAdam:
    """DeepSpeedCPUAdam over params (grads attached), its state preset to exp_avg / exp_avg_sq
    (views of flat buffers: DeepSpeed's own init would allocate a zeros_like per parameter)."""

    def __init__(self, params, grads, exp_avg, exp_avg_sq):
        for p, g in zip(params, grads):
            p.grad = g
        self.opt, why = deepspeed_adam(params)
        if self.opt is None:
            raise RuntimeError(why)
        for p, m, v in zip(params, exp_avg, exp_avg_sq):
            self.opt.state[p] = {"step": 0, "exp_avg": m, "exp_avg_sq": v}

    def step(self):
        self.opt.step()


class AccelStep:
    """accel's fused step over tensor lists (accel_kernels.h, accel_adam_step_t), captured once
    with the upload of its arguments and replayed: the update pass alone (AdamW), or, with
    max_norm, the norm sweep (global L2 norm and overflow check) and the update pass with CLIP
    and, with model, the cast of the updated weights into model."""

    def __init__(self, accel, dev, params, grads, exp_avg, exp_avg_sq, model=None,
                 max_norm=None, scales=None):
        from accel._lib import check, ffi, lib
        self.stream = dev.stream(lazy=False)
        lists = [params, grads, exp_avg, exp_avg_sq] + ([model] if model is not None else [])
        self.lists = [accel.TensorList(dev, t) for t in lists]
        # 8-bit moments (uint8 codes) take their block scales (docs/KERNELS.md).
        self.scales = accel.TensorList(dev, scales) if scales is not None else None
        P, G, M, V = self.lists[:4]
        self.args = accel.AdamArgs(dev, lr=LR, betas=BETAS, eps=EPS, weight_decay=WEIGHT_DECAY)
        self.scalars = accel.DeviceStruct(dev, "float", 2)  # norm, clip coefficient
        st = self.desc = ffi.new("accel_adam_step_t *")
        st.struct_size = ffi.sizeof("accel_adam_step_t")
        st.n = P.n
        st.grads, st.hp_grads = G.array, ffi.NULL
        st.params, st.exp_avg, st.exp_avg_sq = P.array, M.array, V.array
        st.model_params = self.lists[4].array if model is not None else ffi.NULL
        st.state_scales = self.scales.array if scales is not None else ffi.NULL
        st.args_dev = self.args.dev
        st.inv_scale_dev = ffi.NULL
        clip = max_norm is not None
        # The overflow check DeepSpeed's bf16 path does (check_grad_overflow): skip on Inf/NaN.
        st.found_inf_dev = self.args.field("found_inf") if clip else ffi.NULL
        st.norm_type = 2.0
        st.norm_dev = ffi.cast("float *", self.scalars.dev) if clip else ffi.NULL
        st.max_norm = float(max_norm) if clip else 0.0
        st.clip_eps = CLIP_EPS
        st.coef_out_dev = ffi.cast("float *", self.scalars.dev) + 1 if clip else ffi.NULL
        st.flags = lib.ACCEL_ADAM_STEP_CLIP if clip else 0
        self.graph = dev.graph()
        s = self.stream._handle()
        with self.graph.capture(self.stream):
            self.args.upload(self.stream)
            if clip:
                check(lib.accel_adam_step_norm(s, st))
            check(lib.accel_adam_step_update(s, st))

    def step(self):
        self.args.host.step += 1
        self.args.host.found_inf = 0.0
        self.graph.replay(self.stream)
        self.stream.synchronize()

    def norm(self):
        return float(self.scalars.download()[0])


class DeepSpeedOffloadStep:
    """What DeepSpeed 0.19.8's ZeRO stage 1/2 optimizer (deepspeed/runtime/zero/
    stage_1_and_2.py) does with offload_optimizer: cpu and bf16 between the lp gradients and the
    lp weights of one rank, all on the CPU here. Per parameter, at the gradient accumulation
    boundary (copy_grads_in_partition, lines 2171-2176):
      set_norm_for_param_grad_in_gpu        norm_p = grad.to(get_norm_dtype()).norm(2) (fp64)
      update_offload_overflow_tracker_...   local_overflow |= bool(has_inf_or_nan(grad))
      async_inplace_copy_grad_to_fp32_...   the fp32 flat gradient slice .copy_(grad.to(fp32))
    then step() (lines 3013-3100, check_grad_overflow on, as bf16's config defaults):
      complete_grad_norm_calculation_for_cpu_offload   norm = (sum norm_p.item() ** 2) ** 0.5
      unscale_and_clip_grads   clip = clamp((norm / loss_scale + 1e-6) / clip_grad, min=1);
                               flat fp32 grads.mul_(1 / (clip * loss_scale)); loss_scale 1
      DeepSpeedCPUAdam.step()  over the flat fp32 partition (one parameter)
      bit16_partition_buffer.copy_(fp32 partition)   fp32 -> bf16, the weights' new values
    On a GPU the per-parameter part runs on the device during backward and the bf16 buffer is
    then copied to the device; here the gradients and weights are host tensors, so every pass
    is the CPU's (the all-gather and host-device copies of a real run are left out)."""

    def __init__(self, torch, lp_grads, hp_flat, hp_views, p_flat, exp_avg, exp_avg_sq,
                 model_flat, clip_grad):
        from deepspeed.runtime.utils import has_inf_or_nan
        from deepspeed.runtime.zero.utils import get_norm_dtype
        self.torch, self.has_inf_or_nan, self.norm_dtype = torch, has_inf_or_nan, get_norm_dtype()
        self.lp, self.hp_flat, self.hp_views = lp_grads, hp_flat, hp_views
        self.p_flat, self.model_flat, self.clip_grad = p_flat, model_flat, clip_grad
        self.adam = DeepSpeedAdam([p_flat], [hp_flat], [exp_avg], [exp_avg_sq])
        self.overflow, self.local_overflow, self.total_norm, self.norms = False, False, None, []

    def backward_side(self):
        """The per-parameter part (on a GPU: the device's, during backward)."""
        self.norms, self.local_overflow = [], False
        for g, dst in zip(self.lp, self.hp_views):
            self.norms.append(g.to(self.norm_dtype).norm(2))
            if self.has_inf_or_nan(g):
                self.local_overflow = True
            dst.copy_(g.to(dst.dtype))

    def host_step(self):
        """step()'s part (on a GPU run too: the host's)."""
        total = 0.0
        for n in self.norms:
            total += n.item() ** 2
        total = total ** 0.5
        if math.isinf(total) or total != total:
            total = -1.0
        self.overflow = self.local_overflow or total < 0
        self.total_norm = total
        if self.overflow:
            return
        torch, loss_scale = self.torch, 1.0
        norm = torch.tensor(total, dtype=torch.float)
        clip = torch.clamp(((norm / loss_scale) + 1e-6) / self.clip_grad, min=1.0)
        self.hp_flat.mul_(1. / (clip * loss_scale))
        self.adam.step()
        self.model_flat.copy_(self.p_flat)

    def step(self):
        self.backward_side()
        self.host_step()

    def norm(self):
        return self.total_norm


def load_bound(path):
    lib = ctypes.CDLL(path)
    f = lib.bench_bound_adam_best
    f.restype = ctypes.c_double
    f.argtypes = [ctypes.c_void_p] * 4 + [ctypes.c_size_t]
    return f


def rand(torch, gen, n, dtype, amp):
    return ((torch.rand(n, generator=gen) * 2 - 1) * amp).to(dtype)


def max_abs_diff(a, b):
    return float((a.double() - b.double()).abs().max()) if a.numel() else 0.0


def max_abs(a):
    return float(a.double().abs().max()) if a.numel() else 0.0


class Buffers:
    """The fp32 state of one phase: flat p, g, and (m, v) for accel and DeepSpeed, with their
    views as the preset's tensors."""

    def __init__(self, torch, sizes, seed):
        gen = torch.Generator().manual_seed(seed)
        n = sum(sizes)
        self.sizes = sizes
        self.p = rand(torch, gen, n, torch.float32, 1.0)
        self.g = rand(torch, gen, n, torch.float32, 1e-3)
        self.m_a, self.v_a = torch.zeros(n), torch.zeros(n)
        self.m_d, self.v_d = torch.zeros(n), torch.zeros(n)

    def views(self, flat):
        return list(flat.split(self.sizes))


ADAMW_VARIANTS = ["accel_list", "accel_flat", "ds_per_tensor", "ds_flat"]


def adamw_variants(accel, dev, bufs_a, bufs_d, m_a, v_a, m_d, v_d, names=ADAMW_VARIANTS):
    """The step callables of phase adamw (those in names): accel's on bufs_a's p and g,
    DeepSpeed's on bufs_d's (the same tensors when timing). accel's flat lists are made first: a
    view's DLPack import then lies inside the flat registration (overlaps are refused)."""
    out = {}
    if "accel_flat" in names:
        out["accel_flat"] = AccelStep(accel, dev, [bufs_a.p], [bufs_a.g], [m_a], [v_a]).step
    if "accel_list" in names:
        v = bufs_a.views
        out["accel_list"] = AccelStep(accel, dev, v(bufs_a.p), v(bufs_a.g), v(m_a), v(v_a)).step
    if "ds_per_tensor" in names:
        v = bufs_d.views
        out["ds_per_tensor"] = DeepSpeedAdam(v(bufs_d.p), v(bufs_d.g), v(m_d), v(v_d)).step
    if "ds_flat" in names:
        out["ds_flat"] = DeepSpeedAdam([bufs_d.p], [bufs_d.g], [m_d], [v_d]).step
    return out


STATE_VARIANTS = ["accel_list", "accel_list_bf16", "accel_list_8bit", "ds_flat"]


def state_variants(torch, accel, dev, bufs):
    """Phase state's step callables: accel's update pass over bufs' views with fp32, bf16 and
    8-bit moments (each its own, from zero: the warm-up round makes them non-zero), and
    DeepSpeed's CPU Adam over the flat buffer with fp32 moments, as ZeRO-Offload calls it."""
    from accel import _state8
    n, v = sum(bufs.sizes), bufs.views
    m16, v16 = torch.zeros(n, dtype=torch.bfloat16), torch.zeros(n, dtype=torch.bfloat16)
    q8 = [_state8.quantize(m, m) for m in v(torch.zeros(n))]
    out = {
        "accel_list": AccelStep(accel, dev, v(bufs.p), v(bufs.g), v(bufs.m_a), v(bufs.v_a)),
        "accel_list_bf16": AccelStep(accel, dev, v(bufs.p), v(bufs.g), v(m16), v(v16)),
        "accel_list_8bit": AccelStep(accel, dev, v(bufs.p), v(bufs.g), [c[0] for c in q8],
                                     [c[1] for c in q8], scales=[c[2] for c in q8]),
    }
    out = {k: a.step for k, a in out.items()}
    out["ds_flat"] = DeepSpeedAdam([bufs.p], [bufs.g], [bufs.m_d], [bufs.v_d]).step
    return out


class StepInputs:
    """Phase step's inputs: bf16 gradients (never written by either side) and max_norm = half
    their L2 norm, so that every step clips."""

    def __init__(self, torch, sizes, seed):
        gen = torch.Generator().manual_seed(seed)
        self.lp = rand(torch, gen, sum(sizes), torch.bfloat16, 1e-3)
        self.lp_views = list(self.lp.split(sizes))
        self.max_norm = 0.5 * float(self.lp.double().norm(2))


def step_variants(torch, accel, dev, inp, sizes, p_a, m_a, v_a, model_a, p_d, hp_d, m_d, v_d,
                  model_d):
    def views(t):
        return list(t.split(sizes))
    a = AccelStep(accel, dev, views(p_a), inp.lp_views, views(m_a), views(v_a),
                  model=views(model_a), max_norm=inp.max_norm)
    d = DeepSpeedOffloadStep(torch, inp.lp_views, hp_d, views(hp_d), p_d, m_d, v_d, model_d,
                             inp.max_norm)
    return {"accel_step": a, "ds_step": d}


def agreement(torch, accel, dev, sizes):
    """AGREE_STEPS steps of every variant from one state, each on its own copies, over the
    preset's first tensors (at most AGREE_PARAMS parameters; the first tensor cut there if it is
    larger). Both sides compute AdamW in fp32 and differ only in rounding: accel forms
    1 - beta^t with fp32 powers and rounds every operation (no contraction); DeepSpeed's AVX
    path fuses multiply-adds, updates beta^t by repeated fp32 products and multiplies by
    1/sqrt(1 - beta2^t). So the moments agree to a few ulps (TOL_STATE_REL of their largest
    value) and an update of size ~lr to ~1e-6 of lr, while the weights can differ by a rounding
    of |p| <= 1 (6e-8 = 6e-5 lr) per step: TOL_P_PER_LR_STEP (1e-3 lr per step) leaves room for
    that and still catches any real difference (weight decay alone is 1e-2 lr per step). The
    norms (accel: fp32 accumulation, DeepSpeed: fp64 per tensor) agree to TOL_NORM_REL; the bf16
    weights are each side's weights rounded to nearest even, compared bitwise with their own."""
    cut, total = [], 0
    for s in sizes:
        if total + s > AGREE_PARAMS:
            if not cut:
                cut.append(AGREE_PARAMS)
            break
        cut.append(s)
        total += s
    src = Buffers(torch, cut, seed=11)
    res = {"agree_tensors": len(cut), "agree_params": sum(cut), "agree_steps": AGREE_STEPS}
    ok = True

    def copy_bufs():
        b = Buffers.__new__(Buffers)
        b.sizes, b.p, b.g = cut, src.p.clone(), src.g
        return b

    states = {}
    for name in ADAMW_VARIANTS:
        b = copy_bufs()
        m, v = torch.zeros_like(b.p), torch.zeros_like(b.p)
        fn = adamw_variants(accel, dev, b, b, m, v, m, v, names=[name])[name]
        for _ in range(AGREE_STEPS):
            fn()
        states[name] = (b.p, m, v)
        del fn
    ref = states["accel_list"]
    res["accel_flat_equals_list"] = all(torch.equal(x, y)
                                        for x, y in zip(states["accel_flat"], ref))
    ok &= res["accel_flat_equals_list"]
    tol_p = TOL_P_PER_LR_STEP * LR * AGREE_STEPS
    res["tol_p"] = tol_p
    for name in ("ds_per_tensor", "ds_flat"):
        p, m, v = states[name]
        dp = max_abs_diff(p, ref[0])
        dm = max_abs_diff(m, ref[1]) / max(max_abs(ref[1]), 1e-30)
        dv = max_abs_diff(v, ref[2]) / max(max_abs(ref[2]), 1e-30)
        res[f"adamw_{name}_max_dp"], res[f"adamw_{name}_max_dm_rel"] = dp, dm
        res[f"adamw_{name}_max_dv_rel"] = dv
        ok &= dp <= tol_p and dm <= TOL_STATE_REL and dv <= TOL_STATE_REL
    del states, ref

    inp = StepInputs(torch, cut, seed=12)
    n = sum(cut)
    p_a, p_d = src.p.clone(), src.p.clone()
    m_a, v_a, m_d, v_d = (torch.zeros(n) for _ in range(4))
    model_a, model_d = torch.zeros(n, dtype=torch.bfloat16), torch.zeros(n, dtype=torch.bfloat16)
    hp_d = torch.zeros(n)
    fns = step_variants(torch, accel, dev, inp, cut, p_a, m_a, v_a, model_a, p_d, hp_d, m_d,
                        v_d, model_d)
    for _ in range(AGREE_STEPS):
        fns["accel_step"].step()
        fns["ds_step"].step()
    na, nd = fns["accel_step"].norm(), fns["ds_step"].norm()
    res["step_norm_rel"] = abs(na - nd) / nd
    res["step_max_dp"] = max_abs_diff(p_a, p_d)
    res["step_max_dm_rel"] = max_abs_diff(m_a, m_d) / max(max_abs(m_d), 1e-30)
    res["step_max_dv_rel"] = max_abs_diff(v_a, v_d) / max(max_abs(v_d), 1e-30)
    res["step_model_is_rounded_p"] = (torch.equal(model_a, p_a.to(torch.bfloat16))
                                      and torch.equal(model_d, p_d.to(torch.bfloat16)))
    res["step_model_differs"] = int((model_a != model_d).sum())
    res["step_clipped"] = nd > inp.max_norm
    ok &= (res["step_norm_rel"] <= TOL_NORM_REL and res["step_max_dp"] <= tol_p
           and res["step_max_dm_rel"] <= TOL_STATE_REL
           and res["step_max_dv_rel"] <= TOL_STATE_REL and res["step_model_is_rounded_p"]
           and res["step_clipped"] and not fns["ds_step"].overflow)
    res["agreement"] = bool(ok)
    return res


def paired_rounds(rounds, fns):
    """rounds rounds after a warm-up round; in round r every function runs once, in turn,
    starting with the (r mod k)th (bench_rounds in tools/bench). fns: name -> callable that runs
    one sample and returns its ms. Returns name -> [ms per round]."""
    names = list(fns)
    out = {n: [] for n in names}
    for r in range(-1, rounds):
        k = max(r, 0) % len(names)
        for name in names[k:] + names[:k]:
            ms = fns[name]()
            if r >= 0:
                out[name].append(ms)
        log(f"round {r + 1}/{rounds} done" if r >= 0 else "warm-up round done")
    return out


def timed(fn, untimed=None):
    def sample():
        if untimed is not None:
            untimed()
        time.sleep(SETTLE_S)
        t0 = time.perf_counter()
        fn()
        return (time.perf_counter() - t0) * 1e3
    return sample


def measure(torch, accel, dev, sizes, rounds, bound):
    bufs = Buffers(torch, sizes, seed=1)
    n = sum(sizes)

    def bound_sample():
        return bound(bufs.p.data_ptr(), bufs.g.data_ptr(), bufs.m_a.data_ptr(),
                     bufs.v_a.data_ptr(), n)

    fns = adamw_variants(accel, dev, bufs, bufs, bufs.m_a, bufs.v_a, bufs.m_d, bufs.v_d)
    timers = {"bound": bound_sample}
    timers.update((k, timed(fns[k])) for k in ADAMW_VARIANTS)
    log(f"adamw: {rounds} paired rounds of {', '.join(timers)}")
    out = {f"ms_adamw_{k}": v for k, v in paired_rounds(rounds, timers).items()}
    del fns, timers

    fns = state_variants(torch, accel, dev, bufs)
    timers = {"bound": bound_sample}
    timers.update((k, timed(fns[k])) for k in STATE_VARIANTS)
    log(f"state: {rounds} paired rounds of {', '.join(timers)}")
    out.update({f"ms_state_{k}": v for k, v in paired_rounds(rounds, timers).items()})
    del fns, timers

    inp = StepInputs(torch, sizes, seed=3)
    model = torch.zeros(n, dtype=torch.bfloat16)
    # p is shared; DeepSpeed's fp32 gradient buffer is phase adamw's g.
    steps = step_variants(torch, accel, dev, inp, sizes, bufs.p, bufs.m_a, bufs.v_a, model,
                          bufs.p, bufs.g, bufs.m_d, bufs.v_d, model)
    ds = steps["ds_step"]
    timers = {"bound": bound_sample, "accel_step": timed(steps["accel_step"].step),
              "ds_step": timed(ds.step),
              "ds_step_host": timed(ds.host_step, untimed=ds.backward_side)}
    log(f"step: {rounds} paired rounds of {', '.join(timers)}")
    out.update({f"ms_step_{k}": v for k, v in paired_rounds(rounds, timers).items()})
    return out


def check_deepspeed(torch):
    """--check: DeepSpeed's op builds and steps like torch.optim.AdamW (a few tensors)."""
    sizes = [1, 7, 100, 1000, 4097, 65536]
    gen = torch.Generator().manual_seed(0)
    p0 = [rand(torch, gen, n, torch.float32, 1.0) for n in sizes]
    grads = [rand(torch, gen, n, torch.float32, 1e-3) for n in sizes]
    ours = [p.clone() for p in p0]
    ref = [torch.nn.Parameter(p.clone()) for p in p0]
    ds = DeepSpeedAdam(ours, grads, [torch.zeros(n) for n in sizes],
                       [torch.zeros(n) for n in sizes])
    for p, g in zip(ref, grads):
        p.grad = g
    opt = torch.optim.AdamW(ref, lr=LR, betas=BETAS, eps=EPS, weight_decay=WEIGHT_DECAY)
    for _ in range(AGREE_STEPS):
        ds.step()
        opt.step()
    dp = max(max_abs_diff(a, b.detach()) for a, b in zip(ours, ref))
    tol = TOL_P_PER_LR_STEP * LR * AGREE_STEPS
    print(f"DeepSpeed CPU Adam ({ds_simd()}) vs torch.optim.AdamW after {AGREE_STEPS} "
          f"steps: max |dp| {dp:.3g} (tolerance {tol:.3g})")
    return 0 if dp <= tol else 1


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes")
    ap.add_argument("--bound-lib")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--threads", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--accel-path")
    ap.add_argument("--check", action="store_true")
    a = ap.parse_args()
    if not a.check and not (a.sizes and a.bound_lib):
        ap.error("--sizes and --bound-lib are required (or --check)")
    threads = str(max(a.threads, 1))
    os.environ["ACCEL_CPU_THREADS"] = threads
    os.environ["OMP_NUM_THREADS"] = threads
    if a.accel_path:
        sys.path.insert(0, a.accel_path)

    def unavailable(reason):
        print(json.dumps({"available": False, "reason": reason}))
        return 0

    try:
        import torch
    except ImportError as e:
        return unavailable(f"import torch failed: {e}")
    torch.set_num_threads(int(threads))
    if a.check:
        return check_deepspeed(torch)
    probe, why = deepspeed_adam([torch.zeros(1)])
    if probe is None:
        return unavailable(why)
    import deepspeed
    try:
        import accel
    except ImportError as e:
        return unavailable(f"import accel failed (build the Python package; --accel-path): {e}")
    try:
        bound = load_bound(a.bound_lib)
    except (OSError, AttributeError) as e:
        return unavailable(f"bound module {a.bound_lib}: {e}")
    with open(a.sizes) as f:
        sizes = [int(line) for line in f if line.strip()]
    dev = accel.Device("cpu")
    out = {"available": True, "deepspeed_version": deepspeed.__version__,
           "torch_version": torch.__version__, "accel_version": accel.version(),
           "simd": ds_simd(), "threads": int(threads), "tensors": len(sizes),
           "params": sum(sizes), "rounds": a.rounds}
    del probe
    log(f"agreement: {AGREE_STEPS} steps of every variant")
    out.update(agreement(torch, accel, dev, sizes))
    out.update(measure(torch, accel, dev, sizes, max(a.rounds, 1), bound))
    out["loadavg"] = list(os.getloadavg())
    # DeepSpeed's op prints through C stdio; flush it so the result line comes last.
    ctypes.CDLL(None).fflush(None)
    print(json.dumps(out, allow_nan=False), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
