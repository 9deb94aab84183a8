// `ktune remote ping|ls|stats|push|pull` and `ktune tune --from-file F --queue URL` against a real
// redis-server (tests/unit/remote_server.h), through the built CLI.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <future>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "autotune/database.h"
#include "base/fs.h"
#include "base/subprocess.h"
#include "base/version.h"
#include "compiler/store/store.h"
#include "remote/cache.h"
#include "remote/queue.h"
#include "tests/unit/remote_server.h"

namespace ktune {
namespace {

using remotetest::RedisServer;

struct Cli {
  int rc = -1;
  std::string out, err;
  nlohmann::json json() const { return nlohmann::json::parse(out, nullptr, false); }
};

Cli ktune(const std::string& cache, std::vector<std::string> args) {
  ::setenv("KTUNE_CACHE_DIR", cache.c_str(), 1);
  args.insert(args.begin(), KTUNE_CLI_PATH);
  auto r = runProcess(args, "", 30000);
  Cli c;
  if (!r.ok()) return c;
  c.rc = r->exit_code;
  c.out = r->out;
  c.err = r->err;
  return c;
}

TEST(RemoteCliTest, PingPushLsPullStatsAndEnqueue) {
  RedisServer server;
  KTUNE_REQUIRE_REDIS(server);
  char tmpl[] = "/tmp/ktune-rcli-XXXXXX";
  const std::string dir = mkdtemp(tmpl);
  const std::string a = dir + "/a", b = dir + "/b", url = server.url();
  ::unsetenv("KTUNE_REMOTE_CACHE");

  Cli ping = ktune(a, {"remote", "ping", "--remote", url, "--json"});
  ASSERT_EQ(ping.rc, 0) << ping.err;
  EXPECT_EQ(ping.json()["reply"], "PONG");

  // Machine a has one tuned entry and its code object.
  Validator v{KTUNE_VERSION, "sim", "sim-1", "sim", "1", "sim H100-like", "sm_90a"};
  const std::string co_key(64, 'e');
  {
    auto store = CodeObjectStore::open(a);
    ASSERT_TRUE(store.ok());
    CodeObject o;
    o.binary = "sim binary";
    o.format = "sim";
    ASSERT_TRUE((*store)->put(co_key, o).ok());
    auto db = TuningDatabase::open(joinPath(joinPath(a, "db"), "scale.json"), v, "scale");
    ASSERT_TRUE(db.ok());
    DbEntry e;
    e.key = "n=1024";
    e.winner = "BLOCK=256";
    e.code_object_keys = {co_key};
    ASSERT_TRUE((*db)->record(e).ok());
  }
  Cli push = ktune(a, {"remote", "push", "--remote", url, "--json"});
  ASSERT_EQ(push.rc, 0) << push.err;
  EXPECT_EQ(push.json()["pushed"], 1);
  Cli ls = ktune(a, {"remote", "ls", "scale", "--remote", url, "--json"});
  ASSERT_EQ(ls.rc, 0) << ls.err;
  ASSERT_EQ(ls.json().size(), 1u);
  EXPECT_EQ(ls.json()[0]["key"], "n=1024");

  // Machine b mirrors it without a GPU.
  Cli pull = ktune(b, {"remote", "pull", "--remote", url, "--json"});
  ASSERT_EQ(pull.rc, 0) << pull.err;
  EXPECT_EQ(pull.json()["pulled"], 1);
  auto db = TuningDatabase::open(joinPath(joinPath(b, "db"), "scale.json"), v, "scale");
  ASSERT_TRUE(db.ok());
  auto e = (*db)->lookup("n=1024");
  ASSERT_TRUE(e.has_value());
  EXPECT_EQ(e->winner, "BLOCK=256");
  // Without a fleet key the remote carries winners only: the entry is data, marked to be verified
  // on first use, and no code object came with it.
  EXPECT_TRUE(e->unverified);
  EXPECT_TRUE(e->code_object_keys.empty());
  EXPECT_EQ((*CodeObjectStore::open(b))->get(co_key).status().code(), Code::kNotFound);
  EXPECT_EQ(ktune(b, {"remote", "pull", "--remote", url, "--json"}).json()["present"], 1);
  // `db verify` lists what runs on trust: the pulled entry, not yet checked by a run here (a note,
  // not a problem: exit 0).
  Cli verify = ktune(b, {"db", "verify"});
  ASSERT_EQ(verify.rc, 0) << verify.err;
  EXPECT_NE(verify.out.find("1 UNVERIFIED"), std::string::npos) << verify.out;

  // Keys for `ktune serve`.
  ASSERT_TRUE(writeFileAtomic(dir + "/keys.jsonl",
                              "{\"family\":\"rmsnorm_bf16\",\"key\":\"k1\",\"rows\":8,\"cols\":512}\n"
                              "{\"family\":\"rmsnorm_bf16\",\"key\":\"k2\",\"rows\":16,\"cols\":512}\n"
                              "{\"family\":\"rmsnorm_bf16\",\"key\":\"k3\",\"rows\":-4,\"cols\":512}\n")
                  .ok());
  // The third line is checked as a server would check it and is never shared: reported by its
  // number, the rest enqueued.
  Cli enq = ktune(a, {"tune", "--from-file", dir + "/keys.jsonl", "--queue", url, "--json"});
  ASSERT_EQ(enq.rc, 0) << enq.err;
  EXPECT_EQ(enq.json()["enqueued"], 2);
  EXPECT_EQ(enq.json()["rejected"], 1);
  EXPECT_NE(enq.err.find("line 3 not enqueued"), std::string::npos) << enq.err;
  EXPECT_NE(enq.err.find("rows"), std::string::npos) << enq.err;
  Cli stats = ktune(a, {"remote", "stats", "--remote", url, "--json"});
  ASSERT_EQ(stats.rc, 0) << stats.err;
  EXPECT_EQ(stats.json()["queue"]["pending"], 2);
  EXPECT_EQ(stats.json()["cache"]["published"], 1);

  // A remote that is down: exit code 3 (unavailable), named, fast.
  server.kill();
  Cli down = ktune(a, {"remote", "ping", "--remote", url});
  EXPECT_EQ(down.rc, 3);
  EXPECT_NE(down.err.find("127.0.0.1"), std::string::npos) << down.err;
  ::unsetenv("KTUNE_CACHE_DIR");
  (void)removeTree(dir);
}

// Issue 28's poison item: three `ktune serve` (on the simulated GPU) share a queue holding good
// row-wise keys and bad items (a wrongly typed field, a negative stride, a problem too large to
// allocate). Every server stays alive and exits 0, the bad items are in the dead-letter list with
// their reasons, and every good item is tuned exactly once.
TEST(RemoteCliTest, PoisonItemsAreParkedAndThreeServersSurvive) {
  RedisServer server;
  KTUNE_REQUIRE_REDIS(server);
  char tmpl[] = "/tmp/ktune-rpoison-XXXXXX";
  const std::string dir = mkdtemp(tmpl);
  auto item = [](int cols, const std::string& extra) {
    return "{\"family\":\"rmsnorm_bf16\",\"dtype\":\"bf16\",\"rows\":8,\"cols\":" +
           std::to_string(cols) + ",\"weight\":true" + extra + "}";
  };
  const std::vector<std::string> good = {item(256, ""), item(512, ""), item(1024, ""),
                                         item(2048, "")};
  const std::vector<std::string> bad = {item(768, ",\"eps\":\"x\""),
                                        item(768, ",\"x_stride\":-4"),
                                        "{\"family\":\"rmsnorm_bf16\",\"dtype\":\"bf16\","
                                        "\"rows\":65536,\"cols\":65536}"};
  remote::Queue q(server.client(), "poison");
  std::vector<std::string> all = {good[0], bad[0], good[1], bad[1], good[2], bad[2], good[3]};
  ASSERT_TRUE(q.enqueue(all).ok());
  std::vector<std::future<Expected<ProcessResult>>> servers;
  for (int i = 0; i < 3; ++i) {
    const std::string id = "server" + std::to_string(i);
    std::vector<std::string> argv = {"env", "KTUNE_CACHE_DIR=" + dir + "/" + id,
                                     "KTUNE_BACKEND=sim", "KTUNE_ISOLATE=",
                                     "KTUNE_REMOTE_TIMEOUT_MS=2000", KTUNE_CLI_PATH, "serve",
                                     "--queue", server.url(), "--queue-name", "poison", "--id", id,
                                     "--exit-when-empty"};
    servers.push_back(std::async(std::launch::async, [argv] { return runProcess(argv, "", 120000); }));
  }
  for (auto& f : servers) {
    auto r = f.get();
    ASSERT_TRUE(r.ok()) << r.status().toString();
    EXPECT_FALSE(r->signaled) << r->err;
    EXPECT_EQ(r->exit_code, 0) << r->err;
  }
  auto dead = q.deadLetters();
  ASSERT_TRUE(dead.ok());
  ASSERT_EQ(dead->size(), bad.size());
  std::map<std::string, std::string> reason(dead->begin(), dead->end());
  EXPECT_NE(reason[bad[0]].find("eps"), std::string::npos) << reason[bad[0]];
  EXPECT_NE(reason[bad[1]].find("x_stride"), std::string::npos) << reason[bad[1]];
  EXPECT_NE(reason[bad[2]].find("MiB"), std::string::npos) << reason[bad[2]];
  auto tuned = q.tunedCounts();
  ASSERT_TRUE(tuned.ok());
  for (const auto& g : good) EXPECT_EQ((*tuned)[g], 1) << g;
  EXPECT_EQ(tuned->size(), good.size());
  auto st = q.stats();
  ASSERT_TRUE(st.ok());
  EXPECT_EQ(st->pending + st->in_progress, 0);
  (void)removeTree(dir);
}

// `ktune remote ping` means something: 0 only for a PONG; a server that wants a password it was
// not given is "remote unavailable: NOAUTH", exit 3.
TEST(RemoteCliTest, PingExitCodeSaysNoAuth) {
  RedisServer server("s3cret-pass");
  KTUNE_REQUIRE_REDIS(server);
  char tmpl[] = "/tmp/ktune-rping-XXXXXX";
  const std::string dir = mkdtemp(tmpl);
  ::unsetenv("KTUNE_REMOTE_CACHE");
  Cli denied = ktune(dir, {"remote", "ping", "--remote", server.urlWithoutPassword()});
  EXPECT_EQ(denied.rc, 3) << denied.out << denied.err;
  EXPECT_NE(denied.err.find("remote unavailable: NOAUTH"), std::string::npos) << denied.err;
  Cli ok = ktune(dir, {"remote", "ping", "--remote", server.url()});
  EXPECT_EQ(ok.rc, 0) << ok.err;
  ::unsetenv("KTUNE_CACHE_DIR");
  (void)removeTree(dir);
}

// `ktune cache verify` tells an unauthenticated foreign object: an object fetched from the shared
// cache keeps the fleet's MAC, which verify checks again under the key; one planted with a MAC
// that does not verify (or checked under another fleet's key) is reported and exits 4.
TEST(RemoteCliTest, CacheVerifyTellsAnUnauthenticatedForeignObject) {
  RedisServer server;
  KTUNE_REQUIRE_REDIS(server);
  char tmpl[] = "/tmp/ktune-rverify-XXXXXX";
  const std::string dir = mkdtemp(tmpl);
  const std::string secret = "fleet-secret-0123456789", key_file = dir + "/fleet.key",
                    other_file = dir + "/other.key";
  ASSERT_TRUE(writeFileAtomic(key_file, secret, 0600).ok());
  ASSERT_TRUE(writeFileAtomic(other_file, "another-fleet-0123456789", 0600).ok());
  CodeObject o;
  o.binary = "sim binary";
  o.format = "sim";
  const std::string fetched(64, 'a'), planted(64, 'b');
  remote::RemoteCache fleet(server.client(), remote::CacheLimits{}, secret);
  ASSERT_TRUE(fleet.putObject(fetched, o).ok());
  auto store = CodeObjectStore::open(dir + "/cache");
  ASSERT_TRUE(store.ok());
  ASSERT_TRUE(fleet.fetchObjectInto(fetched, **store).ok());
  ::unsetenv("KTUNE_REMOTE_CACHE");
  ::setenv("KTUNE_REMOTE_KEY_FILE", key_file.c_str(), 1);
  Cli clean = ktune(dir + "/cache", {"cache", "verify", "--json"});
  EXPECT_EQ(clean.rc, 0) << clean.out << clean.err;
  CodeObject evil = o;
  evil.binary = "attacker";
  evil.shared_mac = std::string(64, '0');
  ASSERT_TRUE((*store)->put(planted, evil).ok());
  Cli bad = ktune(dir + "/cache", {"cache", "verify", "--json"});
  EXPECT_EQ(bad.rc, 4) << bad.out << bad.err;
  ASSERT_EQ(bad.json()["corrupt"].size(), 1u) << bad.out;
  EXPECT_EQ(bad.json()["corrupt"][0]["key"], planted);
  EXPECT_NE(bad.out.find("unauthenticated foreign object"), std::string::npos) << bad.out;
  ::setenv("KTUNE_REMOTE_KEY_FILE", other_file.c_str(), 1);
  EXPECT_EQ(ktune(dir + "/cache", {"cache", "verify", "--json"}).json()["corrupt"].size(), 2u);
  ::unsetenv("KTUNE_REMOTE_KEY_FILE");
  ::unsetenv("KTUNE_CACHE_DIR");
  (void)removeTree(dir);
}

}  // namespace
}  // namespace ktune
