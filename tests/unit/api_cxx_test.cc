// The public C++ API (include/ktune/ktune.hpp) on the simulated backend, and the one-options
// rules: TunerOptions carries every knob (device included), the engine refuses do_bench budgets
// set anywhere but there instead of silently replacing them.
#include "ktune/ktune.hpp"

#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <vector>

#include "autotune/autotuner.h"
#include "base/fs.h"
#include "compiler/sim/sim_compiler.h"
#include "runtime/sim/sim_backend.h"

namespace {

struct Seen {
  int launches = 0;
  unsigned grid[3] = {0, 0, 0}, block[3] = {0, 0, 0};
  size_t shared = 0;
};

class CxxApi : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/ktune-cxxapi-XXXXXX";
    dir_ = mkdtemp(tmpl);
    ktune::TunerOptions o;
    o.backend = "sim";
    o.cache_dir = dir_;
    o.warmup_ms = 0.1;
    o.rep_ms = 0.5;
    auto t = ktune::Autotuner::create(o);
    ASSERT_TRUE(t.ok()) << t.status().toString();
    tuner_ = std::move(t).value();
    ktune::SimKernelFns fns;
    fns.run = [this](const ktune::SimLaunchView& l) {
      ++seen_.launches;
      for (int i = 0; i < 3; ++i) seen_.grid[i] = l.grid(i), seen_.block[i] = l.block(i);
      seen_.shared = l.sharedBytes();
      return ktune::Status::Ok();
    };
    fns.cost = [this](const ktune::SimLaunchView& l) { return 0.01 + ms_per_t_ * l.knob("T"); };
    ASSERT_TRUE(tuner_->registerSimKernel("k2d", fns).ok());
  }
  void TearDown() override {
    tuner_.reset();
    (void)ktune::removeTree(dir_);
  }
  static ktune::KernelSpec spec() {
    ktune::KernelSpec s;
    s.name = "k2d";
    s.source = "KTUNE_KERNEL void k2d(int rows, long long cols) {}";
    s.entry = "k2d";
    s.space_json = R"({"params": {"T": [3, 1, 2], "R": [1, 2]}})";
    s.args = {{"rows", ktune::ArgType::kI32}, {"cols", ktune::ArgType::kI64}};
    s.key = {"rows", "pow2(cols)"};
    s.grid = {"cdiv(cols, 32 * T)", "cdiv(rows, R)", "1"};
    s.block = {"32 * T", "R"};
    s.shared_bytes = "T * R * 4 * warp_size";
    return s;
  }
  std::string dir_;
  std::unique_ptr<ktune::Autotuner> tuner_;
  Seen seen_;
  double ms_per_t_ = 0.001;  // the simulated cost per unit of T: T=1 wins (negative: T=3 wins)
};

TEST_F(CxxApi, MultiDimensionalRuleKeyAndTuneReport) {
  auto k = tuner_->addKernel(spec());
  ASSERT_TRUE(k.ok()) << k.status().toString();
  EXPECT_EQ(k->name(), "k2d");
  std::vector<ktune::Value> a = {ktune::Value::i32(10), ktune::Value::i64(1000)};
  EXPECT_EQ(*k->key(a.data(), a.size()), "rows=10,pow2(cols)=1024");
  auto r = k->tune(a.data(), a.size());
  ASSERT_TRUE(r.ok()) << r.status().toString();
  EXPECT_EQ(r->origin, "tuned");
  EXPECT_EQ(r->candidates.size(), 6u);
  EXPECT_EQ(r->winner.rfind("R=", 0), 0u);
  EXPECT_NE(r->winner.find("T=1"), std::string::npos) << r->winner;  // cheapest T
  ASSERT_TRUE((*k)(a.data(), a.size()).ok());
  // The winner's launch: T=1 -> block 32 x R, grid cdiv(1000, 32) x cdiv(10, R).
  int64_t R = r->winner == "R=1,T=1" ? 1 : 2;
  EXPECT_EQ(seen_.block[0], 32u);
  EXPECT_EQ(seen_.block[1], unsigned(R));
  EXPECT_EQ(seen_.grid[0], 32u);
  EXPECT_EQ(seen_.grid[1], unsigned((10 + R - 1) / R));
  EXPECT_EQ(seen_.grid[2], 1u);
  EXPECT_EQ(seen_.shared, size_t(1 * R * 4 * 32));
  auto rep = tuner_->report("k2d", "rows=10,pow2(cols)=1024");
  ASSERT_TRUE(rep.ok()) << rep.status().toString();
  EXPECT_EQ(rep->winner, r->winner);
  EXPECT_NE(rep->toJson().find("\"candidates\":[{"), std::string::npos);
  EXPECT_EQ(tuner_->report("nope", "x").status().code(), ktune::Code::kNotFound);
  EXPECT_EQ(tuner_->report("k2d", "rows=1").status().code(), ktune::Code::kNotFound);
}

