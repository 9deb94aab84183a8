"""y = a * x + y as a Triton user writes a tuned kernel (README.md shows this file).
    python axpy.py          the GPU, with torch tensors
    python axpy.py --sim    no GPU: the simulated backend, numpy arrays"""
import sys

import numpy as np

import ktune

SIM = "--sim" in sys.argv
if SIM:
    ktune.set_options(backend="sim")


def sim_run(launch):  # the simulated backend runs no device code: this stands in for the kernel
    n, a = launch.arg(0), launch.arg(1)
    x, y = launch.array(2, np.float32, n), launch.array(3, np.float32, n)
    y[:] = a * x + y


@ktune.autotune(configs=[ktune.Config({"BLOCK": b}, num_warps=w) for b in (128, 256, 512) for w in (2, 4)],
                key=["pow2(n)"], restore_value=["y"], warmup=2, rep=10)
@ktune.jit(grid="cdiv(n, BLOCK)", block="num_warps * 32", sim_run=sim_run,
           sim_cost=lambda launch: 0.01 + abs(launch.knob("BLOCK") - 256) * 1e-5)
def axpy(n: "i64", a: "f32", x: "ptr", y: "ptr"):
    """#include "prelude.cuh"
    KTUNE_KERNEL void axpy(long long n, float a, const float* x, float* y) {
      for (long long i = (long long)ktune::bid_x() * BLOCK + ktune::tid_x();
           i < ((long long)ktune::bid_x() + 1) * BLOCK && i < n; i += num_warps * 32)
        y[i] = a * x[i] + y[i];
    }"""


n = 1 << 12
if SIM:
    x, y = np.random.rand(n).astype(np.float32), np.random.rand(n).astype(np.float32)
else:
    import torch
    x, y = torch.randn(n, device="cuda"), torch.randn(n, device="cuda")
expect = 2.0 * x + y
axpy(n, 2.0, x, y)  # torch tensors: torch's current stream; the first call per key tunes
assert np.allclose(y, expect) if SIM else torch.allclose(y, expect)
print(axpy.report(n, 2.0, x, y)["winner"])  # e.g. "BLOCK=256,num_warps=4"
