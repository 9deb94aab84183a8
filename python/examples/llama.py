"""A Llama-3-8B-shaped decoder stack, end to end, in four variants of the same model (and a
fifth, ktune with one fusion off):

  torch      cuBLAS through F.linear, F.rms_norm, SiLU·Mul in torch ops (eager PyTorch);
  tunableop  the same code with PyTorch TunableOp on (torch.cuda.tunable.enable(True), what
             PYTORCH_TUNABLEOP_ENABLED=1 does, with tuning on), tuned before timing; TunableOp's
             switch is process-global, so every variant's `pre` sets it (on for this one, off
             for the others) before each of its calls, captures and timed batches; the
             environment variable must not be set, since it overrides enable(False));
  compile    torch.compile(mode="max-autotune-no-cudagraphs") of the torch code (max-autotune's
             kernel search), captured into a CUDA graph the same way as the others;
  ktune      every linear layer through ktune.ops.gemm, the residual adds in the o_proj / down
             GEMMs' epilogue (gemm(residual=x, out=x)), the norms through ktune.ops.rms_norm
             (--ktune-add norm: the add fused into the norm instead, as vLLM's
             fused_add_rms_norm), SiLU·Mul through ktune.ops.silu_mul, or fused into the gate/up
             GEMM where ktune.ops.gemm offers epilogue="silu_mul" (decode rows, M <= 8);
             rotary + KV-cache write in one tuned kernel (llama_rope_kv of
             examples/llama_kernels.h, registered with ktune.autotune: the same source and space
             as the C++ decoder's); tuned before timing;
  ktune_unfused  (--unfused-shapes, decode batch 1 and 8 by default) ktune with the gate/up GEMM
             and SiLU·Mul as two ops where ktune fuses them: the fusion measured against ktune's
             own pair in the same rounds (its extra keys' tuning is not counted in ktune's);
  ktune_fused  (--fused-shapes, none by default) ktune with gate/up + SiLU·Mul fused up
             to 16 rows instead of 8: the fusion measured against ktune's unfused pair where
             ktune does not fuse, in the same rounds (its extra key's tuning is not counted in
             ktune's);
  ktune_nopdl  (--nopdl-shapes, decode batch 1 and 8 by default) ktune with programmatic
             dependent launches off (ktune.set_options(pdl=False) in its `pre`, pdl=True in the
             other ktune variants': two tuners over the same database and code objects, so it
             tunes nothing): what PDL gains, in the same rounds.
The torch variants run rotary as torch ops; every variant runs the same attention call
(F.scaled_dot_product_attention over a static KV cache; decode groups the 4 query heads of each KV
head into one SDPA query block, prefill passes enable_gqa). Weights are random bf16 made at
start-up (nothing downloaded); no embedding or LM head (the decoder stack alone).

Decode steps (batch 1, 8, 32, 128 at context 1024: the step writes position 1024 of a cache whose
first 1024 positions hold random keys and values, and attends over all 1025) and a prefill (batch
1 x 2048 tokens from position 0) are timed as CUDA graph replays and as eager calls, variants
interleaved in rounds (each round shuffles the order); figures are the median over rounds with
their range; the run is repeated in --procs processes (the later ones with the tuning database,
code objects and compile caches the first one warmed; tuning / compile times are the first's) and
the table gives the median over processes with their range. Before timing, every variant's output
is checked against torch eager's (relative L2 error of the final hidden states, bf16 tolerance)
and each graph's output against its own eager output. A per-op breakdown of one decode step (CUDA
events around each op, the step enqueued behind a spin kernel so the events time the device, not
the host) and a kernel table (torch.profiler) follow.

  python3 llama.py --help
  python3 llama.py --self-check      tiny dims, float32, CPU or GPU: decode == prefill's last row
  python3 llama.py                   the whole run (GPU; about 5 minutes with a cold ktune cache)
"""
import argparse
import json
import sys
import time

import llama_procs
from llama_model import LLAMA3_8B, TINY, Decoder, TorchOps, run, self_check
from llama_model import _proj_add_norm  # noqa: F401  (the tests read the layer logic here)
from llama_layers import layer_kernels
from llama_timing import (Entry, WallRecorder, copy_rate, first_call, kernel_table, op_breakdown,
                          rounds_done, set_up, timing_rounds)

SHAPES = {"d1": (1, 1), "d8": (8, 1), "d32": (32, 1), "d128": (128, 1), "p2048": (1, 2048)}
VARIANTS = ("torch", "tunableop", "compile", "ktune", "ktune_unfused", "ktune_fused",
            "ktune_nopdl")
