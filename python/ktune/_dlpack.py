"""The device address behind a DLPack object (for arguments without data_ptr() or
__cuda_array_interface__). The capsule is only read, not consumed: the object keeps the memory."""
import ctypes


class _DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class _DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class _DLTensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("device", _DLDevice), ("ndim", ctypes.c_int32),
                ("dtype", _DLDataType), ("shape", ctypes.POINTER(ctypes.c_int64)),
                ("strides", ctypes.POINTER(ctypes.c_int64)), ("byte_offset", ctypes.c_uint64)]


_get = ctypes.pythonapi.PyCapsule_GetPointer
_get.restype = ctypes.c_void_p
_get.argtypes = [ctypes.py_object, ctypes.c_char_p]


def pointer(obj):
    """data + byte_offset of obj.__dlpack__() (the DLTensor is the managed tensor's first field)."""
    capsule = obj.__dlpack__()
    t = _DLTensor.from_address(_get(capsule, b"dltensor"))
    return (t.data or 0) + t.byte_offset
