// Any shape without waiting (autotune/predict.h, autotune/engine_shapes.h) on the simulated backend:
// prediction from tuned neighbours, background tuning replacing a prediction, calls inside a
// (simulated) stream capture that never tune, synchronise, allocate or load.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <map>
#include <mutex>
#include <thread>

#include "autotune/guided.h"
#include "autotune/predict.h"
#include "tests/support/gate.h"
#include "tests/unit/tuner_sim_env.h"

namespace ktune {
namespace {

using tunertest::Env;
using tunertest::Scale;

TEST(Shapes, TheTunedKeysBracketingAnUnseenKeyChooseItsConfig) {
  Env env;
  const std::string x = "BLOCK=512,VEC=2", d = "BLOCK=128,VEC=1";
  env.costEvery(0.5);
  env.cost[d] = 0.3;
  auto t = Engine::create(env.backend, env.options()).value();
  auto f = addFamily(*t, env.family()).value();
  env.cost[x] = 0.1;
  for (int64_t n : {1024, 4096}) ASSERT_TRUE(f(env.problem(n)).ok());
  env.cost[x] = 0.6;  // at n=16384 X is slower than the default, and another config wins
  env.cost["BLOCK=256,VEC=4"] = 0.1;
  ASSERT_TRUE(f(env.problem(16384)).ok());
  EXPECT_EQ(t->database("scale")->lookup("n=4096,dtype=f32")->winner, x);
  auto p = f.predict(env.problem(2048)).value();
  EXPECT_EQ(p.config, x);
  EXPECT_EQ(p.source, "jit");
  // Above every tuned key there is no bracket, and the nearest key saw X lose: not X.
  EXPECT_NE(f.predict(env.problem(65536)).value().config, x);
}

// The upper-bracket rule through the engine's database: X won at the tuned n=4096 and was slow at
// n=1024 (where Y won, as fast as X above); the unseen n=2048 between them runs X (the vote and the
// bracketing rule keep the default there: the two tuned keys disagree).
TEST(Shapes, TheTunedKeyAboveAnUnseenKeyChoosesItsConfig) {
  Env env;
  const std::string x = "BLOCK=512,VEC=2", y = "BLOCK=64,VEC=4", d = "BLOCK=128,VEC=1";
  env.costEvery(0.5);
  env.cost[d] = 0.3;
  auto t = Engine::create(env.backend, env.options()).value();
  auto f = addFamily(*t, env.family()).value();
  env.cost[y] = 0.1;
  ASSERT_TRUE(f(env.problem(1024)).ok());
  env.cost[y] = 0.6;
  env.cost[x] = 0.1;
  ASSERT_TRUE(f(env.problem(4096)).ok());
  EXPECT_EQ(t->database("scale")->lookup("n=1024,dtype=f32")->winner, y);
  EXPECT_EQ(t->database("scale")->lookup("n=4096,dtype=f32")->winner, x);
  auto p = f.predict(env.problem(2048)).value();
  EXPECT_EQ(p.config, x);
  EXPECT_EQ(p.rule, "upper key");
  // Below every tuned key there is no key below to bound the time: not X by this rule.
  EXPECT_NE(f.predict(env.problem(256)).value().rule, "upper key");
}

// The family's tuned keys n=1024 and n=4096 (BLOCK=256,VEC=2 fastest everywhere).
void tuneNeighbours(Env& env, Engine& t, Family<Scale>& f) {
  for (int64_t n : {1024, 4096}) {
    Scale p = env.problem(n);
    ASSERT_TRUE(f(p).ok());
    EXPECT_EQ(f.lookup(p)->origin, "memory");
  }
  (void)t;
}

struct Gate {
  std::mutex mu;
  std::condition_variable cv;
  bool open = false;
  void wait() {
    std::unique_lock<std::mutex> l(mu);
    cv.wait(l, [&] { return open; });
  }
  void release() {
    {
      std::lock_guard<std::mutex> l(mu);
      open = true;
    }
    cv.notify_all();
  }
};

TEST(Shapes, BackgroundRunsThePredictionAtOnceAndTheWinnerReplacesIt) {
  Env env;
  env.cost["BLOCK=256,VEC=2"] = 0.01;
  EngineOptions o = env.options();
  o.options.background_duty = 1;  // no pauses: the test waits with waitBackground(), never by sleeping
  auto t = Engine::create(env.backend, o).value();
  auto f = addFamily(*t, env.family()).value();
  tuneNeighbours(env, *t, f);

  // A second tuner on the same cache in background mode; its tuning runs wait at the gate until
  // the test has seen the call return with the prediction.
  EngineOptions ob = env.options();
  ob.options.background = true;
  ob.options.background_duty = 1;
  auto tb = Engine::create(env.backend, ob).value();
  Gate gate;
  testfamily::SpecFamily<Scale> fam = env.family();
  auto reset = fam.spec.before_run;
  fam.spec.before_run = [&gate, reset](const Scale& p, StreamHandle s) {
    gate.wait();
    return reset(p, s);
  };
  auto fb = addFamily(*tb, std::move(fam)).value();
  Scale p = env.problem(2048);
  auto pred = fb.predict(p).value();
  EXPECT_EQ(pred.config, "BLOCK=256,VEC=2");
  ASSERT_TRUE(fb(p).ok());  // returns while the tuning thread is held at the gate
  EXPECT_EQ(fb.lookup(p)->origin, "predicted");
  EXPECT_EQ(fb.lookup(p)->winner, "BLOCK=256,VEC=2");
  std::vector<float> y(2048);
  ASSERT_TRUE(env.backend->copyToHost(y.data(), p.y, y.size() * 4).ok());
  EXPECT_EQ(y[5], 2.f * (float(5 % 17) - 8.f));  // the predicted config really ran
  gate.release();
  tb->waitBackground();
  EXPECT_EQ(tb->backgroundTuned(), 1u);
  EXPECT_EQ(fb.lookup(p)->origin, "memory");  // measured now, published for the next call
  auto e = tb->database("scale")->lookup(fb.key(p));
  ASSERT_TRUE(e.has_value());
  EXPECT_FALSE(e->predicted);
  EXPECT_EQ(e->winner, "BLOCK=256,VEC=2");
  ASSERT_TRUE(fb(p).ok());
}

// Per thread: the family's vendor heuristic queries and the compiles. The caller of an unseen key
// in background mode must do neither (issue 35: the first call costs what a tuned call costs).
struct ThreadCounts {
  std::mutex mu;
  std::map<std::thread::id, int> vendor, compiles;
  int on(std::map<std::thread::id, int>& m, std::thread::id t) {
    std::lock_guard<std::mutex> l(mu);
    return m[t];
  }
  int offThread(std::map<std::thread::id, int>& m, std::thread::id t) {
    std::lock_guard<std::mutex> l(mu);
    int n = 0;
    for (const auto& [id, k] : m) n += id == t ? 0 : k;
    return n;
  }
};

// Regression: an unseen key's first call in background mode ran the prediction on the caller's
// thread, and with a vendor library that meant the vendor's heuristic query for the new shape (the
// ~260 us of cuBLASLt's measured, bench/NOTES.md) and possibly a module load. Now the caller runs the loaded
// default ("provisional") and the resolver thread queries, loads and publishes the prediction.
TEST(Shapes, AnUnseenKeysFirstCallLeavesTheHeavyPartsToTheResolver) {
  Env env;
  env.cost["BLOCK=128,VEC=1"] = 0.01;  // the JIT default wins at the neighbours: the prediction is
  EngineOptions o = env.options();     // the family default, i.e. the vendor's pick
  o.options.background_duty = 1;
  {
    auto t = Engine::create(env.backend, o).value();
    auto f = addFamily(*t, env.family()).value();
    tuneNeighbours(env, *t, f);
  }
  const std::thread::id caller = std::this_thread::get_id();
  ThreadCounts counts;
  env.on_compile = [&](const std::string&) {
    std::lock_guard<std::mutex> l(counts.mu);
    ++counts.compiles[std::this_thread::get_id()];
  };
  std::atomic<bool> vendor_on{true}, hold_workers{false};
  testsupport::Gate resolver_gate, tuning_gate;
  testfamily::SpecFamily<Scale> fam = env.family();
  fam.spec.vendor_candidates = [&](const Scale&) {
    std::lock_guard<std::mutex> l(counts.mu);
    ++counts.vendor[std::this_thread::get_id()];
    return vendor_on ? std::vector<VendorCandidate>{{"fake:0", "fakeblas", true}}
                     : std::vector<VendorCandidate>{};
  };
  fam.spec.vendor_launch = [&env](const std::string&, const Scale& p, StreamHandle) -> Status {
    auto* x = static_cast<float*>(env.backend->hostPtr(p.x));
    auto* y = static_cast<float*>(env.backend->hostPtr(p.y));
    for (int64_t i = 0; i < p.n; ++i) y[i] = 2 * x[i];
    return Status::Ok();
  };
  auto make = fam.spec.make_problem;
  fam.spec.make_problem = [&, make](const std::string& j) {
    if (hold_workers && std::this_thread::get_id() != caller) {
      EXPECT_TRUE(resolver_gate.wait());
    }
    return make(j);
  };
  auto reset = fam.spec.before_run;
  fam.spec.before_run = [&, reset](const Scale& p, StreamHandle s) {
    if (std::this_thread::get_id() != caller) {
      EXPECT_TRUE(tuning_gate.wait());
    }
    return reset(p, s);
  };
  EngineOptions ob = o;
  ob.options.background = true;
  auto t = Engine::create(env.backend, ob).value();
  auto f = addFamily(*t, std::move(fam)).value();
  Scale tuned = env.problem(1024), unseen = env.problem(2048);
  ASSERT_TRUE(f(tuned).ok());  // from the database: loads its winner, the default config
  t->waitBackground();
  hold_workers = true;
  ASSERT_TRUE(f(unseen).ok());
  EXPECT_EQ(f.lookup(unseen)->origin, "provisional");
  EXPECT_EQ(f.lookup(unseen)->winner, "BLOCK=128,VEC=1");
  std::vector<float> y(2048);
  ASSERT_TRUE(env.backend->copyToHost(y.data(), unseen.y, y.size() * 4).ok());
  EXPECT_EQ(y[5], 2.f * (float(5 % 17) - 8.f));  // the loaded default really ran
  EXPECT_EQ(counts.on(counts.vendor, caller), 0) << "the caller queried the vendor heuristic";
  EXPECT_EQ(counts.on(counts.compiles, caller), 0) << "the caller compiled";
  resolver_gate.open();
  // The resolver publishes the prediction (the vendor's pick) for the next call; the tuning thread
  // is held until then.
  for (int i = 0; i < 20000 && f.lookup(unseen)->origin == "provisional"; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  EXPECT_EQ(f.lookup(unseen)->origin, "default");
  EXPECT_EQ(f.lookup(unseen)->winner, "fake:0");
  EXPECT_GE(counts.offThread(counts.vendor, caller), 1);
  ASSERT_TRUE(f(unseen).ok());
  vendor_on = false;  // the simulated clock does not time a host-side vendor launch
  tuning_gate.open();
  t->waitBackground();
  EXPECT_EQ(f.lookup(unseen)->origin, "memory");
  EXPECT_EQ(counts.on(counts.vendor, caller), 0);
  EXPECT_EQ(counts.on(counts.compiles, caller), 0);
}

// The database keys of a fresh process in background mode each ask the resolver to load their
// kind's default (for later unseen keys); one load per default, not one rebuilt problem per key.
TEST(Shapes, TheDefaultOfAKindIsLoadedOnceForManyDatabaseKeys) {
  Env env;
  env.cost["BLOCK=256,VEC=2"] = 0.01;  // the winners are not the default: it is not loaded by them
  EngineOptions o = env.options();
  o.options.background_duty = 1;
  {
    auto t = Engine::create(env.backend, o).value();
    auto f = addFamily(*t, env.family()).value();
    tuneNeighbours(env, *t, f);
  }
  const std::thread::id caller = std::this_thread::get_id();
  testsupport::Gate gate;
  std::atomic<int> rebuilt{0};
  testfamily::SpecFamily<Scale> fam = env.family();
  auto make = fam.spec.make_problem;
  fam.spec.make_problem = [&, make](const std::string& j) {
    if (std::this_thread::get_id() != caller) {
      EXPECT_TRUE(gate.wait());
      ++rebuilt;
    }
    return make(j);
  };
  o.options.background = true;
  auto t = Engine::create(env.backend, o).value();
  auto f = addFamily(*t, std::move(fam)).value();
  Scale a = env.problem(1024), b = env.problem(4096);
  ASSERT_TRUE(f(a).ok());
  ASSERT_TRUE(f(b).ok());  // the resolver still holds the first load at the gate
  gate.open();
  t->waitBackground();
  EXPECT_EQ(rebuilt.load(), 1);
  EXPECT_EQ(f.lookup(a)->origin, "database");
}

TEST(Shapes, ACallInsideACaptureNeverTunesSynchronisesOrLoads) {
  Env env;
  env.cost["BLOCK=256,VEC=2"] = 0.01;
  EngineOptions o = env.options();
  o.options.background_duty = 1;
  {
    auto t = Engine::create(env.backend, o).value();
    auto f = addFamily(*t, env.family()).value();
    tuneNeighbours(env, *t, f);
  }
  // A fresh process: nothing loaded yet. Synchronous tuning mode (the default). Its background
  // tuning waits at the gate until the test has looked at the captured calls.
  auto t = Engine::create(env.backend, o).value();
  Gate gate;
  testfamily::SpecFamily<Scale> fam = env.family();
  auto reset = fam.spec.before_run;
  fam.spec.before_run = [&gate, reset](const Scale& p, StreamHandle s) {
    gate.wait();
    return reset(p, s);
  };
  auto f = addFamily(*t, std::move(fam)).value();
  Scale tuned = env.problem(1024), unseen = env.problem(2048);
  StreamHandle s = env.backend->createStream().value();
  env.backend->setCapturing(s, true);
  Status st = f(tuned, s);  // its winner is in the database but not loaded: refused, not loaded
  EXPECT_EQ(st.code(), Code::kUnsupported) << st.toString();
  EXPECT_NE(st.message().find("prepare"), std::string::npos) << st.toString();
  env.backend->setCapturing(s, false);
  ASSERT_TRUE(f.prepare(tuned, s).ok());  // outside the capture: loads the database winner
  env.backend->setCapturing(s, true);
  ASSERT_TRUE(f(tuned, s).ok());
  ASSERT_TRUE(f(unseen, s).ok());  // untuned: the prediction, loaded by the neighbour's prepare
  EXPECT_EQ(f.lookup(unseen)->origin, "predicted");  // not tuned by the call
  EXPECT_EQ(env.backend->captureViolations(), 0);
  env.backend->setCapturing(s, false);
  gate.release();
  t->waitBackground();  // queued by the capture, tuned off the caller's thread
  EXPECT_EQ(f.lookup(unseen)->origin, "memory");
  EXPECT_EQ(env.backend->captureViolations(), 0);
  ASSERT_TRUE(env.backend->destroyStream(s).ok());
}

TEST(Shapes, TuningOffInsideACaptureRunsTheLoadedDefault) {
  Env env;
  EngineOptions o = env.options(/*tuning=*/false);
  auto t = Engine::create(env.backend, o).value();
  auto f = addFamily(*t, env.family()).value();
  Scale a = env.problem(1024), b = env.problem(2048);
  ASSERT_TRUE(f(a).ok());  // loads the default config
  env.backend->setCapturing({}, true);
  ASSERT_TRUE(f(b).ok());
  env.backend->setCapturing({}, false);
  EXPECT_EQ(f.lookup(b)->origin, "default");
  EXPECT_EQ(env.backend->captureViolations(), 0);
  EXPECT_EQ(t->backgroundTuned(), 0u);
}

// Regression: ~Engine once reset the engine's pointer to this machinery before joining its thread,
// and a run finishing during the destruction published through the null pointer (a crash in about
// one run of three; repeated here so it cannot pass by luck).
TEST(Shapes, DestroyingTheTunerWithKeysQueuedStopsCleanly) {
  Env env;
  for (int round = 0; round < 8; ++round) {
    EngineOptions o = env.options();
    o.options.background = true;
    o.options.background_duty = 0.5;  // pauses too: the destructor must cut them short
    o.options.cache_dir = env.dir + "/round" + std::to_string(round);  // every key untuned again
    auto t = Engine::create(env.backend, o).value();
    auto f = addFamily(*t, env.family()).value();
    for (int64_t n : {100, 1000, 10000, 100000}) {
      Scale p = env.problem(n);
      ASSERT_TRUE(f(p).ok());
    }
    t.reset();  // joins the tuning thread; queued keys are dropped
  }
  SUCCEED();
}

TEST(Shapes, ARecordedPredictionRunsWithTuningOffAndIsMeasuredWithTuningOn) {
  Env env;
  env.cost["BLOCK=512,VEC=1"] = 0.01;
  DbEntry e;
  e.key = "n=2048,dtype=f32";
  e.winner = "BLOCK=256,VEC=2";
  e.predicted = true;
  {
    auto t = Engine::create(env.backend, env.options(/*tuning=*/false)).value();
    auto f = addFamily(*t, env.family()).value();
    ASSERT_TRUE(t->database("scale")->record(e).ok());
    Scale p = env.problem(2048);
    ASSERT_EQ(f.key(p), e.key);
    ASSERT_TRUE(f(p).ok());
    EXPECT_EQ(f.lookup(p)->origin, "predicted");
    EXPECT_EQ(f.lookup(p)->winner, "BLOCK=256,VEC=2");
  }
  auto t = Engine::create(env.backend, env.options()).value();
  auto f = addFamily(*t, env.family()).value();
  Scale p = env.problem(2048);
  ASSERT_TRUE(f(p).ok());  // synchronous tuning: the prediction is not a winner, the key is tuned
  EXPECT_EQ(f.lookup(p)->origin, "memory");
  EXPECT_EQ(f.lookup(p)->winner, "BLOCK=512,VEC=1");
  EXPECT_FALSE(t->database("scale")->lookup(e.key)->predicted);
}

TEST(Shapes, KtuneTuningBackgroundInTheEnvironment) {
  ASSERT_EQ(setenv("KTUNE_TUNING", "background", 1), 0);
  auto o = TunerOptions::fromEnv();
  ASSERT_EQ(unsetenv("KTUNE_TUNING"), 0);
  ASSERT_TRUE(o.ok());
  EXPECT_TRUE(o->tuning);
  EXPECT_TRUE(o->background);
}

}  // namespace
}  // namespace ktune