// The launch rule of a data family is computed once per key only when it reads arguments the key
// holds exactly: a bucketed key (pow2(cols)) shares one tuning between shapes whose grids differ,
// so every call must size its own grid; an exact key may reuse the dims.
TEST_F(CxxApi, LaunchRuleFollowsEveryCallWhereTheKeyBuckets) {
  auto k = tuner_->addKernel(spec());
  ASSERT_TRUE(k.ok()) << k.status().toString();
  std::vector<ktune::Value> a = {ktune::Value::i32(10), ktune::Value::i64(1000)};
  std::vector<ktune::Value> b = {ktune::Value::i32(10), ktune::Value::i64(600)};
  ASSERT_EQ(*k->key(a.data(), a.size()), *k->key(b.data(), b.size()));
  auto r = k->tune(a.data(), a.size());
  ASSERT_TRUE(r.ok()) << r.status().toString();
  ASSERT_NE(r->winner.find("T=1"), std::string::npos) << r->winner;
  for (int i = 0; i < 2; ++i) {
    ASSERT_TRUE((*k)(a.data(), a.size()).ok());
    EXPECT_EQ(seen_.grid[0], 32u);  // cdiv(1000, 32)
    ASSERT_TRUE((*k)(b.data(), b.size()).ok());
    EXPECT_EQ(seen_.grid[0], 19u);  // cdiv(600, 32): same key, its own grid
  }
  // Exact key fields: rows and cols as they are; each key gets its own dims.
  ktune::KernelSpec e = spec();
  e.name = "k2d_exact";
  e.key = {"rows", "cols"};
  auto ke = tuner_->addKernel(e);
  ASSERT_TRUE(ke.ok()) << ke.status().toString();
  for (int i = 0; i < 2; ++i) {
    ASSERT_TRUE((*ke)(a.data(), a.size()).ok());
    EXPECT_EQ(seen_.grid[0], 32u);
    ASSERT_TRUE((*ke)(b.data(), b.size()).ok());
    EXPECT_EQ(seen_.grid[0], 19u);
  }
}

// A call repeating the last one's key and launch-rule arguments takes the thread's launch plan
// (api/tuner.cc): it must still follow every argument the rule reads, a new winner of the key,
// and reject what the signature does not allow.
TEST_F(CxxApi, LaunchPlanFollowsTheRuleTheWinnerAndTheSignature) {
  auto k = tuner_->addKernel(spec());
  ASSERT_TRUE(k.ok()) << k.status().toString();
  std::vector<ktune::Value> a = {ktune::Value::i32(10), ktune::Value::i64(1000)};
  std::vector<ktune::Value> b = {ktune::Value::i32(10), ktune::Value::i64(600)};
  ktune::Status st = ktune::Status::Internal("untouched");
  EXPECT_FALSE(k->callPlanned(a.data(), a.size(), {}, &st));  // no plan yet: nothing done
  EXPECT_EQ(st.code(), ktune::Code::kInternal);
  ASSERT_TRUE((*k)(a.data(), a.size()).ok());  // tunes: T=1
  ASSERT_TRUE((*k)(a.data(), a.size()).ok());  // makes the plan
  int launched = seen_.launches;
  EXPECT_TRUE(k->callPlanned(a.data(), a.size(), {}, &st));
  EXPECT_TRUE(st.ok()) << st.toString();
  EXPECT_EQ(seen_.launches, launched + 1);
  EXPECT_FALSE(k->callPlanned(b.data(), b.size(), {}, &st));  // cols differs: no launch
  EXPECT_FALSE(k->callPlanned(a.data(), a.size(), {}, nullptr));
  EXPECT_EQ(seen_.launches, launched + 1);
  for (int i = 0; i < 3; ++i) {
    const int before = seen_.launches;
    ASSERT_TRUE((*k)(a.data(), a.size()).ok());
    ASSERT_TRUE((*k)(a.data(), a.size()).ok());  // the plan of the call before
    EXPECT_EQ(seen_.launches, before + 2);
    EXPECT_EQ(seen_.grid[0], 32u);  // cdiv(1000, 32)
    EXPECT_EQ(seen_.block[0], 32u);
    ASSERT_TRUE((*k)(b.data(), b.size()).ok());  // same key, cols read by the grid: no plan
    EXPECT_EQ(seen_.grid[0], 19u);
  }
  // A forced tuning run with another winner: the plan made before it is stale.
  ASSERT_TRUE((*k)(a.data(), a.size()).ok());
  ms_per_t_ = -0.001;
  auto r = k->tune(a.data(), a.size());
  ASSERT_TRUE(r.ok()) << r.status().toString();
  ASSERT_NE(r->winner.find("T=3"), std::string::npos) << r->winner;
  ASSERT_TRUE((*k)(a.data(), a.size()).ok());
  EXPECT_EQ(seen_.block[0], 96u);
  EXPECT_EQ(seen_.grid[0], 11u);  // cdiv(1000, 96)
  // Wrong types or count after a plan exists are still errors, and launch nothing.
  const int before = seen_.launches;
  std::vector<ktune::Value> wrong = {ktune::Value::i32(10), ktune::Value::f64(1000)};
  EXPECT_EQ((*k)(wrong.data(), wrong.size()).code(), ktune::Code::kInvalidArgument);
  EXPECT_EQ((*k)(a.data(), 1).code(), ktune::Code::kInvalidArgument);
  EXPECT_EQ((*k)(nullptr, 2).code(), ktune::Code::kInvalidArgument);
  EXPECT_EQ(seen_.launches, before);
}

