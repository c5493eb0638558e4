"""accel.torch.AdamW(state_dtype="bf16"): bfloat16 moments (docs/KERNELS.md "State formats").
One step from a bf16 state is the fp32-state step bit for bit in the parameters, its moments
the fp32 step's rounded to nearest even; state_dict holds the bf16 state and torch's fp32 state
loads converted; a 1000-step synthetic least-squares regression reaches the fp32-state loss
within 0.5% (measured 0.01%: docs/KERNELS.md); unknown formats, mixed formats, moments of the
wrong size and a bf16 state loaded into an fp32 optimizer are refused with a message;
state_bytes() is 8 bytes per parameter element in fp32, 4 in bf16.

state_dtype="8bit": one step from 8-bit state is the fp32-state step from the decoded moments
bit for bit in the parameters, and its new codes and scales are the fp32 step's new moments
quantised by accel._state8 (the host's codec agrees with the kernel's); state_dict holds the
codes and scales, torch's state loads quantised; the regression reaches the fp32 loss within
1%; 8-bit state into another format, codes without scales, scales of the wrong size and
amsgrad are refused; state_bytes() is 2 + 8 / 256 bytes per element."""
import io

import pytest

torch = pytest.importorskip("torch")
import accel.torch as at  # noqa: E402
from accel import _state8  # noqa: E402

SHAPES = [(10, 5), (10,), (65537,)]


def params(seed=0):
    gen = torch.Generator().manual_seed(seed)
    return [torch.nn.Parameter(torch.randn(*s, generator=gen)) for s in SHAPES]


def set_grads(ps, seed):
    gen = torch.Generator().manual_seed(seed)
    for p in ps:
        p.grad = torch.randn(p.shape, generator=gen)


def step_beside_fp32(state_dtype, capture, check):
    """Three steps of AdamW(state_dtype) beside fp32-state AdamW from the same parameters and
    gradients: check(our state, the fp32 state) after each; check returns the fp32 moments the
    reference takes its next step from (ours, as the format holds them)."""
    ours, ref = params(1), params(1)
    opt = at.AdamW(ours, lr=1e-2, state_dtype=state_dtype, capture=capture)
    ref_opt = at.AdamW(ref, lr=1e-2, capture=capture)
    for k in range(3):
        set_grads(ours, 10 + k)
        set_grads(ref, 10 + k)
        opt.step()
        ref_opt.step()
        for p, q in zip(ours, ref):
            s, t = opt.state[p], ref_opt.state[q]
            assert t["exp_avg"].dtype == torch.float32 and s["exp_avg"].shape == p.shape
            assert torch.equal(p.data, q.data)
            m, v = check(s, t)
            t["exp_avg"].copy_(m)
            t["exp_avg_sq"].copy_(v)


@pytest.mark.parametrize("capture", [True, False])
def test_bf16_step_is_the_fp32_step_with_rounded_moments(capture):
    def check(s, t):
        assert s["exp_avg"].dtype == torch.bfloat16
        assert torch.equal(s["exp_avg"], t["exp_avg"].to(torch.bfloat16))
        assert torch.equal(s["exp_avg_sq"], t["exp_avg_sq"].to(torch.bfloat16))
        return s["exp_avg"].float(), s["exp_avg_sq"].float()
    step_beside_fp32("bf16", capture, check)


def test_state_dict_holds_bf16_and_loads_torch_state():
    ps = params(2)
    opt = at.AdamW(ps, state_dtype="bf16")
    set_grads(ps, 3)
    opt.step()
    buf = io.BytesIO()
    torch.save(opt.state_dict(), buf)
    assert buf.tell() < 0.75 * sum(p.numel() for p in ps) * 4 * 3  # p + m + v in fp32
    sd = opt.state_dict()
    assert all(v["exp_avg"].dtype == torch.bfloat16 for v in sd["state"].values())
    ref = params(2)
    torch_opt = torch.optim.AdamW(ref)
    set_grads(ref, 3)
    torch_opt.step()
    other = at.AdamW(params(2), state_dtype="bf16")
    other.load_state_dict(torch_opt.state_dict())  # fp32 -> bf16, rounded to nearest even
    for p, q in zip(other.param_groups[0]["params"], ref):
        want = torch_opt.state[q]["exp_avg_sq"].to(torch.bfloat16)
        assert torch.equal(other.state[p]["exp_avg_sq"], want)
    back = torch.optim.AdamW(params(2))
    back.load_state_dict(opt.state_dict())  # torch widens the bf16 state exactly
    for p, q in zip(back.param_groups[0]["params"], ps):
        assert torch.equal(back.state[p]["exp_avg"], opt.state[q]["exp_avg"].float())


