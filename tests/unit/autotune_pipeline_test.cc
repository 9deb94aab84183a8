// The compile/benchmark pipeline of the tuner (options.pipeline) on the simulated backend and
// compiler (CI, no GPU): candidates are benchmarked while others still compile, vendor candidates
// go first, and the outcome equals the compile-everything-first order.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <map>
#include <mutex>
#include <set>
#include <sstream>
#include <thread>

#include "autotune/autotuner.h"
#include "base/fs.h"
#include "base/options.h"
#include "compiler/sim/sim_compiler.h"
#include "compiler/store/store.h"
#include "runtime/sim/sim_backend.h"
#include "tests/support/gate.h"
#include "tests/unit/progress_recorder.h"
#include "tests/unit/tuner_sim_env.h"

namespace ktune {
namespace {

// The simulated environment shared with autotune_tuner_test.cc (tests/unit/tuner_sim_env.h).
using tunertest::Env;
using tunertest::find;
using tunertest::h100Like;
using tunertest::Scale;

using Recorder = tunertest::ProgressRecorder;

EngineOptions pipelineOptions(Env& env, bool pipeline, Recorder* rec) {
  env.cost["BLOCK=256,VEC=2"] = 0.01;  // the fastest config
  EngineOptions o = env.options();
  o.options.pipeline = pipeline;
  o.options.compile_threads = 2;
  if (rec) o.progress = rec->fn();
  return o;
}

void addVendor(testfamily::SpecFamily<Scale>& f, Env& env) {
  f.spec.vendor_candidates = [](const Scale&) {
    return std::vector<VendorCandidate>{{"fake:algo=1", "fakeblas"}};
  };
  f.spec.vendor_launch = [&env](const std::string&, const Scale& p, StreamHandle s) -> Status {
    std::vector<float> x(p.n);
    KTUNE_RETURN_IF_ERROR(env.backend->copyToHost(x.data(), p.x, p.n * 4));
    for (auto& v : x) v *= 2;
    KTUNE_RETURN_IF_ERROR(env.backend->copyToDevice(p.y, x.data(), p.n * 4));
    return env.backend->memset8(p.y, 0, 0, s);
  };
}

TEST(Pipeline, OptionFromEnvironment) {
  ::unsetenv("KTUNE_PIPELINE");
  auto d = Options::fromEnv();
  ASSERT_TRUE(d.ok()) << d.status().toString();
  EXPECT_TRUE(d->pipeline);  // on by default
  ::setenv("KTUNE_PIPELINE", "0", 1);
  auto off = Options::fromEnv();
  ASSERT_TRUE(off.ok()) << off.status().toString();
  EXPECT_FALSE(off->pipeline);
  ::setenv("KTUNE_PIPELINE", "maybe", 1);
  auto bad = Options::fromEnv();
  EXPECT_EQ(bad.status().code(), Code::kInvalidArgument);
  EXPECT_NE(bad.status().message().find("KTUNE_PIPELINE"), std::string::npos)
      << bad.status().toString();
  ::unsetenv("KTUNE_PIPELINE");
}

TEST(Pipeline, BenchmarksStartBeforeTheLastCompileAndNotWithoutIt) {
  for (bool pipeline : {true, false}) {
    Env env;
    Recorder rec;
    // With the pipeline, every compile after the first two waits until a benchmark has started:
    // a pipeline that benchmarks only after the last compile would time out here and fail.
    // Without it, nothing waits (compiles must all end before any benchmark).
    testsupport::Gate benched;
    std::atomic<int> started{0};
    std::atomic<bool> gate_ok{true};
    if (pipeline) {
      env.on_compile = [&](const std::string&) {
        if (started++ >= 2 && !benched.wait(std::chrono::seconds(60))) gate_ok = false;
      };
      rec.then = [&](const TuneProgress& pr) {
        if (pr.phase == "bench") benched.open();
      };
    }
    auto t = Engine::create(env.backend, pipelineOptions(env, pipeline, &rec));
    ASSERT_TRUE(t.ok());
    auto fam = addFamily(**t, env.family());
    auto rep = fam->tune(env.problem(4096));
    ASSERT_TRUE(rep.ok()) << rep.status().toString();
    EXPECT_EQ(rep->winner, "BLOCK=256,VEC=2") << rep->tree();
    ASSERT_GE(rec.first("bench:"), 0);
    ASSERT_GE(rec.last("compile:"), 0);
    if (pipeline) {
      EXPECT_TRUE(gate_ok.load()) << "no benchmark started while compiles were waiting";
      EXPECT_LT(rec.first("bench:"), rec.last("compile:"))
          << "pipeline on: bench waited for every compile";
      EXPECT_GT(rep->bench_overlap_ms, 0.0);
    } else {
      EXPECT_GT(rec.first("bench:"), rec.last("compile:"))
          << "pipeline off: bench began before compiles ended";
      EXPECT_EQ(rep->bench_overlap_ms, 0.0);
    }
  }
}

// Same winner and the same outcome per candidate with and without the pipeline, with a compile
// error, duplicate binaries, a spilling (pruned) config, a wrong result and a fault.
TEST(Pipeline, SameOutcomeAsCompilingEverythingFirst) {
  std::map<std::string, std::pair<Code, std::string>> outcome[2];
  std::string winner[2];
  int dups[2], pruned[2];
  for (int pl = 0; pl < 2; ++pl) {
    Env env;
    env.compile_delay_ms = 5;
    env.compile_error = {"BLOCK=64,VEC=1"};
    env.dup_vec = {"BLOCK=512,VEC=1", "BLOCK=512,VEC=2"};  // one binary (see f.spec.launch)
    env.spill = {"BLOCK=1024,VEC=1"};
    env.wrong = {"BLOCK=128,VEC=4"};
    env.fault = {"BLOCK=64,VEC=4"};
    env.cost["BLOCK=256,VEC=2"] = 0.01;
    auto f = env.family();
    // Launch dims independent of VEC, so the two VEC-less binaries are true duplicates (the
    // simulated kernel covers all n whatever the grid).
    f.spec.launch = [](const Knobs& c, const Scale& p, const DeviceFacts&) {
      Launch l;
      l.grid[0] = unsigned(ceilDiv(p.n, c["BLOCK"]));
      l.block[0] = unsigned(c["BLOCK"]);
      return l;
    };
    addVendor(f, env);
    // Of the two identical binaries, the first to finish compiling is the one benchmarked. Without
    // the pipeline that is candidate order (BLOCK=512,VEC=1); with it, arrival order, which the
    // scheduler would decide: BLOCK=512,VEC=2's compile waits until VEC=1's has finished, so both
    // runs compare the same original (VEC=1 is handed out first, so this cannot deadlock).
    testsupport::Gate first_dup_compiled;
    std::atomic<bool> gate_ok{true};
    env.on_compile = [&](const std::string& cfg) {
      if (cfg == "BLOCK=512,VEC=2" && !first_dup_compiled.wait(std::chrono::seconds(60)))
        gate_ok = false;
    };
    auto o = pipelineOptions(env, pl == 1, nullptr);
    o.progress = [&](const TuneProgress& pr) {
      if (pr.phase == "compile" && pr.config == "BLOCK=512,VEC=1") first_dup_compiled.open();
    };
    auto t = Engine::create(env.backend, o);
    ASSERT_TRUE(t.ok());
    auto fam = addFamily(**t, std::move(f));
    auto rep = fam->tune(env.problem(4096));
    ASSERT_TRUE(rep.ok()) << rep.status().toString();
    EXPECT_TRUE(gate_ok.load());
    winner[pl] = rep->winner_source + "|" + rep->winner;
    dups[pl] = rep->duplicates;
    pruned[pl] = rep->pruned;
    for (const auto& c : rep->candidates) {
      // Which of two identical binaries is "the original" may differ with arrival order, and so
      // may the bar for early rejection: "slower than best" and a full measurement are both
      // "measured, not the winner".
      std::string reason =
          c.reason.rfind("identical binary", 0) == 0 ? "dup" : c.reason.substr(0, 20);
      Code st = c.status;
      if (st == Code::kOk || c.reason.rfind("slower than best", 0) == 0)
        st = Code::kOk, reason = "";
      outcome[pl][c.source + "|" + c.config] = {st, reason};
    }
    EXPECT_EQ(find(*rep, "BLOCK=64,VEC=1")->status, Code::kCompileError);
    EXPECT_EQ(find(*rep, "BLOCK=1024,VEC=1")->reason.rfind("pruned: spills", 0), 0u) << rep->tree();
    EXPECT_NE(find(*rep, "BLOCK=128,VEC=4")->status, Code::kOk);
    EXPECT_NE(find(*rep, "BLOCK=64,VEC=4")->status, Code::kOk);
    EXPECT_EQ(rep->duplicates, 1) << rep->tree();
    // Both ways the first of the two identical binaries is the one benchmarked.
    EXPECT_EQ(
        find(*rep, "BLOCK=512,VEC=2")->reason.rfind("identical binary to BLOCK=512,VEC=1", 0), 0u)
        << rep->tree();
  }
  EXPECT_EQ(winner[0], winner[1]);
  EXPECT_EQ(dups[0], dups[1]);
  EXPECT_EQ(pruned[0], pruned[1]);
  ASSERT_EQ(outcome[0].size(), outcome[1].size());
  for (const auto& [id, o] : outcome[0]) {
    ASSERT_TRUE(outcome[1].count(id)) << id;
    EXPECT_EQ(o.first, outcome[1][id].first) << id;
    if (o.first != Code::kOk) {
      EXPECT_EQ(o.second, outcome[1][id].second) << id;
    }
  }
}

// Pruning never removes every candidate: every JIT config spills and there is no vendor
// candidate, so they are benchmarked after all (once all compiles are known).
TEST(Pipeline, PruningEverythingBenchmarksThemAnyway) {
  Env env;
  env.compile_delay_ms = 5;
  for (int b : {64, 128, 256, 512, 1024, 2048})
    for (int v : {1, 2, 4})
      env.spill.insert("BLOCK=" + std::to_string(b) + ",VEC=" + std::to_string(v));
  auto t = Engine::create(env.backend, pipelineOptions(env, true, nullptr));
  ASSERT_TRUE(t.ok());
  auto fam = addFamily(**t, env.family());
  auto rep = fam->tune(env.problem(4096));
  ASSERT_TRUE(rep.ok());
  EXPECT_EQ(rep->pruned, 0) << rep->tree();
  EXPECT_EQ(rep->winner, "BLOCK=256,VEC=2") << rep->tree();
}

// With a vendor candidate, the would-be-pruned ones are pruned (as without the pipeline).
TEST(Pipeline, PruningWithAVendorCandidate) {
  Env env;
  env.spill = {"BLOCK=256,VEC=2"};
  auto f = env.family();
  addVendor(f, env);
  auto t = Engine::create(env.backend, pipelineOptions(env, true, nullptr));
  ASSERT_TRUE(t.ok());
  auto fam = addFamily(**t, std::move(f));
  auto rep = fam->tune(env.problem(4096));
  ASSERT_TRUE(rep.ok());
  EXPECT_EQ(rep->pruned, 1);
  EXPECT_EQ(find(*rep, "BLOCK=256,VEC=2")->reason.rfind("pruned: spills", 0), 0u);
}

// Vendor candidates are timed under the JIT candidates' conditions: with the pipeline on, after
// the last compile has finished (a vendor candidate timed while compile threads run would be
// measured under more CPU load than the JIT candidates timed after them). finalists_test checks
// every launch of the vendor candidate, timed runs included.
TEST(Pipeline, VendorCandidateIsBenchmarkedAfterEveryCompile) {
  Env env;
  Recorder rec;
  auto f = env.family();
  addVendor(f, env);
  auto t = Engine::create(env.backend, pipelineOptions(env, true, &rec));
  ASSERT_TRUE(t.ok());
  auto fam = addFamily(**t, std::move(f));
  auto rep = fam->tune(env.problem(4096));
  ASSERT_TRUE(rep.ok());
  const int vendor = rec.first("bench:fake:algo=1");
  ASSERT_GE(vendor, 0);
  ASSERT_GE(rec.last("compile:"), 0);
  EXPECT_GT(vendor, rec.last("compile:"));
}

// Resumability: every candidate a pipelined run finished is a partial result in the tuning
// journal (<database>.journal) at once. The journal is copied while the run is in the middle of
// benchmarking (and still compiling), as a killed tuner would have left it; a second tuner on that
// copy reuses those results and measures only the rest. (A real SIGKILL, with and without isolation, is tested in
// isolation_worker_test.cc, which runs with the pipeline on, the default.)
TEST(Pipeline, PartialResultsOfAPipelinedRunAreReused) {
  Env env;
  const std::string db1 = env.dir + "/run1.json", snap = env.dir + "/snapshot.json";
  const int kSnapAt = 5;  // at the 5th "bench" event, the first 4 candidates are recorded
  // Compiles after the first kHeld wait until the snapshot is taken, so the snapshot is always
  // taken mid-run, with compiles outstanding (kHeld >= kSnapAt: enough candidates to bench).
  const int kHeld = 8;
  testsupport::Gate snapshot_taken;
  std::atomic<int> compile_starts{0};
  std::atomic<bool> gate_ok{true};
  env.on_compile = [&](const std::string&) {
    if (compile_starts++ >= kHeld && !snapshot_taken.wait(std::chrono::seconds(60)))
      gate_ok = false;
  };
  std::vector<std::string> benched;
  bool snapped = false, compiling_at_snap = false;
  std::atomic<int> compiles{0}, compile_total{0};
  auto o = pipelineOptions(env, true, nullptr);
  o.options.database_path = db1;
  o.progress = [&](const TuneProgress& pr) {
    if (pr.phase == "compile") {
      ++compiles;
      compile_total = pr.total;
    }
    if (pr.phase != "bench") return;
    benched.push_back(pr.config);
    if (static_cast<int>(benched.size()) == kSnapAt) {
      auto text = readFile(db1 + ".journal");
      ASSERT_TRUE(text.ok()) << text.status().toString();
      ASSERT_TRUE(writeFileAtomic(snap + ".journal", *text).ok());
      snapped = true;
      compiling_at_snap = compiles.load() < compile_total.load();
      snapshot_taken.open();
    }
  };
  auto t1 = Engine::create(env.backend, o);
  ASSERT_TRUE(t1.ok());
  auto fam1 = addFamily(**t1, env.family());
  ASSERT_TRUE(fam1.ok());
  auto rep1 = fam1->tune(env.problem(4096));
  ASSERT_TRUE(rep1.ok()) << rep1.status().toString();
  ASSERT_TRUE(snapped) << rep1->tree();
  EXPECT_TRUE(gate_ok.load());
  EXPECT_TRUE(compiling_at_snap) << "the snapshot was taken after every compile finished";

  std::set<std::string> before(benched.begin(), benched.begin() + (kSnapAt - 1));
  {
    std::lock_guard<std::mutex> l(env.mu);
    env.launches.clear();
  }
  auto o2 = pipelineOptions(env, true, nullptr);
  o2.options.database_path = snap;
  // Without finalists: their re-timing runs resumed candidates again on purpose (their binaries
  // loaded back, resume_winner_test.cc); here no resumed candidate may be measured again.
  o2.options.finalists = 0;
  auto t2 = Engine::create(env.backend, o2);
  ASSERT_TRUE(t2.ok());
  auto fam2 = addFamily(**t2, env.family());
  ASSERT_TRUE(fam2.ok());
  auto rep2 = fam2->tune(env.problem(4096));
  ASSERT_TRUE(rep2.ok()) << rep2.status().toString();
  EXPECT_EQ(rep2->resumed, kSnapAt - 1) << rep2->tree();
  EXPECT_EQ(rep2->winner, rep1->winner);
  std::lock_guard<std::mutex> l(env.mu);
  for (const auto& cfg : before) EXPECT_EQ(env.launches.count(cfg), 0u) << cfg << " measured again";
  int measured_again = 0;
  for (const auto& c : rep1->candidates) {
    if (c.status == Code::kOk && !before.count(c.config) && env.launches.count(c.config))
      ++measured_again;
  }
  EXPECT_GT(measured_again, 0) << "the candidates not recorded were not measured";
}

}  // namespace
}  // namespace ktune