KTUNE_VARIANTS = ("ktune", "ktune_unfused", "ktune_fused", "ktune_nopdl")
FUSED_ROWS_ALT = 16  # ktune_fused's limit (ktune's own: llama_ktune.KtuneOps.FUSED_MAX_ROWS)
PREFILL_CALLS = 8  # prefill steps per timed batch (decode: 20)


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--layers", type=int, default=8, help="decoder layers (default 8)")
    p.add_argument("--context", type=int, default=1024, help="decode context (default 1024)")
    p.add_argument("--shapes", default="d1,d8,d32,d128,p2048",
                   help="dN = decode batch N, pN = prefill of N tokens, batch 1")
    p.add_argument("--variants", default=",".join(VARIANTS), help="subset of " + ",".join(VARIANTS))
    p.add_argument("--compile-shapes", default="d1,d8,d32,d128,p2048",
                   help="shapes the compile variant runs (skipped in order once --deadline-s "
                        "would be overrun)")
    p.add_argument("--unfused-shapes", default="d1,d8",
                   help="shapes of the ktune_unfused variant: ktune with the gate/up GEMM and "
                        "SiLU·Mul as two ops where ktune fuses them (decode rows <= 16), to "
                        "measure the fusion against ktune's own unfused pair (its keys' tuning "
                        "is not counted in ktune's)")
    p.add_argument("--fused-shapes", default="",
                   help="shapes of the ktune_fused variant: ktune with gate/up + SiLU·Mul fused "
                        f"up to {FUSED_ROWS_ALT} rows, against ktune's unfused pair above its "
                        "limit in the same rounds")
    p.add_argument("--nopdl-shapes", default="d1,d8",
                   help="shapes of the ktune_nopdl variant: ktune without programmatic dependent "
                        "launches (KTUNE_PDL=0), against ktune in the same rounds")
    p.add_argument("--compile-scope", default="layer", choices=("layer", "model"),
                   help="torch.compile one decoder layer, reused by every layer (default: "
                        "compiles in a fraction of the time), or the whole stack (35-45 s per "
                        "shape at 8 layers)")
    p.add_argument("--breakdown", default="d1,d32,d128",
                   help="shapes of the per-op breakdown (none: no breakdown)")
    p.add_argument("--ktune-add", default="gemm", choices=("gemm", "norm"),
                   help="where ktune adds the residual: in the o_proj / down GEMM's epilogue "
                        "(default), or fused into the RMSNorm after it")
    p.add_argument("--rounds", type=int, default=7, help="interleaved timing rounds (>= 3)")
    p.add_argument("--tol", type=float, default=3e-2, help="relative L2 tolerance vs torch eager")
    p.add_argument("--no-graphs", action="store_true", help="eager timings only")
    p.add_argument("--deadline-s", type=float, default=0,
                   help="wall budget: compile shapes are skipped when it would be overrun")
    p.add_argument("--json", default="", help="write every figure here")
    p.add_argument("--engine-log", default="",
                   help="this run's own log (stdout and stderr) where KTUNE_VERBOSE=1 puts the "
                        "engine's lines of each tuning run: read at the end for ktune's tuning "
                        "time key by key (llama_keys.py)")
    p.add_argument("--self-check", action="store_true",
                   help="tiny float32 model: decode after prefill == prefill of one more token")
    p.add_argument("--tiny", action="store_true", help="tiny dims (a quick GPU smoke run)")
    p.add_argument("--procs", type=int, default=3,
                   help="processes per figure: after the main one, procs - 1 more time every "
                        "variant with warm caches (each skipped when --deadline-s would be "
                        "overrun)")
    p.add_argument("--repeat-rounds", type=int, default=3, help="timing rounds of a repeat process")
    p.add_argument("--repeat-need-s", type=float, default=70,
                   help="wall time a repeat process is assumed to need before one has run (then: "
                        "the last one's)")
    p.add_argument("--child", default="", help=argparse.SUPPRESS)
    a = p.parse_args(argv)
    a.shapes = _names(a.shapes, SHAPES, "shape")
    a.variants = _names(a.variants, VARIANTS, "variant")
    a.compile_shapes = _names(a.compile_shapes, SHAPES, "shape") if a.compile_shapes else []
    a.unfused_shapes = _names(a.unfused_shapes, SHAPES, "shape") if a.unfused_shapes else []
    a.nopdl_shapes = _names(a.nopdl_shapes, SHAPES, "shape") if a.nopdl_shapes else []
    a.fused_shapes = _names(a.fused_shapes, SHAPES, "shape") if a.fused_shapes else []
    a.breakdown = _names(a.breakdown, SHAPES, "shape") if a.breakdown not in ("", "none") else []
    if a.layers < 1 or a.context < 1 or a.rounds < 1:
        p.error("--layers, --context and --rounds must be positive")
    return a


