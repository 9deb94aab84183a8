"""The ktune variant of llama.py (a Llama-style decoder end to end): its ops, and the fused
rotary + KV-cache write kernel of examples/llama_kernels.h (the C++ decoder's, examples/llama.cc)
registered as a tuned ktune family."""
import os


_KERNELS_H = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "examples",
                          "llama_kernels.h")


def rope_kv_family():
    """llama_rope_kv of examples/llama_kernels.h as a tuned ktune family (its source, space, key
    and launch rule as llama.cc registers them), or None when that file is not beside us."""
    import ktune
    try:
        with open(_KERNELS_H) as f:
            src = f.read().split('R"(', 1)[1].split(')";', 1)[0]
    except (OSError, IndexError):
        return None
    sig = [("qkv", "ptr"), ("ld", "i64"), ("qo", "ptr"), ("kc", "ptr"), ("vc", "ptr"),
           ("cos", "ptr"), ("sin", "ptr")] + [(n, "i32") for n in
                                              ("B", "T", "nq", "nkv", "hd", "S", "pos0")]
    k = ktune.kernel(src, "llama_rope_kv", grid=["B * T", "cdiv(nq + 2 * nkv, HPB)"],
                     block="HPB * (hd / 2)", signature=sig)
    return ktune.autotune(space={"HPB": [1, 2, 4, 8]}, key=["pow2(B * T)", "nq", "nkv", "hd"],
                          name="llama_rope_kv", default={"HPB": 4})(k)


class KtuneOps:
    name = "ktune"
    clone_input = True  # the fused residual add writes the residual in place

    def __init__(self, eps, cfg=None):
        import ktune.ops
        self.k, self.eps, self.cfg = ktune.ops, eps, cfg
        self.rope = rope_kv_family() if cfg is not None else None
        # ktune.ops.gemm(epilogue="silu_mul"): gate/up GEMM and SiLU·Mul in one kernel, where
        # this ktune has it (decode rows only, on the decode kernel). Per row count, the first
        # call tunes both paths and times them: the fused one is kept only where it is faster (the
        # decode kernel loses to cuBLASLt at M = 128), a refused one runs unfused.
        self.fused_gate_up = "silu_mul" in getattr(self.k, "_EPILOGUES", ())
        self.fused_rows = {}  # M -> True (fused) / False (unfused)

    def gate_up_silu(self, h, wgu):
        m = h.shape[0]
        fused = self.fused_rows.get(m)
        if fused is None:
            fused = self.fused_rows[m] = self._choose_gate_up(h, wgu)
        if fused:
            return self.k.gemm(h, wgu.t(), epilogue="silu_mul")
        return self.k.silu_mul(self.k.gemm(h, wgu.t()))

    def _choose_gate_up(self, h, wgu, reps=3, calls=5):
        """Fused or unfused gate/up + SiLU·Mul at h's row count: both tuned by a first call, then
        timed interleaved (CUDA events, best of `reps` x `calls` calls)."""
        import ktune
        import torch
        m = h.shape[0]
        if not self.fused_gate_up or m > 128 or torch.cuda.is_current_stream_capturing():
            return False
        runs = {True: lambda: self.k.gemm(h, wgu.t(), epilogue="silu_mul"),
                False: lambda: self.k.silu_mul(self.k.gemm(h, wgu.t()))}
        try:
            runs[True]()
        except (ktune.InvalidArgument, ktune.Unsupported) as e:
            print(f"  ktune: gemm epilogue='silu_mul' refused at M={m} "
                  f"({str(e).splitlines()[0][:200]}); unfused at M={m}", flush=True)
            return False
        runs[False]()
        best = {True: float("inf"), False: float("inf")}
        for _ in range(reps):
            for fused, fn in runs.items():
                s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                s.record()
                for _ in range(calls):
                    fn()
                e.record()
                e.synchronize()
                best[fused] = min(best[fused], s.elapsed_time(e) * 1e3 / calls)
        print(f"  ktune: gate/up + SiLU·Mul at M={m}: fused {best[True]:.1f} us, unfused "
              f"{best[False]:.1f} us: {'fused' if best[True] < best[False] else 'unfused'}",
              flush=True)
        return best[True] < best[False]

    def rope_kv(self, qkv, kc, vc, rope_f, B, T):
        """Rotated q [B, T, nq, hd] (a new tensor); rotated k and v written into the caches."""
        import torch
        c = self.cfg
        cosf, sinf, pos0 = rope_f
        q = torch.empty((B * T, c["n_heads"] * c["head_dim"]), dtype=qkv.dtype, device=qkv.device)
        self.rope(qkv, qkv.stride(0), q, kc, vc, cosf, sinf, B, T, c["n_heads"], c["n_kv"],
                  c["head_dim"], kc.shape[2], pos0)
        return q.view(B, T, c["n_heads"], c["head_dim"])

    def linear(self, x, w):
        return self.k.gemm(x, w.t())

    def norm(self, x, w):
        return self.k.rms_norm(x, w, self.eps)

    def add_norm(self, delta, resid, w):
        return self.k.rms_norm(delta, w, self.eps, residual=resid)

    def silu_mul(self, gu):
        return self.k.silu_mul(gu)
