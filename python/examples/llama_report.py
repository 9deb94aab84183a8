"""The tables of llama.py (a Llama-style decoder, end to end): from its JSON result, so a run's
figures can be printed again (python3 llama_report.py llama.json)."""
import json
import math
import statistics
import sys

import llama_keys
import llama_layers
from llama import shape_of


def kernel_class(name):
    n = name.lower()
    for cls, keys in (("attention", ("flash", "fmha", "attention", "sdpa")),
                      ("gemm", ("gemm", "nvjet", "cutlass", "xmma", "cublas", "triton_tem",
                                "_mm", "mm_", "wgmma", "splitk", "matmul")),
                      ("norm", ("rms", "norm", "triton_red", "triton_per")),
                      ("silu", ("silu",)), ("rope", ("rope", "index_put", "cat"))):
        if any(k in n for k in keys):
            return cls
    return "other"


def _med(xs):
    return (statistics.median(xs), min(xs), max(xs)) if xs else None


def _tps(ms_list, shape):
    b, t = shape_of(shape)
    return _med([b * t / (ms * 1e-3) for ms in ms_list])


def _ratio(num_ms, den_ms):
    """den/num per round (a speed-up of num over den), median [min, max]; same process only."""
    n = min(len(num_ms), len(den_ms))
    return _med([den_ms[i] / num_ms[i] for i in range(n)]) if n else None


def _fmt(m):
    return f"{'-':>22s}" if m is None else f"{m[0]:.0f} [{m[1]:.0f}, {m[2]:.0f}]".rjust(22)


def _r(m):
    return "-" if m is None else f"{m[0]:.3f} [{m[1]:.3f}, {m[2]:.3f}]"


def report(res):
    by = {(e["variant"], e["shape"]): e for e in res["entries"]}
    shapes = list(dict.fromkeys(e["shape"] for e in res["entries"]))
    variants = list(dict.fromkeys(e["variant"] for e in res["entries"]))
    print(f"\n== {res['device']}, torch {res['torch']}, {res['layers']} layers, decode context "
          f"{res['context']}; tokens/s = batch*tokens / step time, median over {res['rounds']} "
          "interleaved rounds [min, max]; G = CUDA graph replay, E = eager calls; 'vs torch' = "
          "torch step time / variant step time per round; first call = tuning / compile (s); "
          "compile = torch.compile of "
          f"{res.get('compile_scope', 'model')} scope")
    print(f"  {'shape':6s} {'variant':11s} {'G tok/s':>22s} {'E tok/s':>22s} {'vs torch G':>22s} "
          f"{'vs torch E':>22s} {'first s':>7s} {'rel err':>8s}")
    for s in shapes:
        for v in variants:
            e = by.get((v, s))
            if e is None:
                continue
            t = by.get(("torch", s))
            own = t is not None and v != "torch"
            rg = _ratio(e["graph_ms"], t["graph_ms"]) if own else None
            re_ = _ratio(e["eager_ms"], t["eager_ms"]) if own else None
            print(f"  {s:6s} {v:11s} {_fmt(_tps(e['graph_ms'], s))} {_fmt(_tps(e['eager_ms'], s))}"
                  f" {_r(rg):>22s} {_r(re_):>22s} {e['setup_s']:7.1f} {e['err']:8.1e}")
    tun = {v: sum(e["setup_s"] for e in res["entries"] if e["variant"] == v) for v in variants}
    print("  first-call totals (tuning / compile + one step), s: " +
          ", ".join(f"{v} {t:.1f}" for v, t in tun.items()))
    _print_tuning(res, by, shapes)
    _print_first_ops(res)
    if res.get("keys") is not None:
        llama_keys.report(res["keys"], res.get("first_ops_first"))
    _print_breakdown(res)
    llama_layers.report(res.get("layer_kernels"))
    _print_summary(res, by, shapes)
    _print_bounds(res, shapes)
    _print_processes(res, shapes)
    _print_table(res, shapes)
    _print_md_breakdowns(res, shapes)


