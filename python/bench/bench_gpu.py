"""ktune from Python on a GPU, measured against same-run peers (prints a short table).

  1. Host cost of a tuned call: a tuned @ktune.autotune kernel called from Python, the binding
     alone (the C++ call object, no Python wrapper), a raw cuLaunchKernel (ktune._ktune.RawLaunch,
     a vectorcall into the driver; and through ctypes, which converts its arguments per call), a
     Triton kernel launch and a torch op, all on 1-element problems. Headline: thread CPU time
     per call of batches of 32 enqueued behind a spin kernel (a batch the GPU caught up with is
     dropped), variants interleaved in shuffled rounds, median with a 95% interval and the ratio
     to the raw launch (host_cost.py, the method of bench/host_cost_bench.cc). Also the old
     table: wall time of back-to-back batches of 200 (the GPU's throughput for tiny kernels can
     bound it), with what the pieces of a call cost alone (the stream getter, data_ptr).
  2. ktune.ops.rms_norm / silu_mul bandwidth as a fraction of the same run's copy bandwidth
     (tensor.copy_ of the same bytes, read + write), five ways, so a shortfall can be placed:
       events: CUDA events around each call, L2 flushed before each run by READING a 2x-L2
               buffer (clean lines, as the C++ benches do), the op and the copy alternating run
               by run (as the C++ fair benches interleave), median, the whole loop enqueued
               behind a spin kernel so that no run waits for the host (the Python op's own
               launch cost is not timed) -- the headline;
       block:  the same, but 40 runs of the copy, then 40 of the op (the method until the
               fifth session);
       read:   ktune.do_bench(flush="read"): the engine's harness with its clean flush (its
               read kernel; the default, as tuning candidates are timed);
       memset: ktune.do_bench(flush="memset") (dirty lines whose write-back lands in the timed
               run; how candidates were timed before, what the first sessions reported);
       loop:   back-to-back Python calls, events around the whole loop / count: what a model's
               Python loop sees (launch cost included when it exceeds the kernel).
     with torch's F.rms_norm / eager silu*mul and torch.compile of the same function as peers,
     and the config the tuner chose for the shape.
  3. ktune.ops.gemm against torch.matmul and torch.compile (default mode; --max-autotune adds
     mode="max-autotune") on the 8 LLM-suite shapes (`ktune tune gemm --suite llm`: nn.Linear,
     B = W.t()), bf16; the first ktune call per shape tunes it (timed separately as "tune s").
  4. --only=llama: a Llama-3-8B-shaped decoder end to end (../examples/llama.py, its own tables:
     torch, TunableOp, torch.compile max-autotune and ktune.ops, decode and prefill tokens/s);
     the arguments after -- go to it. Not in the default set (about 6 minutes cold).
Usage: python3 bench_gpu.py [--quick] [--no-compile] [--max-autotune] [--only=call,bandwidth,gemm]
  (KTUNE_CACHE_DIR: keep tuned keys between runs; the whole run takes about 4 minutes cold)"""
import json
import statistics
import sys
import time

import torch
import torch.nn.functional as F

