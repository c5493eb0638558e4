"""accel.torch.AdamW on bfloat16 parameters, their own master weights (docs/KERNELS.md "BF16
master weights"). One step computes in fp32 and stores the weights rounded: to nearest even
by default (bit for bit the step of float32 weights with the same values and bf16 moments,
then torch's conversion), or stochastically (stochastic_rounding=True or an accel.Generator):
every weight is then one of the two bfloat16 values around that fp32 result, the moments are
still bit for bit the fp32 weights' moments, and a captured step and launches anew give the
same bits from the same seed. A least-squares regression whose updates are below half a
bfloat16 step stalls with nearest even (final / first loss 1.0) and follows fp32 AdamW with
stochastic rounding (0.0041; fp32 weights 0.00011; bf16's resolution alone ~0.0015).
stochastic_rounding of another type, and amsgrad with bfloat16 parameters (accel keeps its
maximum in float32, torch in the parameter's dtype), are refused."""
import pytest

torch = pytest.importorskip("torch")
import accel  # noqa: E402
import accel.torch as at  # noqa: E402

SHAPES = [(10, 5), (10,), (65537,)]


def params(dtype, seed=0):
    gen = torch.Generator().manual_seed(seed)
    return [torch.nn.Parameter(torch.randn(*s, generator=gen).to(torch.bfloat16).to(dtype))
            for s in SHAPES]


def set_grads(ps, seed):
    gen = torch.Generator().manual_seed(seed)
    for p in ps:
        p.grad = torch.randn(p.shape, generator=gen).to(torch.bfloat16).to(p.dtype)


def one_step(sr, capture=True):
    """One step of bf16 weights (sr: stochastic_rounding) beside float32 weights holding the
    same values with bf16 moments (the same arithmetic): both optimizers and weights."""
    ours, ref = params(torch.bfloat16), params(torch.float32)
    opt = at.AdamW(ours, lr=1e-2, stochastic_rounding=sr, capture=capture)
    ref_opt = at.AdamW(ref, lr=1e-2, state_dtype="bf16", capture=capture)
    set_grads(ours, 3)
    set_grads(ref, 3)
    opt.step()
    ref_opt.step()
    return opt, ours, ref_opt, ref


def bf16_neighbours(x):
    """The bfloat16 values below and above |x| (as float32), each with x's sign."""
    bits = x.view(torch.int32)
    down = (bits & ~0xFFFF).view(torch.float32)
    up = ((bits & ~0xFFFF) + 0x10000).view(torch.float32)
    return down, up


def test_nearest_even_by_default():
    opt, ours, ref_opt, ref = one_step(False)
    for p, q in zip(ours, ref):
        assert p.dtype == torch.bfloat16
        assert torch.equal(p.data, q.data.to(torch.bfloat16))
        assert torch.equal(opt.state[p]["exp_avg"], ref_opt.state[q]["exp_avg"])
        assert torch.equal(opt.state[p]["exp_avg_sq"], ref_opt.state[q]["exp_avg_sq"])


def test_stochastic_rounding_takes_a_neighbour():
    opt, ours, ref_opt, ref = one_step(True)
    moved_up = total = 0
    for p, q in zip(ours, ref):
        x = q.data.float()
        down, up = bf16_neighbours(x)
        got = p.data.float()
        assert torch.all((got == down) | (got == up))
        assert torch.equal(opt.state[p]["exp_avg"], ref_opt.state[q]["exp_avg"])
        assert torch.equal(opt.state[p]["exp_avg_sq"], ref_opt.state[q]["exp_avg_sq"])
        exact = x != down
        moved_up += int(((got == up) & exact).sum())
        total += int(exact.sum())
    # each inexact weight goes up with the probability of its dropped fraction: neither never
    # nor always
    assert 0.3 < moved_up / total < 0.7


def test_captured_and_launched_steps_give_the_same_bits():
    runs = []
    for capture in (True, False):
        ps = params(torch.bfloat16)
        gen = accel.Generator(at.device_for(ps[0]), 11)
        opt = at.AdamW(ps, lr=1e-2, stochastic_rounding=gen, capture=capture)
        for k in range(3):
            set_grads(ps, 20 + k)
            opt.step()
        runs.append([p.data.clone() for p in ps])
    for a, b in zip(*runs):
        assert torch.equal(a, b)


def regression(dtype, sr, steps=400):
    """Final / initial loss of mean((w - t)^2) over 4096 weights near 1 (t within 0.1 of the
    start) with AdamW at lr 5e-4: every update is below half a bfloat16 step (2^-8) at 1."""
    gen = torch.Generator().manual_seed(5)
    w0 = (1.0 + 0.05 * torch.rand(4096, generator=gen)).to(torch.bfloat16)
    target = w0.float() + 0.2 * (torch.rand(4096, generator=gen) - 0.5)
    w = torch.nn.Parameter(w0.to(dtype))
    opt = at.AdamW([w], lr=5e-4, weight_decay=0.0, stochastic_rounding=sr)

    def loss():
        return float(((w.data.float() - target) ** 2).mean())

    first = loss()
    for _ in range(steps):
        w.grad = (2.0 * (w.data.float() - target) / w.numel()).to(dtype)
        opt.step()
    return loss() / first


def test_stochastic_rounding_follows_fp32_where_nearest_stalls():
    fp32 = regression(torch.float32, False)
    nearest = regression(torch.bfloat16, False)
    sr = regression(torch.bfloat16, True)
    assert nearest > 0.95  # no weight moved
    assert fp32 < 0.01
    assert sr < 0.02  # the fp32 loss plus bfloat16's own resolution near the target


def test_bad_input():
    with pytest.raises(TypeError, match="stochastic_rounding is True, False or an accel.Generator"):
        at.AdamW(params(torch.bfloat16), stochastic_rounding="yes")
    ps = params(torch.bfloat16)
    opt = at.AdamW(ps, amsgrad=True, stochastic_rounding=True)
    set_grads(ps, 1)
    before = [p.data.clone() for p in ps]
    with pytest.raises(ValueError, match="amsgrad takes float32 parameters, not bfloat16"):
        opt.step()
    assert all(torch.equal(p.data, b) for p, b in zip(ps, before))
