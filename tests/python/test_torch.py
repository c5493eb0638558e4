"""accel.torch against PyTorch itself: clip_grad_norm_ (p = 2, inf), AdamW over 10 steps with an
lr scheduler and weight decay, state_dict round trips both ways, the captured step's overflow
skip and clipping, zero-copy, bad input, and no leaks over 10 000 steps.

Tolerances: norms and clipped grads rel 1e-5 (fp32 accumulation in a different order than
torch's). AdamW: state rel 1e-5, parameters rel 1e-5 plus abs 2e-5 * lr: accel computes the
bias corrections 1 - beta^t in fp32 where torch uses double, and 1 - 0.999 has a relative error
of ~3e-5 in fp32, which goes into the size of each update (lr-sized) but not into the state."""
import copy
import gc
import io
import resource

import pytest

torch = pytest.importorskip("torch")
import accel  # noqa: E402
import accel.torch as at  # noqa: E402

RTOL, ATOL = 1e-5, 1e-7


def make_params(sizes, seed=0, grads=True):
    gen = torch.Generator().manual_seed(seed)
    ps = [torch.nn.Parameter(torch.randn(*s, generator=gen)) for s in sizes]
    if grads:
        for p in ps:
            p.grad = torch.randn(p.shape, generator=gen)
    return ps


SIZES = [(3,), (17, 5), (64, 33), (1000,), (7, 7, 7)]


@pytest.mark.parametrize("norm_type", [2.0, float("inf")])
@pytest.mark.parametrize("max_norm", [0.5, 1e4])
def test_clip_grad_norm_matches_torch(norm_type, max_norm):
    ours, ref = make_params(SIZES), make_params(SIZES)
    got = at.clip_grad_norm_(ours, max_norm, norm_type)
    want = torch.nn.utils.clip_grad_norm_(ref, max_norm, norm_type)
    assert isinstance(got, torch.Tensor) and got.dtype == want.dtype and got.dim() == 0
    torch.testing.assert_close(got, want, rtol=RTOL, atol=0)
    for p, q in zip(ours, ref):
        torch.testing.assert_close(p.grad, q.grad, rtol=RTOL, atol=ATOL)


def test_clip_grad_norm_is_in_place_and_cached():
    ps = make_params(SIZES)
    grads_before = [p.grad for p in ps]
    ptrs = [g.data_ptr() for g in grads_before]
    at.clip_grad_norm_(ps, 0.1)
    at.clip_grad_norm_(ps, 0.1)
    assert [p.grad.data_ptr() for p in ps] == ptrs
    assert all(p.grad is g for p, g in zip(ps, grads_before))
    total = torch.linalg.vector_norm(torch.cat([p.grad.flatten() for p in ps]))
    assert float(total) == pytest.approx(0.1, rel=1e-4)


def test_clip_grad_norm_edge_cases():
    assert float(at.clip_grad_norm_([torch.nn.Parameter(torch.ones(2))], 1.0)) == 0.0
    p = torch.nn.Parameter(torch.ones(4))
    p.grad = torch.tensor([1.0, float("inf"), 0.0, 2.0])
    with pytest.raises(RuntimeError, match="non-finite"):
        at.clip_grad_norm_(p, 1.0, error_if_nonfinite=True)
    q = torch.nn.Parameter(torch.ones(3))
    q.grad = torch.ones(3)
    assert float(at.clip_grad_norm_(q, 10.0)) == pytest.approx(3 ** 0.5)


def run_training(opt_cls, params, steps, seed, **kw):
    opt = opt_cls(params, lr=1e-2, betas=(0.9, 0.99), eps=1e-8, weight_decay=0.05, **kw)
    sched = torch.optim.lr_scheduler.StepLR(opt, step_size=3, gamma=0.5)
    gen = torch.Generator().manual_seed(seed)
    for _ in range(steps):
        for p in params:
            p.grad.copy_(torch.randn(p.shape, generator=gen))
        opt.step()
        sched.step()
    return opt, sched


def test_adamw_matches_torch_over_10_steps_with_scheduler():
    ours, ref = make_params(SIZES), make_params(SIZES)
    opt, _ = run_training(at.AdamW, ours, 10, 5)
    ref_opt, _ = run_training(torch.optim.AdamW, ref, 10, 5)
    for p, q in zip(ours, ref):
        torch.testing.assert_close(p.data, q.data, rtol=RTOL, atol=2e-5 * 1e-2)
        s, t = opt.state[p], ref_opt.state[q]
        assert float(s["step"]) == float(t["step"]) == 10.0
        torch.testing.assert_close(s["exp_avg"], t["exp_avg"], rtol=RTOL, atol=ATOL)
        torch.testing.assert_close(s["exp_avg_sq"], t["exp_avg_sq"], rtol=RTOL, atol=1e-9)


def test_adamw_param_groups():
    a, b = make_params(SIZES[:2]), make_params(SIZES[2:])
    ra, rb = make_params(SIZES[:2]), make_params(SIZES[2:])
    groups = lambda x, y: [{"params": x}, {"params": y, "lr": 0.1, "weight_decay": 0.0}]
    opt, ref = at.AdamW(groups(a, b), lr=1e-3), torch.optim.AdamW(groups(ra, rb), lr=1e-3)
    for _ in range(3):
        opt.step()
        ref.step()
    for p, q in zip(a + b, ra + rb):
        torch.testing.assert_close(p.data, q.data, rtol=RTOL, atol=2e-5 * 0.1)


