// ktune's own host work per call, on the CPU (no GPU needed): the call paths host_cost_bench times
// on a GPU, run here on the simulated backend whose kernels are registered without a host
// implementation, so a launch is only the simulator's bookkeeping. Each path is timed beside the
// bare SimBackend::launch of the same argument block: the difference is what ktune itself does
// per call (key, lookup, launch dims, argument packing, tensor maps, validation), which the real
// driver's cuLaunchKernel cost then adds to on a GPU.
//   BM_SimLaunch/2args, BM_SimLaunch/gemm_args   the bare launches (the baselines)
//   BM_Registration      TypedKernelSpec<Noop> through the registration API (tuning off: default)
//   BM_GemmTma           the GEMM op, TMA default config, A/B/C rotating over 4 buffer sets
//   BM_RmsNorm / BM_SiluMul          the free functions rmsnorm() / siluMul() (bf16 4096 x 1024)
//   BM_RmsNormOps / BM_SiluMulOps    the same through a RowwiseOps object
// The simulated TMA encoder returns a zeroed map (the real encode's cost is the driver's, paid
// once per pointer because of the op's cache); the bench counts encodes and reports them.
//
//   host_work_bench [--benchmark_filter=...]
#include <benchmark/benchmark.h>

#include <stdlib.h>

#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "ops/gemm.h"
#include "ops/rowwise.h"
#include "bench/call_fixtures.h"
#include "compiler/sim/sim_compiler.h"
#include "runtime/sim/sim_backend.h"
#include "templates/gemm.h"
#include "templates/rowwise.h"

