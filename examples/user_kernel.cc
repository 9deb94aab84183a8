// Registering your own kernel with ktune: a bf16 scaled add, z = alpha * x + beta * y, that is
// not one of ktune's templates, over a problem struct of your own with typed callbacks
// (<ktune/typed.hpp>, the @triton.autotune-like API; only the installed headers are used). The
// kernel is written in ktune's kernel language (prelude.cuh), so one source compiles with NVRTC
// (NVIDIA) and hiprtc/clang (AMD); its tunables (BLOCK, VEC) arrive as -D defines. The first call
// for a new size bucket tunes; later calls are a hash lookup and a launch; a later process reuses
// the tuning database and code-object store.
//
// Run: ./ktune_user_kernel [n]. Environment: KTUNE_VERBOSE=1 prints what was tried,
// KTUNE_TUNING=0 runs the default config, KTUNE_CACHE_DIR moves the cache, KTUNE_BACKEND=sim the
// simulated backend. With no GPU it says so and runs the same registration on ktune's simulated
// backend (a host function stands in for the kernel) so the flow can still be seen; `ktune compile`
// shows what the compilers make of the source without a GPU.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include <ktune/ktune.hpp>

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

// bf16 <-> float on the host (round to nearest even; NaN stays NaN).
uint16_t toBf16(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  if ((u & 0x7fffffffu) > 0x7f800000u) return 0x7fc0;
  return static_cast<uint16_t>((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}
float fromBf16(uint16_t h) {
  uint32_t u = uint32_t(h) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

// The problem type is yours: whatever the key, launch and argument callbacks need.
struct ScaledAdd {
  int64_t n = 0;
  float alpha = 1, beta = 1;
  ktune::DevicePtr x = 0, y = 0, z = 0;
};

// Elements of z that differ from alpha * x + beta * y beyond bf16 rounding (NaN counts).
ktune::Expected<int64_t> wrongElements(ktune::Autotuner& t, const ScaledAdd& p) {
  std::vector<uint16_t> x(p.n), y(p.n), z(p.n);
  KTUNE_RETURN_IF_ERROR(t.copyToHost(x.data(), p.x, p.n * 2));
  KTUNE_RETURN_IF_ERROR(t.copyToHost(y.data(), p.y, p.n * 2));
  KTUNE_RETURN_IF_ERROR(t.copyToHost(z.data(), p.z, p.n * 2));
  int64_t bad = 0;
  for (int64_t i = 0; i < p.n; ++i) {
    float ref = p.alpha * fromBf16(x[i]) + p.beta * fromBf16(y[i]);
    if (!(std::fabs(fromBf16(z[i]) - ref) <= 2e-2f * (1 + std::fabs(ref)))) ++bad;
  }
  return bad;
}

ktune::TypedKernelSpec<ScaledAdd> scaledAddSpec(ktune::Autotuner* tuner) {
  using namespace ktune;
  TypedKernelSpec<ScaledAdd> s;
  s.name = "example_scaled_add";
  s.source = kSource;
  s.entry = "example_scaled_add";
  s.space = {{"BLOCK", {128, 256, 512}}, {"VEC", {1, 2, 4, 8}}, {"WAVES", {1, 4}}};
  s.default_config = {{"BLOCK", 256}, {"VEC", 8}, {"WAVES", 4}};
  // WAVES only shapes the grid, so it is not a compile-time define (identical binaries are
  // compiled once and told apart by their launch dimensions).
  s.defines = {"VEC"};
  // Sizes within a power of two share a tuning.
  s.key = [](const ScaledAdd& p, KeyFields& k) { k.add("n", pow2Ceil(p.n)); };
  s.launch = [](const Knobs& c, const ScaledAdd& p, const DeviceFacts& d) {
    int64_t blocks = cdiv(p.n, c["BLOCK"] * c["VEC"]);
    if (d.multiprocessors > 0) blocks = std::min<int64_t>(blocks, d.multiprocessors * c["WAVES"]);
    return Launch::linear(blocks, c["BLOCK"]);
  };
  s.args = [](const ScaledAdd& p, ArgPack& a) {
    a.add(static_cast<long long>(p.n)).add(p.alpha).add(p.beta).add(p.x).add(p.y).add(p.z);
  };
  // Before every tuning run: poison z (bf16 NaN) so a config that skips elements fails verify.
  s.before_run = [tuner](const ScaledAdd& p, StreamHandle st) {
    std::vector<uint16_t> nan(p.n, 0x7fc0);
    KTUNE_RETURN_IF_ERROR(tuner->synchronize(st));
    return tuner->copyToDevice(p.z, nan.data(), p.n * 2);
  };
  s.verify = [tuner](const ScaledAdd& p, StreamHandle) -> Status {
    KTUNE_ASSIGN_OR_RETURN(int64_t bad, wrongElements(*tuner, p));
    if (bad == 0) return Status::Ok();
    return Status::WrongResult(std::to_string(bad) + " of " + std::to_string(p.n) +
                               " elements wrong");
  };
  return s;
}

// Host model of the kernel for the simulated backend (no GPU): same arguments, same result, and
// a made-up cost that favours wide vectors, so the tuner has something to choose.
ktune::SimKernelFns simulatedKernel() {
  using namespace ktune;
  SimKernelFns k;
  k.run = [](const SimLaunchView& l) {
    long long n;
    float alpha, beta;
    DevicePtr p[3];
    std::memcpy(&n, l.arg(0), sizeof n);
    std::memcpy(&alpha, l.arg(1), sizeof alpha);
    std::memcpy(&beta, l.arg(2), sizeof beta);
    for (int i = 0; i < 3; ++i) std::memcpy(&p[i], l.arg(3 + i), sizeof p[i]);
    auto* x = static_cast<const uint16_t*>(l.hostPtr(p[0]));
    auto* y = static_cast<const uint16_t*>(l.hostPtr(p[1]));
    auto* z = static_cast<uint16_t*>(l.hostPtr(p[2]));
    for (long long i = 0; i < n; ++i) z[i] = toBf16(alpha * fromBf16(x[i]) + beta * fromBf16(y[i]));
    return Status::Ok();
  };
  k.cost = [](const SimLaunchView& l) {
    long long n;
    std::memcpy(&n, l.arg(0), sizeof n);
    double eff = 0.5 + 0.05 * double(l.knob("VEC", 1)) + (l.block(0) == 256 ? 0.05 : 0.0);
    return 6.0 * double(n) / (2.0e9 * eff);  // ms at a made-up 2 TB/s peak
  };
  return k;
}

// The tuner of KTUNE_BACKEND (default: the GPU), else the simulated backend (said so).
ktune::Expected<std::unique_ptr<ktune::Autotuner>> openAutotuner(bool* simulated) {
  using namespace ktune;
  KTUNE_ASSIGN_OR_RETURN(TunerOptions opts, TunerOptions::fromEnv());
  if (opts.backend != "sim") {
    auto real = Autotuner::create(opts);
    if (real.ok()) return real;
    std::printf("no GPU: %s\n", real.status().toString().c_str());
  }
  std::printf("running the same registration on the simulated backend\n");
  *simulated = true;
  opts.backend = "sim";
  opts.cache_dir = (opts.cache_dir.empty() ? TunerOptions::defaultCacheDir() : opts.cache_dir) +
                   "/example-sim";  // keep simulated entries apart
  // The host model really computes every launch: keep the simulated run short.
  opts.warmup_ms = 0.05;
  opts.rep_ms = 0.5;
  KTUNE_ASSIGN_OR_RETURN(auto t, Autotuner::create(opts));
  KTUNE_RETURN_IF_ERROR(t->registerSimKernel("example_scaled_add", simulatedKernel()));
  return t;
}

int fail(const char* what, const ktune::Status& st) {
  std::fprintf(stderr, "%s: %s\n", what, st.toString().c_str());
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace ktune;
  int64_t n = argc > 1 ? std::atoll(argv[1]) : (1 << 20) + 3;
  if (n <= 0) {
    std::fprintf(stderr, "usage: %s [n > 0]\n", argv[0]);
    return 2;
  }
  bool simulated = false;
  auto tuner = openAutotuner(&simulated);
  if (!tuner.ok()) return fail("ktune", tuner.status());
  Autotuner& t = **tuner;
  if (simulated && argc <= 1) n = (1 << 14) + 3;
  auto op = addTypedKernel(t, scaledAddSpec(&t));
  if (!op.ok()) return fail("register", op.status());

  ScaledAdd p;
  p.n = n;
  p.alpha = 0.5f;
  p.beta = -2.0f;
  std::vector<uint16_t> hx(n), hy(n);
  std::mt19937 rng(42);
  std::uniform_real_distribution<float> u(-1.f, 1.f);
  for (int64_t i = 0; i < n; ++i) {
    hx[i] = toBf16(u(rng));
    hy[i] = toBf16(u(rng));
  }
  for (DevicePtr* d : {&p.x, &p.y, &p.z}) {
    auto a = t.alloc(n * 2);
    if (!a.ok()) return fail("alloc", a.status());
    *d = *a;
  }
  Status st = t.copyToDevice(p.x, hx.data(), n * 2);
  if (st.ok()) st = t.copyToDevice(p.y, hy.data(), n * 2);
  if (st.ok()) st = (*op)(p);  // tunes on the first call for this size bucket
  if (st.ok()) st = t.synchronize();
  auto bad = st.ok() ? wrongElements(t, p) : Expected<int64_t>(st);
  if (!bad.ok()) return fail("scaled add failed", bad.status());
  auto sel = op->lookup(p);
  if (!sel.ok()) return fail("lookup", sel.status());
  std::printf("key %s -> %s (%s), median %.4f ms; %lld of %lld elements wrong\n",
              sel->key.c_str(), sel->winner.c_str(), sel->origin.c_str(),
              sel->winner_stats.median_ms,
              static_cast<long long>(*bad), static_cast<long long>(n));
  for (DevicePtr d : {p.x, p.y, p.z}) (void)t.free(d);
  return *bad == 0 ? 0 : 1;
}
