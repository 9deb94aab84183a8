// The engine with shared results on a real redis-server, across processes (remote_sim_proc: the
// simulated tuner of the engine tests with remote::makeSharedTuning): a second machine gets the
// winner and its code object with zero compiles and zero benchmark runs; Redis killed in the
// middle of a tuning run; a corrupted shared code object; N processes x keys tuned exactly once;
// a queue served by three processes, one killed inside a key.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <fcntl.h>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "base/fs.h"
#include "remote/cache.h"
#include "remote/queue.h"
#include "tests/unit/remote_server.h"

namespace ktune {
namespace {

using remotetest::RedisServer;

// One remote_sim_proc, its stdout in a file.
struct Proc {
  pid_t pid = -1;
  std::string out_path;

  static Proc start(const std::vector<std::string>& args, const std::string& out_path) {
    Proc p;
    p.out_path = out_path;
    p.pid = ::fork();
    if (p.pid == 0) {
      int fd = ::open(out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
      ::dup2(fd, 1);
      std::vector<char*> argv;
      std::string bin = KTUNE_REMOTE_SIM_PROC;
      argv.push_back(bin.data());
      std::vector<std::string> copy = args;
      for (auto& a : copy) argv.push_back(a.data());
      argv.push_back(nullptr);
      ::execv(bin.c_str(), argv.data());
      ::_exit(127);
    }
    return p;
  }
  // Exit code, or -1 after `limit_ms` (the process is then killed).
  int wait(int limit_ms = 30000) {
    auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(limit_ms);
    int st = 0;
    while (::waitpid(pid, &st, WNOHANG) == 0) {
      if (std::chrono::steady_clock::now() > deadline) {
        ::kill(pid, SIGKILL);
        ::waitpid(pid, &st, 0);
        return -1;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  }
  void kill() {
    ::kill(pid, SIGKILL);
    ::waitpid(pid, nullptr, 0);
  }
  // Its JSON lines by key.
  std::map<std::string, nlohmann::json> results() const {
    std::map<std::string, nlohmann::json> out;
    std::istringstream in(readFile(out_path).value());
    for (std::string l; std::getline(in, l);) {
      auto j = nlohmann::json::parse(l, nullptr, false);
      if (!j.is_discarded()) out[j["key"].get<std::string>()] = j;
    }
    return out;
  }
};

struct RemoteTuning : ::testing::Test {
  RedisServer server;
  std::string dir;
  void SetUp() override {
    KTUNE_REQUIRE_REDIS(server);
    char tmpl[] = "/tmp/ktune-rtune-XXXXXX";
    dir = mkdtemp(tmpl);
  }
  void TearDown() override {
    if (!dir.empty()) (void)removeTree(dir);
  }
  std::vector<std::string> args(const std::string& machine, const std::string& keys) {
    return {"--redis", server.url(), "--cache", dir + "/" + machine, "--keys", keys};
  }
  // Waits (bounded) for the first entry of a gate list.
  std::string gate(const std::string& name) {
    auto c = server.client();
    for (int i = 0; i < 20; ++i) {
      auto r = c->run({"BLPOP", name, "0.5"});
      if (r.ok() && r->elements.size() == 2) return r->elements[1].str;
    }
    return "";
  }
};

TEST_F(RemoteTuning, SecondMachineGetsWinnerAndBinaryWithoutCompilingOrBenchmarking) {
  Proc a = Proc::start(args("a", "1024,4096"), dir + "/a.out");
  ASSERT_EQ(a.wait(), 0);
  auto ra = a.results();
  ASSERT_EQ(ra.size(), 2u);
  EXPECT_EQ(ra["n=1024"]["from"], "memory");
  EXPECT_GT(ra["n=1024"]["compiled"].get<int>(), 0);

  Proc b = Proc::start(args("b", "1024,4096"), dir + "/b.out");  // empty local cache
  ASSERT_EQ(b.wait(), 0);
  for (const auto& [key, j] : b.results()) {
    EXPECT_EQ(j["from"], "remote") << key;
    EXPECT_EQ(j["compiled"], 0) << key;
    EXPECT_EQ(j["launches"], 1) << key << ": only the call itself, no benchmark run";
  }
  // Its local database now has them: a third process on machine b needs nothing remote.
  Proc b2 = Proc::start(args("b", "1024"), dir + "/b2.out");
  ASSERT_EQ(b2.wait(), 0);
  EXPECT_EQ(b2.results()["n=1024"]["from"], "database");
}

TEST_F(RemoteTuning, RedisKilledMidRunTuningCompletesLocally) {
  auto a = args("a", "1024,2048");
  a.insert(a.end(), {"--gate", "started", "--compile-delay-ms", "20", "--timeout-ms", "200"});
  Proc p = Proc::start(a, dir + "/a.out");
  ASSERT_EQ(gate("started"), "n=1024");
  server.kill();  // in the middle of the first key's tuning run
  ASSERT_EQ(p.wait(), 0);
  auto r = p.results();
  ASSERT_EQ(r.size(), 2u);
  // Both keys tuned here, although the remote died mid-run. That a dead remote costs one timeout
  // and is then skipped is asserted by counters (remote_cache_test's
  // DeadRemoteCostsOneTimeoutThenIsSkipped), not by a wall-clock bound.
  EXPECT_EQ(r["n=1024"]["from"], "memory");
  EXPECT_EQ(r["n=2048"]["from"], "memory");
}

TEST_F(RemoteTuning, CorruptedSharedBinaryIsRejectedAndTheKeyTunedLocally) {
  Proc a = Proc::start(args("a", "1024"), dir + "/a.out");
  ASSERT_EQ(a.wait(), 0);
  auto c = server.client();
  auto keys = c->run({"KEYS", remote::keyPrefix() + "o:*"});
  ASSERT_TRUE(keys.ok());
  ASSERT_EQ(keys->elements.size(), 1u);
  ASSERT_TRUE(c->run({"HSET", keys->elements[0].str, "bin", "poisoned"}).ok());
  Proc b = Proc::start(args("b", "1024"), dir + "/b.out");
  ASSERT_EQ(b.wait(), 0);
  auto r = b.results()["n=1024"];
  EXPECT_EQ(r["from"], "memory");  // not "remote": the poisoned binary never ran
  EXPECT_GT(r["compiled"].get<int>(), 0);
  EXPECT_GE(remote::RemoteCache(c).counters()->at("rejected"), 1);
}

TEST_F(RemoteTuning, ManyProcessesTuneEachKeyExactlyOnce) {
  const std::vector<std::string> orders = {"1024,2048,4096,8192,16384,32768",
                                           "32768,16384,8192,4096,2048,1024",
                                           "4096,8192,1024,32768,2048,16384"};
  std::vector<Proc> procs;
  for (int i = 0; i < 8; ++i) {
    // Machines m0..m3, two processes each: local lock and Redis lease both in play.
    auto a = args("m" + std::to_string(i % 4), orders[i % orders.size()]);
    a.insert(a.end(), {"--compile-delay-ms", "2", "--timeout-ms", "5000"});
    procs.push_back(Proc::start(a, dir + "/p" + std::to_string(i) + ".out"));
  }
  std::map<std::string, int> tuned, compiled_in;
  for (auto& p : procs) {
    ASSERT_EQ(p.wait(60000), 0);
    for (const auto& [key, j] : p.results()) {
      if (j["from"] == "memory") ++tuned[key];
      if (j["compiled"].get<int>() > 0) ++compiled_in[key];
      EXPECT_NE(j["from"], "default") << key;
    }
  }
  ASSERT_EQ(tuned.size(), 6u);
  for (const auto& [key, n] : tuned) EXPECT_EQ(n, 1) << key << " tuned " << n << " times";
  for (const auto& [key, n] : compiled_in) EXPECT_EQ(n, 1) << key << " compiled in " << n << " processes";
}

TEST_F(RemoteTuning, QueueServedByThreeOneKilledInsideAKey) {
  auto c = server.client();
  remote::Queue q(c, "suite");
  std::vector<std::string> items;
  for (int i = 0; i < 6; ++i) items.push_back("{\"family\":\"scale\",\"n\":" + std::to_string(1024 << i) + "}");
  ASSERT_TRUE(q.enqueue(items).ok());
  auto serve = [&](const std::string& id, bool victim) {
    std::vector<std::string> a = {"--redis", server.url(), "--cache", dir + "/" + id, "--serve",
                                  "suite", "--id", id, "--lease-ms", "300"};
    if (victim) a.insert(a.end(), {"--gate", "victim", "--stall"});
    return Proc::start(a, dir + "/" + id + ".out");
  };
  Proc victim = serve("victim", true);
  const std::string victim_key = gate("victim");
  ASSERT_FALSE(victim_key.empty());
  victim.kill();  // holding one key, its lease and its heartbeat
  Proc a = serve("a", false), b = serve("b", false);
  ASSERT_EQ(a.wait(60000), 0);
  ASSERT_EQ(b.wait(60000), 0);
  std::map<std::string, int> tuned;
  for (Proc* p : {&a, &b}) {
    for (const auto& [key, j] : p->results()) {
      // (a server's later keys hit its own store: the configs compile to the same binaries)
      if (j["from"] == "tuned") ++tuned[key];
      else EXPECT_EQ(j["compiled"], 0) << key << " from " << j["from"];
    }
  }
  ASSERT_EQ(tuned.size(), 6u) << "every key tuned (the victim's " << victim_key << " included)";
  for (const auto& [key, n] : tuned) EXPECT_EQ(n, 1) << key;
  auto st = q.stats();
  ASSERT_TRUE(st.ok());
  EXPECT_EQ(st->pending + st->in_progress, 0);
  EXPECT_EQ(st->counters["requeued"], 1);
  EXPECT_EQ(st->counters["tuned"], 6);
  auto per_item = q.tunedCounts();
  ASSERT_TRUE(per_item.ok());
  for (const auto& [item, n] : *per_item) EXPECT_EQ(n, 1) << item << " recorded twice";
  remote::RemoteCache cache(c);
  auto listed = cache.list("scale");
  ASSERT_TRUE(listed.ok());
  EXPECT_EQ(listed->size(), 6u);
}

}  // namespace
}  // namespace ktune
