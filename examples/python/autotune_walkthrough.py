"""ktune for a Triton user: the same @autotune / Config / key / do_bench workflow, with the kernel
written in CUDA/HIP C++ instead of Triton-language Python.

    python3 autotune_walkthrough.py          # the GPU, with torch tensors
    python3 autotune_walkthrough.py --sim    # no GPU: the simulated backend, numpy arrays

Triton                                  ktune
  @triton.jit def k(x_ptr, n, BLOCK:..)   @ktune.jit(grid=..., block=...) def k(x: "ptr", n: "i64")
  triton.Config({"BLOCK": 256},           ktune.Config({"BLOCK": 256}, num_warps=4)
                num_warps=4)                (knobs reach the source as -D BLOCK=256 -D num_warps=4)
  k[grid](...) with grid = lambda META    grid="cdiv(n, BLOCK)": an expression over the knobs and
                                            the integer arguments, evaluated per config by the engine
  key=["n"]                               key=["n"] (or "pow2(n)": one tuning per power of two)
  restore_value / reset_to_zero           the same (applied before every benchmark run)
  triton.testing.do_bench                 ktune.do_bench (the engine's harness: events, L2
                                            flush, quantiles)
  a kernel generated per config           source_fn=lambda config: (text, "cuda"|"ptx"|"llvm"|..)
Results go to the same tuning database and code-object store as the C++ API and the CLI:
`ktune db show axpy` lists what this script tuned, and the next run finds it (no tuning)."""
import sys

import numpy as np

import ktune

SIM = "--sim" in sys.argv
if SIM:
    ktune.set_options(backend="sim")


def sim_run(launch):
    """The simulated backend's stand-in for the kernel (the GPU compiles the docstring below)."""
    n, a = launch.arg(0), launch.arg(1)
    x, y = launch.array(2, np.float32, n), launch.array(3, np.float32, n)
    y[:] = a * x + y


def sim_cost(launch):  # simulated ms: BLOCK=256 with 4 warps is the fastest
    return 0.01 + abs(launch.knob("BLOCK") - 256) * 1e-5 + abs(launch.knob("num_warps") - 4) * 1e-4


@ktune.autotune(
    configs=[ktune.Config({"BLOCK": b}, num_warps=w) for b in (128, 256, 512, 1024)
             for w in (2, 4, 8) if b >= 32 * w],
    key=["pow2(n)"],
    restore_value=["y"],  # y += a*x: the benchmark runs must not leave their sums behind
    warmup=2, rep=10,
)
@ktune.jit(grid="cdiv(n, BLOCK)", block="num_warps * 32", sim_run=sim_run,
           sim_cost=sim_cost)
def axpy(n: "i64", a: "f32", x: "ptr", y: "ptr"):
    """
    #include "prelude.cuh"
    // One thread per BLOCK / (num_warps * warp_size) elements.
    KTUNE_KERNEL void axpy(long long n, float a, const float* x, float* y) {
      const int per = BLOCK / (num_warps * 32);
      long long base = (long long)ktune::bid_x() * BLOCK;
      for (int j = 0; j < per; ++j) {
        long long i = base + j * (num_warps * 32) + ktune::tid_x();
        if (i < n) y[i] = a * x[i] + y[i];
      }
    }
    """


# A code generator instead of one source: source_fn writes each config's module (here CUDA C++ with
# the block size baked into the text; PTX, LLVM IR or MLIR work the same way, see the README).
SCALE = """
#include "prelude.cuh"
KTUNE_KERNEL void scale(long long n, float a, float* x) {
  long long i = (long long)ktune::bid_x() * @BLOCK@ + ktune::tid_x();
  if (i < n) x[i] *= a;
}
"""


def scale_sim_run(launch):
    n, a = launch.arg(0), launch.arg(1)
    x = launch.array(2, np.float32, n)
    x[:] *= a


@ktune.autotune(space={"BLOCK": [128, 256, 512]}, key=["pow2(n)"], warmup=2, rep=10,
                restore_value=["x"],  # x *= a in place: every benchmark run starts from x
                source_fn=lambda config: (SCALE.replace("@BLOCK@", str(config["BLOCK"])), "cuda"))
@ktune.jit(grid="cdiv(n, BLOCK)", block="BLOCK", sim_run=scale_sim_run,
           sim_cost=lambda launch: 0.01 + abs(launch.block(0) - 256) * 1e-5)
def scale(n: "i64", a: "f32", x: "ptr"):
    pass  # no docstring: source_fn writes the modules


def main():
    n = 1 << 12 if SIM else 1 << 20  # the simulated kernel runs on the host: keep it small
    if SIM:
        x = np.random.rand(n).astype(np.float32)
        y = np.random.rand(n).astype(np.float32)
        expect = 2.0 * x + y
        axpy(n, 2.0, x, y)  # first call for this key: tunes, then runs the winner
        assert np.allclose(y, expect)
        scale(n, 0.5, y)
        assert np.allclose(y, 0.5 * expect)
    else:
        import torch
        x = torch.randn(n, device="cuda")
        y = torch.randn(n, device="cuda")
        expect = 2.0 * x + y
        axpy(n, 2.0, x, y)  # on torch's current stream
        torch.testing.assert_close(y, expect)
        scale(n, 0.5, y)
        torch.testing.assert_close(y, 0.5 * expect)
    # Every call after the first is a table lookup and a launch; timed on axpy's device by the
    # harness that timed the candidates (simulated times with --sim).
    ms = ktune.do_bench(lambda: axpy(n, 2.0, x, y), quantiles=[0.5, 0.2, 0.8], tuner=axpy)
    print("axpy median %.4f ms (p20 %.4f, p80 %.4f)" % tuple(ms))
    print("scale winner", scale.report(n, 0.5, y)["winner"])
    report = axpy.report(n, 2.0, x, y)
    print("key", axpy.key_of(n, 2.0, x, y), "winner", report["winner"],
          "of", len(report["candidates"]), "configs")
    print("database entries:", ktune.db.show("axpy"))
    # The tuned ops need no registration: ktune.ops.rms_norm / silu_mul / gemm (torch, GPU).


if __name__ == "__main__":
    main()
