"""Is the Python bench's row-wise headline stable at the small shapes? (dev probe, GPU machine)

The bench's headline (bench_gpu.py Timer.pair_ms: the op and its copy peer alternating run by run,
per-call events after a read flush, median of 40 each) read 0.880 once for rms_norm 4096x4096 where
the same run's block method read 1.002 and the previous session's headline 0.986. This repeats,
for the two small shapes, ROUNDS rounds of: the pair method, the block method (40 runs of the copy,
then 40 of the op), printing each round's ratio, the op's and the copy's median µs, and the SM and
memory clocks (nvidia-smi) between rounds. It uses the bench's Timer as it is: since the loops are
enqueued behind a spin kernel (Timer._gated), the rounds agree; before, single rounds read
0.79-0.94 with the op waiting for its own Python launch (NOTES, sixth session).
Usage: PYTHONPATH=<package> python3 dev/pair_probe.py [rounds]"""
import os
import subprocess
import sys

import torch

import ktune

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python",
                                "bench"))
from bench_gpu import Timer  # noqa: E402


def clocks():
    try:
        out = subprocess.run(["nvidia-smi", "--query-gpu=clocks.sm,clocks.mem,power.draw,"
                              "temperature.gpu", "--format=csv,noheader"],
                             capture_output=True, text=True, timeout=10).stdout.strip()
        return out.replace(" ", "")
    except (OSError, subprocess.SubprocessError):
        return "?"


def main():
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 8
    timer = Timer()
    x = torch.randn(4096, 4096, device="cuda", dtype=torch.bfloat16)
    w = torch.randn(4096, device="cuda", dtype=torch.bfloat16)
    y = torch.empty_like(x)
    xs = torch.randn(4096, 4096, device="cuda", dtype=torch.bfloat16)  # silu: d = 2048
    src = torch.empty(4096 * 3 * 2048 // 2, device="cuda", dtype=torch.bfloat16)
    dst = torch.empty_like(src)
    ktune.ops.rms_norm(x, w, 1e-6)
    ktune.ops.silu_mul(xs)
    torch.cuda.synchronize()
    cases = [("rms_norm 4096x4096", lambda: y.copy_(x), lambda: ktune.ops.rms_norm(x, w, 1e-6)),
             ("silu_mul 4096x2048", lambda: dst.copy_(src), lambda: ktune.ops.silu_mul(xs))]
    print(f"{'case':20s} {'round':>5s} {'pair':>6s} {'op us':>7s} {'copy us':>7s} "
          f"{'block':>6s} {'op us':>7s} {'copy us':>7s}  clocks (sm, mem, W, C)")
    for r in range(rounds):
        for name, copy, op in cases:
            pc, pk = timer.pair_ms(copy, op)
            bc, bk = timer.kernel_ms(copy), timer.kernel_ms(op)
            print(f"{name:20s} {r:5d} {pc / pk:6.3f} {pk * 1e3:7.1f} {pc * 1e3:7.1f} "
                  f"{bc / bk:6.3f} {bk * 1e3:7.1f} {bc * 1e3:7.1f}  {clocks()}", flush=True)
    print(f"loops timed again because the GPU caught up with the host: {timer.caught_up}")


if __name__ == "__main__":
    main()
