#!/usr/bin/env python3
"""Tuning time of the peers (issue 34), for dev/regret_device.sh: how long Triton's autotuner and
torch.compile(mode="max-autotune") take to tune a bf16 GEMM, on the shapes `ktune tune gemm` is
timed on, in the same device run.

- Triton: the tutorial matmul (03-matrix-multiplication) with the tutorial's CUDA autotune
  configs, keyed on (M, N, K); timed from the first call of a shape (compile + benchmark of every
  config) to its result on the host, then a second call to show the cached path.
- Inductor: torch.compile(mm, mode="max-autotune", dynamic=False) of a matmul, timed from the
  first call (Dynamo trace, Inductor codegen, Triton template autotuning and cuBLAS comparison) to
  its result; torch._dynamo.reset() between shapes so each is compiled and tuned on its own.
- ktune, measured the same way (the peers' definition, not the CLI's process wall): the first
  ktune.ops.gemm call of a shape (the tuner's set-up with its isolation worker on the first shape,
  the guided search, the winner's launch) to its result on the host, in a process whose torch has
  the inputs on the GPU already. "ktune" runs with an empty ktune cache and a fresh CUDA compute
  cache (cold: every candidate compiled); "ktune_warm" right after it on the same code-object
  store with the tuning database removed (warm: nothing compiled, every shape tuned again).
  Isolation on (KTUNE_ISOLATE=1), as `ktune tune` runs (the package's bin/ktune-worker); the
  package must be importable (the Llama call's /tmp/kpy).

Each peer runs in a child process of its own, killed when it passes --budget seconds (a
torch.compile call cannot be interrupted from inside: max-autotune may take minutes for one
shape, so an in-process budget could not hold). A peer cut by its budget is a line saying so,
with the time as a lower bound: "> S s". Inductor gets a fresh cache directory
(TORCHINDUCTOR_CACHE_DIR) so its figure is a cold tuning, like ktune's cold one; Triton's cache is
whatever the machine has (cold on a fresh device machine). Prints one line per shape and peer,
then a summary.
Usage: python3 bench/tuning_peers.py [--budget S] [--shapes MxNxK,...] [--peers triton,inductor,ktune,ktune_warm]
"""
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

PEERS = ("triton", "inductor", "ktune", "ktune_warm")