def _names(text, known, what):
    out = [s for s in text.split(",") if s]
    for s in out:
        if s not in known and not (what == "shape" and s[:1] in "dp" and s[1:].isdigit()):
            raise SystemExit(f"unknown {what} {s!r} (known: {', '.join(known)})")
    return out


def shape_of(name):
    """(batch, tokens) of a shape name: dN decode batch N, pN prefill of N tokens."""
    return SHAPES.get(name) or ((int(name[1:]), 1) if name[0] == "d" else (1, int(name[1:])))


# ---------------------------------------------------------------------------------------------
# The run.

def _wait_for_package(log, limit_s=600):
    """LLAMA_WAIT_FOR=FILE: the ktune package is being built beside this process (the device
    script starts the harness meanwhile, so torch's set-up overlaps the build); wait until FILE
    exists, then let the import system look again at sys.path folders it found missing. Returns
    the seconds waited (not ktune's: the ktune variants' set-up is counted without them)."""
    import importlib
    import os
    path = os.environ.get("LLAMA_WAIT_FOR")
    if not path:
        return 0.0
    t0 = time.perf_counter()
    while not os.path.exists(path) and time.perf_counter() - t0 < limit_s:
        time.sleep(0.2)
    log(f"  ktune package: waited {time.perf_counter() - t0:.1f} s for {path}")
    for entry in [k for k, v in sys.path_importer_cache.items() if v is None]:
        del sys.path_importer_cache[entry]
    importlib.invalidate_caches()
    return time.perf_counter() - t0


def make_variant(name, model, cfg, use_tunable, log, compile_scope="layer", ktune_add="gemm"):
    """(ops, pre, call(st)) of a variant, or None when it cannot run here. With use_tunable
    (TunableOp among this process's variants) every variant's pre sets TunableOp's process-wide
    switch: on for tunableop, off for the others."""
    import torch
    t_ops = TorchOps(cfg["eps"])
    tun = getattr(torch.cuda, "tunable", None)
    pre = (lambda: tun.enable(name == "tunableop")) if use_tunable and tun is not None else None
    if name in ("torch", "tunableop"):
        return t_ops, pre, lambda st: run(model, t_ops, st)
    if name in KTUNE_VARIANTS:
        try:
            from llama_ktune import KtuneOps, pdl_switch
            k_ops = KtuneOps(cfg["eps"], cfg, residual_gemm=ktune_add == "gemm")
            k_ops.name = name
            if name == "ktune_unfused":
                k_ops.fused_gate_up = False
            if name == "ktune_fused":
                k_ops.FUSED_MAX_ROWS = FUSED_ROWS_ALT
            pdl = pdl_switch(name != "ktune_nopdl")
        except Exception as e:  # noqa: BLE001  (reported, the other variants still run)
            log(f"  ktune unavailable: {e}")
            return None
        k_pre = (lambda: (pdl(), pre())) if pre else pdl
        return k_ops, k_pre, lambda st: run(model, k_ops, st)
    torch._dynamo.config.cache_size_limit = max(torch._dynamo.config.cache_size_limit, 64)
    mode = "max-autotune-no-cudagraphs"
    if compile_scope == "model":
        step = torch.compile(lambda x, kcs, vcs, pos, cos, sin, b, t: model.forward(
            t_ops, x, kcs, vcs, pos, cos, sin, b, t), mode=mode, dynamic=False)
        return t_ops, pre, lambda st: step(st["x"], st["kcs"], st["vcs"], st["pos"], st["cos"],
                                           st["sin"], st["batch"], st["tokens"])
    # One compiled layer (its weights and caches as arguments, so every layer reuses it): the
    # same GEMM shapes are autotuned, the graph to compile is a layer's, not the stack's.
    # Inductor still fuses within the layer (norm prologues, rotary + cache write); only the
    # fusion across a layer boundary is lost.
    layers = {}

    def call(st):
        b, t = st["batch"], st["tokens"]
        fn = layers.get((b, t))
        if fn is None:
            fn = layers[(b, t)] = torch.compile(
                lambda h, x, w, kc, vc, pos, cos, sin, nxt: model.layer(
                    t_ops, h, x, w, kc, vc, pos, cos, sin, nxt, b, t), mode=mode, dynamic=False)
        return model.forward(t_ops, st["x"], st["kcs"], st["vcs"], st["pos"], st["cos"],
                             st["sin"], b, t, layer_fn=fn)
    return t_ops, pre, call


