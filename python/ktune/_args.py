"""Arguments of a tuned call: keyword binding, the stream, numpy arrays on the simulated backend,
and the snapshots behind reset_to_zero / restore_value."""
import sys

from ._errors import InvalidArgument


def bind(names, args, kwargs):
    out = list(args)
    for n in names[len(args):]:
        if n not in kwargs:
            raise InvalidArgument(f"missing argument '{n}'")
        out.append(kwargs.pop(n))
    if kwargs:
        raise InvalidArgument(f"unexpected arguments {sorted(kwargs)}")
    return tuple(out)


def _torch_stream(device):
    # torch's current stream on `device` once torch is imported (else the default stream), without
    # building a torch.cuda.Stream object (the raw getter costs a fraction of current_stream()).
    t = sys.modules.get("torch")
    if t is None:
        return 0
    return t._C._cuda_getCurrentRawStream(device)


def stream_getter(backend):
    """(fn, device) -> stream: what a call uses when no stream is given: torch's current stream
    of the tuner's device on a GPU backend (the raw getter itself once torch is imported), else
    None (the default stream, 0)."""
    if backend not in ("cuda", "hip"):
        return None
    t = sys.modules.get("torch")
    return t._C._cuda_getCurrentRawStream if t is not None else _torch_stream


_torch_api_tried = False


def install_torch_api(backend):
    """Once per process, on a CUDA backend with torch imported: the launcher reads tensors' data
    pointers and torch's current stream through ktune._ktune_torch (torch's C++ API), when the
    package was built with it for this torch version; otherwise it keeps calling data_ptr() and
    the raw stream getter."""
    global _torch_api_tried
    t = sys.modules.get("torch")
    if _torch_api_tried or backend != "cuda" or t is None:
        return
    _torch_api_tried = True
    try:
        from . import _ktune, _ktune_torch  # noqa: PLC0415
    except ImportError:  # not built (no torch at build time), or built against another torch
        return
    if _ktune_torch.TORCH_VERSION == t.__version__:
        _ktune.set_torch_api(_ktune_torch.api(), t._C._cuda_getCurrentRawStream)


def stream_int(s):
    """A stream as an address: an int, a torch.cuda.Stream (cuda_stream), or a cupy stream (ptr)."""
    for attr in ("cuda_stream", "ptr", "handle"):
        if hasattr(s, attr):
            return int(getattr(s, attr))
    return int(s)


class SimBuffer:
    """A numpy array copied to the simulated device for one call (the engine sees data_ptr())."""

    def __init__(self, tuner, host):
        self.tuner, self.host = tuner, host
        self.addr = tuner.alloc(max(host.nbytes, 1))
        tuner.copy_to_device(self.addr, host)

    def data_ptr(self):
        return self.addr

    def finish(self, write_back):
        try:
            if write_back:
                self.tuner.copy_to_host(self.host, self.addr)
        finally:
            self.tuner.free(self.addr)


def run_with(at, args, stream, fn):
    """fn(args, stream) with numpy arrays replaced by simulated device buffers on the sim backend
    (copied back afterwards when writeable)."""
    if stream is None:
        stream = 0
    np = sys.modules.get("numpy")
    if not getattr(at, "_sim", False) or np is None:
        return fn(args, stream)
    bufs = {}
    try:
        for i, a in enumerate(args):
            if isinstance(a, np.ndarray):
                if not a.flags.c_contiguous:
                    raise InvalidArgument(f"argument '{at.arg_names[i]}': numpy array is not "
                                          "C-contiguous")
                bufs[i] = SimBuffer(at.tuner, a)
        args = tuple(bufs.get(i, a) for i, a in enumerate(args))
        return fn(args, stream)
    finally:
        for b in bufs.values():
            b.finish(b.host.flags.writeable)


def call_with_host_arrays(at, args, stream):
    def call(a, s):
        return at._call_hooked(a, s) if at._hooks else at._k(a, s)
    return run_with(at, args, stream, call)


def snapshot(a):
    if isinstance(a, SimBuffer):
        out = a.host.copy()
        a.tuner.copy_to_host(out, a.addr)
        return out
    if hasattr(a, "clone"):
        return a.clone()
    raise InvalidArgument(f"reset_to_zero/restore_value: unsupported argument type {type(a)}")


def restore(a, saved):
    if isinstance(a, SimBuffer):
        a.tuner.copy_to_device(a.addr, saved)
    else:
        a.copy_(saved)


def zero(a):
    if isinstance(a, SimBuffer):
        a.tuner.copy_to_device(a.addr, a.host * 0)
    elif hasattr(a, "zero_"):
        a.zero_()
    else:
        raise InvalidArgument(f"reset_to_zero: unsupported argument type {type(a)}")


def _parse_config(config):
    """{"BLOCK": 256, "VEC": 2} from the engine's config string "BLOCK=256,VEC=2"."""
    out = {}
    for part in filter(None, config.split(",")):
        k, _, v = part.partition("=")
        out[k] = int(v)
    return out


class SourceFn:
    """A user's source_fn(config dict) -> text | (text, language[, entry]) as the binding calls
    it: (config string) -> (text, language, entry). A bare string is CUDA/HIP C++."""

    def __init__(self, fn):
        self.fn = fn
        self.__qualname__ = getattr(fn, "__qualname__", type(fn).__qualname__)

    def __call__(self, config):
        r = self.fn(_parse_config(config))
        if isinstance(r, (str, bytes)):
            return r, "cuda", None
        if not isinstance(r, (tuple, list)) or len(r) not in (2, 3):
            raise InvalidArgument(f"source_fn returned {type(r).__name__}: expected (text, "
                                  "language) or (text, language, entry)")
        return r[0], r[1], r[2] if len(r) == 3 else None


class HookSlot:
    """A family's before_run (KernelSpec::before_run): runs the hooks of the call in flight, if
    any (one tuning call of the family at a time sets `pending`)."""

    def __init__(self):
        self.pending = None

    def __call__(self, stream):
        p = self.pending
        if p is not None:
            p.run(stream)


class Pending:
    """reset_to_zero / restore_value of one call: the restore_value arguments are saved before
    the first run and put back before every later one; the reset_to_zero ones zeroed before
    every run. Torch work goes on the engine's stream."""

    def __init__(self, args, zero, restore, device):
        self.args, self.zero, self.restore, self.device = args, zero, restore, device
        self.saved = None

    def run(self, stream):
        t = sys.modules.get("torch")
        if t is not None and stream and t.cuda.is_available():
            with t.cuda.stream(t.cuda.ExternalStream(stream, device=self.device)):
                self._apply()
        else:
            self._apply()

    def _apply(self):
        if self.saved is None:
            self.saved = {i: snapshot(self.args[i]) for i in self.restore}
        else:
            for i, v in self.saved.items():
                restore(self.args[i], v)
        for i in self.zero:
            zero(self.args[i])
