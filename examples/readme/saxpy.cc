// z = a * x + y over a problem struct of ours, registered with typed callbacks
// (<ktune/typed.hpp>) and tuned on its first call (README.md shows this file).
//   KTUNE_BACKEND=sim ./saxpy   no GPU: a host function stands in for the kernel
//   ./saxpy                     on a GPU: NVRTC or hiprtc compiles kSource for every config
#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include <ktune/ktune.hpp>

static const char* kSource = R"(#include "prelude.cuh"
KTUNE_KERNEL void my_saxpy(long long n, const float* x, const float* y, float* z, float a) {
  long long i = ((long long)ktune::bid_x() * ktune::bdim_x() + ktune::tid_x()) * VEC;
  for (int k = 0; k < VEC; ++k)
    if (i + k < n) z[i + k] = a * x[i + k] + y[i + k];
})";

// The problem: whatever the key, launch and argument callbacks need.
struct Saxpy {
  long long n;
  ktune::DevicePtr x, y, z;
  float a;
};

// Errors are values: print the Status (it says what is missing and what to do) and stop.
static int fail(const ktune::Status& st) {
  std::fprintf(stderr, "saxpy: %s\n", st.toString().c_str());
  return 1;
}

int main() {
  auto opts = ktune::TunerOptions::fromEnv();  // KTUNE_BACKEND, KTUNE_CACHE_DIR, ...
  if (!opts.ok()) return fail(opts.status());
  auto created = ktune::Autotuner::create(*opts);  // no GPU and no KTUNE_BACKEND=sim: an error
  if (!created.ok()) return fail(created.status());
  ktune::Autotuner& tuner = **created;

  // The simulated backend runs no device code: register the host function that stands in for the
  // kernel's entry (and its simulated cost, which decides the winner there).
  if (tuner.backendName() == "sim") {
    ktune::SimKernelFns fns;
    fns.run = [](const ktune::SimLaunchView& l) {
      long long n;
      float a;
      ktune::DevicePtr p[3];
      std::memcpy(&n, l.arg(0), sizeof n);
      for (int i = 0; i < 3; ++i) std::memcpy(&p[i], l.arg(1 + i), sizeof p[i]);
      std::memcpy(&a, l.arg(4), sizeof a);
      auto* x = static_cast<const float*>(l.hostPtr(p[0]));
      auto* y = static_cast<const float*>(l.hostPtr(p[1]));
      auto* z = static_cast<float*>(l.hostPtr(p[2]));
      for (long long i = 0; i < n; ++i) z[i] = a * x[i] + y[i];
      return ktune::Status::Ok();
    };
    fns.cost = [](const ktune::SimLaunchView& l) {  // simulated ms: BLOCK=256, VEC=4 is fastest
      return 0.01 + std::fabs(l.knob("BLOCK") - 256.0) * 1e-5 + std::fabs(l.knob("VEC") - 4.0) * 1e-3;
    };
    if (auto st = tuner.registerSimKernel("my_saxpy", fns); !st.ok()) return fail(st);
  }

  ktune::TypedKernelSpec<Saxpy> s;
  s.name = "saxpy";
  s.source = kSource;
  s.entry = "my_saxpy";
  s.space = {{"BLOCK", {128, 256, 512}}, {"VEC", {1, 2, 4}}};  // each reaches kSource as -D
  s.constraint = [](const ktune::Knobs& c) { return c["BLOCK"] * c["VEC"] <= 2048; };
  s.key = [](const Saxpy& p, ktune::KeyFields& k) {
    k.add("n", ktune::pow2Ceil(p.n));  // sizes within a power of two share a tuning
  };
  s.launch = [](const ktune::Knobs& c, const Saxpy& p, const ktune::DeviceFacts&) {
    return ktune::Launch::linear(ktune::cdiv(p.n, c["BLOCK"] * c["VEC"]), c["BLOCK"]);
  };
  s.args = [](const Saxpy& p, ktune::ArgPack& a) { a.add(p.n).add(p.x).add(p.y).add(p.z).add(p.a); };
  s.no_verify = true;  // no reference kernel: the result is checked below instead
  auto saxpy = ktune::addTypedKernel(tuner, std::move(s));  // the spec is checked here
  if (!saxpy.ok()) return fail(saxpy.status());

  const long long n = 1 << 20;
  const size_t bytes = n * sizeof(float);
  std::vector<float> hx(n), hy(n), hz(n);
  for (long long i = 0; i < n; ++i) hx[i] = float(i % 17), hy[i] = float(i % 5);
  auto x = tuner.alloc(bytes), y = tuner.alloc(bytes), z = tuner.alloc(bytes);
  if (!x.ok() || !y.ok() || !z.ok()) return fail(!x.ok() ? x.status() : !y.ok() ? y.status() : z.status());
  if (auto st = tuner.copyToDevice(*x, hx.data(), bytes); !st.ok()) return fail(st);
  if (auto st = tuner.copyToDevice(*y, hy.data(), bytes); !st.ok()) return fail(st);

  // The first call per key tunes (compiles, times and records every config), then launches.
  const Saxpy p{n, *x, *y, *z, 2.f};
  ktune::Status st = (*saxpy)(p);
  if (st.ok()) st = tuner.synchronize();
  if (st.ok()) st = tuner.copyToHost(hz.data(), *z, bytes);
  if (!st.ok()) return fail(st);
  for (long long i = 0; i < n; ++i)
    if (hz[i] != 2.f * hx[i] + hy[i]) return fail(ktune::Status::Internal("wrong result"));

  const std::string key = saxpy->key(p);  // "n=1048576"
  auto rep = tuner.report("saxpy", key);  // what was tried for the key, and the winner
  if (!rep.ok()) return fail(rep.status());
  std::printf("saxpy on %s: key %s, winner %s (%.2f us)\n", tuner.deviceName().c_str(),
              key.c_str(), rep->winner.c_str(), rep->winner_stats.median_ms * 1e3);
  for (auto p : {*x, *y, *z}) (void)tuner.free(p);
  return 0;
}
