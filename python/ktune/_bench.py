"""do_bench: the engine's benchmarking method (bench/ and autotune/benchmarker) for a Python
callable: warm-up and measurement budgets in ms, the run count estimated from a few calls, the
last-level cache flushed before every timed run, device events, median with 0.2/0.8 quantiles.
Device timing needs torch on a GPU; elsewhere (the simulated backend, CPU code) host time is used
and the result says so in stats["timer"]."""
import math
import statistics
import sys
import time


def _torch_cuda():
    t = sys.modules.get("torch")
    if t is not None and t.cuda.is_available():
        return t
    return None


def _quantile(sorted_ms, q):
    i = q * (len(sorted_ms) - 1)
    lo, hi = math.floor(i), math.ceil(i)
    return sorted_ms[lo] + (sorted_ms[hi] - sorted_ms[lo]) * (i - lo)


def _device_times(torch, fn, warmup, rep, min_runs):
    props = torch.cuda.get_device_properties(torch.cuda.current_device())
    l2 = getattr(props, "L2_cache_size", 0) or 64 << 20
    flush = torch.empty(2 * l2 // 4, dtype=torch.int32, device="cuda")
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    fn()
    torch.cuda.synchronize()
    start.record()
    for _ in range(5):
        flush.zero_()
        fn()
    end.record()
    torch.cuda.synchronize()
    per = max(start.elapsed_time(end) / 5, 1e-6)
    for _ in range(max(1, int(warmup / per))):
        fn()
    n = max(min_runs, int(rep / per))
    starts = [torch.cuda.Event(enable_timing=True) for _ in range(n)]
    ends = [torch.cuda.Event(enable_timing=True) for _ in range(n)]
    for s, e in zip(starts, ends):
        flush.zero_()
        s.record()
        fn()
        e.record()
    torch.cuda.synchronize()
    return [s.elapsed_time(e) for s, e in zip(starts, ends)], "device_events"


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
    return out, "host"


def do_bench(fn, warmup=25, rep=100, quantiles=None, return_mode="median", min_runs=10,
             return_stats=False):
    """Times fn() in ms. Returns the median (or return_mode "min"/"max"/"mean"), the given
    quantiles as a list (triton.testing.do_bench's convention), or with return_stats=True a dict:
    median_ms, p20_ms, p80_ms, min_ms, mean_ms, std_ms, runs, timer."""
    torch = _torch_cuda()
    if torch is not None:
        times, timer = _device_times(torch, fn, warmup, rep, min_runs)
    else:
        times, timer = _host_times(fn, warmup, rep, min_runs)
    s = sorted(times)
    stats = {"median_ms": _quantile(s, 0.5), "p20_ms": _quantile(s, 0.2),
             "p80_ms": _quantile(s, 0.8), "min_ms": s[0], "max_ms": s[-1],
             "mean_ms": statistics.fmean(s), "std_ms": statistics.pstdev(s), "runs": len(s),
             "timer": timer}
    if return_stats:
        return stats
    if quantiles is not None:
        return [_quantile(s, q) for q in quantiles]
    return stats[return_mode + "_ms"]
