// The autotuning engine end to end on the simulated backend and compiler (CI, no GPU); faults,
// concurrent first calls, the verbose tree and vendor candidates: autotune_tuner_faults_part.cc.
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

TEST(Tuner, PicksFastestAndRecordsEveryFailureWithAReason) {
  Env env;
  env.cost["BLOCK=256,VEC=2"] = 0.01;
  env.cost["BLOCK=64,VEC=1"] = 0.011;
  env.compile_error.insert("BLOCK=128,VEC=2");
  env.fault.insert("BLOCK=512,VEC=1");
  env.wrong.insert("BLOCK=128,VEC=1");
  env.cost["BLOCK=256,VEC=4"] = 0.03;  // 3x slower than the best: rejected early
  auto t = Engine::create(env.backend, env.options());
  ASSERT_TRUE(t.ok()) << t.status().toString();
  auto fam = addFamily(**t, env.family());
  ASSERT_TRUE(fam.ok()) << fam.status().toString();
  Scale p = env.problem(1000);
  auto rep = fam->tune(p);
  ASSERT_TRUE(rep.ok()) << rep.status().toString();
  EXPECT_EQ(rep->winner, "BLOCK=256,VEC=2") << rep->tree();
  EXPECT_EQ(find(*rep, "BLOCK=128,VEC=2")->status, Code::kCompileError);
  EXPECT_NE(find(*rep, "BLOCK=128,VEC=2")->reason.find("bad tile"), std::string::npos);
  EXPECT_EQ(find(*rep, "BLOCK=512,VEC=1")->status, Code::kDeviceFault);
  EXPECT_EQ(find(*rep, "BLOCK=128,VEC=1")->status, Code::kWrongResult);
  const CandidateResult* slow = find(*rep, "BLOCK=256,VEC=4");
  ASSERT_NE(slow, nullptr);
  EXPECT_EQ(slow->reason.rfind("slower than best", 0), 0u) << slow->reason;
  EXPECT_LT(slow->stats.runs, 10);
  // Shared pre-check: 1024*2*128 B = 256 KiB > 227 KiB opt-in, never compiled.
  const CandidateResult* big = find(*rep, "BLOCK=1024,VEC=2");
  ASSERT_NE(big, nullptr);
  EXPECT_EQ(big->status, Code::kOutOfResources);
  EXPECT_EQ(big->code_object_key, "");
  // 2048 threads > 1024: out of resources before compiling. Constraint-violating configs
  // (BLOCK*VEC > 2048) are not candidates at all.
  EXPECT_EQ(find(*rep, "BLOCK=2048,VEC=1")->status, Code::kOutOfResources);
  EXPECT_EQ(find(*rep, "BLOCK=2048,VEC=2"), nullptr);
  EXPECT_EQ(rep->enumerated, 18);
  // The call after tuning runs the winner and produces the right result.
  ASSERT_TRUE((*fam)(p).ok());
  EXPECT_EQ(env.last_launched, "BLOCK=256,VEC=2");
  std::vector<float> y(1000);
  ASSERT_TRUE(env.backend->copyToHost(y.data(), p.y, 4000).ok());
  EXPECT_EQ(y[3], 2.f * (3 - 8));
  // The database holds the winner and every candidate; failures are blacklisted.
  auto e = (*t)->database("scale")->lookup(fam->key(p));
  ASSERT_TRUE(e.has_value());
  EXPECT_EQ(e->winner, "BLOCK=256,VEC=2");
  EXPECT_EQ(e->candidates.size(), rep->candidates.size());
  EXPECT_NE(rep->tree().find("* BLOCK=256,VEC=2"), std::string::npos) << rep->tree();

  // A later tuning run skips the known failures (no recompile of the compile error).
  env.compiler->resetCounters();
  auto rep2 = fam->tune(p);
  ASSERT_TRUE(rep2.ok());
  EXPECT_GE(rep2->skipped_known_failed, 3);
  EXPECT_EQ(env.compiler->compileCount(), 0);  // everything else is a store hit
  EXPECT_NE(find(*rep2, "BLOCK=128,VEC=2")->reason.find("failed before"), std::string::npos);
  // ... unless retry_failed.
  auto o = env.options();
  o.options.retry_failed = true;
  auto t3 = Engine::create(env.backend, o);
  auto fam3 = addFamily(**t3, env.family());
  env.compiler->resetCounters();
  auto rep3 = fam3->tune(p);
  ASSERT_TRUE(rep3.ok());
  EXPECT_EQ(rep3->skipped_known_failed, 0);
  EXPECT_EQ(env.compiler->compileCount(), 1);  // only the compile error is retried
}