def test_state_dict_round_trip_both_ways():
    ours, ref = make_params(SIZES), make_params(SIZES)
    opt, sched = run_training(at.AdamW, ours, 4, 9)
    ref_opt, ref_sched = run_training(torch.optim.AdamW, ref, 4, 9)
    # accel -> torch.save -> torch.optim.AdamW, and torch -> accel; then 6 more steps each
    buf = io.BytesIO()
    torch.save(opt.state_dict(), buf)
    buf.seek(0)
    ours2, ref2 = [copy.deepcopy(p) for p in ours], [copy.deepcopy(p) for p in ref]
    for p in ours2 + ref2:
        p.grad = torch.zeros_like(p)
    torch_from_ours = torch.optim.AdamW(ours2, lr=1e-2)
    torch_from_ours.load_state_dict(torch.load(buf))
    accel_from_torch = at.AdamW(ref2, lr=1e-2)
    accel_from_torch.load_state_dict(ref_opt.state_dict())
    assert set(opt.state_dict()["param_groups"][0]) == set(ref_opt.state_dict()["param_groups"][0])
    gen1, gen2 = torch.Generator().manual_seed(3), torch.Generator().manual_seed(3)
    for _ in range(6):
        for p, q in zip(ours2, ref2):
            p.grad.copy_(torch.randn(p.shape, generator=gen1))
            q.grad.copy_(torch.randn(q.shape, generator=gen2))
        torch_from_ours.step()
        accel_from_torch.step()
    for p, q in zip(ours2, ref2):
        torch.testing.assert_close(p.data, q.data, rtol=1e-4, atol=1e-6)
    assert float(accel_from_torch.state[ref2[0]]["step"]) == 10.0


def test_captured_step_skips_on_overflow_and_clips():
    ps, ref = make_params(SIZES), make_params(SIZES)
    opt = at.AdamW(ps, lr=1e-2, max_grad_norm=1.0)
    ref_opt = torch.optim.AdamW(ref, lr=1e-2)
    scale = 1024.0
    for p, q in zip(ps, ref):
        p.grad.mul_(scale)
    opt.step(grad_scale=scale)
    torch.nn.utils.clip_grad_norm_(ref, 1.0)
    ref_opt.step()
    assert not opt.last_step_skipped
    for p, q in zip(ps, ref):
        torch.testing.assert_close(p.data, q.data, rtol=RTOL, atol=ATOL)
    before = [p.detach().clone() for p in ps]
    m_before = [opt.state[p]["exp_avg"].clone() for p in ps]
    ps[2].grad[5, 5] = float("inf")
    opt.step(grad_scale=scale)
    assert opt.last_step_skipped
    assert float(opt.state[ps[0]]["step"]) == 1.0
    for p, b, m in zip(ps, before, m_before):
        assert torch.equal(p.data, b) and torch.equal(opt.state[p]["exp_avg"], m)


def test_step_is_zero_copy_and_in_place():
    ps = make_params(SIZES)
    ptrs = [p.data_ptr() for p in ps]
    opt = at.AdamW(ps)
    opt.step()
    plan = opt._plan
    assert [plan.P[i][0] for i in range(len(ps))] == ptrs
    assert [plan.G[i][0] for i in range(len(ps))] == [p.grad.data_ptr() for p in ps]
    opt.step()
    assert opt._plan is plan  # cached: one graph replay per step
    for p in ps:  # a replaced gradient rebuilds the lists (torch's zero_grad(set_to_none))
        p.grad = p.grad.clone()
    opt.step()
    assert opt._plan is not plan
    assert [opt._plan.G[i][0] for i in range(len(ps))] == [p.grad.data_ptr() for p in ps]


def test_bad_input_raises():
    dbl = torch.nn.Parameter(torch.randn(8, dtype=torch.float64))
    dbl.grad = torch.randn(8, dtype=torch.float64)
    with pytest.raises(accel.Error, match="element 0"):
        at.AdamW([dbl]).step()


def test_no_leaks_over_10000_steps():
    dev = at.device_for(torch.zeros(1))
    ps = make_params([(16,), (8, 8), (3,)])
    opt = at.AdamW(ps, lr=1e-4, max_grad_norm=1.0)
    for _ in range(100):
        opt.step()
        at.clip_grad_norm_(ps, 1.0)
    gc.collect()
    stats0, rss0 = dev.memory_stats(), resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    for _ in range(10000):
        opt.step()
        at.clip_grad_norm_(ps, 1.0)
    gc.collect()
    stats1, rss1 = dev.memory_stats(), resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    assert stats1["allocated_bytes"] == stats0["allocated_bytes"]
    assert stats1["active_blocks"] == stats0["active_blocks"]
    assert rss1 - rss0 < 4096  # KiB
    assert float(opt.state[ps[0]]["step"]) == 10100.0


def test_storage_replaced_under_the_captured_step():
    """A parameter whose storage is swapped (p.data = ...) after the step was captured: the
    next step rebuilds its lists and updates the new storage, never the stale one."""
    ps, ref = make_params(SIZES), make_params(SIZES)
    opt, ref_opt = at.AdamW(ps), torch.optim.AdamW(ref)
    opt.step()
    ref_opt.step()
    old = ps[1].data
    old_copy = old.clone()
    ps[1].data = old.clone()
    ref[1].data = ref[1].data.clone()
    opt.step()
    ref_opt.step()
    assert torch.equal(old, old_copy)
    for p, q in zip(ps, ref):
        torch.testing.assert_close(p.data, q.data, rtol=RTOL, atol=2e-5 * 1e-3)
