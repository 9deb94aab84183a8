// The simulated race of launch_floor_test (its programs' parts share it): a family whose kernel
// takes NS nanoseconds whatever its grid, tuned on the simulated device (tuneConfigs below).
#pragma once

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdlib>
#include <functional>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include <unistd.h>

#include "autotune/autotuner.h"
#include "base/fs.h"
#include "compiler/sim/sim_compiler.h"
#include "runtime/sim/sim_backend.h"
#include "tests/unit/spec_family.h"

namespace ktune::floor_test {

struct TmpDir {
  std::string path;
  TmpDir() {
    char t[] = "/tmp/ktune-floor-XXXXXX";
    path = ::mkdtemp(t);
  }
  ~TmpDir() { (void)removeTree(path); }
};

struct Rows {
  int64_t n = 1;
};

// A family whose simulated kernel takes NS nanoseconds whatever its grid (GRID blocks of 64
// threads): `configs` in that order, the first the default; `race_each` as the family names it.
// `noise`: the simulated device's launch-to-launch noise (SimOptions::noise), drawn from `seed`.
// `boosted` > 0: the device's first `boosted` launches take `boost` x their time (a GPU's boost
// clock after an idle stretch, guided.h: drift). `vendor_ns` > 0: a vendor candidate that takes
// that long (a memset at the simulated device's 1 GB/ms), timed before the JIT configs. A config
// with a GATE=n define compiles only once n other grids were launched (a compile still running
// while the race goes on: no clock involved; a store hit is not compiled). `threads` > 0: compile
// threads (a wider first wave: guided::firstWave). `clock`: launch n takes clock(n) x its time
// (a GPU heating under a sustained heavy load, guided.h: kAnchorMs; heating below). A config's
// PCT define, when it has one, scales its NS to that percentage. `pairing`:
// Options::finalist_pairing (empty: the default).
inline Expected<TuneReport> tuneConfigs(const TmpDir& dir, std::vector<Config> configs,
                                        std::vector<std::string> race_each = {},
                                        double noise = 0, uint64_t seed = 1, int64_t boosted = 0,
                                        double boost = 1, int64_t vendor_ns = 0, int threads = 0,
                                        std::function<double(int64_t)> clock = nullptr,
                                        const std::string& pairing = "") {
  SimOptions so;
  so.noise = noise;
  so.seed = seed;
  so.device.arch = "sm_90a";
  so.device.multiprocessors = 132;
  if (vendor_ns > 0) {  // memsets take time: the flush buffer's too (small here)
    so.memory_bytes_per_ms = 1e9;
    so.device.l2_bytes = 1 << 20;
  }
  auto sim = std::make_shared<SimBackend>(so);
  auto launches = std::make_shared<std::atomic<int64_t>>(0);
  struct Grids {
    std::mutex mu;
    std::condition_variable cv;
    std::set<int64_t> launched;
    std::set<std::string> configs;  // the configs launched (their defines)
    size_t compiled = 0;            // compiles ended (lockstep below)
  };
  auto grids = std::make_shared<Grids>();
  sim->registerKernel("floor_k", SimKernel{nullptr, [=](const SimLaunch& l) {
                                             {
                                               std::lock_guard<std::mutex> g(grids->mu);
                                               grids->launched.insert(l.define("GRID"));
                                               std::string c;
                                               for (const auto& [n, v] : *l.defines) c += n + "=" + v + ",";
                                               grids->configs.insert(c);
                                             }
                                             grids->cv.notify_all();
                                             const double ms = double(l.define("NS")) * 1e-6 *
                                                               double(l.define("PCT", 100)) / 100;
                                             const int64_t n = launches->fetch_add(1);
                                             return (n < boosted ? ms * boost : ms) * (clock ? clock(n) : 1.0);
                                           }, nullptr});
  EngineOptions eo;
  eo.options.cache_dir = dir.path;
  eo.options.database_path = dir.path + "/db.json";
  eo.options.warmup_ms = 0.05;
  eo.options.rep_ms = 0.2;
  eo.options.compile_threads = 2;
  if (noise > 0 || boosted > 0 || clock) {  // benchmark in candidate order: reproducible draws/launches
    eo.options.pipeline = false;
    eo.options.compile_threads = 1;
  }
  if (threads > 0) eo.options.compile_threads = threads;
  if (!pairing.empty()) eo.options.finalist_pairing = pairing;
  // Lockstep: a compile ends only once every config compiled before it was launched, one at a
  // time, as on a GPU where a compile takes far longer than a race round: the race takes one
  // config per batch whatever the host's load (an instant compile let the pool run ahead by as
  // much as the scheduler allowed, and the raced count varied by up to 9 between runs).
  eo.compiler = std::make_shared<SimCompiler>([grids](const CompileRequest& r) {
    std::unique_lock<std::mutex> g(grids->mu);
    for (const auto& [name, value] : r.defines) {
      if (name != "GATE") continue;
      const size_t n = static_cast<size_t>(std::atoi(value.c_str()));
      grids->cv.wait(g, [&] { return grids->launched.size() >= n; });
    }
    grids->cv.wait(g, [&] { return grids->configs.size() >= grids->compiled; });
    ++grids->compiled;
    return SimCompileDecision{};
  });
  KTUNE_ASSIGN_OR_RETURN(auto t, Engine::create(sim, eo));
  testfamily::SpecFamily<Rows> fam;
  auto& [f, x] = fam;
  f.name = "floor_k";
  f.source = "// simulated";
  f.entry = "floor_k";
  x.configs = std::move(configs);
  x.default_config = x.configs.front();
  x.race_each = std::move(race_each);
  f.key = [](const Rows& p, KeyFields& k) { k.add("rows", p.n); };
  f.launch = [](const Knobs& k, const Rows&, const DeviceFacts&) {
    return Launch::linear(k["GRID"], 64);
  };
  f.args = [](const Rows& p, ArgPack& a) { a.add(p.n); };
  x.verify = [](const void*, StreamHandle) -> Expected<VerifyResult> { return VerifyResult{}; };
  if (vendor_ns > 0) {
    const size_t bytes = static_cast<size_t>(vendor_ns) * 1000;  // 1 GB/ms: 1000 B per ns
    KTUNE_ASSIGN_OR_RETURN(DevicePtr buf, sim->alloc(bytes));
    f.vendor_candidates = [](const Rows&) {
      return std::vector<VendorCandidate>{{"fake:algo=1", "fakeblas"}};
    };
    f.vendor_launch = [sim, buf, bytes](const std::string&, const Rows&, StreamHandle s) {
      return sim->memset8(buf, 0, bytes, s);
    };
  }
  KTUNE_ASSIGN_OR_RETURN(auto added, addFamily(*t, std::move(fam)));
  return added.tune(Rows{});
}

// A GPU heating under load: from launch `from` the launches slow, linearly to (1 + by) x their
// time at launch 2 x `from`.
inline std::function<double(int64_t)> heating(double by, int64_t from) {
  return [=](int64_t n) { return 1 + by * std::clamp(double(n - from) / double(from), 0.0, 1.0); };
}

}  // namespace ktune::floor_test