import host_cost
import ktune
from ktune import _ktune

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
RMS_SHAPES = [(4096, 4096), (4096, 14336), (32768, 8192)]
SILU_SHAPES = [(4096, 2048), (4096, 14336), (16384, 14336)]  # (rows, d): x is rows x 2d
GATED_ROUNDS, GATED_SETS = 20, 3  # host cost: rounds per set, sets


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
    """The call variants, timed two ways: GPU-gated thread CPU time (host_cost.py; the headline)
    and the old back-to-back wall clock (rows; the GPU's throughput for tiny kernels can bound
    it). Returns the gated rows and their gate."""
    saxpy = ktune.autotune(space={"BLOCK": [64, 128, 256]}, key=["pow2(n)"], warmup=1, rep=5)(
        ktune.kernel(SAXPY, "bench_saxpy", grid="cdiv(n, BLOCK)", block="BLOCK"))
    x = torch.ones(1, device="cuda")
    y = torch.zeros(1, device="cuda")
    saxpy(1, 1.0, x, y)  # tunes
    # The same kernel keyed on n exactly: its launch dims are computed once per key.
    exact = ktune.autotune(space={"BLOCK": [64, 128, 256]}, key=["n"], warmup=1, rep=5,
                           name="bench_saxpy_exact")(
        ktune.kernel(SAXPY, "bench_saxpy", grid="cdiv(n, BLOCK)", block="BLOCK"))
    exact(1, 1.0, x, y)  # tunes
    raw, args, s = saxpy._k, (1, 1.0, x.data_ptr(), y.data_ptr()), 0
    xp, yp = x.data_ptr(), y.data_ptr()
    z = torch.empty(1, device="cuda")
    # The rows below "tuned" remove one piece each: the stream getter (stream=), the two
    # data_ptr() calls (int addresses), the key's bucketing (exact key); raw_gil is the raw
    # launch with the GIL released around it (what a tuned call off its launch plan pays).
    variants = [("tuned", "tuned call: @ktune.autotune kernel", lambda: saxpy(1, 1.0, x, y)),
                ("tuned_stream", "  same, stream= given", lambda: saxpy(1, 1.0, x, y, stream=0)),
                ("tuned_ints", "  same, int addresses, stream= given",
                 lambda: saxpy(1, 1.0, xp, yp, stream=0)),
                ("tuned_exact", "  exact key (n), int addresses, stream=",
                 lambda: exact(1, 1.0, xp, yp, stream=0)),
                ("binding", "  binding only, int args (Kernel)", lambda: raw(args, s))]
    for key, label, make in ((host_cost.RAW, "peer: raw cuLaunchKernel (_ktune.RawLaunch)",
                              host_cost.raw_launch),
                             ("raw_gil", "  raw launch, GIL released around it",
                              lambda: host_cost.raw_launch(release_gil=True)),
                             ("raw_ctypes", "peer: raw cuLaunchKernel (ctypes)",
                              host_cost.CtypesLaunch)):
        try:
            variants.append((key, label, make()))
        except (OSError, RuntimeError, AttributeError) as e:
            print(f"  {label} unavailable: {e}")
    tp = triton_peer()
    if tp:
        variants.append(("triton", "peer: Triton kernel launch", tp))
    variants.append(("torch_add", "peer: torch.add(x, y, out=z)", lambda: torch.add(x, y, out=z)))
    for _, _, fn in variants:
        fn()
    torch.cuda.synchronize()
    gated = host_cost.gated_table(variants, rounds=GATED_ROUNDS, round_sets=GATED_SETS)
    for _, label, fn in variants:
        rows.append((label, *per_call_us(fn)))
    # The pieces alone (no launch): what a call spends before the engine.
    get = torch._C._cuda_getCurrentRawStream
    rows.append(("  piece: raw stream getter", *per_call_us(lambda: get(0), batch=1000)))
    rows.append(("  piece: torch.cuda.current_stream()",
                 *per_call_us(lambda: torch.cuda.current_stream(), batch=1000)))
    rows.append(("  piece: 2x tensor.data_ptr()",
                 *per_call_us(lambda: (x.data_ptr(), y.data_ptr()), batch=1000)))
    rows.append(("  piece: empty Python lambda", *per_call_us(lambda: None, batch=1000)))
    return gated


