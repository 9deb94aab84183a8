#!/usr/bin/env python3
"""Peers for bench/rowwise_bench.cc: torch eager, F.rms_norm, torch.compile and a Triton kernel on
the same shapes, as GB/s (minimum traffic: each input read once, each output written once) and as
ratios to a device copy of the same byte count measured in the same run (torch copy_).

Timing: triton.testing.do_bench (device events, L2 cleared before each run, median).
Runs where torch + triton + a GPU exist; prints a table last. Usage: python3 bench/peers.py
"""
import sys

try:
    import torch
    import torch.nn.functional as F
    import triton
    import triton.language as tl
except ImportError as e:  # pragma: no cover
    print(f"peers.py: skipped ({e})")
    sys.exit(0)

if not torch.cuda.is_available():
    print("peers.py: skipped (no GPU)")
    sys.exit(0)

D = 14336  # Llama-3-8B MLP: x [R, 2*D] -> out [R, D]
RMS_SHAPES = [(4096, 4096), (16384, 8192), (32768, 4096)]
SILU_ROWS = [4096, 16384]
EPS = 1e-6


def bench(fn):
    return triton.testing.do_bench(fn, warmup=25, rep=100, return_mode="median")


def copy_ms(nbytes):
    n = nbytes // 2 // 2  # bf16 elements; bytes counted read + write
    src = torch.randn(n, device="cuda", dtype=torch.bfloat16)
    dst = torch.empty_like(src)
    return bench(lambda: dst.copy_(src))


@triton.jit
def _rms_kernel(x_ptr, w_ptr, y_ptr, C, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < C
    x = tl.load(x_ptr + row * C + cols, mask=mask, other=0.0).to(tl.float32)
    w = tl.load(w_ptr + cols, mask=mask, other=0.0).to(tl.float32)
    inv = tl.rsqrt(tl.sum(x * x, axis=0) / C + eps)
    tl.store(y_ptr + row * C + cols, (x * inv * w).to(tl.bfloat16), mask=mask)


def triton_rms(x, w, y):
    R, C = x.shape
    BLOCK = triton.next_power_of_2(C)
    _rms_kernel[(R,)](x, w, y, C, EPS, BLOCK=BLOCK, num_warps=8 if C <= 4096 else 16)


@triton.jit
def _silu_kernel(x_ptr, o_ptr, R, D, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
    mask = cols < D
    g = tl.load(x_ptr + row * 2 * D + cols, mask=mask, other=0.0).to(tl.float32)
    u = tl.load(x_ptr + row * 2 * D + D + cols, mask=mask, other=0.0).to(tl.float32)
    tl.store(o_ptr + row * D + cols, (g * tl.sigmoid(g) * u).to(tl.bfloat16), mask=mask)


def triton_silu(x, o):
    R, D2 = x.shape
    d = D2 // 2
    BLOCK = 2048
    _silu_kernel[(R, triton.cdiv(d, BLOCK))](x, o, R, d, BLOCK=BLOCK, num_warps=8)


def rms_eager(x, w):
    xf = x.float()
    var = xf.pow(2).mean(-1, keepdim=True)
    return (xf * torch.rsqrt(var + EPS)).to(x.dtype) * w


def silu_eager(x):
    d = x.shape[-1] // 2
    return F.silu(x[..., :d]) * x[..., d:]


def main():
    dev = torch.cuda.get_device_name()
    rows = []
    rms_compiled = torch.compile(rms_eager)
    silu_compiled = torch.compile(silu_eager)
    for R, C in RMS_SHAPES:
        x = torch.randn(R, C, device="cuda", dtype=torch.bfloat16)
        w = torch.rand(C, device="cuda", dtype=torch.bfloat16) + 0.5
        y = torch.empty_like(x)
        nbytes = 2 * R * C * 2 + C * 2
        ref = rms_eager(x, w).float()
        triton_rms(x, w, y)
        err = (y.float() - ref).abs().max().item()
        cms = copy_ms(nbytes)
        for name, fn in [
            ("torch eager", lambda: rms_eager(x, w)),
            ("F.rms_norm", lambda: F.rms_norm(x, (C,), w, EPS)),
            ("torch.compile", lambda: rms_compiled(x, w)),
            ("triton", lambda: triton_rms(x, w, y)),
        ]:
            ms = bench(fn)
            rows.append((f"rmsnorm bf16 {R}x{C}", name, nbytes, ms, cms))
        print(f"triton rmsnorm {R}x{C}: max abs err vs eager {err:.3g}", flush=True)
    for R in SILU_ROWS:
        x = torch.randn(R, 2 * D, device="cuda", dtype=torch.bfloat16)
        o = torch.empty(R, D, device="cuda", dtype=torch.bfloat16)
        nbytes = 3 * R * D * 2
        triton_silu(x, o)
        err = (o.float() - silu_eager(x).float()).abs().max().item()
        cms = copy_ms(nbytes)
        for name, fn in [
            ("torch eager", lambda: silu_eager(x)),
            ("torch.compile", lambda: silu_compiled(x)),
            ("triton", lambda: triton_silu(x, o)),
        ]:
            ms = bench(fn)
            rows.append((f"silu_mul bf16 {R}x2x{D}", name, nbytes, ms, cms))
        print(f"triton silu_mul {R}: max abs err vs eager {err:.3g}", flush=True)
        del x, o
        torch.cuda.empty_cache()

    print(f"\npeers on {dev} (torch {torch.__version__}, triton {triton.__version__}); "
          "do_bench median, L2 cleared; copy = torch copy_ of the same bytes, same run")
    print(f"{'shape':<28} {'impl':<14} {'MB':>8} {'us':>9} {'GB/s':>8} {'copyGB/s':>9} {'ratio':>6}")
    for shape, name, nbytes, ms, cms in rows:
        gbs = nbytes / ms / 1e6
        cgbs = nbytes / cms / 1e6
        print(f"{shape:<28} {name:<14} {nbytes / 1e6:8.1f} {ms * 1e3:9.1f} {gbs:8.0f} {cgbs:9.0f} "
              f"{gbs / cgbs:6.3f}")


if __name__ == "__main__":
    main()
