// The engine on the simulated backend (part of the autotune_tuner_test program: KTUNE_TEST_PARTS in
// tests/CMakeLists.txt): faults that lose the context or trap, concurrent first calls tuning once,
// the verbose tree and clear errors, vendor candidates competing with JIT configs.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <map>
#include <mutex>
#include <sstream>
#include <thread>

#include "autotune/autotuner.h"
#include "base/fs.h"
#include "compiler/sim/sim_compiler.h"
#include "compiler/store/store.h"
#include "runtime/sim/sim_backend.h"
#include "tests/support/gate.h"
#include "tests/unit/tuner_sim_env.h"

namespace ktune {
namespace {

using tunertest::Env;
using tunertest::find;
using tunertest::h100Like;
using tunertest::Scale;

// A fault the device cannot clear (an illegal address on CUDA) loses the process's context: the
// candidate that caused it is its own failure, every later candidate is "not run" with the cause
// named and none of them is remembered as failed, so the next process (a fresh context on the same
// cache) skips only the culprit and finds the winner.
TEST(Tuner, AFaultThatLosesTheContextBlamesOnlyItsCause) {
  Env env(0, 1, 0, /*faults_lose_context=*/true);
  env.cost["BLOCK=256,VEC=2"] = 0.01;
  env.fault.insert("BLOCK=512,VEC=1");
  {
    auto t = Engine::create(env.backend, env.options());
    ASSERT_TRUE(t.ok());
    auto fam = addFamily(**t, env.family());
    ASSERT_TRUE(fam.ok());
    Scale p = env.problem(1000);
    auto rep = fam->tune(p);
    ASSERT_TRUE(rep.ok()) << rep.status().toString();
    EXPECT_TRUE(rep->winner.empty()) << "a lost context cannot give a verified winner\n"
                                     << rep->tree();
    EXPECT_EQ(find(*rep, "BLOCK=512,VEC=1")->status, Code::kDeviceFault);
    const CandidateResult* later = find(*rep, "BLOCK=256,VEC=2");
    ASSERT_NE(later, nullptr);
    EXPECT_EQ(later->status, Code::kUnavailable);
    EXPECT_NE(later->reason.find("lost when BLOCK=512,VEC=1 faulted"), std::string::npos)
        << later->reason;
  }
  Env fresh;  // the next process: a new context, the first one's cache
  fresh.cost["BLOCK=256,VEC=2"] = 0.01;
  fresh.fault.insert("BLOCK=512,VEC=1");
  EngineOptions o = fresh.options();
  o.options.cache_dir = env.dir;
  auto t = Engine::create(fresh.backend, o);
  ASSERT_TRUE(t.ok());
  auto fam = addFamily(**t, fresh.family());
  ASSERT_TRUE(fam.ok());
  Scale p = fresh.problem(1000);
  auto rep = fam->tune(p);
  ASSERT_TRUE(rep.ok()) << rep.status().toString();
  EXPECT_EQ(rep->winner, "BLOCK=256,VEC=2") << rep->tree();
  int skipped = 0;
  for (const auto& c : rep->candidates) {
    if (c.reason.find("failed before") == std::string::npos) continue;
    ++skipped;
    EXPECT_EQ(c.config, "BLOCK=512,VEC=1") << c.reason;
  }
  EXPECT_EQ(skipped, 1) << rep->tree();
}

// A launch that fails (kLaunchError) and a kernel that traps half-way (kDeviceFault, sticky as on
// a GPU) are each a candidate's result with its reason: the trap's sticky error is consumed by
// its own candidate, every other candidate is measured and correct, the winner is unchanged, and
// a later run skips both as known failures.
TEST(Tuner, LaunchFailureAndTrapAreRecordedAndTuningContinues) {
  Env env;
  env.cost["BLOCK=256,VEC=2"] = 0.01;
  env.launch_error.insert("BLOCK=64,VEC=2");
  env.trap.insert("BLOCK=128,VEC=4");
  auto t = Engine::create(env.backend, env.options());
  ASSERT_TRUE(t.ok());
  auto fam = addFamily(**t, env.family());
  ASSERT_TRUE(fam.ok());
  Scale p = env.problem(1000);
  auto rep = fam->tune(p);
  ASSERT_TRUE(rep.ok()) << rep.status().toString();
  EXPECT_EQ(rep->winner, "BLOCK=256,VEC=2") << rep->tree();
  const CandidateResult* launch = find(*rep, "BLOCK=64,VEC=2");
  ASSERT_NE(launch, nullptr);
  EXPECT_EQ(launch->status, Code::kLaunchError) << launch->reason;
  EXPECT_NE(launch->reason.find("too many resources requested for launch"), std::string::npos)
      << launch->reason;
  const CandidateResult* trap = find(*rep, "BLOCK=128,VEC=4");
  ASSERT_NE(trap, nullptr);
  EXPECT_EQ(trap->status, Code::kDeviceFault) << trap->reason;
  EXPECT_NE(trap->reason.find("trap"), std::string::npos) << trap->reason;
  int measured = 0;
  for (const auto& c : rep->candidates) {
    if (c.config == launch->config || c.config == trap->config || c.code_object_key.empty())
      continue;  // the two injected failures, and configs refused before compiling
    EXPECT_TRUE(c.status == Code::kOk || c.reason.rfind("slower than best", 0) == 0)
        << c.config << ": " << c.reason;
    ++measured;
  }
  EXPECT_GE(measured, 10);
  EXPECT_TRUE(env.backend->checkError().ok()) << "a fault was left for the next launch";
  ASSERT_TRUE((*fam)(p).ok());
  std::vector<float> y(1000);
  ASSERT_TRUE(env.backend->copyToHost(y.data(), p.y, 4000).ok());
  EXPECT_EQ(y[999], 2.f * float(999 % 17 - 8));
  auto rep2 = fam->tune(p);
  ASSERT_TRUE(rep2.ok());
  EXPECT_EQ(find(*rep2, "BLOCK=64,VEC=2")->status, Code::kLaunchError);
  EXPECT_NE(find(*rep2, "BLOCK=64,VEC=2")->reason.find("failed before"), std::string::npos);
  EXPECT_NE(find(*rep2, "BLOCK=128,VEC=4")->reason.find("failed before"), std::string::npos);
}

TEST(Tuner, ConcurrentFirstCallsTuneOnce) {
  Env env;
  auto o = env.options();
  std::atomic<int> tunings{0};
  o.progress = [&](const TuneProgress& pr) {
    if (pr.phase == "enumerate") ++tunings;
  };
  auto t = Engine::create(env.backend, o);
  auto fam = addFamily(**t, env.family());
  // Each thread has its own buffers (problems of one size: one key), as callers on separate
  // streams would; sharing one output would be a data race between the eight launches.
  std::vector<Scale> ps;
  for (int i = 0; i < 8; ++i) ps.push_back(env.problem(4096));
  std::vector<std::thread> ts;
  std::atomic<int> ok{0};
  for (int i = 0; i < 8; ++i) {
    ts.emplace_back([&, i] {
      if ((*fam)(ps[size_t(i)]).ok()) ++ok;
    });
  }
  for (auto& th : ts) th.join();
  EXPECT_EQ(ok.load(), 8);
  EXPECT_EQ(tunings.load(), 1);
  for (const Scale& p : ps) {  // every caller got its own result
    std::vector<float> y(size_t(p.n));
    ASSERT_TRUE(env.backend->copyToHost(y.data(), p.y, p.n * 4).ok());
    EXPECT_EQ(y[5], 2.f * (5 - 8));
  }
}

TEST(Tuner, VerboseTreeAndClearErrors) {
  Env env;
  auto o = env.options();
  o.options.verbose = 1;
  auto t = Engine::create(env.backend, o);
  auto fam = addFamily(**t, env.family());
  ASSERT_TRUE((*fam)(env.problem(10)).ok());
  EXPECT_NE(env.log.str().find("scale [n=16,dtype=f32]"), std::string::npos) << env.log.str();
  EXPECT_NE(env.log.str().find("winner:"), std::string::npos);

  auto bad = env.family();
  bad.spec.key = nullptr;
  EXPECT_EQ(addFamily(**t, std::move(bad)).status().code(), Code::kInvalidArgument);
  EXPECT_EQ(addFamily(**t, env.family()).status().code(), Code::kInvalidArgument);  // duplicate name
  auto slash = env.family();
  slash.spec.name = "../x";
  EXPECT_EQ(addFamily(**t, std::move(slash)).status().code(), Code::kInvalidArgument);

  // Every candidate wrong: the call fails with the reasons, nothing is recorded as winner.
  auto allwrong = env.family();
  allwrong.spec.name = "allwrong";
  allwrong.extras.verify = [](const void*, StreamHandle) -> Expected<VerifyResult> {
    VerifyResult r;
    r.ok = false;
    r.mismatches = 1;
    return r;
  };
  auto fw = addFamily(**t, std::move(allwrong));
  Status st = (*fw)(env.problem(10));
  EXPECT_FALSE(st.ok());
  EXPECT_NE(st.message().find("no candidate passed"), std::string::npos);
  EXPECT_NE(st.message().find("wrong_result"), std::string::npos) << st.message();
  Family<Scale> empty;
  EXPECT_EQ(empty(env.problem(1)).code(), Code::kInvalidArgument);
}

TEST(Tuner, VendorCandidatesCompeteWithJit) {
  Env env;
  auto f = env.family();
  f.extras.configs = {Config{{"BLOCK", 256}, {"VEC", 1}}};
  int vendor_runs = 0;
  f.spec.vendor_candidates = [](const Scale&) {
    return std::vector<VendorCandidate>{{"fake:algo=1", "fakeblas"}};
  };
  f.spec.vendor_launch = [&](const std::string& id, const Scale& p, StreamHandle s) -> Status {
    ++vendor_runs;
    // A "library" call: correct result, cheaper than the JIT kernel in simulated time.
    std::vector<float> x(p.n);
    KTUNE_RETURN_IF_ERROR(env.backend->copyToHost(x.data(), p.x, p.n * 4));
    for (auto& v : x) v *= 2;
    KTUNE_RETURN_IF_ERROR(env.backend->copyToDevice(p.y, x.data(), p.n * 4));
    return env.backend->memset8(p.y, 0, 0, s);
  };
  auto t = Engine::create(env.backend, env.options());
  auto fam = addFamily(**t, std::move(f));
  auto rep = fam->tune(env.problem(64));
  ASSERT_TRUE(rep.ok());
  EXPECT_EQ(rep->winner_source, "fakeblas") << rep->tree();  // takes 0 simulated time
  EXPECT_EQ(rep->winner, "fake:algo=1");
  int before = vendor_runs;
  ASSERT_TRUE((*fam)(env.problem(64)).ok());
  EXPECT_EQ(vendor_runs, before + 1);
}

}  // namespace
}  // namespace ktune
