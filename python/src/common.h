// ktune's Python extension: what its files share. Only the public API (include/ktune) is used.
// Errors are values in ktune; here they become Python exceptions of ktune._errors (one class per
// status code, named after it), raised by raiseStatus().
#pragma once

#include <pybind11/pybind11.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <ktune/ktune.hpp>

namespace ktune::py_ext {

namespace py = pybind11;

// Raises the ktune._errors exception of s.code() with s's message.
[[noreturn]] void raiseStatus(const Status& s);

inline void check(const Status& s) {
  if (!s.ok()) raiseStatus(s);
}

template <typename T>
T unwrap(Expected<T> e) {
  if (!e.ok()) raiseStatus(e.status());
  return std::move(e).value();
}

// A tuner shared by the Python objects that use it (kernels keep it alive).
struct PyAutotuner {
  std::unique_ptr<Autotuner> t;
  TunerOptions options;
};
using AutotunerRef = std::shared_ptr<PyAutotuner>;

// A Python callable held by C++ code that may outlive the interpreter or run on engine threads:
// it is released with the GIL held, and leaked (never touched) once the interpreter is gone.
struct PyCallable {
  py::object fn;
  explicit PyCallable(py::object f) : fn(std::move(f)) {}
  PyCallable(const PyCallable&) = delete;
  PyCallable& operator=(const PyCallable&) = delete;
  ~PyCallable() {
    if (!Py_IsInitialized()) {
      fn.release();
      return;
    }
    py::gil_scoped_acquire gil;
    fn = py::object();
  }
};

// A registered kernel family as the Python object ktune._ktune.Kernel holds it.
struct PyKernel {
  AutotunerRef tuner;
  Kernel k;
  std::vector<ArgSpec> args;
};

// Bumped by ktune.reset() (through _ktune.next_generation): a Launcher bound before it goes back
// to its Python slow path, which binds again on the new tuners.
inline std::atomic<uint64_t> g_generation{0};

// A stream argument from Python: an int (CUstream / hipStream_t as an address, 0 = default).
inline StreamHandle streamOf(uintptr_t s) { return StreamHandle{reinterpret_cast<void*>(s)}; }

// The head of the extension's own callable types (launcher.cc's Launcher, raw_launch.cc's
// RawLaunch): the object header, then the vectorcall entry its calls go through.
struct VectorcallHead {
  PyObject_HEAD
  vectorcallfunc vectorcall;
};
// Adds the heap type `name` (module-qualified, a string literal) to `m` under its last component:
// instances of `size` bytes that start with a VectorcallHead, made by `make` and freed by `free`,
// called through their vectorcall entry; `methods` may be null. launcher.cc.
void addVectorcallType(py::module_& m, const char* name, size_t size, unsigned long flags,
                       newfunc make, destructor free, PyMethodDef* methods, const char* doc);

void bindKernel(py::module_& m);  // kernel.cc: Kernel, sim kernels
void bindOps(py::module_& m);     // ops.cc: rmsnorm, silu_mul, gemm
void bindLauncher(py::module_& m);  // launcher.cc: the tuned call's C++ fast path
void bindRawLaunch(py::module_& m);  // raw_launch.cc: a bench-only raw launch peer

}  // namespace ktune::py_ext