// The planned launch passes every call's own parameter values (pointers and floats are not part
// of the plan), and plans of two kernels called in turn do not mix.
TEST_F(CxxApi, LaunchPlanPassesEachCallsParameters) {
  struct Params {
    long long n = 0;
    uint64_t x = 0;
    float a = 0;
    unsigned block = 0, grid_y = 0;
  } got;
  ktune::SimKernelFns fns;
  fns.run = [&](const ktune::SimLaunchView& l) {
    std::memcpy(&got.n, l.arg(0), sizeof got.n);
    std::memcpy(&got.x, l.arg(1), sizeof got.x);
    std::memcpy(&got.a, l.arg(2), sizeof got.a);
    got.block = l.block(0);
    got.grid_y = l.grid(1);
    return ktune::Status::Ok();
  };
  fns.cost = [](const ktune::SimLaunchView& l) { return 0.01 + 0.001 * l.knob("B"); };
  ASSERT_TRUE(tuner_->registerSimKernel("kp", fns).ok());
  ktune::KernelSpec s;
  s.name = "kp";
  s.source = "KTUNE_KERNEL void kp(long long n, float* x, float a, int g) {}";
  s.entry = "kp";
  s.space_json = R"({"params": {"B": [64, 128]}})";
  s.args = {{"n", ktune::ArgType::kI64}, {"x", ktune::ArgType::kPtr}, {"a", ktune::ArgType::kF32},
            {"g", ktune::ArgType::kI32}};
  s.key = {"n"};
  s.grid = {"cdiv(n, B)", "g"};  // g: read by the launch rule only
  s.block = {"B"};
  auto kp = tuner_->addKernel(s);
  ASSERT_TRUE(kp.ok()) << kp.status().toString();
  auto k2 = tuner_->addKernel(spec());
  ASSERT_TRUE(k2.ok()) << k2.status().toString();
  std::vector<ktune::Value> two = {ktune::Value::i32(10), ktune::Value::i64(1000)};
  for (int i = 0; i < 6; ++i) {
    std::vector<ktune::Value> v = {ktune::Value::i64(4096), ktune::Value::ptr(0x1000 + 64 * i),
                                   ktune::Value::f32(0.5f + i), ktune::Value::i32(1 + i / 2)};
    ASSERT_TRUE((*kp)(v.data(), v.size()).ok());
    EXPECT_EQ(got.grid_y, unsigned(1 + i / 2));
    EXPECT_EQ(got.n, 4096);
    EXPECT_EQ(got.x, uint64_t(0x1000 + 64 * i));
    EXPECT_EQ(got.a, 0.5f + i);
    EXPECT_EQ(got.block, 64u);
    ASSERT_TRUE((*k2)(two.data(), two.size()).ok());
    EXPECT_EQ(seen_.block[0], 32u);
  }
}