def _parent():
    """Runs every peer in a child with a hard time limit (before torch is imported here)."""
    budget, shapes, peers = 90.0, None, list(PEERS)
    for arg in sys.argv[1:]:
        if arg.startswith("--budget="):
            budget = float(arg.split("=", 1)[1])
        elif arg.startswith("--shapes="):
            shapes = arg.split("=", 1)[1]
        elif arg.startswith("--peers="):
            peers = [p for p in arg.split("=", 1)[1].split(",") if p in PEERS]
    summary = []
    kcache = tempfile.mkdtemp(prefix="ktune-peer-")  # ktune's, then ktune_warm's with its db removed
    for peer in peers:
        cmd = [sys.executable, os.path.abspath(__file__), f"--child={peer}"]
        if shapes:
            cmd.append(f"--shapes={shapes}")
        env = dict(os.environ, PYTHONUNBUFFERED="1")
        if peer == "inductor":
            env["TORCHINDUCTOR_CACHE_DIR"] = tempfile.mkdtemp(prefix="inductor-cold-")
        if peer.startswith("ktune"):
            env.update(KTUNE_CACHE_DIR=kcache, KTUNE_ISOLATE="1")
            if peer == "ktune":  # NVRTC keeps its results in the CUDA compute cache: a fresh one
                shutil.rmtree(kcache, ignore_errors=True)
                env["CUDA_CACHE_PATH"] = tempfile.mkdtemp(prefix="nvcache-cold-")
            else:
                shutil.rmtree(os.path.join(kcache, "db"), ignore_errors=True)
        t0 = time.perf_counter()
        # Its own process group: Inductor compiles in worker processes, which must go with it
        # (left running they would load the GPU machine during the next measurement).
        child = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                 text=True, start_new_session=True)
        try:
            out, _ = child.communicate(timeout=budget)
            note = f"rc={child.returncode}"
        except subprocess.TimeoutExpired:
            note = f"killed at its budget of {budget:.0f} s"
        finally:
            try:
                os.killpg(child.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        if "killed" in note:
            out, _ = child.communicate()
        wall = time.perf_counter() - t0
        lines = out.splitlines()
        for line in lines:
            print(line, flush=True)
        tuned = [ln for ln in lines if ": tuning " in ln]
        if not tuned and "killed" in note:
            # Import and start-up are part of the child's wall, so this bounds the tuning.
            print(f"{peer}: no shape finished: tuning > {wall:.0f} s wall of its process ({note})")
        summary.append(f"{peer}: child process {wall:.1f} s wall, {note}")
    print("\n== peers' processes ==")
    for line in summary:
        print(line)


if __name__ == "__main__" and not any(a.startswith("--child=") for a in sys.argv[1:]):
    _parent()
    sys.exit(0)

try:
    import torch
    import triton
    import triton.language as tl
except ImportError as e:  # pragma: no cover
    print(f"tuning_peers.py: skipped ({e})")
    sys.exit(0)

if not torch.cuda.is_available():
    print("tuning_peers.py: skipped (no GPU)")
    sys.exit(0)


def _cfg(bm, bn, bk, stages, warps):
    return triton.Config({"BLOCK_SIZE_M": bm, "BLOCK_SIZE_N": bn, "BLOCK_SIZE_K": bk,
                          "GROUP_SIZE_M": 8}, num_stages=stages, num_warps=warps)


# The tutorial's get_cuda_autotune_config(): eight configs, then four it lists for fp8 inputs.
TUTORIAL_CONFIGS = [
    _cfg(128, 256, 64, 3, 8), _cfg(64, 256, 32, 4, 4), _cfg(128, 128, 32, 4, 4),
    _cfg(128, 64, 32, 4, 4), _cfg(64, 128, 32, 4, 4), _cfg(128, 32, 32, 4, 4),
    _cfg(64, 32, 32, 5, 2), _cfg(32, 64, 32, 5, 2),
    _cfg(128, 256, 128, 3, 8), _cfg(256, 128, 128, 3, 8), _cfg(256, 64, 128, 4, 4),
    _cfg(64, 256, 128, 4, 4),
]


@triton.autotune(configs=TUTORIAL_CONFIGS, key=["M", "N", "K"])
@triton.jit
def matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_ak, stride_bk, stride_bn,
                  stride_cm, stride_cn, BLOCK_SIZE_M: tl.constexpr, BLOCK_SIZE_N: tl.constexpr,
                  BLOCK_SIZE_K: tl.constexpr, GROUP_SIZE_M: tl.constexpr):
    pid = tl.program_id(axis=0)
    num_pid_m = tl.cdiv(M, BLOCK_SIZE_M)
    num_pid_n = tl.cdiv(N, BLOCK_SIZE_N)
    num_pid_in_group = GROUP_SIZE_M * num_pid_n
    group_id = pid // num_pid_in_group
    first_pid_m = group_id * GROUP_SIZE_M
    group_size_m = min(num_pid_m - first_pid_m, GROUP_SIZE_M)
    pid_m = first_pid_m + ((pid % num_pid_in_group) % group_size_m)
    pid_n = (pid % num_pid_in_group) // group_size_m
    offs_am = (pid_m * BLOCK_SIZE_M + tl.arange(0, BLOCK_SIZE_M)) % M
    offs_bn = (pid_n * BLOCK_SIZE_N + tl.arange(0, BLOCK_SIZE_N)) % N
    offs_k = tl.arange(0, BLOCK_SIZE_K)
    a_ptrs = a_ptr + (offs_am[:, None] * stride_am + offs_k[None, :] * stride_ak)
    b_ptrs = b_ptr + (offs_k[:, None] * stride_bk + offs_bn[None, :] * stride_bn)
    acc = tl.zeros((BLOCK_SIZE_M, BLOCK_SIZE_N), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BLOCK_SIZE_K)):
        a = tl.load(a_ptrs, mask=offs_k[None, :] < K - k * BLOCK_SIZE_K, other=0.0)
        b = tl.load(b_ptrs, mask=offs_k[:, None] < K - k * BLOCK_SIZE_K, other=0.0)
        acc = tl.dot(a, b, acc)
        a_ptrs += BLOCK_SIZE_K * stride_ak
        b_ptrs += BLOCK_SIZE_K * stride_bk
    c = acc.to(tl.bfloat16)
    offs_cm = pid_m * BLOCK_SIZE_M + tl.arange(0, BLOCK_SIZE_M)
    offs_cn = pid_n * BLOCK_SIZE_N + tl.arange(0, BLOCK_SIZE_N)
    c_ptrs = c_ptr + stride_cm * offs_cm[:, None] + stride_cn * offs_cn[None, :]
    tl.store(c_ptrs, c, mask=(offs_cm[:, None] < M) & (offs_cn[None, :] < N))


