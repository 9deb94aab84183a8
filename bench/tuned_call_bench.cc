// Host cost of a tuned call vs a raw driver launch of the same kernel, and the cold start of a
// fresh process with 100 tuned entries on disk. Targets (DESIGN.md): tuned call <= 4 us and within
// 1.3x of a raw cuLaunchKernel; a fresh process's first call ready <= 20 ms with nothing recompiled.
// The same kernel registered from data through the public C++ API (ktune::Kernel) and through the
// C API (ktune_family_call): the target is C within 10% of the C++ call (BM_TunedCall).
//
// These are wall-clock figures of back-to-back launches (they mix host and device throughput);
// the host cost per call as CPU time, with the GPU kept from being the bottleneck, is
// host_cost_bench.
//
//   tuned_call_bench                       (needs an NVIDIA GPU; skips with a message otherwise)
#include <benchmark/benchmark.h>
#include <dlfcn.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "bench/call_fixtures.h"
#include "autotune/autotuner.h"
#include "ktune/ktune.h"
#include "ktune/ktune.hpp"
#include "base/fs.h"
#include "base/subprocess.h"
#include "compiler/compiler.h"
#include "compiler/store/store.h"
#include "runtime/backend.h"

namespace ktune {
namespace {

using bench::kNoopSource;
using bench::Noop;
using bench::noopFamily;

struct Env {
  std::shared_ptr<Backend> backend;
  std::shared_ptr<Engine> tuner;
  Family<Noop> family;
  DevicePtr buf = 0;
  std::string skip;
  std::string cache_dir;
};

Env& env() {
  static Env e = [] {
    Env e;
    auto b = openCudaBackend();
    if (!b.ok()) {
      e.skip = "no GPU: " + b.status().message();
      return e;
    }
    e.backend = std::move(*b);
    (void)e.backend->setDevice(0);
    char tmpl[] = "/tmp/ktune-bench-call-XXXXXX";
    e.cache_dir = ::mkdtemp(tmpl);
    EngineOptions o;
    o.options.cache_dir = e.cache_dir;
    o.options.warmup_ms = 2;
    o.options.rep_ms = 5;
    auto t = Engine::create(e.backend, o);
    if (!t.ok()) {
      e.skip = t.status().toString();
      return e;
    }
    e.tuner = std::move(*t);
    auto f = e.tuner->add(noopFamily("bench_noop"));
    if (!f.ok()) {
      e.skip = f.status().toString();
      return e;
    }
    e.family = *f;
    auto p = e.backend->alloc(256);
    if (!p.ok()) {
      e.skip = p.status().toString();
      return e;
    }
    e.buf = *p;
    return e;
  }();
  return e;
}

void syncEvery(benchmark::State& state, Backend& b, int64_t i) {
  if ((i & 255) == 255) {
    state.PauseTiming();
    (void)b.synchronize();
    state.ResumeTiming();
  }
}

void BM_TunedCall(benchmark::State& state) {
  Env& e = env();
  if (!e.skip.empty()) return state.SkipWithError(e.skip.c_str());
  Noop p{e.buf, 1000};
  Status s = e.family(p);  // tunes once
  if (!s.ok()) return state.SkipWithError(s.toString().c_str());
  (void)e.backend->synchronize();
  int64_t i = 0;
  for (auto _ : state) {
    Status st = e.family(p);
    if (!st.ok()) return state.SkipWithError(st.toString().c_str());
    syncEvery(state, *e.backend, i++);
  }
  (void)e.backend->synchronize();
}

// The noop kernel registered from data (C API and the public C++ handle behind it).
using DataEnv = bench::DataFamily;
DataEnv& dataEnv() {
  static DataEnv e = bench::makeDataFamily();
  return e;
}

// Times `call` (returns an error message or nullptr) after one untimed call that tunes,
// synchronising every 256 calls outside the timing as syncEvery does.
template <class Call>
void timeDataCalls(benchmark::State& state, DataEnv& e, Call call) {
  if (!e.skip.empty()) return state.SkipWithError(e.skip.c_str());
  if (const char* err = call()) return state.SkipWithError(err);  // tunes once
  (void)ktune_synchronize(e.t, nullptr);
  int64_t i = 0;
  for (auto _ : state) {
    if (const char* err = call()) return state.SkipWithError(err);
    if ((i++ & 255) == 255) {
      state.PauseTiming();
      (void)ktune_synchronize(e.t, nullptr);
      state.ResumeTiming();
    }
  }
  (void)ktune_synchronize(e.t, nullptr);
}

void BM_CApiCall(benchmark::State& state) {
  DataEnv& e = dataEnv();
  ktune_value v[2];
  bench::noopValues(v, e.buf);
  timeDataCalls(state, e, [&]() -> const char* {
    return ktune_family_call(e.f, v, 2, nullptr) == KTUNE_OK ? nullptr : ktune_last_error();
  });
}

void BM_PublicCxxCall(benchmark::State& state) {
  DataEnv& e = dataEnv();
  const ktune::Value v[] = {ktune::Value::ptr(e.buf), ktune::Value::i64(1000)};
  std::string err;
  timeDataCalls(state, e, [&]() -> const char* {
    Status st = e.kernel(v, 2);
    if (st.ok()) return nullptr;
    err = st.toString();
    return err.c_str();
  });
}

void BM_BackendLaunch(benchmark::State& state) {
  Env& e = env();
  if (!e.skip.empty()) return state.SkipWithError(e.skip.c_str());
  auto comp = compilerForArch(e.tuner->device().arch);
  if (!comp.ok()) return state.SkipWithError(comp.status().toString().c_str());
  CompileRequest r;
  r.source = kNoopSource;
  r.entry = "ktune_bench_noop";
  r.arch = e.tuner->device().arch;
  auto co = (*comp)->compile(r);
  if (!co.ok()) return state.SkipWithError(co.status().toString().c_str());
  auto m = e.backend->loadModule(co->binary);
  if (!m.ok()) return state.SkipWithError(m.status().toString().c_str());
  auto fn = e.backend->getFunction(*m, co->lowered_entry.empty() ? co->entry : co->lowered_entry);
  if (!fn.ok()) return state.SkipWithError(fn.status().toString().c_str());
  KernelArgs a;
  int64_t i = 0;
  for (auto _ : state) {
    a.clear();
    a.add(e.buf).add(1000LL);
    Status st = e.backend->launch(*fn, {1, 1, 1}, {64, 1, 1}, 0, a.data());
    if (!st.ok()) return state.SkipWithError(st.toString().c_str());
    syncEvery(state, *e.backend, i++);
  }
  (void)e.backend->synchronize();
}

// cuLaunchKernel straight from libcuda, no ktune code in between: the "raw driver launch".
void BM_RawDriverLaunch(benchmark::State& state) {
  Env& e = env();
  if (!e.skip.empty()) return state.SkipWithError(e.skip.c_str());
  void* lib = ::dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
  if (!lib) lib = ::dlopen("libcuda.so.1", RTLD_NOW);
  using LoadFn = int (*)(void**, const void*);
  using GetFn = int (*)(void**, void*, const char*);
  using LaunchFn = int (*)(void*, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                           unsigned, void*, void**, void**);
  auto load = reinterpret_cast<LoadFn>(::dlsym(lib, "cuModuleLoadData"));
  auto get = reinterpret_cast<GetFn>(::dlsym(lib, "cuModuleGetFunction"));
  auto launch = reinterpret_cast<LaunchFn>(::dlsym(lib, "cuLaunchKernel"));
  if (!load || !get || !launch) return state.SkipWithError("driver symbols missing");
  auto comp = compilerForArch(e.tuner->device().arch);
  if (!comp.ok()) return state.SkipWithError(comp.status().toString().c_str());
  CompileRequest r;
  r.source = kNoopSource;
  r.entry = "ktune_bench_noop";
  r.arch = e.tuner->device().arch;
  auto co = (*comp)->compile(r);
  if (!co.ok()) return state.SkipWithError(co.status().toString().c_str());
  void* mod = nullptr;
  void* fn = nullptr;
  if (load(&mod, co->binary.data()) != 0 || get(&fn, mod, "ktune_bench_noop") != 0)
    return state.SkipWithError("cuModuleLoadData/cuModuleGetFunction failed");
  DevicePtr p = e.buf;
  long long n = 1000;
  void* args[] = {&p, &n};
  int64_t i = 0;
  for (auto _ : state) {
    if (launch(fn, 1, 1, 1, 64, 1, 1, 0, nullptr, args, nullptr) != 0)
      return state.SkipWithError("cuLaunchKernel failed");
    syncEvery(state, *e.backend, i++);
  }
  (void)e.backend->synchronize();
}

// Fresh process: the parent tunes 100 keys into a cache dir, then runs this binary again as a
// child that opens the GPU, creates a Engine and makes its first call. The child reports its
// timings; the parent checks that the store gained no entry (nothing recompiled).
int childFirstCall(const std::string& cache_dir) {
  using Clock = std::chrono::steady_clock;
  auto t0 = Clock::now();
  auto b = openCudaBackend();
  if (!b.ok()) return 3;
  std::shared_ptr<Backend> backend(std::move(*b));
  (void)backend->setDevice(0);
  auto dev = backend->devices();  // forces driver + context init
  auto t1 = Clock::now();
  EngineOptions o;
  o.options.cache_dir = cache_dir;
  auto t = Engine::create(backend, o);
  if (!t.ok()) return 4;
  auto f = (*t)->add(noopFamily("bench_noop_100"));
  if (!f.ok()) return 5;
  auto buf = backend->alloc(256);
  if (!buf.ok()) return 6;
  Noop p{*buf, 1};
  auto sel = f->lookup(p);
  Status s = (*f)(p);
  (void)backend->synchronize();
  auto t2 = Clock::now();
  int from_db = 0;
  for (int n = 1; n <= 100; ++n) {
    auto l = f->lookup(Noop{*buf, n});
    if (l.ok() && (l->origin == "database" || l->origin == "memory")) ++from_db;
  }
  nlohmann::json j = {
      {"ok", s.ok()},
      {"first_origin", sel.ok() ? sel->origin : sel.status().toString()},
      {"driver_init_ms", std::chrono::duration<double, std::milli>(t1 - t0).count()},
      {"first_call_ms", std::chrono::duration<double, std::milli>(t2 - t1).count()},
      {"keys_from_database", from_db}};
  std::printf("%s\n", j.dump().c_str());
  return s.ok() ? 0 : 7;
}

void BM_FreshProcess100Entries(benchmark::State& state) {
  Env& e = env();
  if (!e.skip.empty()) return state.SkipWithError(e.skip.c_str());
  char tmpl[] = "/tmp/ktune-bench-fresh-XXXXXX";
  std::string dir = ::mkdtemp(tmpl);
  {
    EngineOptions o;
    o.options.cache_dir = dir;
    o.options.warmup_ms = 1;
    o.options.rep_ms = 2;
    auto t = Engine::create(e.backend, o);
    if (!t.ok()) return state.SkipWithError(t.status().toString().c_str());
    auto f = (*t)->add(noopFamily("bench_noop_100"));
    if (!f.ok()) return state.SkipWithError(f.status().toString().c_str());
    for (int n = 1; n <= 100; ++n) {
      Status s = (*f)(Noop{e.buf, n});
      if (!s.ok()) return state.SkipWithError(s.toString().c_str());
    }
    (void)e.backend->synchronize();
  }
  auto store = CodeObjectStore::open(dir);
  size_t before = store.ok() ? (*store)->list()->size() : 0;
  char self[4096];
  ssize_t len = ::readlink("/proc/self/exe", self, sizeof(self) - 1);
  if (len <= 0) return state.SkipWithError("cannot find own executable");
  self[len] = 0;
  double first = 0, init = 0;
  int from_db = 0;
  for (auto _ : state) {
    auto r = runProcess({self, "--child-first-call", dir}, "", 60000);
    if (!r.ok() || r->exit_code != 0)
      return state.SkipWithError(("child failed: " + (r.ok() ? r->err + r->out : r.status().toString())).c_str());
    auto j = nlohmann::json::parse(r->out, nullptr, false);
    if (j.is_discarded()) return state.SkipWithError("child printed no JSON");
    first = j["first_call_ms"].get<double>();
    init = j["driver_init_ms"].get<double>();
    from_db = j["keys_from_database"].get<int>();
    state.SetIterationTime(first / 1e3);
  }
  size_t after = store.ok() ? (*store)->list()->size() : 0;
  state.counters["first_call_ms"] = first;
  state.counters["driver_init_ms"] = init;
  state.counters["keys_from_db"] = from_db;
  state.counters["new_code_objects"] = double(after) - double(before);
  (void)removeTree(dir);
}

BENCHMARK(BM_RawDriverLaunch)->Iterations(10000);
BENCHMARK(BM_BackendLaunch)->Iterations(10000);
BENCHMARK(BM_TunedCall)->Iterations(10000);
BENCHMARK(BM_PublicCxxCall)->Iterations(10000);
BENCHMARK(BM_CApiCall)->Iterations(10000);
BENCHMARK(BM_FreshProcess100Entries)->Iterations(3)->UseManualTime()->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace ktune

int main(int argc, char** argv) {
  if (argc == 3 && std::strcmp(argv[1], "--child-first-call") == 0)
    return ktune::childFirstCall(argv[2]);
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
