// Compiles in helper processes (autotune/compile_workers.h, Options::compile_processes) on the
// simulated compiler: the same code objects and errors as in this process, at most N workers, a
// worker that dies or cannot start costs only an in-process compile, and a tuning run through the
// workers picks what an in-process one picks.
#include <gtest/gtest.h>

#include <signal.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <thread>
#include <vector>

#include "autotune/compile_workers.h"
#include "compiler/sim/sim_compiler.h"
#include "tests/unit/isolation_families.h"
#include "tests/unit/isolation_test_env.h"

namespace ktune {
namespace {

using namespace isotest::env;  // NOLINT: the shared environment (isolation_test_env.h)

CompileRequest request(int i) {
  CompileRequest r;
  r.source = "// kernel " + std::to_string(i);
  r.source_name = "k.cu";
  r.entry = "kern";
  r.arch = "sim_1";
  r.defines = {{"BLOCK", std::to_string(64 << (i % 4))}, {"I", std::to_string(i)}};
  r.options = {"-DX=1"};
  return r;
}

void expectSame(const CodeObject& a, const CodeObject& b) {
  EXPECT_EQ(a.binary, b.binary);
  EXPECT_EQ(a.format, b.format);
  EXPECT_EQ(a.entry, b.entry);
  EXPECT_EQ(a.lowered_entry, b.lowered_entry);
  EXPECT_EQ(a.compiler, b.compiler);
  EXPECT_EQ(a.compiler_version, b.compiler_version);
  EXPECT_EQ(a.options, b.options);
  EXPECT_EQ(a.resources.registers, b.resources.registers);
  EXPECT_EQ(a.resources.shared_bytes, b.resources.shared_bytes);
  EXPECT_EQ(a.log, b.log);
}

TEST(CompileWorkers, SameCodeObjectsAndErrorsAsInProcess) {
  auto inner = std::make_shared<SimCompiler>();
  ProcessCompiler pc(inner, KTUNE_WORKER_PATH, "sim_1", 2);
  for (int i = 0; i < 3; ++i) {
    auto here = inner->compile(request(i));
    auto there = pc.compile(request(i));
    ASSERT_TRUE(here.ok() && there.ok()) << there.status().toString();
    expectSame(*there, *here);
  }
  CompileRequest bad = request(0);
  bad.entry.clear();
  auto here = inner->compile(bad);
  auto there = pc.compile(bad);
  ASSERT_FALSE(there.ok());
  EXPECT_EQ(there.status().code(), here.status().code());
  EXPECT_EQ(there.status().message(), here.status().message());
  const auto s = pc.stats();
  EXPECT_EQ(s.started, 1) << "one compile at a time needs one worker";
  EXPECT_EQ(s.compiled, 4);
  EXPECT_EQ(s.in_process, 0) << s.last_failure;
  EXPECT_EQ(pc.name(), "sim");
  EXPECT_EQ(pc.version(), inner->version());
}

TEST(CompileWorkers, ParallelCompilesUseAtMostTheirWorkers) {
  auto inner = std::make_shared<SimCompiler>();
  ProcessCompiler pc(inner, KTUNE_WORKER_PATH, "sim_1", 3);
  std::atomic<int> bad{0};
  std::vector<std::thread> ts;
  for (int t = 0; t < 8; ++t) {
    ts.emplace_back([&, t] {
      for (int i = 0; i < 4; ++i) {
        auto r = pc.compile(request(t * 4 + i));
        auto want = inner->compile(request(t * 4 + i));
        if (!r.ok() || !want.ok() || r->binary != want->binary) ++bad;
      }
    });
  }
  for (auto& t : ts) t.join();
  EXPECT_EQ(bad.load(), 0);
  const auto s = pc.stats();
  EXPECT_GE(s.started, 1);  // a worker starts when a request finds every worker busy
  EXPECT_LE(s.started, 3);
  EXPECT_EQ(s.compiled, 32);
  EXPECT_EQ(s.in_process, 0) << s.last_failure;
}

// A compile from a thread at a higher nice value (the CLI's look-ahead: 10) runs in a worker at that
// value, one from the main thread in a worker at the main thread's: each nice value has its own workers, up to the maximum each, so
// a background compile neither outranks the key being tuned nor holds the worker it needs.
TEST(CompileWorkers, ARequestRunsAtItsThreadsNiceValue) {
  errno = 0;
  const int own = ::getpriority(PRIO_PROCESS, static_cast<id_t>(::syscall(SYS_gettid)));
  const int lower = std::min(own + 5, 19);
  if (errno != 0 || lower == own) GTEST_SKIP() << "this thread's nice value cannot be raised";
  auto inner = std::make_shared<SimCompiler>();
  ProcessCompiler pc(inner, KTUNE_WORKER_PATH, "sim_1", 1);
  ASSERT_TRUE(pc.compile(request(0)).ok());
  std::thread background([&] {
    ASSERT_EQ(::setpriority(PRIO_PROCESS, static_cast<id_t>(::syscall(SYS_gettid)), lower), 0);
    ASSERT_TRUE(pc.compile(request(1)).ok());
  });
  background.join();
  ASSERT_TRUE(pc.compile(request(2)).ok());
  const auto s = pc.stats();
  ASSERT_EQ(s.pids.size(), 2u) << "one worker per nice value";
  EXPECT_EQ(s.compiled, 3);
  errno = 0;
  EXPECT_EQ(::getpriority(PRIO_PROCESS, static_cast<id_t>(s.pids[0])), own);
  EXPECT_EQ(::getpriority(PRIO_PROCESS, static_cast<id_t>(s.pids[1])), lower);
  EXPECT_EQ(errno, 0);
}

// Dumps need the compiler's views, other languages the IR tools: both stay in this process.
TEST(CompileWorkers, DumpsAndModulesCompileInProcess) {
  auto inner = std::make_shared<SimCompiler>();
  ProcessCompiler pc(inner, KTUNE_WORKER_PATH, "sim_1", 2);
  CompileRequest r = request(1);
  r.dumps = kDumpSource;
  ASSERT_TRUE(pc.compile(r).ok());
  EXPECT_EQ(pc.stats().in_process, 1);
  EXPECT_EQ(pc.stats().started, 0);
}

TEST(CompileWorkers, ADeadWorkerCostsOneInProcessCompile) {
  auto inner = std::make_shared<SimCompiler>();
  ProcessCompiler pc(inner, KTUNE_WORKER_PATH, "sim_1", 1);
  ASSERT_TRUE(pc.compile(request(0)).ok());
  ASSERT_EQ(pc.stats().pids.size(), 1u);
  ::kill(pc.stats().pids[0], SIGKILL);
  auto r = pc.compile(request(1));
  ASSERT_TRUE(r.ok()) << r.status().toString();
  EXPECT_EQ(r->binary, inner->compile(request(1))->binary);
  EXPECT_EQ(pc.stats().in_process, 1);
  EXPECT_FALSE(pc.stats().last_failure.empty());
  ASSERT_TRUE(pc.compile(request(2)).ok());  // a fresh worker takes the next one
  EXPECT_EQ(pc.stats().started, 2);
  EXPECT_EQ(pc.stats().compiled, 2);
}

TEST(CompileWorkers, AMissingWorkerCompilesEverythingInProcess) {
  auto inner = std::make_shared<SimCompiler>();
  ProcessCompiler pc(inner, "/nonexistent/ktune-worker", "sim_1", 4);
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(pc.compile(request(i)).ok());
  EXPECT_EQ(pc.stats().started, 0);
  EXPECT_EQ(pc.stats().in_process, 3);
  EXPECT_NE(pc.stats().last_failure.find("cannot start"), std::string::npos) << pc.stats().last_failure;
}

// A program that is not a compile worker (an older ktune-worker without --compile: it exits at
// its arguments) fails its first request: the workers are turned off, not restarted per compile.
TEST(CompileWorkers, AWorkerThatNeverAnswersTurnsTheWorkersOff) {
  auto inner = std::make_shared<SimCompiler>();
  ProcessCompiler pc(inner, "/bin/false", "sim_1", 4);
  for (int i = 0; i < 5; ++i) {
    auto r = pc.compile(request(i));
    ASSERT_TRUE(r.ok()) << r.status().toString();
    EXPECT_EQ(r->binary, inner->compile(request(i))->binary);
  }
  EXPECT_EQ(pc.stats().started, 1);
  EXPECT_EQ(pc.stats().compiled, 0);
  EXPECT_EQ(pc.stats().in_process, 5);
}

// A worker answering with another compiler version would store objects under this compiler's
// keys: after the first such answer every compile stays here.
TEST(CompileWorkers, AnotherCompilerVersionIsNotUsed) {
  auto inner = std::make_shared<SimCompiler>(nullptr, "2");
  ProcessCompiler pc(inner, KTUNE_WORKER_PATH, "sim_1", 2);
  for (int i = 0; i < 3; ++i) {
    auto r = pc.compile(request(i));
    ASSERT_TRUE(r.ok());
    EXPECT_EQ(r->compiler_version, "2");
  }
  EXPECT_EQ(pc.stats().compiled, 0);
  EXPECT_EQ(pc.stats().in_process, 3);
}

// The tuner with Options::compile_processes: the same winner and compiled count as in process,
// the compiles answered by workers.
TEST(CompileWorkers, ATuningRunThroughWorkersPicksTheSame) {
  std::string winner[2];
  int compiled[2] = {0, 0};
  for (int procs = 0; procs < 2; ++procs) {
    IsoEnv env;
    EngineOptions o = env.options(false);
    o.options.compile_processes = procs == 1;
    auto t = make(env, "iso_good", std::move(o));
    auto p = isotest::makeIsoProblem(env.backend.get(), 1000);
    auto rep = t.fam.tune(*p);
    ASSERT_TRUE(rep.ok()) << rep.status().toString() << "\n" << env.log.str();
    winner[procs] = rep->winner;
    compiled[procs] = rep->compiled;
    if (procs == 1) {
      EXPECT_GT(rep->compile_jobs.processes, 0);
      EXPECT_EQ(rep->compile_jobs.in_workers, rep->compiled);
    } else {
      EXPECT_EQ(rep->compile_jobs.processes, 0);
    }
  }
  EXPECT_EQ(winner[1], winner[0]);
  EXPECT_EQ(compiled[1], compiled[0]);
}

// The workers start with the first compile, not with the engine: a run whose code objects are all
// in the store (a warm store, a fresh database) compiles nothing and starts no worker.
TEST(CompileWorkers, ARunThatCompilesNothingStartsNoWorker) {
  IsoEnv env;
  for (int run = 0; run < 2; ++run) {
    EngineOptions o = env.options(false);
    o.options.compile_processes = true;
    o.options.database_path = env.dir + "/db" + std::to_string(run) + ".json";
    auto t = make(env, "iso_good", std::move(o));
    auto p = isotest::makeIsoProblem(env.backend.get(), 1000);
    auto rep = t.fam.tune(*p);
    ASSERT_TRUE(rep.ok()) << rep.status().toString() << "\n" << env.log.str();
    if (run == 0) {
      EXPECT_GT(rep->compiled, 0);
      EXPECT_GT(rep->compile_jobs.processes, 0);
    } else {
      EXPECT_EQ(rep->compiled, 0) << "every code object is in the store";
      EXPECT_EQ(rep->compile_jobs.processes, 0) << "no compile, no worker";
    }
  }
}

}  // namespace
}  // namespace ktune
