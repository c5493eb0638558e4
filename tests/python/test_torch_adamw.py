"""accel.torch.AdamW against torch.optim.AdamW with torch's own options and patterns: every
combination of amsgrad, maximize, weight decay and param groups that PyTorch's test_adamw
uses, parameters whose gradient is missing on some steps (frozen, zero_grad(set_to_none=True),
unused every other step) with torch's per-parameter step counts, complex and non-contiguous
parameters, state_dict round trips, and what stays refused. Every parity test runs captured
(one graph replayed per step) and eagerly (capture=False: the same launches every step).

Tolerances (docs/PYTHON.md): parameters rel 1e-5 plus abs 2e-5 * lr per step, since accel
forms the bias corrections in fp32 where torch uses double; exp_avg rel 1e-5 plus abs 2e-8 per
step (accel's m + (1 - beta1) (g - m) against torch's beta1 m + (1 - beta1) g); the second
moments (exp_avg_sq, max_exp_avg_sq) rel 5e-5, since accel forms 1 - beta2 in fp32 (a 1.3e-5
relative difference in each new term, docs/KERNELS.md). Step counts: equal."""
import copy
import io

import pytest

torch = pytest.importorskip("torch")
import accel.torch as at  # noqa: E402

RTOL = 1e-5
CAPTURE = [pytest.param(True, id="captured"), pytest.param(False, id="eager")]


def pair(shapes, seed=0):
    """The same parameters twice: for accel.torch.AdamW and for torch.optim.AdamW."""
    gen = torch.Generator().manual_seed(seed)
    ps = [torch.randn(*s, generator=gen) for s in shapes]
    return ([torch.nn.Parameter(p.clone()) for p in ps],
            [torch.nn.Parameter(p.clone()) for p in ps])


def assert_same_state(ours, ref, opt, ref_opt, steps, lr):
    for p, q in zip(ours, ref):
        torch.testing.assert_close(p.data, q.data, rtol=RTOL, atol=2e-5 * lr * steps)
        s, t = opt.state[p], ref_opt.state[q]
        assert set(s) == set(t)
        assert float(s["step"]) == float(t["step"])
        for key, rtol, atol in (("exp_avg", RTOL, 2e-8 * steps), ("exp_avg_sq", 5e-5, 1e-9),
                                ("max_exp_avg_sq", 5e-5, 1e-9)):
            if key in t:
                torch.testing.assert_close(s[key], t[key], rtol=rtol, atol=atol)
    for k, v in opt.state_dict()["state"].items():  # per parameter, as torch's
        assert float(v["step"]) == float(ref_opt.state_dict()["state"][k]["step"])


def train(opt, params, steps, seed, grad_of=None):
    """steps steps of random gradients, written into the same grad tensors (the captured step
    stays valid); grad_of(step, i, params) may say None (no gradient this step)."""
    gen = torch.Generator().manual_seed(seed)
    for k in range(steps):
        for i, p in enumerate(params):
            g = torch.randn(p.shape, generator=gen, dtype=p.dtype)
            if grad_of is not None and grad_of(k, i) is None:
                p.grad = None
            elif p.grad is None:
                p.grad = g
            else:
                p.grad.copy_(g)
        opt.step()


SHAPES = [(10, 5), (10,), (65537,)]


@pytest.mark.parametrize("capture", CAPTURE)
@pytest.mark.parametrize("amsgrad", [False, True])
@pytest.mark.parametrize("maximize", [False, True])
@pytest.mark.parametrize("weight_decay", [1e-2, 1.0])
@pytest.mark.parametrize("groups", [False, True])
def test_options_match_torch(capture, amsgrad, maximize, weight_decay, groups):
    ours, ref = pair(SHAPES, seed=1)

    def make(cls, ps, **kw):
        params = [{"params": ps[:1]}, {"params": ps[1:], "lr": 1e-2}] if groups else ps
        return cls(params, lr=1e-3, weight_decay=weight_decay, amsgrad=amsgrad,
                   maximize=maximize, **kw)

    opt, ref_opt = make(at.AdamW, ours, capture=capture), make(torch.optim.AdamW, ref)
    train(opt, ours, 12, seed=2)
    train(ref_opt, ref, 12, seed=2)
    assert_same_state(ours, ref, opt, ref_opt, 12, 1e-2)
    assert ("max_exp_avg_sq" in opt.state[ours[0]]) == amsgrad


