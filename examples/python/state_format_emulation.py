#!/usr/bin/python3
"""Emulates AdamW with compressed moments in torch (CPU, no accel) to choose an 8-bit format
(docs/KERNELS.md "State formats"): each format's stored moments are decoded, the new moments
and the update computed in fp32 from them, and the new moments stored (quantised) again; the
update uses the moments before they are stored, as accel's bf16 format does.

usage: state_format_emulation.py

Prints, per format: (1) the loss after 1000 steps of a least-squares regression (512 x 64,
noise 0.01, AdamW lr 1e-2, as tests/python/test_torch_adamw_state.py) against fp32 AdamW's, for
5 data seeds; (2) the relative error of each step's update against the fp32 update computed
from the same fp32 trajectory (so only that step's stored state differs), on the regression
and on a minibatch MLP (32-128-1 tanh, teacher-student, lr 3e-3): medians over steps 1-10,
11-100, 101-1000 and the largest.
"""
import torch

STEPS, SEEDS = 1000, (7, 8, 9, 10, 11)


def grid_e(E, M):
    """Computed magnitudes for E exponent bits, M mantissa bits, relative to the block's scale
    (E = 4: the codes kernels/quant.h first had; the dynamic map replaced them)."""
    vals = [f * 2.0 ** (1 - 2 ** E - M) for f in range(2 ** M)]
    for e in range(1, 2 ** E):
        vals += [(2 ** M + f) * 2.0 ** (e - 2 ** E - M) for f in range(2 ** M)]
    return torch.tensor(sorted(set(vals)), dtype=torch.float64)


def dynamic_map(signed):
    """bitsandbytes' dynamic tree map (create_dynamic_map, max_exponent_bits=7): 256 values
    in [-1, 1] (signed) or [0, 1], decades 1e-7..1 with more fraction values near 1."""
    data = [0.0, 1.0]
    for i in range(7):
        b = torch.linspace(0.1, 1, 2 ** i + 1 if signed else 2 ** (i + 1) + 1,
                           dtype=torch.float64)
        means = ((b[:-1] + b[1:]) / 2 * 10 ** (i - 6)).tolist()
        data += means + ([-x for x in means] if signed else [])
    return torch.tensor(sorted(data), dtype=torch.float64)


class Blockwise:
    """Blockwise 8-bit moments: scale = the block's largest magnitude, each element the value
    of its grid nearest to x / scale (the sign apart when the grid is unsigned)."""

    def __init__(self, name, grid_m, grid_v, block, signed_m):
        self.name, self.grid_m, self.grid_v = name, grid_m, grid_v
        self.block, self.signed_m = block, signed_m

    def _q(self, x, grid, signed):
        n, b = x.numel(), self.block
        f = torch.cat([x.reshape(-1).double(), x.new_zeros((-n) % b, dtype=torch.float64)])
        f = f.view(-1, b)
        s = f.abs().amax(1, keepdim=True)
        t = f / torch.where(s > 0, s, torch.ones_like(s))
        a = t if signed else t.abs()
        i = torch.searchsorted(grid, a).clamp(1, len(grid) - 1)
        lo, hi = grid[i - 1], grid[i]
        q = torch.where(hi - a < a - lo, hi, lo)
        q = q if signed else torch.sign(t) * q
        return (q * s).view(-1)[:n].view_as(x).to(x.dtype)

    def store(self, m, v):
        return self._q(m, self.grid_m, self.signed_m), self._q(v, self.grid_v, False)


class BF16:
    name = "bf16"

    @staticmethod
    def store(m, v):
        return m.bfloat16().float(), v.bfloat16().float()


FORMATS = [BF16(),
           Blockwise("E4M3 / E4M4, block 256", grid_e(4, 3), grid_e(4, 4), 256, False),
           Blockwise("E3M4 / E3M5, block 256", grid_e(3, 4), grid_e(3, 5), 256, False),
           Blockwise("dynamic map, block 256", dynamic_map(True), dynamic_map(False), 256, True),
           Blockwise("dynamic map, block 2048", dynamic_map(True), dynamic_map(False), 2048,
                     True)]


