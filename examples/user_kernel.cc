// Registering your own kernel with ktune: a bf16 scaled add, z = alpha * x + beta * y, that is
// not one of ktune's templates. The kernel is written in ktune's kernel language (prelude.cuh),
// so one source compiles with NVRTC (NVIDIA) and hiprtc/clang (AMD); its tunables (BLOCK, VEC)
// arrive as -D defines. The first call for a new size bucket tunes; later calls are a hash
// lookup and a launch; a later process reuses the tuning database and code-object store.
//
// Run: ./ktune_user_kernel [n]. Environment: KTUNE_VERBOSE=1 prints what was tried,
// KTUNE_TUNING=0 runs the default config, KTUNE_CACHE_DIR moves the cache.
// With no GPU it says so, checks that the kernel compiles (if NVRTC is installed) and runs the
// same registration on ktune's simulated backend so the flow can still be seen.
#include <cstdio>
#include <memory>
#include <random>
#include <vector>

#include "autotune/autotuner.h"
#include "compiler/sim/sim_compiler.h"
#include "runtime/sim/sim_backend.h"

namespace {

const char* kSource = R"(
#include "prelude.cuh"
// z = alpha * x + beta * y over n elements, VEC per thread per step (16-byte accesses at VEC=8).
KTUNE_KERNEL void example_scaled_add(long long n, float alpha, float beta,
                                     const ktune::bf16_t* __restrict__ x,
                                     const ktune::bf16_t* __restrict__ y,
                                     ktune::bf16_t* __restrict__ z) {
  long long i = ((long long)ktune::bid_x() * ktune::bdim_x() + ktune::tid_x()) * VEC;
  long long stride = (long long)ktune::gdim_x() * ktune::bdim_x() * VEC;
  for (; i < n; i += stride) {
    if (i + VEC <= n) {
      ktune::Vec<ktune::bf16_t, VEC> a = ktune::load_vec<VEC>(x + i);
      ktune::Vec<ktune::bf16_t, VEC> b = ktune::load_vec<VEC>(y + i);
      ktune::Vec<ktune::bf16_t, VEC> c;
#pragma unroll
      for (int k = 0; k < VEC; ++k)
        c[k] = ktune::from_float<ktune::bf16_t>(alpha * ktune::to_float(a[k]) +
                                                beta * ktune::to_float(b[k]));
      ktune::store_vec<VEC>(z + i, c);
    } else {
      for (long long k = i; k < n; ++k)
        z[k] = ktune::from_float<ktune::bf16_t>(alpha * ktune::to_float(x[k]) +
                                                beta * ktune::to_float(y[k]));
    }
  }
}
)";

// The problem type is yours: whatever the key, launch and argument functions need.
struct ScaledAdd {
  int64_t n = 0;
  float alpha = 1, beta = 1;
  ktune::DevicePtr x = 0, y = 0, z = 0;
};