def test_captured_and_eager_steps_are_bitwise_equal():
    runs = []
    for capture in (True, False):
        ps, _ = pair(SHAPES, seed=17)
        opt = at.AdamW(ps, lr=1e-2, amsgrad=True, maximize=True, max_grad_norm=1.0,
                       capture=capture)
        train(opt, ps, 6, seed=18, grad_of=MISSING["unused every other step"])
        runs.append([p.detach().clone() for p in ps]
                    + [opt.state[p][k] for p in ps for k in ("exp_avg", "max_exp_avg_sq")])
    assert all(torch.equal(a, b) for a, b in zip(*runs))


def test_closure_goes_the_right_way():
    """torch's _test_basic_cases_template: 200 closure steps lower the loss, or raise it with
    maximize."""
    for maximize in (False, True):
        gen = torch.Generator().manual_seed(3)
        weight = torch.nn.Parameter(torch.randn(10, 5, generator=gen))
        bias = torch.nn.Parameter(torch.randn(10, generator=gen))
        x = torch.randn(5, generator=gen)
        opt = at.AdamW([weight, bias], lr=1e-3, weight_decay=1, amsgrad=True, maximize=maximize)

        def fn():
            opt.zero_grad()
            loss = (weight.mv(x) + bias).pow(2).sum()
            loss.backward()
            return loss

        initial = fn().item()
        for _ in range(200):
            opt.step(fn)
        assert (fn().item() > initial) == maximize


# A parameter without a gradient on some steps: torch advances its step only when it has one.
MISSING = {
    "frozen 10 of 30": lambda k, i: None if i == 1 and k < 10 else 1,
    "unused every other step": lambda k, i: None if i == 2 and k % 2 else 1,
}


@pytest.mark.parametrize("capture", CAPTURE)
@pytest.mark.parametrize("pattern", sorted(MISSING))
@pytest.mark.parametrize("amsgrad", [False, True])
def test_missing_gradients_match_torch(capture, pattern, amsgrad):
    ours, ref = pair(SHAPES, seed=4)
    opt = at.AdamW(ours, lr=1e-2, amsgrad=amsgrad, capture=capture)
    ref_opt = torch.optim.AdamW(ref, lr=1e-2, amsgrad=amsgrad)
    train(opt, ours, 30, seed=5, grad_of=MISSING[pattern])
    train(ref_opt, ref, 30, seed=5, grad_of=MISSING[pattern])
    assert_same_state(ours, ref, opt, ref_opt, 30, 1e-2)
    want = {"frozen 10 of 30": [30, 20, 30], "unused every other step": [30, 30, 15]}[pattern]
    assert [float(opt.state[p]["step"]) for p in ours] == want


@pytest.mark.parametrize("capture", CAPTURE)
def test_set_to_none_and_unused_every_other_step(capture):
    """zero_grad(set_to_none=True) and backward: the third parameter only gets a gradient on
    even steps (a branch taken every other step)."""
    ours, ref = pair([(4, 3), (4,), (3,)], seed=6)
    x = torch.randn(3, generator=torch.Generator().manual_seed(7))
    opt = at.AdamW(ours, lr=1e-2, capture=capture)
    ref_opt = torch.optim.AdamW(ref, lr=1e-2)
    for k in range(30):
        for o, (w, b, c) in ((opt, ours), (ref_opt, ref)):
            o.zero_grad(set_to_none=True)
            y = w.mv(x + (c if k % 2 == 0 else 0)) + b
            y.pow(2).sum().backward()
            o.step()
    assert_same_state(ours, ref, opt, ref_opt, 30, 1e-2)
    assert [float(opt.state[p]["step"]) for p in ours] == [30.0, 30.0, 15.0]


