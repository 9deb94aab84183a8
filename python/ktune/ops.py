"""The tuned ops (ktune::ops) on torch tensors: RMSNorm (optionally fused with a residual add),
SiLU·Mul and GEMM. Arguments are checked here with errors naming the argument; the call runs on
torch's current stream, on a tuner for the tensors' device (tuning the first call per key).
register_torch_ops() makes them torch.library custom ops (torch.ops.ktune.*) for torch.compile."""
import sys

from . import _ktune, _tuners
from ._errors import InvalidArgument

_DTYPES = {}


def _dtype(t, what):
    import torch
    if not _DTYPES:
        _DTYPES.update({torch.float32: 0, torch.float16: 1, torch.bfloat16: 2})
        # FP8 GEMM inputs (KTUNE_DTYPE_F8E4M3 / _F8E5M2), where this torch has them.
        for name, code in (("float8_e4m3fn", 3), ("float8_e5m2", 4)):
            if hasattr(torch, name):
                _DTYPES[getattr(torch, name)] = code
    code = _DTYPES.get(t.dtype)
    if code is None:
        raise InvalidArgument(f"{what}: dtype {t.dtype} not supported (float32, float16, bfloat16; "
                              f"gemm inputs also float8_e4m3fn, float8_e5m2)")
    return code


def _check(t, what, device=None, dtype=None):
    """device: a device index (compared with t.get_device(): no torch.device object is made on
    the call's path) or a torch.device."""
    try:
        cuda = t.is_cuda
    except AttributeError:
        raise InvalidArgument(f"{what}: expected a torch.Tensor, got {type(t).__name__}") from None
    if not cuda:
        raise InvalidArgument(f"{what}: tensor is on {t.device}; ktune.ops run on GPU tensors")
    if device is not None and (t.get_device() if type(device) is int else t.device) != device:
        raise InvalidArgument(f"{what}: on {t.device}, expected {device}")
    if dtype is not None and t.dtype != dtype:
        raise InvalidArgument(f"{what}: dtype {t.dtype}, expected {dtype}")


_op_tuners = {}  # (tuners' state, device index) -> tuner: get_tuner() merges options per call


def _tuner(t):
    key = (_tuners.state(), t.get_device())  # get_device(): an int, no torch.device object
    tuner = _op_tuners.get(key)
    if tuner is None:
        if _op_tuners and next(iter(_op_tuners))[0] != key[0]:
            _op_tuners.clear()  # reset() or set_options(): the old tuners are not reused
        tuner = _op_tuners[key] = _tuners.get_tuner(device=key[1])
    return tuner


def _stream(t):
    """torch's current stream on t's device (which may differ from the current device)."""
    return sys.modules["torch"]._C._cuda_getCurrentRawStream(t.get_device())


def _rows(x, what):
    """x as [rows, cols] with unit inner stride and one row stride (no copy)."""
    if x.dim() < 1 or x.shape[-1] == 0:
        raise InvalidArgument(f"{what}: needs a last dimension, got shape {tuple(x.shape)}")
    if x.stride(-1) != 1:
        raise InvalidArgument(f"{what}: the last dimension must be contiguous (stride "
                              f"{x.stride(-1)})")
    if x.dim() == 1:
        return x.view(1, -1)
    if x.dim() == 2:
        return x
    try:
        return x.view(-1, x.shape[-1])
    except RuntimeError as e:
        raise InvalidArgument(f"{what}: rows of shape {tuple(x.shape)} are not evenly strided; "
                              "call .contiguous()") from e


def rms_norm(x, weight=None, eps=1e-6, residual=None):
    """y = x / rms(x) * weight over the last dimension. With residual: s = x + residual is
    written into residual (in place, as vLLM's fused_add_rms_norm) and normalised; returns
    (y, residual). Else returns y (a new contiguous tensor of x's shape)."""
    _check(x, "x")
    x2 = _rows(x, "x")
    rows, cols = x2.shape
    dt = _dtype(x, "x")
    dev = x.get_device()
    if weight is not None:
        _check(weight, "weight", dev, x.dtype)
        if weight.shape != (cols,) or weight.stride(0) != 1:
            raise InvalidArgument(f"weight: expected contiguous shape ({cols},), got "
                                  f"{tuple(weight.shape)}")
    if residual is not None:
        _check(residual, "residual", dev, x.dtype)
        if residual.shape != x.shape or not residual.is_contiguous():
            raise InvalidArgument(f"residual: expected a contiguous tensor of shape "
                                  f"{tuple(x.shape)}")
    y = x2.new_empty((rows, cols))  # x's dtype and device, contiguous
    res = residual.data_ptr() if residual is not None else 0
    _ktune.rmsnorm(_tuner(x), dt, rows, cols, y.data_ptr(), x2.data_ptr(),
                   weight.data_ptr() if weight is not None else 0, res, res, x2.stride(0), cols,
                   float(eps), _stream(x))
    if x.dim() != 2:
        y = y.view(x.shape)
    return (y, residual) if residual is not None else y


