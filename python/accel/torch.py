"""PyTorch drop-ins running on accel's kernels, in place on the tensors' own memory.

    from accel.torch import AdamW, clip_grad_norm_
    opt = AdamW(model.parameters(), lr=1e-3, weight_decay=0.01)    # torch.optim.AdamW's API
    clip_grad_norm_(model.parameters(), 1.0)                       # torch's signature

The tensors of a step are converted to accel tensor lists once and cached; while the same
gradient tensors come back (zero_grad(set_to_none=False)), or some go to None (the step skips
those parameters), a step is one graph replay. When a gradient or parameter tensor is replaced
the lists and the graph are rebuilt on the next step, automatically.
"""
import inspect
import math
import operator

import torch

from . import _objects, _state8, _tensors
from ._lib import check, ffi, lib
from ._random import Generator

__all__ = ["AdamW", "clip_grad_norm_", "dequantize_state", "device_for"]

_devices = {}
_TORCH_ADAMW_DEFAULTS = {
    name: p.default for name, p in inspect.signature(torch.optim.AdamW.__init__).parameters.items()
    if p.default is not inspect.Parameter.empty}


def device_for(tensor):
    """The accel Device of a torch tensor's device (cpu -> "cpu", cuda:N -> "cuda:N", or
    "hip:N" under a ROCm build of torch, whose GPUs are "cuda" devices too)."""
    d = tensor.device
    if d.type == "cpu":
        key = "cpu"
    else:
        backend = "hip" if d.type == "cuda" and torch.version.hip else d.type
        key = f"{backend}:{d.index or 0}"
    dev = _devices.get(key)
    if dev is None or dev.closed:
        dev = _devices[key] = _objects.Device(key)
    return dev


_wrapped = {}  # (accel device, native stream handle) -> the accel Stream over it


def _exec_stream(device, tensor, own):
    """The stream a call's work runs on. For GPU tensors, torch's current stream of the
    tensor's device, wrapped (accel_stream_wrap_native): accel's work is ordered after torch's
    work that produced the gradients and before torch's next, with no device-wide sync. torch
    never destroys the streams it hands out (its pools live as long as the process), so one
    wrap per native stream is kept. CPU tensors have no torch stream: the plan's own."""
    if tensor.device.type != "cuda":
        return own
    handle = torch.cuda.current_stream(tensor.device).cuda_stream
    key = (id(device), handle)
    s = _wrapped.get(key)
    if s is None or s.closed or s.device is not device:
        s = _wrapped[key] = device.wrap_stream(handle)
    return s


def _same_device(tensors, what):
    devs = {t.device for t in tensors}
    if len(devs) > 1:
        raise ValueError(f"{what}: tensors on different devices ({', '.join(map(str, devs))})")
    return device_for(tensors[0])


_grad_of = operator.attrgetter("grad")


def _same_objects(a, b):
    return len(a) == len(b) and all(map(operator.is_, a, b))


class _ClipPlan:
    """clip_grad_norm_ over one list of grads: a graph of norm + clip, replayed per call."""

    def __init__(self, grads, max_norm, norm_type):
        self.grads = grads
        self.key = (max_norm, norm_type)
        self.device = _same_device(grads, "clip_grad_norm_")
        self.stream = self.device.stream(lazy=False)
        self.tensors = _tensors.TensorList(self.device, grads)
        self.scalars = _objects.DeviceStruct(self.device, "float", 2)
        self.graph = self.device.graph()
        with self.graph.capture(self.stream):
            self.enqueue(max_norm, norm_type, clip=True)

    def enqueue(self, max_norm, norm_type, clip, stream=None):
        t, norm = self.tensors, self.scalars.dev
        s = (stream or self.stream)._handle()
        check(lib.accel_multi_tensor_norm(s, t.array, t.n, norm_type, norm))
        if clip:
            check(lib.accel_clip_by_global_norm(s, t.array, t.n, max_norm, norm, 1e-6,
                                                norm + 1))

    def total_norm(self, stream):
        stream.synchronize()
        return self.scalars.download()[0]

    def close(self):
        self.graph.close()
        self.tensors.close()
        self.scalars.close()
        self.stream.close()


