"""Host cost of a tuned call from Python, on the simulated backend (no GPU needed).

The simulated launch of a kernel without a host function is cheap, so what is timed here is the
binding's and the engine's own host work: argument conversion, the stream, the key, the lookup.
Arguments are "fake tensors" (objects with data_ptr(), as torch tensors have) and Python scalars.
Prints ns per call (median of batches) for the tuned call (the C++ fast path), the Python path
every call took before it (still taken by keywords, numpy arrays and hooks) and the pieces.
Usage: PYTHONPATH=python python3 python/bench/bench_call_cpu.py [--batches N]"""
import statistics
import sys
import tempfile
import time

import ktune

SOURCE = r"""
#include "prelude.cuh"
KTUNE_KERNEL void cpu_saxpy(long long n, float a, const float* x, float* y) {}
"""


class FakeTensor:
    """What the binding reads from a torch tensor: data_ptr()."""

    def __init__(self, addr):
        self.addr = addr

    def data_ptr(self):
        return self.addr


def ns_per_call(fn, batch=2000, batches=31):
    for _ in range(batch):
        fn()
    out = []
    for _ in range(batches):
        t0 = time.perf_counter_ns()
        for _ in range(batch):
            fn()
        out.append((time.perf_counter_ns() - t0) / batch)
    return statistics.median(out), min(out)


def main():
    batches = int(sys.argv[sys.argv.index("--batches") + 1]) if "--batches" in sys.argv else 31
    ktune.set_options(backend="sim", warmup_ms=0.05, rep_ms=0.2, cache_dir=tempfile.mkdtemp())
    saxpy = ktune.autotune(space={"BLOCK": [64, 128, 256]}, key=["pow2(n)"])(
        ktune.kernel(SOURCE, "cpu_saxpy", grid="cdiv(n, BLOCK)", block="BLOCK"))
    t = ktune.get_tuner()
    # A simulated kernel with no host function and the default cost: the launch does nothing.
    ktune._ktune.register_sim_kernel(t, "cpu_saxpy", ["i64", "f32", "ptr", "ptr"], None, None)
    x, y = FakeTensor(t.alloc(64)), FakeTensor(t.alloc(64))
    saxpy(1, 1.0, x, y)  # tunes
    raw = saxpy._k
    args = (1, 1.0, x.addr, y.addr)
    rows = [
        ("tuned call, tensors (data_ptr)", lambda: saxpy(1, 1.0, x, y)),
        ("tuned call, tensors, stream=0", lambda: saxpy(1, 1.0, x, y, stream=0)),
        ("tuned call, int addresses", lambda: saxpy(1, 1.0, x.addr, y.addr)),
        ("Python path (_slow_call: the call before)", lambda: saxpy._slow_call(1, 1.0, x, y)),
        ("binding: Kernel(args, 0), ints", lambda: raw(args, 0)),
        ("piece: 2x data_ptr()", lambda: (x.data_ptr(), y.data_ptr())),
        ("piece: empty lambda", lambda: None),
    ]
    print(f"ktune {ktune.__version__} on the simulated backend: ns per call (median, min of "
          f"{batches} batches)")
    for name, fn in rows:
        med, lo = ns_per_call(fn, batches=batches)
        print(f"  {name:42s} {med:8.0f}  {lo:8.0f}")


if __name__ == "__main__":
    main()