ktune::KernelFamily<ScaledAdd> scaledAddFamily(ktune::Backend* backend) {
  using namespace ktune;
  KernelFamily<ScaledAdd> f;
  f.name = "example_scaled_add";
  f.source = kSource;
  f.entry = "example_scaled_add";
  f.space.addInts("BLOCK", {128, 256, 512}).addInts("VEC", {1, 2, 4, 8}).addInts("WAVES", {1, 4});
  f.default_config = Config{{"BLOCK", 256}, {"VEC", 8}, {"WAVES", 4}};
  // WAVES only shapes the grid, so it is not a compile-time define (identical binaries are
  // compiled once and told apart by their launch dimensions).
  f.defines = [](const Config& c, const ScaledAdd&) {
    return Defines{{"VEC", c.getStr("VEC")}};
  };
  // Sizes within a power of two share a tuning.
  f.key = [](const ScaledAdd& p, KeyBuilder& k) { k.add("n", nextPow2(p.n)); };
  f.launch = [](const Config& c, const ScaledAdd& p, const DeviceInfo& d) {
    int64_t per_block = c.getInt("BLOCK") * c.getInt("VEC");
    int64_t blocks = ceilDiv(p.n, per_block);
    if (d.multiprocessors > 0) blocks = std::min(blocks, d.multiprocessors * c.getInt("WAVES"));
    LaunchDims l;
    l.grid.x = static_cast<unsigned>(std::max<int64_t>(blocks, 1));
    l.block.x = static_cast<unsigned>(c.getInt("BLOCK"));
    return l;
  };
  f.args = [](const ScaledAdd& p, KernelArgs& a) {
    a.add(static_cast<long long>(p.n)).add(p.alpha).add(p.beta).add(p.x).add(p.y).add(p.z);
  };
  // Before every tuning run: poison z so a config that skips elements fails verification.
  f.pre_run = [backend](const ScaledAdd& p, StreamHandle s) {
    return poisonNaN(*backend, p.z, DType::kBF16, p.n, s);
  };
  f.verify = [backend](const ScaledAdd& p, StreamHandle) -> Expected<VerifyResult> {
    std::vector<uint16_t> x(p.n), y(p.n);
    KTUNE_RETURN_IF_ERROR(backend->copyToHost(x.data(), p.x, p.n * 2));
    KTUNE_RETURN_IF_ERROR(backend->copyToHost(y.data(), p.y, p.n * 2));
    std::vector<double> ref(p.n);
    for (int64_t i = 0; i < p.n; ++i)
      ref[i] = double(p.alpha) * bf16ToFloat(x[i]) + double(p.beta) * bf16ToFloat(y[i]);
    return compareDevice(*backend, p.z, DType::kBF16, ref, toleranceFor(DType::kBF16, 2));
  };
  return f;
}

// Host model of the kernel for the simulated backend (no GPU): same arguments, same result, and
// a made-up cost that favours wide vectors, so the tuner has something to choose.
void registerSimulatedKernel(ktune::SimBackend& sim) {
  using namespace ktune;
  sim.registerKernel(
      "example_scaled_add",
      SimKernel{[](const SimLaunch& L) {
                  auto n = L.arg<long long>(0);
                  auto alpha = L.arg<float>(1), beta = L.arg<float>(2);
                  auto* x = static_cast<uint16_t*>(L.backend->hostPtr(L.arg<DevicePtr>(3)));
                  auto* y = static_cast<uint16_t*>(L.backend->hostPtr(L.arg<DevicePtr>(4)));
                  auto* z = static_cast<uint16_t*>(L.backend->hostPtr(L.arg<DevicePtr>(5)));
                  for (long long i = 0; i < n; ++i)
                    z[i] = floatToBf16(alpha * bf16ToFloat(x[i]) + beta * bf16ToFloat(y[i]));
                  return Status::Ok();
                },
                [](const SimLaunch& L) {
                  double bytes = 6.0 * double(L.arg<long long>(0));
                  double eff = 0.5 + 0.05 * double(L.define("VEC", 1)) +
                               (L.block.x == 256 ? 0.05 : 0.0);
                  return bytes / (2.0e9 * eff);  // ms at a made-up 2 TB/s peak
                },
                nullptr});
}

}  // namespace

