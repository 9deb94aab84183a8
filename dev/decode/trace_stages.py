#!/usr/bin/env python3
"""The decode kernel's per-stage trace (DC_TRACE = 2, templates/gemm/decode/decode_wg_trace.cuh) from
gemm_bench --trace's DCT lines (stdin). Per (shape, config, mode) and per stage index of a block's
run, medians over every block of every launch (ns, clock64 at the launch's median ns per cycle):
  empty:  the producer's wait on the slot's `empty` (top -> go; stages past the ring's first round)
  issue:  its expect_tx and boxes (go -> issued)
  lat:    go -> consumer thread 0 past `full`, only where that thread waited on `full` over 40 ns
          (so it passed as the bytes landed: an issue -> landed latency; n: how many such samples)
  fwait:  consumer thread 0's wait on `full` (wait -> full)
  mma_is: the stage's wgmma issue and commit (full -> commit)
  mma_wt: the wgmma wait and warp 0's release (commit -> done)
  skew:   the last consumer warp's release after warp 0's (done -> rel)
  r2go:   the slot's release (last warp) -> the producer past its `empty` wait for the stage that
          refills it (stage s + ring; shown at stage s + ring)
  period: consumer past `full` of this stage after the previous one's
  held:   stages issued and not yet released when this one is issued (the ring's occupancy)
  ahead:  stages issued beyond this one when the consumer got past its `full` (landed or in flight)
Then the steady state (stages ring .. S-2): the same medians pooled, and the consumer's share of
time waiting on `full` against its wgmma time, and the first launch's first block's stamps (its
first 16 stages). First, per (shape, config, mode): the launches' event
times (us, median [range]) untraced (DCTK lines) and traced (DCT lines): what the stamps cost."""
import statistics as st
import sys
from collections import defaultdict

NPH = 18  # phase words (kTrEvents)
TOP, GO, ISSUED, WAIT, FULL, COMMIT, DONE, REL = range(8)
W = 8  # kTsWords


def ring_of(cfg):
    kv = dict(x.split("=") for x in cfg.split(",") if "=" in x)
    return 2 * int(kv.get("DC_DEPTH", "2"))


