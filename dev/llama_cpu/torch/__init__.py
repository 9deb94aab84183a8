"""A CPU stand-in for the part of torch that python/examples/llama.py uses (numpy arrays, float32
throughout; CUDA streams, events, graphs, TunableOp, torch.compile and the profiler as no-ops or
host timers), so the harness's whole flow (variants, checks, captures, timing rounds, breakdowns,
repeat processes, the report) can be dry-run on a machine without a GPU or torch:
  PYTHONPATH=dev/llama_cpu python3 python/examples/llama.py --tiny ...   (dev/llama_cpu_dryrun.sh)
Nothing it prints is a measurement. Not a general torch: only what the harness calls."""
import types

import numpy as np

__version__ = "0.0-cpu-standin"


class dtype:  # noqa: N801  (torch's name)
    def __init__(self, name, size):
        self.name, self.itemsize = name, size

    def __repr__(self):
        return "torch." + self.name


float32, float16, bfloat16, uint8 = (dtype("float32", 4), dtype("float16", 2),
                                     dtype("bfloat16", 2), dtype("uint8", 1))
contiguous_format = object()


def _arr(x):
    return x.a if isinstance(x, Tensor) else x


class Tensor:
    is_cuda = True

    def __init__(self, a, dt=float32):
        self.a, self.dtype = np.asarray(a), dt

    # shape and layout
    shape = property(lambda self: self.a.shape)
    device = property(lambda self: "cuda:0")
    dim = lambda self: self.a.ndim  # noqa: E731
    numel = lambda self: int(self.a.size)  # noqa: E731
    element_size = lambda self: self.dtype.itemsize  # noqa: E731
    get_device = lambda self: 0  # noqa: E731
    data_ptr = lambda self: 1 << 20  # noqa: E731

    def size(self, i=None):
        return self.a.shape if i is None else self.a.shape[i]

    def stride(self, i=None):
        st = tuple(s // self.a.itemsize for s in self.a.strides)
        return st if i is None else st[i]

    def is_contiguous(self):
        return self.a.flags["C_CONTIGUOUS"]

    def _new(self, a):
        return Tensor(a, self.dtype)

    def view(self, *shape):
        return self._new(self.a.reshape(*shape))
    reshape = view

    def contiguous(self):
        return self._new(np.ascontiguousarray(self.a))

    def clone(self, memory_format=None):
        return self._new(self.a.copy())

    def to(self, dt):
        return Tensor(self.a.astype(np.float32), dt)

    def float(self):
        return Tensor(self.a.astype(np.float32), float32)

    def transpose(self, i, j):
        return self._new(np.swapaxes(self.a, i, j))

    def t(self):
        return self.transpose(0, 1)

    def split(self, sizes, dim=0):
        idx = np.cumsum(sizes)[:-1]
        return tuple(self._new(x) for x in np.split(self.a, idx, axis=dim))

    def new_empty(self, shape):
        return self._new(np.zeros(shape, np.float32))

    def copy_(self, other):
        self.a[...] = _arr(other)
        return self

    def zero_(self):
        self.a[...] = 0
        return self

    # math
    cos = lambda self: self._new(np.cos(self.a))  # noqa: E731
    sin = lambda self: self._new(np.sin(self.a))  # noqa: E731
    isfinite = lambda self: self._new(np.isfinite(self.a))  # noqa: E731
    all = lambda self: self._new(np.all(self.a))  # noqa: E731
    norm = lambda self: self._new(np.linalg.norm(self.a))  # noqa: E731
    clamp_min = lambda self, v: self._new(np.maximum(self.a, v))  # noqa: E731
    __bool__ = lambda self: bool(self.a)  # noqa: E731
    __float__ = lambda self: float(self.a)  # noqa: E731
    __neg__ = lambda self: self._new(-self.a)  # noqa: E731
    __add__ = __radd__ = lambda self, o: self._new(self.a + _arr(o))  # noqa: E731
    __sub__ = lambda self, o: self._new(self.a - _arr(o))  # noqa: E731
    __mul__ = __rmul__ = lambda self, o: self._new(self.a * _arr(o))  # noqa: E731
    __truediv__ = lambda self, o: self._new(self.a / _arr(o))  # noqa: E731
    __rtruediv__ = lambda self, o: self._new(_arr(o) / self.a)  # noqa: E731
    __pow__ = lambda self, o: self._new(self.a ** _arr(o))  # noqa: E731
    __rpow__ = lambda self, o: self._new(_arr(o) ** self.a)  # noqa: E731
    __matmul__ = lambda self, o: self._new(self.a @ _arr(o))  # noqa: E731

    def _index(self, i):
        return tuple(_arr(x) for x in i) if isinstance(i, tuple) else _arr(i)

    def __getitem__(self, i):
        return self._new(self.a[self._index(i)])

    def __setitem__(self, i, v):
        self.a[self._index(i)] = _arr(v)


class Generator:
    def __init__(self, device=None):
        self.rng = np.random.default_rng(0)

    def manual_seed(self, s):
        self.rng = np.random.default_rng(s)
        return self


def randn(*shape, generator=None, device=None, dtype=float32):
    if len(shape) == 1 and isinstance(shape[0], tuple):
        shape = shape[0]
    return Tensor((generator.rng if generator else np.random.default_rng()).standard_normal(
        shape).astype(np.float32), dtype)


def arange(a, b=None, step=1, device=None, dtype=None):
    return Tensor(np.arange(a, b, step) if b is not None else np.arange(a), dtype or float32)


def empty(shape, dtype=float32, device=None):
    return Tensor(np.zeros(shape, np.float32), dtype)


def empty_like(t):
    return Tensor(np.zeros_like(t.a), t.dtype)


def cat(ts, dim=0):
    return Tensor(np.concatenate([t.a for t in ts], axis=dim), ts[0].dtype)


def compile(fn, mode=None, dynamic=None):  # noqa: A001  (torch's name)
    return fn


_dynamo = types.SimpleNamespace(config=types.SimpleNamespace(cache_size_limit=8))


_C = types.SimpleNamespace(_cuda_getCurrentRawStream=lambda dev: 0)
version = types.SimpleNamespace(cuda=None)
from . import cuda, nn, profiler  # noqa: E402,F401  (submodules, as torch has them)