TEST(Tuner, IdenticalBinariesBenchmarkedOnceAndSpillsPruned) {
  Env env;
  env.dup_vec = {"BLOCK=64,VEC=1", "BLOCK=64,VEC=2", "BLOCK=64,VEC=4"};
  env.spill.insert("BLOCK=128,VEC=4");
  EngineOptions o = env.options();
  o.options.finalists = 0;  // count the bench stage's verifications only (finalists_test: the rest)
  auto t = Engine::create(env.backend, o);
  auto f = env.family();
  // Same launch dims for every VEC, so VEC-less binaries are true duplicates.
  f.spec.launch = [](const Knobs& c, const Scale& p, const DeviceFacts&) {
    Launch l;
    l.grid[0] = unsigned(ceilDiv(p.n, c["BLOCK"]));
    l.block[0] = unsigned(c["BLOCK"]);
    return l;
  };
  std::atomic<int> verified{0};
  auto inner = f.extras.verify;
  f.extras.verify = [&](const void* p, StreamHandle s) {
    ++verified;
    return inner(p, s);
  };
  auto fam = addFamily(**t, std::move(f));
  ASSERT_TRUE(fam.ok());
  auto rep = fam->tune(env.problem(256));
  ASSERT_TRUE(rep.ok());
  EXPECT_EQ(rep->duplicates, 2) << rep->tree();
  // Which of the pair is benchmarked depends on which compile finishes first (the compile /
  // bench pipeline); the other one names it.
  const std::string r1 = find(*rep, "BLOCK=64,VEC=1")->reason,
                    r2 = find(*rep, "BLOCK=64,VEC=2")->reason;
  EXPECT_TRUE(r2.find("identical binary to BLOCK=64,VEC=1") != std::string::npos ||
              r1.find("identical binary to BLOCK=64,VEC=2") != std::string::npos)
      << r1 << " / " << r2;
  EXPECT_EQ(find(*rep, "BLOCK=64,VEC=2")->stats.median_ms,
            find(*rep, "BLOCK=64,VEC=1")->stats.median_ms);
  EXPECT_EQ(rep->pruned, 1);
  EXPECT_EQ(find(*rep, "BLOCK=128,VEC=4")->reason.rfind("pruned: spills", 0), 0u);
  int live = 0;
  for (auto& c : rep->candidates) live += c.code_object_key.empty() ? 0 : 1;
  EXPECT_EQ(verified.load(), live - 2 - 1);  // duplicates and the pruned one never ran
}

// Spill pruning has one switch (options.static_prune, KTUNE_STATIC_PRUNE) and one rule
// (spillPruneReason): on, the spilling config is pruned with the rule's exact reason; off, it is
// benchmarked like any other config.
TEST(Tuner, OneSwitchTurnsSpillPruningOff) {
  for (bool on : {true, false}) {
    Env env;
    env.spill.insert("BLOCK=128,VEC=4");
    EngineOptions o = env.options();
    o.options.static_prune = on;
    auto t = Engine::create(env.backend, o);
    ASSERT_TRUE(t.ok());
    auto fam = addFamily(**t, env.family());
    ASSERT_TRUE(fam.ok());
    auto rep = fam->tune(env.problem(256));
    ASSERT_TRUE(rep.ok());
    const auto* c = find(*rep, "BLOCK=128,VEC=4");
    ASSERT_NE(c, nullptr);
    if (on) {
      EXPECT_EQ(rep->pruned, 1) << rep->tree();
      EXPECT_EQ(c->reason, "pruned: spills 64 B stores, 0 B loads (stack 0 B)") << rep->tree();
    } else {
      EXPECT_EQ(rep->pruned, 0) << rep->tree();
      EXPECT_EQ(c->reason, "") << rep->tree();
      EXPECT_GT(c->stats.median_ms, 0) << rep->tree();
    }
  }
}

