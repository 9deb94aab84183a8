// Which launches the engine asks to be programmatic dependent launches (kLaunchProgrammaticWait,
// runtime/backend.h), on the simulated backend, which counts them: a call of a family that
// declares its kernels wait (TypedKernelSpec::programmatic_wait, or FamilyExtras's per-config
// rule) asks for it, on both the call path and a planned launch; a tuning run's candidate launches
// never do (tuning times stay those of ordinary launches); a family that does not declare it never
// gets it; TunerOptions::pdl = false (KTUNE_PDL=0) turns it off. Per-config arguments
// (FamilyExtras::config_args) on every launch. And the grid the engine launches
// a persistent cluster grid with (Launch::persistent_cluster): the kernel's resident clusters.
#include <gtest/gtest.h>

#include <unistd.h>

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "autotune/autotuner.h"
#include "base/fs.h"
#include "compiler/sim/sim_compiler.h"
#include "runtime/sim/sim_backend.h"
#include "tests/unit/spec_family.h"

namespace ktune {
namespace {

struct TmpDir {
  std::string path;
  TmpDir() {
    char t[] = "/tmp/ktune-pdl-XXXXXX";
    path = ::mkdtemp(t);
  }
  ~TmpDir() { (void)removeTree(path); }
};

struct Rows {
  int64_t n = 1;
};

struct Setup {
  TmpDir dir;
  std::shared_ptr<SimBackend> sim;
  std::unique_ptr<Engine> engine;
};

// An engine on the simulated device (tuning on unless `tuning` is false) with kernel `entry`;
// `run` (if any) sees every launch, `so` describes the device (sm_90a with 132 SMs by default).
std::unique_ptr<Setup> makeSetup(bool pdl, bool tuning, const std::string& entry,
                                 std::function<Status(const SimLaunch&)> run = nullptr,
                                 SimOptions so = {}) {
  auto s = std::make_unique<Setup>();
  so.device.arch = "sm_90a";
  so.device.multiprocessors = 132;
  s->sim = std::make_shared<SimBackend>(so);
  s->sim->registerKernel(entry, SimKernel{std::move(run), [](const SimLaunch& l) {
                                            return double(l.define("NS")) * 1e-6;
                                          }, nullptr});
  EngineOptions eo;
  eo.options.cache_dir = s->dir.path;
  eo.options.database_path = s->dir.path + "/db.json";
  eo.options.warmup_ms = 0.02;
  eo.options.rep_ms = 0.1;
  eo.options.compile_threads = 1;
  eo.options.tuning = tuning;
  eo.options.pdl = pdl;
  eo.compiler = std::make_shared<SimCompiler>();
  auto e = Engine::create(s->sim, eo);
  EXPECT_TRUE(e.ok()) << e.status().toString();
  if (!e.ok()) return nullptr;
  s->engine = std::move(e).value();
  return s;
}

// Three configs (W = 1: the kernel waits, for the per-config rule) of `entry`.
testfamily::SpecFamily<Rows> family(const std::string& entry) {
  testfamily::SpecFamily<Rows> fam;
  auto& [f, x] = fam;
  f.name = entry;
  f.source = "// simulated";
  f.entry = entry;
  x.configs = {Config{{"NS", int64_t(3000)}, {"W", int64_t(0)}},
               Config{{"NS", int64_t(2000)}, {"W", int64_t(1)}},
               Config{{"NS", int64_t(4000)}, {"W", int64_t(1)}}};
  x.default_config = x.configs.front();
  f.key = [](const Rows& p, KeyFields& k) { k.add("rows", p.n); };
  f.launch = [](const Knobs&, const Rows&, const DeviceFacts&) { return Launch::linear(4, 64); };
  f.args = [](const Rows& p, ArgPack& a) { a.add(p.n); };
  x.verify = [](const void*, StreamHandle) -> Expected<VerifyResult> { return VerifyResult{}; };
  return fam;
}

TEST(PdlEngine, CallsOfAWaitingFamilyAskForItAndTuningRunsNever) {
  auto s = makeSetup(/*pdl=*/true, /*tuning=*/true, "pdl_k");
  ASSERT_NE(s, nullptr);
  auto fam = family("pdl_k");
  fam.spec.programmatic_wait = true;
  auto k = testfamily::addFamily(*s->engine, std::move(fam));
  ASSERT_TRUE(k.ok()) << k.status().toString();
  ASSERT_TRUE((*k)(Rows{}).ok());  // tunes (every candidate launched), then the call's launch
  const int64_t tuning_launches = s->sim->launchCount("pdl_k") - 1;
  EXPECT_GT(tuning_launches, 3);
  EXPECT_EQ(s->sim->programmaticLaunchCount("pdl_k"), 1) << "only the call after the tuning run";
  for (int i = 0; i < 4; ++i) ASSERT_TRUE((*k)(Rows{}).ok());
  EXPECT_EQ(s->sim->programmaticLaunchCount("pdl_k"), 5);
  // The planned path (a plan made by a call, relaunched with new arguments) asks too.
  LaunchPlan plan;
  ASSERT_TRUE((*k)(Rows{}, {}, &plan).ok());
  ASSERT_TRUE(k->planCurrent(plan));
  EXPECT_EQ(plan.flags, unsigned(kLaunchProgrammaticWait));
  KernelArgs args;
  args.add(int64_t(1));
  ASSERT_TRUE(k->launchPlanned(plan, args.data()).ok());
  EXPECT_EQ(s->sim->programmaticLaunchCount("pdl_k"), 7);
  // A forced tuning run of the key asks for none.
  ASSERT_TRUE(k->tune(Rows{}).ok());
  EXPECT_EQ(s->sim->programmaticLaunchCount("pdl_k"), 7);
}

TEST(PdlEngine, UndeclaredFamiliesAndKtunePdlOffNeverAsk) {
  {
    auto s = makeSetup(true, true, "plain_k");
    ASSERT_NE(s, nullptr);
    auto k = testfamily::addFamily(*s->engine, family("plain_k"));  // a user kernel: undeclared
    ASSERT_TRUE(k.ok()) << k.status().toString();
    for (int i = 0; i < 3; ++i) ASSERT_TRUE((*k)(Rows{}).ok());
    EXPECT_GE(s->sim->launchCount("plain_k"), 3);
    EXPECT_EQ(s->sim->programmaticLaunchCount("plain_k"), 0);
  }
  auto s = makeSetup(/*pdl=*/false, true, "off_k");
  ASSERT_NE(s, nullptr);
  auto fam = family("off_k");
  fam.spec.programmatic_wait = true;
  auto k = testfamily::addFamily(*s->engine, std::move(fam));
  ASSERT_TRUE(k.ok()) << k.status().toString();
  for (int i = 0; i < 3; ++i) ASSERT_TRUE((*k)(Rows{}).ok());
  EXPECT_EQ(s->sim->programmaticLaunchCount("off_k"), 0);
}

// FamilyExtras::programmatic_wait decides per config (the GEMM family: decode kernels only).
TEST(PdlEngine, PerConfigRuleFollowsTheSelectedConfig) {
  for (int64_t w : {0, 1}) {
    SCOPED_TRACE("default W=" + std::to_string(w));
    auto s = makeSetup(true, /*tuning=*/false, "cfg_k");
    ASSERT_NE(s, nullptr);
    auto fam = family("cfg_k");
    fam.extras.default_config = fam.extras.configs[size_t(w)];  // W=0 first, then a W=1 config
    fam.extras.programmatic_wait = [](const Config& c) { return c.getInt("W") == 1; };
    auto k = testfamily::addFamily(*s->engine, std::move(fam));
    ASSERT_TRUE(k.ok()) << k.status().toString();
    for (int i = 0; i < 2; ++i) ASSERT_TRUE((*k)(Rows{}).ok());
    EXPECT_EQ(s->sim->launchCount("cfg_k"), 2);
    EXPECT_EQ(s->sim->programmaticLaunchCount("cfg_k"), 2 * w);
  }
}

// FamilyExtras::config_args builds every launch's arguments from the launched config (the GEMM's
// TMA maps in boxes of its tiles): each tuning candidate and the call get their own config's.
TEST(PdlEngine, PerConfigArgumentsFollowTheLaunchedConfig) {
  int64_t launches = 0, mismatches = 0;
  auto s = makeSetup(/*pdl=*/true, /*tuning=*/true, "args_k", [&](const SimLaunch& l) {
    ++launches;
    if (l.arg<int64_t>(0) != l.define("NS") || l.arg<int64_t>(1) != 7) ++mismatches;
    return Status::Ok();
  });
  ASSERT_NE(s, nullptr);
  auto fam = family("args_k");
  fam.extras.config_args = [](const Config& c, const void* p, KernelArgs& a) {
    a.add(c.getInt("NS")).add(static_cast<const Rows*>(p)->n);
  };
  auto k = testfamily::addFamily(*s->engine, std::move(fam));
  ASSERT_TRUE(k.ok()) << k.status().toString();
  for (int i = 0; i < 3; ++i) ASSERT_TRUE((*k)(Rows{7}).ok());  // tunes, then calls
  EXPECT_GT(launches, 5);
  EXPECT_EQ(mismatches, 0);
}

// A persistent grid of four-block clusters (an upper bound of 33 clusters on 132 SMs) runs the
// clusters resident at once by the simulated GPCs (7 of 18 SMs and one of 6: 29), on every path:
// the tuning run's candidates, the call, and a planned relaunch.
TEST(PdlEngine, PersistentClusterGridsRunTheResidentClusters) {
  SimOptions so;
  so.device.shared_per_sm = 228 * 1024;
  so.sms_per_gpc = 18;
  std::vector<unsigned> grids;
  auto s = makeSetup(/*pdl=*/true, /*tuning=*/true, "cl_k",
                     [&grids](const SimLaunch& l) {
                       grids.push_back(l.grid.x);
                       return Status::Ok();
                     },
                     so);
  ASSERT_TRUE(s);
  auto fam = family("cl_k");
  fam.spec.launch = [](const Knobs&, const Rows&, const DeviceFacts& d) {
    Launch l = Launch::linear(d.multiprocessors / 4 * 4, 384);
    l.shared_bytes = 200 * 1024;  // one block per SM
    l.persistent_cluster = 4;
    return l;
  };
  auto k = testfamily::addFamily(*s->engine, std::move(fam));
  ASSERT_TRUE(k.ok()) << k.status().toString();
  ASSERT_TRUE((*k)(Rows{}).ok());  // tunes (every candidate launched), then the call's launch
  LaunchPlan plan;
  ASSERT_TRUE((*k)(Rows{}, {}, &plan).ok());
  KernelArgs args;
  args.add(int64_t(1));
  ASSERT_TRUE(k->launchPlanned(plan, args.data()).ok());
  ASSERT_GT(grids.size(), 5u);
  for (unsigned g : grids) EXPECT_EQ(g, 29u * 4u);
}

}  // namespace
}  // namespace ktune
