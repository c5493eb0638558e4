#!/usr/bin/python3
"""The Lion optimizer (Chen et al. 2023, "Symbolic Discovery of Optimization Algorithms") written
as ONE user kernel over tensor lists, compiled at run time with accel.Module, its step captured
once in a graph and replayed; checked after every step against a reference Lion in plain
PyTorch ops (float32).

usage: lion_user_kernel.py [--steps N] [--device SEL] [--check]

Per element, with lr, beta1, beta2 and weight decay wd read from device memory at run time (so
the captured step follows a learning-rate schedule without being captured again):

    c = beta1 * m + (1 - beta1) * g
    p = p - lr * (sign(c) + wd * p)
    m = beta2 * m + (1 - beta2) * g

Two copies of a small MLP start from the same weights and see the same batches: one steps with
the kernel (its parameters, gradients and moments are imported zero-copy, the step is one
graph replay), the other with the reference. Both compute in fp32 but not in the same order
(torch rounds 1 - beta1 to fp32 from a double; the kernel computes it in fp32), so a few
elements differ by an ulp or so. sign() turns that into a difference of 2 * lr where c is within
rounding of 0: such an element's parameter then differs by about 2 * lr (and its later
gradients slightly), while every other element stays within rounding. The tolerance is
therefore, after every step and for every parameter:
  - at most 1% of the elements differ by more than 1e-5 * (1 + |p|) (the sign flips), and
  - no element differs by more than 4 * lr_max + 1e-5 (at most two flips in opposite
    directions plus rounding; one step's wrong update of a correct kernel is 2 * lr),
  - the moments m within 1e-5 (absolute; |m| <= max |g| ~ 1) and the losses within 1e-3
    relative; and the training works: the mean loss of the last 10 steps is under 3/4 of the
    first 10's.
Observed on the CPU backend over 100 steps: the parameters bitwise equal to the reference at
every step (no sign flip happened), the moments within 3.2e-8, the losses equal. A wrong kernel
(a swapped beta, a lost weight decay, sign(g) for sign(c)) breaks the first bound within 20
steps (tests/python/test_module.py). --check exits 1 when a bound is broken (the meson test
'python-lion' runs it). The model's tensors are torch CPU tensors, so --device is a device that
imports host memory (the CPU backend).
"""
import argparse
import math
import sys

import torch
import torch.nn as nn

import accel

LION_SOURCE = r"""
ACC_INLINE void lion_elem(acc_idx i, ACC_GPTR(acc_f32) p, ACC_GPTR(const acc_f32) g,
                          ACC_GPTR(acc_f32) m, acc_f32 lr, acc_f32 b1, acc_f32 b2, acc_f32 wd) {
  const acc_f32 gi = g[i], mi = m[i], pi = p[i];
  const acc_f32 c = b1 * mi + (1.0f - b1) * gi;
  const acc_f32 s = (acc_f32)(c > 0.0f) - (acc_f32)(c < 0.0f);
  p[i] = pi - lr * (s + wd * pi);
  m[i] = b2 * mi + (1.0f - b2) * gi;
}
ACC_INLINE void lion_chunk(ACC_GPTR(const acc_chunk_t) chunks, acc_u32 b, acc_f32 lr,
                           acc_f32 b1, acc_f32 b2, acc_f32 wd) {
  ACC_ELEM_MAP(chunks[b].count, lion_elem, ACC_PTR(acc_f32, chunks[b].ptr[0]),
               ACC_PTR(const acc_f32, chunks[b].ptr[1]), ACC_PTR(acc_f32, chunks[b].ptr[2]),
               lr, b1, b2, wd);
}
ACC_KERNEL(lion_k_step, lion_params_t, P) {
  const acc_f32 lr = ACC_PTR(const acc_f32, P.lr)[0], b1 = ACC_PTR(const acc_f32, P.beta1)[0];
  const acc_f32 b2 = ACC_PTR(const acc_f32, P.beta2)[0], wd = ACC_PTR(const acc_f32, P.wd)[0];
  ACC_FOR_BLOCKS(b, P.num_chunks)
  lion_chunk(ACC_PTR(const acc_chunk_t, P.chunks), b, lr, b1, b2, wd);
}
ACCEL_KERNEL(LION_STEP, lion_k_step, lion_params_t, ACC_OP("lion_step", ACC_TABLE_SHARED),
             (ACC_LIST("params", ACC_IO(RW), ACC_F32_DT, ACC_NO_ALIAS),
              ACC_LIST("grads", ACC_IO(R), ACC_F32_DT, ACC_NO_ALIAS),
              ACC_LIST("exp_avg", ACC_IO(RW), ACC_F32_DT, ACC_NO_ALIAS)),
             (ACC_SCALAR("lr", ACC_FIELD(lr), 4, R, ACC_REQUIRED, ACC_ALL_BLOCKS),
              ACC_SCALAR("beta1", ACC_FIELD(beta1), 4, R, ACC_REQUIRED, ACC_ALL_BLOCKS),
              ACC_SCALAR("beta2", ACC_FIELD(beta2), 4, R, ACC_REQUIRED, ACC_ALL_BLOCKS),
              ACC_SCALAR("wd", ACC_FIELD(wd), 4, R, ACC_REQUIRED, ACC_ALL_BLOCKS)))
"""
LR, BETAS, WD, BATCH = 3e-3, (0.9, 0.99), 0.1, 64


def lr_at(step, steps):
    """A cosine schedule with a 10-step warm-up: the captured step reads it from device memory."""
    if step < 10:
        return LR * (step + 1) / 10
    return LR * 0.5 * (1 + math.cos(math.pi * (step - 10) / max(1, steps - 10)))