def _print_tuning(res, by, shapes):
    """Tuning / compile time per shape and for the whole model (first calls: ktune tunes every
    key the step meets, max-autotune compiles and autotunes; both include one step)."""
    order = res.get("order_ktune") or shapes
    print(f"\n== tuning / compile time (first call, s); ktune tuned its shapes in the order "
          f"{', '.join(order)} (each batch size starts from its tuned neighbours' winners)")
    tot = {"ktune": 0.0, "compile": 0.0, "tunableop": 0.0}
    both = [0.0, 0.0]
    for s in shapes:
        row = {v: by[(v, s)]["setup_s"] for v in tot if (v, s) in by}
        for v, t in row.items():
            tot[v] += t
        if "ktune" in row and "compile" in row:
            both[0] += row["ktune"]
            both[1] += row["compile"]
        print(f"  {s:6s} " + "  ".join(f"{v} {row[v]:6.1f}" if v in row else f"{v} {'-':>6s}"
                                       for v in tot))
    # ktune's own set-up before its first call (its tuner, the rotary family; the wait for the
    # package built beside the harness is not in it) counts as tuning; max-autotune's (the dynamo
    # import) does not: the ratio leans against ktune, if anything.
    k_init = (res.get("first_ops") or {}).get("init_s", {}).get("ktune", 0.0)
    ratio = (both[0] + k_init) / both[1] if both[1] else float("nan")
    every = all(("compile", s) in by for s in shapes)
    print(f"  whole model: ktune {tot['ktune'] + k_init:.1f} s (set-up {k_init:.2f} s included), "
          f"max-autotune {tot['compile']:.1f} s, TunableOp {tot['tunableop']:.1f} s; ktune / "
          f"max-autotune " + ("(every shape)" if every else "over the shapes both ran") +
          f": {ratio:.3f} (target <= 0.2)")
    picks = {}
    for r in res.get("tunableop_results") or []:
        # (op signature, params signature, solution, time): the solution TunableOp kept
        name = "_".join(r[2].split("_")[:2]) if len(r) > 2 else "?"
        picks[name] = picks.get(name, 0) + 1
    if picks:
        print("  TunableOp's choices: " + ", ".join(f"{k} x{v}" for k, v in picks.items()) +
              f" ({sum(picks.values())} GEMM shapes)")


VARIANTS = ("torch", "tunableop", "compile", "ktune", "ktune_unfused", "ktune_fused",
            "ktune_nopdl")


def over_procs(res, shapes):
    """Per shape, variant and timing (graph_ms / eager_ms): the tokens/s median of each process;
    per shape, peer and timing: ktune's per-round ratio over the peer (peer step / ktune step),
    its median in each process. {(shape, variant, w): [..]}, {(shape, peer, w): [..]}."""
    tps, ratio = {}, {}
    for p in [res] + list(res.get("procs", [])):
        by = {(e["variant"], e["shape"]): e for e in p.get("entries", [])}
        for s in shapes:
            k = by.get(("ktune", s))
            for w in ("graph_ms", "eager_ms"):
                for v in VARIANTS:
                    e = by.get((v, s))
                    if e is None or not e[w]:
                        continue
                    tps.setdefault((s, v, w), []).append(_tps(e[w], s)[0])
                    if v != "ktune" and k is not None and k[w]:
                        ratio.setdefault((s, v, w), []).append(_ratio(k[w], e[w])[0])
    return tps, ratio


