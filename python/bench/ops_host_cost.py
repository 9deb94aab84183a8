"""Host cost of a ktune.ops call beside torch's own op (issue 36: the eager decode step is host-bound,
so a ktune.ops call must cost no more host time than the torch op it replaces).

Thread CPU time per call, GPU-gated as host_cost.py does (batches behind a spin kernel, shuffled
rounds, median with a 95% interval); the ops at a decode shape (one row of Llama-3-8B's hidden
size), each beside its torch peer:

  gemm       ktune.ops.gemm(x, w.t())                 F.linear(x, w)
  rms_norm   ktune.ops.rms_norm(x, w)                 F.rms_norm(x, (H,), w)
  add_norm   ktune.ops.rms_norm(d, w, residual=r)     r += d; F.rms_norm(r, (H,), w)
  silu_mul   ktune.ops.silu_mul(g)                    F.silu(g[:, :I]) * g[:, I:]

then the pieces of a ktune.ops.gemm call alone (what the Python wrapper does before the engine),
so a cut can be aimed: the argument checks, the output allocation, the parameter dict, the stream
getter, the binding with its dict prepared.

  python3 ops_host_cost.py            (GPU; also bench_gpu.py --only=host_cost)
"""
import sys
import time

import torch
import torch.nn.functional as F

import host_cost

ROWS, H, I = 1, 4096, 14336


def _pieces(x, w, out):
    """(label, fn) of the pieces of one ktune.ops.gemm(x, w.t()) call."""
    from ktune import _ktune, ops
    b = w.t()
    params = ops._gemm_params(x, b, None, None, out)
    tuner = ops._tuner(x)
    stream = ops._stream(x)
    return [
        ("piece: _check(a), _check(b, device, dtype)",
         lambda: (ops._check(x, "a"), ops._check(b, "b", x.device, x.dtype))),
        ("piece: torch.empty((M, N), dtype, device)",
         lambda: torch.empty((x.shape[0], b.shape[1]), dtype=x.dtype, device=x.device)),
        ("piece: _gemm_params (the dict)", lambda: ops._gemm_params(x, b, None, None, out)),
        ("piece: _tuner(a)", lambda: ops._tuner(x)),
        ("piece: _stream(a)", lambda: ops._stream(x)),
        ("piece: w.t() view", lambda: w.t()),
        ("piece: _ktune.gemm(tuner, dict, stream) alone",
         lambda: _ktune.gemm(tuner, params, stream)),
    ]


def variants():
    """[(key, label, fn)] in pairs (ktune op, torch op)."""
    from ktune import ops
    g = torch.Generator(device="cuda").manual_seed(0)
    rnd = lambda *s: torch.randn(*s, generator=g, device="cuda").to(torch.bfloat16)  # noqa: E731
    x, w = rnd(ROWS, H), rnd(H, H) * H ** -0.5
    nw, d, r = 1 + rnd(H) * 0.1, rnd(ROWS, H), rnd(ROWS, H)
    gu = rnd(ROWS, 2 * I)
    out = torch.empty(ROWS, H, dtype=torch.bfloat16, device="cuda")

    def torch_add_norm():
        r.add_(d)
        return F.rms_norm(r, (H,), nw, 1e-5)
    v = [("gemm_ktune", "ktune.ops.gemm(x, w.t())", lambda: ops.gemm(x, w.t())),
         ("gemm_torch", "  peer: F.linear(x, w)", lambda: F.linear(x, w)),
         ("norm_ktune", "ktune.ops.rms_norm(x, w)", lambda: ops.rms_norm(x, nw, 1e-5)),
         ("norm_torch", "  peer: F.rms_norm(x, (H,), w)", lambda: F.rms_norm(x, (H,), nw, 1e-5)),
         ("add_norm_ktune", "ktune.ops.rms_norm(d, w, residual=r)",
          lambda: ops.rms_norm(d, nw, 1e-5, residual=r)),
         ("add_norm_torch", "  peer: r += d; F.rms_norm(r)", torch_add_norm),
         ("silu_ktune", "ktune.ops.silu_mul(g)", lambda: ops.silu_mul(gu)),
         ("silu_torch", "  peer: F.silu(g[:, :I]) * g[:, I:]",
          lambda: F.silu(gu[:, :I]) * gu[:, I:])]
    pieces = [(f"piece{i}", label, fn) for i, (label, fn) in enumerate(_pieces(x, w, out))]
    return v, pieces


def table(rounds=10, round_sets=3):
    """Runs both tables; returns {op: (ktune cpu us, torch cpu us)}."""
    v, pieces = variants()
    for _, _, fn in v + pieces:
        fn()  # tunes the ops' keys before anything is timed
    torch.cuda.synchronize()
    rows, gate = host_cost.gated_table(v, rounds=rounds, round_sets=round_sets, spin_ms=6.0)
    by = {key: c for key, _, c, _, _, _ in rows}
    print(f"\n== host_cost: ktune.ops vs torch's own op, thread CPU us per call, GPU gated "
          f"({round_sets} x {rounds} shuffled rounds, batch {host_cost.BATCH}; {gate.caught_up} "
          f"batches dropped); decode row [{ROWS} x {H}], GEMM {ROWS}x{H}x{H}, SiLU·Mul d={I}")
    print(f"  {'op':10s} {'ktune us [95% int]':>24s} {'torch us [95% int]':>24s} "
          f"{'ktune / torch':>13s}")
    res = {}
    for op in ("gemm", "norm", "add_norm", "silu"):
        k, t = by[op + "_ktune"], by[op + "_torch"]
        res[op] = (k[0] / 1e3, t[0] / 1e3)
        print(f"  {op:10s} {k[0] / 1e3:8.2f} [{k[1] / 1e3:6.2f},{k[2] / 1e3:6.2f}] "
              f"{t[0] / 1e3:8.2f} [{t[1] / 1e3:6.2f},{t[2] / 1e3:6.2f}] {k[0] / t[0]:13.3f}")
        print(f"RESULT host_cost {op} ktune_ns {k[0]:.0f} torch_ns {t[0]:.0f}")
    prow, _ = host_cost.gated_table(pieces, rounds=rounds, round_sets=1, spin_ms=6.0)
    print("  the pieces of one ktune.ops.gemm call (CPU us, median):")
    for _, label, c, _, _, _ in prow:
        print(f"    {label:48s} {c[0] / 1e3:7.2f}")
    return res


if __name__ == "__main__":
    t0 = time.perf_counter()
    table(rounds=int(sys.argv[1]) if len(sys.argv) > 1 else 10)
    print(f"total {time.perf_counter() - t0:.0f} s")
