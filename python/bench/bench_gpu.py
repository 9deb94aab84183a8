"""ktune from Python on a GPU, measured against same-run peers (prints a short table).

  1. Host cost of a tuned call: a tuned @ktune.autotune kernel called from Python, the binding
     alone (ktune._ktune.Kernel, no Python wrapper), a Triton kernel launch and a torch op, all on
     1-element problems. Time per call = wall time of a batch of calls small enough never to fill
     the launch queue (the GPU is not the bottleneck), median of many batches; the GPU work is
     synchronised outside the timed region.
  2. ktune.ops.rms_norm / silu_mul bandwidth (ktune.do_bench: device events, L2 flushed) as a
     fraction of the same run's copy bandwidth (tensor.copy_ of the same bytes, read + write),
     with torch's F.rms_norm / eager silu*mul as peers.
  3. ktune.ops.gemm against torch.matmul on the LLM suite (`ktune tune gemm --suite llm`:
     nn.Linear shapes, B = W.t()), bf16; the first ktune call per shape tunes it (not timed).
Usage: python3 bench_gpu.py [--quick]   (KTUNE_CACHE_DIR: keep tuned GEMM keys between runs)"""
import statistics
import sys
import time

import torch
import torch.nn.functional as F

import ktune

SAXPY = r"""
#include "prelude.cuh"
KTUNE_KERNEL void bench_saxpy(long long n, float a, const float* x, float* y) {
  long long i = (long long)ktune::bid_x() * ktune::bdim_x() + ktune::tid_x();
  if (i < n) y[i] = a * x[i] + y[i];
}
"""
LLM = [("prefill qkv", 4096, 6144, 4096), ("prefill o", 4096, 4096, 4096),
       ("prefill gate_up", 4096, 28672, 4096), ("prefill down", 4096, 4096, 14336),
       ("decode qkv", 16, 6144, 4096), ("decode o", 16, 4096, 4096),
       ("decode gate_up", 16, 28672, 4096), ("decode down", 16, 4096, 14336)]


def per_call_us(fn, batch=200, batches=60):
    """Median host wall time per call over batches (sync between batches, not timed)."""
    for _ in range(3 * batch):
        fn()
    torch.cuda.synchronize()
    out = []
    for _ in range(batches):
        t0 = time.perf_counter()
        for _ in range(batch):
            fn()
        out.append((time.perf_counter() - t0) / batch * 1e6)
        torch.cuda.synchronize()
    return statistics.median(out), sorted(out)[len(out) // 5], sorted(out)[4 * len(out) // 5]


def triton_peer():
    try:
        import triton
        import triton.language as tl
    except ImportError:
        return None

    @triton.jit
    def add_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        m = offs < n
        tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=m) + tl.load(y_ptr + offs, mask=m),
                 mask=m)

    x = torch.ones(1, device="cuda")
    y = torch.zeros(1, device="cuda")
    return lambda: add_kernel[(1,)](x, y, 1, BLOCK=128)


def call_overhead(rows):
    saxpy = ktune.autotune(space={"BLOCK": [64, 128, 256]}, key=["pow2(n)"], warmup=1, rep=5)(
        ktune.kernel(SAXPY, "bench_saxpy", grid="cdiv(n, BLOCK)", block="BLOCK"))
    x = torch.ones(1, device="cuda")
    y = torch.zeros(1, device="cuda")
    saxpy(1, 1.0, x, y)  # tunes
    raw, args, s = saxpy._k, (1, 1.0, x.data_ptr(), y.data_ptr()), 0
    rows.append(("tuned call: @ktune.autotune kernel", *per_call_us(lambda: saxpy(1, 1.0, x, y))))
    rows.append(("  binding only (ktune._ktune.Kernel)", *per_call_us(lambda: raw(args, s))))
    tp = triton_peer()
    if tp:
        rows.append(("peer: Triton kernel launch", *per_call_us(tp)))
    z = torch.empty(1, device="cuda")
    rows.append(("peer: torch.add(x, y, out=z)", *per_call_us(lambda: torch.add(x, y, out=z))))


