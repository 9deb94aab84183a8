#!/usr/bin/env python3
"""The tma kernel's per-phase split from gemm_bench --trace's TMT / TMTK lines (stdin;
bench/gemm_bench_modes.h, templates/gemm/tma/tma_trace.cuh). Per block (clock64 cycles, converted to
ns at the block's own ns per cycle from its globaltimer and clock64 between entry and consumer 0's
end), with u_j the block's units (tiles), first(j) the earliest consumer's first wgmma issue of
unit j and retired(j) the latest consumer's last wgmma retirement:
  start   entry -> first(0)            (prologue, first copy issued, first stage landed)
  loop    sum_j (retired(j) - first(j) - ideal_j), ideal_j = the unit's MMA cycles at the tensor
          pipe's full rate (4096 bf16 flops per cycle per SM)
  switch  sum_j (first(j+1) - retired(j)): the tile switches (negative: the next unit's MMAs were
          issued before this one's retired, as in ping-pong)
  end     retired(last) -> the later consumer's end (its last stores have read its buffer)
so start + loop + switch + end = the block's span - its ideal MMA cycles: the tensor pipe's idle
time in the block. Per tile switch (consumer 0): drain (last issue -> retired), epi (retired -> C
packed / stores issued), setup (-> the next unit's loop top), issue (-> its first wgmma issued).
Medians over the blocks of a launch, then over the launches; `plain`: the same launch untraced."""
import re
import statistics as st
import sys
from collections import defaultdict

HEAD = ["entry", "issue0", "landed0", "end0", "end1", "gentry", "gend0", "sm", "units", "ktiles"]
TILE = ["start", "first", "issued", "retired", "epi", "stored"]
H = {n: i for i, n in enumerate(HEAD)}
T = {n: i for i, n in enumerate(TILE)}
NT, WORDS = 8, len(HEAD) + 8 * 2 * len(TILE)


def knob(cfg, name, default=0):
    m = re.search(r"\b%s=(\d+)" % name, cfg)
    return int(m.group(1)) if m else default


def tile(w, j, c, name):
    return w[len(HEAD) + (j * 2 + c) * len(TILE) + T[name]]


def block(cfg, w):
    """The block's phases in cycles (dict) and its ns per cycle, or None."""
    if not w[H["end0"]] or not w[H["gend0"]]:
        return None
    nspc = (w[H["gend0"]] - w[H["gentry"]]) / max(1, w[H["end0"]] - w[H["entry"]])
    units = min(w[H["units"]], NT)
    pp = knob(cfg, "PINGPONG") == 1
    bm = 64 * knob(cfg, "WG_M", 1) * (1 if pp else knob(cfg, "CONSUMERS", 1))
    ideal = bm * knob(cfg, "BLOCK_N") * w[H["ktiles"]] * 64 * 2 / 4096.0
    e0 = w[H["entry"]]
    firsts, rets = [], []
    for j in range(units):
        f = [tile(w, j, c, "first") for c in (0, 1) if tile(w, j, c, "first")]
        r = [tile(w, j, c, "retired") for c in (0, 1) if tile(w, j, c, "retired")]
        if not f or not r:
            return None
        firsts.append(min(f))
        rets.append(max(r))
    end = max(w[H["end0"]], w[H["end1"]])
    p = {"units": units, "bspan": end - e0, "issue0": w[H["issue0"]] - e0, "landed0": w[H["landed0"]] - e0,
         "start": firsts[0] - e0, "loop": sum(rets[j] - firsts[j] - ideal for j in range(units)),
         "switch": sum(firsts[j + 1] - rets[j] for j in range(units - 1)), "end": end - rets[-1],
         "tile": st.median(rets[j] - firsts[j] for j in range(units)), "ideal": ideal,
         "gaps": [firsts[j + 1] - rets[j] for j in range(units - 1)]}
    p["idle"] = p["start"] + p["loop"] + p["switch"] + p["end"]
    # Consumer 0's own switches (cooperative: every unit is both consumers').
    parts = defaultdict(list)
    for j in range(units - 1):
        c = 0 if not pp else j & 1
        if not tile(w, j + 1, c, "start") and pp:
            c2 = (j + 1) & 1
            parts["issue"].append(tile(w, j + 1, c2, "first") - tile(w, j + 1, c2, "start"))
            continue
        parts["drain"].append(tile(w, j, c, "retired") - tile(w, j, c, "issued"))
        parts["epi"].append(tile(w, j, c, "epi") - tile(w, j, c, "retired"))
        parts["setup"].append(tile(w, j + 1, c, "start") - tile(w, j, c, "epi"))
        parts["issue"].append(tile(w, j + 1, c, "first") - tile(w, j + 1, c, "start"))
    for k in ("drain", "epi", "setup", "issue"):
        p["sw_" + k] = st.median(parts[k]) if parts[k] else float("nan")
    last = units - 1
    stored = [tile(w, last, c, "stored") for c in (0, 1) if tile(w, last, c, "stored")]
    p["end_store"] = (max(stored) - rets[-1]) if stored else float("nan")
    return p, nspc


