"""accel.torch on CUDA tensors against torch on the same data (scripts/device-check's torch-cuda
step; needs the accel package on PYTHONPATH, torch with CUDA and a GPU).

  * clip_grad_norm_ (p = 2, inf; float32, bfloat16 grads): total norm and clipped grads;
  * AdamW (float32 params; lr, weight decay, amsgrad off/on): 5 steps, params and state;
  * the tensors are imported through DLPack (accel works on torch's memory in place).

No torch.cuda.synchronize() fences: accel.torch runs on torch's current stream (wrapped with
accel_stream_wrap_native), so the gradients torch writes asynchronously are read after they
are written. The clip and the AdamW steps run inside `torch.cuda.stream(side)` with the
gradients made on that side stream just before, which would race if accel used a stream of its
own.
Exit 0: all within tolerance; 1: a mismatch; 77: no CUDA device (printed reason).
"""
import sys

try:
    import torch
except ImportError as e:
    print(f"SKIP: torch is not importable: {e}")
    sys.exit(77)
if not torch.cuda.is_available():
    print("SKIP: torch sees no CUDA device")
    sys.exit(77)
import accel.torch as at  # noqa: E402

failures = 0


def check(ok, what):
    global failures
    print(("ok: " if ok else "FAIL: ") + what)
    failures += 0 if ok else 1


def close(a, b, rtol, atol):
    return torch.allclose(a.float(), b.float(), rtol=rtol, atol=atol)


def grads_pair(dtype, seed):
    g = torch.Generator(device="cuda").manual_seed(seed)
    shapes = [(1000,), (333, 7), (70000,), (1,), (4096, 3)]
    mine, ref = [], []
    for s in shapes:
        p1 = torch.zeros(s, device="cuda", dtype=dtype, requires_grad=True)
        p2 = torch.zeros(s, device="cuda", dtype=dtype, requires_grad=True)
        grad = (torch.randn(s, device="cuda", generator=g) * 3).to(dtype)
        p1.grad, p2.grad = grad.clone(), grad.clone()
        mine.append(p1)
        ref.append(p2)
    return mine, ref


side = torch.cuda.Stream()
for dtype in (torch.float32, torch.bfloat16):
    for p in (2.0, float("inf")):
        with torch.cuda.stream(side):
            mine, ref = grads_pair(dtype, 1)
            n1 = at.clip_grad_norm_(mine, 1.0, p)
            n2 = torch.nn.utils.clip_grad_norm_(ref, 1.0, p, foreach=False)
        torch.cuda.synchronize()
        tol = 1e-5 if dtype == torch.float32 else 1e-2
        check(close(torch.as_tensor(n1).cpu(), n2.cpu(), tol, tol),
              f"clip {dtype} p={p}: norm {float(n1):.6g} vs torch {float(n2):.6g}")
        same = all(close(a.grad, b.grad, tol, tol) for a, b in zip(mine, ref))
        check(same, f"clip {dtype} p={p}: clipped grads")

for amsgrad in (False, True):
    g = torch.Generator(device="cuda").manual_seed(7)
    params = [torch.randn(s, device="cuda", generator=g) for s in [(1000,), (257, 3), (65537,)]]
    mine = [p.clone().requires_grad_(True) for p in params]
    ref = [p.clone().requires_grad_(True) for p in params]
    o1 = at.AdamW(mine, lr=1e-2, weight_decay=0.1, amsgrad=amsgrad)
    o2 = torch.optim.AdamW(ref, lr=1e-2, weight_decay=0.1, amsgrad=amsgrad, foreach=False)
    for step in range(5):
        with torch.cuda.stream(side):
            for a, b in zip(mine, ref):
                grad = torch.randn(a.shape, device="cuda", generator=g)
                a.grad, b.grad = grad.clone(), grad.clone()
            o1.step()
            o2.step()
    torch.cuda.synchronize()
    check(all(close(a, b, 1e-5, 1e-6) for a, b in zip(mine, ref)),
          f"AdamW amsgrad={amsgrad}: params after 5 steps")
    for key in ("exp_avg", "exp_avg_sq"):
        check(all(close(o1.state[a][key], o2.state[b][key], 1e-5, 1e-7)
                  for a, b in zip(mine, ref)), f"AdamW amsgrad={amsgrad}: {key}")

print(f"{1 if not failures else 0} passed, {1 if failures else 0} failed")
sys.exit(1 if failures else 0)