def tuning_order(shapes):
    """ktune's shapes in the order that lets the batch sizes share tuning: the guided search
    orders a key's candidates by what won at its tuned neighbours (keys near in log2(M)), so the
    ends of the decode range and the prefill are tuned first and each batch size between them
    starts from both ends' winners (d1, d128, p2048, then d32, d8)."""
    dec = sorted((s for s in shapes if s[0] == "d"), key=lambda s: shape_of(s)[0])
    ends = dec[:1] + dec[-1:] if len(dec) > 1 else dec
    rest = [s for s in shapes if s[0] != "d"] + [s for s in reversed(dec) if s not in ends]
    return ends + rest


def _first_call_mark(a, name):
    """With the engine's per-key lines on (KTUNE_VERBOSE, first process): a function printing
    "[first call] VARIANT SHAPE OP" before each first call of a ktune variant (op by op for
    ktune), which places the key lines that follow (llama_keys.py); else None."""
    import os
    if a.child or os.environ.get("KTUNE_VERBOSE", "0") in ("", "0") or \
            name not in ("ktune", "ktune_unfused", "ktune_fused"):
        return None
    return lambda s, op: print(f"  [first call] {name} {s} {op}", flush=True)


def set_up_all(a, model, cfg, states, names, t_start, log):
    """Every variant's entries: first calls (tuning / compiling; ktune's timed op by op), checks
    and captures. Returns (entries, ops_of, ktune's first-call seconds per shape and op, with
    "init_s": each variant's set-up before its first call, and "layer0_s": per shape and op,
    the op's first call alone; "wait_s": the wait for the package built beside this process,
    not in any variant's set-up)."""
    entries, refs, ops_of = [], {}, {}
    first_ops = {"init_s": {}, "layer0_s": {}, "wait_s": 0.0}
    for name in names:
        mark = _first_call_mark(a, name)
        if name in KTUNE_VARIANTS:
            first_ops["wait_s"] += _wait_for_package(log)
        t0 = time.perf_counter()
        v = make_variant(name, model, cfg, "tunableop" in names, log, a.compile_scope,
                         a.ktune_add)
        # outside the first calls: ktune's tuner and its rotary family are made here
        first_ops["init_s"][name] = time.perf_counter() - t0
        if v is None:
            continue
        ops, pre, call = v
        ops_of[name] = (ops, pre or (lambda: 0))
        only = {"compile": a.compile_shapes, "ktune_unfused": a.unfused_shapes,
                "ktune_fused": a.fused_shapes, "ktune_nopdl": a.nopdl_shapes}.get(name)
        shapes = [s for s in a.shapes if only is None or s in only]
        if name == "ktune":
            shapes = tuning_order(shapes)
        # Every first call (tuning, compiling) of the variant before any capture: a graph holds
        # the addresses of what its kernels use, so nothing it uses may be reallocated by a
        # later shape's tuning.
        firsts = []
        for s in shapes:
            left = a.deadline_s - (time.perf_counter() - t_start)
            # Skipped, not killed: the budget must still time and report what was set up. A
            # repeat process finds its caches warm: a few seconds per shape. A cold shape took
            # max-autotune 27-44 s and ktune at most 16 s (the cold first shape); the other ktune
            # variants tune one key at most (ktune_nopdl none).
            need = 15 if a.child else {"compile": 75, "ktune": 25}.get(name, 10)
            if a.deadline_s and left < need:
                log(f"  {name} {s}: skipped ({left:.0f} s of the budget left)")
                continue
            st = states[s]
            # 8 prefill steps per timed batch (3 before: its rounds swung by up to 15%)
            en = Entry(name, s, (lambda st=st, call=call: call(st)), pre,
                       calls=PREFILL_CALLS if shape_of(s)[1] > 1 else 20)
            try:
                if name == "ktune":  # where the tuning time goes: the same call, op by op
                    rec = WallRecorder(mark and (lambda op, s=s: mark(s, op)))
                    first_call(en, lambda rec=rec, st=st: run(model, ops, st, rec))
                    first_ops[s] = rec.seconds
                    first_ops["layer0_s"][s] = rec.first
                else:
                    if mark:
                        mark(s, "all")
                    first_call(en)
                firsts.append(en)
            except Exception as e:  # noqa: BLE001  (a variant that fails is reported, not fatal)
                log(f"  {name} {s}: FAILED {type(e).__name__}: {str(e).splitlines()[0][:160]}")
        for en in sorted(firsts, key=lambda e: a.shapes.index(e.shape)):
            try:
                out = set_up(en, refs.get(en.shape), a.tol, not a.no_graphs, log)
            except Exception as e:  # noqa: BLE001
                log(f"  {name} {en.shape}: FAILED {type(e).__name__}: "
                    f"{str(e).splitlines()[0][:160]}")
                continue
            if name == "torch":
                refs[en.shape] = out
            entries.append(en)
    return entries, ops_of, first_ops


