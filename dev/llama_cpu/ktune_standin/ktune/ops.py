"""ktune.ops of the CPU stand-in (dev/llama_cpu/ktune_standin): numpy, and a short sleep on an
op's first call per shape in place of tuning (so the harness's first-call table has entries), and
with KTUNE_VERBOSE=1 a key's lines in the engine's format (llama_keys.py reads them)."""
import os
import sys
import time

import numpy as np

_EPILOGUES = (None, "none", "silu", "gelu", "silu_mul")
_seen = set()


def _tune(*key):
    if key not in _seen:
        _seen.add(key)
        time.sleep(0.01)
        if os.environ.get("KTUNE_VERBOSE", "0") not in ("", "0"):  # the engine's per-key lines
            k = "M=%s,shape=%s" % (key[1][0], "x".join(str(v) for v in key[1:]))
            print(f"{key[0]} [{k}]: 3 candidates, 3 compiled, 0 store hits\n"
                  "  compile 6.5 ms, bench 3.25 ms (1 ms of it while compiling), total 10 ms "
                  "(host wall)", file=sys.stderr, flush=True)


def rms_norm(x, weight=None, eps=1e-6, residual=None):
    _tune("rms", x.shape, residual is not None)
    if residual is not None:
        residual.a[...] = residual.a + x.a
        x = residual
    a = x.a / np.sqrt(np.mean(x.a * x.a, axis=-1, keepdims=True) + eps)
    y = x._new(a * weight.a if weight is not None else a)
    return (y, residual) if residual is not None else y


def silu_mul(x):
    _tune("silu_mul", x.shape)
    d = x.shape[-1] // 2
    g = x.a[..., :d]
    return x._new(g / (1 + np.exp(-g)) * x.a[..., d:])


def gemm(a, b, bias=None, epilogue=None, residual=None, out=None):
    _tune("gemm", a.shape, b.shape, epilogue, residual is not None)
    c = a._new(a.a @ b.a)
    c = silu_mul(c) if epilogue == "silu_mul" else c
    if residual is not None:
        c = c._new(c.a + residual.a)
    if out is not None:
        out.a[...] = c.a
        return out
    return c
