// The simulated environment of the tuner's CI tests (autotune_tuner_test, autotune_pipeline_test):
// a SimBackend with an H100-like device, a SimCompiler whose per-config decisions (compile error,
// spills, a define it ignores, a delay) the test sets, and a kernel family "scale" (y = 2 * x over
// n floats; configs BLOCK x VEC; simulated cost per config, BLOCK=256,VEC=2 the fastest when the
// test sets it so) with injectable wrong results and faults.
#pragma once

#include <gtest/gtest.h>

#include <cstdlib>
#include <functional>
#include <map>
#include <mutex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "autotune/autotuner.h"
#include "base/fs.h"
#include "compiler/sim/sim_compiler.h"
#include "runtime/sim/sim_backend.h"
#include "tests/unit/spec_family.h"

namespace ktune::tunertest {

inline DeviceInfo h100Like() {
  DeviceInfo d;
  d.name = "sim H100-like";
  d.arch = "sm_90a";
  d.multiprocessors = 132;
  d.warp_size = 32;
  d.shared_per_block = 48 * 1024;
  d.shared_per_block_optin = 227 * 1024;
  d.shared_per_sm = 228 * 1024;
  d.max_threads_per_block = 1024;
  d.l2_bytes = 1 << 16;
  return d;
}

// A SimBackend whose setDevice first calls a hook: a test holds the device's context back there.
class HookedSimBackend : public SimBackend {
 public:
  HookedSimBackend(SimOptions o, std::function<void(int)> hook)
      : SimBackend(std::move(o)), hook_(std::move(hook)) {}
  Status setDevice(int ordinal) override {
    hook_(ordinal);
    return SimBackend::setDevice(ordinal);
  }

 private:
  std::function<void(int)> hook_;
};

// y = 2 * x over n floats. Config: BLOCK (threads), VEC. The simulated cost favours
// BLOCK=256,VEC=2; hooks inject the failures each test needs.
struct Scale {
  int64_t n = 0;
  DevicePtr x = 0, y = 0;
};

struct Env {
  std::string dir;
  std::shared_ptr<SimBackend> backend;
  std::shared_ptr<SimCompiler> compiler;
  std::map<std::string, double> cost;  // config string -> ms (default 0.05)
  std::set<std::string> wrong, fault, compile_error, spill, dup_vec;
  // launch_error: the launch itself fails (kLaunchError, nothing runs); trap: the kernel writes
  // half of y and then traps (a sticky kDeviceFault, as a GPU reports it).
  std::set<std::string> launch_error, trap;
  // Config -> launches after which the kernel computes wrong results (state left behind by
  // earlier launches, as a split-K counter that is never reset).
  std::map<std::string, int> wrong_after;
  double compile_delay_ms = 0;
  // Called in the compiling thread at the start of every (simulated) compile, with the config:
  // tests block here on a gate (tests/support/gate.h) to fix the order of compiles and benches.
  std::function<void(const std::string& cfg)> on_compile;
  // Called at the start of every Backend::setDevice, in the calling thread (set it before the
  // engine is created).
  std::function<void(int ordinal)> on_set_device;
  std::mutex mu;
  std::string last_launched;            // defines of the last launch, as a config string
  std::map<std::string, int> launches;  // config string -> launches of the simulated kernel

  // noise, seed, memory_bytes_per_ms: SimOptions' (seeded relative noise on every launch and, with
  // a bandwidth, on memsets and copies).
  // faults_lose_context: SimOptions' (a device fault is never cleared, as an illegal address on
  // CUDA).
  // Every config of the family's space (BLOCK x VEC) costs `ms`; tests then set the few that differ.
  void costEvery(double ms) {
    for (int64_t b : {64, 128, 256, 512, 1024, 2048})
      for (int64_t v : {1, 2, 4}) cost["BLOCK=" + std::to_string(b) + ",VEC=" + std::to_string(v)] = ms;
  }

  explicit Env(double noise = 0, uint64_t seed = 1, double memory_bytes_per_ms = 0,
               bool faults_lose_context = false) {
    char tmpl[] = "/tmp/ktune-engine-XXXXXX";
    dir = mkdtemp(tmpl);
    SimOptions o;
    o.noise = noise;
    o.seed = seed;
    o.memory_bytes_per_ms = memory_bytes_per_ms;
    o.device = h100Like();
    o.faults_lose_context = faults_lose_context;
    backend = std::make_shared<HookedSimBackend>(o, [this](int d) {
      if (on_set_device) on_set_device(d);
    });
    compiler = std::make_shared<SimCompiler>([this](const CompileRequest& r) {
      SimCompileDecision d;
      std::string cfg = cfgOf(r.defines);
      if (on_compile) on_compile(cfg);
      if (compile_error.count(cfg)) d.status = Status::CompileError("sim: error: bad tile\n" + cfg);
      if (spill.count(cfg)) d.resources.spill_store_bytes = 64;
      if (dup_vec.count(cfg)) d.ignore_defines = {"VEC"};
      d.delay_ms = compile_delay_ms;
      d.resources.registers = 32;
      return d;
    });
    backend->registerKernel(
        "ktune_scale",
        SimKernel{[this](const SimLaunch& L) {
                    std::string cfg = cfgOf(*L.defines);
                    bool late_wrong = false;
                    {
                      std::lock_guard<std::mutex> l(mu);
                      last_launched = cfg;
                      const int n_launch = ++launches[cfg];
                      auto wa = wrong_after.find(cfg);
                      late_wrong = wa != wrong_after.end() && n_launch > wa->second;
                    }
                    if (fault.count(cfg)) return Status::DeviceFault("illegal address (injected)");
                    if (launch_error.count(cfg))
                      return Status::LaunchError("too many resources requested for launch (injected)");
                    auto n = L.arg<int64_t>(0);
                    auto* x = static_cast<float*>(L.backend->hostPtr(L.arg<DevicePtr>(1)));
                    auto* y = static_cast<float*>(L.backend->hostPtr(L.arg<DevicePtr>(2)));
                    float k = wrong.count(cfg) || late_wrong ? 3.f : 2.f;
                    const int64_t end = trap.count(cfg) ? n / 2 : n;
                    for (int64_t i = 0; i < end; ++i) y[i] = k * x[i];
                    if (end < n) return Status::DeviceFault("trap: kernel executed a trap (injected)");
                    return Status::Ok();
                  },
                  [this](const SimLaunch& L) {
                    auto it = cost.find(cfgOf(*L.defines));
                    return it == cost.end() ? 0.05 : it->second;
                  },
                  nullptr});
  }
  ~Env() { (void)removeTree(dir); }