def main():
    launches, plain = defaultdict(list), {}
    for line in sys.stdin:
        x = line.split()
        if len(x) == 6 and x[0] == "TMTK":
            plain[(x[1], x[2], x[3], int(x[4]))] = float(x[5])
        elif len(x) >= 7 + WORDS and x[0] == "TMT":
            launches[(x[1], x[2], x[3], int(x[4]))].append((float(x[5]), [int(v) for v in x[7:7 + WORDS]], x))
    groups = defaultdict(list)
    for key, rows in launches.items():
        cfg = key[1]
        bl = [b for b in (block(cfg, r[1]) for r in rows) if b]
        if not bl:
            continue
        nspc = st.median(b[1] for b in bl)
        g0 = min(r[1][H["gentry"]] for r in rows)
        f = {"plain": plain.get(key, float("nan")), "traced": rows[0][0],
             "span": (max(r[1][H["gend0"]] for r in rows) - g0) / 1000.0, "GHz": 1 / nspc, "blocks": len(bl),
             "ideal": bl[0][0]["ideal"]}
        for k in ["units", "bspan", "issue0", "landed0", "start", "loop", "switch", "end", "idle", "tile",
                  "sw_drain", "sw_epi", "sw_setup", "sw_issue", "end_store"]:
            v = [b[0][k] for b in bl if b[0][k] == b[0][k]]
            f[k] = st.median(v) if v else float("nan")
        gaps = [gp for b in bl for gp in b[0]["gaps"]]
        f["gap"] = st.median(gaps) if gaps else float("nan")
        f["gap_n"] = st.median(len(b[0]["gaps"]) for b in bl)
        # Blocks with the most units only (the kernel's critical path).
        top = max(b[0]["units"] for b in bl)
        f["idle_top"] = st.median(b[0]["idle"] for b in bl if b[0]["units"] == top)
        f["switch_top"] = st.median(b[0]["switch"] for b in bl if b[0]["units"] == top)
        groups[key[:3]].append(f)
    cyc = ["units", "tile", "issue0", "landed0", "start", "loop", "gap", "switch", "end", "idle", "idle_top",
           "sw_drain", "sw_epi", "sw_setup", "sw_issue", "end_store"]
    print("cycles (SM clock), medians over the launches (n) of each launch's median block; ideal = a tile's MMA "
          "cycles at the full tensor-pipe rate")
    short = lambda cfg: ",".join(x.split("=")[0][:5] + x.split("=")[1] for x in cfg.split(",") if "=" in x
                                 and x.split("=")[0] in ("BLOCK_N", "WG_M", "EPI_TMA", "SPLIT_K", "PINGPONG"))
    print("%-34s %-5s %2s " % ("config", "mode", "n") + " ".join("%8s" % c for c in ["ideal"] + cyc))
    for (shape, cfg, mode), fs in sorted(groups.items()):
        med = lambda k: st.median(f[k] for f in fs if f[k] == f[k]) if any(f[k] == f[k] for f in fs) else float("nan")
        print("%-34s %-5s %2d " % (short(cfg)[:34], mode, len(fs)) +
              " ".join("%8.0f" % med(k) for k in ["ideal"] + cyc))
    print("\nns: kernel (untraced, traced launch), blocks' span, SM GHz; per-block idle and switch totals in ns and as a "
          "fraction of the untraced kernel")
    print("%-34s %-5s %8s %8s %8s %6s %8s %8s %8s %8s %7s %7s" % ("config", "mode", "plain_us", "traced", "span_us",
                                                            "GHz", "idle_ns", "sw_ns", "gap_ns", "start_ns",
                                                            "sw/kern", "idle/k"))
    for (shape, cfg, mode), fs in sorted(groups.items()):
        med = lambda k: st.median(f[k] for f in fs if f[k] == f[k])
        ns = 1 / med("GHz")
        print("%-34s %-5s %8.2f %8.2f %8.2f %6.3f %8.0f %8.0f %8.0f %8.0f %7.4f %7.4f" % (
            short(cfg)[:34], mode, med("plain"), med("traced"), med("span"), med("GHz"), med("idle") * ns,
            med("switch") * ns, med("gap") * ns, med("start") * ns, med("switch") * ns / (1000 * med("plain")),
            med("idle") * ns / (1000 * med("plain"))))


if __name__ == "__main__":
    main()
