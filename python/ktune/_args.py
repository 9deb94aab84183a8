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
