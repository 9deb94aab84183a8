// ktune._ktune: the Autotuner (device, store, databases, memory) and the library's version. The
// Python package (python/ktune) builds its API on these few calls.
#include <pybind11/stl.h>

#include <algorithm>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "common.h"

namespace ktune::py_ext {

[[noreturn]] void raiseStatus(const Status& s) {
  // The classes live in Python (ktune/_errors.py): the package owns its exception hierarchy.
  py::object errors = py::module_::import("ktune._errors");
  py::object cls = errors.attr("error_class")(codeName(s.code()));
  PyErr_SetString(cls.ptr(), s.toString().c_str());
  throw py::error_already_set();
}

namespace {

// One TunerOptions field as Python sees it: set from a Python value and read back as one.
struct OptionField {
  const char* name;  // the field's C++ name
  std::function<void(TunerOptions&, const py::handle&)> set;
  std::function<py::object(const TunerOptions&)> get;
};

template <typename T>
OptionField field(const char* name, T TunerOptions::*member) {
  return {name, [member](TunerOptions& o, const py::handle& v) { o.*member = v.cast<T>(); },
          [member](const TunerOptions& o) { return py::cast(o.*member); }};
}

// Settable, but not listed by Autotuner.options(): where this machine keeps its files and tools.
bool shownByOptions(const std::string& name) {
  return name != "record_untuned_path" && name != "worker_path" && name != "clang";
}

// Every TunerOptions field a Python caller may set, in the order Autotuner.options() lists them.
const std::vector<OptionField>& optionFields() {
  static const std::vector<OptionField> kFields = {
      field("device", &TunerOptions::device),
      field("cache_dir", &TunerOptions::cache_dir),
      field("tuning", &TunerOptions::tuning),
      field("background", &TunerOptions::background),
      field("record_untuned_path", &TunerOptions::record_untuned_path),
      field("database_path", &TunerOptions::database_path),
      field("verbose", &TunerOptions::verbose),
      field("isolate", &TunerOptions::isolate),
      field("worker_path", &TunerOptions::worker_path),
      field("compile_threads", &TunerOptions::compile_threads),
      field("pipeline", &TunerOptions::pipeline),
      field("warmup_ms", &TunerOptions::warmup_ms),
      field("rep_ms", &TunerOptions::rep_ms),
      field("static_prune", &TunerOptions::static_prune),
      field("vendor_algos", &TunerOptions::vendor_algos),
      field("search", &TunerOptions::search),
      field("budget_s", &TunerOptions::budget_s),
      field("backend", &TunerOptions::backend),
      field("clang", &TunerOptions::clang),
      field("retry_failed", &TunerOptions::retry_failed),
      field("pdl", &TunerOptions::pdl),
      field("remote_cache", &TunerOptions::remote_cache),
      field("remote_timeout_ms", &TunerOptions::remote_timeout_ms),
      field("lease_ms", &TunerOptions::lease_ms),
      field("lease_wait_ms", &TunerOptions::lease_wait_ms),
  };
  return kFields;
}

const OptionField* findOption(const std::string& name) {
  for (const OptionField& f : optionFields())
    if (name == f.name) return &f;
  return nullptr;
}

py::dict optionsDict(const TunerOptions& o) {
  py::dict d;
  for (const OptionField& f : optionFields())
    if (shownByOptions(f.name)) d[f.name] = f.get(o);
  return d;
}

// Options = the environment (TunerOptions::fromEnv, the one place ktune reads it) overlaid with
// the caller's fields; an unknown field or a value of the wrong type is an InvalidArgument.
AutotunerRef createAutotuner(const py::dict& overrides) {
  TunerOptions o = unwrap(TunerOptions::fromEnv());
  for (auto item : overrides) {
    std::string name = py::str(item.first);
    const OptionField* f = findOption(name);
    if (f == nullptr) check(Status::InvalidArgument("unknown tuner option '" + name + "'"));
    if (item.second.is_none()) continue;
    try {
      f->set(o, item.second);
    } catch (const py::cast_error&) {
      check(Status::InvalidArgument("tuner option '" + name + "': wrong type (" +
                                    std::string(py::str(py::type::of(item.second))) + ")"));
    }
  }
  auto ref = std::make_shared<PyAutotuner>();
  ref->options = o;
  {
    py::gil_scoped_release nogil;  // opening a GPU backend can take a while
    auto t = Autotuner::create(o);
    if (!t.ok()) {
      py::gil_scoped_acquire gil;
      raiseStatus(t.status());
    }
    ref->t = std::move(t).value();
  }
  return ref;
}

py::buffer_info contiguous(const py::buffer& b, bool writable) {
  py::buffer_info info = b.request(writable);
  ssize_t expect = info.itemsize;
  for (ssize_t i = info.ndim - 1; i >= 0; --i) {
    if (info.shape[i] > 1 && info.strides[i] != expect)
      check(Status::InvalidArgument("buffer is not C-contiguous"));
    expect *= info.shape[i];
  }
  return info;
}

// Autotuner::benchmark for a Python callable (called with the GIL held, on this thread): the
// stats as a dict with every run's time; an exception of fn or before_run is re-raised as is.
py::dict benchmark(PyAutotuner& t, const py::function& fn, double warmup_ms, double rep_ms,
                   int min_runs, const std::string& flush, uintptr_t stream,
                   const py::object& before_run) {
  if (flush != "read" && flush != "memset" && flush != "none")
    check(Status::InvalidArgument("benchmark: flush='" + flush +
                                  "': expected 'read', 'memset' or 'none'"));
  std::optional<py::error_already_set> raised;
  auto wrap = [&raised](const py::object& f) -> std::function<Status()> {
    return [&raised, f]() -> Status {
      try {
        f();
        return Status::Ok();
      } catch (py::error_already_set& e) {
        raised.emplace(std::move(e));
        return Status::Internal("the benchmarked function raised");
      }
    };
  };
  BenchSettings bs;
  bs.warmup_ms = warmup_ms;
  bs.rep_ms = rep_ms;
  bs.min_runs = min_runs;
  bs.max_runs = std::max(min_runs, bs.max_runs);
  bs.flush_l2 = flush != "none";
  bs.flush_read = flush == "read";
  auto r = t.t->benchmark(wrap(fn), bs, streamOf(stream),
                          before_run.is_none() ? nullptr : wrap(before_run));
  if (raised) throw std::move(*raised);
  BenchStats st = unwrap(std::move(r));
  py::dict d;
  d["median_ms"] = st.median_ms;
  d["p20_ms"] = st.p20_ms;
  d["p80_ms"] = st.p80_ms;
  d["min_ms"] = st.min_ms;
  d["max_ms"] = st.max_ms;
  d["mean_ms"] = st.mean_ms;
  d["std_ms"] = st.std_ms;
  d["runs"] = st.runs;
  d["samples_ms"] = st.samples_ms;
  return d;
}

void bindAutotuner(py::module_& m) {
  py::class_<PyAutotuner, AutotunerRef>(m, "Autotuner")
      .def(py::init(&createAutotuner), py::arg("options") = py::dict())
      .def("options", [](const PyAutotuner& t) { return optionsDict(t.options); })
      .def_property_readonly("backend", [](const PyAutotuner& t) { return t.t->backendName(); })
      .def_property_readonly("device_name", [](const PyAutotuner& t) { return t.t->deviceName(); })
      .def_property_readonly("arch", [](const PyAutotuner& t) { return t.t->arch(); })
      .def_property_readonly("cache_dir", [](const PyAutotuner& t) { return t.t->cacheDir(); })
      .def("clear_cache", [](PyAutotuner& t) { check(t.t->clearCache()); })
      .def("wait_background",
           [](PyAutotuner& t) {
             {
               py::gil_scoped_release nogil;  // the tuning thread may call back into Python
               t.t->waitBackground();
             }
             return t.t->backgroundTuned();
           })
      .def("report", [](const PyAutotuner& t, const std::string& family, const std::string& key) {
        return unwrap(t.t->report(family, key)).toJson();
      })
      .def("export_db", [](const PyAutotuner& t, const std::string& f) {
        return unwrap(t.t->exportDatabase(f));
      })
      .def("import_db", [](PyAutotuner& t, const std::string& f, const std::string& json) {
        check(t.t->importDatabase(f, json));
      })
      .def("remove_key", [](PyAutotuner& t, const std::string& f, const std::string& key) {
        check(t.t->removeKey(f, key));
      })
      .def("alloc", [](PyAutotuner& t, size_t bytes) { return unwrap(t.t->alloc(bytes)); })
      .def("free", [](PyAutotuner& t, uint64_t p) { check(t.t->free(p)); })
      .def("copy_to_device", [](PyAutotuner& t, uint64_t dst, const py::buffer& src) {
        py::buffer_info info = contiguous(src, false);
        check(t.t->copyToDevice(dst, info.ptr, size_t(info.size * info.itemsize)));
      })
      .def("copy_to_host", [](PyAutotuner& t, const py::buffer& dst, uint64_t src) {
        py::buffer_info info = contiguous(dst, true);
        check(t.t->copyToHost(info.ptr, src, size_t(info.size * info.itemsize)));
      })
      .def("benchmark", &benchmark, py::arg("fn"), py::arg("warmup_ms"), py::arg("rep_ms"),
           py::arg("min_runs") = 10, py::arg("flush") = "read", py::arg("stream") = 0,
           py::arg("before_run") = py::none())
      .def("synchronize", [](PyAutotuner& t, uintptr_t s) {
        Status st;
        {
          py::gil_scoped_release nogil;
          st = t.t->synchronize(streamOf(s));
        }
        check(st);
      }, py::arg("stream") = 0);
}

}  // namespace

}  // namespace ktune::py_ext

PYBIND11_MODULE(_ktune, m) {
  namespace kp = ktune::py_ext;
  m.doc() = "ktune's C++ core (the public API of libktune); use the ktune package instead";
  m.def("version", [] { return std::string(ktune::version()); });
  kp::bindAutotuner(m);
  kp::bindKernel(m);
  kp::bindOps(m);
  kp::bindLauncher(m);
  kp::bindRawLaunch(m);
}
