// ktune._ktune: kernel families registered from data (KernelSpec), their calls, and the host
// functions that stand in for kernels on the simulated backend. A call converts its Python
// arguments in C++ (no Python-level loop), releases the GIL and runs Kernel::operator().
#include <pybind11/numpy.h>
#include <pybind11/stl.h>

#include <cstdint>
#include <cstring>
#include <functional>
#include <vector>

#include "common.h"

namespace ktune::py_ext {
namespace {

ArgType argType(const std::string& s) {
  if (s == "ptr") return ArgType::kPtr;
  if (s == "i32") return ArgType::kI32;
  if (s == "i64") return ArgType::kI64;
  if (s == "f32") return ArgType::kF32;
  if (s == "f64") return ArgType::kF64;
  check(Status::InvalidArgument("argument type '" + s + "': expected ptr, i32, i64, f32 or f64"));
  return ArgType::kPtr;  // unreachable
}

// A device address from a Python object: an int, None (null), a tensor (data_ptr()), or
// anything with __cuda_array_interface__.
DevicePtr pointerOf(const py::handle& o, const ArgSpec& spec) {
  if (PyLong_Check(o.ptr())) return o.cast<uint64_t>();
  if (o.is_none()) return 0;
  // One method call for the common case (a tensor): no hasattr() probe first.
  static PyObject* const kDataPtr = PyUnicode_InternFromString("data_ptr");
  if (PyObject* r = PyObject_CallMethodNoArgs(o.ptr(), kDataPtr))
    return py::reinterpret_steal<py::object>(r).cast<uint64_t>();
  if (!PyErr_ExceptionMatches(PyExc_AttributeError)) throw py::error_already_set();
  PyErr_Clear();
  if (py::hasattr(o, "__cuda_array_interface__")) {
    py::dict cai = o.attr("__cuda_array_interface__");
    return py::tuple(cai["data"])[0].cast<uint64_t>();
  }
  if (py::hasattr(o, "__dlpack__"))  // rare: parsed in Python (ktune/_dlpack.py)
    return py::module_::import("ktune._dlpack").attr("pointer")(o).cast<uint64_t>();
  check(Status::InvalidArgument("argument '" + spec.name + "': expected a device pointer (int, "
                                "tensor, __cuda_array_interface__), got " +
                                std::string(py::str(py::type::of(o)))));
  return 0;
}

Value valueOf(const py::handle& o, const ArgSpec& spec) {
  try {
    switch (spec.type) {
      case ArgType::kPtr: return Value::ptr(pointerOf(o, spec));
      case ArgType::kI32: return Value::i32(py::cast<int32_t>(o));
      case ArgType::kI64: return Value::i64(py::cast<int64_t>(o));
      case ArgType::kF32: return Value::f32(py::cast<float>(o));
      case ArgType::kF64: return Value::f64(py::cast<double>(o));
    }
  } catch (const py::cast_error&) {
    check(Status::InvalidArgument("argument '" + spec.name + "': cannot convert " +
                                  std::string(py::str(py::type::of(o)))));
  }
  return Value{};
}

void valuesOf(const PyKernel& k, const py::tuple& args, std::vector<Value>& out) {
  if (args.size() != k.args.size())
    check(Status::InvalidArgument(k.k.name() + ": expected " + std::to_string(k.args.size()) +
                                  " arguments, got " + std::to_string(args.size())));
  out.resize(args.size());
  for (size_t i = 0; i < args.size(); ++i) out[i] = valueOf(args[i], k.args[i]);
}

void call(const PyKernel& k, const py::tuple& args, uintptr_t stream) {
  thread_local std::vector<Value> values;
  valuesOf(k, args, values);
  Status st;
  {
    py::gil_scoped_release nogil;
    st = k.k(values.data(), values.size(), streamOf(stream));
  }
  check(st);
}

std::string tune(const PyKernel& k, const py::tuple& args, uintptr_t stream) {
  std::vector<Value> values;
  valuesOf(k, args, values);
  Expected<KeyReport> r = Status::Internal("not run");
  {
    py::gil_scoped_release nogil;
    r = k.k.tune(values.data(), values.size(), streamOf(stream));
  }
  return unwrap(std::move(r)).toJson();
}

std::string keyOf(const PyKernel& k, const py::tuple& args) {
  std::vector<Value> values;
  valuesOf(k, args, values);
  return unwrap(k.k.key(values.data(), values.size()));
}

// The first line of a Python exception's message (pybind11 may append a traceback).
std::string firstLine(const py::error_already_set& e) {
  std::string what = e.what();
  return what.substr(0, what.find('\n'));
}

// The Python source_fn(config string) -> (text: str | bytes, language, entry) as the C++ one:
// called from compile threads with the GIL taken; an exception (or a malformed result) fails
// that config with the message, as a compile error would.
std::function<Expected<ConfigSource>(const std::string&)> sourceFnOf(py::object fn) {
  auto held = std::make_shared<PyCallable>(std::move(fn));
  return [held](const std::string& config) -> Expected<ConfigSource> {
    py::gil_scoped_acquire gil;
    try {
      py::tuple r = held->fn(config);
      if (r.size() != 3) return Status::InvalidArgument("source_fn must return (text, language, entry)");
      ConfigSource src;
      src.text = r[0].cast<std::string>();
      src.language = r[1].cast<std::string>();
      src.entry = r[2].is_none() ? std::string() : r[2].cast<std::string>();
      return src;
    } catch (py::error_already_set& e) {
      return Status(Code::kCompileError, "source_fn raised " + firstLine(e));
    } catch (const py::cast_error&) {
      return Status::InvalidArgument("source_fn must return (text, language, entry) strings");
    }
  };
}

// The Python before_run(stream) as KernelSpec::before_run: called from the tuning thread with
// the GIL taken (the tuning call released it); an exception fails the candidate being run.
std::function<Status(const Value*, size_t, StreamHandle)> beforeRunOf(py::object fn) {
  auto held = std::make_shared<PyCallable>(std::move(fn));
  return [held](const Value*, size_t, StreamHandle s) -> Status {
    py::gil_scoped_acquire gil;
    try {
      held->fn(reinterpret_cast<uintptr_t>(s.p));
      return Status::Ok();
    } catch (py::error_already_set& e) {
      return Status::Internal("before_run (reset_to_zero / restore_value) raised " + firstLine(e));
    }
  };
}

std::vector<std::string> strings(const py::dict& d, const char* name) {
  return d.contains(name) ? d[name].cast<std::vector<std::string>>() : std::vector<std::string>{};
}

// spec: {"name", "source", "entry", "space_json", "args": [(name, type)], "key": [...],
//        "grid": [...], "block": [...], "shared_bytes": str, "compile_options": [...],
//        "source_fn": callable or None, "before_run": callable or None,
//        "programmatic_wait": bool (optional)}
PyKernel addKernel(const AutotunerRef& t, const py::dict& spec) {
  KernelSpec s;
  s.name = spec["name"].cast<std::string>();
  s.source = spec["source"].cast<std::string>();
  s.entry = spec["entry"].cast<std::string>();
  s.space_json = spec["space_json"].cast<std::string>();
  for (auto a : spec["args"].cast<py::list>()) {
    auto pair = a.cast<std::pair<std::string, std::string>>();
    s.args.push_back({pair.first, argType(pair.second)});
  }
  s.key = strings(spec, "key");
  s.grid = strings(spec, "grid");
  s.block = strings(spec, "block");
  if (spec.contains("shared_bytes") && !spec["shared_bytes"].is_none())
    s.shared_bytes = spec["shared_bytes"].cast<std::string>();
  s.compile_options = strings(spec, "compile_options");
  if (spec.contains("source_fn") && !spec["source_fn"].is_none())
    s.source_fn = sourceFnOf(spec["source_fn"]);
  if (spec.contains("before_run") && !spec["before_run"].is_none())
    s.before_run = beforeRunOf(spec["before_run"]);
  if (spec.contains("programmatic_wait")) s.programmatic_wait = spec["programmatic_wait"].cast<bool>();
  PyKernel k;
  k.tuner = t;
  k.args = s.args;
  k.k = unwrap(t->t->addKernel(s));
  return k;
}

// ---------------------------------------------------------------- simulated kernels

// What a Python sim kernel sees; usable only during the callback (then every method raises).
struct PySimLaunch {
  const SimLaunchView* view = nullptr;
  std::shared_ptr<const std::vector<ArgType>> types;
  const SimLaunchView& v() const {
    if (!view) check(Status::InvalidArgument("a SimLaunch is valid only during its callback"));
    return *view;
  }
};

py::object argOf(const PySimLaunch& l, size_t i) {
  const auto& types = *l.types;
  if (i >= types.size()) check(Status::InvalidArgument("sim launch: no argument " + std::to_string(i)));
  const void* p = l.v().arg(i);
  Value v;
  switch (types[i]) {
    case ArgType::kPtr: std::memcpy(&v.v.ptr, p, sizeof v.v.ptr); return py::int_(v.v.ptr);
    case ArgType::kI32: std::memcpy(&v.v.i32, p, sizeof v.v.i32); return py::int_(v.v.i32);
    case ArgType::kI64: std::memcpy(&v.v.i64, p, sizeof v.v.i64); return py::int_(v.v.i64);
    case ArgType::kF32: std::memcpy(&v.v.f32, p, sizeof v.v.f32); return py::float_(v.v.f32);
    case ArgType::kF64: std::memcpy(&v.v.f64, p, sizeof v.v.f64); return py::float_(v.v.f64);
  }
  return py::none();
}

// A numpy view of `count` elements of `dtype` at the simulated device address of pointer
// argument i (no copy: writes reach the simulated memory).
py::array arrayOf(const PySimLaunch& l, size_t i, const py::object& dtype_like, size_t count) {
  py::dtype dtype = py::dtype::from_args(dtype_like);
  py::object addr = argOf(l, i);
  const uint64_t p = addr.cast<uint64_t>();
  void* host = l.v().hostPtr(p);
  if (!host) check(Status::InvalidArgument("sim launch: argument " + std::to_string(i) +
                                           " is not a simulated device address"));
  // The view must lie inside the allocation: a count past its end would let Python read and
  // write beyond the buffer (a crash, or silent corruption).
  const size_t have = l.v().bytesAvailable(p), item = static_cast<size_t>(dtype.itemsize());
  if (item == 0 || count > have / item)
    check(Status::InvalidArgument(
        "sim launch: array(" + std::to_string(i) + ", count=" + std::to_string(count) + ") needs " +
        (item && count <= SIZE_MAX / item ? std::to_string(count * item) : std::string("too many")) +
        " bytes, but the allocation has " + std::to_string(have) + " bytes from that address"));
  py::capsule owner(host, [](void*) {});
  return py::array(dtype, {static_cast<py::ssize_t>(count)}, {}, host, owner);
}

template <typename R>
R invoke(const PyCallable& fn, const std::shared_ptr<const std::vector<ArgType>>& types,
         const SimLaunchView& view, R on_error, std::string* error) {
  py::gil_scoped_acquire gil;
  auto launch = std::make_shared<PySimLaunch>();
  launch->view = &view;
  launch->types = types;
  try {
    py::object r = fn.fn(py::cast(launch));
    launch->view = nullptr;
    if constexpr (std::is_same_v<R, double>) return r.cast<double>();
    else return R{};
  } catch (py::error_already_set& e) {
    launch->view = nullptr;
    if (error) *error = firstLine(e);
    return on_error;
  }
}

// run(launch) -> None and cost(launch) -> float (simulated ms). A run that raises fails the
// launch with kInternal carrying the Python error; a cost that raises counts as 1e9 ms.
void registerSim(PyAutotuner& t, const std::string& entry, const std::vector<std::string>& sig,
                 py::object run, py::object cost) {
  auto types = std::make_shared<std::vector<ArgType>>();
  for (const auto& s : sig) types->push_back(argType(s));
  SimKernelFns fns;
  if (!run.is_none()) {
    auto fn = std::make_shared<PyCallable>(std::move(run));
    fns.run = [fn, types](const SimLaunchView& v) -> Status {
      std::string err;
      invoke<int>(*fn, types, v, 1, &err);
      return err.empty() ? Status::Ok() : Status::Internal("sim kernel raised: " + err);
    };
  }
  if (!cost.is_none()) {
    auto fn = std::make_shared<PyCallable>(std::move(cost));
    fns.cost = [fn, types](const SimLaunchView& v) {
      return invoke<double>(*fn, types, v, 1e9, nullptr);
    };
  }
  check(t.t->registerSimKernel(entry, std::move(fns)));
}

}  // namespace

void bindKernel(py::module_& m) {
  py::class_<PyKernel>(m, "Kernel")
      .def("__call__", &call, py::arg("args"), py::arg("stream") = 0)
      .def("tune", &tune, py::arg("args"), py::arg("stream") = 0)
      .def("key", &keyOf)
      .def_property_readonly("name", [](const PyKernel& k) { return k.k.name(); });
  py::class_<PySimLaunch, std::shared_ptr<PySimLaunch>>(m, "SimLaunch")
      .def("grid", [](const PySimLaunch& l, int i) { return l.v().grid(i); }, py::arg("dim") = 0)
      .def("block", [](const PySimLaunch& l, int i) { return l.v().block(i); }, py::arg("dim") = 0)
      .def("shared_bytes", [](const PySimLaunch& l) { return l.v().sharedBytes(); })
      .def("knob", [](const PySimLaunch& l, const std::string& n, int64_t fb) {
        return l.v().knob(n, fb);
      }, py::arg("name"), py::arg("fallback") = 0)
      .def("arg", &argOf)
      .def("array", &arrayOf, py::arg("index"), py::arg("dtype"), py::arg("count"));
  m.def("add_kernel", &addKernel);
  m.def("register_sim_kernel", &registerSim, py::arg("tuner"), py::arg("entry"),
        py::arg("signature"), py::arg("run"), py::arg("cost"));
}

}  // namespace ktune::py_ext
