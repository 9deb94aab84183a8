// A SIGKILLed tuner resumes from its partial results, isolated and in process (part of the
// isolation_worker_test program: KTUNE_TEST_PARTS in tests/CMakeLists.txt).
#include <gtest/gtest.h>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <string>
#include <thread>

#include "autotune/autotuner.h"
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

}  // namespace
}  // namespace ktune
