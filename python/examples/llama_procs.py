"""The repeat processes of llama.py (a Llama-style decoder end to end): every variant timed again
in a process of its own, with the caches the first process warmed (ktune's tuning database and
code objects, inductor's and Triton's caches, TunableOp's results), so each figure has a median
over processes with their range. Tuning and compile times are the first process's."""
import json
import os
import subprocess
import sys
import time

_LLAMA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "llama.py")


def _base(a):
    return os.path.splitext(os.path.abspath(a.json or "llama.json"))[0]


def child_argv(a, kind, out, variants=None, rounds=None, breakdown=None, deadline_s=0):
    """llama.py's command line for a child of kind "timing" (a repeat process)."""
    argv = [sys.executable, _LLAMA, "--child", kind, "--json", out, "--layers", str(a.layers),
            "--context", str(a.context), "--shapes", ",".join(a.shapes),
            "--compile-shapes", ",".join(a.compile_shapes), "--compile-scope", a.compile_scope,
            "--unfused-shapes", ",".join(a.unfused_shapes),
            "--nopdl-shapes", ",".join(a.nopdl_shapes),
            "--fused-shapes", ",".join(a.fused_shapes),
            "--rounds", str(rounds or a.rounds), "--tol", str(a.tol), "--ktune-add", a.ktune_add,
            "--breakdown", ",".join(a.breakdown if breakdown is None else breakdown)]
    if variants:
        argv += ["--variants", ",".join(variants)]
    if deadline_s:
        argv += ["--deadline-s", f"{deadline_s:.0f}"]
    return argv + ["--tiny"] * a.tiny + ["--no-graphs"] * a.no_graphs


def _run(argv, env, timeout, out, log, what):
    log(f"{what}: child process " + " ".join(argv[1:]))
    t0 = time.perf_counter()
    try:
        rc = subprocess.run(argv, env=env, timeout=timeout).returncode
    except subprocess.TimeoutExpired:
        rc = "timed out"
    log(f"{what}: rc {rc}, {time.perf_counter() - t0:.0f} s")
    return load(out)


def load(path):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return {}


def run_repeats(a, variants, log, left_s):
    """procs - 1 more processes timing `variants` (warm caches), a.repeat_rounds rounds each, no
    breakdown; each one only while left_s() leaves what the last one took (a.repeat_need_s
    before the first). Returns their JSON results."""
    procs, need = [], a.repeat_need_s
    for i in range(2, a.procs + 1):
        left = left_s()
        if left < need:
            log(f"process {i} of {a.procs}: skipped ({left:.0f} s of the budget left, "
                f"{need:.0f} s needed)")
            break
        out = f"{_base(a)}_proc{i}.json"
        argv = child_argv(a, "timing", out, variants=variants, rounds=a.repeat_rounds,
                          breakdown=(), deadline_s=left - 10)
        t0 = time.perf_counter()
        res = _run(argv, dict(os.environ), left - 5, out, log, f"process {i}")
        need = time.perf_counter() - t0 + 5
        if res:
            res["process"] = i
            procs.append(res)
    return procs