def _print_processes(res, shapes):
    """Every variant per process (the first one and the repeats, warm caches): tokens/s medians
    per process and ktune's ratios; the median over processes [min, max]."""
    procs = [res] + list(res.get("procs", []))
    tps, ratio = over_procs(res, shapes)
    print(f"\n== over {len(procs)} processes (1 = the main run, {res['rounds']} rounds; the others "
          "warm caches, " + ", ".join(f"{p.get('rounds', '?')}" for p in procs[1:]) +
          " rounds): per process, tokens/s medians and ktune/peer = median per-round ratio; "
          "-> the median over processes [min, max]")
    for s in shapes:
        for w, tag in (("graph_ms", "G"), ("eager_ms", "E")):
            for v in VARIANTS:
                xs = tps.get((s, v, w))
                if not xs:
                    continue
                line = f"  {s:6s} {tag} {v:9s} tok/s " + "/".join(f"{x:.0f}" for x in xs)
                m = _med(xs)
                line += f"  -> {m[0]:.0f} [{m[1]:.0f}, {m[2]:.0f}]"
                r = ratio.get((s, v, w))
                if r:
                    m = _med(r)
                    line += ("   ktune/" + v + " " + "/".join(f"{x:.3f}" for x in r) +
                             f" -> {m[0]:.3f} [{m[1]:.3f}, {m[2]:.3f}]")
                print(line)


def _cell(xs, fmt):
    if not xs:
        return "—"
    m = _med(xs)
    if len(xs) == 1:
        return fmt.format(m[0]) + " (1 process)"
    return f"{fmt.format(m[0])} [{fmt.format(m[1])}, {fmt.format(m[2])}]"


def _print_table(res, shapes):
    """The table for bench/NOTES.md (markdown): median over processes [min, max]."""
    tps, ratio = over_procs(res, shapes)
    n = 1 + len(res.get("procs", []))
    print(f"\n== table (markdown; median over {n} processes [min, max] of each process's median "
          "over its rounds; ratios per round, then per process)")
    cols = [("torch G tok/s", tps, "torch", "graph_ms", "{:.0f}"),
            ("ktune G tok/s", tps, "ktune", "graph_ms", "{:.0f}"),
            ("ktune / torch G", ratio, "torch", "graph_ms", "{:.3f}"),
            ("ktune / TunableOp G", ratio, "tunableop", "graph_ms", "{:.3f}"),
            ("max-autotune G tok/s", tps, "compile", "graph_ms", "{:.0f}"),
            ("ktune / max-autotune G", ratio, "compile", "graph_ms", "{:.3f}"),
            ("torch E tok/s", tps, "torch", "eager_ms", "{:.0f}"),
            ("ktune E tok/s", tps, "ktune", "eager_ms", "{:.0f}"),
            ("ktune / torch E", ratio, "torch", "eager_ms", "{:.3f}")]
    print("| decode batch / prefill | " + " | ".join(c[0] for c in cols) + " |")
    print("|---" * (len(cols) + 1) + "|")
    for s in shapes:
        b, t = shape_of(s)
        name = str(b) if t == 1 else f"prefill {b} x {t}"
        print(f"| {name} | " + " | ".join(_cell(src.get((s, v, w)), f) for _, src, v, w, f in cols)
              + " |")


def _print_bounds(res, shapes):
    """Each shape's floor: the bytes a step must read (weights, and the KV cache a decode step
    attends over) at the device's measured copy rate; each variant's graphed step against it."""
    copy, sb = res.get("copy"), res.get("step_bytes") or {}
    if not copy or not sb:
        return
    rate = copy["tbs"] * 1e12
    by = {(e["variant"], e["shape"]): e for e in res["entries"]}
    print(f"\n== the read floor at this device's copy rate ({copy['tbs']:.3f} TB/s, bytes read + "
          f"written by a {copy['bytes'] / 2**30:.0f} GiB device-to-device copy, same run): "
          "floor = bytes / rate; per variant the graphed step (ms, median) and floor / step")
    for s in shapes:
        if s not in sb or shape_of(s)[1] != 1:
            continue
        floor = sb[s] / rate * 1e3
        cells = []
        for v in VARIANTS:
            e = by.get((v, s))
            if e and e["graph_ms"]:
                ms = statistics.median(e["graph_ms"])
                cells.append(f"{v} {ms:.3f} ({floor / ms:.2f})")
        print(f"  {s:6s} {sb[s] / 1e9:.3f} GB  floor {floor:.3f} ms  " + "  ".join(cells))


