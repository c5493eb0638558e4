"""The 8-bit state format of accel.torch.AdamW(state_dtype="8bit") on the host, in torch: what
turns a torch (fp32) state into codes and block scales when it is loaded, and codes back into
fp32 moments (docs/KERNELS.md "8-bit blockwise moments"). The rule is the kernels'
(kernels/quant.h): blocks of 256 elements; a block's scale is its largest magnitude; an element
x is the code of the dynamic map's value nearest to x / scale (0 for a block of zeros), ties to
the lower code, and decodes to value * scale. The first moment uses the signed map, the second
the unsigned one; the scales of a tensor are stored interleaved, [s_m, s_v] per block."""
import torch

BLOCK = 256


def _tables(signed):
    """(values, thresholds) as float32: the map's 256 values (computed in double and rounded
    once, as kernels/gen_q8_map.py's exact ones), and between neighbours the largest float32
    not above their midpoint (the code of t is the number of thresholds below t)."""
    vals = [0.0, 1.0]
    for i in range(7):
        n = 2 ** i if signed else 2 ** (i + 1)
        for j in range(n):
            v = (0.1 + (2 * j + 1) * 0.9 / (2 * n)) * 10.0 ** (i - 6)
            vals += [v, -v] if signed else [v]
    values = torch.tensor(sorted(vals), dtype=torch.float64).float()
    mid = (values[:-1].double() + values[1:].double()) / 2  # exact in double
    thr = mid.float()
    below = torch.nextafter(thr, torch.full_like(thr, -float("inf")))
    return values, torch.where(thr.double() > mid, below, thr)


_SIGNED, _UNSIGNED = _tables(True), _tables(False)


def blocks_of(numel):
    return (numel + BLOCK - 1) // BLOCK


def scales_numel(numel):
    """The state_scales elements of a tensor of numel elements."""
    return 2 * blocks_of(numel)


def _encode(x, signed):
    """(codes uint8 of x's shape, scales float32 [blocks]) of a float32 tensor x."""
    _, thr = _SIGNED if signed else _UNSIGNED
    flat = x.detach().reshape(-1).float().cpu()
    n = flat.numel()
    rows = torch.zeros(blocks_of(n) * BLOCK, dtype=torch.float32)
    rows[:n] = flat
    rows = rows.view(-1, BLOCK)
    s = rows.abs().amax(1, keepdim=True)  # NaN kept
    t = torch.where(s > 0, rows / s, torch.zeros_like(rows))
    codes = torch.searchsorted(thr, t.contiguous())
    codes[t.isnan()] = 0
    return codes.reshape(-1)[:n].to(torch.uint8).view(x.shape), s.reshape(-1)


def _decode(codes, s, signed):
    values, _ = _SIGNED if signed else _UNSIGNED
    n = codes.numel()
    per_elem = s.float().cpu().repeat_interleave(BLOCK)[:n]
    return (values[codes.reshape(-1).cpu().long()] * per_elem).view(codes.shape)


def quantize(exp_avg, exp_avg_sq):
    """(exp_avg codes, exp_avg_sq codes, state_scales) of fp32 moments, on their device."""
    cm, sm = _encode(exp_avg, True)
    cv, sv = _encode(exp_avg_sq, False)
    scales = torch.stack([sm, sv], 1).reshape(-1)
    dev = exp_avg.device
    return cm.to(dev), cv.to(dev), scales.to(dev)


def dequantize(codes_m, codes_v, scales):
    """The fp32 moments (exp_avg, exp_avg_sq) that 8-bit state decodes to."""
    s = scales.reshape(-1, 2)
    dev = codes_m.device
    return (_decode(codes_m, s[:, 0], True).to(dev), _decode(codes_v, s[:, 1], False).to(dev))
