"""python/examples/llama_ktune.py (llama.py's ktune variant): its fused rotary + KV-cache write
(llama_rope_kv), the kernel source read from examples/llama_kernels.h (the C++ decoder's),
registers as a ktune family, and its key expressions evaluate as the C++ decoder's do
(examples/llama.cc --check prints the same key on the simulated backend)."""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "examples"))

import llama_ktune  # noqa: E402  (python/examples/llama_ktune.py: stdlib imports only)


def test_rope_kv_family_registers_and_keys(sim):
    fam = llama_ktune.rope_kv_family()
    assert fam is not None, "examples/llama_kernels.h not found beside python/examples"
    p = 1 << 20  # stand-in addresses: a key reads none
    # qkv, ld, q, kc, vc, cos, sin, then B, T, nq, nkv, hd, S, pos0 (the tiny model's decode)
    key = fam.key_of(p, 256, p, p, p, p, p, 2, 1, 8, 2, 32, 17, 16)
    assert key == "pow2(B * T)=2,nq=8,nkv=2,hd=32"
