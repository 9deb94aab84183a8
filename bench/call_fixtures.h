// The noop kernel family the call-cost benches time (tuned_call_bench, host_cost_bench): the same
// kernel registered through the registration API (TypedKernelSpec<Noop>), and from data through the
// C API with the public C++ handle behind it.
#pragma once

#include <stdlib.h>

#include <cstring>
#include <string>

#include "api/c_api_util.h"
#include "autotune/autotuner.h"
#include "ktune/ktune.h"
#include "ktune/ktune.hpp"

namespace ktune::bench {

inline const char* kNoopSource = R"(
#include "prelude.cuh"
KTUNE_KERNEL void ktune_bench_noop(float* p, long long n) {
  // Writes only for an impossible n, so the kernel is as short as a kernel can be.
  if (n < 0 && ktune::tid_x() == 0) p[0] = 1.0f;
}
)";

struct Noop {
  DevicePtr p = 0;
  int64_t n = 0;
};

inline TypedKernelSpec<Noop> noopFamily(const std::string& name) {
  TypedKernelSpec<Noop> f;
  f.name = name;
  f.source = kNoopSource;
  f.entry = "ktune_bench_noop";
  f.space = {{"THREADS", {64, 128}}};  // the default: the first value
  f.key = [](const Noop& p, KeyFields& k) { k.add("n", p.n); };
  f.launch = [](const Knobs& c, const Noop&, const DeviceFacts&) {
    return Launch::linear(1, c["THREADS"]);
  };
  f.args = [](const Noop& p, ArgPack& a) { a.add(p.p).add(static_cast<long long>(p.n)); };
  return f;
}

// The noop family's two C API arguments: (p = buf, n = 1000).
inline void noopValues(ktune_value (&v)[2], uint64_t buf) {
  std::memset(v, 0, sizeof v);
  v[0].type = KTUNE_ARG_PTR;
  v[0].v.ptr = buf;
  v[1].type = KTUNE_ARG_I64;
  v[1].v.i64 = 1000;
}

// The noop kernel registered from data: one tuner through the C API (which wraps the public C++
// API); `kernel` is the same family's C++ handle.
struct DataFamily {
  ktune_tuner* t = nullptr;
  ktune_family* f = nullptr;
  ktune::Kernel kernel;
  uint64_t buf = 0;
  std::string skip;  // non-empty: why it could not be set up
};

// backend: "cuda" (host_cost_bench) or "sim" (host_work_bench: the kernel registered with no
// effect, so a call is the engine's and the API's own work).
inline DataFamily makeDataFamily(const char* backend = "cuda") {
  DataFamily e;
  char tmpl[] = "/tmp/ktune-bench-capi-XXXXXX";
  const char* d = ::mkdtemp(tmpl);
  if (!d) {
    e.skip = "mkdtemp failed";
    return e;
  }
  static std::string dir;
  dir = d;
  ktune_tuner_options o = KTUNE_TUNER_OPTIONS_INIT;
  o.backend = backend;
  o.cache_dir = dir.c_str();
  o.isolate = 0;
  static const ktune_arg args[] = {{"p", KTUNE_ARG_PTR}, {"n", KTUNE_ARG_I64}};
  static const char* const key[] = {"n"};
  ktune_family_desc fd = KTUNE_FAMILY_DESC_INIT;
  fd.name = "bench_noop_data";
  fd.source = kNoopSource;
  fd.entry = "ktune_bench_noop";
  fd.space_json = R"({"params": {"THREADS": [64, 128]}})";
  fd.args = args;
  fd.num_args = 2;
  fd.key = key;
  fd.num_key = 1;
  fd.grid[0] = "1";
  fd.block[0] = "THREADS";
  const bool sim = std::string(backend) == "sim";
  if (ktune_tuner_create_ex(&o, &e.t) != KTUNE_OK ||
      (sim && ktune_sim_register_kernel(e.t, "ktune_bench_noop", nullptr, nullptr, nullptr) !=
                  KTUNE_OK) ||
      ktune_family_register(e.t, &fd, &e.f) != KTUNE_OK ||
      ktune_malloc(e.t, 256, &e.buf) != KTUNE_OK) {
    e.skip = std::string("C API: ") + ktune_last_error();
    return e;
  }
  e.kernel = e.f->kernel;  // the handle behind the C family (api/c_api_util.h)
  return e;
}

}  // namespace ktune::bench
