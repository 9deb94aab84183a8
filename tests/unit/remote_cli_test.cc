// `ktune remote ping|ls|stats|push|pull` and `ktune tune --from-file F --queue URL` against a real
// redis-server (tests/unit/remote_server.h), through the built CLI.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <nlohmann/json.hpp>
#include <string>

#include "autotune/database.h"
#include "base/fs.h"
#include "base/subprocess.h"
#include "base/version.h"
#include "compiler/store/store.h"
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
  EXPECT_EQ((*CodeObjectStore::open(b))->get(co_key)->binary, "sim binary");
  EXPECT_EQ(ktune(b, {"remote", "pull", "--remote", url, "--json"}).json()["present"], 1);

  // Keys for `ktune serve`.
  ASSERT_TRUE(writeFileAtomic(dir + "/keys.jsonl",
                              "{\"family\":\"rmsnorm\",\"key\":\"k1\",\"rows\":8}\n"
                              "{\"family\":\"rmsnorm\",\"key\":\"k2\",\"rows\":16}\n")
                  .ok());
  Cli enq = ktune(a, {"tune", "--from-file", dir + "/keys.jsonl", "--queue", url, "--json"});
  ASSERT_EQ(enq.rc, 0) << enq.err;
  EXPECT_EQ(enq.json()["enqueued"], 2);
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

}  // namespace
}  // namespace ktune
