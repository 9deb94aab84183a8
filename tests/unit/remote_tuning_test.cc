// The engine with shared results on a real redis-server, across processes (remote_sim_proc: the
// simulated tuner of the engine tests with remote::makeSharedTuning): a second machine gets the
// winner (compiled there and verified once, or with the fleet key its authenticated object) and no
// benchmark run; the attacks (a replaced object with recomputed hashes, extra objects in
// an entry, a tampered winner config) refused or without effect; Redis killed in the middle of a
// tuning run; N processes x keys tuned exactly once; a queue served by three processes, one
// killed inside a key.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <fcntl.h>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "autotune/database.h"
#include "base/fs.h"
#include "compiler/sim/sim_compiler.h"
#include "compiler/store/store.h"
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

constexpr const char* kAttackerConfig = "BLOCK=64,VEC=1";

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
  static std::vector<std::string> withKey(std::vector<std::string> a, const std::string& key) {
    a.insert(a.end(), {"--key-file", key});
    return a;
  }
  // The fleet's HMAC key, in a file.
  std::string keyFile() {
    const std::string f = dir + "/fleet.key";
    EXPECT_TRUE(writeFileAtomic(f, "fleet-secret-0123456789", 0600).ok());
    return f;
  }
  // A kernel of the family compiled with another config's defines: on the simulated backend it
  // computes 3x when remote_sim_proc runs with --wrong kAttackerConfig.
  static CodeObject attackerObject() {
    CompileRequest req;
    req.source = "KTUNE_KERNEL void ktune_scale(long n, const float* x, float* y) {}";
    req.entry = "ktune_scale";
    req.arch = "sm_90a";
    req.defines = {{"BLOCK", "64"}, {"VEC", "1"}};
    return SimCompiler().compile(req).value();
  }
  // The remote entry of `key` ("n=1024": the problem key starts with it; family scale, the only
  // validator there).
  std::string entryKey(const std::string& key) {
    auto keys = server.client()->run({"KEYS", remote::keyPrefix() + "e:scale:*:" + key + ",*"});
    EXPECT_TRUE(keys.ok() && keys->elements.size() == 1u);
    return keys.ok() && keys->elements.size() == 1u ? keys->elements[0].str : "";
  }
  std::string winnerObjectKeyOnRemote(const std::string& key) {
    auto text = server.client()->run({"GET", entryKey(key)});
    auto j = nlohmann::json::parse(text->str, nullptr, false);
    auto e = entryFromJsonText(key, j["entry"].dump());
    return e.ok() ? remote::winnerObjectKey(*e) : "";
  }
  // Replaces the remote object `co_key` with `obj`, its metadata recomputed (sha256, bytes) as an
  // attacker would; the MAC field, if any, is left as it was.
  void plantObject(const std::string& co_key, const CodeObject& obj) {
    ASSERT_TRUE(server.client()
                    ->run({"HSET", remote::keyPrefix() + "o:" + co_key, "meta",
                           portableMetadata(co_key, obj), "bin", obj.binary})
                    .ok());
  }
  void editEntry(const std::string& key, const std::function<void(nlohmann::json&)>& edit) {
    const std::string rkey = entryKey(key);
    auto text = server.client()->run({"GET", rkey});
    ASSERT_TRUE(text.ok());
    auto j = nlohmann::json::parse(text->str);
    edit(j);
    ASSERT_TRUE(server.client()->run({"SET", rkey, j.dump()}).ok());
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

TEST_F(RemoteTuning, SecondMachineGetsTheWinnerCompilesItAndVerifiesItOnce) {
  Proc a = Proc::start(args("a", "1024,4096"), dir + "/a.out");
  ASSERT_EQ(a.wait(), 0);
  auto ra = a.results();
  ASSERT_EQ(ra.size(), 2u);
  EXPECT_EQ(ra["n=1024"]["from"], "memory");
  EXPECT_GT(ra["n=1024"]["compiled"].get<int>(), 0);
  // Without a fleet key no code object is shared: the remote carries winners only.
  auto objects = server.client()->run({"KEYS", remote::keyPrefix() + "o:*"});
  ASSERT_TRUE(objects.ok());
  EXPECT_EQ(objects->elements.size(), 0u);

  Proc b = Proc::start(args("b", "1024,4096"), dir + "/b.out");  // empty local cache
  ASSERT_EQ(b.wait(), 0);
  for (const auto& [key, j] : b.results()) {
    EXPECT_EQ(j["from"], "remote") << key;
    // The winner alone, compiled here (the second key's winner may be a store hit: a config
    // compiles to the same binary for every n).
    EXPECT_EQ(j["compiled"].get<int>(), key == "n=1024" ? 1 : j["compiled"].get<int>()) << key;
    EXPECT_LE(j["compiled"].get<int>(), 1) << key;
    EXPECT_EQ(j["launches"], 2) << key << ": one verification run and the call, no benchmark";
    EXPECT_EQ(j["correct"], true) << key;
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

TEST_F(RemoteTuning, WithTheFleetKeyTheWinnersObjectComesAuthenticated) {
  const std::string key = keyFile();
  Proc a = Proc::start(withKey(args("a", "1024"), key), dir + "/a.out");
  ASSERT_EQ(a.wait(), 0);
  Proc b = Proc::start(withKey(args("b", "1024"), key), dir + "/b.out");
  ASSERT_EQ(b.wait(), 0);
  auto r = b.results()["n=1024"];
  EXPECT_EQ(r["from"], "remote");
  EXPECT_EQ(r["compiled"], 0) << "the authenticated object is loaded, not compiled";
  EXPECT_EQ(r["launches"], 2) << "still verified once before use";
  EXPECT_EQ(r["correct"], true);
}

// The attack: the winner's code object replaced by another kernel (here: one that
// computes 3x), with binary_sha256 / binary_bytes recomputed so every integrity check passes.
// Without a key the object is never fetched; with the key its MAC fails. Either way the call runs
// the winner compiled here and its output is right.
TEST_F(RemoteTuning, ReplacedObjectWithRecomputedHashNeverRuns) {
  const std::string key = keyFile();
  Proc a = Proc::start(withKey(args("a", "1024"), key), dir + "/a.out");
  ASSERT_EQ(a.wait(), 0);
  const std::string winner = a.results()["n=1024"]["winner"];
  auto c = server.client();
  const std::string co_key = winnerObjectKeyOnRemote("n=1024");
  ASSERT_FALSE(co_key.empty());
  plantObject(co_key, attackerObject());  // meta recomputed for the new bytes; old MAC kept
  for (bool with_key : {false, true}) {
    SCOPED_TRACE(with_key ? "with the fleet key" : "without a key");
    const std::string m = with_key ? "bk" : "bn";
    auto b_args = args(m, "1024");
    b_args.insert(b_args.end(), {"--wrong", kAttackerConfig});
    if (with_key) b_args = withKey(b_args, key);
    Proc b = Proc::start(b_args, dir + "/" + m + ".out");
    ASSERT_EQ(b.wait(), 0);
    auto r = b.results()["n=1024"];
    EXPECT_EQ(r["from"], "remote");
    EXPECT_EQ(r["correct"], true) << "the attacker's kernel ran";
    EXPECT_EQ(r["ran"], winner);
    EXPECT_EQ(r["compiled"], 1) << "the winner compiled here";
    auto store = CodeObjectStore::open(dir + "/" + m);
    ASSERT_TRUE(store.ok());
    auto obj = (*store)->get(co_key);
    ASSERT_TRUE(obj.ok()) << "the winner's own object, compiled here";
    EXPECT_NE(obj->binary, attackerObject().binary);
  }
  EXPECT_GE(remote::RemoteCache(c).counters()->at("rejected"), 1) << "the MAC check refused it";
}

// An entry listing extra code objects (for other configs) plants nothing: only the object of the
// winner, under the key this process computes for it, is ever asked for.
TEST_F(RemoteTuning, ExtraCodeObjectsInAnEntryPlantNothing) {
  const std::string key = keyFile();
  Proc a = Proc::start(withKey(args("a", "1024"), key), dir + "/a.out");
  ASSERT_EQ(a.wait(), 0);
  const std::string extra(64, 'f');
  auto c = server.client();
  // Authenticated or not, an object the winner does not need must not arrive.
  remote::RemoteCache fleet(c, remote::CacheLimits{}, readFile(key).value());
  ASSERT_TRUE(fleet.putObject(extra, attackerObject()).ok());
  editEntry("n=1024", [&](nlohmann::json& e) {
    e["entry"]["code_objects"].push_back(extra);
    nlohmann::json cand = e["entry"]["candidates"][0];
    cand["config"] = kAttackerConfig;
    cand["code_object_key"] = extra;
    e["entry"]["candidates"].push_back(cand);
  });
  Proc b = Proc::start(withKey(args("b", "1024"), key), dir + "/b.out");
  ASSERT_EQ(b.wait(), 0);
  EXPECT_EQ(b.results()["n=1024"]["from"], "remote");
  auto store = CodeObjectStore::open(dir + "/b");
  ASSERT_TRUE(store.ok());
  EXPECT_EQ((*store)->get(extra).status().code(), Code::kNotFound) << "planted into the store";
  auto listed = (*store)->list();
  ASSERT_TRUE(listed.ok());
  EXPECT_EQ(listed->size(), 1u) << "the winner's object only";
  // `ktune remote pull`'s path neither: the entry it records names the winner's object alone.
  auto other = CodeObjectStore::open(dir + "/pull");
  ASSERT_TRUE(other.ok());
  auto ls = fleet.list("scale");
  ASSERT_TRUE(ls.ok());
  ASSERT_EQ(ls->size(), 1u);
  auto got = fleet.getListed((*ls)[0]);
  ASSERT_TRUE(got.ok());
  auto pulled = fleet.fetchInto("scale", got->first, (*ls)[0].key, **other);
  ASSERT_TRUE(pulled.ok()) << pulled.status().toString();
  EXPECT_EQ((*other)->get(extra).status().code(), Code::kNotFound);
  EXPECT_EQ(pulled->code_object_keys.size(), 1u);
  EXPECT_NE(pulled->code_object_keys[0], extra);
}

// A winner config tampered with on the remote (one of the family's configs, but one that computes
// the wrong result for this problem) is run and verified once before use, rejected, and the key
// tuned here; a winner outside the family's space is refused before anything is compiled.
TEST_F(RemoteTuning, TamperedWinnerConfigIsVerifiedAndRejectedBeforeUse) {
  Proc a = Proc::start(args("a", "1024,2048"), dir + "/a.out");
  ASSERT_EQ(a.wait(), 0);
  editEntry("n=1024", [](nlohmann::json& e) { e["entry"]["winner"] = kAttackerConfig; });
  editEntry("n=2048", [](nlohmann::json& e) { e["entry"]["winner"] = "BLOCK=3,VEC=1,EVIL=1"; });
  auto b_args = args("b", "1024,2048");
  b_args.insert(b_args.end(), {"--wrong", kAttackerConfig});
  Proc b = Proc::start(b_args, dir + "/b.out");
  ASSERT_EQ(b.wait(), 0);
  for (const auto& [k, r] : b.results()) {
    EXPECT_EQ(r["from"], "memory") << k << ": tuned here after the rejection";
    EXPECT_EQ(r["correct"], true) << k;
    EXPECT_NE(r["winner"], kAttackerConfig) << k;
  }
  // Its local database holds its own winners, not the tampered ones.
  auto db = TuningDatabase::open(dir + "/b/db/scale.json", Validator{}, "scale");
  ASSERT_TRUE(db.ok());
  for (const auto& [v, n] : (*db)->validators()) {
    auto mine = TuningDatabase::open(dir + "/b/db/scale.json", v, "scale");
    for (const auto& e : (*mine)->entries()) EXPECT_NE(e.winner, kAttackerConfig) << e.key;
  }
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
  std::map<std::string, int> tuned;
  for (auto& p : procs) {
    ASSERT_EQ(p.wait(60000), 0);
    for (const auto& [key, j] : p.results()) {
      if (j["from"] == "memory") ++tuned[key];
      // A process that did not tune the key compiled at most its winner (shared winners are
      // compiled and verified where they are used).
      else EXPECT_LE(j["compiled"].get<int>(), 1) << key << " from " << j["from"];
      EXPECT_NE(j["from"], "default") << key;
      EXPECT_EQ(j["correct"], true) << key;
    }
  }
  ASSERT_EQ(tuned.size(), 6u);
  for (const auto& [key, n] : tuned) EXPECT_EQ(n, 1) << key << " tuned " << n << " times";
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