def bandwidth(quick):
    rows = []
    shapes = [(4096, 4096)] if quick else [(4096, 4096), (16384, 4096), (4096, 14336), (32768, 8192)]
    for r, c in shapes:
        x = torch.randn(r, c, device="cuda", dtype=torch.bfloat16)
        w = torch.randn(c, device="cuda", dtype=torch.bfloat16)
        y = torch.empty_like(x)
        nbytes = 2 * x.numel() * 2
        copy = ktune.do_bench(lambda: y.copy_(x), warmup=5, rep=40)
        ktune.ops.rms_norm(x, w, 1e-6)  # tunes
        t = ktune.do_bench(lambda: ktune.ops.rms_norm(x, w, 1e-6), warmup=5, rep=40)
        tt = ktune.do_bench(lambda: F.rms_norm(x, (c,), w, 1e-6), warmup=5, rep=40) \
            if hasattr(F, "rms_norm") else float("nan")
        rows.append((f"rms_norm {r}x{c}", nbytes / t / 1e6, nbytes / copy / 1e6, copy / t,
                     copy / tt))
        d = c // 2
        sbytes = 3 * r * d * 2
        ktune.ops.silu_mul(x)
        t = ktune.do_bench(lambda: ktune.ops.silu_mul(x), warmup=5, rep=40)
        te = ktune.do_bench(lambda: F.silu(x[:, :d]) * x[:, d:], warmup=5, rep=40)
        rows.append((f"silu_mul {r}x{d}", sbytes / t / 1e6, nbytes / copy / 1e6, copy / t * sbytes
                     / nbytes, copy / te * sbytes / nbytes))
    return rows


def gemms(quick):
    rows = []
    for name, m, n, k in (LLM[:2] + LLM[4:6] if quick else LLM):
        a = torch.randn(m, k, device="cuda", dtype=torch.bfloat16)
        w = torch.randn(n, k, device="cuda", dtype=torch.bfloat16)
        t0 = time.perf_counter()
        ktune.ops.gemm(a, w.t())  # tunes the key (or finds it in the database)
        torch.cuda.synchronize()
        tune_s = time.perf_counter() - t0
        tk = ktune.do_bench(lambda: ktune.ops.gemm(a, w.t()), warmup=10, rep=50)
        tt = ktune.do_bench(lambda: torch.matmul(a, w.t()), warmup=10, rep=50)
        tk2 = ktune.do_bench(lambda: ktune.ops.gemm(a, w.t()), warmup=10, rep=50)  # ABA
        tk = min(tk, tk2)
        fl = 2 * m * n * k
        # TFLOP/s: FLOP per ms / 1e9
        rows.append((f"{name} {m}x{n}x{k}", fl / tk / 1e9, fl / tt / 1e9, tt / tk, tune_s))
    return rows


def main():
    quick = "--quick" in sys.argv
    print(f"device: {torch.cuda.get_device_name()}  torch {torch.__version__}  ktune "
          f"{ktune.__version__}")
    rows = []
    call_overhead(rows)
    print("\n== host cost per call (us; median, p20, p80 over batches of 200)   target <= 5 us")
    for name, med, p20, p80 in rows:
        print(f"  {name:40s} {med:7.2f}  [{p20:.2f}, {p80:.2f}]")
    print("\n== row-wise ops through Python, bf16 (GB/s read+write; ratio to same-run copy)"
          "   target >= 0.95")
    print(f"  {'shape':24s} {'ktune GB/s':>10s} {'copy GB/s':>10s} {'ktune/copy':>10s} "
          f"{'torch/copy':>10s}")
    for name, bw, cbw, ratio, peer in bandwidth(quick):
        print(f"  {name:24s} {bw:10.0f} {cbw:10.0f} {ratio:10.3f} {peer:10.3f}")
    print("\n== GEMM bf16 NT (TFLOP/s), ktune.ops.gemm vs torch.matmul   target ratio >= 1.00")
    print(f"  {'shape':32s} {'ktune':>8s} {'torch':>8s} {'ratio':>7s} {'tune s':>7s}")
    for name, tk, tt, ratio, tune_s in gemms(quick):
        print(f"  {name:32s} {tk:8.1f} {tt:8.1f} {ratio:7.3f} {tune_s:7.1f}")


if __name__ == "__main__":
    main()
