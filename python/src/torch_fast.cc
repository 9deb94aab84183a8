// ktune._ktune_torch: what a tuned call asks torch for on every call — a tensor's data pointer and
// the current CUDA stream — read through torch's C++ API instead of calling tensor.data_ptr() and
// torch._C._cuda_getCurrentRawStream() from C (a Python call and a new int object each). Built
// only where a CUDA build of torch is importable when the package is built (python/CMakeLists.txt),
// against that torch's headers; ktune uses it only under the torch version it was built for
// (TORCH_VERSION) and falls back to the Python calls otherwise.
//
// Semantics kept: the pointer is read only for an exact torch.Tensor / nn.Parameter while no torch
// function mode is active, where Tensor.data_ptr() does exactly this; a subclass, an active mode
// (which may intercept data_ptr) or a tensor without storage goes back to the Python call. The
// stream is at::cuda::getCurrentCUDAStream(device), what torch's raw getter returns.
#include <Python.h>

#include <ATen/PythonTorchFunctionTLS.h>
#include <c10/cuda/CUDAStream.h>
#include <torch/csrc/autograd/python_variable.h>

#include <cstdint>

#include "torch_api.h"

#ifndef KTUNE_TORCH_VERSION
#error "KTUNE_TORCH_VERSION: the torch.__version__ this module is built against"
#endif

namespace {

using ktune::py_ext::KtuneTorchApi;

// For an exact tensor type, Tensor.data_ptr() consults __torch_function__ only through an active
// torch function mode (torch::check_has_torch_function, which is not exported, reduces to this).
int dataPtr(PyObject* o, uint64_t* out) {
  if (!THPVariable_CheckExact(o) || at::impl::torch_function_mode_enabled()) return 0;
  try {
    const at::Tensor& t = THPVariable_Unpack(o);
    if (!t.defined() || !t.has_storage()) return 0;
    *out = reinterpret_cast<uint64_t>(t.data_ptr());
    return 1;
  } catch (...) {  // a tensor data_ptr() refuses (e.g. no initialised storage): the Python call
    return 0;      // raises it with torch's message
  }
}

int currentStream(int device, uint64_t* out) {
  try {
    *out = reinterpret_cast<uint64_t>(
        c10::cuda::getCurrentCUDAStream(static_cast<c10::DeviceIndex>(device)).stream());
    return 1;
  } catch (...) {
    return 0;
  }
}

const KtuneTorchApi kApi = {ktune::py_ext::kTorchApiVersion, dataPtr, currentStream};

PyObject* api(PyObject*, PyObject*) {
  return PyCapsule_New(const_cast<KtuneTorchApi*>(&kApi), ktune::py_ext::kTorchApiCapsule,
                       nullptr);
}

PyMethodDef kMethods[] = {
    {"api", api, METH_NOARGS, "The capsule ktune._ktune.set_torch_api installs."},
    {nullptr, nullptr, 0, nullptr}};

PyModuleDef kModule = {PyModuleDef_HEAD_INIT, "_ktune_torch",
                       "torch's data pointers and current stream for ktune's tuned calls.", -1,
                       kMethods};

}  // namespace

PyMODINIT_FUNC PyInit__ktune_torch() {
  PyObject* m = PyModule_Create(&kModule);
  if (m && PyModule_AddStringConstant(m, "TORCH_VERSION", KTUNE_TORCH_VERSION) != 0) {
    Py_DECREF(m);
    return nullptr;
  }
  return m;
}