def breakdowns(a, model, states, entries, ops_of, log, left_s):
    """Per-op event breakdown (eager variants), kernel tables and one layer's kernels in order
    (every variant but TunableOp) of the breakdown shapes."""
    ops_bd, kern, layers = {}, {}, {}
    for en in entries:
        # TunableOp runs torch's code on the GEMMs it picked: its kernels are in its CSV.
        if en.shape not in a.breakdown or en.variant == "tunableop":
            continue
        if left_s() < 5:  # each takes a second or two
            log(f"  breakdown {en.variant} {en.shape}: skipped ({left_s():.0f} s of the budget "
                "left)")
            continue
        key = f"{en.variant} {en.shape}"
        try:
            if en.variant != "compile":
                ops, pre = ops_of[en.variant]
                st = states[en.shape]
                ops_bd[key] = op_breakdown(lambda rec, ops=ops, st=st: run(model, ops, st, rec),
                                           pre, a.layers)
            en.pre()
            kern[key], seq = kernel_table(en.eager, steps=3)
            layers[key] = layer_kernels(seq, 3, a.layers)
        except Exception as e:  # noqa: BLE001
            log(f"  breakdown {key} failed: {str(e).splitlines()[0][:120]}")
    return ops_bd, kern, layers


def _write(a, res, t_start):
    res["total_s"] = time.perf_counter() - t_start
    if a.json:
        with open(a.json, "w") as f:
            json.dump(res, f, indent=1)


def _tunableop_setup(a, names, log):
    """TunableOp among the variants: its results file beside the JSON, tuning on (its pre turns
    it on and off). PYTORCH_TUNABLEOP_ENABLED is dropped first: it would override enable(False)
    for every other variant. Before torch is imported."""
    import os
    if "tunableop" not in names:
        return
    if os.environ.pop("PYTORCH_TUNABLEOP_ENABLED", None) is not None:
        log("  PYTORCH_TUNABLEOP_ENABLED dropped: TunableOp is switched per variant")
    base = os.path.splitext(os.path.abspath(a.json or "llama.json"))[0]
    os.environ.setdefault("PYTORCH_TUNABLEOP_FILENAME", base + "_tunableop_results%d.csv")
    import torch
    tun = getattr(torch.cuda, "tunable", None)
    if tun is None:
        log("  tunableop: this torch has no torch.cuda.tunable; not run")
        names.remove("tunableop")
        return
    tun.tuning_enable(True)


def _tunableop_results():
    """TunableOp's choices so far (op, shape, solution, time), as strings; [] without it."""
    import torch
    try:
        return [[str(x) for x in r] for r in torch.cuda.tunable.get_results()]
    except Exception:  # noqa: BLE001  (only reported)
        return []


def _step_bytes(model, states):
    """Bytes a step must read at least, per shape: every weight, and for a decode step the whole
    KV cache it attends over (the floor at the device's copy rate)."""
    w = sum(t.numel() * t.element_size() for layer in model.layers for t in layer.values())
    out = {}
    for s, st in states.items():
        kv = sum(t.numel() * t.element_size() for t in st["kcs"] + st["vcs"])
        out[s] = w + (kv if st["tokens"] == 1 else 0)
    return w, out