// A tuning database that cannot be written (its parent is a file) costs one log line per key,
// naming the key, not one per candidate: the journal appends, the failed candidates and the final
// entry all fail, and the run says it once. Tuning itself still succeeds.
TEST(Tuner, UnwritableDatabaseIsOneLinePerKey) {
  Env env;
  ASSERT_TRUE(writeFileAtomic(env.dir + "/file", "x").ok());
  EngineOptions o = env.options();
  o.options.database_path = env.dir + "/file/db.json";
  env.compile_error.insert("BLOCK=128,VEC=2");  // a failure worth recording as well
  auto t = Engine::create(env.backend, o);
  ASSERT_TRUE(t.ok()) << t.status().toString();
  auto fam = addFamily(**t, env.family());
  ASSERT_TRUE(fam.ok());
  std::vector<std::string> keys;
  for (int64_t n : {256, 1 << 16}) {
    auto rep = fam->tune(env.problem(n));
    ASSERT_TRUE(rep.ok()) << rep.status().toString();
    EXPECT_FALSE(rep->winner.empty());
    EXPECT_GT(rep->candidates.size(), 5u);
    keys.push_back(rep->key);
  }
  std::istringstream log(env.log.str());
  std::vector<std::string> lines;
  for (std::string l; std::getline(log, l);)
    if (l.find("could not") != std::string::npos) lines.push_back(l);
  ASSERT_EQ(lines.size(), 2u) << env.log.str();
  for (size_t i = 0; i < 2; ++i) {
    EXPECT_EQ(lines[i].rfind("ktune: scale [" + keys[i] + "]: could not write ", 0), 0u) << lines[i];
    EXPECT_NE(lines[i].find("(said once per key)"), std::string::npos) << lines[i];
  }
}

TEST(Tuner, ParallelCompileUsesSeveralThreads) {
  Env env;
  // The first two compiles each wait inside the compiler until the other has arrived: that can
  // only happen when two threads compile at once (a serial loop would time out and fail here).
  testsupport::Rendezvous two(2);
  std::atomic<int> started{0};
  std::atomic<bool> met{true};
  env.on_compile = [&](const std::string&) {
    if (started++ < 2 && !two.arrive(std::chrono::seconds(60))) met = false;
  };
  auto t = Engine::create(env.backend, env.options());
  auto fam = addFamily(**t, env.family());
  auto rep = fam->tune(env.problem(64));
  ASSERT_TRUE(rep.ok());
  EXPECT_TRUE(met.load()) << "two compiles never ran at the same time";
  EXPECT_GE(env.compiler->maxConcurrent(), 2);
  EXPECT_GT(rep->compiled, 8);
}

// Family::precompile of one key beside the tuning run of another that needs the same objects
// (`ktune tune` compiles a suite's next keys while one tunes): each object is compiled once (the
// store runs one compile per object at a time), both succeed, the precompiled key's own tuning run
// then compiles nothing, and precompiling records nothing. Under TSan (scripts/tsan.sh).
TEST(Tuner, PrecompileBesideATuningRunCompilesEachObjectOnce) {
  Env env;
  env.compile_delay_ms = 5;  // compiles long enough to overlap
  auto t = Engine::create(env.backend, env.options());
  ASSERT_TRUE(t.ok()) << t.status().toString();
  auto fam = addFamily(**t, env.family());
  ASSERT_TRUE(fam.ok()) << fam.status().toString();
  Expected<size_t> pre = Status::Internal("not run");
  std::thread other([&] { pre = fam->precompile(env.problem(5000)); });
  auto rep = fam->tune(env.problem(64));
  other.join();
  ASSERT_TRUE(rep.ok()) << rep.status().toString();
  ASSERT_TRUE(pre.ok()) << pre.status().toString();
  EXPECT_EQ(fam->lookup(env.problem(5000))->origin, "default");  // nothing recorded for it
  auto store = CodeObjectStore::open(env.dir);
  ASSERT_TRUE(store.ok());
  auto entries = (*store)->list();
  ASSERT_TRUE(entries.ok());
  EXPECT_EQ(size_t(env.compiler->compileCount()), entries->size());
  const int before = env.compiler->compileCount();
  auto second = fam->tune(env.problem(5000));
  ASSERT_TRUE(second.ok()) << second.status().toString();
  EXPECT_EQ(second->compiled, 0) << second->tree();
  EXPECT_EQ(env.compiler->compileCount(), before);
}