def triton_mm(a, b):
    M, K = a.shape
    _, N = b.shape
    c = torch.empty((M, N), device=a.device, dtype=torch.bfloat16)
    grid = lambda META: (triton.cdiv(M, META["BLOCK_SIZE_M"]) * triton.cdiv(N, META["BLOCK_SIZE_N"]),)
    matmul_kernel[grid](a, b, c, M, N, K, a.stride(0), a.stride(1), b.stride(0), b.stride(1),
                        c.stride(0), c.stride(1))
    return c


def timed(fn):
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    out = fn()
    torch.cuda.synchronize()
    return time.perf_counter() - t0, out


def inputs(m, n, k):
    a = torch.randn((m, k), device="cuda", dtype=torch.bfloat16)
    b = torch.randn((n, k), device="cuda", dtype=torch.bfloat16).t()  # NT, as ktune's default
    return a, b


def main():
    shapes = [(4096, 4096, 4096), (4096, 28672, 4096), (16, 4096, 4096)]
    peer = "triton"
    for arg in sys.argv[1:]:
        if arg.startswith("--child="):
            peer = arg.split("=", 1)[1]
        elif arg.startswith("--shapes="):
            shapes = [tuple(int(x) for x in s.split("x")) for s in arg.split("=", 1)[1].split(",")]
    os.environ.setdefault("TRITON_PRINT_AUTOTUNING", "0")
    print(f"device: {torch.cuda.get_device_name()}; torch {torch.__version__}, triton {triton.__version__}")
    if peer == "triton":
        print(f"triton tutorial autotuner: {len(TUTORIAL_CONFIGS)} configs")
        name, first_call = "triton autotune", lambda a, b: triton_mm(a, b)
    elif peer.startswith("ktune"):
        import ktune  # noqa: PLC0415 (the package is optional for the other peers)
        name = "ktune guided" + (" (warm store)" if peer == "ktune_warm" else " (cold)")
        first_call = lambda a, b: ktune.ops.gemm(a, b)  # noqa: E731
    else:
        name, first_call = "inductor max-autotune", None
    rows = []
    # Inductor's max-autotune takes tens of seconds a shape: the first shape only.
    for (m, n, k) in (shapes if first_call is not None else shapes[:1]):
        a, b = inputs(m, n, k)
        if first_call is None:
            torch._dynamo.reset()
            f = torch.compile(lambda x, y: x @ y, mode="max-autotune", dynamic=False)
            call = lambda: f(a, b)
        else:
            call = lambda: first_call(a, b)
        try:
            t_tune, out = timed(call)
            # Before the next call: Inductor's CUDA graphs reuse the output's memory.
            err = (out.float() - (a.float() @ b.float())).abs().max().item()
            del out
            t_again, _ = timed(call)
            line = f"{name} {m}x{n}x{k}: tuning {t_tune:.2f} s (first call to result), " \
                   f"next call {1e3 * t_again:.2f} ms, max |err| {err:.3g}"
            rows.append((name, m, n, k, t_tune))
        except Exception as e:  # a peer failing is a line, not the end of the run
            line = f"{name} {m}x{n}x{k}: failed: {type(e).__name__}: {str(e)[:600]}"
        print(line, flush=True)
    for name, m, n, k, t in rows:
        print(f"summary {name:24s} {m}x{n}x{k}: {t:.2f} s")


if __name__ == "__main__":
    main()