  static std::string cfgOf(const std::vector<std::pair<std::string, std::string>>& d) {
    Config c;
    for (auto& [k, v] : d) c.set(k, std::stoll(v));
    return c.toString();
  }

  EngineOptions options(bool tuning = true) {
    EngineOptions t;
    t.options.cache_dir = dir;
    t.options.tuning = tuning;
    t.options.warmup_ms = 0.2;
    t.options.rep_ms = 1.0;
    t.options.compile_threads = 4;
    t.compiler = compiler;
    t.log = &log;
    return t;
  }
  std::ostringstream log;

  Scale problem(int64_t n) {
    Scale p;
    p.n = n;
    p.x = *backend->alloc(n * 4);
    p.y = *backend->alloc(n * 4);
    std::vector<float> xs(n);
    for (int64_t i = 0; i < n; ++i) xs[i] = float(i % 17) - 8.f;
    EXPECT_TRUE(backend->copyToDevice(p.x, xs.data(), n * 4).ok());
    return p;
  }

  // The family as registered: the spec and, beside it, the engine's verifier (VerifyResult with
  // the largest error) over the same callbacks the tests replace one at a time.
  testfamily::SpecFamily<Scale> family() {
    testfamily::SpecFamily<Scale> fam;
    auto& [f, x] = fam;
    f.name = "scale";
    f.source = "KTUNE_KERNEL void ktune_scale(long n, const float* x, float* y) {}";
    f.entry = "ktune_scale";
    f.space = {{"BLOCK", {64, 128, 256, 512, 1024, 2048}}, {"VEC", {1, 2, 4}}};
    f.constraints = {{"BLOCK * VEC <= 2048",
                      [](const Knobs& c) { return c["BLOCK"] * c["VEC"] <= 2048; }}};
    // 2048 threads would not fit; shared use of BLOCK=1024,VEC=2 exceeds the opt-in limit.
    f.shared_bytes = [](const Knobs& c) { return c["BLOCK"] * c["VEC"] * 128; };
    f.key = [](const Scale& p, KeyFields& k) {
      EngineViews::key(k).add("n", nextPow2(p.n)).add("dtype", "f32");
    };
    f.launch = [](const Knobs& c, const Scale& p, const DeviceFacts&) {
      Launch l;
      l.grid[0] = unsigned(ceilDiv(p.n, c["BLOCK"] * c["VEC"]));
      l.block[0] = unsigned(c["BLOCK"]);
      return l;
    };
    f.args = [](const Scale& p, ArgPack& a) { a.add(p.n).add(p.x).add(p.y); };
    f.before_run = [this](const Scale& p, StreamHandle s) {
      return poisonNaN(*backend, p.y, DType::kF32, p.n, s);
    };
    x.verify = [this](const void* vp, StreamHandle) -> Expected<VerifyResult> {
      const Scale& p = testfamily::problemOf<Scale>(vp);
      std::vector<float> xs(p.n);
      KTUNE_RETURN_IF_ERROR(backend->copyToHost(xs.data(), p.x, p.n * 4));
      std::vector<double> ref(xs.begin(), xs.end());
      for (auto& r : ref) r *= 2;
      return compareDevice(*backend, p.y, DType::kF32, ref, toleranceFor(DType::kF32));
    };
    f.default_config = {{"BLOCK", 128}, {"VEC", 1}};
    f.args_json = [](const Scale& p) { return "{\"n\":" + std::to_string(p.n) + "}"; };
    f.make_problem = [this](const std::string& j) -> Expected<std::shared_ptr<Scale>> {
      auto pos = j.find("\"n\":");
      if (pos == std::string::npos) return Status::InvalidArgument("no n in " + j);
      return std::make_shared<Scale>(problem(std::stoll(j.substr(pos + 4))));
    };
    return fam;
  }
};

inline const CandidateResult* find(const TuneReport& r, const std::string& cfg) {
  for (auto& c : r.candidates) {
    if (c.config == cfg) return &c;
  }
  return nullptr;
}

}  // namespace ktune::tunertest
