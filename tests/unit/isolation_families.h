// Simulated kernel families for the isolation tests, registered identically in the test process
// and (through tests/unit/isolation_sim_plugin.cc) in the isolation worker.
// The kernel's behaviour is chosen by the MODE define, so both processes agree on it:
//   0 good, 1 returns kDeviceFault, 2 raise(SIGSEGV), 3 hangs forever, 4 abort(),
//   5 good but sleeps 2 ms of wall time per launch (to kill a tuner mid-run),
//   6 good once two devices run it at the same time (overlapGate: multi-device workers),
//   7 wrong (3x instead of 2x) and the fastest of all (a wrong kernel that must never win).
#pragma once

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <functional>
#include <string>
#include <memory>
#include <nlohmann/json.hpp>
#include <thread>
#include <vector>

#include "autotune/autotuner.h"
#include "compiler/sim/sim_compiler.h"
#include "runtime/sim/sim_backend.h"
#include "tests/unit/spec_family.h"

namespace ktune::isotest {

inline DeviceInfo isoDevice() {
  DeviceInfo d;
  d.name = "sim isolation device";
  d.arch = "sm_90a";
  d.multiprocessors = 132;
  d.warp_size = 32;
  d.shared_per_block = 48 * 1024;
  d.shared_per_block_optin = 227 * 1024;
  d.max_threads_per_block = 1024;
  d.l2_bytes = 1 << 16;
  return d;
}

struct IsoProblem {
  int64_t n = 0;
  DevicePtr x = 0, y = 0;
};

// The overlap gate of MODE=6, set in a worker by the plugin (isolation_sim_plugin.cc): a folder
// both devices' workers see, and this worker's device. Empty in the test's own process.
inline std::string& gateDir() {
  static std::string dir;
  return dir;
}
inline int& gateDevice() {
  static int device = 0;
  return device;
}

// A launch on device d (of two) marks "d started" and returns only once the other device has
// started one too: so a candidate on one device can finish only while the other device is
// benchmarking as well, which fails when the devices' work is serialised. The wait is bounded
// (gate_ms, below the watchdog the test sets): it then fails the candidate with the reason
// instead of hanging.
inline Status overlapGate(int gate_ms = 20000) {
  const std::string& dir = gateDir();
  const std::string me = dir + "/started." + std::to_string(gateDevice());
  const std::string other = dir + "/started." + std::to_string(1 - gateDevice());
  const std::string failed = dir + "/failed";  // after one timeout the others fail at once
  auto touch = [](const std::string& path) {
    const int fd = ::open(path.c_str(), O_CREAT | O_WRONLY | O_CLOEXEC, 0644);
    if (fd >= 0) ::close(fd);
  };
  if (::access(me.c_str(), F_OK) != 0) {
    (void)::mkdir(dir.c_str(), 0755);
    touch(me);
  }
  for (int waited = 0; waited < gate_ms && ::access(failed.c_str(), F_OK) != 0; ++waited) {
    if (::access(other.c_str(), F_OK) == 0) return Status::Ok();
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  touch(failed);
  return Status::Internal("devices never overlapped: device " + std::to_string(gateDevice()) +
                          " ran a candidate while no candidate started on the other device");
}

// `observe` (optional) sees every launch first, with its BLOCK and MODE (per-config counts).
inline void registerIsoKernels(SimBackend& b,
                               std::function<void(int64_t block, int64_t mode)> observe = nullptr) {
  b.registerKernel(
      "iso_scale",
      SimKernel{[observe](const SimLaunch& L) -> Status {
                  if (observe) observe(L.define("BLOCK"), L.define("MODE"));
                  switch (L.define("MODE")) {
                    case 1: return Status::DeviceFault("illegal address (injected by MODE=1)");
                    case 2: ::raise(SIGSEGV); break;
                    case 3:
                      for (;;) std::this_thread::sleep_for(std::chrono::seconds(1));
                    case 4: std::abort();
                    case 5: std::this_thread::sleep_for(std::chrono::milliseconds(2)); break;
                    case 6:
                      if (!gateDir().empty()) KTUNE_RETURN_IF_ERROR(overlapGate());
                      break;
                    default: break;
                  }
                  auto n = L.arg<int64_t>(0);
                  auto* x = static_cast<float*>(L.backend->hostPtr(L.arg<DevicePtr>(1)));
                  auto* y = static_cast<float*>(L.backend->hostPtr(L.arg<DevicePtr>(2)));
                  const float k = L.define("MODE") == 7 ? 3.f : 2.f;
                  for (int64_t i = 0; i < n; ++i) y[i] = k * x[i];
                  return Status::Ok();
                },
                [](const SimLaunch& L) {
                  if (L.define("MODE") == 7) return 0.01;
                  // Fastest at BLOCK=256.
                  double b = double(L.define("BLOCK", 256));
                  return 0.02 + 0.01 * std::fabs(std::log2(b / 256.0));
                },
                nullptr});
}

inline std::shared_ptr<IsoProblem> makeIsoProblem(Backend* b, int64_t n) {
  auto* p = new IsoProblem;
  p->n = n;
  p->x = *b->alloc(size_t(n) * 4);
  p->y = *b->alloc(size_t(n) * 4);
  std::vector<float> xs(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) xs[size_t(i)] = float(i % 13) - 6.f;
  (void)b->copyToDevice(p->x, xs.data(), size_t(n) * 4);
  return std::shared_ptr<IsoProblem>(p, [b](IsoProblem* q) {
    (void)b->free(q->x);
    (void)b->free(q->y);
    delete q;
  });
}

// Family "iso_generated": a generated module per config (FamilyExtras::source_fn, "ptx" text
// naming the config) instead of a source. The test process compiles it with the simulated compiler
// standing in for the IR front door (EngineOptions::ir_compiler); the worker finds the binaries in
// the store by their keys.
inline void useGeneratedModules(testfamily::SpecFamily<IsoProblem>& f) {
  f.spec.source.clear();
  f.extras.source_fn = [](const Config& c, const void*) -> Expected<ConfigModule> {
    ConfigModule m;
    m.language = Language::kPtx;
    m.text = "// generated iso_scale for " + c.toString();
    return m;
  };
}

// Family "iso_early": one vendor candidate ("fakeblas", the default), iso_scale at BLOCK=200
// (a little slower than the JIT BLOCK=256), in both processes.
inline void addFakeVendor(testfamily::SpecFamily<IsoProblem>& f, Backend* b) {
  f.spec.vendor_candidates = [](const IsoProblem&) {
    return std::vector<VendorCandidate>{{"fake:algo=0", "fakeblas", true}};
  };
  auto fn = std::make_shared<FunctionHandle>();
  f.spec.vendor_launch = [b, fn](const std::string&, const IsoProblem& p, StreamHandle s) -> Status {
    if (!fn->p) {
      CompileRequest req;
      req.source = "// fakeblas";
      req.entry = "iso_scale";
      req.arch = isoDevice().arch;
      req.defines = {{"BLOCK", "200"}, {"MODE", "0"}};
      KTUNE_ASSIGN_OR_RETURN(CodeObject co, SimCompiler().compile(req));
      KTUNE_ASSIGN_OR_RETURN(ModuleHandle m, b->loadModule(co.binary));
      KTUNE_ASSIGN_OR_RETURN(*fn, b->getFunction(m, "iso_scale"));
    }
    KernelArgs a;
    a.add(p.n).add(p.x).add(p.y);
    return b->launch(*fn, Dim3{unsigned(ceilDiv(p.n, 200)), 1, 1}, Dim3{200, 1, 1}, 0, a.data(), s);
  };
}

inline testfamily::SpecFamily<IsoProblem> isoFamily(Backend* b, const std::string& name,
                                                    std::vector<Config> configs,
                                                    bool offline = true) {
  testfamily::SpecFamily<IsoProblem> fam;
  auto& [f, x] = fam;
  f.name = name;
  f.source = "// simulated: iso_scale(n, x, y)";
  f.entry = "iso_scale";
  x.configs = std::move(configs);
  f.key = [](const IsoProblem& p, KeyFields& k) { k.add("n", nextPow2(p.n)); };
  f.launch = [](const Knobs& c, const IsoProblem& p, const DeviceFacts&) {
    Launch l;
    l.block[0] = unsigned(c["BLOCK"]);
    l.grid[0] = unsigned(ceilDiv(p.n, l.block[0]));
    return l;
  };
  f.args = [](const IsoProblem& p, ArgPack& a) { a.add(p.n).add(p.x).add(p.y); };
  x.verify = [b](const void* vp, StreamHandle) -> Expected<VerifyResult> {
    const IsoProblem& p = testfamily::problemOf<IsoProblem>(vp);
    std::vector<float> x(size_t(p.n)), y(size_t(p.n));
    KTUNE_RETURN_IF_ERROR(b->copyToHost(x.data(), p.x, x.size() * 4));
    KTUNE_RETURN_IF_ERROR(b->copyToHost(y.data(), p.y, y.size() * 4));
    VerifyResult v;
    v.ok = true;
    for (size_t i = 0; i < x.size(); ++i) v.ok = v.ok && y[i] == 2.f * x[i];
    return v;
  };
  x.default_config = x.configs.front();
  if (name == "iso_generated") useGeneratedModules(fam);
  if (name == "iso_early") addFakeVendor(fam, b);
  if (offline) {
    f.args_json = [](const IsoProblem& p) { return "{\"n\":" + std::to_string(p.n) + "}"; };
    f.make_problem = [b](const std::string& j) -> Expected<std::shared_ptr<IsoProblem>> {
      auto js = nlohmann::json::parse(j, nullptr, false);
      if (js.is_discarded() || !js.contains("n") || !js["n"].is_number_integer())
        return Status::InvalidArgument("iso problem: bad args " + j);
      return makeIsoProblem(b, js["n"].get<int64_t>());
    };
  }
  return fam;
}

inline Config cfg(int64_t block, int64_t mode) { return Config{{"BLOCK", block}, {"MODE", mode}}; }

// The configs of each test family (winner: BLOCK=256).
inline std::vector<std::pair<std::string, std::vector<Config>>> isoFamilies() {
  return {
      {"iso_faults", {cfg(64, 0), cfg(128, 1), cfg(256, 0), cfg(512, 2), cfg(32, 4), cfg(1024, 0)}},
      {"iso_hang", {cfg(64, 0), cfg(128, 3), cfg(256, 0)}},
      {"iso_good", {cfg(64, 0), cfg(128, 0), cfg(256, 0), cfg(512, 0)}},
      {"iso_slow",
       {cfg(32, 5), cfg(64, 5), cfg(128, 5), cfg(256, 5), cfg(512, 5), cfg(1024, 5), cfg(16, 5),
        cfg(8, 5)}},
      {"iso_generated", {cfg(64, 0), cfg(128, 1), cfg(256, 0), cfg(512, 0)}},
      {"iso_overlap",
       {cfg(64, 6), cfg(128, 6), cfg(256, 6), cfg(512, 6), cfg(1024, 6), cfg(32, 6)}},
      // A guided race (16 configs or more), the wrong one and the winner in its first wave (the
      // prior takes the smaller blocks first on the simulated device).
      {"iso_early",
       {cfg(256, 7), cfg(128, 0), cfg(256, 0), cfg(512, 0), cfg(192, 0), cfg(320, 0), cfg(224, 0),
        cfg(384, 0), cfg(240, 0), cfg(448, 0), cfg(576, 0), cfg(640, 0), cfg(704, 0), cfg(768, 0),
        cfg(832, 0), cfg(896, 0), cfg(960, 0), cfg(1024, 0)}},
  };
}

// The families every worker registers.
inline Status registerIsoFamilies(Engine& t, Backend* b) {
  for (auto& [name, configs] : isoFamilies()) {
    auto r = testfamily::addFamily(t, isoFamily(b, name, configs));
    if (!r.ok()) return r.status();
  }
  return Status::Ok();
}

}  // namespace ktune::isotest