TEST(Tuner, DatabaseHitInAFreshTunerRecompilesNothing) {
  Env env;
  env.cost["BLOCK=512,VEC=2"] = 0.005;
  Scale p = env.problem(5000);
  {
    auto t = Engine::create(env.backend, env.options());
    auto fam = addFamily(**t, env.family());
    ASSERT_TRUE((*fam)(p).ok());
    EXPECT_EQ(fam->lookup(p)->origin, "memory");  // tuned by this process
  }
  env.compiler->resetCounters();
  int64_t launches = env.backend->totalLaunches();
  auto t2 = Engine::create(env.backend, env.options());  // "new process", same cache dir
  auto fam2 = addFamily(**t2, env.family());
  auto sel = fam2->lookup(p);
  ASSERT_TRUE(sel.ok());
  EXPECT_EQ(sel->origin, "database");
  EXPECT_EQ(sel->winner, "BLOCK=512,VEC=2");
  ASSERT_TRUE((*fam2)(p).ok());
  EXPECT_EQ(env.compiler->compileCount(), 0);
  EXPECT_EQ(env.backend->totalLaunches(), launches + 1);  // no tuning runs
  EXPECT_EQ(env.last_launched, "BLOCK=512,VEC=2");
  // Once called, the config is in memory, but it still came from the database (issue 12: lookup
  // used to say "memory" for any config in the map).
  EXPECT_EQ(fam2->lookup(p)->origin, "database");
}

// A family keyed on nothing (key=[]) is tuned once and found in the database by the next
// process: its key's name was the empty string, which the database and the journal refuse.
TEST(Tuner, FamilyWithAnEmptyKeyIsRecordedAndFound) {
  Env env;
  env.cost["BLOCK=512,VEC=2"] = 0.005;
  Scale p = env.problem(5000);
  auto keyless = [&] {
    auto f = env.family();
    f.spec.key = [](const Scale&, KeyFields&) {};
    return f;
  };
  {
    auto t = Engine::create(env.backend, env.options());
    auto fam = addFamily(**t, keyless());
    ASSERT_TRUE((*fam)(p).ok());
    EXPECT_EQ(fam->key(p), KeyBuilder::kNoFields);
  }
  env.compiler->resetCounters();
  auto t2 = Engine::create(env.backend, env.options());
  auto fam2 = addFamily(**t2, keyless());
  auto sel = fam2->lookup(env.problem(77));  // any problem: one key
  ASSERT_TRUE(sel.ok()) << sel.status().toString();
  EXPECT_EQ(sel->origin, "database");
  EXPECT_EQ(sel->winner, "BLOCK=512,VEC=2");
  ASSERT_TRUE((*fam2)(p).ok());
  EXPECT_EQ(env.compiler->compileCount(), 0);
}

