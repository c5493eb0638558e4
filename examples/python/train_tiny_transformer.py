#!/usr/bin/python3
"""Trains a small transformer language model twice from the same initial weights, once with
torch.optim.AdamW + torch.nn.utils.clip_grad_norm_ and once with accel.torch's drop-ins, and
prints both loss curves side by side.

usage: train_tiny_transformer.py [--steps N] [--threads T] [--state-dtype fp32|bf16|8bit]
                                 [--check]

No download: the model is defined here (token embedding, 2 pre-norm transformer encoder layers
with causal masking, tied output head) and the data is synthetic: sequences of a noisy
"next token = (a * token + b) mod V" process, which the model can learn, so the loss falls.
--check exits 1 unless the curves agree (relative difference of every logged loss < 1e-3):
the meson test 'python-example' runs it so. --state-dtype bf16 keeps accel's AdamW moments in
bfloat16 (docs/KERNELS.md "State formats"); the curves then drift apart by the state's rounding,
so --check compares the mean loss of the last 10 steps instead (relative difference < BF16_TOL;
the test 'python-example-bf16'), and the optimizer state's bytes per parameter are printed.
--state-dtype 8bit keeps them as 8-bit codes with block scales, checked the same way (Q8_TOL;
the test 'python-example-8bit').
"""
import argparse
import copy
import sys
import time

import torch
import torch.nn as nn

import accel.torch as at

VOCAB, CTX, DIM, HEADS, LAYERS, BATCH = 64, 32, 64, 4, 2, 16
FP32_TOL = 1e-3  # every logged loss, accel (fp32 state) against torch
BF16_TOL = 5e-3  # the mean of the last 10 losses, accel (bf16 state) against torch
Q8_TOL = 1e-2  # the same with 8-bit state


class TinyLM(nn.Module):
    def __init__(self):
        super().__init__()
        self.tok = nn.Embedding(VOCAB, DIM)
        self.pos = nn.Parameter(torch.zeros(CTX, DIM))
        layer = nn.TransformerEncoderLayer(DIM, HEADS, 4 * DIM, dropout=0.0, batch_first=True,
                                           norm_first=True)
        self.blocks = nn.TransformerEncoder(layer, LAYERS)
        self.norm = nn.LayerNorm(DIM)
        mask = torch.triu(torch.full((CTX, CTX), float("-inf")), diagonal=1)
        self.register_buffer("mask", mask)
        nn.init.normal_(self.tok.weight, std=0.02)

    def forward(self, x):
        h = self.blocks(self.tok(x) + self.pos, mask=self.mask)
        return self.norm(h) @ self.tok.weight.t()


def batches(steps, seed):
    gen = torch.Generator().manual_seed(seed)
    for _ in range(steps):
        start = torch.randint(0, VOCAB, (BATCH, 1), generator=gen)
        seq = [start]
        for _ in range(CTX):
            nxt = (5 * seq[-1] + 3) % VOCAB
            noise = torch.randint(0, VOCAB, nxt.shape, generator=gen)
            keep = torch.rand(nxt.shape, generator=gen) < 0.9
            seq.append(torch.where(keep, nxt, noise))
        seq = torch.cat(seq, dim=1)
        yield seq[:, :-1], seq[:, 1:]


def train(model, opt, clip, steps, seed):
    sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=3e-3, total_steps=steps)
    losses, t_opt = [], 0.0
    for x, y in batches(steps, seed):
        loss = nn.functional.cross_entropy(model(x).reshape(-1, VOCAB), y.reshape(-1))
        opt.zero_grad(set_to_none=False)
        loss.backward()
        t0 = time.perf_counter()
        clip(model.parameters(), 1.0)
        opt.step()
        t_opt += time.perf_counter() - t0
        sched.step()
        losses.append(loss.item())
    return losses, t_opt


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=200)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--state-dtype", choices=("fp32", "bf16", "8bit"), default="fp32")
    ap.add_argument("--check", action="store_true")
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    torch.manual_seed(0)
    ref_model = TinyLM()
    our_model = copy.deepcopy(ref_model)
    kw = dict(lr=3e-3, betas=(0.9, 0.95), weight_decay=0.1)
    ref, t_ref = train(ref_model, torch.optim.AdamW(ref_model.parameters(), **kw),
                       torch.nn.utils.clip_grad_norm_, a.steps, 1)
    our_opt = at.AdamW(our_model.parameters(), state_dtype=a.state_dtype, **kw)
    ours, t_ours = train(our_model, our_opt, at.clip_grad_norm_, a.steps, 1)
    nparams = sum(p.numel() for p in ref_model.parameters())
    print(f"TinyLM: {nparams} parameters in {len(list(ref_model.parameters()))} tensors, "
          f"{a.steps} steps, {a.threads} threads, accel state {a.state_dtype} "
          f"({our_opt.state_bytes() / nparams:g} bytes per parameter)")
    print(f"{'step':>6} {'torch AdamW':>12} {'accel AdamW':>12} {'rel diff':>9}")
    worst = 0.0
    for i in range(0, a.steps, max(1, a.steps // 10)):
        rel = abs(ours[i] - ref[i]) / abs(ref[i])
        worst = max(worst, rel)
        print(f"{i:6d} {ref[i]:12.5f} {ours[i]:12.5f} {rel:9.2e}")
    last = a.steps - 1
    worst = max(worst, abs(ours[last] - ref[last]) / abs(ref[last]))
    print(f"{last:6d} {ref[last]:12.5f} {ours[last]:12.5f}")
    print(f"clip + optimizer time over {a.steps} steps: torch {t_ref * 1e3:.1f} ms, "
          f"accel {t_ours * 1e3:.1f} ms")
    tail_ref, tail_ours = sum(ref[-10:]) / len(ref[-10:]), sum(ours[-10:]) / len(ours[-10:])
    tail = abs(tail_ours - tail_ref) / tail_ref
    print(f"mean of the last 10 losses: torch {tail_ref:.5f}, accel {tail_ours:.5f} "
          f"(relative difference {tail:.2e})")
    tol = {"bf16": BF16_TOL, "8bit": Q8_TOL}.get(a.state_dtype)
    ok = worst < FP32_TOL if tol is None else tail < tol
    if a.check and not (ok and ref[last] < 0.8 * ref[0]):
        print(f"FAIL: worst relative loss difference {worst:.2e} (last 10: {tail:.2e}) or the "
              "loss did not fall")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
