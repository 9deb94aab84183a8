// ktune._ktune.Launcher: the hot path of a tuned call from Python, written against CPython's
// vectorcall protocol so that a call reaches Kernel::operator() with no Python frame, no argument
// tuple, no pybind11 dispatch and no dict. ktune.Autotuned (Python) subclasses it; a call that the
// fast path does not handle (not bound yet, bound before ktune.reset(), keyword arguments other
// than an integer `stream`, an argument that is neither an int, None, nor something with
// data_ptr(), a scalar of the wrong type, hooks) goes to the subclass's _slow_call(*args, **kw),
// which binds, converts with full error messages, or runs the hooks.
#include <Python.h>
#include <structmember.h>

#include <cstdint>
#include <cstring>

#include "common.h"
#include "torch_api.h"

namespace ktune::py_ext {
namespace {

struct Launcher {
  VectorcallHead head;
  PyObject* kernel;     // the ktune._ktune.Kernel object owning *k (strong), or null: unbound
  const PyKernel* k;
  PyObject* stream_fn;  // callable(device) -> stream address, or null: stream 0
  PyObject* device;     // the argument of stream_fn
  int torch_device;     // >= 0: stream_fn is torch's raw getter, read through g_torch instead
  uint64_t generation;
};

// ktune._ktune_torch's reads (set_torch_api; null: none), and the getter they stand in for.
const KtuneTorchApi* g_torch = nullptr;
PyObject* g_torch_getter = nullptr;

PyObject* internedName(const char* s) { return PyUnicode_InternFromString(s); }

// Calls self._slow_call(*args, **kwnames) with the same vectorcall arguments.
PyObject* slowCall(PyObject* self, PyObject* const* args, size_t nargsf, PyObject* kwnames) {
  static PyObject* const kSlow = internedName("_slow_call");
  const Py_ssize_t n = PyVectorcall_NARGS(nargsf);
  const Py_ssize_t nkw = kwnames ? PyTuple_GET_SIZE(kwnames) : 0;
  constexpr Py_ssize_t kMax = 80;
  if (n + nkw + 1 > kMax) {
    PyErr_SetString(PyExc_TypeError, "too many arguments");
    return nullptr;
  }
  PyObject* all[kMax];
  all[0] = self;
  for (Py_ssize_t i = 0; i < n + nkw; ++i) all[i + 1] = args[i];
  return PyObject_VectorcallMethod(kSlow, all, static_cast<size_t>(n + 1), kwnames);
}

// An int as an unsigned 64-bit value; false (no Python error set) when it is negative or wider.
// Addresses take PyLong_AsLongLongAndOverflow's digit loop: PyLong_AsUnsignedLongLong converts a
// multi-digit int (any device address) through a byte array, several times the instructions.
bool fastU64(PyObject* o, unsigned long long* out) {
  int overflow = 0;
  const long long v = PyLong_AsLongLongAndOverflow(o, &overflow);
  if (!overflow && v >= 0) {
    *out = static_cast<unsigned long long>(v);
    return true;
  }
  if (v == -1 && PyErr_Occurred()) {
    PyErr_Clear();
    return false;
  }
  *out = PyLong_AsUnsignedLongLong(o);  // 2^63 and above
  if (PyErr_Occurred()) {
    PyErr_Clear();
    return false;
  }
  return true;
}

// Argument i as a Value; false (no Python error set) when the fast path cannot convert it.
bool fastValue(PyObject* o, ArgType t, Value* out) {
  static PyObject* const kDataPtr = internedName("data_ptr");
  switch (t) {
    case ArgType::kPtr: {
      PyObject* r = nullptr;
      if (PyLong_CheckExact(o)) {
        r = o;
        Py_INCREF(r);
      } else if (o == Py_None) {
        *out = Value::ptr(0);
        return true;
      } else {
        uint64_t p = 0;
        if (g_torch && g_torch->data_ptr(o, &p)) {
          *out = Value::ptr(p);
          return true;
        }
        r = PyObject_CallMethodNoArgs(o, kDataPtr);
        if (!r) {
          PyErr_Clear();
          return false;
        }
      }
      unsigned long long p = 0;
      const bool ok = PyLong_Check(r) && fastU64(r, &p);
      Py_DECREF(r);
      if (!ok) return false;
      *out = Value::ptr(p);
      return true;
    }
    case ArgType::kI32:
    case ArgType::kI64: {
      if (!PyLong_CheckExact(o)) return false;
      int overflow = 0;
      long long v = PyLong_AsLongLongAndOverflow(o, &overflow);
      if (overflow || (v == -1 && PyErr_Occurred())) {
        PyErr_Clear();
        return false;
      }
      if (t == ArgType::kI64) {
        *out = Value::i64(v);
      } else {
        if (v < INT32_MIN || v > INT32_MAX) return false;
        *out = Value::i32(static_cast<int32_t>(v));
      }
      return true;
    }
    case ArgType::kF32:
    case ArgType::kF64: {
      double v = 0;
      if (PyFloat_CheckExact(o)) v = PyFloat_AS_DOUBLE(o);
      else if (PyLong_CheckExact(o)) v = PyLong_AsDouble(o);
      else return false;
      if (v == -1.0 && PyErr_Occurred()) {
        PyErr_Clear();
        return false;
      }
      *out = t == ArgType::kF32 ? Value::f32(static_cast<float>(v)) : Value::f64(v);
      return true;
    }
  }
  return false;
}

// The stream: an int `stream=` keyword, else stream_fn(device), else 0. False: slow path.
bool fastStream(Launcher* l, PyObject* const* args, Py_ssize_t n, PyObject* kwnames,
                uintptr_t* out) {
  static PyObject* const kStream = internedName("stream");
  *out = 0;
  if (kwnames) {
    if (PyTuple_GET_SIZE(kwnames) != 1 || PyTuple_GET_ITEM(kwnames, 0) != kStream) return false;
    PyObject* s = args[n];
    unsigned long long v = 0;
    if (!PyLong_CheckExact(s) || !fastU64(s, &v)) return false;
    *out = static_cast<uintptr_t>(v);
    return true;
  }
  if (!l->stream_fn) return true;
  if (l->torch_device >= 0) {
    uint64_t v = 0;
    if (!g_torch->current_stream(l->torch_device, &v)) return false;
    *out = static_cast<uintptr_t>(v);
    return true;
  }
  PyObject* r = PyObject_CallOneArg(l->stream_fn, l->device);
  if (!r) {
    PyErr_Clear();
    return false;
  }
  unsigned long long v = 0;
  const bool ok = PyLong_Check(r) && fastU64(r, &v);
  Py_DECREF(r);
  if (!ok) return false;
  *out = static_cast<uintptr_t>(v);
  return true;
}

// A strong reference for the duration of a call.
struct Ref {
  PyObject* o;
  explicit Ref(PyObject* x) : o(x) { Py_INCREF(o); }
  ~Ref() { Py_DECREF(o); }
  Ref(const Ref&) = delete;
  Ref& operator=(const Ref&) = delete;
};

PyObject* launcherCall(PyObject* self, PyObject* const* args, size_t nargsf, PyObject* kwnames) {
  auto* l = reinterpret_cast<Launcher*>(self);
  const Py_ssize_t n = PyVectorcall_NARGS(nargsf);
  if (!l->k || l->generation != g_generation.load(std::memory_order_relaxed) ||
      static_cast<size_t>(n) != l->k->args.size() || n > 64)
    return slowCall(self, args, nargsf, kwnames);
  // data_ptr() and the stream getter run Python code, and the launch may run without the GIL: any
  // of them may let another thread rebind this launcher (_set_fast), so the call holds its own
  // reference to the kernel object.
  const Ref owner(l->kernel);
  const PyKernel* k = l->k;
  uintptr_t stream = 0;
  if (!fastStream(l, args, n, kwnames, &stream)) return slowCall(self, args, nargsf, kwnames);
  ValueArray<64> values;  // only the n values are constructed: 64 would be zeroed per call
  for (Py_ssize_t i = 0; i < n; ++i) {
    Value v;
    if (!fastValue(args[i], k->args[static_cast<size_t>(i)].type, &v))
      return slowCall(self, args, nargsf, kwnames);
    values.set(static_cast<size_t>(i), v);
  }
  // A call that takes the thread's launch plan runs nothing but the driver's launch: the GIL stays
  // held, as torch holds it for its own launches. Any other call may tune (compile threads call
  // Python's source_fn, hooks run) and runs with the GIL released.
  Status st;
  if (!k->k.callPlanned(values.data(), static_cast<size_t>(n), streamOf(stream), &st)) {
    Py_BEGIN_ALLOW_THREADS
    st = k->k(values.data(), static_cast<size_t>(n), streamOf(stream));
    Py_END_ALLOW_THREADS
  }
  if (!st.ok()) {
    try {
      raiseStatus(st);
    } catch (py::error_already_set& e) {
      e.restore();
    }
    return nullptr;
  }
  Py_RETURN_NONE;
}

PyObject* launcherNew(PyTypeObject* type, PyObject*, PyObject*) {
  auto* l = reinterpret_cast<Launcher*>(type->tp_alloc(type, 0));
  if (l) {
    l->head.vectorcall = launcherCall;
    l->torch_device = -1;
  }
  return reinterpret_cast<PyObject*>(l);
}

void clearFast(Launcher* l) {
  l->k = nullptr;
  l->torch_device = -1;
  Py_CLEAR(l->kernel);
  Py_CLEAR(l->stream_fn);
  Py_CLEAR(l->device);
}

// A heap type's instances own a reference to their type (a Python subclass's dealloc leaves it to
// this base, which is a heap type too).
void launcherDealloc(PyObject* self) {
  PyTypeObject* type = Py_TYPE(self);
  clearFast(reinterpret_cast<Launcher*>(self));
  type->tp_free(self);
  Py_DECREF(type);
}

// _set_fast(kernel, stream_fn, device): binds the fast path (kernel None: unbinds it).
PyObject* setFast(PyObject* self, PyObject* const* args, Py_ssize_t n) {
  auto* l = reinterpret_cast<Launcher*>(self);
  if (n != 3) {
    PyErr_SetString(PyExc_TypeError, "_set_fast(kernel, stream_fn, device)");
    return nullptr;
  }
  clearFast(l);
  if (args[0] == Py_None) Py_RETURN_NONE;
  const PyKernel* k = nullptr;
  try {
    k = py::handle(args[0]).cast<const PyKernel*>();
  } catch (const py::cast_error&) {
    PyErr_SetString(PyExc_TypeError, "_set_fast: expected a ktune._ktune.Kernel");
    return nullptr;
  }
  Py_INCREF(args[0]);
  l->kernel = args[0];
  l->k = k;
  if (args[1] != Py_None) {
    Py_INCREF(args[1]);
    l->stream_fn = args[1];
    Py_INCREF(args[2]);
    l->device = args[2];
    if (g_torch && args[1] == g_torch_getter && PyLong_CheckExact(args[2])) {
      const long d = PyLong_AsLong(args[2]);
      if (d >= 0 && d < 1024) l->torch_device = static_cast<int>(d);
      PyErr_Clear();
    }
  }
  l->generation = g_generation.load(std::memory_order_relaxed);
  Py_RETURN_NONE;
}

PyMethodDef kMethods[] = {
    {"_set_fast", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(setFast)),
     METH_FASTCALL, "Binds the C++ fast path of a call (kernel, stream getter, device)."},
    {nullptr, nullptr, 0, nullptr}};

PyMemberDef kVectorcallMembers[] = {
    {"__vectorcalloffset__", T_PYSSIZET, offsetof(VectorcallHead, vectorcall), READONLY, nullptr},
    {nullptr, 0, 0, 0, nullptr}};

// Python 3.12 keeps vectorcall for a Python subclass that does not define __call__; 3.11 falls
// back to tp_call (an argument tuple and a kwargs dict per call). This restores it for such a
// subclass: its instances are made by launcherNew, which sets the vectorcall slot.
void enableVectorcall(const py::type& sub, const py::object& base) {
  auto* t = reinterpret_cast<PyTypeObject*>(sub.ptr());
  if (!PyType_IsSubtype(t, reinterpret_cast<PyTypeObject*>(base.ptr())) ||
      t->tp_call != PyVectorcall_Call)
    check(Status::InvalidArgument("enable_vectorcall: not a Launcher subclass without __call__"));
  t->tp_flags |= Py_TPFLAGS_HAVE_VECTORCALL;
  PyType_Modified(t);
}

}  // namespace

