"""torch.nn.functional of the CPU stand-in (dev/llama_cpu/torch)."""
import numpy as np


def linear(x, w):
    return x._new(x.a @ w.a.T)


def rms_norm(x, shape, w, eps):
    a = x.a / np.sqrt(np.mean(x.a * x.a, axis=-1, keepdims=True) + eps)
    return x._new(a * w.a if w is not None else a)


def silu(x):
    return x._new(x.a / (1 + np.exp(-x.a)))


def scaled_dot_product_attention(q, k, v, is_causal=False, enable_gqa=False):
    qa, ka, va = q.a, k.a, v.a
    if enable_gqa and ka.shape[1] != qa.shape[1]:
        r = qa.shape[1] // ka.shape[1]
        ka, va = np.repeat(ka, r, axis=1), np.repeat(va, r, axis=1)
    s = qa @ np.swapaxes(ka, -1, -2) / np.sqrt(qa.shape[-1])
    if is_causal:
        s = s + np.triu(np.full(s.shape[-2:], -np.inf), 1)
    p = np.exp(s - s.max(-1, keepdims=True))
    return q._new((p / p.sum(-1, keepdims=True)) @ va)