def silu_mul(x):
    """silu(x[..., :d]) * x[..., d:] for x of last dimension 2d; returns [..., d]."""
    _check(x, "x")
    x2 = _rows(x, "x")
    rows, two_d = x2.shape
    if two_d % 2:
        raise InvalidArgument(f"x: last dimension {two_d} is odd (expected 2*d)")
    d = two_d // 2
    out = x2.new_empty((rows, d))
    _ktune.silu_mul(_tuner(x), _dtype(x, "x"), rows, d, out.data_ptr(), x2.data_ptr(),
                    x2.stride(0), d, _stream(x))
    return out if x.dim() == 2 else out.view(*x.shape[:-1], d)


def _operand(t, what, rows, cols):
    """('N', ld) for a row-major [rows, cols] view, ('T', ld) for a transposed one."""
    if t.dim() != 2 or tuple(t.shape) != (rows, cols):
        raise InvalidArgument(f"{what}: expected shape ({rows}, {cols}), got {tuple(t.shape)}")
    if t.stride(1) == 1:
        return "N", t.stride(0)
    if t.stride(0) == 1:
        return "T", t.stride(1)
    raise InvalidArgument(f"{what}: neither rows nor columns are contiguous (strides "
                          f"{t.stride()}); call .contiguous()")


_EPILOGUES = (None, "none", "silu", "gelu", "silu_mul")


def _gemm_params(a, b, bias, epilogue, out, beta=0.0):
    m, k = a.shape
    n = b.shape[1]
    la, lda = _operand(a, "a", m, k)
    lb, ldb = _operand(b, "b", k, n)
    if epilogue not in _EPILOGUES:
        raise InvalidArgument(f"epilogue {epilogue!r}: expected None, 'silu', 'gelu' or 'silu_mul'")
    return {"layout": la + lb, "ab": _dtype(a, "a"), "c": _dtype(out, "out"), "m": m, "n": n,
            "k": k, "lda": lda, "ldb": ldb, "ldc": out.stride(0), "alpha": 1.0, "beta": beta,
            "activation": epilogue or "none", "a": a.data_ptr(), "b": b.data_ptr(),
            "out": out.data_ptr(), "bias": bias.data_ptr() if bias is not None else 0}


def _gemm_out(a, cols, residual, out, dtype=None):
    """The output tensor [M, cols] of `dtype` (default a's): `out` (checked), else a new one; holds
    `residual` when given (no copy when out is residual: C += a @ b in place)."""
    import torch
    dtype = dtype or a.dtype
    shape = (a.shape[0], cols)
    if residual is not None:
        _check(residual, "residual", a.device, dtype)
        if tuple(residual.shape) != shape:
            raise InvalidArgument(f"residual: expected shape {shape}, got {tuple(residual.shape)}")
    if out is None:
        return (residual.clone(memory_format=torch.contiguous_format) if residual is not None
                else torch.empty(shape, dtype=dtype, device=a.device))
    _check(out, "out", a.device, dtype)
    if tuple(out.shape) != shape or out.stride(1) != 1:
        raise InvalidArgument(f"out: expected shape {shape} with contiguous rows, got "
                              f"{tuple(out.shape)} strides {out.stride()}")
    if residual is not None and out.data_ptr() != residual.data_ptr():
        out.copy_(residual)
    return out


def _scale(s, what, a):
    """An fp8 scale as a device pointer: a one-element float32 tensor on a's device (as
    torch._scaled_mm takes them; a Python number is copied to one), None = 1.0."""
    import torch
    if s is None:
        return 0, None
    if not isinstance(s, torch.Tensor):
        s = torch.tensor([float(s)], dtype=torch.float32, device=a.device)
    _check(s, what, a.device, torch.float32)
    if s.numel() != 1:
        raise InvalidArgument(f"{what}: expected one per-tensor scale, got {s.numel()} elements")
    return s.data_ptr(), s


