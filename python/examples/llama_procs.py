"""The child processes of llama.py (a Llama-style decoder end to end): TunableOp's (its state is
process-global, so it runs in a process of its own beside a torch baseline of that process) and
the repeat processes (torch and ktune timed again, with the caches the first process warmed), so
each figure has a median over processes with their range."""
import json
import os
import subprocess
import sys
import time

_LLAMA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "llama.py")


def _base(a):
    return os.path.splitext(os.path.abspath(a.json or "llama.json"))[0]


def child_argv(a, kind, out, variants=None, rounds=None, breakdown=None, deadline_s=0):
    """llama.py's command line for a child of kind "tunableop" or "timing"."""
    argv = [sys.executable, _LLAMA, "--child", kind, "--json", out, "--layers", str(a.layers),
            "--context", str(a.context), "--shapes", ",".join(a.shapes),
            "--rounds", str(rounds or a.rounds), "--tol", str(a.tol),
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


def tunableop_env(a):
    """The environment of TunableOp's child: no PYTORCH_TUNABLEOP_* of ours (ENABLED=1 would
    override enable(False) for its torch baseline; the child enables TunableOp through the API),
    its results file beside the JSON."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTORCH_TUNABLEOP_")}
    env["PYTORCH_TUNABLEOP_FILENAME"] = _base(a) + "_tunableop_results%d.csv"
    return env


def run_tunableop(a, log):
    """The TunableOp variant and a torch baseline in a child process; its JSON, or {}."""
    out = _base(a) + "_tunableop.json"
    budget = a.deadline_s * (1 if a.only_tunableop else 0.35)
    argv = child_argv(a, "tunableop", out, deadline_s=budget)
    return _run(argv, tunableop_env(a), budget + 15 if budget else None, out, log, "tunableop")


def run_repeats(a, log, left_s, need_s=45):
    """procs - 1 more processes timing torch and ktune (warm caches: the ktune database and code
    objects of the first process), 3 rounds each, no breakdown; each one only while left_s()
    leaves need_s. Returns their JSON results."""
    procs = []
    for i in range(2, a.procs + 1):
        left = left_s()
        if left < need_s:
            log(f"process {i} of {a.procs}: skipped ({left:.0f} s of the budget left, "
                f"{need_s} s needed)")
            break
        out = f"{_base(a)}_proc{i}.json"
        argv = child_argv(a, "timing", out, variants=("torch", "ktune"), rounds=3, breakdown=(),
                          deadline_s=left - 10)
        res = _run(argv, dict(os.environ), left - 5, out, log, f"process {i}")
        if res:
            res["process"] = i
            procs.append(res)
    return procs


def merge_tunableop(res, child):
    """TunableOp's rows (and its process's torch, as torch@child) into the main result."""
    for e in child.get("entries", []):
        e["variant"] = "torch@child" if e["variant"] == "torch" else e["variant"]
        res["entries"].append(e)
    for src in ("ops", "kernels"):
        for k, v in child.get(src, {}).items():
            if k.startswith("tunableop"):
                res[src][k] = v