def adamw_updates(params, grads_at, lr, fmt, forced, b1=0.9, b2=0.999, eps=1e-8):
    """AdamW (weight decay 0). forced=False: the trajectory with fmt's state (fmt None: fp32);
    forced=True: the fp32 trajectory, returning each step's update error from fmt's state."""
    m = [torch.zeros_like(p) for p in params]
    v = [torch.zeros_like(p) for p in params]
    errs = []
    for k in range(1, STEPS + 1):
        num = den = 0.0
        for i, (p, g) in enumerate(zip(params, grads_at(k))):
            c1, c2 = lr / (1 - b1 ** k), 1 - b2 ** k
            with torch.no_grad():
                mq, vq = fmt.store(m[i], v[i]) if forced else (m[i], v[i])
                m[i], v[i] = b1 * m[i] + (1 - b1) * g, b2 * v[i] + (1 - b2) * g * g
                du = c1 * m[i] / ((v[i] / c2).sqrt() + eps)
                if forced:
                    mq, vq = b1 * mq + (1 - b1) * g, b2 * vq + (1 - b2) * g * g
                    dq = c1 * mq / ((vq / c2).sqrt() + eps)
                    num, den = num + float((dq - du).norm() ** 2), den + float(du.norm() ** 2)
                elif fmt is not None:
                    m[i], v[i] = fmt.store(m[i], v[i])
                p.sub_(du)
        errs.append((num / max(den, 1e-300)) ** 0.5)
    return torch.tensor(errs)


def least_squares(seed):
    gen = torch.Generator().manual_seed(seed)
    x = torch.randn(512, 64, generator=gen)
    y = x @ torch.randn(64, generator=gen) + 0.01 * torch.randn(512, generator=gen)
    w = torch.zeros(64, requires_grad=True)

    def grads(_):
        w.grad = None
        ((x @ w - y) ** 2).mean().backward()
        return [w.grad]

    return [w], grads, 1e-2, lambda: float(((x @ w.detach() - y) ** 2).mean())


def mlp(seed=11):
    gen = torch.Generator().manual_seed(seed)
    x = torch.randn(4096, 32, generator=gen)
    y = torch.tanh(x @ torch.randn(32, 64, generator=gen)) @ torch.randn(64, 1, generator=gen) / 8
    w1 = (torch.randn(32, 128, generator=gen) / 32 ** 0.5).requires_grad_()
    w2 = (torch.randn(128, 1, generator=gen) / 128 ** 0.5).requires_grad_()
    idx = torch.randint(0, 4096, (STEPS, 256), generator=gen)

    def grads(k):
        w1.grad = w2.grad = None
        i = idx[k - 1]
        ((torch.tanh(x[i] @ w1) @ w2 - y[i]) ** 2).mean().backward()
        return [w1.grad, w2.grad]

    return [w1, w2], grads, 3e-3, None


def main():
    torch.set_num_threads(1)
    base = []
    for s in SEEDS:
        ps, g, lr, loss = least_squares(s)
        adamw_updates(ps, g, lr, None, False)
        base.append(loss())
    print("least squares, fp32 loss after 1000 steps per seed:", *(f"{b:.5g}" for b in base))
    for fmt in FORMATS:
        rel = []
        for s, b in zip(SEEDS, base):
            ps, g, lr, loss = least_squares(s)
            adamw_updates(ps, g, lr, fmt, False)
            rel.append(100 * (loss() / b - 1))
        med = sorted(rel)[len(rel) // 2]
        print(f"{fmt.name:32s} loss vs fp32: " + " ".join(f"{r:+.2f}%" for r in rel)
              + f"  median {med:+.2f}%")
        for prob, setup in (("least squares", lambda: least_squares(SEEDS[0])), ("mlp", mlp)):
            ps, g, lr, _ = setup()
            e = 100 * adamw_updates(ps, g, lr, fmt, True)
            print(f"    {prob}: update error median {float(e[:10].median()):.2f}% / "
                  f"{float(e[10:100].median()):.2f}% / {float(e[100:].median()):.2f}%, "
                  f"max {float(e.max()):.2f}%", flush=True)


if __name__ == "__main__":
    main()