// KernelSpec::before_run (Triton's reset_to_zero / restore_value): while a key tunes, exactly one
// call before every launch (each config's warm-up and timed runs, the finalists' re-timing, the
// launch after tuning), with the call's arguments; calls that do not tune never run it.
TEST_F(CxxApi, BeforeRunPrecedesEveryLaunchWhileTuning) {
  std::mutex mu;
  std::vector<int> launches_seen;  // the launch count at each before_run call
  ktune::KernelSpec s = spec();
  s.before_run = [&](const ktune::Value* args, size_t count, ktune::StreamHandle) {
    std::lock_guard<std::mutex> l(mu);
    if (count != 2 || args[0].v.i32 != 10) return ktune::Status::Internal("wrong arguments");
    launches_seen.push_back(seen_.launches);
    return ktune::Status::Ok();
  };
  auto k = tuner_->addKernel(s);
  ASSERT_TRUE(k.ok()) << k.status().toString();
  std::vector<ktune::Value> a = {ktune::Value::i32(10), ktune::Value::i64(1000)};
  ASSERT_TRUE((*k)(a.data(), a.size()).ok());  // tunes, then launches the winner
  std::lock_guard<std::mutex> l(mu);
  ASSERT_GT(launches_seen.size(), 6u * 10u);  // 6 configs, at least min_runs timed runs each
  for (size_t i = 0; i < launches_seen.size(); ++i)
    ASSERT_EQ(launches_seen[i], int(i)) << "call " << i << " not followed by exactly one launch";
  EXPECT_EQ(seen_.launches, int(launches_seen.size()));
  const size_t calls = launches_seen.size();
  mu.unlock();
  ASSERT_TRUE((*k)(a.data(), a.size()).ok());  // a hit: no before_run
  mu.lock();
  EXPECT_EQ(launches_seen.size(), calls);
  EXPECT_EQ(seen_.launches, int(calls) + 1);
}

// Autotuner::benchmark is the engine's harness: the simulated kernel's cost is what it measures,
// every run is in samples_ms, and before_run precedes every launch of the function.
TEST_F(CxxApi, BenchmarkTimesWithTheEngineHarness) {
  auto k = tuner_->addKernel(spec());
  ASSERT_TRUE(k.ok()) << k.status().toString();
  std::vector<ktune::Value> a = {ktune::Value::i32(10), ktune::Value::i64(1000)};
  ASSERT_TRUE((*k)(a.data(), a.size()).ok());  // tuned: T=1 wins, 0.011 ms per launch
  const int before = seen_.launches;
  int hooks = 0;
  ktune::BenchSettings bs;
  bs.warmup_ms = 0.1;
  bs.rep_ms = 0.5;
  auto st = tuner_->benchmark([&] { return (*k)(a.data(), a.size()); }, bs, {}, [&] {
    ++hooks;
    return ktune::Status::Ok();
  });
  ASSERT_TRUE(st.ok()) << st.status().toString();
  EXPECT_NEAR(st->median_ms, 0.011, 1e-6);
  EXPECT_GE(st->runs, bs.min_runs);
  EXPECT_EQ(st->samples_ms.size(), size_t(st->runs));
  EXPECT_LE(st->p20_ms, st->median_ms);
  EXPECT_LE(st->median_ms, st->p80_ms);
  EXPECT_EQ(hooks, seen_.launches - before);
  auto bad = tuner_->benchmark([] { return ktune::Status::Internal("boom"); }, bs);
  EXPECT_EQ(bad.status().code(), ktune::Code::kInternal);
  bs.min_runs = 0;
  EXPECT_EQ(tuner_->benchmark([] { return ktune::Status::Ok(); }, bs).status().code(),
            ktune::Code::kInvalidArgument);
}

TEST_F(CxxApi, SpecErrorsAreCaughtAtRegistration) {
  auto expectBad = [&](ktune::KernelSpec s, const char* needle) {
    auto k = tuner_->addKernel(s);
    ASSERT_FALSE(k.ok()) << needle;
    EXPECT_EQ(k.status().code(), ktune::Code::kInvalidArgument);
    EXPECT_NE(k.status().message().find(needle), std::string::npos) << k.status().message();
  };
  auto s = spec();
  s.key = {"T"};  // keys see arguments, not knobs
  expectBad(s, "unknown name 'T'");
  s = spec();
  s.grid.clear();
  expectBad(s, "1 to 3");
  s = spec();
  s.args[0].name = "1rows";
  expectBad(s, "identifier");
  s = spec();
  s.space_json = "[1, 2]";
  expectBad(s, "not a JSON object");
  s = spec();
  s.space_json = R"({"params": {"T": [1]}, "defaults": {}})";
  expectBad(s, "unknown field");
  s = spec();
  s.space_json = R"({"params": {"T": [1], "R": [1]}, "default": {"Q": 1}})";
  expectBad(s, "default 'Q'");
  s = spec();
  s.entry = "";
  expectBad(s, "entry");
  s = spec();
  s.name = "bad name";
  expectBad(s, "family name");
}

