"""do_bench: the engine's benchmarking harness (autotune/benchmarker, through the public
Autotuner::benchmark) for a Python callable: warm-up and measurement budgets in ms, the run count
estimated from a few calls, the last-level cache flushed before every timed run, device events,
median with 0.2/0.8 quantiles — the same code that times tuning candidates in C++. The function
runs on torch's current stream of the tuner's device (the events are recorded there). On the
simulated backend the times are the simulated kernels' costs. Only where no device can be opened
(no GPU, backend "auto") are host clocks used instead; stats["timer"] says which."""
import math
import numbers
import statistics
import time

from . import _args, _tuners
from ._errors import InvalidArgument, Unavailable


def _quantile(sorted_ms, q):
    i = q * (len(sorted_ms) - 1)
    lo, hi = math.floor(i), math.ceil(i)
    return sorted_ms[lo] + (sorted_ms[hi] - sorted_ms[lo]) * (i - lo)


def _host_times(fn, warmup, rep, min_runs):
    t0 = time.perf_counter()
    fn()
    per = max((time.perf_counter() - t0) * 1e3, 1e-6)
    for _ in range(max(1, int(warmup / per))):
        fn()
    out = []
    for _ in range(max(min_runs, int(rep / per))):
        t0 = time.perf_counter()
        fn()
        out.append((time.perf_counter() - t0) * 1e3)
    return out


def _engine_stats(tuner, fn, warmup, rep, min_runs, flush):
    if flush not in ("memset", "read", None):
        raise InvalidArgument(f'do_bench: flush={flush!r}: expected "memset", "read" or None')
    getter = _args.stream_getter(tuner.backend)
    stream = getter(tuner.options()["device"]) if getter is not None else 0
    stats = tuner.benchmark(fn, float(warmup), float(rep), int(min_runs),
                            "none" if flush is None else flush, stream)
    stats["timer"] = "sim" if tuner.backend == "sim" else "device_events"
    return stats


def _host_stats(fn, warmup, rep, min_runs):
    s = sorted(_host_times(fn, warmup, rep, min_runs))
    return {"median_ms": _quantile(s, 0.5), "p20_ms": _quantile(s, 0.2),
            "p80_ms": _quantile(s, 0.8), "min_ms": s[0], "max_ms": s[-1],
            "mean_ms": statistics.fmean(s), "std_ms": statistics.pstdev(s), "runs": len(s),
            "samples_ms": s, "timer": "host"}


def do_bench(fn, warmup=25, rep=100, quantiles=None, return_mode="median", min_runs=10,
             return_stats=False, flush="read", tuner=None):
    """Times fn() in ms (triton.testing.do_bench's interface). Returns the median (or return_mode
    "min"/"max"/"mean"), the given quantiles as a list, or with return_stats=True a dict:
    median_ms, p20_ms, p80_ms, min_ms, max_ms, mean_ms, std_ms, runs, samples_ms (every run),
    timer ("device_events", "sim" or "host"). flush: the harness's L2 flush before every run:
    "read" (the engine's read kernel over 2x the L2, as candidates are timed: the cache is left
    full of clean lines; a memset on the simulated backend), "memset" (leaves dirty lines, whose
    write-back lands in the timed run) or None. `tuner` (a tuner, or a tuned kernel: its tuner;
    default ktune.get_tuner()) picks the device whose harness times it. On the simulated backend
    pass the kernel: each tuner simulates a device of its own, with its own clock."""
    _check_args(quantiles, return_mode)
    tuner = getattr(tuner, "tuner", tuner)
    if tuner is None:
        try:
            tuner = _tuners.get_tuner()
        except Unavailable:
            tuner = None
    stats = (_engine_stats(tuner, fn, warmup, rep, min_runs, flush) if tuner is not None
             else _host_stats(fn, warmup, rep, min_runs))
    if return_stats:
        return stats
    if quantiles is not None:
        s = sorted(stats["samples_ms"])
        return [_quantile(s, q) for q in quantiles]
    return stats[return_mode + "_ms"]


_MODES = ("median", "min", "max", "mean")


def _check_args(quantiles, return_mode):
    """The arguments do_bench reads after timing, checked before it: a bad one is a ktune
    InvalidArgument naming it, never an IndexError or KeyError from the statistics."""
    if return_mode not in _MODES:
        raise InvalidArgument(f"do_bench: return_mode={return_mode!r}: expected one of {_MODES}")
    if quantiles is None:
        return
    try:
        qs = list(quantiles)
    except TypeError:
        raise InvalidArgument(f"do_bench: quantiles={quantiles!r}: expected a list of numbers "
                              "in [0, 1]") from None
    for q in qs:
        if isinstance(q, bool) or not isinstance(q, numbers.Real) or not 0 <= q <= 1:
            raise InvalidArgument(f"do_bench: quantile {q!r} is not a number in [0, 1]")