class Timer:
    """Device times of a callable: per-run events after a clean (read) L2 flush, and a loop.

    The per-run methods enqueue their whole loop behind a spin kernel (host_cost.Gate's): when
    the host enqueues a run more slowly than the GPU runs it (a Python op with its checks and
    allocation, on a busy host), the GPU would otherwise wait between the start event and the
    op's launch, and that wait would be timed as the op's. Seen (dev/pair_probe.py): single
    rounds of the small shapes read 0.79-0.94 of copy, the op's median up to 5.6 us longer, at
    constant clocks. A loop the GPU still caught up with is timed again (_gated)."""

    SPIN_MS_PER_RUN = 0.25  # host time allowed per run enqueued behind the spin

    def __init__(self):
        l2 = getattr(torch.cuda.get_device_properties(0), "L2_cache_size", 0) or 64 << 20
        self.flush_buf = torch.ones(2 * l2 // 4, dtype=torch.float32, device="cuda")
        self.sink = torch.empty((), dtype=torch.float32, device="cuda")
        self.gate = host_cost.Gate(1.0)  # cycles: one ms of spin
        self.caught_up = 0

    def flush(self):
        torch.sum(self.flush_buf, dim=0, out=self.sink)  # reads: L2 ends up full of clean lines

    def _gated(self, runs):
        """[(which, start, end)] of the runs (which, fn) enqueued behind a spin of
        SPIN_MS_PER_RUN ms per run, each after a flush. A loop the GPU caught up with (the spin
        ended before the last run was enqueued) is timed again behind twice the spin, up to three
        times; each such loop is counted in caught_up."""
        spin_ms = self.SPIN_MS_PER_RUN * len(runs)
        for _ in range(3):
            ev = [(which, torch.cuda.Event(enable_timing=True),
                   torch.cuda.Event(enable_timing=True)) for which, _ in runs]
            torch.cuda.synchronize()
            torch.cuda._sleep(int(self.gate.cycles * spin_ms))
            self.gate.event.record()
            for (_, fn), (_, s, e) in zip(runs, ev):
                self.flush()
                s.record()
                fn()
                e.record()
            caught_up = self.gate.event.query()
            torch.cuda.synchronize()
            if not caught_up:
                break
            self.caught_up += 1
            spin_ms *= 2
        return ev

    def kernel_ms(self, fn, runs=40):
        fn()
        ev = self._gated([(0, fn)] * runs)
        return statistics.median(s.elapsed_time(e) for _, s, e in ev)

    def pair_ms(self, peer, fn, runs=40):
        """(peer ms, fn ms): per-run events after the flush, the two alternating run by run (the
        order flipped every other run), as the C++ fair benches interleave a kernel with its
        peer: a drift of the device over the measurement reaches both alike."""
        peer()
        fn()
        ev = self._gated([(which, peer if which == 0 else fn) for i in range(runs)
                          for which in ((0, 1) if i % 2 == 0 else (1, 0))])
        t = ([], [])
        for which, s, e in ev:
            t[which].append(s.elapsed_time(e))
        return statistics.median(t[0]), statistics.median(t[1])

    @staticmethod
    def loop_ms(fn, calls=50, rounds=5):
        fn()
        out = []
        for _ in range(rounds):
            s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            torch.cuda.synchronize()
            s.record()
            for _ in range(calls):
                fn()
            e.record()
            torch.cuda.synchronize()
            out.append(s.elapsed_time(e) / calls)
        return statistics.median(out)

    def all4(self, fn):
        return (self.kernel_ms(fn), ktune.do_bench(fn, warmup=5, rep=40, flush="read"),
                ktune.do_bench(fn, warmup=5, rep=40, flush="memset"), self.loop_ms(fn))


def compiled(fn, mode=None):
    try:
        return torch.compile(fn, dynamic=False, mode=mode)
    except Exception as e:  # noqa: BLE001  (a peer that cannot compile is reported, not fatal)
        print(f"  torch.compile unavailable: {e}")
        return None


def _report(report, *args):
    """The key's selection (report: _ktune.rmsnorm_report / silu_mul_report, args[0] the tuner)
    with its database entry's candidates, or the error."""
    try:
        r = json.loads(report(*args))
    except Exception as e:  # noqa: BLE001  (a missing report is shown, not fatal)
        return {"error": str(e).splitlines()[0][:60]}
    try:  # the database entry holds every candidate's timing
        r["candidates"] = json.loads(args[0].report(r["family"], r["key"])).get("candidates", [])
    except Exception:  # noqa: BLE001
        pass
    return r


def _retune(report, *args):
    """Drops the key's database entry (report and args as _report's) so that the next call tunes
    it with this build's harness: the database does not record how a winner was timed."""
    try:
        r = json.loads(report(*args))
        if r.get("origin") == "database":
            args[0].remove_key(r["family"], r["key"])
    except Exception as e:  # noqa: BLE001  (then the entry is kept; the config column shows it)
        print(f"  could not drop the database entry: {str(e).splitlines()[0][:80]}")


def _winner(r):
    if "error" in r:
        return f"? ({r['error']})"
    return f"{r.get('winner', '?')} ({r.get('origin', '?')})"


def _top(r, nbytes, copy_bytes, copy_ms, n=3):
    """The n fastest candidates of the tuning run as "config: ratio to copy", their medians
    taken by the engine's harness, as the copy's copy_ms (do_bench, same flush)."""
    ok = sorted((c for c in r.get("candidates", []) if c.get("status") == "ok" and
                 c.get("median_ms", 0) > 0), key=lambda c: c["median_ms"])[:n]
    return ", ".join(f"{c['config']}: {(nbytes / c['median_ms']) / (copy_bytes / copy_ms):.3f}"
                     for c in ok)


def bandwidth(quick, use_compile):
    timer = Timer()
    out = []
    torch_rms = (lambda x, w: F.rms_norm(x, (x.shape[-1],), w, 1e-6)) \
        if hasattr(F, "rms_norm") else None
    def eager_silu(x):
        d = x.shape[-1] // 2
        return F.silu(x[..., :d]) * x[..., d:]
    def ref_rms(x, w):
        xf = x.float()
        return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + 1e-6) * w.float()).to(x.dtype)
    comp_rms = compiled(ref_rms) if use_compile else None
    comp_silu = compiled(eager_silu) if use_compile else None
    for r, c in (RMS_SHAPES[:2] if quick else RMS_SHAPES):
        x = torch.randn(r, c, device="cuda", dtype=torch.bfloat16)
        w = torch.randn(c, device="cuda", dtype=torch.bfloat16)
        y = torch.empty_like(x)
        nbytes = 2 * x.numel() * 2
        _retune(_ktune.rmsnorm_report, ktune.ops._tuner(x), 2, r, c)
        ktune.ops.rms_norm(x, w, 1e-6)  # tunes
        cfg = _report(_ktune.rmsnorm_report, ktune.ops._tuner(x), 2, r, c)
        peers = [("F.rms_norm", (lambda: torch_rms(x, w)) if torch_rms else None),
                 ("compile", (lambda: comp_rms(x, w)) if comp_rms else None)]
        out.append(_measure(timer, f"rms_norm {r}x{c}", nbytes, nbytes, lambda: y.copy_(x),
                            lambda: ktune.ops.rms_norm(x, w, 1e-6), peers, cfg))
    for r, d in (SILU_SHAPES[:2] if quick else SILU_SHAPES):
        x = torch.randn(r, 2 * d, device="cuda", dtype=torch.bfloat16)
        # The copy peer moves the same bytes as the op (read 2d + write d per row = 3d).
        src = torch.empty(r * 3 * d // 2, device="cuda", dtype=torch.bfloat16)
        dst = torch.empty_like(src)
        sbytes = 3 * r * d * 2
        _retune(_ktune.silu_mul_report, ktune.ops._tuner(x), 2, r, d)
        ktune.ops.silu_mul(x)  # tunes
        cfg = _report(_ktune.silu_mul_report, ktune.ops._tuner(x), 2, r, d)
        # The op's own traffic without its math: torch.add of the two halves (read 2, write 1).
        # Near the L2's size a copy's larger share of writes can stay in L2 at the end of the
        # timed run, so this peer shows what a read-2/write-1 stream reaches against the copy.
        o = torch.empty(r, d, device="cuda", dtype=torch.bfloat16)
        peers = [("eager", lambda: eager_silu(x)),
                 ("compile", (lambda: comp_silu(x)) if comp_silu else None),
                 ("add_r2w1", lambda: torch.add(x[:, :d], x[:, d:], out=o))]
        out.append(_measure(timer, f"silu_mul {r}x{d}", sbytes, sbytes, lambda: dst.copy_(src),
                            lambda: ktune.ops.silu_mul(x), peers, cfg))
    return out, timer.caught_up


def _measure(timer, name, nbytes, copy_bytes, copy_fn, fn, peers, cfg):
    copy3 = timer.all4(copy_fn)
    k3 = timer.all4(fn)
    ratios = [(nbytes / k) / (copy_bytes / cp) for cp, k in zip(copy3, k3)]
    pc, pk = timer.pair_ms(copy_fn, fn)  # the headline: the op and the copy interleaved
    ratios.insert(0, (nbytes / pk) / (copy_bytes / pc))
    peer_ratios = []
    for pname, pfn in peers:
        if pfn is None:
            peer_ratios.append((pname, float("nan")))
            continue
        try:
            pfn()
            peer_ms = timer.kernel_ms(pfn)
            peer_ratios.append((pname, (nbytes / peer_ms) / (copy_bytes / copy3[0])))
        except Exception as e:  # noqa: BLE001
            print(f"  peer {pname} failed on {name}: {str(e).splitlines()[0][:100]}")
            peer_ratios.append((pname, float("nan")))
    return (name, nbytes / pk / 1e6, copy_bytes / pc / 1e6, ratios, peer_ratios,
            _winner(cfg), pk * 1e3, _top(cfg, nbytes, copy_bytes, copy3[1]))


def gemms(quick, use_compile, max_autotune):
    rows = []
    def mm(a, b):
        return torch.matmul(a, b)
    comp = compiled(mm) if use_compile else None
    comp_max = compiled(mm, "max-autotune") if use_compile and max_autotune else None
    if use_compile:
        torch._dynamo.config.cache_size_limit = max(torch._dynamo.config.cache_size_limit, 64)
    for name, m, n, k in (LLM[:2] + LLM[4:6] if quick else LLM):
        a = torch.randn(m, k, device="cuda", dtype=torch.bfloat16)
        w = torch.randn(n, k, device="cuda", dtype=torch.bfloat16)
        b = w.t()
        t0 = time.perf_counter()
        ktune.ops.gemm(a, b)  # tunes the key (or finds it in the database)
        torch.cuda.synchronize()
        tune_s = time.perf_counter() - t0
        peers = [("torch", lambda: torch.matmul(a, b))]
        if comp is not None:
            peers.append(("compile", lambda: comp(a, b)))
        if comp_max is not None:
            peers.append(("max-autotune", lambda: comp_max(a, b)))
        t0 = time.perf_counter()
        for _, fn in peers:
            try:
                fn()
            except Exception as e:  # noqa: BLE001
                print(f"  {name}: peer failed: {str(e).splitlines()[0][:100]}")
        compile_s = time.perf_counter() - t0
        kf = lambda: ktune.ops.gemm(a, b)  # noqa: E731
        # ABA: ktune, peers, ktune again; each side keeps its faster pass.
        tk = ktune.do_bench(kf, warmup=10, rep=50)
        tp = []
        for pname, fn in peers:
            try:
                tp.append((pname, ktune.do_bench(fn, warmup=10, rep=50)))
            except Exception:  # noqa: BLE001
                tp.append((pname, float("nan")))
        tk = min(tk, ktune.do_bench(kf, warmup=10, rep=50))
        fl = 2 * m * n * k
        rows.append((f"{name} {m}x{n}x{k}", fl / tk / 1e9,
                     [(p, fl / t / 1e9, t / tk) for p, t in tp], tune_s, compile_s))
    return rows


def main():
    quick = "--quick" in sys.argv
    only = next((a.split("=", 1)[1].split(",") for a in sys.argv if a.startswith("--only=")),
                ["call", "bandwidth", "gemm"])
    use_compile = "--no-compile" not in sys.argv
    t_start = time.perf_counter()
    print(f"device: {torch.cuda.get_device_name()}  torch {torch.__version__}  ktune "
          f"{ktune.__version__}")
    rows = []
    if "call" in only:
        gated_rows, gate = call_overhead(rows)
        host_cost.print_gated(gated_rows, gate, GATED_ROUNDS, GATED_SETS)
        print("\n== host cost per call, old method: wall clock of back-to-back batches of 200 "
              "(us; median, p20, p80 over batches; the GPU's throughput for tiny kernels can "
              "bound it)")
        for name, med, p20, p80 in rows:
            print(f"  {name:40s} {med:7.2f}  [{p20:.2f}, {p80:.2f}]")
        sys.stdout.flush()
    if "host_cost" in only or "call" in only:
        import ops_host_cost  # ktune.ops calls beside torch's own ops (issue 36)
        ops_host_cost.table(rounds=5 if quick else 10)
        sys.stdout.flush()
    if "bandwidth" in only:
        rowwise_table(quick, use_compile)
    if "gemm" in only:
        gemm_table(quick, use_compile)
    if "llama" in only:
        import os
        import subprocess
        extra = sys.argv[sys.argv.index("--") + 1:] if "--" in sys.argv else []
        subprocess.run([sys.executable, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                                     "..", "examples", "llama.py")] + extra)
    print(f"total {time.perf_counter() - t_start:.0f} s")


