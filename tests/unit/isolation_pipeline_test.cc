// The compile/benchmark pipeline of the tuner (options.pipeline) with isolated benchmarking, on
// the simulated backend (CI): JIT candidates go to the worker batch by batch while others still
// compile, one worker serves every batch of the key, and a fallback to in-process benchmarking
// is decided once per key, not per batch. (Named isolation_*_test.cc so that tests/CMakeLists.txt
// gives it the worker and the test plugin.)
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <sstream>
#include <string>
#include <vector>

#include "autotune/autotuner.h"
#include "autotune/isolation.h"
#include "base/fs.h"
#include "tests/support/gate.h"
#include "tests/unit/isolation_families.h"
#include "tests/unit/isolation_test_env.h"
#include "tests/unit/progress_recorder.h"

namespace ktune {
namespace {

using isotest::IsoProblem;

using Recorder = tunertest::ProgressRecorder;

struct Env {
  std::string dir;
  std::shared_ptr<SimBackend> backend;
  std::ostringstream log;
  // With the pipeline, compiles after the first two wait here until a benchmark has started, so
  // "benchmarked while compiling" holds by construction (a pipeline that waited for every compile
  // would time out here and fail), not by how long a compile sleeps.
  testsupport::Gate benched;
  std::atomic<int> compile_starts{0};
  std::atomic<bool> gate_ok{true};

  Env() {
    char tmpl[] = "/tmp/ktune-isopipe-XXXXXX";
    dir = ::mkdtemp(tmpl);
    SimOptions o;
    o.device = isotest::isoDevice();
    backend = std::make_shared<SimBackend>(o);
    isotest::registerIsoKernels(*backend);
  }
  ~Env() { (void)removeTree(dir); }