def read(lines, events):
    """(shape, cfg, mode) -> [(launch, block, ns_per_cycle, [[8 stamps] per stage])]; events[key]:
    (untraced us list, traced us list)"""
    launches = defaultdict(list)
    for line in lines:
        w = line.split()
        if len(w) == 6 and w[0] == "DCTK":
            events[(w[1], w[2], w[3])][0].append(float(w[5]))
        if len(w) < 7 + NPH or w[0] != "DCT":
            continue
        words = [int(x) for x in w[7:]]
        launches[(w[1], w[2], w[3], int(w[4]))].append((int(w[6]), words, float(w[5])))
    out = defaultdict(list)
    for (shape, cfg, mode, i), rows in launches.items():
        events[(shape, cfg, mode)][1].append(rows[0][2])
        ratios = [(r[15] - r[14]) / max(1, r[13] - r[0]) for _, r, _ in rows if r[13] and r[15]]
        npc = st.median(ratios) if ratios else 1 / 1.98
        for b, r, _ in rows:
            stages = []
            for s in range((len(r) - NPH + W - 1) // W):
                v = (r[NPH + s * W:NPH + (s + 1) * W] + [0] * W)[:W]
                if not v[FULL]:
                    break
                stages.append(v)
            if stages:
                out[(shape, cfg, mode)].append((i, b, npc, stages))
    return out


def per_stage(blocks, ring):
    """stage index -> metric -> [ns samples]"""
    m = defaultdict(lambda: defaultdict(list))
    for _, _, npc, S in blocks:
        n = len(S)
        for s, v in enumerate(S):
            d = m[s]
            if s >= ring and v[TOP] and v[GO]:
                d["empty"].append((v[GO] - v[TOP]) * npc)
            if v[GO] and v[ISSUED]:
                d["issue"].append((v[ISSUED] - v[GO]) * npc)
            if v[WAIT] and v[GO] and (v[FULL] - v[WAIT]) * npc > 40:
                d["lat"].append((v[FULL] - v[GO]) * npc)
            if v[WAIT]:
                d["fwait"].append((v[FULL] - v[WAIT]) * npc)
            if v[COMMIT]:
                d["mma_is"].append((v[COMMIT] - v[FULL]) * npc)
            if v[COMMIT] and v[DONE]:
                d["mma_wt"].append((v[DONE] - v[COMMIT]) * npc)
            if v[DONE] and v[REL]:
                d["skew"].append((v[REL] - v[DONE]) * npc)
            if s >= ring and S[s - ring][REL] and v[GO]:
                d["r2go"].append((v[GO] - S[s - ring][REL]) * npc)
            if s >= 1:
                d["period"].append((v[FULL] - S[s - 1][FULL]) * npc)
            if v[GO]:
                d["held"].append(sum(1 for j in range(s) if S[j][REL] > v[GO]))
            d["ahead"].append(sum(1 for j in range(s + 1, n) if S[j][GO] and S[j][GO] <= v[FULL]))
    return m


COLS = ["empty", "issue", "lat", "fwait", "mma_is", "mma_wt", "skew", "r2go", "period", "held", "ahead"]


def fmt(v, c):
    if not v:
        return "%7s" % "-"
    x = st.median(v)
    return "%7.1f" % x if c in ("held", "ahead") else "%7.0f" % x


def main():
    events = defaultdict(lambda: ([], []))
    data = read(sys.stdin, events)
    for key, (plain, traced) in sorted(events.items()):
        f = lambda v: "%.2f [%.2f, %.2f]" % (st.median(v), min(v), max(v)) if v else "-"
        print("event us %s %s %s: untraced %s, traced %s" % (key[0], key[2], key[1], f(plain), f(traced)))
    for (shape, cfg, mode), blocks in sorted(data.items()):
        ring = ring_of(cfg)
        short = ",".join(x.split("=")[0][3:] + x.split("=")[1] for x in cfg.split(",") if x.startswith("DC_"))
        nl = len({b[0] for b in blocks})
        print("== %s %s %s: %d launches, %d block runs, ring %d stages, stages per block %s" %
              (shape, mode, short, nl, len(blocks), ring, sorted({len(b[3]) for b in blocks})))
        m = per_stage(blocks, ring)
        print("%5s " % "stage" + " ".join("%7s" % c for c in COLS) + "  n(lat)")
        for s in sorted(m):
            print("%5d " % s + " ".join(fmt(m[s][c], c) for c in COLS) + "  %d" % len(m[s]["lat"]))
        n = max(m) + 1
        pool = defaultdict(list)
        for s in range(ring, n - 1):
            for c in COLS:
                pool[c] += m[s][c]
        print("steady " + " ".join(fmt(pool[c], c) for c in COLS) + "  %d" % len(pool["lat"]))
        i0, b0, npc0, S0 = min(blocks, key=lambda x: (x[0], x[1]))
        t0 = S0[0][TOP] or S0[0][WAIT]
        print("launch %d block %d, ns after stage 0's top: top go issued wait full commit done rel" % (i0, b0))
        for s, v in enumerate(S0[:16]):
            print("  %2d " % s + " ".join("%6.0f" % ((x - t0) * npc0) if x else "     -" for x in v))
        busy = st.median(pool["mma_is"] + [0]) + st.median(pool["mma_wt"] + [0]) if pool["mma_is"] else 0
        if pool["period"]:
            p = st.median(pool["period"])
            print("steady: period %.0f ns = full wait %.0f + wgmma issue %.0f + wgmma wait/release %.0f + rest %.0f"
                  % (p, st.median(pool["fwait"]), st.median(pool["mma_is"]), st.median(pool["mma_wt"]),
                     p - st.median(pool["fwait"]) - busy))


if __name__ == "__main__":
    main()