TEST(Tuner, TuningOffRunsDefaultAndRecordsUntunedKeysThenTuneFromFile) {
  Env env;
  env.cost["BLOCK=64,VEC=4"] = 0.001;
  auto off = env.options(false);
  auto t = Engine::create(env.backend, off);
  auto fam = addFamily(**t, env.family());
  Scale a = env.problem(100), b = env.problem(3000), c = env.problem(3500);
  ASSERT_TRUE((*fam)(a).ok());
  EXPECT_EQ(env.last_launched, "BLOCK=128,VEC=1");
  ASSERT_TRUE((*fam)(b).ok());
  ASSERT_TRUE((*fam)(c).ok());  // same bucket as b: recorded once
  ASSERT_TRUE((*fam)(a).ok());
  EXPECT_EQ(fam->lookup(a)->origin, "default");
  std::string path = joinPath(env.dir, "untuned.jsonl");
  auto text = readFile(path);
  ASSERT_TRUE(text.ok()) << text.status().toString();
  EXPECT_EQ(std::count(text->begin(), text->end(), '\n'), 2) << *text;
  EXPECT_NE(text->find("n=128,dtype=f32"), std::string::npos) << *text;
  EXPECT_EQ((*t)->database("scale")->entries().size(), 0u);

  auto t2 = Engine::create(env.backend, off);  // offline tuning ignores options.tuning
  auto fam2 = addFamily(**t2, env.family());
  auto rep = (*t2)->tuneFromFile(path);
  ASSERT_TRUE(rep.ok()) << rep.status().toString();
  EXPECT_EQ(rep->lines, 2);
  EXPECT_EQ(rep->tuned, 2) << (rep->messages.empty() ? "" : rep->messages[0]);
  EXPECT_EQ((*t2)->database("scale")->entries().size(), 2u);
  auto again = (*t2)->tuneFromFile(path);
  EXPECT_EQ(again->already_tuned, 2);
  auto t3 = Engine::create(env.backend, off);
  auto fam3 = addFamily(**t3, env.family());
  ASSERT_TRUE((*fam3)(a).ok());
  EXPECT_EQ(env.last_launched, "BLOCK=64,VEC=4");
  EXPECT_EQ(fam3->lookup(a)->origin, "database");
}

// TypedKernelSpec::launch_per_key: the launch dims are computed when a key's config is selected
// (after tuning here), not on every call; without the flag the launch rule runs on every call.
TEST(Tuner, LaunchPerKeyComputesTheDimsOncePerSelectedKey) {
  for (bool per_key : {true, false}) {
    Env env;
    auto t = Engine::create(env.backend, env.options());
    ASSERT_TRUE(t.ok());
    auto f = env.family();
    f.extras.configs = {*Config::parse("BLOCK=128,VEC=1"), *Config::parse("BLOCK=256,VEC=2")};
    std::atomic<int> rule_calls{0};
    f.spec.launch = [&rule_calls, inner = f.spec.launch](const Knobs& c, const Scale& p,
                                                          const DeviceFacts& d) {
      ++rule_calls;
      return inner(c, p, d);
    };
    f.spec.launch_per_key = per_key;  // the key holds nextPow2(n): exact for n = 4096
    auto fam = addFamily(**t, std::move(f));
    ASSERT_TRUE(fam.ok());
    Scale p = env.problem(4096);
    ASSERT_TRUE((*fam)(p).ok());  // tunes, then launches the winner
    const int after_tuning = rule_calls.load();
    const std::string winner = env.last_launched;
    const int launches = env.launches[winner];
    for (int i = 0; i < 20; ++i) ASSERT_TRUE((*fam)(p).ok());
    EXPECT_EQ(env.launches[winner], launches + 20);
    EXPECT_EQ(rule_calls.load() - after_tuning, per_key ? 0 : 20) << "per_key " << per_key;
    std::vector<float> y(4096);
    ASSERT_TRUE(env.backend->copyToHost(y.data(), p.y, y.size() * 4).ok());
    EXPECT_EQ(y[4095], 2.f * (float(4095 % 17) - 8.f));  // the cached dims cover every element
  }
}