def reference_lion(params, grads, moms, lr, b1, b2, wd):
    """Lion in plain torch ops, float32."""
    with torch.no_grad():
        for p, g, m in zip(params, grads, moms):
            c = b1 * m + (1 - b1) * g
            p.sub_(lr * (torch.sign(c) + wd * p))
            m.mul_(b2).add_((1 - b2) * g)


class AccelLion:
    """Lion over fixed gradient buffers, one captured graph replayed per step."""

    def __init__(self, params, device, source=LION_SOURCE):
        self.dev = device
        self.params = list(params)
        self.grads = [torch.zeros_like(p) for p in self.params]  # stable addresses for the graph
        self.moms = [torch.zeros_like(p) for p in self.params]
        self.module = accel.Module(source, device)
        step = self.module.kernel("lion_step")
        self.hp = accel.DeviceStruct(device, "float", 4)  # lr, beta1, beta2, wd
        self.stream = device.stream(lazy=False)
        lists = [accel.TensorList(device, t) for t in (self.params, self.grads, self.moms)]
        self.graph = device.graph()
        with self.graph.capture(self.stream):
            self.hp.upload(self.stream)  # each replay copies the host values of the moment
            step(*lists, *(self.hp.dev + i for i in range(4)), stream=self.stream)
        for tl in lists:
            tl.close()  # the graph holds the imports

    def step(self, grads, lr, betas=BETAS, wd=WD):
        for buf, g in zip(self.grads, grads):
            buf.copy_(g)
        h = self.hp.host
        h[0], h[1], h[2], h[3] = lr, betas[0], betas[1], wd
        self.graph.replay(self.stream)
        self.stream.synchronize()

    def close(self):
        self.graph.close()
        self.stream.close()
        self.hp.close()
        self.module.close()


def make_model(seed):
    torch.manual_seed(seed)
    return nn.Sequential(nn.Linear(16, 64), nn.Tanh(), nn.Linear(64, 64), nn.Tanh(),
                         nn.Linear(64, 1))


def batch(gen):
    x = torch.randn(BATCH, 16, generator=gen)
    y = torch.sin(x[:, :4].sum(1, keepdim=True)) + 0.1 * x[:, 4:5]
    return x, y


def loss_and_grads(model, x, y):
    params = list(model.parameters())
    loss = nn.functional.mse_loss(model(x), y)
    return loss.item(), torch.autograd.grad(loss, params)


def compare(step, ours, ref, moms, ref_moms, lr_max):
    """The bounds of the module docstring; a list of what broke them."""
    bad = []
    for i, (a, b) in enumerate(zip(ours, ref)):
        diff = (a - b).abs()
        off = (diff > 1e-5 * (1 + b.abs())).float().mean().item()
        if off > 0.01:
            bad.append(f"step {step} param {i}: {100 * off:.1f}% of elements off")
        if diff.max().item() > 4 * lr_max + 1e-5:
            bad.append(f"step {step} param {i}: max |diff| {diff.max().item():.3g}")
    for i, (a, b) in enumerate(zip(moms, ref_moms)):
        if (a - b).abs().max().item() > 1e-5:
            bad.append(f"step {step} moment {i}: max |diff| {(a - b).abs().max().item():.3g}")
    return bad


def train(steps, device, source=LION_SOURCE, verbose=True):
    """Trains both copies; returns (our losses, reference losses, broken bounds)."""
    ours, ref = make_model(0), make_model(0)
    ref_params = list(ref.parameters())
    ref_moms = [torch.zeros_like(p) for p in ref_params]
    opt = AccelLion(ours.parameters(), device, source)
    gen = torch.Generator().manual_seed(1)
    curves, broken = ([], []), []
    lr_max = max(lr_at(s, steps) for s in range(steps))
    try:
        for s in range(steps):
            x, y = batch(gen)
            lo, g = loss_and_grads(ours, x, y)
            lt, gr = loss_and_grads(ref, x, y)
            opt.step(g, lr_at(s, steps))
            reference_lion(ref_params, gr, ref_moms, lr_at(s, steps), *BETAS, WD)
            curves[0].append(lo)
            curves[1].append(lt)
            broken += compare(s, opt.params, ref_params, opt.moms, ref_moms, lr_max)
            if abs(lo - lt) > 1e-3 * abs(lt):
                broken.append(f"step {s}: loss {lo:.6g} against {lt:.6g}")
            if verbose and (s % 10 == 0 or s == steps - 1):
                print(f"step {s:4d}  lr {lr_at(s, steps):.2e}  loss accel {lo:.6f}  "
                      f"torch {lt:.6f}")
    finally:
        opt.close()
    return curves[0], curves[1], broken


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--steps", type=int, default=100)
    ap.add_argument("--device", default="cpu", help="accel device selector (cpu, opencl, ...)")
    ap.add_argument("--check", action="store_true", help="exit 1 unless within the tolerance")
    a = ap.parse_args()
    with accel.Device(a.device) as dev:
        ours, ref, broken = train(a.steps, dev)
    print(f"mean loss of the first / last 10 steps: accel {sum(ours[:10]) / 10:.6f} / "
          f"{sum(ours[-10:]) / 10:.6f}, torch {sum(ref[:10]) / 10:.6f} / {sum(ref[-10:]) / 10:.6f}")
    for line in broken[:10]:
        print("OUT OF TOLERANCE:", line)
    if a.check and (broken or not sum(ours[-10:]) < 0.75 * sum(ours[:10])):
        print("FAIL" if broken else "FAIL: the loss did not fall")
        sys.exit(1)


if __name__ == "__main__":
    main()