def regression_loss(state_dtype, steps=1000):
    """Least squares y = X w* + noise, 64 features, 512 samples, AdamW lr 1e-2."""
    gen = torch.Generator().manual_seed(7)
    x = torch.randn(512, 64, generator=gen)
    y = x @ torch.randn(64, generator=gen) + 0.01 * torch.randn(512, generator=gen)
    w = torch.nn.Parameter(torch.zeros(64))
    opt = at.AdamW([w], lr=1e-2, weight_decay=0.0, state_dtype=state_dtype)
    for _ in range(steps):
        w.grad = None
        loss = ((x @ w - y) ** 2).mean()
        loss.backward()
        opt.step()
    return float(((x @ w.detach() - y) ** 2).mean())


def test_bf16_state_reaches_the_fp32_loss():
    fp32, bf16 = regression_loss("fp32"), regression_loss("bf16")
    assert abs(bf16 - fp32) <= 0.005 * fp32, (fp32, bf16)


def test_unknown_state_dtype_is_refused():
    with pytest.raises(ValueError, match="state_dtype '4bit' is not one of"):
        at.AdamW(params(), state_dtype="4bit")


def stepped(state_dtype, seed=4, **kw):
    ps = params(seed)
    opt = at.AdamW(ps, state_dtype=state_dtype, **kw)
    set_grads(ps, seed + 1)
    opt.step()
    return ps, opt


def test_bf16_state_into_fp32_adamw_is_refused():
    _, bf16 = stepped("bf16")
    ps = params(4)
    fp32 = at.AdamW(ps)
    with pytest.raises(ValueError, match=r"compressed \(parameter 0's exp_avg is torch.bfloat16"
                       r"\) and this optimizer's state_dtype is 'fp32'"):
        fp32.load_state_dict(bf16.state_dict())
    assert not fp32.state  # nothing loaded
    sd = bf16.state_dict()  # widened explicitly, as the message says: loads exactly
    for v in sd["state"].values():
        v["exp_avg"], v["exp_avg_sq"] = v["exp_avg"].float(), v["exp_avg_sq"].float()
    fp32.load_state_dict(sd)
    for p, q in zip(ps, bf16.param_groups[0]["params"]):
        assert fp32.state[p]["exp_avg"].dtype == torch.float32
        assert torch.equal(fp32.state[p]["exp_avg"], bf16.state[q]["exp_avg"].float())


@pytest.mark.parametrize("into", ["fp32", "bf16"])
def test_loaded_state_in_two_formats_is_refused(into):
    _, src = stepped("bf16")
    sd = src.state_dict()
    sd["state"][0]["exp_avg_sq"] = sd["state"][0]["exp_avg_sq"].float()  # m bf16, v fp32
    with pytest.raises(ValueError, match="mixed state formats: parameter 0's exp_avg is "
                       "torch.bfloat16, parameter 0's exp_avg_sq is torch.float32"):
        at.AdamW(params(4), state_dtype=into).load_state_dict(sd)
    sd = src.state_dict()
    sd["state"][2]["exp_avg"] = sd["state"][2]["exp_avg"].float()  # one parameter's in fp32
    sd["state"][2]["exp_avg_sq"] = sd["state"][2]["exp_avg_sq"].float()
    with pytest.raises(ValueError, match="mixed state formats: parameter 0's exp_avg is "
                       "torch.bfloat16, parameter 2's exp_avg is torch.float32"):
        at.AdamW(params(4), state_dtype=into).load_state_dict(sd)


@pytest.mark.parametrize("state_dtype", ["fp32", "bf16"])
def test_loaded_moment_of_the_wrong_size_is_refused(state_dtype):
    _, src = stepped(state_dtype)
    sd = src.state_dict()
    sd["state"][1]["exp_avg_sq"] = sd["state"][1]["exp_avg_sq"][:9].clone()
    with pytest.raises(ValueError, match="parameter 1's exp_avg_sq has 9 elements, its "
                       "parameter 10"):
        at.AdamW(params(4), state_dtype=state_dtype).load_state_dict(sd)


def test_loaded_groups_that_do_not_match_get_torchs_message():
    _, src = stepped("bf16")
    with pytest.raises(ValueError, match="doesn't match the size of optimizer's group"):
        at.AdamW(params(4)[:2]).load_state_dict(src.state_dict())


@pytest.mark.parametrize("state_dtype", ["fp32", "bf16"])
@pytest.mark.parametrize("capture", [True, False])
def test_step_refuses_a_state_set_in_another_format(state_dtype, capture):
    """State tensors set by hand before the first step: accel's update would take any one
    format (a bf16 state in an fp32 optimizer) and refuses two with its own message; the step
    refuses both, and a moment of the wrong size, before anything runs."""
    other = torch.float32 if state_dtype == "bf16" else torch.bfloat16
    fmt = torch.bfloat16 if state_dtype == "bf16" else torch.float32
    cases = [({"exp_avg": other, "exp_avg_sq": other}, f"parameter 2's exp_avg is {other}"),
             ({"exp_avg": fmt, "exp_avg_sq": other}, f"parameter 2's exp_avg_sq is {other}"),
             ({"exp_avg": fmt, "exp_avg_sq": fmt, "size": 100}, "exp_avg has 100 elements")]
    for dtypes, msg in cases:
        ps = params(5)
        opt = at.AdamW(ps, state_dtype=state_dtype, capture=capture)
        set_grads(ps, 6)
        before = [p.detach().clone() for p in ps]
        n = dtypes.pop("size", ps[2].numel())
        opt.state[ps[2]] = {"step": torch.tensor(0.0), **{
            k: torch.zeros(n, dtype=d) for k, d in dtypes.items()}}
        with pytest.raises(ValueError, match=msg):
            opt.step()
        assert all(torch.equal(p, b) for p, b in zip(ps, before))


