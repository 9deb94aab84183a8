"""The measuring half of llama.py (a Llama-style decoder end to end): each variant's entry on
a shape (its first call, check and CUDA graph), the interleaved timing rounds, and the per-op and
per-kernel breakdowns of one step. torch is imported inside the functions (the tests import this
module without it)."""
import random
import statistics
import time


def rel_err(out, ref):
    o, r = out.float(), ref.float()
    if not bool(o.isfinite().all()):
        return float("inf")
    return float((o - r).norm() / r.norm().clamp_min(1e-30))


class Entry:
    """One variant on one shape: its eager callable, its graph, its check and setup time."""

    def __init__(self, variant, shape, eager, pre=None, calls=20):
        self.variant, self.shape, self.eager, self.pre = variant, shape, eager, pre or (lambda: 0)
        self.calls = calls  # steps per timed batch (graph replays; half as many eager calls)
        self.graph, self.err, self.graph_err, self.setup_s = None, None, None, 0.0
        self.failed = False
        self.times = {"graph": [], "eager": []}


def capture(fn):
    import torch
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(2):
            fn()
    torch.cuda.current_stream().wait_stream(s)
    torch.cuda.synchronize()
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        out = fn()
    return g, out


def first_call(entry, fn=None):
    """The first call (tunes or compiles), timed; fn: the same call made another way (op by op
    under a WallRecorder)."""
    import torch
    entry.pre()
    t0 = time.perf_counter()
    (fn or entry.eager)()
    torch.cuda.synchronize()
    entry.setup_s = time.perf_counter() - t0


class WallRecorder:
    """Host wall seconds per op name of one call (the device synchronised around each op): where
    a first call's tuning time goes. seconds: every layer's calls of the op; first: its first call
    alone (the one that tunes its key). mark(name), when given, runs before an op's first call
    (llama.py prints a line there, so the engine's per-key log lines that follow are placed)."""

    def __init__(self, mark=None):
        self.seconds, self.first, self.mark = {}, {}, mark

    def __call__(self, name, fn, *args):
        import torch
        torch.cuda.synchronize()
        first = name not in self.first
        if first and self.mark is not None:
            self.mark(name)
        t0 = time.perf_counter()
        out = fn(*args)
        torch.cuda.synchronize()
        dt = time.perf_counter() - t0
        self.seconds[name] = self.seconds.get(name, 0.0) + dt
        if first:
            self.first[name] = dt
        return out


def copy_rate(nbytes=2 << 30, reps=10):
    """The device's copy rate: bytes read + written per second by a device-to-device copy of
    nbytes (torch's copy_), median of reps; the floor a step's bytes are compared with."""
    import torch
    bufs = [torch.empty(nbytes, dtype=torch.uint8, device="cuda") for _ in range(2)]

    def copy():
        bufs[1].copy_(bufs[0])
    for _ in range(3):
        copy()
    ms = [time_ms(copy, 1) for _ in range(reps)]
    bufs.clear()  # the memory back to the caching allocator, then to the device
    torch.cuda.empty_cache()
    med = statistics.median(ms)
    return {"bytes": nbytes, "reps": reps, "ms": med, "tbs": 2 * nbytes / (med * 1e-3) / 1e12,
            "all_ms": ms}


def set_up(entry, ref, tol, graphs, log):
    """After the first call: a second call checked against ref, a graph captured and its replay
    checked against the eager output. Returns the eager output."""
    import torch
    entry.pre()
    out = entry.eager().clone()
    torch.cuda.synchronize()
    entry.err = 0.0 if ref is None else rel_err(out, ref)
    ok = entry.err <= tol
    if graphs:
        try:
            entry.graph, gout = capture(entry.eager)
            entry.graph.replay()
            torch.cuda.synchronize()
            entry.graph_err = rel_err(gout, out)
        except Exception as e:  # noqa: BLE001  (a variant that cannot be captured runs eager)
            entry.graph = None
            log(f"  {entry.variant} {entry.shape}: no graph ({str(e).splitlines()[0][:100]})")
    log(f"  {entry.variant:9s} {entry.shape:6s} first call {entry.setup_s:7.2f} s  rel err vs "
        f"torch {entry.err:.2e} {'ok' if ok else 'FAILED (tol %.0e)' % tol}  graph "
        + ("-" if entry.graph_err is None else f"{entry.graph_err:.1e}"))
    return out


