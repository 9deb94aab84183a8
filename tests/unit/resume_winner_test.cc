// Resumed candidates (issue 28): a candidate measured by a run that was killed, or by another
// process tuning the same key, is read back from the tuning journal without a binary. The
// finalists' re-timing must load it again (TuningRun::reviveResumed) so the fastest candidate
// that passed still wins, and a resumed default is re-timed as the baseline, never recorded as a
// launch error. Simulated backend, exact costs (no noise): the cost model's winner is known.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <vector>

#include "tuner_sim_env.h"

namespace ktune::tunertest {
namespace {

const char* const kDefault = "BLOCK=128,VEC=1";

// Six keys (n = 2^12 .. 2^17), each with its own fastest config; the default is second best.
const std::vector<std::pair<int64_t, std::string>>& keys() {
  static const std::vector<std::pair<int64_t, std::string>> k = {
      {1 << 12, "BLOCK=64,VEC=1"},  {1 << 13, "BLOCK=256,VEC=2"}, {1 << 14, "BLOCK=64,VEC=4"},
      {1 << 15, "BLOCK=256,VEC=4"}, {1 << 16, "BLOCK=1024,VEC=1"}, {1 << 17, "BLOCK=128,VEC=2"}};
  return k;
}

std::string fastestFor(int64_t n) {
  for (const auto& [kn, cfg] : keys())
    if (kn == n) return cfg;
  return "";
}

// The scale kernel with a per-key cost model: the key's fastest config 0.010 ms, the default
// 0.016 ms (so it is often stopped early as slower than the best, the case a resume must
// handle), everything else 0.030 ms.
void costByKey(Env& env) {
  env.backend->registerKernel(
      "ktune_scale",
      SimKernel{[](const SimLaunch& L) {
                  auto n = L.arg<int64_t>(0);
                  auto* x = static_cast<float*>(L.backend->hostPtr(L.arg<DevicePtr>(1)));
                  auto* y = static_cast<float*>(L.backend->hostPtr(L.arg<DevicePtr>(2)));
                  for (int64_t i = 0; i < n; ++i) y[i] = 2 * x[i];
                  return Status::Ok();
                },
                [](const SimLaunch& L) {
                  const std::string cfg = Env::cfgOf(*L.defines);
                  if (cfg == fastestFor(L.arg<int64_t>(0))) return 0.010;
                  return cfg == kDefault ? 0.016 : 0.030;
                },
                nullptr});
}

// What a candidate may have failed with: out of resources (the space's own BLOCK * VEC = 2048
// configs), or stopped early as slower than the best. Never a launch error or the like, which is
// what re-timing a resumed candidate without its binary recorded.
bool acceptable(const CandidateResult& c) {
  return c.status == Code::kOk || c.status == Code::kOutOfResources ||
         c.reason.rfind("slower than best", 0) == 0;
}

EngineOptions sharedOptions(Env& env, const std::string& dir) {
  EngineOptions o = env.options();
  o.options.cache_dir = dir;
  o.options.database_path = dir + "/scale.json";
  o.options.pipeline = false;  // candidates benched in a fixed order
  return o;
}

// The recorded entry of every key: the cost model's winner, and no candidate failed for another
// reason than acceptable() says (the resume must never record a launch error).
void expectExactWinners(const std::string& dir, const std::string& trial) {
  Env env;
  costByKey(env);
  auto t = Engine::create(env.backend, sharedOptions(env, dir));
  ASSERT_TRUE(t.ok()) << t.status().toString();
  auto fam = addFamily(**t, env.family());
  ASSERT_TRUE(fam.ok());
  for (const auto& [n, best] : keys()) {
    Scale p;
    p.n = n;
    auto e = (*t)->database("scale")->lookup(fam->key(p));
    ASSERT_TRUE(e.has_value()) << trial << ": n=" << n << " not recorded";
    EXPECT_EQ(e->winner, best) << trial << ": n=" << n;
    for (const auto& c : e->candidates) {
      EXPECT_TRUE(acceptable(c)) << trial << ": n=" << n << " " << c.config << ": " << codeName(c.status) << " "
          << c.reason;
    }
  }
}

// A run killed after the key's fastest config and the default were measured leaves them in the
// journal; the next run resumes both and must still choose the fastest, with the default re-timed
// as the baseline. The store is emptied in between: the resumed binaries are compiled again.
TEST(ResumeWinner, KilledRunsJournalKeepsTheExactWinner) {
  Env env;
  costByKey(env);
  const int64_t n = 1 << 12;
  const std::string best = fastestFor(n), snap = env.dir + "/snap";
  ASSERT_TRUE(makeDirs(snap).ok());
  std::set<std::string> started;
  bool snapped = false;
  auto o = sharedOptions(env, env.dir);
  o.progress = [&](const TuneProgress& pr) {
    if (pr.phase != "bench" || snapped) return;
    // "bench i" starts candidate i after candidate i-1 was recorded: once both are in `started`
    // and a third one starts, the journal holds both, as a SIGKILL here would leave it.
    if (started.count(best) && started.count(kDefault)) {
      auto text = readFile(env.dir + "/scale.json.journal");
      ASSERT_TRUE(text.ok()) << text.status().toString();
      ASSERT_TRUE(writeFileAtomic(snap + "/scale.json.journal", *text).ok());
      snapped = true;
    }
    started.insert(pr.config);
  };
  auto t1 = Engine::create(env.backend, o);
  ASSERT_TRUE(t1.ok());
  auto f1 = addFamily(**t1, env.family());
  ASSERT_TRUE(f1.ok());
  auto p = env.problem(n);
  auto rep1 = f1->tune(p);
  ASSERT_TRUE(rep1.ok()) << rep1.status().toString();
  ASSERT_TRUE(snapped) << rep1->tree();
  EXPECT_EQ(rep1->winner, best);

  auto t2 = Engine::create(env.backend, sharedOptions(env, snap));
  ASSERT_TRUE(t2.ok());
  auto f2 = addFamily(**t2, env.family());
  ASSERT_TRUE(f2.ok());
  auto rep2 = f2->tune(p);
  ASSERT_TRUE(rep2.ok()) << rep2.status().toString();
  EXPECT_GE(rep2->resumed, 2) << rep2->tree();
  EXPECT_EQ(rep2->winner, best) << rep2->tree();
  EXPECT_EQ(rep2->vs_default.baseline, kDefault) << rep2->vs_default.decision;
  EXPECT_EQ(rep2->vs_default.decision, "faster than the default");
  const CandidateResult* d = find(*rep2, kDefault);
  ASSERT_NE(d, nullptr);
  EXPECT_EQ(d->status, Code::kOk) << d->reason;
  auto e = (*t2)->database("scale")->lookup(rep2->key);
  ASSERT_TRUE(e.has_value());
  EXPECT_EQ(e->winner, best);
  for (const auto& c : e->candidates) EXPECT_TRUE(acceptable(c)) << c.config << ": " << c.reason;
}

// One child process: tunes every key (its own order), or stops for good at its `stop_at`-th
// bench event and tells the parent through `fd`, which kills it there. Every run it finishes
// must have chosen the cost model's winner with no unacceptable failure (exit code 5 if not):
// a later writer of the same key cannot hide a wrong record.
[[noreturn]] void tuneAllKeys(const std::string& dir, int which, int stop_at, int fd) {
  int code = 0;
  {
    Env env;
    costByKey(env);
    auto o = sharedOptions(env, dir);
    int benched = 0;
    o.progress = [&](const TuneProgress& pr) {
      if (pr.phase != "bench" || stop_at < 0 || ++benched < stop_at) return;
      (void)!::write(fd, "k", 1);
      for (;;) ::pause();
    };
    auto t = Engine::create(env.backend, o);
    auto fam = t.ok() ? addFamily(**t, env.family()) : Expected<Family<Scale>>(t.status());
    if (!fam.ok()) ::_exit(3);
    const size_t nk = keys().size();
    for (size_t i = 0; i < nk; ++i) {
      const int64_t n = keys()[(i + size_t(which)) % nk].first;
      auto p = env.problem(n);
      auto rep = fam->tune(p);
      if (!rep.ok()) {
        code = 4;
        continue;
      }
      bool bad = rep->winner != fastestFor(n);
      for (const auto& c : rep->candidates) bad |= !acceptable(c);
      if (bad) {
        std::fprintf(stderr, "process %d, n=%lld: winner %s (expected %s)\n%s", which,
                     static_cast<long long>(n), rep->winner.c_str(), fastestFor(n).c_str(),
                     rep->tree().c_str());
        code = 5;
      }
    }
    // Resumed candidates are not benched again: a process can finish before its stop point.
    // It says so, or the parent would wait for it forever.
    if (stop_at >= 0) (void)!::write(fd, "d", 1);
  }
  ::_exit(code);
}

pid_t spawn(const std::string& dir, int which, int stop_at, int fd) {
  pid_t pid = ::fork();
  if (pid == 0) tuneAllKeys(dir, which, stop_at, fd);
  return pid;
}

// One trial. Three processes are killed mid-run (after 10 of the 12 candidates of their first
// keys), leaving those keys' results in the journal; then 8 processes tune the 6 keys at once, each
// starting at another key (those starting at the killed ones' keys resume their results), two of
// them killed on the way; then one more process tunes every key again, resuming what those two
// left. Every run that finishes, and every key's recorded entry, must have the cost model's
// winner and no launch error.
void concurrentTrial(int trial) {
  char tmpl[] = "/tmp/ktune-resume-XXXXXX";
  const std::string dir = ::mkdtemp(tmpl);
  int pfd[2];
  ASSERT_EQ(::pipe(pfd), 0);
  // Starts processes `which` with their stop points; returns (killed, finished) once the ones to
  // kill have stopped and been killed.
  auto wave = [&](const std::vector<std::pair<int, int>>& procs, std::vector<pid_t>* killed,
                  std::vector<pid_t>* finished) {
    for (const auto& [which, stop_at] : procs) {
      pid_t pid = spawn(dir, which, stop_at, pfd[1]);
      ASSERT_GE(pid, 0);
      (stop_at >= 0 ? killed : finished)->push_back(pid);
    }
    for (size_t k = 0; k < killed->size(); ++k) {  // each stopped child says so once
      char c;
      ASSERT_EQ(::read(pfd[0], &c, 1), 1);
    }
    for (pid_t pid : *killed) ::kill(pid, SIGKILL);
  };
  auto reap = [&](const std::vector<pid_t>& pids, bool expect_killed) {
    for (pid_t pid : pids) {
      int st = 0;
      ASSERT_EQ(::waitpid(pid, &st, 0), pid);
      if (expect_killed) {  // killed, or it finished before its stop point
        EXPECT_TRUE(WIFSIGNALED(st) || (WIFEXITED(st) && WEXITSTATUS(st) == 0))
            << "trial " << trial << " status " << st;
      } else {
        EXPECT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 0) << "trial " << trial << " status " << st;
      }
    }
  };
  std::vector<pid_t> killed, finished;
  wave({{0, 11}, {2, 11}, {4, 11}}, &killed, &finished);
  reap(killed, true);
  killed.clear();
  // A run can die having measured other candidates but not the default (in pipeline order, or
  // another process's run): the default's lines are taken out of what the killed runs left, so
  // the next runs of those keys resume the fastest config while they measure the default live.
  const std::string journal = dir + "/scale.json.journal";
  auto text = readFile(journal);
  ASSERT_TRUE(text.ok()) << text.status().toString();
  std::string kept;
  std::istringstream in(*text);
  for (std::string line; std::getline(in, line);)
    if (line.find(std::string("\"config\":\"") + kDefault + "\"") == std::string::npos)
      kept += line + "\n";
  ASSERT_TRUE(writeFileAtomic(journal, kept).ok());
  wave({{0, -1}, {1, 15}, {2, -1}, {3, -1}, {4, -1}, {5, 30}, {6, -1}, {7, -1}}, &killed, &finished);
  reap(killed, true);
  reap(finished, false);
  std::vector<pid_t> last = {spawn(dir, 1, -1, pfd[1])};
  reap(last, false);
  ::close(pfd[0]);
  ::close(pfd[1]);
  expectExactWinners(dir, "trial " + std::to_string(trial));
  (void)removeTree(dir);
}

// KTUNE_RESUME_TRIALS trials (CI runs 1, a few seconds; the 20 of 20 is
// KTUNE_RESUME_TRIALS=20).
TEST(ResumeWinner, ConcurrentProcessesWithKillsRecordTheExactWinner) {
  const char* env = std::getenv("KTUNE_RESUME_TRIALS");
  const int trials = env && std::atoi(env) > 0 ? std::atoi(env) : 1;
  for (int t = 0; t < trials; ++t) {
    concurrentTrial(t);
    if (HasFatalFailure()) return;
  }
}

}  // namespace
}  // namespace ktune::tunertest