def test_missing_gradient_keeps_the_captured_step():
    """A grad set to None and later given back (the same tensor) is skipped by the step's
    has-gradient flag: the captured graph is replayed throughout, never captured again."""
    ours, ref = pair(SHAPES, seed=8)
    opt, ref_opt = at.AdamW(ours, lr=1e-2), torch.optim.AdamW(ref, lr=1e-2)
    gen = torch.Generator().manual_seed(9)
    for p, q in zip(ours, ref):
        p.grad = torch.zeros_like(p)
        q.grad = torch.zeros_like(q)
    saved = ours[0].grad
    opt.step()
    ref_opt.step()
    plan = opt._plan
    for k in range(12):
        absent = k % 3 == 1
        for p, q in zip(ours, ref):
            g = torch.randn(p.shape, generator=gen)
            (saved if p is ours[0] else p.grad).copy_(g)
            q.grad = None if absent and q is ref[0] else g
        ours[0].grad = None if absent else saved
        opt.step()
        ref_opt.step()
        assert opt._plan is plan
    assert_same_state(ours, ref, opt, ref_opt, 13, 1e-2)
    assert float(opt.state[ours[0]]["step"]) == 9.0


def test_overflow_skips_amsgrad_state_and_counts():
    ps = [torch.nn.Parameter(torch.randn(5, 3)), torch.nn.Parameter(torch.randn(7))]
    opt = at.AdamW(ps, lr=1e-2, amsgrad=True)
    for p in ps:
        p.grad = torch.randn(p.shape)
    opt.step(grad_scale=2.0)
    before = {k: [opt.state[p][k].clone() for p in ps]
              for k in ("step", "exp_avg", "exp_avg_sq", "max_exp_avg_sq")}
    weights = [p.detach().clone() for p in ps]
    ps[1].grad[3] = float("nan")
    opt.step(grad_scale=2.0)
    assert opt.last_step_skipped
    for k, values in before.items():
        assert all(torch.equal(opt.state[p][k], v) for p, v in zip(ps, values)), k
    assert all(torch.equal(p.data, w) for p, w in zip(ps, weights))


@pytest.mark.parametrize("amsgrad", [False, True])
def test_complex_parameters_are_their_real_pairs(amsgrad):
    """torch's _test_complex_2d: a complex parameter steps exactly as its real and imaginary
    parts would as two real parameters; and as torch's AdamW steps it (torch 1.13's amsgrad
    has no complex maximum: compared without it)."""
    gen = torch.Generator().manual_seed(10)
    z = torch.randn(2, 3, dtype=torch.complex64, generator=gen)
    a = torch.nn.Parameter(z.clone())
    re, im = torch.nn.Parameter(z.real.clone()), torch.nn.Parameter(z.imag.clone())
    ref = torch.nn.Parameter(z.clone())
    opts = [at.AdamW([a], amsgrad=amsgrad), at.AdamW([re, im], amsgrad=amsgrad),
            torch.optim.AdamW([ref])]
    for _ in range(5):
        g = torch.randn(2, 3, dtype=torch.complex64, generator=gen)
        a.grad, ref.grad = g.clone(), g.clone()
        re.grad, im.grad = g.real.clone(), g.imag.clone()
        for o in opts[:3 - amsgrad]:
            o.step()
    assert torch.equal(a.data.real, re.data) and torch.equal(a.data.imag, im.data)
    if not amsgrad:
        torch.testing.assert_close(a.data, ref.data, rtol=RTOL, atol=2e-5 * 1e-3 * 5)


