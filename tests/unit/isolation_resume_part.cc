// A SIGKILLed tuner resumes from its partial results, isolated and in process; a worker does not
// read a binary it has loaded from the store again (part of the isolation_worker_test program:
// KTUNE_TEST_PARTS in tests/CMakeLists.txt).
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <string>
#include <thread>

#include "autotune/autotuner.h"
#include "autotune/isolation.h"
#include "base/fs.h"
#include "base/subprocess.h"
#include "compiler/sim/sim_compiler.h"
#include "tests/unit/isolation_families.h"
#include "tests/unit/isolation_test_env.h"

namespace ktune {
namespace {

using namespace isotest::env;  // NOLINT: the shared environment (isolation_test_env.h)

// Tunes iso_slow in a child process, SIGKILLs it after `done_before_kill` candidates finished,
// and checks that a rerun reuses them.
void killAndResume(bool isolate) {
  IsoEnv env;
  const int kDone = 3;
  int pfd[2];
  ASSERT_EQ(::pipe(pfd), 0);
  pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    ::close(pfd[0]);
    auto o = env.options(isolate);
    o.progress = [&](const TuneProgress& pr) {
      if (pr.phase != "bench") return;
      std::string line = std::to_string(pr.index) + "\n";
      (void)!::write(pfd[1], line.data(), line.size());
      // Past the kill point the tuner stops here until SIGKILL arrives, so it is always killed
      // mid-run (a loaded machine could otherwise let it finish before the parent reacts).
      if (pr.index > kDone)
        for (;;) ::pause();
    };
    auto t = make(env, "iso_slow", o);
    auto p = isotest::makeIsoProblem(env.backend.get(), 1000);
    (void)t.fam.tune(*p);
    ::_exit(0);
  }
  ::close(pfd[1]);
  // Progress "bench i" is sent when candidate i starts, after candidate i-1 was recorded.
  std::string buf;
  char c;
  int started = 0;
  while (started <= kDone && ::read(pfd[0], &c, 1) == 1) {
    if (c == '\n') {
      started = std::atoi(buf.c_str());
      buf.clear();
    } else {
      buf += c;
    }
  }
  ::kill(pid, SIGKILL);
  int st = 0;
  ::waitpid(pid, &st, 0);
  ::close(pfd[0]);
  ASSERT_TRUE(WIFSIGNALED(st)) << "the tuner finished before it could be killed";