TEST_F(CxxApi, RuleFailingAtCallTimeIsAnErrorNotACrash) {
  auto s = spec();
  s.grid = {"cols / (rows - 10)"};  // divides by zero for rows == 10
  auto k = tuner_->addKernel(s);
  ASSERT_TRUE(k.ok()) << k.status().toString();
  std::vector<ktune::Value> a = {ktune::Value::i32(10), ktune::Value::i64(1000)};
  ktune::Status st = (*k)(a.data(), a.size());
  // Every config's launch fails the rule, so no candidate passes: that, not a crash or a launch.
  EXPECT_EQ(st.code(), ktune::Code::kUnsupported) << st.toString();
  EXPECT_NE(st.message().find("no candidate passed"), std::string::npos) << st.toString();
  EXPECT_EQ(seen_.launches, 0);
  a[0] = ktune::Value::i32(11);
  EXPECT_TRUE((*k)(a.data(), a.size()).ok());
}

// A shared-memory rule over knobs alone drops configs that cannot fit (the simulated device allows
// 96 KiB per block) before they are compiled; the rejected one is reported with its reason.
TEST_F(CxxApi, SharedRuleOverKnobsPrunesBeforeCompiling) {
  auto s = spec();
  s.shared_bytes = "T * 40000";
  auto k = tuner_->addKernel(s);
  ASSERT_TRUE(k.ok()) << k.status().toString();
  std::vector<ktune::Value> a = {ktune::Value::i32(4), ktune::Value::i64(64)};
  auto r = k->tune(a.data(), a.size());
  ASSERT_TRUE(r.ok()) << r.status().toString();
  int rejected = 0;
  for (const auto& c : r->candidates) {
    if (c.config.find("T=3") == std::string::npos) continue;
    EXPECT_NE(c.status, ktune::Code::kOk) << c.config;
    EXPECT_NE(c.reason.find("shared"), std::string::npos) << c.reason;
    ++rejected;
  }
  EXPECT_EQ(rejected, 2);  // R=1 and R=2
  EXPECT_EQ(r->winner.find("T=3"), std::string::npos);
}

TEST(TunerOptions, OneStructFromTheEnvironment) {
  setenv("KTUNE_REP_MS", "7.5", 1);
  setenv("KTUNE_BACKEND", "sim", 1);
  auto o = ktune::TunerOptions::fromEnv();
  unsetenv("KTUNE_REP_MS");
  unsetenv("KTUNE_BACKEND");
  ASSERT_TRUE(o.ok()) << o.status().toString();
  EXPECT_EQ(o->rep_ms, 7.5);
  EXPECT_EQ(o->backend, "sim");
  EXPECT_EQ(o->device, 0);
  setenv("KTUNE_WARMUP_MS", "abc", 1);
  auto bad = ktune::TunerOptions::fromEnv();
  unsetenv("KTUNE_WARMUP_MS");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("KTUNE_WARMUP_MS"), std::string::npos);
}

// Regression: Engine::create used to overwrite bench.warmup_ms / rep_ms with the options' values,
// silently discarding what the caller set there.
TEST(TunerOptions, BenchBudgetsOutsideOptionsAreRefused) {
  char tmpl[] = "/tmp/ktune-opts-XXXXXX";
  std::string dir = mkdtemp(tmpl);
  ktune::SimOptions so;
  so.device.arch = "sim";
  auto backend = std::shared_ptr<ktune::Backend>(ktune::makeSimBackend(so));
  ktune::EngineOptions eo;
  eo.compiler = std::make_shared<ktune::SimCompiler>();
  eo.options.cache_dir = dir;
  eo.bench.warmup_ms = 1;
  auto t = ktune::Engine::create(backend, eo);
  ASSERT_FALSE(t.ok());
  EXPECT_NE(t.status().message().find("options.warmup_ms"), std::string::npos);
  eo.bench = ktune::BenchOptions{};
  eo.options.warmup_ms = 1;
  eo.options.device = 3;  // the device ordinal is an option too
  t = ktune::Engine::create(backend, eo);
  EXPECT_EQ(t.status().code(), ktune::Code::kNotFound);
  (void)ktune::removeTree(dir);
}

}  // namespace
