"""Per config (not only each key's pick) of a knob_ab call (dev/decode/device_tail.sh and the other
device_*.sh that run gemm_bench --only/--twin): the µs of every process, the read bound / X and
cuBLASLt's best / X of the same rounds (median [range] over the processes), the read and cuBLASLt
best µs (medians). Reads OUT/bench1..N.log (unpack logs.tgz first).
    python3 dev/decode/cfg_ratios.py OUT N"""
import re
import statistics as st
import sys


def short(cfg):
    kv = dict(x.split("=") for x in cfg.split(","))
    s = f"G{kv['DC_GRID']} W{kv['DC_WARPS']} NT{kv['DC_NT']} U{kv['DC_U']} D{kv['DC_DEPTH']}"
    return s + "".join(f" {k[3:]}{v}" for k, v in kv.items() if k in ("DC_TAIL", "DC_XH", "DC_ST", "DC_WP", "DC_EF", "DC_SR"))


def main(out, n):
    rows = {}
    for p in range(1, n + 1):
        cur = {}
        for line in open(f"{out}/bench{p}.log"):
            m = re.match(r"TWIN gemm NT_(\S+)/(\w+) (twin\d+) decode:(\S+)", line)
            if m:
                cur.setdefault((m[1], m[2]), {})[m[3]] = m[4]
                continue
            m = re.match(r"RESULT gemm NT_(\S+)/(\w+) (\S+) ([\d.]+)", line)
            if m:
                cur.setdefault((m[1], m[2]), {}).setdefault("res", {})[m[3]] = float(m[4])
                continue
            m = re.match(r"NT_(\S+)/(\w+)/iter.*ltbest_over_ktune=[\d.]+ decode:(\S+?);", line)
            if m:
                cur.setdefault((m[1], m[2]), {})["ktune"] = m[3]
        for key, d in cur.items():
            r = d.get("res", {})
            for name, cfg in d.items():
                if name != "res" and name in r:
                    rows.setdefault((key, cfg), []).append((r[name], r["read_bound"], r["cublaslt_best"]))
    for (key, cfg), v in sorted(rows.items()):
        rb = [x[1] / x[0] for x in v]
        cb = [x[2] / x[0] for x in v]
        print(f"{key[0]:15s} {key[1]:5s} {short(cfg):24s} µs {'/'.join('%.2f' % x[0] for x in v)}"
              f" | read/X {st.median(rb):.3f} [{min(rb):.3f}, {max(rb):.3f}]"
              f" | best/X {st.median(cb):.3f} [{min(cb):.3f}, {max(cb):.3f}]"
              f" | read {st.median([x[1] for x in v]):.2f} best {st.median([x[2] for x in v]):.2f}")


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]))