@pytest.mark.parametrize("capture", CAPTURE)
def test_non_contiguous_parameters(capture):
    """torch's non-contiguous case: weight = randn(10, 5, 2)[..., 0] is updated in place."""
    gen = torch.Generator().manual_seed(11)
    base = torch.randn(10, 5, 2, generator=gen)
    w = torch.nn.Parameter(base.clone()[..., 0])
    ref = torch.nn.Parameter(base.clone()[..., 0])
    assert not w.is_contiguous()
    ptr = w.data_ptr()
    opt, ref_opt = at.AdamW([w], capture=capture), torch.optim.AdamW([ref])
    for _ in range(4):
        g = torch.randn(10, 5, generator=gen)
        w.grad, ref.grad = g.clone(), g.clone()
        opt.step()
        ref_opt.step()
    assert w.data_ptr() == ptr
    torch.testing.assert_close(w.data, ref.data, rtol=RTOL, atol=2e-5 * 1e-3 * 4)
    assert float(opt.state[w]["step"]) == 4.0


def test_state_dict_round_trips_with_torch():
    """Per-parameter steps (a parameter frozen for 3 steps), AMSGrad's maximum and maximize move
    both ways; training then goes on as torch's would."""
    ours, ref = pair(SHAPES, seed=12)
    kw = dict(lr=1e-2, amsgrad=True, maximize=True)
    frozen = lambda k, i: None if i == 0 and k < 3 else 1  # noqa: E731
    opt, ref_opt = at.AdamW(ours, **kw), torch.optim.AdamW(ref, **kw)
    train(opt, ours, 8, seed=13, grad_of=frozen)
    train(ref_opt, ref, 8, seed=13, grad_of=frozen)
    buf = io.BytesIO()
    torch.save(opt.state_dict(), buf)
    buf.seek(0)
    ours2, ref2 = copy.deepcopy(ours), copy.deepcopy(ref)
    torch_from_ours = torch.optim.AdamW(ours2, **kw)
    torch_from_ours.load_state_dict(torch.load(buf))
    accel_from_torch = at.AdamW(ref2, **kw)
    accel_from_torch.load_state_dict(ref_opt.state_dict())
    assert [float(accel_from_torch.state[p]["step"]) for p in ref2] == [5.0, 8.0, 8.0]
    train(torch_from_ours, ours2, 5, seed=14)
    train(accel_from_torch, ref2, 5, seed=14)
    assert_same_state(ref2, ours2, accel_from_torch, torch_from_ours, 13, 1e-2)


def test_old_state_dicts_load():
    """torch's _test_state_dict: a state_dict without maximize / foreach in its groups (older
    torch), or with steps as numbers, loads and steps."""
    ps, _ = pair(SHAPES, seed=15)
    opt = at.AdamW(ps, amsgrad=True, maximize=True)
    train(opt, ps, 3, seed=16)
    for drop in ("maximize", "foreach"):
        sd = opt.state_dict()
        for group in sd["param_groups"]:
            del group[drop]
        opt.load_state_dict(sd)
        assert opt.param_groups[0][drop] == at._TORCH_ADAMW_DEFAULTS[drop]
        opt.step()
    sd = opt.state_dict()
    for state in sd["state"].values():
        state["step"] = state["step"].item()
    opt.load_state_dict(sd)
    opt.step()
    assert all(float(opt.state[p]["step"]) == 6.0 for p in ps)
    twin = copy.deepcopy(opt)  # pickles through __getstate__ / __setstate__
    assert twin.max_grad_norm == opt.max_grad_norm and twin.capture == opt.capture


def test_differentiable_stays_refused():
    with pytest.raises(ValueError, match="differentiable is not supported"):
        at.AdamW(pair(SHAPES)[0], differentiable=True)
    with pytest.raises(ValueError, match="Invalid weight_decay value: -1"):
        at.AdamW(None, lr=1e-2, weight_decay=-1)