int main(int argc, char** argv) {
  using namespace ktune;
  int64_t n = argc > 1 ? std::atoll(argv[1]) : (1 << 20) + 3;
  if (n <= 0) {
    std::fprintf(stderr, "usage: %s [n > 0]\n", argv[0]);
    return 2;
  }
  auto env = Options::fromEnv();
  if (!env.ok()) {
    std::fprintf(stderr, "%s\n", env.status().toString().c_str());
    return 2;
  }
  EngineOptions topts;
  topts.options = *env;

  std::shared_ptr<Backend> backend;
  auto real = openBackend(env->backend == "sim" ? "none" : env->backend);
  if (real.ok()) {
    backend = std::shared_ptr<Backend>(std::move(real).value());
  } else {
    std::printf("no GPU: %s\n", real.status().toString().c_str());
    auto nvrtc = compilerForArch("sm_90a");
    if (nvrtc.ok()) {
      CompileRequest req{kSource, "example_scaled_add.cu", "example_scaled_add",
                         {{"VEC", "8"}}, "sm_90a", {}, kDumpNone};
      auto co = (*nvrtc)->compile(req);
      std::printf("compile check with %s for sm_90a: %s\n", (*nvrtc)->name().c_str(),
                  co.ok() ? "ok" : co.status().toString().c_str());
    }
    std::printf("running the same registration on the simulated backend\n");
    SimOptions so;
    so.device.name = "simulated device for the example";
    so.device.arch = "sim";
    so.device.multiprocessors = 100;
    so.device.max_threads_per_block = 1024;
    auto sim = std::make_shared<SimBackend>(so);
    registerSimulatedKernel(*sim);
    backend = sim;
    topts.compiler = std::make_shared<SimCompiler>();
    topts.options.cache_dir += "/example-sim";  // keep simulated entries apart
    // The host model really computes every launch: keep the simulated run short.
    if (argc <= 1) n = (1 << 14) + 3;
    topts.options.warmup_ms = 0.05;
    topts.options.rep_ms = 0.5;
  }

  auto tuner = Tuner::create(backend, topts);
  if (!tuner.ok()) {
    std::fprintf(stderr, "%s\n", tuner.status().toString().c_str());
    return 1;
  }
  auto op = (*tuner)->add(scaledAddFamily(backend.get()));
  if (!op.ok()) {
    std::fprintf(stderr, "%s\n", op.status().toString().c_str());
    return 1;
  }

  ScaledAdd p;
  p.n = n;
  p.alpha = 0.5f;
  p.beta = -2.0f;
  std::vector<uint16_t> hx(n), hy(n), hz(n);
  std::mt19937 rng(42);
  std::uniform_real_distribution<float> u(-1.f, 1.f);
  for (int64_t i = 0; i < n; ++i) {
    hx[i] = floatToBf16(u(rng));
    hy[i] = floatToBf16(u(rng));
  }
  for (DevicePtr* d : {&p.x, &p.y, &p.z}) {
    auto a = backend->alloc(n * 2);
    if (!a.ok()) {
      std::fprintf(stderr, "%s\n", a.status().toString().c_str());
      return 1;
    }
    *d = *a;
  }
  Status st = backend->copyToDevice(p.x, hx.data(), n * 2);
  if (st.ok()) st = backend->copyToDevice(p.y, hy.data(), n * 2);
  if (st.ok()) st = (*op)(p);  // tunes on the first call for this size bucket
  if (st.ok()) st = backend->synchronize();
  if (st.ok()) st = backend->copyToHost(hz.data(), p.z, n * 2);
  if (!st.ok()) {
    std::fprintf(stderr, "scaled add failed: %s\n", st.toString().c_str());
    return 1;
  }
  int64_t bad = 0;
  for (int64_t i = 0; i < n; ++i) {
    float ref = p.alpha * bf16ToFloat(hx[i]) + p.beta * bf16ToFloat(hy[i]);
    if (std::fabs(bf16ToFloat(hz[i]) - ref) > 2e-2f * (1 + std::fabs(ref))) ++bad;
  }
  auto sel = op->lookup(p);
  std::printf("key %s -> %s (%s), median %.4f ms; %lld of %lld elements wrong\n",
              sel->key.c_str(), sel->config.c_str(), sel->origin.c_str(), sel->stats.median_ms,
              static_cast<long long>(bad), static_cast<long long>(n));
  for (DevicePtr d : {p.x, p.y, p.z}) (void)backend->free(d);
  return bad == 0 ? 0 : 1;
}
