#!/usr/bin/env python3
"""GPU machine, a probe for issue 34 (bench/NOTES.md): how long a fresh process waits for what the
first compiles need (the arch and the SM count), through the driver (dlopen libcuda + cuInit +
cuDeviceGetAttribute) or through NVML (dlopen libnvidia-ml + nvmlInit + the compute capability and
the CUDA core count), alone and as two processes at once (a tuning run and its isolation worker
both start the driver). Each measurement in its own process; rounds alternate the modes.
Usage: init_probe.py [ROUNDS]   (prints one line per process, then the medians)"""
import ctypes, statistics, subprocess, sys, time


def child(mode):
    t0 = time.perf_counter()
    if mode == "cuinit":
        cu = ctypes.CDLL("libcuda.so.1")
        t1 = time.perf_counter()
        rc = cu.cuInit(0)
        dev, sms, ma, mi = ctypes.c_int(), ctypes.c_int(), ctypes.c_int(), ctypes.c_int()
        cu.cuDeviceGet(ctypes.byref(dev), 0)
        cu.cuDeviceGetAttribute(ctypes.byref(sms), 16, dev)  # MULTIPROCESSOR_COUNT
        cu.cuDeviceGetAttribute(ctypes.byref(ma), 75, dev)   # COMPUTE_CAPABILITY_MAJOR
        cu.cuDeviceGetAttribute(ctypes.byref(mi), 76, dev)
        what = f"rc {rc} sm_{ma.value}{mi.value} {sms.value} SMs"
    else:
        nv = ctypes.CDLL("libnvidia-ml.so.1")
        t1 = time.perf_counter()
        rc = nv.nvmlInit_v2()
        h, ma, mi, cores = ctypes.c_void_p(), ctypes.c_int(), ctypes.c_int(), ctypes.c_uint()
        nv.nvmlDeviceGetHandleByIndex_v2(0, ctypes.byref(h))
        nv.nvmlDeviceGetCudaComputeCapability(h, ctypes.byref(ma), ctypes.byref(mi))
        rc2 = nv.nvmlDeviceGetNumGpuCores(h, ctypes.byref(cores))
        what = f"rc {rc}/{rc2} sm_{ma.value}{mi.value} {cores.value} cores"
    t2 = time.perf_counter()
    print(f"{mode} dlopen {1e3 * (t1 - t0):.1f} ms init+query {1e3 * (t2 - t1):.1f} ms {what}")


def run(mode, n=1):
    ps = [subprocess.Popen([sys.executable, __file__, "--child", mode], stdout=subprocess.PIPE,
                           text=True) for _ in range(n)]
    return [p.communicate()[0].strip() for p in ps]


if __name__ == "__main__":
    if len(sys.argv) > 2 and sys.argv[1] == "--child":
        try:
            child(sys.argv[2])
        except OSError as e:  # no driver here
            print(f"{sys.argv[2]} unavailable: {e}")
        sys.exit(0)
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 4
    got = {}
    for r in range(rounds):
        for mode, n in (("cuinit", 1), ("nvml", 1), ("cuinit", 2)):
            for line in run(mode, n):
                print(f"round {r} x{n} {line}")
                f = line.split()
                if "init+query" not in f:
                    continue
                got.setdefault(f"{mode} x{n}", []).append(float(f[f.index("init+query") + 1]))
    for k, v in got.items():
        print(f"median {k}: init+query {statistics.median(v):.1f} ms (min {min(v):.1f}, max {max(v):.1f}, n {len(v)})")
