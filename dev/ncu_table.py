#!/usr/bin/env python3
"""Side-by-side table of an ncu raw CSV (`ncu --csv --page raw --log-file F`) over `gemm_bench
--profile` runs: one column per profiled kernel, named from the bench's PROFILE lines (same order),
one row per metric, stall reasons sorted by their share.

  python3 dev/ncu_table.py NCU_CSV BENCH_STDOUT        python3 dev/ncu_table.py --metrics QUERY_TXT
The second form prints the --metrics list for `ncu` from `ncu --query-metrics` output: the wanted
metrics that exist on this GPU (names differ between ncu versions and chips).
"""
import csv
import re
import sys

# (base name, suffixes): kept where the base appears in the query output.
WANTED = [
    ("gpu__time_duration", [".sum"]),
    ("sm__cycles_elapsed", [".avg.per_second"]),
    ("sm__throughput", [".avg.pct_of_peak_sustained_elapsed"]),
    ("sm__pipe_tensor_op_gmma_cycles_active", [".avg.pct_of_peak_sustained_active",
                                               ".avg.pct_of_peak_sustained_elapsed"]),
    ("sm__pipe_tensor_op_hmma_cycles_active", [".avg.pct_of_peak_sustained_active",
                                               ".avg.pct_of_peak_sustained_elapsed"]),
    ("sm__inst_issued", [".avg.pct_of_peak_sustained_active"]),
    ("sm__warps_active", [".avg.pct_of_peak_sustained_active"]),
    ("sm__cycles_active", [".avg", ".max", ".min"]),
    ("dram__throughput", [".avg.pct_of_peak_sustained_elapsed"]),
    ("dram__bytes_read", [".sum"]),
    ("dram__bytes_write", [".sum"]),
    ("lts__throughput", [".avg.pct_of_peak_sustained_elapsed"]),
    ("lts__t_sector_hit_rate", [".pct"]),
    ("lts__t_bytes", [".sum"]),
    # L2 requests and sectors from the SMs (TMA included): sectors per request show how many
    # 32-byte sectors a misaligned 128-byte box row touches; writes apart for the C stores.
    ("lts__t_requests_srcunit_tex", [".sum"]),
    ("lts__t_sectors_srcunit_tex", [".sum"]),
    ("lts__t_sectors_srcunit_tex_op_write", [".sum"]),
    # Shared memory: the LSU's wavefronts and bank conflicts (the epilogue's st.shared, the split
    # tail's exchange); TMA and wgmma traffic is not LSU, so the SM's memory throughput too.
    ("l1tex__data_pipe_lsu_wavefronts_mem_shared", [".sum", ".avg.pct_of_peak_sustained_elapsed"]),
    ("l1tex__data_bank_conflicts_pipe_lsu_mem_shared", [".sum"]),
    ("sm__memory_throughput", [".avg.pct_of_peak_sustained_elapsed"]),
    ("smsp__inst_executed", [".sum"]),
    ("launch__waves_per_multiprocessor", [""]),
    ("l1tex__throughput", [".avg.pct_of_peak_sustained_active"]),
    ("launch__registers_per_thread", [""]),
    ("launch__grid_size", [""]),
    ("launch__block_size", [""]),
    ("launch__shared_mem_per_block_dynamic", [""]),
]
STALL = re.compile(r"^smsp__average_warps_issue_stalled_([a-z_]+)_per_issue_active$")
CLUSTER = re.compile(r"^launch__.*cluster.*$")


def metrics(query_path):
    names = set()
    with open(query_path, errors="replace") as f:
        for line in f:
            tok = line.split()
            if tok and re.match(r"^[a-z0-9_]+__[a-z0-9_]+$", tok[0]):
                names.add(tok[0])
    out = [b + s for b, ss in WANTED if b in names for s in ss]
    out += sorted(n + ".ratio" for n in names if STALL.match(n))
    out += sorted(n for n in names if CLUSTER.match(n))
    return out


def table(csv_path, bench_path):
    labels = []
    with open(bench_path, errors="replace") as f:
        for line in f:
            if line.startswith("PROFILE "):
                p = line.split()
                cfg = p[3] if p[2] != "cublaslt" else "cublaslt " + p[3]
                cfg = re.sub(r"(CONSUMERS|WG_M|NUM_STAGES|BLOCK_N)=\d+,?", "", cfg)
                labels.append(p[1].replace("NT_", "") + " " + cfg)
    with open(csv_path, errors="replace") as f:
        lines = [l for l in f if l.startswith('"')]
    rows = list(csv.reader(lines))
    if len(rows) < 3:
        print("ncu_table: no kernels in", csv_path)
        return
    head, units, data = rows[0], rows[1], rows[2:]
    cols = []
    for i, r in enumerate(data):
        d = dict(zip(head, r))
        name = labels[i] if i < len(labels) else "?"
        cols.append((name, d))
    print("KERNELS")
    for i, (name, d) in enumerate(cols):
        print("  k%d = %s | %s" % (i, name, d.get("Kernel Name", "?")[:110]))
    skip = {"ID", "Process ID", "Process Name", "Host Name", "Kernel Name", "Context", "Stream",
            "Device", "CC", "Block Size", "Grid Size"}
    metric_names = [h for h in head if h not in skip]
    stalls = [m for m in metric_names if "issue_stalled" in m]
    rest = [m for m in metric_names if m not in stalls]

    def val(d, m):
        v = d.get(m, "")
        try:
            x = float(v.replace(",", ""))
            return "%.4g" % x
        except ValueError:
            return v[:12]
    unit = dict(zip(head, units))
    print("%-58s %s" % ("metric (unit)", " ".join("%10s" % ("k%d" % i) for i in range(len(cols)))))
    for m in rest:
        print("%-58s %s" % ((m + " (" + unit.get(m, "") + ")")[:58],
                            " ".join("%10s" % val(d, m) for _, d in cols)))

    def fl(d, m):
        try:
            return float(d.get(m, "0").replace(",", ""))
        except ValueError:
            return 0.0
    stalls.sort(key=lambda m: -max(fl(d, m) for _, d in cols))
    print("stall reasons (warps stalled per issue; largest first)")
    for m in stalls:
        if max(fl(d, m) for _, d in cols) < 0.05:
            continue
        short = STALL.sub(r"\1", m.replace(".ratio", ""))
        print("  %-56s %s" % (short[:56], " ".join("%10s" % val(d, m) for _, d in cols)))


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--metrics":
        print(",".join(metrics(sys.argv[2])))
    elif len(sys.argv) == 3:
        table(sys.argv[1], sys.argv[2])
    else:
        sys.exit(__doc__)
