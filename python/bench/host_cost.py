"""Host cost per call from Python with the GPU kept from being the bottleneck (the method of
bench/host_cost_bench.cc, see its header comment).

Before each batch (BATCH calls, below the launch queue's depth) a spin kernel is launched
(torch.cuda._sleep, sized to outlast the batch several times over) and an event recorded behind
it; the batch is enqueued behind the spin, so no call waits for the device; the calling thread's
CPU time (time.thread_time_ns) and the wall time (perf_counter_ns) of the batch are read; then the
event is queried: a batch the GPU caught up with (event complete) is dropped and counted. Variants
run in rounds, each round in a freshly shuffled order (seeded); ROUND_SETS sets of rounds, each
summarised by its median, give the spread between sets; the headline is the median over every
round with a distribution-free 95% interval (binomial order statistics, as fair_timing.h), and
the per-round ratio to the raw cuLaunchKernel peer the same way."""
import ctypes
import math
import random
import statistics
import time

import torch

BATCH = 32

# A kernel that does nothing with two parameters, in PTX for the driver to JIT: the raw launch
# peer needs no compiler and no ktune module.
_NOOP_PTX = b"""
.version 7.0
.target sm_80
.address_size 64
.visible .entry bench_noop2(.param .u64 p, .param .u64 n)
{
  ret;
}
"""


def _binom_cdf_half(n, j):
    return sum(math.comb(n, i) for i in range(j + 1)) / 2.0 ** n