// The hot path remembers the calling thread's last hit (Engine::call): it must follow a retune of
// the same key, alternate between keys and families, and never carry over to a new tuner.
TEST(Tuner, CachedHitFollowsRetuneKeysAndNewTuners) {
  Env env;
  Scale small = env.problem(1000), big = env.problem(5000);
  {
    auto t = Engine::create(env.backend, env.options());
    ASSERT_TRUE(t.ok());
    auto f = env.family();
    f.extras.configs = {*Config::parse("BLOCK=128,VEC=1"), *Config::parse("BLOCK=256,VEC=2")};
    auto fam = addFamily(**t, std::move(f));
    ASSERT_TRUE(fam.ok());
    env.cost["BLOCK=128,VEC=1"] = 0.01;
    env.cost["BLOCK=256,VEC=2"] = 0.5;
    ASSERT_TRUE((*fam)(small).ok());
    ASSERT_TRUE((*fam)(small).ok());  // a cached hit
    EXPECT_EQ(env.last_launched, "BLOCK=128,VEC=1");
    // Retune the same key with the costs swapped: the next call launches the new winner.
    env.cost["BLOCK=128,VEC=1"] = 0.5;
    env.cost["BLOCK=256,VEC=2"] = 0.01;
    auto rep = fam->tune(small);
    ASSERT_TRUE(rep.ok()) << rep.status().toString();
    ASSERT_EQ(rep->winner, "BLOCK=256,VEC=2");
    EXPECT_EQ(rep->resumed, 0);  // the earlier run's loser was cut short, not failed: re-measured
    ASSERT_TRUE((*fam)(small).ok());
    EXPECT_EQ(env.last_launched, "BLOCK=256,VEC=2");
    // A second key tunes (to the new fastest), then calls alternate between the two keys.
    ASSERT_TRUE((*fam)(big).ok());
    for (int i = 0; i < 3; ++i) {
      ASSERT_TRUE((*fam)(small).ok());
      EXPECT_EQ(env.last_launched, "BLOCK=256,VEC=2");
      ASSERT_TRUE((*fam)(big).ok());
      EXPECT_EQ(env.last_launched, "BLOCK=256,VEC=2");
    }
    std::vector<float> y(5000);
    ASSERT_TRUE(env.backend->copyToHost(y.data(), big.y, y.size() * 4).ok());
    EXPECT_EQ(y[4999], 2.f * (float(4999 % 17) - 8.f));  // the big key's dims, not the small's
  }
  // A new tuner (its family may sit at the freed family's address) with the other config pinned
  // for the same key: the call must not reuse the old tuner's hit.
  auto t2 = Engine::create(env.backend, env.options());
  ASSERT_TRUE(t2.ok());
  auto f2 = env.family();
  f2.extras.configs = {*Config::parse("BLOCK=128,VEC=1"), *Config::parse("BLOCK=256,VEC=2")};
  auto fam2 = addFamily(**t2, std::move(f2));
  ASSERT_TRUE(fam2.ok());
  DbEntry e;
  e.key = fam2->key(small);
  e.winner = "BLOCK=128,VEC=1";
  e.pinned = true;
  ASSERT_TRUE((*t2)->database("scale")->record(e).ok());
  ASSERT_TRUE((*fam2)(small).ok());
  EXPECT_EQ(env.last_launched, "BLOCK=128,VEC=1");
}

TEST(Tuner, PinnedConfigIsUsed) {
  Env env;
  Scale p = env.problem(777);
  auto t = Engine::create(env.backend, env.options());
  auto fam = addFamily(**t, env.family());
  DbEntry e;
  e.key = fam->key(p);
  e.winner = "BLOCK=1024,VEC=1";
  e.pinned = true;
  ASSERT_TRUE((*t)->database("scale")->record(e).ok());
  EXPECT_EQ(fam->lookup(p)->origin, "pinned");
  env.compiler->resetCounters();
  ASSERT_TRUE((*fam)(p).ok());
  EXPECT_EQ(env.last_launched, "BLOCK=1024,VEC=1");
  EXPECT_EQ(env.compiler->compileCount(), 1);  // only the pinned config, no tuning
}

TEST(Tuner, BucketingMapsNearbyShapesToOneKey) {
  Env env;
  auto t = Engine::create(env.backend, env.options());
  auto fam = addFamily(**t, env.family());
  Scale a = env.problem(1000), b = env.problem(1023), c = env.problem(1025);
  EXPECT_EQ(fam->key(a), "n=1024,dtype=f32");
  EXPECT_EQ(fam->key(a), fam->key(b));
  EXPECT_NE(fam->key(a), fam->key(c));
  ASSERT_TRUE((*fam)(a).ok());
  int compiles = env.compiler->compileCount();
  int64_t launches = env.backend->totalLaunches();
  ASSERT_TRUE((*fam)(b).ok());
  EXPECT_EQ(env.compiler->compileCount(), compiles);
  EXPECT_EQ(env.backend->totalLaunches(), launches + 1);
  EXPECT_EQ(bucketPow2Capped(3000, 1024), 3072);
  EXPECT_EQ(bucketPow2Capped(300, 1024), 512);
}

}  // namespace
}  // namespace ktune
