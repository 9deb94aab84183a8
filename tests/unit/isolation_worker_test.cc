// Isolated benchmarking on the simulated backend (CI): a supervised ktune-worker process runs the
// candidates; faults, crashes and hangs kill only the worker; failures are blacklisted; the worker
// is reused (a SIGKILLed tuner resuming from its partial results: isolation_resume_part.cc).
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <map>
#include <mutex>
#include <sstream>

#include "autotune/autotuner.h"
#include "autotune/isolation.h"
#include "autotune/worker_prestart.h"
#include "base/fs.h"
#include "base/options.h"
#include "bench/isolation_gpu_families.h"
#include "tests/unit/isolation_families.h"
#include "tests/unit/isolation_test_env.h"
#include "tests/support/tools.h"

namespace ktune {
namespace {

using isotest::IsoProblem;

using namespace isotest::env;  // NOLINT: the shared environment (isolation_test_env.h)

// KTUNE_WORKER and KTUNE_WORKER_PLUGINS, read from the environment (Options::fromEnv), are what
// the tuner starts the worker with: the plugin named only there serves the family (the worker
// knows no sim backend or family without it).
TEST(Isolation, WorkerAndPluginsFromTheEnvironment) {
  IsoEnv env;
  const char* old_worker = std::getenv("KTUNE_WORKER");
  const char* old_plugins = std::getenv("KTUNE_WORKER_PLUGINS");
  ASSERT_TRUE(old_worker == nullptr && old_plugins == nullptr) << "the test sets these itself";
  ::setenv("KTUNE_WORKER", KTUNE_WORKER_PATH, 1);
  const std::string plugins = std::string("/nonexistent-first.so:") + KTUNE_ISOLATION_SIM_PLUGIN;
  ::setenv("KTUNE_WORKER_PLUGINS", plugins.c_str(), 1);
  auto from_env = Options::fromEnv();
  ::unsetenv("KTUNE_WORKER");
  ::unsetenv("KTUNE_WORKER_PLUGINS");
  ASSERT_TRUE(from_env.ok()) << from_env.status().toString();
  ASSERT_EQ(from_env->worker_plugins.size(), 2u);
  from_env->worker_plugins.erase(from_env->worker_plugins.begin());  // parsed, not loadable
  // The worker settings come from the environment only (they have no second place to be set).
  auto envOnly = [&](IsoEnv& e, std::vector<std::string> worker_plugins) {
    auto o = e.options();
    o.options.worker_path = from_env->worker_path;
    o.options.worker_plugins = std::move(worker_plugins);
    return o;
  };
  auto t = make(env, "iso_good", envOnly(env, from_env->worker_plugins));
  auto p = isotest::makeIsoProblem(env.backend.get(), 1000);
  auto rep = t.fam.tune(*p);
  ASSERT_TRUE(rep.ok()) << rep.status().toString() << "\n" << env.log.str();
  EXPECT_EQ(rep->winner, "BLOCK=256,MODE=0");
  const IsolationStats st = t.tuner->isolationStats();
  EXPECT_EQ(st.starts, 1);
  EXPECT_EQ(st.candidates_sent, 4);
  EXPECT_EQ(st.fallbacks, 0);
  EXPECT_EQ(env.backend->launchCount("iso_scale"), 0) << "timed here, not in the worker";
  // The worker said where its start-up went (ms since its main(), in order) and what its problem
  // and flush set-up took: the parts of a tuning run's wait for its first candidate.
  for (const char* k : {"backend", "engine", "ops", "problem", "bench_prepare"})
    EXPECT_EQ(st.worker_ms.count(k), 1u) << k;
  // And how long this process waited for it: its hello, then its problem.
  for (const char* k : {"wait_start", "wait_problem"}) {
    ASSERT_EQ(st.worker_ms.count(k), 1u) << k;
    EXPECT_GE(st.worker_ms.at(k), 0.0) << k;
  }
  if (st.worker_ms.size() >= 3) {
    EXPECT_LE(st.worker_ms.at("backend"), st.worker_ms.at("engine"));
    EXPECT_LE(st.worker_ms.at("engine"), st.worker_ms.at("ops"));
  }

  // Without the plugin the worker cannot start on the sim backend: no result comes from it.
  IsoEnv env2;
  auto t2 = make(env2, "iso_good", envOnly(env2, {}));
  auto p2 = isotest::makeIsoProblem(env2.backend.get(), 1000);
  auto rep2 = t2.fam.tune(*p2);
  EXPECT_EQ(t2.tuner->isolationStats().candidates_sent, 0);
  EXPECT_FALSE(rep2.ok() && rep2->winner == "BLOCK=256,MODE=0" &&
               env2.backend->launchCount("iso_scale") == 0)
      << "a worker without the plugin served the family";
}

TEST(IsolationProtocol, CandidateResultRoundTrip) {
  CandidateResult r;
  r.config = "BLOCK=64,MODE=1";
  r.source = "jit";
  r.status = Code::kDeviceFault;
  r.reason = "worker was killed by SIGSEGV";
  r.stats.median_ms = 0.5;
  r.stats.runs = 12;
  r.code_object_key = "abc";
  r.date = "2025-01-01T00:00:00Z";
  auto back = candidateResultFromJson(candidateResultToJson(r));
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(back->config, r.config);
  EXPECT_EQ(back->status, Code::kDeviceFault);
  EXPECT_EQ(back->reason, r.reason);
  EXPECT_EQ(back->stats.runs, 12);
  EXPECT_DOUBLE_EQ(back->stats.median_ms, 0.5);
  EXPECT_FALSE(candidateResultFromJson("not json").ok());
}

TEST(IsolationProtocol, MissingWorkerIsAClearError) {
  auto w = findWorkerExecutable("/nonexistent/ktune-worker");
  ASSERT_FALSE(w.ok());
  EXPECT_NE(w.status().message().find("KTUNE_WORKER"), std::string::npos);
}

// The Python package ships libktune beside bin/ktune-worker (python/setup.py): the library's own
// directory is searched for bin/ too, after the installed layouts.
TEST(IsolationProtocol, WorkerIsLookedForInEveryShippedLayout) {
  const auto c = workerCandidates("/opt/app/bin", "/site/ktune");
  const std::vector<std::string> want = {
      "/opt/app/bin/ktune-worker", "/opt/app/bin/../tools/ktune-worker",
      "/site/ktune/../bin/ktune-worker", "/site/ktune/../../bin/ktune-worker",
      "/site/ktune/../libexec/ktune/ktune-worker", "/site/ktune/bin/ktune-worker"};
  EXPECT_EQ(c, want);
  EXPECT_EQ(workerCandidates("", "").size(), 0u);
  EXPECT_EQ(workerCandidates("", "/site/ktune").back(), "/site/ktune/bin/ktune-worker");
}

// A "prepare" request builds the problem ahead of the first bench request and answers nothing;
// the bench request then reuses it (one construction in all).
TEST(IsolationProtocol, PrepareBuildsTheProblemOnceAndAnswersNothing) {
  IsoEnv env;
  auto tu = Engine::create(env.backend, env.options(false));
  ASSERT_TRUE(tu.ok());
  std::atomic<int> builds{0};
  auto f = isotest::isoFamily(env.backend.get(), "iso_good", isotest::isoFamilies()[2].second);
  auto inner = f.spec.make_problem;
  f.spec.make_problem = [&builds, inner](const std::string& j) {
    ++builds;
    return inner(j);
  };
  ASSERT_TRUE(addFamily(**tu, std::move(f)).ok());
  int in[2], out[2];
  ASSERT_EQ(::pipe(in), 0);
  ASSERT_EQ(::pipe(out), 0);
  const std::string args = "{\"n\":1000}";
  nlohmann::json prep{{"op", "prepare"}, {"family", "iso_good"}, {"args", args}};
  nlohmann::json bench{{"op", "bench"}, {"family", "iso_good"}, {"key", "k"}, {"args", args},
                       {"best_ms", 0.0},
                       {"candidates", nlohmann::json::array({nlohmann::json{
                                          {"config", "BLOCK=256,MODE=0"}, {"source", "jit"}}})}};
  const std::string reqs = prep.dump() + "\n" + bench.dump() + "\n";
  ASSERT_EQ(::write(in[1], reqs.data(), reqs.size()), static_cast<ssize_t>(reqs.size()));
  ::close(in[1]);
  Status served;
  std::thread th([&] {
    served = serveWorker(**tu, in[0], out[1]);
    ::close(out[1]);
  });
  std::string all;
  char buf[4096];
  for (ssize_t k; (k = ::read(out[0], buf, sizeof(buf))) > 0;) all.append(buf, size_t(k));
  th.join();
  ::close(in[0]);
  ::close(out[0]);
  EXPECT_TRUE(served.ok()) << served.toString();
  std::vector<std::string> events;
  std::istringstream ls(all);
  for (std::string line; std::getline(ls, line);)
    events.push_back(nlohmann::json::parse(line).value("event", "?"));
  EXPECT_EQ(events, (std::vector<std::string>{"hello", "problem", "result", "done"})) << all;
  EXPECT_EQ(builds.load(), 1);
}

TEST(Isolation, FaultsAndCrashesAreRecordedAndTuningContinues) {
  IsoEnv env;
  auto t = make(env, "iso_faults", env.options());
  auto p = isotest::makeIsoProblem(env.backend.get(), 1000);
  auto rep = t.fam.tune(*p);
  ASSERT_TRUE(rep.ok()) << rep.status().toString() << "\n" << env.log.str();
  EXPECT_EQ(rep->winner, "BLOCK=256,MODE=0");
  const CandidateResult* injected = find(*rep, "BLOCK=128,MODE=1");
  const CandidateResult* segv = find(*rep, "BLOCK=512,MODE=2");
  const CandidateResult* abrt = find(*rep, "BLOCK=32,MODE=4");
  ASSERT_TRUE(injected && segv && abrt);
  EXPECT_EQ(injected->status, Code::kDeviceFault);
  EXPECT_NE(injected->reason.find("injected"), std::string::npos) << injected->reason;
  EXPECT_EQ(segv->status, Code::kDeviceFault);
  EXPECT_NE(segv->reason.find("SIGSEGV"), std::string::npos) << segv->reason;
  EXPECT_EQ(abrt->status, Code::kDeviceFault);
  EXPECT_NE(abrt->reason.find("SIGABRT"), std::string::npos) << abrt->reason;
  // Good candidates after each crash were measured by a restarted worker.
  const CandidateResult* after = find(*rep, "BLOCK=1024,MODE=0");
  EXPECT_TRUE(after->status == Code::kOk || after->reason.rfind("slower than best", 0) == 0)
      << after->reason;
  IsolationStats st = t.tuner->isolationStats();
  EXPECT_EQ(st.crashes, 2);                 // SIGSEGV and SIGABRT
  // First + after the fault exit + 2 crashes, less one when the last of them ends the last batch
  // (the compile / bench pipeline sends candidates in arrival order; no restart is then needed).
  EXPECT_GE(st.starts, 3);
  EXPECT_LE(st.starts, 4);
  EXPECT_EQ(st.candidates_sent, 6);
  // Blacklisted in the database, with reason and date.
  int failed = 0;
  for (const auto& c : t.tuner->database("iso_faults")->candidatesFor(rep->key)) {
    if (c.status == Code::kDeviceFault) {
      ++failed;
      EXPECT_FALSE(c.date.empty());
      EXPECT_FALSE(c.reason.empty());
    }
  }
  EXPECT_EQ(failed, 3);
  // The host process is healthy: the normal call runs the winner here.
  EXPECT_TRUE(t.fam(*p).ok());

  // A later tuning run skips the blacklisted candidates: no crash, one worker.
  auto t2 = make(env, "iso_faults", env.options());
  auto rep2 = t2.fam.tune(*p);
  ASSERT_TRUE(rep2.ok()) << rep2.status().toString();
  EXPECT_EQ(rep2->skipped_known_failed, 3);
  EXPECT_EQ(rep2->winner, "BLOCK=256,MODE=0");
  EXPECT_EQ(t2.tuner->isolationStats().crashes, 0);
  EXPECT_EQ(t2.tuner->isolationStats().starts, 1);
  // ... unless asked to retry.
  auto o3 = env.options();
  o3.options.retry_failed = true;
  auto t3 = make(env, "iso_faults", o3);
  auto rep3 = t3.fam.tune(*p);
  ASSERT_TRUE(rep3.ok());
  EXPECT_EQ(rep3->skipped_known_failed, 0);
  EXPECT_EQ(t3.tuner->isolationStats().crashes, 2);
}

TEST(Isolation, HangIsKilledByTheWatchdog) {
  IsoEnv env;
  auto o = env.options();
  o.isolation.timeout_floor_ms = 300;
  auto t = make(env, "iso_hang", o);
  auto p = isotest::makeIsoProblem(env.backend.get(), 1000);
  // No wall-clock bound here (a loaded CI machine stretches any): the hung candidate's kTimeout
  // and "hung" reason come only from the watchdog, and without it this test never ends (ctest's
  // timeout fails it).
  auto rep = t.fam.tune(*p);
  ASSERT_TRUE(rep.ok()) << rep.status().toString() << "\n" << env.log.str();
  EXPECT_EQ(rep->winner, "BLOCK=256,MODE=0");
  const CandidateResult* hung = find(*rep, "BLOCK=128,MODE=3");
  ASSERT_TRUE(hung);
  EXPECT_EQ(hung->status, Code::kTimeout);
  EXPECT_NE(hung->reason.find("hung"), std::string::npos) << hung->reason;
  EXPECT_EQ(t.tuner->isolationStats().timeouts, 1);
  // The killed worker is restarted when candidates remain after the hung one; with the compile /
  // bench pipeline the hung one may arrive last, and then nothing needs a second worker.
  EXPECT_GE(t.tuner->isolationStats().starts, 1);
  EXPECT_LE(t.tuner->isolationStats().starts, 2);
  // Blacklisted: the next run does not wait for it again.
  auto t2 = make(env, "iso_hang", o);
  auto rep2 = t2.fam.tune(*p);
  ASSERT_TRUE(rep2.ok());
  EXPECT_EQ(rep2->skipped_known_failed, 1);
  EXPECT_EQ(t2.tuner->isolationStats().timeouts, 0);
}

TEST(Isolation, WorkerIsReusedAcrossCandidatesAndKeys) {
  IsoEnv env;
  auto t = make(env, "iso_good", env.options());
  auto p1 = isotest::makeIsoProblem(env.backend.get(), 1000);
  auto p2 = isotest::makeIsoProblem(env.backend.get(), 5000);
  ASSERT_TRUE(t.fam(*p1).ok()) << env.log.str();
  ASSERT_TRUE(t.fam(*p2).ok()) << env.log.str();
  IsolationStats st = t.tuner->isolationStats();
  EXPECT_EQ(st.starts, 1);
  ASSERT_EQ(st.pids.size(), 1u);
  EXPECT_NE(st.pids[0], ::getpid());
  EXPECT_EQ(st.candidates_sent, 8);
  EXPECT_EQ(st.fallbacks, 0);
  auto sel = t.fam.lookup(*p2);
  ASSERT_TRUE(sel.ok());
  EXPECT_EQ(sel->winner, "BLOCK=256,MODE=0");
  // The parent never ran a timed candidate: only the two real calls launched here.
  EXPECT_EQ(env.backend->launchCount("iso_scale"), 2);
}

// Engine::prepareWorker hands the worker a problem before the tuning run asks (the CLI, before its
// own inputs): the run then uses that worker and its problem; without isolation it starts nothing.
TEST(Isolation, AProblemPreparedEarlyServesTheRun) {
  IsoEnv env;
  auto t = make(env, "iso_good", env.options());
  t.tuner->prepareWorker("iso_good", "{\"n\":1000}");
  auto p = isotest::makeIsoProblem(env.backend.get(), 1000);
  auto rep = t.fam.tune(*p);
  ASSERT_TRUE(rep.ok()) << rep.status().toString() << "\n" << env.log.str();
  EXPECT_EQ(rep->winner, "BLOCK=256,MODE=0");
  const IsolationStats st = t.tuner->isolationStats();
  EXPECT_EQ(st.starts, 1);
  EXPECT_EQ(st.candidates_sent, 4);
  EXPECT_EQ(st.fallbacks, 0);
  EXPECT_EQ(st.worker_ms.count("problem"), 1u);
  IsoEnv env2;
  auto o = env2.options();
  o.options.isolate = false;
  auto t2 = make(env2, "iso_good", o);
  t2.tuner->prepareWorker("iso_good", "{\"n\":1000}");
  EXPECT_EQ(t2.tuner->isolationStats().starts, 0);
}

// A family whose modules come from a per-config source callback is benchmarked in the worker too:
// the worker's copy of the family (the plugin's) loads each binary from the store by its key, a
// faulting module is a result, and nothing is timed in the tuner's process.
TEST(Isolation, GeneratedModulesAreBenchmarkedInTheWorker) {
  IsoEnv env;
  auto t = make(env, "iso_generated", env.options());
  auto p = isotest::makeIsoProblem(env.backend.get(), 3000);
  auto rep = t.fam.tune(*p);
  ASSERT_TRUE(rep.ok()) << rep.status().toString() << env.log.str();
  EXPECT_EQ(rep->winner, "BLOCK=256,MODE=0") << rep->tree();
  const CandidateResult* bad = find(*rep, "BLOCK=128,MODE=1");
  ASSERT_NE(bad, nullptr);
  EXPECT_EQ(bad->status, Code::kDeviceFault) << bad->reason;
  const IsolationStats st = t.tuner->isolationStats();
  EXPECT_EQ(st.candidates_sent, 4);
  EXPECT_EQ(st.fallbacks, 0);
  EXPECT_EQ(env.backend->launchCount("iso_scale"), 0);
}

// Vendor-library candidates go through the worker like the JIT candidates (by default,
// IsolationOptions::vendor_in_process off), so both are timed in one process: here the worker's
// copy of the family (the plugin's) has no vendor_launch, so the vendor candidate fails there
// with that reason, and nothing ran in the tuner's process. With the option on it runs here.
TEST(Isolation, VendorCandidatesGoThroughTheWorkerByDefault) {
  EXPECT_FALSE(IsolationOptions{}.vendor_in_process);
  for (bool in_process : {true, false}) {
    IsoEnv env;
    auto o = env.options();
    o.isolation.vendor_in_process = in_process;
    auto tu = Engine::create(env.backend, o);
    ASSERT_TRUE(tu.ok());
    auto f = isotest::isoFamily(env.backend.get(), "iso_good", isotest::isoFamilies()[2].second);
    int vendor_runs = 0;
    Backend* be = env.backend.get();
    f.spec.vendor_candidates = [](const IsoProblem&) {
      return std::vector<VendorCandidate>{{"fake:algo=0", "fakeblas"}};
    };
    f.spec.vendor_launch = [&vendor_runs, be](const std::string&, const IsoProblem& p, StreamHandle s) -> Status {
      ++vendor_runs;
      std::vector<float> x(size_t(p.n));
      KTUNE_RETURN_IF_ERROR(be->copyToHost(x.data(), p.x, x.size() * 4));
      for (auto& v : x) v *= 2;
      KTUNE_RETURN_IF_ERROR(be->copyToDevice(p.y, x.data(), x.size() * 4));
      return be->memset8(p.y, 0, 0, s);
    };
    auto fam = addFamily(**tu, std::move(f));
    ASSERT_TRUE(fam.ok());
    auto p = isotest::makeIsoProblem(env.backend.get(), 1000);
    auto rep = fam->tune(*p);
    ASSERT_TRUE(rep.ok()) << rep.status().toString();
    const CandidateResult* v = find(*rep, "fake:algo=0");
    ASSERT_TRUE(v);
    const IsolationStats st = (*tu)->isolationStats();
    if (in_process) {
      EXPECT_EQ(v->status, Code::kOk) << v->reason;
      EXPECT_GT(vendor_runs, 0);
      EXPECT_EQ(st.candidates_sent, 4);  // the four JIT configs
    } else {
      EXPECT_NE(v->status, Code::kOk);
      EXPECT_NE(v->reason.find("vendor_launch"), std::string::npos) << v->reason;
      EXPECT_EQ(vendor_runs, 0);
      EXPECT_EQ(st.candidates_sent, 5);
    }
    EXPECT_EQ(st.starts, 1);
  }
}

// prestartWorker() starts the worker ahead of the first tuning run, which then uses it (one
// start in all); with isolation off it starts nothing.
TEST(Isolation, PrestartedWorkerIsTheOneThatTunes) {
  IsoEnv env;
  auto t = make(env, "iso_good", env.options());
  t.tuner->prestartWorker();
  t.tuner->prestartWorker();  // idempotent
  auto p = isotest::makeIsoProblem(env.backend.get(), 1000);
  ASSERT_TRUE(t.fam.tune(*p).ok()) << env.log.str();
  EXPECT_EQ(t.tuner->isolationStats().starts, 1);
  EXPECT_EQ(t.tuner->isolationStats().candidates_sent, 4);
  auto off = make(env, "iso_good", env.options(false));
  off.tuner->prestartWorker();
  ASSERT_TRUE(off.fam.tune(*p).ok());
  EXPECT_EQ(off.tuner->isolationStats().starts, 0);
}

// A worker started before the tuner existed (the CLI starts it before opening its own GPU, so the
// two start-ups overlap: worker_prestart.h) is the one the tuner's first run uses; one started
// for another launch is not taken.
TEST(Isolation, WorkerStartedBeforeTheTunerIsTheOneThatTunes) {
  IsoEnv env;
  const EngineOptions o = env.options();
  auto wl = earlyWorkerLaunch(o.options);
  ASSERT_TRUE(wl.ok()) << wl.status().toString();
  EXPECT_EQ(wl->backend, "auto");
  EXPECT_EQ(wl->cache_dir, env.dir);
  ASSERT_TRUE(prestartWorkerEarly(*wl, o.isolation).ok());
  WorkerLaunch other = *wl;
  other.device = 1;
  EXPECT_EQ(takeEarlyWorker(other, o.isolation), nullptr);
  IsolationOptions slower = o.isolation;
  slower.timeout_floor_ms *= 2;
  EXPECT_EQ(takeEarlyWorker(*wl, slower), nullptr);
  auto t = make(env, "iso_good", o);
  auto p = isotest::makeIsoProblem(env.backend.get(), 1000);
  ASSERT_TRUE(t.fam.tune(*p).ok()) << env.log.str();
  EXPECT_EQ(t.tuner->isolationStats().starts, 1);
  EXPECT_EQ(t.tuner->isolationStats().candidates_sent, 4);
  EXPECT_EQ(takeEarlyWorker(*wl, o.isolation), nullptr);  // the tuner took it
  EXPECT_FALSE(stopEarlyWorker());                         // nothing left to stop
  // One not taken can be stopped (the CLI does when it cannot open an exclusive-process GPU).
  ASSERT_TRUE(prestartWorkerEarly(*wl, o.isolation).ok());
  EXPECT_TRUE(stopEarlyWorker());
  EXPECT_EQ(takeEarlyWorker(*wl, o.isolation), nullptr);
}

TEST(Isolation, FamilyWithoutMakeProblemFallsBackInProcess) {
  IsoEnv env;
  auto o = env.options();
  o.isolation.fallback_in_process = true;
  auto tu = Engine::create(env.backend, o);
  ASSERT_TRUE(tu.ok());
  auto f = addFamily(**tu, isotest::isoFamily(env.backend.get(), "iso_plain",
                                         {isotest::cfg(64, 0), isotest::cfg(256, 0)},
                                         /*offline=*/false));
  ASSERT_TRUE(f.ok());
  auto p = isotest::makeIsoProblem(env.backend.get(), 1000);
  auto rep = f->tune(*p);
  ASSERT_TRUE(rep.ok());
  EXPECT_EQ(rep->winner, "BLOCK=256,MODE=0");
  EXPECT_EQ((*tu)->isolationStats().fallbacks, 1);
  EXPECT_EQ((*tu)->isolationStats().starts, 0);
  EXPECT_NE(env.log.str().find("make_problem"), std::string::npos) << env.log.str();
}

// The GPU test's user kernels (fault at 0x10, endless loop) compile, so on a GPU they fail only
// at run time, as intended.
TEST(IsolationProtocol, GpuTestKernelsCompileWithNvrtc) {
  auto c = compilerForArch("sm_90a");
  if (!c.ok()) KTUNE_SKIP_WITHOUT_TOOL("no NVRTC: " << c.status().toString());
  for (int mode : {0, 1, 2}) {
    CompileRequest req;
    req.source = isogpu::kSource;
    req.source_name = "iso_user.cu";
    req.entry = "iso_user";
    req.defines = {{"BLOCK", "256"}, {"MODE", std::to_string(mode)}};
    req.arch = "sm_90a";
    auto co = (*c)->compile(req);
    if (!co.ok() && co.status().code() == Code::kUnavailable)
      KTUNE_SKIP_WITHOUT_TOOL(co.status().toString());
    EXPECT_TRUE(co.ok()) << "MODE=" << mode << ": " << co.status().toString();
  }
}


}  // namespace
}  // namespace ktune