_clip_cache = []  # the most recent _ClipPlan


def clip_grad_norm_(parameters, max_norm, norm_type=2.0, error_if_nonfinite=False, foreach=None):
    """torch.nn.utils.clip_grad_norm_ on accel: the total norm of the gradients (as one vector)
    is computed and, when above max_norm, every gradient is scaled by max_norm / (norm + 1e-6),
    in place. Returns the total norm as a 0-d tensor of the gradients' dtype, as torch does.
    float32, float16 and bfloat16 gradients (one dtype per call) run on accel's kernels, which
    accumulate in fp32 (docs/KERNELS.md); float64 ones, which accel's kernels do not take, go to
    torch's own clip_grad_norm_, which accumulates in float64. foreach is accepted and ignored
    (the kernels always take the whole list)."""
    del foreach
    if isinstance(parameters, torch.Tensor):
        parameters = [parameters]
    params = [p for p in parameters if p.grad is not None]
    grads = [p.grad for p in params]
    max_norm, norm_type = float(max_norm), float(norm_type)
    if not grads:
        return torch.tensor(0.0)
    if any(g.dtype == torch.float64 for g in grads):
        return torch.nn.utils.clip_grad_norm_(params, max_norm, norm_type, error_if_nonfinite)
    plan = _clip_cache[0] if _clip_cache else None
    if plan is None or plan.key != (max_norm, norm_type) or not _same_objects(plan.grads, grads):
        if plan is not None:
            plan.close()
            _clip_cache.clear()
        plan = _ClipPlan(grads, max_norm, norm_type)
        _clip_cache.append(plan)
    stream = _exec_stream(plan.device, grads[0], plan.stream)
    if error_if_nonfinite:
        plan.enqueue(max_norm, norm_type, clip=False, stream=stream)
        norm = plan.total_norm(stream)
        if not math.isfinite(norm):
            raise RuntimeError(
                f"The total norm of order {norm_type} for gradients from `parameters` is "
                "non-finite, so it cannot be clipped. To disable this error and scale the "
                "gradients by the non-finite norm anyway, set `error_if_nonfinite=False`")
    plan.graph.replay(stream)
    return torch.tensor(plan.total_norm(stream), dtype=grads[0].dtype, device=grads[0].device)


def _real(t):
    """A complex tensor as the float tensor of its (real, imaginary) pairs, as torch's AdamW
    updates it; any other tensor as it is."""
    return torch.view_as_real(t) if t.is_complex() else t


def _group_flags(param_groups):
    """What a captured step bakes in from the groups besides their parameters."""
    return [(bool(g["amsgrad"]), bool(g["maximize"])) for g in param_groups]