def time_ms(fn, n):
    import torch
    s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    torch.cuda.synchronize()
    s.record()
    for _ in range(n):
        fn()
    e.record()
    e.synchronize()
    return s.elapsed_time(e) / n


def timing_rounds(entries, rounds, log, left_s=None):
    """rounds interleaved rounds; after 3, fewer when left_s() (the wall budget left) runs low."""
    rng = random.Random(0)
    t0 = time.perf_counter()
    for r in range(rounds):
        per_round = (time.perf_counter() - t0) / r if r else 0
        if r >= 3 and left_s is not None and left_s() < 2 * per_round + 30:
            log(f"  timing stopped after {r} rounds ({left_s():.0f} s of the budget left)")
            break
        order = list(entries)
        rng.shuffle(order)
        for en in order:
            n = en.calls
            if en.failed:
                continue
            try:
                en.pre()
                if en.graph is not None:
                    en.graph.replay()
                    en.times["graph"].append(time_ms(en.graph.replay, n))
                en.times["eager"].append(time_ms(en.eager, max(2, n // 2)))
            except Exception as e:  # noqa: BLE001  (dropped from later rounds, reported)
                en.failed = True
                log(f"  {en.variant} {en.shape}: timing FAILED {type(e).__name__}: "
                    f"{str(e).splitlines()[0][:160]}")
        log(f"  round {r + 1}/{rounds} done")


def rounds_done(entries, asked):
    """The timing rounds that ran (timing_rounds stops early when the budget runs low): the most
    any entry has; `asked` when none ran."""
    return max((max(len(e.times["graph"]), len(e.times["eager"])) for e in entries),
               default=0) or asked


class OpRecorder:
    """CUDA events around each op of one step (all enqueued behind a spin kernel)."""

    def __init__(self):
        self.marks = []

    def __call__(self, name, fn, *args):
        import torch
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record()
        out = fn(*args)
        e.record()
        self.marks.append((name, s, e))
        return out


def op_breakdown(step, pre, layers):
    """µs per layer per op of one eager step (step(rec) runs it, rec wrapping each op), device time
    only (the host enqueues the whole step behind a spin kernel, so no op waits for its launch).
    Median of 5 gated steps."""
    import torch
    pre()
    spin = 200_000_000
    per = []
    for _ in range(5):
        for _ in range(4):
            rec = OpRecorder()
            torch.cuda.synchronize()
            torch.cuda._sleep(spin)
            gate = torch.cuda.Event()
            gate.record()
            step(rec)
            caught_up = gate.query()
            torch.cuda.synchronize()
            if not caught_up:
                break
            spin *= 2
        tot = {}
        for name, s, e in rec.marks:
            tot[name] = tot.get(name, 0.0) + s.elapsed_time(e) * 1e3
        per.append(tot)
    return {k: statistics.median(p[k] for p in per) / (1 if k == "norm" else layers)
            for k in per[0]}


def kernel_table(fn, steps=3):
    """(rows, seq) of `steps` calls by torch.profiler: rows = (name, us per step, launches per
    step) of every kernel, largest first; seq = (name, us) of every kernel, copy and memset in
    launch order (from the profiler's trace; [] where it cannot be read), which llama_layers.py
    cuts into the step's layers."""
    import torch
    from torch.profiler import ProfilerActivity, profile
    fn()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(steps):
            fn()
        torch.cuda.synchronize()
    rows = []
    for ev in prof.key_averages():
        t = getattr(ev, "self_device_time_total", None)
        if t is None:
            t = getattr(ev, "self_cuda_time_total", 0)
        if t > 0:
            rows.append((ev.key, t / steps, ev.count // steps))
    return sorted(rows, key=lambda r: -r[1]), _trace_sequence(prof)


def _trace_sequence(prof):
    """The device activities of a profile in start order, (name, us), from its Chrome trace."""
    import json
    import os
    import tempfile
    fd, path = tempfile.mkstemp(suffix=".json")
    os.close(fd)
    try:
        prof.export_chrome_trace(path)
        with open(path) as f:
            events = json.load(f).get("traceEvents", [])
    except Exception:  # noqa: BLE001  (the sequence is extra: the table stands without it)
        return []
    finally:
        os.remove(path)
    dev = [e for e in events if e.get("ph") == "X" and
           e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset")]
    dev.sort(key=lambda e: float(e.get("ts", 0)))
    return [(str(e.get("name", "?")), float(e.get("dur", 0))) for e in dev]