def median_interval(xs, confidence=0.95):
    """(median, lo, hi, n): lo/hi the order statistics around the median with >= confidence
    coverage under binomial(n, 1/2); min/max when there are too few samples for it."""
    s = sorted(xs)
    n = len(s)
    if n == 0:
        return float("nan"), float("nan"), float("nan"), 0
    k = 0
    for c in range(1, n // 2 + 1):
        if 2.0 * _binom_cdf_half(n, c - 1) <= 1.0 - confidence:
            k = c
        else:
            break
    lo, hi = (s[k - 1], s[n - k]) if k > 0 else (s[0], s[-1])
    return statistics.median(s), lo, hi, n


def raw_launch(release_gil=False):
    """cuLaunchKernel of the no-op kernel (arguments packed once, torch's current stream) through
    ktune._ktune.RawLaunch: a vectorcall straight into the driver, the least a launch from Python
    costs. The ratios' denominator."""
    from ktune import _ktune
    torch.cuda.synchronize()  # the primary context is current on this thread
    buf = torch.zeros(16, device="cuda")
    r = _ktune.RawLaunch(_NOOP_PTX, "bench_noop2", buf.data_ptr(), 1,
                         torch.cuda.current_stream().cuda_stream, release_gil=release_gil)
    # A lambda as every variant's call is one (like with like); its default keeps buf alive.
    return lambda _buf=buf: r()


class CtypesLaunch:
    """The same launch through ctypes: about a microsecond more per call (ctypes converts 11
    arguments on every call), what a pure-Python raw launch costs."""

    def __init__(self):
        cuda = ctypes.CDLL("libcuda.so.1")
        mod, fn = ctypes.c_void_p(), ctypes.c_void_p()
        torch.cuda.synchronize()  # the primary context is current on this thread
        if cuda.cuModuleLoadData(ctypes.byref(mod), ctypes.c_char_p(_NOOP_PTX)) != 0:
            raise RuntimeError("cuModuleLoadData of the no-op PTX failed")
        if cuda.cuModuleGetFunction(ctypes.byref(fn), mod, b"bench_noop2") != 0:
            raise RuntimeError("cuModuleGetFunction failed")
        launch = cuda.cuLaunchKernel
        launch.argtypes = [ctypes.c_void_p] + [ctypes.c_uint] * 7 + [ctypes.c_void_p] * 3
        launch.restype = ctypes.c_int
        self._buf = torch.zeros(16, device="cuda")
        self._p = ctypes.c_uint64(self._buf.data_ptr())
        self._n = ctypes.c_uint64(1)
        self._params = (ctypes.c_void_p * 2)(ctypes.addressof(self._p), ctypes.addressof(self._n))
        self._launch, self._fn = launch, fn
        self._stream = torch.cuda.current_stream().cuda_stream

    def __call__(self):
        return self._launch(self._fn, 1, 1, 1, 32, 1, 1, 0, self._stream, self._params, None)


class Gate:
    """The spin kernel and the event behind it."""

    def __init__(self, spin_ms):
        self.event = torch.cuda.Event()
        # Cycles per ms of torch.cuda._sleep, measured: the SM clock is not read anywhere.
        torch.cuda._sleep(1000)
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        torch.cuda.synchronize()
        s.record()
        torch.cuda._sleep(10_000_000)
        e.record()
        torch.cuda.synchronize()
        self.cycles = int(10_000_000 / max(s.elapsed_time(e), 1e-3) * spin_ms)
        self.spin_ms = spin_ms
        self.caught_up = 0

    def batch(self, fn, n):
        """(CPU ns per call, wall ns per call) of n calls behind the spin, or None when the GPU
        caught up before the batch was enqueued."""
        torch.cuda._sleep(self.cycles)
        self.event.record()
        c0, w0 = time.thread_time_ns(), time.perf_counter_ns()
        for _ in range(n):
            fn()
        c1, w1 = time.thread_time_ns(), time.perf_counter_ns()
        gated = not self.event.query()
        torch.cuda.synchronize()
        if not gated:
            self.caught_up += 1
            return None
        return (c1 - c0) / n, (w1 - w0) / n


RAW = "raw"  # the key of the raw cuLaunchKernel variant, the ratios' denominator


def gated_table(variants, rounds=20, round_sets=3, warmup=3, spin_ms=2.0, seed=12345):
    """variants: [(key, label, fn)]. Returns (rows, gate): rows of (key, label, cpu ns (med, lo,
    hi, n), wall ns (med, lo, hi, n), the sets' cpu medians, cpu ratio to RAW (med, lo, hi, n))."""
    gate = Gate(spin_ms)
    for _ in range(warmup):
        for _, _, fn in variants:
            gate.batch(fn, BATCH)
    gate.caught_up = 0
    rng = random.Random(seed)
    cpu = {key: [] for key, _, _ in variants}  # per round, None when dropped
    wall = {key: [] for key, _, _ in variants}
    for _ in range(rounds * round_sets):
        order = list(range(len(variants)))
        rng.shuffle(order)
        for i in order:
            key, _, fn = variants[i]
            r = gate.batch(fn, BATCH)
            cpu[key].append(r[0] if r else None)
            wall[key].append(r[1] if r else None)
    raw = cpu.get(RAW)
    rows = []
    for name, label, _ in variants:
        c = [x for x in cpu[name] if x is not None]
        w = [x for x in wall[name] if x is not None]
        sets = []
        for k in range(round_sets):
            part = [x for x in cpu[name][k * rounds:(k + 1) * rounds] if x is not None]
            sets.append(statistics.median(part) if part else float("nan"))
        ratio = (float("nan"),) * 3 + (0,)
        if raw is not None:
            ratio = median_interval([a / b for a, b in zip(cpu[name], raw)
                                     if a is not None and b is not None and b > 0])
        rows.append((name, label, median_interval(c), median_interval(w), sets, ratio))
    return rows, gate


def print_gated(rows, gate, rounds, round_sets):
    print(f"\n== host cost per call, GPU gated (us; {round_sets} sets x {rounds} shuffled rounds, "
          f"batch {BATCH} behind a {gate.spin_ms:.1f} ms spin; {gate.caught_up} batches dropped: "
          f"GPU caught up)   target <= 5 us (tuned call, CPU)")
    print(f"  {'variant':44s} {'CPU us [95% int]':>20s} {'wall us':>8s}  {'set medians':>17s}  "
          f"{'CPU x raw [int]':>19s}")
    for key, label, c, w, sets, r in rows:
        sm = "/".join(f"{x / 1e3:.2f}" for x in sets)
        print(f"  {label:44s} {c[0] / 1e3:6.2f} [{c[1] / 1e3:5.2f},{c[2] / 1e3:5.2f}] "
              f"{w[0] / 1e3:8.2f}  {sm:>17s}  {r[0]:6.2f} [{r[1]:.2f},{r[2]:.2f}]")
    for key, label, c, w, sets, r in rows:
        print(f"RESULT pyhostcost {key} cpu_ns {c[0]:.0f} {c[1]:.0f} {c[2]:.0f} {c[3]} "
              f"wall_ns {w[0]:.0f} x_raw {r[0]:.3f} {r[1]:.3f} {r[2]:.3f}")