@pytest.mark.parametrize("state_dtype, amsgrad, per_param",
                         [("fp32", False, 8), ("bf16", False, 4), ("fp32", True, 12),
                          ("bf16", True, 8)])
def test_state_bytes_per_parameter(state_dtype, amsgrad, per_param):
    ps, opt = stepped(state_dtype, amsgrad=amsgrad)
    assert opt.state_bytes() == per_param * sum(p.numel() for p in ps)
    assert at.AdamW(params(4), state_dtype=state_dtype).state_bytes() == 0  # before a step


@pytest.mark.parametrize("capture", [True, False])
def test_8bit_step_is_the_fp32_step_from_the_decoded_state(capture):
    def check(s, t):
        assert s["exp_avg"].dtype == torch.uint8
        m, v, scales = _state8.quantize(t["exp_avg"], t["exp_avg_sq"])
        assert torch.equal(s["state_scales"], scales)
        assert torch.equal(s["exp_avg"], m) and torch.equal(s["exp_avg_sq"], v)
        return at.dequantize_state(s)
    step_beside_fp32("8bit", capture, check)


def test_8bit_state_dict_holds_codes_and_loads_torch_state():
    ps, opt = stepped("8bit", seed=2)
    sd = opt.state_dict()
    for k, p in enumerate(ps):
        assert sd["state"][k]["exp_avg"].dtype == torch.uint8
        assert sd["state"][k]["state_scales"].numel() == 2 * ((p.numel() + 255) // 256)
    same = at.AdamW(params(2), state_dtype="8bit")
    same.load_state_dict(sd)  # torch's load casts the codes to float32; they come back
    for p, q in zip(same.param_groups[0]["params"], ps):
        for key in ("exp_avg", "exp_avg_sq", "state_scales"):
            assert torch.equal(same.state[p][key], opt.state[q][key])
    torch_opt = torch.optim.AdamW(params(2))
    set_grads(torch_opt.param_groups[0]["params"], 3)
    torch_opt.step()
    other = at.AdamW(params(2), state_dtype="8bit")
    other.load_state_dict(torch_opt.state_dict())  # fp32 -> 8-bit, quantised
    for p, q in zip(other.param_groups[0]["params"], torch_opt.param_groups[0]["params"]):
        want = _state8.quantize(torch_opt.state[q]["exp_avg"], torch_opt.state[q]["exp_avg_sq"])
        got = (other.state[p][k] for k in ("exp_avg", "exp_avg_sq", "state_scales"))
        assert all(map(torch.equal, got, want))
        m, _ = at.dequantize_state(other.state[p])
        assert torch.allclose(m, torch_opt.state[q]["exp_avg"], rtol=0.1, atol=1e-4)


def test_8bit_state_reaches_the_fp32_loss():
    fp32, q8 = regression_loss("fp32"), regression_loss("8bit")
    assert abs(q8 - fp32) <= 0.01 * fp32, (fp32, q8)


def test_8bit_refusals():
    _, q8 = stepped("8bit")
    with pytest.raises(ValueError, match="state_dtype='8bit'"):
        at.AdamW(params(4)).load_state_dict(q8.state_dict())
    with pytest.raises(ValueError, match="amsgrad needs state_dtype"):
        at.AdamW(params(4), amsgrad=True, state_dtype="8bit")
    sd = q8.state_dict()
    del sd["state"][1]["state_scales"]
    with pytest.raises(ValueError, match="without state_scales"):
        at.AdamW(params(4), state_dtype="8bit").load_state_dict(sd)
    sd = q8.state_dict()
    sd["state"][2]["state_scales"] = sd["state"][2]["state_scales"][:-2]
    with pytest.raises(ValueError, match="state_scales is torch.float32 with 512 elements"):
        at.AdamW(params(4), state_dtype="8bit").load_state_dict(sd)
    ps = params(5)
    opt = at.AdamW(ps, state_dtype="8bit")
    opt.add_param_group({"params": [torch.nn.Parameter(torch.ones(3))], "amsgrad": True})
    set_grads(ps + opt.param_groups[1]["params"], 6)
    with pytest.raises(ValueError, match="a group with amsgrad needs"):
        opt.step()


def test_8bit_state_bytes_per_parameter():
    ps, opt = stepped("8bit")
    want = sum(2 * p.numel() + 4 * 2 * ((p.numel() + 255) // 256) for p in ps)
    assert opt.state_bytes() == want
