"""A CPU stand-in for the ktune package as python/examples/llama_ktune.py uses it (dev/llama_cpu):
ktune.ops on the numpy tensors of the torch stand-in, no kernel families (rotary stays torch's).
Only for dry runs of the harness's flow; it tunes nothing."""
from . import ops  # noqa: F401


class InvalidArgument(ValueError):
    pass


class Unsupported(RuntimeError):
    pass


def kernel(*args, **kwargs):
    return None  # no family: llama_ktune's rotary + KV write falls back to torch's


def autotune(**kwargs):
    return lambda k: k