  // 2 compile threads, each compile takes `compile_ms` (and, with the pipeline and a recorder,
  // waits for the first benchmark after the first two): candidates come out in several batches.
  EngineOptions options(bool pipeline, double compile_ms, Recorder* rec) {
    // (Finalists are off: FinalistsRetimedInTheWorker turns them on for itself.)
    EngineOptions t = isotest::env::isoEngineOptions(dir, &log, /*isolate=*/true);
    t.options.pipeline = pipeline;
    const bool hold = pipeline && rec;
    t.compiler = std::make_shared<SimCompiler>([this, compile_ms, hold](const CompileRequest&) {
      if (hold && compile_starts++ >= 2 && !benched.wait(std::chrono::seconds(60))) gate_ok = false;
      SimCompileDecision d;
      d.delay_ms = compile_ms;
      return d;
    });
    if (rec) {
      rec->then = [this](const TuneProgress& pr) {
        if (pr.phase == "bench") benched.open();
      };
      t.progress = rec->fn();
    }
    return t;
  }
};

std::vector<Config> slowConfigs() {
  for (auto& [n, cs] : isotest::isoFamilies())
    if (n == "iso_slow") return cs;
  return {};
}

// iso_slow: 8 good configs (2 ms per launch), winner BLOCK=256. Compiles of 40 ms on 2 threads
// come out in about 4 batches; the first is benchmarked in the worker before the last compile.
TEST(IsolationPipeline, BatchesGoThroughOneWorkerWhileCompiling) {
  for (bool pipeline : {true, false}) {
    SCOPED_TRACE(pipeline ? "pipeline on" : "pipeline off");
    Env env;
    Recorder rec;
    auto tu = Engine::create(env.backend, env.options(pipeline, 40, &rec));
    ASSERT_TRUE(tu.ok()) << tu.status().toString();
    const std::vector<Config> configs = slowConfigs();
    auto fam = addFamily(**tu, isotest::isoFamily(env.backend.get(), "iso_slow", configs));
    ASSERT_TRUE(fam.ok()) << fam.status().toString();
    auto p = isotest::makeIsoProblem(env.backend.get(), 1000);
    auto rep = fam->tune(*p);
    ASSERT_TRUE(rep.ok()) << rep.status().toString() << "\n" << env.log.str();
    EXPECT_EQ(rep->winner, "BLOCK=256,MODE=5") << rep->tree();
    for (const auto& c : rep->candidates) {
      EXPECT_TRUE(c.status == Code::kOk || c.reason.rfind("slower than best", 0) == 0)
          << c.config << ": " << c.reason;
    }
    const IsolationStats st = (*tu)->isolationStats();
    EXPECT_EQ(st.starts, 1);  // one worker for every batch
    EXPECT_EQ(st.candidates_sent, 8);
    EXPECT_EQ(st.fallbacks, 0);
    // Nothing was timed in the tuner's process.
    EXPECT_EQ(env.backend->launchCount("iso_scale"), 0);
    std::lock_guard<std::mutex> l(rec.mu);
    EXPECT_EQ(rec.count("bench:"), 8);
    ASSERT_GE(rec.first("bench:"), 0);
    if (pipeline) {
      EXPECT_TRUE(env.gate_ok.load()) << "no benchmark started while compiles were waiting";
      EXPECT_LT(rec.first("bench:"), rec.last("compile:"))
          << "the worker got nothing before every compile finished";
      EXPECT_GT(rep->bench_overlap_ms, 0.0);
    } else {
      EXPECT_GT(rec.first("bench:"), rec.last("compile:"));
      EXPECT_EQ(rep->bench_overlap_ms, 0.0);
    }
    // Every candidate was recorded as it finished: the finished entry holds all of them.
    auto e = (*tu)->database("iso_slow")->lookup(rep->key);
    ASSERT_TRUE(e.has_value());
    EXPECT_EQ(e->winner, "BLOCK=256,MODE=5");
  }
}

// Background tuning through the worker keeps its duty cycle (issue 35): with a duty below 1 the
// candidates go to the worker one per request, each after its pause; with duty 1 they go as one
// batch. Before, the worker got the whole batch and the pauses never applied there.
TEST(IsolationPipeline, BackgroundPacingSendsOneCandidatePerWorkerRequest) {
  for (double duty : {1.0, 0.5}) {
    SCOPED_TRACE("duty " + std::to_string(duty));
    Env env;
    EngineOptions o = env.options(false, 1, nullptr);
    o.options.background = true;
    o.options.background_duty = duty;
    auto tu = Engine::create(env.backend, o);
    ASSERT_TRUE(tu.ok()) << tu.status().toString();
    const std::vector<Config> configs = slowConfigs();
    auto fam = addFamily(**tu, isotest::isoFamily(env.backend.get(), "iso_slow", configs));
    ASSERT_TRUE(fam.ok()) << fam.status().toString();
    auto p = isotest::makeIsoProblem(env.backend.get(), 1000);
    ASSERT_TRUE((*fam)(*p).ok());  // returns at once; the key tunes on the background thread
    (*tu)->waitBackground();
    ASSERT_EQ((*tu)->backgroundTuned(), 1u) << env.log.str();
    EXPECT_EQ(fam->lookup(*p)->origin, "memory") << env.log.str();
    const IsolationStats st = (*tu)->isolationStats();
    EXPECT_EQ(st.candidates_sent, 8);
    if (duty < 1) EXPECT_EQ(st.requests, st.candidates_sent);
    else EXPECT_EQ(st.requests, 1);
  }
}

// A family the worker cannot rebuild (no make_problem): with fallback_in_process, the first batch
// falls back and the later batches of the key go in-process directly (one fallback, one warning,
// no worker started).
TEST(IsolationPipeline, FallbackIsDecidedOncePerKey) {
  Env env;
  Recorder rec;
  auto o = env.options(true, 30, &rec);
  o.isolation.fallback_in_process = true;
  auto tu = Engine::create(env.backend, o);
  ASSERT_TRUE(tu.ok());
  std::vector<Config> configs;
  for (int64_t b : {32, 64, 128, 256, 512, 1024}) configs.push_back(isotest::cfg(b, 0));
  auto fam = addFamily(**tu, isotest::isoFamily(env.backend.get(), "iso_plain", configs,
                                           /*offline=*/false));
  ASSERT_TRUE(fam.ok());
  auto p = isotest::makeIsoProblem(env.backend.get(), 1000);
  auto rep = fam->tune(*p);
  ASSERT_TRUE(rep.ok()) << rep.status().toString();
  EXPECT_EQ(rep->winner, "BLOCK=256,MODE=0");
  for (const auto& c : rep->candidates) {
    EXPECT_TRUE(c.status == Code::kOk || c.reason.rfind("slower than best", 0) == 0)
        << c.config << ": " << c.reason;
  }
  EXPECT_EQ((*tu)->isolationStats().fallbacks, 1);
  EXPECT_EQ((*tu)->isolationStats().starts, 0);
  EXPECT_GT(env.backend->launchCount("iso_scale"), 0);
  const std::string log = env.log.str();
  const std::string warn = "isolated benchmarking unavailable";
  ASSERT_NE(log.find(warn), std::string::npos) << log;
  EXPECT_EQ(log.find(warn, log.find(warn) + 1), std::string::npos) << "warned twice:\n" << log;
  std::lock_guard<std::mutex> l(rec.mu);
  EXPECT_TRUE(env.gate_ok.load()) << "no benchmark started while compiles were waiting";
  EXPECT_LT(rec.first("bench:"), rec.last("compile:")) << "the batches were not pipelined";
  EXPECT_EQ(rec.count("bench:"), 6);
}


// Isolation asked for and no way to honour it (issue 12): the tuning run refuses with the reason
// instead of benchmarking the family's candidates in the tuner's process, both when the C++
// option leaves fallback_in_process at its default and when KTUNE_ISOLATE=1 was set (explicit:
// no fallback even where the options would allow one). No candidate is launched here.
TEST(IsolationPipeline, RequestedIsolationRefusesInsteadOfFallingBack) {
  for (bool from_env : {false, true}) {
    SCOPED_TRACE(from_env ? "KTUNE_ISOLATE=1" : "options.isolate");
    Env env;
    auto o = env.options(true, 1, nullptr);
    o.isolation = IsolationOptions{};  // defaults
    o.options.worker_path = KTUNE_WORKER_PATH;
    o.options.worker_plugins = {KTUNE_ISOLATION_SIM_PLUGIN};
    if (from_env) {
      o.options.isolate_explicit = true;
      o.isolation.fallback_in_process = true;
    }
    auto tu = Engine::create(env.backend, o);
    ASSERT_TRUE(tu.ok());
    std::vector<Config> configs = {isotest::cfg(64, 0), isotest::cfg(256, 0)};
    auto fam = addFamily(**tu, isotest::isoFamily(env.backend.get(), "iso_plain", configs,
                                             /*offline=*/false));
    ASSERT_TRUE(fam.ok());
    auto p = isotest::makeIsoProblem(env.backend.get(), 1000);
    auto rep = fam->tune(*p);
    ASSERT_FALSE(rep.ok());
    EXPECT_EQ(rep.status().code(), Code::kUnavailable);
    EXPECT_NE(rep.status().message().find("isolated benchmarking was requested"),
              std::string::npos) << rep.status().toString();
    EXPECT_NE(rep.status().message().find("make_problem"), std::string::npos);
    EXPECT_EQ(env.backend->launchCount("iso_scale"), 0);
    EXPECT_EQ((*tu)->isolationStats().fallbacks, 0);
    EXPECT_FALSE((*fam)(*p).ok());  // the call refuses too
  }
}

// The finalists are re-timed where the candidates were benchmarked: in the worker, so nothing is
// timed in the tuner's process and the comparison is still recorded.
TEST(IsolationPipeline, FinalistsRetimedInTheWorker) {
  Env env;
  auto o = env.options(false, 1, nullptr);
  o.options.finalists = 3;
  auto tu = Engine::create(env.backend, o);
  ASSERT_TRUE(tu.ok()) << tu.status().toString();
  const std::vector<Config> configs = slowConfigs();
  auto fam = addFamily(**tu, isotest::isoFamily(env.backend.get(), "iso_slow", configs));
  ASSERT_TRUE(fam.ok()) << fam.status().toString();
  auto p = isotest::makeIsoProblem(env.backend.get(), 1000);
  auto rep = fam->tune(*p);
  ASSERT_TRUE(rep.ok()) << rep.status().toString() << "\n" << env.log.str();
  EXPECT_EQ(rep->winner, "BLOCK=256,MODE=5") << rep->tree();
  // One round when the race already separated the winner from the default (finalists.h).
  EXPECT_GE(rep->vs_default.rounds, 1) << rep->tree();
  EXPECT_GE(rep->vs_default.finalists, 2);
  EXPECT_GT((*tu)->isolationStats().candidates_sent, static_cast<int>(configs.size()));
  EXPECT_EQ(env.backend->launchCount("iso_scale"), 0);  // nothing timed in this process
}

}  // namespace
}  // namespace ktune