namespace ktune {
namespace {

// A simulated H100 that also encodes (zeroed) TMA tensor maps, counting the encodes.
class TmaSim final : public SimBackend {
 public:
  using SimBackend::SimBackend;
  Expected<TensorMap> encodeTensorMap2D(const TensorMap2DDesc&) override {
    ++encodes;
    return TensorMap{};
  }
  int64_t encodes = 0;
};

struct World {
  std::shared_ptr<TmaSim> sim;
  std::shared_ptr<Engine> tuner;
  std::unique_ptr<GemmOp> gemm;
  std::vector<GemmCall> calls;
  Family<bench::Noop> noop;
  std::unique_ptr<RowwiseOps> rowwise;
  RmsNormArgs rms;
  SiluMulArgs silu;
  FunctionHandle noop_fn, gemm_fn;
  std::string error;
};

SimOptions h100Sim() {
  SimOptions so;
  so.device.name = "sim H100-like";
  so.device.arch = "sm_90a";
  so.device.warp_size = 32;
  so.device.max_threads_per_block = 1024;
  so.device.max_threads_per_sm = 2048;
  so.device.multiprocessors = 132;
  so.device.shared_per_block = 48 << 10;
  so.device.shared_per_block_optin = 227 << 10;
  so.device.shared_per_sm = 228 << 10;
  so.device.l2_bytes = 1 << 20;
  return so;
}

Expected<FunctionHandle> simFunction(SimBackend& be, Compiler& cc, const std::string& entry) {
  CompileRequest r;
  r.source = "bench";
  r.entry = entry;
  r.arch = "sm_90a";
  KTUNE_ASSIGN_OR_RETURN(CodeObject co, cc.compile(r));
  KTUNE_ASSIGN_OR_RETURN(ModuleHandle m, be.loadModule(co.binary));
  return be.getFunction(m, entry);
}

Status setupGemm(World& w) {
  GemmOp::OpOptions oo;
  oo.kinds = {gemm::KernelKind::kTma};
  KTUNE_ASSIGN_OR_RETURN(w.gemm, GemmOp::create(w.tuner, oo));
  const auto s = gemm::denseShape(gemm::Layout::kNT, gemm::ElemType::kBF16, gemm::ElemType::kBF16,
                                  1024, 1024, 1024);
  for (int i = 0; i < 4; ++i) {
    GemmCall c;
    c.shape = s;
    for (DevicePtr* p : {&c.buf.a, &c.buf.b, &c.buf.c}) {
      KTUNE_ASSIGN_OR_RETURN(*p, w.sim->alloc(size_t(1024) * 1024 * 2));
    }
    w.calls.push_back(c);
  }
  for (const auto& c : w.calls) KTUNE_RETURN_IF_ERROR((*w.gemm)(c));
  KTUNE_ASSIGN_OR_RETURN(auto sel, w.gemm->lookup(w.calls[0]));
  if (sel.winner.find("KIND=tma") == std::string::npos)
    return Status::Internal("the GEMM default is not a TMA config: " + sel.winner);
  return Status::Ok();
}

Status setupRowwise(World& w) {
  KTUNE_ASSIGN_OR_RETURN(w.rowwise, RowwiseOps::create(*w.tuner));
  KTUNE_ASSIGN_OR_RETURN(DevicePtr x, w.sim->alloc(size_t(4096) * 2048 * 2));
  KTUNE_ASSIGN_OR_RETURN(DevicePtr y, w.sim->alloc(size_t(4096) * 1024 * 2));
  KTUNE_ASSIGN_OR_RETURN(DevicePtr wt, w.sim->alloc(1024 * 2));
  w.rms.rows = 4096;
  w.rms.cols = 1024;
  w.rms.x = x;
  w.rms.y = y;
  w.rms.weight = wt;
  w.silu.rows = 4096;
  w.silu.d = 1024;
  w.silu.x = x;
  w.silu.out = y;
  KTUNE_RETURN_IF_ERROR(rmsnorm(*w.tuner, w.rms));
  return siluMul(*w.tuner, w.silu);
}

Status setup(World& w) {
  w.sim = std::make_shared<TmaSim>(h100Sim());
  auto cc = std::make_shared<SimCompiler>();
  for (auto k : {gemm::KernelKind::kMma, gemm::KernelKind::kWgmma, gemm::KernelKind::kTma,
                 gemm::KernelKind::kSkinny})
    w.sim->registerKernel(gemm::entryName(k), SimKernel{});
  w.sim->registerKernel(rowwise::kRmsNormEntry, SimKernel{});
  w.sim->registerKernel(rowwise::kSiluMulEntry, SimKernel{});
  w.sim->registerKernel("ktune_bench_noop", SimKernel{});
  char tmpl[] = "/tmp/ktune-hostwork-XXXXXX";
  if (!::mkdtemp(tmpl)) return Status::Internal("mkdtemp failed");
  EngineOptions o;
  o.options.cache_dir = tmpl;
  o.options.tuning = false;  // every path runs its default: no tuning, only the per-call work
  o.options.isolate = false;
  o.compiler = cc;
  KTUNE_ASSIGN_OR_RETURN(auto t, Engine::create(w.sim, o));
  w.tuner = std::shared_ptr<Engine>(std::move(t));
  KTUNE_ASSIGN_OR_RETURN(w.noop, w.tuner->add(bench::noopFamily("bench_noop")));
  KTUNE_ASSIGN_OR_RETURN(w.noop_fn, simFunction(*w.sim, *cc, "ktune_bench_noop"));
  KTUNE_ASSIGN_OR_RETURN(w.gemm_fn,
                         simFunction(*w.sim, *cc, gemm::entryName(gemm::KernelKind::kTma)));
  KTUNE_RETURN_IF_ERROR(setupGemm(w));
  return setupRowwise(w);
}

World& world() {
  static World* w = [] {
    auto* x = new World();
    if (Status s = setup(*x); !s.ok()) x->error = s.toString();
    return x;
  }();
  return *w;
}

#define NEED_WORLD(state) \
  World& w = world();     \
  if (!w.error.empty()) return state.SkipWithError(w.error.c_str())

void check(benchmark::State& state, const Status& s) {
  if (!s.ok()) state.SkipWithError(s.toString().c_str());
}

void BM_SimLaunch2(benchmark::State& state) {
  NEED_WORLD(state);
  KernelArgs a;
  a.add(w.calls[0].buf.c).add(1000LL);
  void** p = a.data();
  for (auto _ : state) check(state, w.sim->launch(w.noop_fn, {1, 1, 1}, {64, 1, 1}, 0, p));
}
BENCHMARK(BM_SimLaunch2)->Name("BM_SimLaunch/2args");

void BM_SimLaunchGemmArgs(benchmark::State& state) {
  NEED_WORLD(state);
  KernelArgs a;
  for (int i = 0; i < 6; ++i) a.add(w.calls[0].buf.c);
  a.add(int32_t(1024)).add(int32_t(1024)).add(int32_t(1024));
  a.add(int64_t(1024)).add(int64_t(1024)).add(int64_t(1024)).add(1.0f).add(0.0f);
  a.add(TensorMap{}).add(TensorMap{}).add(TensorMap{}).add(int32_t(1));
  void** p = a.data();
  for (auto _ : state) check(state, w.sim->launch(w.gemm_fn, {132, 1, 1}, {384, 1, 1}, 0, p));
}
BENCHMARK(BM_SimLaunchGemmArgs)->Name("BM_SimLaunch/gemm_args");

void BM_Registration(benchmark::State& state) {
  NEED_WORLD(state);
  const bench::Noop n{w.calls[0].buf.c, 1000};
  for (auto _ : state) check(state, w.noop(n));
}
BENCHMARK(BM_Registration);

// The same noop kernel registered from data (a tuner of its own on the simulated backend, tuned on
// the first call): the public C++ handle and the C API, as host_cost_bench's cxx_data and c_api.
bench::DataFamily& dataFamily() {
  static bench::DataFamily* d = [] {
    auto* x = new bench::DataFamily(bench::makeDataFamily("sim"));
    if (x->skip.empty()) {
      const ktune::Value v[] = {ktune::Value::ptr(x->buf), ktune::Value::i64(1000)};
      if (Status s = x->kernel(v, 2); !s.ok()) x->skip = s.toString();
    }
    return x;
  }();
  return *d;
}

void BM_CxxData(benchmark::State& state) {
  bench::DataFamily& d = dataFamily();
  if (!d.skip.empty()) return state.SkipWithError(d.skip.c_str());
  const ktune::Value v[] = {ktune::Value::ptr(d.buf), ktune::Value::i64(1000)};
  for (auto _ : state) check(state, d.kernel(v, 2));
}
BENCHMARK(BM_CxxData);

void BM_CApi(benchmark::State& state) {
  bench::DataFamily& d = dataFamily();
  if (!d.skip.empty()) return state.SkipWithError(d.skip.c_str());
  ktune_value v[2];
  bench::noopValues(v, d.buf);
  for (auto _ : state)
    if (ktune_family_call(d.f, v, 2, nullptr) != KTUNE_OK) state.SkipWithError(ktune_last_error());
}
BENCHMARK(BM_CApi);

void BM_GemmTma(benchmark::State& state) {
  NEED_WORLD(state);
  const int64_t enc0 = w.sim->encodes;
  size_t i = 0;
  for (auto _ : state) check(state, (*w.gemm)(w.calls[i++ % w.calls.size()]));
  state.counters["encodes"] = double(w.sim->encodes - enc0);
}
BENCHMARK(BM_GemmTma);

void BM_RmsNorm(benchmark::State& state) {
  NEED_WORLD(state);
  for (auto _ : state) check(state, rmsnorm(*w.tuner, w.rms));
}
BENCHMARK(BM_RmsNorm);

void BM_SiluMul(benchmark::State& state) {
  NEED_WORLD(state);
  for (auto _ : state) check(state, siluMul(*w.tuner, w.silu));
}
BENCHMARK(BM_SiluMul);

void BM_RmsNormOps(benchmark::State& state) {
  NEED_WORLD(state);
  for (auto _ : state) check(state, w.rowwise->rmsnorm(w.rms));
}
BENCHMARK(BM_RmsNormOps);

void BM_SiluMulOps(benchmark::State& state) {
  NEED_WORLD(state);
  for (auto _ : state) check(state, w.rowwise->siluMul(w.silu));
}
BENCHMARK(BM_SiluMulOps);

}  // namespace
}  // namespace ktune

BENCHMARK_MAIN();