def _print_first_ops(res):
    """Where ktune's tuning time goes: the first call of each shape, op by op (host wall, the
    device synchronised around each op; an op's first layer tunes its keys)."""
    fo = dict(res.get("first_ops") or {})
    init = fo.pop("init_s", {})
    if init:
        print("\n== set-up of each variant before its first call (s; ktune: its tuner and the "
              "rotary family registered): " + ", ".join(f"{k} {v:.2f}" for k, v in init.items()))
    if not fo:
        return
    cols = list(dict.fromkeys(k for d in fo.values() for k in d))
    print("\n== ktune's first call by op (s; tuning order " + ", ".join(fo) + ")")
    print(f"  {'shape':6s} " + " ".join(f"{c:>12s}" for c in cols) + f" {'total':>8s}")
    for s, d in fo.items():
        print(f"  {s:6s} " + " ".join(f"{d.get(c, 0):12.2f}" for c in cols) +
              f" {sum(d.values()):8.2f}")
    print(f"  {'all':6s} " + " ".join(f"{sum(d.get(c, 0) for d in fo.values()):12.2f}"
                                      for c in cols) +
          f" {sum(sum(d.values()) for d in fo.values()):8.2f}")


def _print_breakdown(res):
    ops = res.get("ops", {})
    if ops:
        cols = ["qkv", "rope_kv", "attn", "o_proj", "add_norm", "gate_up", "silu_mul",
                "gate_up_silu", "down"]
        print("\n== one step by op, eager, device time (events around each op, the step "
              "enqueued behind a spin kernel): us per layer (add_norm = both per layer; the "
              "first norm once per step; where ktune adds the residual in the GEMM epilogue, "
              "o_proj and down include the add and add_norm is a plain norm)")
        print(f"  {'variant shape':18s} " + " ".join(f"{c:>8s}" for c in cols) +
              f" {'layer':>8s} {'norm':>6s}")
        for k, d in sorted(ops.items(), key=lambda kv: kv[0].split()[::-1]):
            print(f"  {k:18s} " + " ".join(f"{d.get(c, 0):8.1f}" for c in cols) +
                  f" {sum(d.get(c, 0) for c in cols):8.1f} {d.get('norm', 0):6.1f}")
    kern = res.get("kernels", {})
    if kern:
        print("\n== kernels of one eager step by class (torch.profiler; us per step) and the "
              "three largest kernels")
        for k, rows in sorted(kern.items(), key=lambda kv: kv[0].split()[::-1]):
            cls = {}
            for name, us, _ in rows:
                cls[kernel_class(name)] = cls.get(kernel_class(name), 0) + us
            top = "; ".join(f"{n[:48]} {us:.0f}" for n, us, _ in rows[:3])
            print(f"  {k:18s} " + " ".join(f"{c} {cls.get(c, 0):7.1f}" for c in
                                           ("gemm", "attention", "norm", "silu", "rope",
                                            "other")) + f" | {top}")
        _print_kernels(kern)
        _print_vs_compile(kern)


def _print_kernels(kern, top=14):
    """Every variant's largest kernels of one eager step (torch.profiler): us per step, launches
    per step, class; the rest summed."""
    print(f"\n== per-kernel breakdown (torch.profiler, one eager step; the {top} largest per "
          "variant and shape)")
    for k, rows in sorted(kern.items(), key=lambda kv: kv[0].split()[::-1]):
        total = sum(us for _, us, _ in rows)
        print(f"  -- {k}: {total:.0f} us per step in {len(rows)} kernels")
        for name, us, count in rows[:top]:
            print(f"     {us:8.1f} us {count:4d}x  {kernel_class(name):9s} {name[:100]}")
        rest = rows[top:]
        if rest:
            print(f"     {sum(us for _, us, _ in rest):8.1f} us        ({len(rest)} more kernels)")


