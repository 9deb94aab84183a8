// `ktune tune` reads the shared cache first (a real redis-server on a loopback port): machine A
// tunes GEMM and RMSNorm keys on the simulated GPU and publishes them; machine B, with an empty
// cache, gets every winner and its candidates from Redis as data — no compile (no compile progress
// event, nothing in its store), no benchmark (no bench progress event).
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "base/fs.h"
#include "compiler/store/store.h"
#include "tests/unit/cli_fixture.h"
#include "tests/unit/remote_server.h"

namespace ktune {
namespace {

using remotetest::RedisServer;

// The JSON documents `ktune tune --json` printed (one per key).
std::vector<nlohmann::json> reports(const std::string& out) {
  std::vector<nlohmann::json> v;
  std::istringstream in(out);
  for (;;) {
    nlohmann::json j;
    try {
      in >> j;
    } catch (const std::exception&) {
      break;
    }
    v.push_back(std::move(j));
  }
  return v;
}

// Code objects of tuning candidates in the store. The L2 flush's read kernel is not one: the row-wise
// report's copy-bandwidth peer flushes before its runs, and the flush kernel is kept in the store
// like any code object (autotune/l2_flush_store.h).
size_t storeEntries(const std::string& cache) {
  auto s = CodeObjectStore::open(cache);
  if (!s.ok()) return 0;
  auto l = (*s)->list();
  if (!l.ok()) return 0;
  size_t n = 0;
  for (const auto& e : *l) n += e.entry == "ktune_flush_read" ? 0 : 1;
  return n;
}

using RemoteWarm = Cli;

TEST_F(RemoteWarm, TuneTakesPublishedKeysWithoutCompilingOrBenchmarking) {
  RedisServer server;
  KTUNE_REQUIRE_REDIS(server);
  const std::string a = root_ + "/a", b = root_ + "/b";
  // KTUNE_REMOTE_TIMEOUT_MS: a loaded CI box must not skip the remote.
  const std::vector<std::string> env = {"KTUNE_BACKEND=sim", "KTUNE_REMOTE_CACHE=" + server.url(),
                                        "KTUNE_REMOTE_TIMEOUT_MS=2000", "KTUNE_ISOLATE="};
  const std::vector<std::vector<std::string>> cmds = {
      {"tune", "gemm", "--m", "64", "--n", "96", "--k", "128", "--kinds", "mma", "--json"},
      {"tune", "gemm", "--m", "16", "--n", "256", "--k", "64", "--kinds", "mma,skinny", "--json"},
      {"tune", "rmsnorm", "--rows", "32", "--cols", "512", "--json"}};
  std::vector<nlohmann::json> tuned;
  for (const auto& c : cmds) {
    CliRun r = ktune(c, a, env);
    ASSERT_EQ(r.code, 0) << r.err;
    auto js = reports(r.out);
    ASSERT_EQ(js.size(), 1u) << r.out;
    EXPECT_EQ(js[0]["from"], "tuned");
    // Built here or found in this machine's store (the second GEMM key's configs are the first's
    // code objects; inapplicable ones are refused before compiling).
    EXPECT_GT(js[0]["compiled"].get<int>() + js[0]["store_hits"].get<int>(), 0);
    tuned.push_back(js[0]);
  }
  ASSERT_GT(storeEntries(a), cmds.size());

  for (size_t i = 0; i < cmds.size(); ++i) {
    SCOPED_TRACE(cmds[i][1]);
    CliRun r = ktune(cmds[i], b, env);  // a fresh machine: empty cache
    ASSERT_EQ(r.code, 0) << r.err;
    auto js = reports(r.out);
    ASSERT_EQ(js.size(), 1u) << r.out;
    EXPECT_EQ(js[0]["from"], "remote");
    EXPECT_EQ(js[0]["compiled"], 0);
    EXPECT_EQ(js[0]["winner"], tuned[i]["winner"]);
    EXPECT_EQ(js[0]["winner_median_ms"], tuned[i]["winner_median_ms"]);
    EXPECT_EQ(js[0]["candidates"].size(), tuned[i]["candidates"].size());
    // The engine's own progress events (JSON lines on stderr): nothing compiled or benchmarked.
    EXPECT_EQ(r.err.find("\"phase\":\"compile\""), std::string::npos) << r.err;
    EXPECT_EQ(r.err.find("\"phase\":\"bench\""), std::string::npos) << r.err;
    // A shared winner is data: `ktune tune` reports it without compiling or storing anything (the
    // first real call compiles and verifies it).
    EXPECT_EQ(storeEntries(b), 0u);
  }
  // Without the remote, `ktune tune` on B tunes (it does not mistake its mirrored entry for a run).
  CliRun r = ktune({"tune", "rmsnorm", "--rows", "32", "--cols", "512", "--json"}, b,
                   {"KTUNE_BACKEND=sim", "KTUNE_REMOTE_CACHE="});
  ASSERT_EQ(r.code, 0) << r.err;
  auto js = reports(r.out);
  ASSERT_EQ(js.size(), 1u) << r.out << r.err;
  EXPECT_EQ(js[0]["from"], "tuned");
}

}  // namespace
}  // namespace ktune