  auto t = make(env, "iso_slow", env.options(isolate));
  auto p = isotest::makeIsoProblem(env.backend.get(), 1000);
  auto rep = t.fam.tune(*p);
  ASSERT_TRUE(rep.ok()) << rep.status().toString();
  EXPECT_GE(rep->resumed, kDone);
  EXPECT_LT(rep->resumed, 8);
  EXPECT_EQ(rep->winner, "BLOCK=256,MODE=5");
  for (const auto& c2 : rep->candidates) {
    EXPECT_TRUE(c2.status == Code::kOk || c2.reason.rfind("slower than best", 0) == 0)
        << c2.config << ": " << c2.reason;
  }
  if (isolate) {
    EXPECT_EQ(t.tuner->isolationStats().candidates_sent, 8 - rep->resumed);
  } else {
    // The parent's simulated backend ran only the candidates not measured before (each at least
    // once), none of the resumed ones: exactly `resumed` configs were never launched here.
    std::lock_guard<std::mutex> l(env.mu);
    int never = 0;
    for (const auto& c2 : rep->candidates) {
      const int n = env.launches.count(c2.config) ? env.launches.at(c2.config) : 0;
      never += n == 0;
    }
    EXPECT_EQ(never, rep->resumed);
    EXPECT_EQ(static_cast<int>(env.launches.size()), 8 - rep->resumed);
    for (const auto& [config, n] : env.launches) EXPECT_GE(n, 1) << config;
  }
  // Finished: partial results are gone, the entry is recorded.
  auto e = t.tuner->database("iso_slow")->lookup(rep->key);
  ASSERT_TRUE(e.has_value());
  EXPECT_EQ(e->winner, "BLOCK=256,MODE=5");
}

TEST(Isolation, SigkilledIsolatedTunerResumes) { killAndResume(true); }
TEST(Isolation, SigkilledInProcessTunerResumes) { killAndResume(false); }


// Serves one bench request for iso_good's BLOCK=256,MODE=0 (with code-object key `key`) through
// serveWorker in this process; returns the result.
CandidateResult serveOne(Engine& tu, const std::string& key) {
  int in[2], out[2];
  EXPECT_EQ(::pipe(in), 0);
  EXPECT_EQ(::pipe(out), 0);
  nlohmann::json cand{{"config", "BLOCK=256,MODE=0"}, {"source", "jit"}};
  if (!key.empty()) cand["code_object_key"] = key;
  nlohmann::json bench{{"op", "bench"}, {"family", "iso_good"}, {"key", "k"},
                       {"args", "{\"n\":1000}"}, {"best_ms", 0.0},
                       {"candidates", nlohmann::json::array({cand})}};
  const std::string req = bench.dump() + "\n";
  EXPECT_EQ(::write(in[1], req.data(), req.size()), static_cast<ssize_t>(req.size()));
  ::close(in[1]);
  std::thread th([&] {
    (void)serveWorker(tu, in[0], out[1]);
    ::close(out[1]);
  });
  std::string all;
  char buf[4096];
  for (ssize_t k; (k = ::read(out[0], buf, sizeof(buf))) > 0;) all.append(buf, size_t(k));
  th.join();
  ::close(in[0]);
  ::close(out[0]);
  std::istringstream ls(all);
  for (std::string line; std::getline(ls, line);) {
    auto j = nlohmann::json::parse(line);
    if (j.value("event", "") != "result") continue;
    auto r = candidateResultFromJson(j["result"].dump());
    EXPECT_TRUE(r.ok()) << line;
    if (r.ok()) return *r;
  }
  ADD_FAILURE() << "no result: " << all;
  return {};
}

// A binary the worker loaded before (a later race round, the finalists' rounds) is benchmarked
// without reading it from the store again: that read left the GPU idle before every JIT
// candidate's runs and before no vendor one's. Here the store is emptied between two requests: the
// second is benchmarked from the loaded binary, with no compile.
TEST(IsolationProtocol, ALoadedBinaryIsNotReadFromTheStoreAgain) {
  IsoEnv env;
  std::atomic<int> compiles{0};
  EngineOptions o = env.options(false);
  o.compiler = std::make_shared<SimCompiler>([&compiles](const CompileRequest&) {
    ++compiles;
    return SimCompileDecision{};
  });
  o.ir_compiler = o.compiler;
  auto tu = Engine::create(env.backend, o);
  ASSERT_TRUE(tu.ok()) << tu.status().toString();
  ASSERT_TRUE(addFamily(**tu, isotest::isoFamily(env.backend.get(), "iso_good",
                                                 isotest::isoFamilies()[2].second)).ok());
  const CandidateResult first = serveOne(**tu, "");
  ASSERT_EQ(first.status, Code::kOk) << first.reason;
  ASSERT_FALSE(first.code_object_key.empty());
  EXPECT_EQ(compiles.load(), 1);
  ASSERT_TRUE(removeTree(env.dir).ok());
  ASSERT_TRUE(makeDirs(env.dir).ok());
  const CandidateResult again = serveOne(**tu, first.code_object_key);
  EXPECT_EQ(again.status, Code::kOk) << again.reason;
  EXPECT_GT(again.stats.runs, 0);
  EXPECT_EQ(compiles.load(), 1);
}

// Without plugins the worker makes its context on a thread beside its compiler's load and its
// ops' registration (KTUNE_WORKER_CONTEXT=beside, the default), before them with "first": either
// way it says hello with its start-up split (the engine's mark after the context) and serves
// until EOF.
TEST(IsolationProtocol, WorkerWithoutPluginsStartsWithItsContextBesideOrFirst) {
  auto exe = findWorkerExecutable("");
  ASSERT_TRUE(exe.ok()) << exe.status().toString();
  IsoEnv env;  // its directory is the worker's cache
  const std::string& dir = env.dir;
  for (const char* mode : {"beside", "first"}) {
    SCOPED_TRACE(mode);
    ASSERT_EQ(::setenv("KTUNE_WORKER_CONTEXT", mode, 1), 0);
    auto r = runProcess({*exe, "--cache-dir", dir, "--backend", "sim"}, "", 60000);
    ::unsetenv("KTUNE_WORKER_CONTEXT");
    ASSERT_TRUE(r.ok()) << r.status().toString();
    EXPECT_EQ(r->exit_code, 0) << r->err;
    const auto nl = r->out.find('\n');
    ASSERT_NE(nl, std::string::npos) << r->out;
    auto hello = nlohmann::json::parse(r->out.substr(0, nl), nullptr, false);
    ASSERT_TRUE(hello.is_object()) << r->out;
    EXPECT_EQ(hello.value("event", ""), "hello");
    ASSERT_TRUE(hello.contains("startup_ms") && hello["startup_ms"].is_object()) << r->out;
    const auto& ms = hello["startup_ms"];
    ASSERT_TRUE(ms.contains("backend") && ms.contains("engine") && ms.contains("ops")) << r->out;
    EXPECT_LE(ms["backend"].get<double>(), ms["engine"].get<double>());
    EXPECT_LE(ms["engine"].get<double>(), ms["ops"].get<double>());
  }
}

}  // namespace
}  // namespace ktune