def rowwise_table(quick, use_compile):
    t1 = time.perf_counter()
    bw, caught_up = bandwidth(quick, use_compile)
    print("\n== row-wise ops through Python, bf16: ratio = ktune (or peer) GB/s / same-run copy"
          " GB/s   target >= 0.95")
    print("   events = events per call after a clean (read) L2 flush, the op and the copy "
          "interleaved run by run (the headline); block = the same per-call events in blocks of "
          "40 runs of one callable (both enqueued behind a spin kernel; loops timed again "
          f"because the GPU caught up: {caught_up}); read / memset = ktune.do_bench (the "
          "engine's harness) with flush=\"read\" (default) / \"memset\"; loop = back-to-back "
          "calls")
    print(f"  {'shape':22s} {'us':>7s} {'GB/s':>6s} {'copy':>6s} {'events':>6s} {'block':>6s} "
          f"{'read':>6s} {'memset':>6s} {'loop':>6s}  peers(block)  config")
    for name, gbs, cgbs, ratios, peer_ratios, cfg, us, top in bw:
        pr = " ".join(f"{p}={v:.3f}" for p, v in peer_ratios)
        r2w1 = dict(peer_ratios).get("add_r2w1")
        if r2w1:  # the op against the stream with its own read/write mix
            pr += f" (ktune/add_r2w1={ratios[1] / r2w1:.3f})"
        print(f"  {name:22s} {us:7.1f} {gbs:6.0f} {cgbs:6.0f} " +
              " ".join(f"{r:6.3f}" for r in ratios) + f"  {pr}  {cfg}")
    print("   tuning run's fastest candidates, ratio to the copy timed by the same harness (read):")
    for name, *_, top in bw:
        print(f"  {name:22s} {top}")
    print(f"  ({time.perf_counter() - t1:.0f} s)")
    sys.stdout.flush()


def gemm_table(quick, use_compile):
    t1 = time.perf_counter()
    gm = gemms(quick, use_compile, "--max-autotune" in sys.argv)
    print("\n== GEMM bf16 a @ w.t() (TFLOP/s; do_bench, read flush); ratio = peer time / ktune "
          "time   target >= 1.00")
    print(f"  {'shape':32s} {'ktune':>7s}  peers (TFLOP/s, ratio)   {'tune s':>6s} {'peer s':>6s}")
    for name, tk, peers, tune_s, comp_s in gm:
        pr = "  ".join(f"{p} {tf:6.1f} {r:5.3f}" for p, tf, r in peers)
        print(f"  {name:32s} {tk:7.1f}  {pr}   {tune_s:6.1f} {comp_s:6.1f}")
    print(f"  ({time.perf_counter() - t1:.0f} s)")


if __name__ == "__main__":
    main()