void addVectorcallType(py::module_& m, const char* name, size_t size, unsigned long flags,
                       newfunc make, destructor free, PyMethodDef* methods, const char* doc) {
  // PyType_FromSpec copies the slots and the doc; the name (a literal) and the members (static)
  // stay referenced.
  PyType_Slot slots[] = {{Py_tp_new, reinterpret_cast<void*>(make)},
                         {Py_tp_dealloc, reinterpret_cast<void*>(free)},
                         {Py_tp_call, reinterpret_cast<void*>(PyVectorcall_Call)},
                         {Py_tp_members, kVectorcallMembers},
                         {Py_tp_doc, const_cast<char*>(doc)},
                         {methods ? Py_tp_methods : 0, methods},
                         {0, nullptr}};
  PyType_Spec spec = {name, static_cast<int>(size), 0,
                      static_cast<unsigned>(flags | Py_TPFLAGS_HAVE_VECTORCALL), slots};
  PyObject* type = PyType_FromSpec(&spec);
  if (!type) throw py::error_already_set();
  const char* dot = std::strrchr(name, '.');
  m.add_object(dot ? dot + 1 : name, py::reinterpret_steal<py::object>(type));
}

void bindLauncher(py::module_& m) {
  addVectorcallType(m, "ktune._ktune.Launcher", sizeof(Launcher),
                    Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE, launcherNew, launcherDealloc,
                    kMethods, "Base of ktune.Autotuned: the C++ fast path of a tuned call.");
  m.def("next_generation", [] { g_generation.fetch_add(1); });
  // Installs ktune._ktune_torch's reads for launchers bound from now on; `getter` is the torch
  // stream getter they replace (torch._C._cuda_getCurrentRawStream). Once per process.
  m.def("set_torch_api", [](const py::capsule& api, const py::object& getter) {
    auto* a = static_cast<const KtuneTorchApi*>(PyCapsule_GetPointer(api.ptr(), kTorchApiCapsule));
    if (!a) throw py::error_already_set();
    if (a->version != kTorchApiVersion || !a->data_ptr || !a->current_stream)
      check(Status::InvalidArgument("set_torch_api: a capsule of another ktune version"));
    if (g_torch) return;
    g_torch_getter = getter.inc_ref().ptr();  // kept for the process, as the capsule's module
    g_torch = a;
  });
  m.def("torch_api_installed", [] { return g_torch != nullptr; });
  m.def("enable_vectorcall", [](const py::type& sub) {
    enableVectorcall(sub, py::module_::import("ktune._ktune").attr("Launcher"));
  });
}

}  // namespace ktune::py_ext