def class_totals(rows):
    """{kernel class: us per step} of one kernel table."""
    cls = {}
    for name, us, _ in rows:
        cls[kernel_class(name)] = cls.get(kernel_class(name), 0) + us
    return cls


def vs_compile(kern):
    """Per shape with both kernel tables: ktune's and max-autotune's us per step by kernel class
    and in all, and the classes where ktune's kernels take longer (largest loss first)."""
    out = {}
    for key, rows in kern.items():
        variant, shape = key.split()
        other = kern.get(f"compile {shape}")
        if variant != "ktune" or other is None:
            continue
        k, c = class_totals(rows), class_totals(other)
        classes = sorted(set(k) | set(c), key=lambda x: -(k.get(x, 0) - c.get(x, 0)))
        out[shape] = dict(ktune=k, compile=c, ktune_us=sum(k.values()),
                          compile_us=sum(c.values()),
                          loses=[x for x in classes if k.get(x, 0) > c.get(x, 0)])
    return out


def _print_vs_compile(kern):
    cmp = vs_compile(kern)
    if not cmp:
        return
    print("\n== ktune against max-autotune by kernel class (torch.profiler, one eager step, us "
          "per step; ktune - max-autotune; the classes where ktune's kernels take longer)")
    for shape, d in cmp.items():
        cells = " ".join(f"{x} {d['ktune'].get(x, 0) - d['compile'].get(x, 0):+8.1f}"
                         for x in ("gemm", "attention", "norm", "silu", "rope", "other"))
        print(f"  {shape:6s} ktune {d['ktune_us']:8.0f} max-autotune {d['compile_us']:8.0f}  "
              f"{cells}  | ktune loses on: {', '.join(d['loses']) or 'none'}")


def _print_summary(res, by, shapes):
    print("\n== summary: tokens/s median [range]; ktune/x = x's step time / ktune's (same "
          "process per round)")
    print(f"  {'shape':6s} {'torch G':>10s} {'ktune G':>10s} {'ktune/torch G':>14s} "
          f"{'ktune/tunop G':>14s} {'ktune/compile G':>16s} {'torch E':>10s} {'ktune E':>10s} "
          f"{'ktune/torch E':>14s} graphed")
    for s in shapes:
        t, k = by.get(("torch", s)), by.get(("ktune", s))
        if t is None:
            continue
        c, tu = by.get(("compile", s)), by.get(("tunableop", s))
        kg = k and _ratio(k["graph_ms"], t["graph_ms"])
        vs_tun = k and tu and _ratio(k["graph_ms"], tu["graph_ms"])
        vs_tun = vs_tun and vs_tun[0]
        vs_c = k and c and _ratio(k["graph_ms"], c["graph_ms"])
        tps = lambda e, w: (_tps(e[w], s) or [float("nan")])[0] if e else float("nan")  # noqa
        graphed = ",".join(v for v in VARIANTS
                           if by.get((v, s)) and by[(v, s)]["graph_ms"])
        print(f"  {s:6s} {tps(t, 'graph_ms'):10.0f} {tps(k, 'graph_ms'):10.0f} "
              f"{(kg or [math.nan])[0]:14.3f} {(vs_tun or math.nan):14.3f} "
              f"{(vs_c or [math.nan])[0]:16.3f} {tps(t, 'eager_ms'):10.0f} "
              f"{tps(k, 'eager_ms'):10.0f} "
              f"{((k and _ratio(k['eager_ms'], t['eager_ms'])) or [math.nan])[0]:14.3f} {graphed}")
    print(f"  total {res['total_s']:.0f} s")


def _md(header, rows):
    print("| " + " | ".join(header) + " |")
    print("|---" * len(header) + "|")
    for r in rows:
        print("| " + " | ".join(r) + " |")