class _StepPlan:
    """The AdamW step over the current parameters and gradients: one upload of the per-group
    arguments and the has-gradient flags, the fused step's norm sweep ([unscale + overflow
    check], [global norm]) over every gradient, the per-parameter step counts, and one update
    pass per group ([unscale, clip] the gradients in place, as torch's unscale_ and
    clip_grad_norm_ leave them, and AdamW with the group's amsgrad and maximize). Captured into
    one graph and replayed (capture=True), or launched anew on every step."""

    def __init__(self, opt, groups, grad_scaling):
        self.groups = groups  # [(group, [params with grads])]
        # What covers() compares on every step: every group's parameter list and options, every
        # grad (None included) and the parameters' storage addresses.
        self.group_params = [list(g["params"]) for g in opt.param_groups]
        self.group_flags = _group_flags(opt.param_groups)
        self.all_params = [p for ps in self.group_params for p in ps]
        self.all_grads = list(map(_grad_of, self.all_params))
        # the position in all_params of each parameter the plan updates
        self.where = [i for i, g in enumerate(self.all_grads) if g is not None]
        self.params = [p for _, ps in groups for p in ps]
        self.grads = [p.grad for p in self.params]
        self.ptrs = list(map(torch.Tensor.data_ptr, self.params))
        self.grad_scaling = grad_scaling
        self.max_grad_norm = opt.max_grad_norm
        dev = self.device = _same_device(self.params + self.grads, "AdamW")
        self.stream = dev.stream(lazy=False)
        self.lists, self.staged, self.graph, self.gen = [], [], None, None
        try:
            state = [opt.state[p] for p in self.params]
            for p, st, k in zip(self.params, state, self.where):
                _check_moments(p, st, opt.state_dtype, k)
            self.steps = _step_counts(state, self.params[0].device)
            self.P = self._list(self.params)
            self.G = self._list(self.grads)
            self.M = self._list([s["exp_avg"] for s in state])
            self.V = self._list([s["exp_avg_sq"] for s in state])
            self.VM = self._list([opt.state[p]["max_exp_avg_sq"] for g, ps in groups
                                  if g["amsgrad"] for p in ps])
            self.SC = self._list([s["state_scales"] for s in state if "state_scales" in s])
            for g, ps in groups:
                if g["amsgrad"] and any(p.dtype == torch.bfloat16 for p in ps):
                    raise ValueError("accel.torch.AdamW: amsgrad takes float32 parameters, not "
                                     "bfloat16 (accel keeps AMSGrad's maximum in float32, "
                                     "torch in the parameter's dtype)")
            bf16 = any(p.dtype == torch.bfloat16 for p in self.params)
            self.gen = opt._sr_generator(dev) if bf16 else None
            self.S = self._list([self.steps])
            n, count = len(groups), len(self.params)
            # One upload: accel_adam_args_t per group, then inv_scale, norm, coef, then the
            # has-gradient flags (uint32_t per parameter, 8 to an accel_adam_args_t).
            self.args = _objects.DeviceStruct(dev, "accel_adam_args_t", n + 1 + (count + 7) // 8)
            self.tail = ffi.cast("float *", self.args.dev + n)
            self.host_tail = ffi.cast("float *", self.args.host + n)
            self.has_grad = ffi.cast("uint32_t *", self.args.dev + n + 1)
            self.host_has_grad = ffi.cast("uint32_t *", self.args.host + n + 1)
            for i in range(count):
                self.host_has_grad[i] = 1
            self.present = None  # the flags in the host copy: None, all set; else their list
            if opt.capture:
                self.graph = dev.graph()
                with self.graph.capture(self.stream):
                    self._enqueue(self.stream)
        except BaseException:
            self.close()
            raise

    def _list(self, tensors):
        """A TensorList of the tensors as accel sees them (_real); a tensor that is not
        contiguous is replaced by a contiguous copy that run() copies in and back out."""
        views = []
        for t in map(_real, tensors):
            if not t.is_contiguous():
                stage = t.contiguous()
                self.staged.append((t, stage))
                t = stage
            views.append(t)
        lst = _tensors.TensorList(self.device, views)
        self.lists.append(lst)
        return lst

    def _enqueue(self, stream):
        s, args = stream._handle(), self.args.dev
        self.args.upload(stream)
        found_inf = ffi.addressof(args[0], "found_inf")
        clip = self.max_grad_norm is not None
        steps = ffi.cast("float *", self.S.array[0].data)
        step = ffi.new("accel_adam_step_t *")
        step.struct_size = ffi.sizeof("accel_adam_step_t")
        step.n = self.P.n
        step.grads = self.G.array
        # float32 gradients are unscaled / clipped in place (hp = grads), as torch leaves them;
        # 16-bit ones, and any without unscale or clip, are only read.
        in_place = (self.grad_scaling or clip) and all(self.G[i][2] == lib.ACCEL_F32
                                                       for i in range(self.G.n))
        step.hp_grads = self.G.array if in_place else ffi.NULL
        step.params, step.exp_avg, step.exp_avg_sq = self.P.array, self.M.array, self.V.array
        step.args_dev = args
        step.inv_scale_dev = self.tail if self.grad_scaling else ffi.NULL
        step.found_inf_dev = found_inf if self.grad_scaling else ffi.NULL
        step.norm_type = 2.0
        step.norm_dev = self.tail + 1 if clip else ffi.NULL
        step.max_norm = float(self.max_grad_norm) if clip else 0.0
        step.clip_eps = 1e-6
        step.coef_out_dev = self.tail + 2 if clip else ffi.NULL
        step.has_grad_dev = self.has_grad
        check(lib.accel_adam_step_norm(s, step))
        check(lib.accel_step_counts(s, steps, self.has_grad, self.P.n,
                                    found_inf if self.grad_scaling else ffi.NULL))
        for g in range(1, len(self.groups)):  # every group skips on the one overflow flag
            check(lib.accel_memcpy_async(s, ffi.addressof(args[g], "found_inf"), found_inf, 4))
        start = vstart = 0
        for g, (group, ps) in enumerate(self.groups):
            step.n = len(ps)
            for field, lst in (("grads", self.G), ("params", self.P), ("exp_avg", self.M),
                               ("exp_avg_sq", self.V)):
                setattr(step, field, lst.array + start)
            if step.hp_grads != ffi.NULL:
                step.hp_grads = step.grads
            step.max_exp_avg_sq = self.VM.array + vstart if group["amsgrad"] else ffi.NULL
            step.state_scales = self.SC.array + start if self.SC.n else ffi.NULL
            rounds = self.gen is not None and ps[0].dtype == torch.bfloat16
            step.generator = self.gen._handle() if rounds else ffi.NULL
            step.steps_dev, step.has_grad_dev = steps + start, self.has_grad + start
            step.args_dev = args + g
            step.coef_out_dev = self.tail + 2 if clip and g == 0 else ffi.NULL
            step.flags = ((lib.ACCEL_ADAM_STEP_CLIP if clip else 0)
                          | (lib.ACCEL_ADAM_STEP_AMSGRAD if group["amsgrad"] else 0)
                          | (lib.ACCEL_ADAM_STEP_MAXIMIZE if group["maximize"] else 0))
            check(lib.accel_adam_step_update(s, step))
            start += len(ps)
            vstart += len(ps) if group["amsgrad"] else 0

    def _set_present(self, present):
        """The has-gradient flags of the plan's parameters (host copy, uploaded by the step):
        a list of bools, or None when every parameter has a gradient (the usual step: no
        per-parameter work)."""
        if present != self.present:
            for i in range(len(self.params)):
                self.host_has_grad[i] = 1 if present is None else present[i]
            self.present = present

    def covers(self, param_groups, grad_scaling):
        """Whether the plan still covers exactly the optimizer's tensors: a few C-level passes
        over the lists. A parameter of the plan whose grad went to None since is flagged as
        having no gradient (the step skips it; its step count stays); any other change needs
        a new plan."""
        if not (grad_scaling == self.grad_scaling
                and len(param_groups) == len(self.group_params)
                and all(map(_same_objects, (g["params"] for g in param_groups),
                            self.group_params))
                and _group_flags(param_groups) == self.group_flags
                and list(map(torch.Tensor.data_ptr, self.params)) == self.ptrs):
            return False
        grads = list(map(_grad_of, self.all_params))
        if _same_objects(grads, self.all_grads):
            self._set_present(None)
            return True
        if not all(g is c or g is None for g, c in zip(grads, self.all_grads)):
            return False
        self._set_present([grads[i] is not None for i in self.where])
        return True

    def run(self, grad_scale):
        """One step with the groups' current hyper-parameters; True when it was skipped (an
        Inf/NaN gradient with grad_scale)."""
        host = self.args.host
        for g, (group, _) in enumerate(self.groups):
            h = host[g]
            h.lr, h.beta1, h.beta2 = group["lr"], group["betas"][0], group["betas"][1]
            h.eps, h.weight_decay, h.adamw, h.found_inf = group["eps"], group["weight_decay"], 1, 0.0
        if grad_scale is not None:
            self.host_tail[0] = 1.0 / float(grad_scale)
        for t, stage in self.staged:
            stage.copy_(t)
        stream = _exec_stream(self.device, self.params[0], self.stream)
        if self.graph is not None:
            self.graph.replay(stream)
        else:
            self._enqueue(stream)
        stream.synchronize()
        for t, stage in self.staged:
            t.copy_(stage)
        return grad_scale is not None and self.args.download()[0].found_inf != 0.0

    def close(self):
        for obj in [self.graph] + self.lists + [getattr(self, "args", None)]:
            if obj is not None:
                obj.close()
        self.lists = []
        self.stream.close()


def _step_counts(states, device):
    """One float32 tensor of the states' step counts (torch's per-parameter state["step"]),
    which the step advances on the device; each state's "step" becomes a view of its element."""
    steps = torch.tensor([float(s["step"]) for s in states], dtype=torch.float32, device=device)
    for i, s in enumerate(states):
        s["step"] = steps[i]
    return steps


# state_dtype -> the moments' torch dtype (None: the parameter's, as torch's AdamW). "8bit":
# uint8 codes with float32 block scales in state["state_scales"] (accel._state8).
_STATE_DTYPES = {"fp32": None, "bf16": torch.bfloat16, "8bit": torch.uint8}
_MOMENTS = ("exp_avg", "exp_avg_sq", "max_exp_avg_sq")


def _format_of(p, t):
    """The state format a moment tensor t of parameter p is in: "bf16" for bfloat16 moments of
    a wider parameter, "8bit" for uint8 codes, else "fp32" (the parameter's dtype, or one
    torch's load casts to it)."""
    if t.dtype == torch.uint8:
        return "8bit"
    return "bf16" if t.dtype == torch.bfloat16 and p.dtype != torch.bfloat16 else "fp32"


def _check_size(p, state, k):
    for key in _MOMENTS:
        t = state.get(key)
        if torch.is_tensor(t) and t.numel() != p.numel():
            raise ValueError(f"accel.torch.AdamW: parameter {k}'s {key} has {t.numel()} "
                             f"elements, its parameter {p.numel()}")
    sc = state.get("state_scales")
    if sc is not None and (not torch.is_tensor(sc) or sc.dtype != torch.float32
                           or sc.numel() != _state8.scales_numel(p.numel())):
        got = f"{sc.dtype} with {sc.numel()} elements" if torch.is_tensor(sc) else type(sc)
        raise ValueError(f"accel.torch.AdamW: parameter {k}'s state_scales is {got}: 8-bit "
                         f"state keeps float32 with {_state8.scales_numel(p.numel())} (2 per "
                         f"block of {_state8.BLOCK})")


def _check_codes(p, state, k):
    """8-bit moments (uint8 codes) come with their scales."""
    if torch.is_tensor(state.get("exp_avg")) and state["exp_avg"].dtype == torch.uint8 \
            and "state_scales" not in state:
        raise ValueError(f"accel.torch.AdamW: parameter {k}'s moments are 8-bit codes (uint8) "
                         "without state_scales")


def _check_moments(p, state, state_dtype, k):
    """Before a step: parameter k's moments are in the optimizer's format (the dtypes its first
    step creates: bfloat16 for "bf16", except for complex parameters; max_exp_avg_sq is always
    the parameter's) with the parameter's number of elements, else ValueError. (accel's update
    refuses mixed formats too, but takes any one format: this also catches bf16 moments set
    into an fp32 optimizer.)"""
    _check_size(p, state, k)
    _check_codes(p, state, k)
    moments = _STATE_DTYPES[state_dtype]
    want = p.dtype if moments is None or p.is_complex() else moments
    for key in _MOMENTS:
        t = state.get(key)
        expect = p.dtype if key == "max_exp_avg_sq" else want
        if torch.is_tensor(t) and t.dtype != expect:
            raise ValueError(f"accel.torch.AdamW: parameter {k}'s {key} is {t.dtype}; "
                             f"state_dtype={state_dtype!r} keeps it in {expect}")


def _check_loaded(opt, state_dict):
    """A state_dict's moments before torch's load casts them to the parameters' dtype: one
    format in the whole state (exp_avg and exp_avg_sq of a parameter included), each with its
    parameter's size, and a compressed (bf16, 8-bit) state only into an optimizer of that
    format (8-bit codes with their scales). Groups that do not match the optimizer's are left
    to torch's load (its own message)."""
    shapes = [len(g["params"]) for g in state_dict["param_groups"]]
    if shapes != [len(g["params"]) for g in opt.param_groups]:
        return
    saved = (i for g in state_dict["param_groups"] for i in g["params"])
    params = (p for g in opt.param_groups for p in g["params"])
    found = {}
    for k, (i, p) in enumerate(zip(saved, params)):
        state = state_dict["state"].get(i, {})
        _check_size(p, state, k)
        _check_codes(p, state, k)
        for key in ("exp_avg", "exp_avg_sq"):
            if torch.is_tensor(state.get(key)):
                found.setdefault(_format_of(p, state[key]), (k, key, state[key].dtype))
    if len(found) > 1:
        (k, a, da), (j, b, db) = found.values()
        raise ValueError(f"accel.torch.AdamW.load_state_dict: mixed state formats: parameter "
                         f"{k}'s {a} is {da}, parameter {j}'s {b} is {db}")
    for fmt in ("bf16", "8bit"):
        if fmt in found and opt.state_dtype != fmt:
            k, key, dt = found[fmt]
            raise ValueError(
                f"accel.torch.AdamW.load_state_dict: the state is compressed (parameter {k}'s "
                f"{key} is {dt}) and this optimizer's state_dtype is {opt.state_dtype!r}: load "
                f"it into AdamW(..., state_dtype={fmt!r}), or convert its moments to fp32 "
                "first (accel.torch.dequantize_state for 8-bit)")


def _load_8bit(s):
    """A loaded parameter state into 8-bit: codes (cast to float by torch's load) back to uint8,
    or fp32 moments quantised (their scales computed)."""
    if "state_scales" in s:
        s["exp_avg"], s["exp_avg_sq"] = (s[k].to(torch.uint8) for k in ("exp_avg", "exp_avg_sq"))
        s["state_scales"] = s["state_scales"].float()
    else:
        s["exp_avg"], s["exp_avg_sq"], s["state_scales"] = _state8.quantize(
            s["exp_avg"].float(), s["exp_avg_sq"].float())


def dequantize_state(state):
    """The fp32 (exp_avg, exp_avg_sq) of one parameter's 8-bit state (AdamW(state_dtype="8bit")
    .state[p], or an entry of its state_dict's "state")."""
    return _state8.dequantize(state["exp_avg"], state["exp_avg_sq"], state["state_scales"])


class AdamW(torch.optim.Optimizer):
    """torch.optim.AdamW running accel's fused step in place.

    Same constructor, param groups, options (amsgrad, maximize), state (step, exp_avg,
    exp_avg_sq, max_exp_avg_sq per parameter) and state_dict as torch's AdamW, so checkpoints
    move between the two and lr schedulers work. A parameter's step advances only in the steps
    where it has a gradient, as in torch. Extras: max_grad_norm clips the gradients by their
    global L2 norm inside the step (clip_grad_norm_ semantics); step(grad_scale=S) first
    divides the gradients by S and skips the whole update (parameters, state and step counts
    untouched) when any gradient is Inf or NaN, as torch's GradScaler does; last_step_skipped
    says whether that happened; capture=False launches the step's kernels on every step
    instead of replaying one captured graph. state_dtype="bf16" keeps exp_avg and exp_avg_sq
    in bfloat16 (half the state's memory; docs/KERNELS.md "State formats"): state_dict then
    holds them in bfloat16, and a torch (fp32) state loads converted (rounded to nearest
    even); "8bit" keeps them as uint8 codes of the parameter's shape with float32 scales per
    block of 256 elements in state["state_scales"] (a quarter of the memory, plus 1/32; not
    with amsgrad), a torch state loading quantised (dequantize_state converts back); "fp32"
    (the default) is torch's state. bfloat16 parameters are their own master weights: the
    step computes in fp32 and stores them rounded to nearest even, as torch does, or, with
    stochastic_rounding=True (a Generator seeded 0 per device) or an accel.Generator,
    rounded stochastically from the generator's words, so that updates below half a bfloat16
    step still move the weights on average (docs/KERNELS.md "BF16 master weights"); replays
    draw new words and stay reproducible from the seed."""

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=1e-2,
                 amsgrad=False, *, maximize=False, foreach=None, capturable=False,
                 differentiable=False, fused=None, max_grad_norm=None, capture=True,
                 state_dtype="fp32", stochastic_rounding=False):
        if not isinstance(stochastic_rounding, (bool, Generator)):
            raise TypeError("accel.torch.AdamW: stochastic_rounding is True, False or an "
                            f"accel.Generator, not {type(stochastic_rounding).__name__}")
        if state_dtype not in _STATE_DTYPES:
            raise ValueError(f"accel.torch.AdamW: state_dtype {state_dtype!r} is not one of "
                             f"{sorted(_STATE_DTYPES)}")
        if state_dtype == "8bit" and amsgrad:
            raise ValueError("accel.torch.AdamW: amsgrad needs state_dtype 'fp32' or 'bf16' (its "
                             "maximum stays float32; 8-bit moments do not take it)")
        if differentiable:
            raise ValueError("accel.torch.AdamW: differentiable is not supported: the step runs "
                             "outside autograd (use torch.optim.AdamW)")
        if not 0.0 <= lr:
            raise ValueError(f"Invalid learning rate: {lr}")
        if not 0.0 <= eps:
            raise ValueError(f"Invalid epsilon value: {eps}")
        if not 0.0 <= betas[0] < 1.0 or not 0.0 <= betas[1] < 1.0:
            raise ValueError(f"Invalid beta parameters: {betas}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        # The group keys of this torch version's AdamW, so state_dicts match key for key;
        # foreach, capturable and fused are kept as given and ignored (accel always fuses).
        given = dict(foreach=foreach, capturable=capturable, fused=fused)
        defaults = dict(_TORCH_ADAMW_DEFAULTS, lr=lr, betas=betas, eps=eps,
                        weight_decay=weight_decay, amsgrad=amsgrad, maximize=maximize,
                        **{k: v for k, v in given.items() if k in _TORCH_ADAMW_DEFAULTS})
        super().__init__(params, defaults)
        self.max_grad_norm = max_grad_norm
        self.capture = capture
        self.state_dtype = state_dtype
        self.stochastic_rounding = stochastic_rounding
        self._generators = {}  # stochastic_rounding=True: the generator of each device
        self.last_step_skipped = False
        self._plan = None

    def __getstate__(self):
        # a Generator does not pickle: a copy rounds with a new one (seed 0)
        return dict(super().__getstate__(), max_grad_norm=self.max_grad_norm,
                    capture=self.capture, state_dtype=self.state_dtype,
                    stochastic_rounding=bool(self.stochastic_rounding))

    def __setstate__(self, state):
        """Also what torch's load_state_dict ends with: the captured step goes (the state's
        tensors are new); state_dicts of older torch versions lack some group keys, and old
        checkpoints hold steps as numbers (torch's AdamW fills in the same)."""
        super().__setstate__(state)
        for group in self.param_groups:
            for key, value in _TORCH_ADAMW_DEFAULTS.items():
                group.setdefault(key, value)
        for s in self.state.values():
            if "step" in s and not torch.is_tensor(s["step"]):
                s["step"] = torch.tensor(float(s["step"]))
        self.__dict__.setdefault("max_grad_norm", None)
        self.__dict__.setdefault("capture", True)
        self.__dict__.setdefault("state_dtype", "fp32")
        self.__dict__.setdefault("stochastic_rounding", False)
        self.__dict__.setdefault("_generators", {})
        moments = _STATE_DTYPES[self.state_dtype]  # torch's load casts them to the params'
        for s in self.state.values():
            if moments == torch.uint8 and "exp_avg" in s:
                _load_8bit(s)
                continue
            for key in ("exp_avg", "exp_avg_sq"):
                if moments is not None and key in s and s[key].is_floating_point():
                    s[key] = s[key].to(moments)
        self.last_step_skipped = False
        self._drop_plan()

    def _groups_with_grads(self):
        out = []
        for group in self.param_groups:
            if group["amsgrad"] and self.state_dtype == "8bit":
                raise ValueError("accel.torch.AdamW: a group with amsgrad needs state_dtype "
                                 "'fp32' or 'bf16' (8-bit moments do not take it)")
            ps = [p for p in group["params"] if p.grad is not None]
            for p in ps:
                if p.grad.is_sparse:
                    raise RuntimeError("AdamW does not support sparse gradients")
                self._init_state(p, group)
            out.append((group, ps))
        return [(g, ps) for g, ps in out if ps]

    def _init_state(self, p, group):
        state = self.state[p]
        if not state:  # as torch's AdamW (capturable=False): created at the first gradient
            state["step"] = torch.tensor(0.0)
            moments = _STATE_DTYPES[self.state_dtype]
            if p.is_complex() or moments is None:
                moments = p.dtype
            state["exp_avg"] = torch.zeros_like(p, dtype=moments,
                                                memory_format=torch.preserve_format)
            state["exp_avg_sq"] = torch.zeros_like(p, dtype=moments,
                                                   memory_format=torch.preserve_format)
            if moments == torch.uint8:
                state["state_scales"] = torch.zeros(_state8.scales_numel(p.numel()),
                                                    dtype=torch.float32, device=p.device)
        if group["amsgrad"] and "max_exp_avg_sq" not in state:
            state["max_exp_avg_sq"] = torch.zeros_like(p, memory_format=torch.preserve_format)

    def _sr_generator(self, device):
        """The generator that rounds bfloat16 parameters on device, or None."""
        sr = self.stochastic_rounding
        if isinstance(sr, Generator):
            if sr.device._handle() != device._handle():
                raise ValueError("accel.torch.AdamW: the stochastic_rounding Generator belongs "
                                 "to another device than the parameters")
            return sr
        if not sr:
            return None
        key = int(ffi.cast("uintptr_t", device._handle()))
        if key not in self._generators:
            self._generators[key] = Generator(device, 0)
        return self._generators[key]

    @torch.no_grad()
    def step(self, closure=None, *, grad_scale=None):
        loss = None
        if closure is not None:
            with torch.enable_grad():
                loss = closure()
        scaling = grad_scale is not None
        plan = self._plan
        if plan is None or not plan.covers(self.param_groups, scaling):
            self._drop_plan()
            groups = self._groups_with_grads()
            if not groups:
                return loss
            plan = self._plan = _StepPlan(self, groups, scaling)
        self.last_step_skipped = plan.run(grad_scale)
        return loss

    def load_state_dict(self, state_dict):
        """torch's load_state_dict (a torch fp32 state loads into state_dtype="bf16" rounded to
        nearest even), refusing with ValueError: a state in two formats (e.g. exp_avg bfloat16
        and exp_avg_sq float32), a moment whose size is not its parameter's, and a bf16 state
        into an fp32 optimizer."""
        _check_loaded(self, state_dict)
        super().load_state_dict(state_dict)

    def state_bytes(self):
        """Bytes held by the optimizer state's moments (exp_avg, exp_avg_sq, max_exp_avg_sq with
        amsgrad; the per-tensor step counts, 4 bytes each, are not counted): per parameter
        element 8 with state_dtype="fp32", 4 with "bf16", 2 + 8 / 256 with "8bit" (the codes and
        the block scales), 4 more with amsgrad. The tensors are torch's (accel_memory_stats
        counts only accel's own allocations)."""
        return sum(t.numel() * t.element_size() for s in self.state.values()
                   for key, t in s.items()
                   if key in _MOMENTS + ("state_scales",) and torch.is_tensor(t))

    def state_dict(self):
        """torch's AdamW state_dict: a step tensor of its own per parameter (the optimizer's are
        views of the one array the device advances)."""
        sd = super().state_dict()
        sd["state"] = {k: (dict(v, step=v["step"].clone()) if torch.is_tensor(v.get("step"))
                           else v) for k, v in sd["state"].items()}
        return sd

    def add_param_group(self, param_group):
        super().add_param_group(param_group)
        self._drop_plan()

    def _drop_plan(self):
        plan, self._plan = getattr(self, "_plan", None), None
        if plan is not None:
            plan.close()

    def close(self):
        """Releases the cached tensor lists and graph (also done when garbage collected)."""
        self._drop_plan()

    def __del__(self):
        try:
            self._drop_plan()
        except Exception:  # noqa: BLE001
            pass
