// Isolated tuning on a GPU (label gpu): a user kernel that writes to address 0x10 and one that
// loops forever, registered through the public API among good configs. Tuning finishes, picks a
// good config, records both failures with reasons, and this process stays healthy.
#include <gtest/gtest.h>

#include <chrono>
#include <sstream>

#include "autotune/autotuner.h"
#include "base/fs.h"
#include "bench/isolation_gpu_families.h"

namespace ktune {
namespace {

struct GpuEnv {
  std::shared_ptr<Backend> backend;
  std::string dir, why;
  std::ostringstream log;
  GpuEnv() {
    auto b = openBackend("auto");
    if (!b.ok()) {
      why = b.status().toString();
      return;
    }
    backend = std::shared_ptr<Backend>(std::move(b).value());
    char tmpl[] = "/tmp/ktune-isolation-gpu-XXXXXX";
    dir = ::mkdtemp(tmpl);
  }
  ~GpuEnv() {
    if (!dir.empty()) (void)removeTree(dir);
  }
  EngineOptions options() {
    EngineOptions t;
    t.options.cache_dir = dir;
    t.options.isolate = true;
    t.options.worker_path = KTUNE_WORKER_PATH;
    t.options.worker_plugins = {KTUNE_ISOLATION_GPU_PLUGIN};
    t.isolation.fallback_in_process = false;
    t.isolation.timeout_floor_ms = 3000;
    t.log = &log;
    return t;
  }
};

const CandidateResult* find(const TuneReport& r, const std::string& config) {
  for (const auto& c : r.candidates) {
    if (c.config == config) return &c;
  }
  return nullptr;
}

TEST(IsolationGpu, FaultingAndLoopingKernelsAreRecordedAndTheHostStaysHealthy) {
  GpuEnv env;
  if (!env.backend) GTEST_SKIP() << "no GPU: " << env.why;
  auto tuner = Engine::create(env.backend, env.options());
  ASSERT_TRUE(tuner.ok()) << tuner.status().toString();
  auto fam = (*tuner)->add(isogpu::userFamily(env.backend.get(), "iso_user_bad", true));
  ASSERT_TRUE(fam.ok()) << fam.status().toString();
  auto p = isogpu::makeUserProblem(env.backend.get(), 1 << 20);
  ASSERT_TRUE(p.ok()) << p.status().toString();

  auto t0 = std::chrono::steady_clock::now();
  auto rep = fam->tune(**p);
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  ASSERT_TRUE(rep.ok()) << rep.status().toString() << "\n" << env.log.str();
  std::printf("%s  tuning took %.2f s\n", rep->tree().c_str(), secs);
  auto chosen = Config::parse(rep->winner);
  ASSERT_TRUE(chosen.ok()) << rep->winner;
  EXPECT_EQ(chosen->getInt("MODE"), 0) << rep->winner;

  const CandidateResult* fault = find(*rep, "BLOCK=256,MODE=1");
  const CandidateResult* loop = find(*rep, "BLOCK=512,MODE=2");
  ASSERT_TRUE(fault && loop);
  EXPECT_EQ(fault->status, Code::kDeviceFault) << fault->reason;
  EXPECT_TRUE(fault->reason.find("ILLEGAL_ADDRESS") != std::string::npos ||
              fault->reason.find("illegal") != std::string::npos)
      << fault->reason;
  EXPECT_EQ(loop->status, Code::kTimeout) << loop->reason;
  EXPECT_NE(loop->reason.find("hung"), std::string::npos) << loop->reason;
  IsolationStats st = (*tuner)->isolationStats();
  // The first start, and one after the fault or the hang, whichever comes first; a restart after
  // the second one happens only when candidates remain (compile order decides), so it is not
  // asserted.
  EXPECT_GE(st.starts, 2);
  EXPECT_EQ(st.timeouts, 1);

  // Recorded in the database (blacklist) with reasons.
  int failures = 0;
  for (const auto& c : (*tuner)->database("iso_user_bad")->candidatesFor(rep->key))
    failures += (c.status == Code::kDeviceFault || c.status == Code::kTimeout) && !c.reason.empty();
  EXPECT_EQ(failures, 2);

  // This process's context is untouched: a normal call runs the winner and the result is right.
  ASSERT_TRUE((*fam)(**p).ok());
  ASSERT_TRUE(env.backend->synchronize().ok());
  std::vector<float> y(size_t((*p)->n));
  ASSERT_TRUE(env.backend->copyToHost(y.data(), (*p)->y, y.size() * 4).ok());
  for (size_t i = 0; i < y.size(); i += 4099) EXPECT_EQ(y[i], 2.f * (float(i % 13) - 6.f));

  // A later run skips both without waiting or crashing.
  auto tuner2 = Engine::create(env.backend, env.options());
  ASSERT_TRUE(tuner2.ok());
  auto fam2 = (*tuner2)->add(isogpu::userFamily(env.backend.get(), "iso_user_bad", true));
  ASSERT_TRUE(fam2.ok());
  auto rep2 = fam2->tune(**p);
  ASSERT_TRUE(rep2.ok()) << rep2.status().toString();
  EXPECT_EQ(rep2->skipped_known_failed, 2);
  EXPECT_EQ((*tuner2)->isolationStats().starts, 1);
}

}  // namespace
}  // namespace ktune
