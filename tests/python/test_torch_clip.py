"""accel.torch.clip_grad_norm_ in every floating dtype torch accepts, against
torch.nn.utils.clip_grad_norm_: float64 (handed to torch's own clip, which accumulates in
float64) for p = 0.5, 1.5, 2, 4 and inf with Inf and NaN gradients, with the behaviour
PyTorch's test_clip_grad_norm checks (clipped to max_norm by one common factor, small
gradients left exactly as they were, a single tensor as a list of one); float32 for any p;
bfloat16 and float16 on accel's kernels (fp32 accumulation), the norm returned in the
gradients' dtype as torch returns it.

Tolerances: float64 exact against torch (the same computation), 1e-7 for the clipped norm
(torch's test's float64 tolerance); float32 rel 1e-5 (fp32 accumulation in another order);
bfloat16 / float16: one unit in the last place of the dtype (accel rounds an fp32 norm and
fp32 products where torch 1.13 computes in bfloat16, and cannot clip float16 on the CPU)."""
import math

import pytest

torch = pytest.importorskip("torch")
import accel.torch as at  # noqa: E402

P_VALUES = [0.5, 1.5, 2.0, 4.0, math.inf]


def params_with(grads):
    ps = []
    for g in grads:
        p = torch.nn.Parameter(torch.zeros_like(g))
        p.grad = g.clone()
        ps.append(p)
    return ps


def vector_norm(grads, p):
    return torch.linalg.vector_norm(torch.cat([g.flatten().double() for g in grads]), p)


@pytest.mark.parametrize("p", P_VALUES)
@pytest.mark.parametrize("bad", [None, math.inf, -math.inf, math.nan])
def test_float64_matches_torch(p, bad):
    gen = torch.Generator().manual_seed(1)
    grads = [torch.randn(10, 10, generator=gen, dtype=torch.float64) * 3,
             torch.randn(10, generator=gen, dtype=torch.float64)]
    if bad is not None:
        grads[1][4] = bad
    ours, ref = params_with(grads), params_with(grads)
    got = at.clip_grad_norm_(ours, 2.0, norm_type=p)
    want = torch.nn.utils.clip_grad_norm_(ref, 2.0, norm_type=p)
    assert got.dtype == torch.float64 and got.dim() == 0
    assert torch.equal(got, want) or (math.isnan(got) and math.isnan(want))
    for a, b in zip(ours, ref):
        assert torch.equal(a.grad.isnan(), b.grad.isnan())
        assert torch.equal(a.grad.nan_to_num(), b.grad.nan_to_num())
    if bad is not None:
        with pytest.raises(RuntimeError, match="non-finite"):
            at.clip_grad_norm_(params_with(grads), 2.0, norm_type=p, error_if_nonfinite=True)


@pytest.mark.parametrize("p", P_VALUES)
def test_float64_clips_to_max_norm_by_one_factor(p):
    """What PyTorch's test_clip_grad_norm checks, in float64 (its default dtype there)."""
    grads = [torch.arange(1.0, 101.0, dtype=torch.float64).view(10, 10),
             torch.ones(10, dtype=torch.float64) / 1000]
    ps = params_with(grads)
    before = vector_norm(grads, p)
    norm = at.clip_grad_norm_(ps, 2, norm_type=p)
    assert abs(float(norm) - float(before)) <= 1e-7 * float(before)
    assert abs(float(vector_norm([q.grad for q in ps], p)) - 2.0) <= 1e-7 * 3
    scale = torch.cat([(q.grad / g).flatten() for q, g in zip(ps, grads)])
    assert float(scale.std()) <= 1e-12
    small = [torch.rand(10, 10, dtype=torch.float64) / 10000,
             torch.ones(10, dtype=torch.float64) / 500]
    ps = params_with(small)
    at.clip_grad_norm_(ps, 2, norm_type=p)
    assert all(torch.equal(q.grad, g) for q, g in zip(ps, small))
    one, listed = params_with(grads[:1]), params_with(grads[:1])
    at.clip_grad_norm_(one[0], 2, norm_type=p)
    at.clip_grad_norm_(listed, 2, norm_type=p)
    assert torch.equal(one[0].grad, listed[0].grad)


@pytest.mark.parametrize("p", P_VALUES)
def test_float32_any_p(p):
    gen = torch.Generator().manual_seed(2)
    grads = [torch.randn(64, 33, generator=gen) * 2, torch.randn(1000, generator=gen)]
    ours, ref = params_with(grads), params_with(grads)
    got = at.clip_grad_norm_(ours, 1.0, norm_type=p)
    want = torch.nn.utils.clip_grad_norm_(ref, 1.0, norm_type=p)
    assert got.dtype == torch.float32
    torch.testing.assert_close(got, want, rtol=1e-5, atol=0)
    for a, b in zip(ours, ref):
        torch.testing.assert_close(a.grad, b.grad, rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("p", [2.0, math.inf])
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_16_bit_gradients(p, dtype):
    gen = torch.Generator().manual_seed(3)
    grads = [(torch.randn(64, 33, generator=gen) * 2).to(dtype),
             torch.randn(1000, generator=gen).to(dtype)]
    ps = params_with(grads)
    got = at.clip_grad_norm_(ps, 1.0, norm_type=p)
    assert got.dtype == dtype
    want = vector_norm(grads, p)  # exact: the 16-bit values widen exactly
    ulp = torch.finfo(dtype).eps
    assert abs(float(got) - float(want)) <= ulp * float(want)
    coef = min(1.0, 1.0 / (float(want) + 1e-6))
    for q, g in zip(ps, grads):
        torch.testing.assert_close(q.grad.double(), g.double() * coef, rtol=ulp, atol=0)
    if dtype == torch.bfloat16:  # torch 1.13 clips bfloat16 on the CPU (not float16)
        ref = params_with(grads)
        torch.testing.assert_close(got, torch.nn.utils.clip_grad_norm_(ref, 1.0, norm_type=p),
                                   rtol=ulp, atol=0)