def _print_md_breakdowns(res, shapes):
    """The first process's tuning time, ktune's first call by op, the per-op breakdown and the
    kernel classes against max-autotune, as markdown tables for bench/NOTES.md."""
    by = {(e["variant"], e["shape"]): e for e in res["entries"]}
    print("\n== tuning / compile time, first process (markdown, s)")
    rows = []
    for v, name in (("ktune", "ktune"), ("compile", "max-autotune (one layer)"),
                    ("tunableop", "TunableOp"), ("ktune_unfused", "ktune_unfused (extra keys)"),
                    ("ktune_fused", "ktune_fused (extra keys)")):
        cells = [f"{by[(v, s)]['setup_s']:.2f}" if (v, s) in by else "—" for s in shapes]
        if any(c != "—" for c in cells):
            tot = sum(by[(v, s)]["setup_s"] for s in shapes if (v, s) in by)
            rows.append([name] + cells + [f"**{tot:.1f} s**"])
    _md([""] + shapes + ["whole model"], rows)
    fo = {k: v for k, v in (res.get("first_ops") or {}).items() if k != "init_s"}
    if fo:
        cols = list(dict.fromkeys(k for d in fo.values() for k in d))
        print("\n== ktune's first call by op (markdown, s)")
        rows = [[s] + [f"{d[c]:.2f}" if c in d else "—" for c in cols] +
                [f"{sum(d.values()):.2f}"] for s, d in fo.items()]
        rows.append(["all"] + [f"{sum(d.get(c, 0) for d in fo.values()):.2f}" for c in cols] +
                    [f"{sum(sum(d.values()) for d in fo.values()):.2f}"])
        _md(["shape"] + cols + ["total"], rows)
    ops = res.get("ops") or {}
    if ops:
        cols = [c for c in ("qkv", "rope_kv", "attn", "o_proj", "add_norm", "gate_up",
                            "silu_mul", "gate_up_silu", "down")
                if any(c in d for d in ops.values())]
        print("\n== one step by op (markdown; eager, device time, us per layer; norm = the "
              "step's first norm, once)")
        rows = [[k] + [f"{d[c]:.1f}" if c in d else "—" for c in cols] +
                [f"{sum(d.get(c, 0) for c in cols):.1f}", f"{d.get('norm', 0):.1f}"]
                for k, d in sorted(ops.items(), key=lambda kv: kv[0].split()[::-1])]
        _md(["variant shape"] + cols + ["layer", "norm"], rows)
    cmp = vs_compile(res.get("kernels") or {})
    if cmp:
        classes = ("gemm", "attention", "norm", "silu", "rope", "other")
        print("\n== kernels by class, ktune / max-autotune (markdown; torch.profiler, one eager "
              "step, us per step)")
        rows = [[s, f"{d['ktune_us']:.0f} / {d['compile_us']:.0f}"] +
                [f"{d['ktune'].get(c, 0):.1f} / {d['compile'].get(c, 0):.1f}" for c in classes] +
                [", ".join(d["loses"]) or "none"] for s, d in cmp.items()]
        _md(["shape", "all"] + list(classes) + ["ktune slower on"], rows)


def load_run(path, repeats=()):
    """The first process's JSON with the repeat processes' (their own files, when the first one
    was cut before it merged them) as its "procs"."""
    with open(path) as f:
        res = json.load(f)
    if repeats and not res.get("procs"):
        res["procs"] = []
        for i, p in enumerate(repeats):
            try:
                with open(p) as f:
                    res["procs"].append(dict(json.load(f), process=i + 2))
            except (OSError, ValueError):
                print(f"  {p}: not read")
    res.setdefault("total_s", 0.0)
    return res


if __name__ == "__main__":  # python3 llama_report.py llama.json [llama_proc2.json ...]
    report(load_run(sys.argv[1], sys.argv[2:]))