def main_run(a):
    t_start = time.perf_counter()
    tag = "[repeat process] " if a.child else ""
    left_s = (lambda: a.deadline_s - (time.perf_counter() - t_start)) if a.deadline_s else \
        (lambda: float("inf"))

    def log(msg):
        print(tag + msg, flush=True)
    # torch first (the reference every variant is checked against), compile last (its shapes
    # are the ones skipped when the wall budget runs short).
    names = ["torch"] + [v for v in ("tunableop", "ktune", "ktune_unfused", "ktune_fused",
                                     "ktune_nopdl", "compile")
                         if v in a.variants]
    _tunableop_setup(a, names, log)
    import torch
    if not torch.cuda.is_available():
        raise SystemExit("no CUDA device: the timed run needs a GPU (--self-check runs anywhere)")
    cfg, dt = (TINY if a.tiny else LLAMA3_8B), torch.bfloat16
    log(f"device {torch.cuda.get_device_name()}, torch {torch.__version__}, {a.layers} layers "
        f"{cfg}, variants {names}, shapes {a.shapes}")
    copy = None if a.child else copy_rate()
    if copy:
        log(f"device-to-device copy: {copy['tbs']:.3f} TB/s (bytes read + written; median of "
            f"{copy['reps']} copies of {copy['bytes'] / 2**30:.0f} GiB)")
    model = Decoder(cfg, a.layers, "cuda", dt)
    states = {s: model.state(*shape_of(s), a.context, "cuda", dt) for s in a.shapes}
    weight_bytes, step_bytes = _step_bytes(model, states)
    entries, ops_of, first_ops = set_up_all(a, model, cfg, states, names, t_start, log)
    first_layer0 = first_ops.pop("layer0_s")
    wait_s = first_ops.pop("wait_s")
    rounds = a.rounds
    # Rounds past 3 and the breakdowns leave the repeat processes the time they are expected to
    # take: the median over processes needs them more than a longer first process.
    reserve = 0 if a.child else (a.procs - 1) * a.repeat_need_s
    main_left = lambda: left_s() - reserve  # noqa: E731
    log(f"timing {len(entries)} entries in {rounds} interleaved rounds")
    timing_rounds(entries, rounds, log, main_left if a.deadline_s else None)
    rounds = rounds_done(entries, rounds)  # fewer when the budget stopped them
    ops_bd, kern, layer_kern = breakdowns(a, model, states, entries, ops_of, log, main_left)
    res = {"device": torch.cuda.get_device_name(), "torch": torch.__version__, "cfg": cfg,
           "compile_scope": a.compile_scope, "order_ktune": tuning_order(a.shapes),
           "layers": a.layers, "context": a.context, "rounds": rounds, "copy": copy,
           "weight_bytes": weight_bytes, "step_bytes": step_bytes, "first_ops": first_ops,
           "first_ops_first": first_layer0, "package_wait_s": wait_s,
           "tunableop_results": _tunableop_results() if "tunableop" in names else [],
           "entries": [dict(variant=e.variant, shape=e.shape, setup_s=e.setup_s, err=e.err,
                            graph_err=e.graph_err, graph_ms=e.times["graph"],
                            eager_ms=e.times["eager"]) for e in entries],
           "ops": ops_bd, "kernels": {k: v[:40] for k, v in kern.items()},
           "layer_kernels": layer_kern}
    if not a.child:
        _write(a, res, t_start)  # kept if a repeat process takes the rest of the budget
        # The repeats need the GPU's memory: this process's graphs and cached blocks go first.
        del entries, ops_of, states
        torch.cuda.synchronize()
        torch.cuda.empty_cache()
        try:
            res["procs"] = llama_procs.run_repeats(a, names, log, left_s)
        except Exception as e:  # noqa: BLE001  (the first process's figures still count)
            log(f"repeat processes FAILED: {type(e).__name__}: {e}")
    if a.engine_log and not a.child:
        import llama_keys
        try:
            with open(a.engine_log, errors="replace") as f:
                res["keys"] = llama_keys.parse(f)
        except OSError as e:
            log(f"  --engine-log {a.engine_log}: not read ({e})")
    _write(a, res, t_start)
    if not a.child:
        from llama_report import report
        report(res)


def main(argv=None):
    a = parse_args(argv)
    if a.self_check:
        self_check()
        return 0
    if a.tiny:
        a.context = min(a.context, 64)
        a.shapes = [s if s[0] == "d" else "p128" for s in a.shapes]
        a.compile_shapes = [s if s[0] == "d" else "p128" for s in a.compile_shapes]
        a.unfused_shapes = [s for s in a.unfused_shapes if s[0] == "d"]
        a.nopdl_shapes = [s for s in a.nopdl_shapes if s[0] == "d"]
        a.fused_shapes = [s for s in a.fused_shapes if s[0] == "d"]
        a.breakdown = [s if s[0] == "d" else "p128" for s in a.breakdown]
    main_run(a)
    return 0


if __name__ == "__main__":
    sys.exit(main())
