// ktune._ktune.RawLaunch: a bench-only peer of a tuned call (python/bench/host_cost.py). Calling
// it is one cuLaunchKernel of a no-argument-conversion launch (grid 1, block 32, the two
// arguments packed once) reached through CPython's vectorcall, as the tuned call's fast path is
// (launcher.cc): the least any launch from Python costs, without ctypes' per-call argument
// conversion. RawLaunch(ptx, entry, ptr, n, stream): the driver JIT-compiles `ptx` (bytes) and
// the kernel `entry` takes (u64 ptr, u64 n). libcuda is the one the process already loaded (torch's
// or ktune's); ImportError-free: the constructor raises RuntimeError when it is absent.
// release_gil=True: the launch runs with the GIL released, as a tuned call's did before it kept
// the GIL on its launch plan (what a GIL round trip costs on the host).
#define PY_SSIZE_T_CLEAN  // "y#" takes a Py_ssize_t length
#include <Python.h>
#include <dlfcn.h>

#include <cstdint>

#include "common.h"

namespace ktune::py_ext {
namespace {

using LoadData = int (*)(void**, const void*);
using GetFunction = int (*)(void**, void*, const char*);
using LaunchKernel = int (*)(void*, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                             unsigned, void*, void**, void**);

struct RawLaunch {
  VectorcallHead head;
  LaunchKernel launch;
  void* fn;
  void* stream;
  uint64_t ptr, n;
  void* params[2];
  bool release_gil;
};

PyObject* rawCall(PyObject* self, PyObject* const*, size_t nargsf, PyObject* kwnames) {
  if (PyVectorcall_NARGS(nargsf) != 0 || kwnames) {
    PyErr_SetString(PyExc_TypeError, "RawLaunch() takes no arguments");
    return nullptr;
  }
  auto* r = reinterpret_cast<RawLaunch*>(self);
  PyThreadState* saved = r->release_gil ? PyEval_SaveThread() : nullptr;
  const int rc = r->launch(r->fn, 1, 1, 1, 32, 1, 1, 0, r->stream, r->params, nullptr);
  if (saved) PyEval_RestoreThread(saved);
  if (rc != 0) return PyErr_Format(PyExc_RuntimeError, "cuLaunchKernel failed: CUresult %d", rc);
  Py_RETURN_NONE;
}

PyObject* rawNew(PyTypeObject* type, PyObject* args, PyObject* kw) {
  const char* ptx = nullptr;
  Py_ssize_t ptx_len = 0;
  const char* entry = nullptr;
  unsigned long long ptr = 0, n = 0, stream = 0;
  int release_gil = 0;
  static const char* kNames[] = {"ptx", "entry", "ptr", "n", "stream", "release_gil", nullptr};
  if (!PyArg_ParseTupleAndKeywords(args, kw, "y#sKKK|p", const_cast<char**>(kNames), &ptx,
                                   &ptx_len, &entry, &ptr, &n, &stream, &release_gil))
    return nullptr;
  void* lib = ::dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
  if (!lib) return PyErr_Format(PyExc_RuntimeError, "libcuda.so.1 is not loaded in this process");
  auto load = reinterpret_cast<LoadData>(::dlsym(lib, "cuModuleLoadData"));
  auto get = reinterpret_cast<GetFunction>(::dlsym(lib, "cuModuleGetFunction"));
  auto launch = reinterpret_cast<LaunchKernel>(::dlsym(lib, "cuLaunchKernel"));
  ::dlclose(lib);  // the process keeps its own reference: RTLD_NOLOAD found it loaded
  if (!load || !get || !launch) return PyErr_Format(PyExc_RuntimeError, "driver symbols missing");
  void* mod = nullptr;
  void* fn = nullptr;
  // The driver reads a NUL-terminated PTX image: "y#" bytes objects end with one.
  if (int rc = load(&mod, ptx); rc != 0)
    return PyErr_Format(PyExc_RuntimeError, "cuModuleLoadData failed: CUresult %d", rc);
  if (int rc = get(&fn, mod, entry); rc != 0)
    return PyErr_Format(PyExc_RuntimeError, "cuModuleGetFunction(%s) failed: CUresult %d", entry,
                        rc);
  auto* r = reinterpret_cast<RawLaunch*>(type->tp_alloc(type, 0));
  if (!r) return nullptr;
  r->head.vectorcall = rawCall;
  r->launch = launch;
  r->fn = fn;
  r->stream = reinterpret_cast<void*>(static_cast<uintptr_t>(stream));
  r->ptr = ptr;
  r->n = n;
  r->params[0] = &r->ptr;
  r->params[1] = &r->n;
  r->release_gil = release_gil != 0;
  return reinterpret_cast<PyObject*>(r);
}

// The module stays loaded for the process (a bench object; its context outlives it).
void rawDealloc(PyObject* self) {
  PyTypeObject* type = Py_TYPE(self);
  type->tp_free(self);
  Py_DECREF(type);
}

}  // namespace

void bindRawLaunch(py::module_& m) {
  addVectorcallType(m, "ktune._ktune.RawLaunch", sizeof(RawLaunch), Py_TPFLAGS_DEFAULT, rawNew,
                    rawDealloc, nullptr,
                    "Bench-only: one cuLaunchKernel per call, arguments packed once.");
}

}  // namespace ktune::py_ext