def gemm(a, b, bias=None, epilogue=None, residual=None, out=None, scale_a=None, scale_b=None,
         out_dtype=None):
    """act(a @ b + bias + residual) for a [M, K], b [K, N] (either may be a transposed view, e.g.
    w.t()), bias [N] or None, residual [M, N] or None, epilogue None / "silu" / "gelu" /
    "silu_mul"; float16 or bfloat16. Returns [M, N] (`out` when given; out=residual adds in
    place). epilogue "silu_mul" is an MLP's gate/up pair in one GEMM: b's first N/2 columns are
    the gate, the last N/2 the up projection (w = cat([w_gate, w_up]) of shape [N, K], passed as
    w.t()); it returns silu(g) * u of shape [M, N/2] with g, u the two halves of a @ b + bias,
    plus residual [M, N/2] after the product. It is tuned over the decode and Hopper TMA kernels'
    gate/up pairs (M <= 128, b from a row-major [N, K] weight, K % 8 == 0).

    FP8: a and b torch.float8_e4m3fn (or float8_e5m2), a row-major [M, K] and b the transpose view
    of a row-major [N, K] weight (w.t(): both K-major, as Hopper's fp8 wgmma reads them),
    scale_a / scale_b the per-tensor dequantisation scales (one-element float32 tensors or
    numbers; None = 1), out_dtype the result's (default torch.bfloat16): out = (a * scale_a) @
    (b * scale_b) (+ bias, in out_dtype), accumulated in fp32. sm_90a only."""
    _check(a, "a")
    _check(b, "b", a.device, a.dtype)
    import torch
    fp8 = a.dtype in (getattr(torch, "float8_e4m3fn", None), getattr(torch, "float8_e5m2", None))
    if a.dtype not in (torch.float16, torch.bfloat16) and not fp8:
        raise InvalidArgument(f"a: dtype {a.dtype}; gemm takes float16, bfloat16 or float8_e4m3fn "
                              f"/ float8_e5m2")
    if not fp8 and (scale_a is not None or scale_b is not None):
        raise InvalidArgument("scale_a / scale_b: only fp8 inputs take scales")
    out_dtype = out_dtype or (torch.bfloat16 if fp8 else a.dtype)
    if a.dim() != 2 or b.dim() != 2 or a.shape[1] != b.shape[0]:
        raise InvalidArgument(f"shapes {tuple(a.shape)} @ {tuple(b.shape)} do not multiply")
    if bias is not None:
        _check(bias, "bias", a.device, out_dtype)
        if tuple(bias.shape) != (b.shape[1],) or bias.stride(0) != 1:
            raise InvalidArgument(f"bias: expected contiguous shape ({b.shape[1]},)")
    n = b.shape[1]
    if epilogue == "silu_mul" and n % 2:
        raise InvalidArgument(f"epilogue 'silu_mul': b has {n} columns (expected 2*d: gate, up)")
    out = _gemm_out(a, n // 2 if epilogue == "silu_mul" else n, residual, out, out_dtype)
    beta = 1.0 if residual is not None else 0.0
    params = _gemm_params(a, b, bias, epilogue, out, beta)
    if fp8:
        # The scale tensors stay referenced until the call is enqueued (keep_*).
        params["scale_a"], keep_a = _scale(scale_a, "scale_a", a)
        params["scale_b"], keep_b = _scale(scale_b, "scale_b", a)
    _ktune.gemm(_tuner(a), params, _stream(a))
    return out


def register_torch_ops():
    """Registers torch.ops.ktune.rms_norm / silu_mul / gemm as torch.library custom ops with fake
    (meta) implementations, so torch.compile graphs can call them. Needs torch >= 2.4. Returns
    the torch.ops.ktune namespace; calling it twice is harmless."""
    import torch
    if hasattr(torch.ops.ktune, "silu_mul") and getattr(register_torch_ops, "_done", False):
        return torch.ops.ktune
    from typing import Optional
    Tensor = torch.Tensor

    @torch.library.custom_op("ktune::rms_norm", mutates_args=())
    def _rms(x: Tensor, weight: Optional[Tensor], eps: float) -> Tensor:
        return rms_norm(x, weight, eps)

    @_rms.register_fake
    def _(x, weight, eps):
        return torch.empty_like(x, memory_format=torch.contiguous_format)

    @torch.library.custom_op("ktune::silu_mul", mutates_args=())
    def _silu(x: Tensor) -> Tensor:
        return silu_mul(x)

    @_silu.register_fake
    def _(x):
        return x.new_empty((*x.shape[:-1], x.shape[-1] // 2))

    @torch.library.custom_op("ktune::gemm", mutates_args=())
    def _gemm(a: Tensor, b: Tensor, bias: Optional[Tensor], epilogue: str) -> Tensor:
        return gemm(a, b, bias, None if epilogue == "none" else epilogue)

    @_gemm.register_fake
    def _(a, b, bias, epilogue):
        return a.new_empty((a.shape[0], b.shape[1] // (2 if epilogue == "silu_mul" else 1)))

    register_torch_ops._done = True
    return torch.ops.ktune
