// The shared cache on a real redis-server (tests/unit/remote_server.h): round trip of entries and
// code objects, rejection of corrupted, oversized and foreign data, the circuit breaker, leases.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <future>
#include <thread>

#include "base/options.h"
#include "base/version.h"
#include "compiler/store/store.h"
#include "remote/cache.h"
#include "remote/shared.h"
#include "tests/unit/remote_server.h"

namespace ktune {
namespace {

using remote::Reply;
using remotetest::RedisServer;

TEST(RemoteUrlTest, Parses) {
  auto u = parseRemoteUrl("redis://alice:s3cret@cache.example:6380/2");
  ASSERT_TRUE(u.ok()) << u.status().toString();
  EXPECT_EQ(u->user, "alice");
  EXPECT_EQ(u->password, "s3cret");
  EXPECT_EQ(u->host, "cache.example");
  EXPECT_EQ(u->port, 6380);
  EXPECT_EQ(u->db, 2);
  EXPECT_EQ(u->display(), "redis://alice@cache.example:6380/2");  // never the password
  auto d = parseRemoteUrl("redis://localhost");
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d->port, 6379);
  EXPECT_EQ(d->db, 0);
  for (const char* bad : {"http://x:1/0", "redis://:6379/0", "redis://h:99999/0", "redis://h:1/x",
                          "redis://h:1/16"}) {
    EXPECT_EQ(parseRemoteUrl(bad).status().code(), Code::kInvalidArgument) << bad;
  }
}

struct Fixture : ::testing::Test {
  RedisServer server;
  std::string dir;
  std::shared_ptr<CodeObjectStore> store;
  Validator v{KTUNE_VERSION, "sim", "sim-1", "sim", "1", "sim H100-like", "sm_90a"};

  void SetUp() override {
    KTUNE_REQUIRE_REDIS(server);
    char tmpl[] = "/tmp/ktune-remote-XXXXXX";
    dir = mkdtemp(tmpl);
    store = *CodeObjectStore::open(dir + "/a");
  }
  void TearDown() override {
    if (!dir.empty()) (void)removeTree(dir);
  }
  // Single flight for a tuner whose local cache is `cache_dir`, polling every 5 ms.
  std::shared_ptr<SharedTuning> sharedTuning(const std::string& cache_dir) {
    remote::SharedOptions so;
    so.cache_dir = cache_dir;
    so.lease_ms = 5000;
    so.poll_ms = 5;
    return remote::makeSharedTuning(std::make_shared<remote::RemoteCache>(server.client()), so);
  }
  static CodeObject object(const std::string& bytes) {
    CodeObject o;
    o.binary = bytes;
    o.format = "sim";
    o.arch = "sm_90a";
    o.entry = "k";
    o.compiler = "sim";
    o.resources.registers = 40;
    return o;
  }
  DbEntry entry(const std::string& key, const std::string& co_key) {
    DbEntry e;
    e.key = key;
    e.winner = "BLOCK=256";
    e.winner_stats.median_ms = 0.5;
    e.code_object_keys = {co_key};
    CandidateResult c;
    c.config = "BLOCK=256";
    c.code_object_key = co_key;
    c.stats.median_ms = 0.5;
    e.candidates.push_back(c);
    c.config = "BLOCK=128";
    c.status = Code::kCompileError;
    c.reason = "bad tile";
    e.candidates.push_back(c);
    return e;
  }
};

constexpr const char* kFleetKey = "fleet-secret-0123456789";

TEST_F(Fixture, RoundTripIntoAnEmptyStore) {
  remote::RemoteCache cache(server.client(), remote::CacheLimits{}, kFleetKey);
  const std::string co_key(64, 'a');
  ASSERT_TRUE(store->put(co_key, object("binary-bytes\0with-nul")).ok());
  ASSERT_TRUE(cache.publishFrom("scale", v, entry("n=1024", co_key), *store).ok());

  auto other = *CodeObjectStore::open(dir + "/b");  // a second machine: empty local store
  auto e = cache.fetchInto("scale", v, "n=1024", *other);
  ASSERT_TRUE(e.ok()) << e.status().toString();
  EXPECT_EQ(e->winner, "BLOCK=256");
  ASSERT_EQ(e->candidates.size(), 2u);
  EXPECT_EQ(e->candidates[1].status, Code::kCompileError);
  auto got = other->get(co_key);
  ASSERT_TRUE(got.ok()) << got.status().toString();
  EXPECT_EQ(got->binary, object("binary-bytes\0with-nul").binary);
  EXPECT_EQ(got->resources.registers, 40);

  EXPECT_EQ(cache.getEntry("scale", v, "n=2048").status().code(), Code::kNotFound);
  Validator other_gpu = v;
  other_gpu.device_name = "another GPU";
  EXPECT_EQ(cache.getEntry("scale", other_gpu, "n=1024").status().code(), Code::kNotFound);
  auto ls = cache.list();
  ASSERT_TRUE(ls.ok());
  ASSERT_EQ(ls->size(), 1u);
  EXPECT_EQ((*ls)[0].family, "scale");
  EXPECT_EQ((*ls)[0].key, "n=1024");
  auto listed = cache.getListed((*ls)[0]);  // what `ktune remote pull` mirrors
  ASSERT_TRUE(listed.ok()) << listed.status().toString();
  EXPECT_EQ(listed->first, v);
  EXPECT_EQ(listed->second.winner, "BLOCK=256");
  EXPECT_EQ(cache.counters()->at("published"), 1);
  EXPECT_EQ(cache.counters()->at("fetched"), 1);
}

// A replaced binary is refused by its MAC whether or not the attacker recomputed the metadata's
// sha256 and size (they come from the same untrusted place); the entry stays usable as data.
TEST_F(Fixture, ReplacedObjectIsRejectedByItsMac) {
  remote::RemoteCache cache(server.client(), remote::CacheLimits{}, kFleetKey);
  const std::string co_key(64, 'b');
  ASSERT_TRUE(store->put(co_key, object("good")).ok());
  ASSERT_TRUE(cache.publishFrom("scale", v, entry("n=1", co_key), *store).ok());
  auto c = server.client();
  const std::string okey = remote::keyPrefix() + "o:" + co_key;
  for (bool recompute : {false, true}) {
    SCOPED_TRACE(recompute ? "metadata recomputed" : "binary only");
    if (recompute) {
      ASSERT_TRUE(c->run({"HSET", okey, "meta", portableMetadata(co_key, object("evil"))}).ok());
    }
    ASSERT_TRUE(c->run({"HSET", okey, "bin", "evil"}).ok());
    auto other = *CodeObjectStore::open(dir + (recompute ? "/c" : "/b"));
    std::string note;
    auto e = cache.fetchInto("scale", v, "n=1", *other, &note);
    ASSERT_TRUE(e.ok()) << e.status().toString();
    EXPECT_TRUE(e->code_object_keys.empty());
    EXPECT_NE(note.find("not authenticated"), std::string::npos) << note;
    EXPECT_EQ(cache.getObject(co_key).status().code(), Code::kCorrupt);
    EXPECT_FALSE(other->get(co_key).ok());  // nothing poisoned reached the local store
  }
  // Another key (another fleet) cannot authenticate it either.
  ASSERT_TRUE(cache.putObject(co_key, object("good")).ok());
  remote::RemoteCache foreign(c, remote::CacheLimits{}, "another-fleet-0123456789");
  EXPECT_EQ(foreign.getObject(co_key).status().code(), Code::kCorrupt);
  EXPECT_TRUE(cache.getObject(co_key).ok());
  EXPECT_GE(cache.counters()->at("rejected"), 3);
}

// Without the fleet's key the remote carries winners only: no object is pushed, none fetched.
TEST_F(Fixture, WithoutAKeyNoCodeObjectMoves) {
  remote::RemoteCache cache(server.client());
  const std::string co_key(64, 'd');
  ASSERT_TRUE(store->put(co_key, object("bytes")).ok());
  ASSERT_TRUE(cache.publishFrom("scale", v, entry("n=2", co_key), *store).ok());
  auto objects = server.client()->run({"KEYS", remote::keyPrefix() + "o:*"});
  ASSERT_TRUE(objects.ok());
  EXPECT_TRUE(objects->elements.empty());
  EXPECT_EQ(cache.putObject(co_key, object("bytes")).code(), Code::kUnsupported);
  EXPECT_EQ(cache.getObject(co_key).status().code(), Code::kUnsupported);
  auto other = *CodeObjectStore::open(dir + "/b");
  auto e = cache.fetchInto("scale", v, "n=2", *other);
  ASSERT_TRUE(e.ok()) << e.status().toString();
  EXPECT_EQ(e->winner, "BLOCK=256");
  EXPECT_TRUE(e->code_object_keys.empty());
  EXPECT_FALSE(other->get(co_key).ok());
}

TEST_F(Fixture, OversizedObjectIsNeitherPushedNorFetched) {
  remote::CacheLimits small;
  small.max_object_bytes = 8;
  remote::RemoteCache capped(server.client(), small, kFleetKey),
      cache(server.client(), remote::CacheLimits{}, kFleetKey);
  const std::string co_key(64, 'c');
  EXPECT_EQ(capped.putObject(co_key, object("0123456789")).code(), Code::kInvalidArgument);
  ASSERT_TRUE(cache.putObject(co_key, object("0123456789")).ok());
  auto got = capped.getObject(co_key);
  EXPECT_EQ(got.status().code(), Code::kCorrupt);
  EXPECT_NE(got.status().message().find("size cap"), std::string::npos);
}

TEST_F(Fixture, ForeignSchemaAndMalformedEntriesAreRejected) {
  remote::RemoteCache cache(server.client());
  const std::string rkey =
      remote::keyPrefix() + "e:scale:" + remote::validatorHash(v) + ":n=8";
  auto c = server.client();
  auto put = [&](const std::string& text) { ASSERT_TRUE(c->run({"SET", rkey, text}).ok()); };
  const std::string entry_json = entryToJsonText(entry("n=8", std::string(64, 'd')));
  const std::string mine = validatorToJsonText(v);
  Validator other_gpu = v;
  other_gpu.device_name = "someone else";
  put(R"({"format":"ktune-remote-entry","schema":999,"family":"scale","key":"n=8","validator":)" +
      mine + R"(,"entry":)" + entry_json + "}");
  auto e = cache.getEntry("scale", v, "n=8");
  EXPECT_EQ(e.status().code(), Code::kCorrupt);
  EXPECT_NE(e.status().message().find("foreign schema"), std::string::npos) << e.status().toString();
  put(R"({"format":"ktune-remote-entry","schema":)" + std::to_string(KTUNE_SCHEMA_VERSION) +
      R"(,"family":"scale","key":"n=8","validator":)" + validatorToJsonText(other_gpu) +
      R"(,"entry":)" + entry_json + "}");
  EXPECT_NE(cache.getEntry("scale", v, "n=8").status().message().find("another validator"),
            std::string::npos);
  put("{not json");
  EXPECT_EQ(cache.getEntry("scale", v, "n=8").status().code(), Code::kCorrupt);
  put(R"({"format":"ktune-remote-entry","schema":)" + std::to_string(KTUNE_SCHEMA_VERSION) +
      R"(,"family":"scale","key":"n=8","validator":)" + mine + R"(,"entry":{"winner":7}})");
  EXPECT_EQ(cache.getEntry("scale", v, "n=8").status().code(), Code::kCorrupt);
  EXPECT_EQ(cache.counters()->at("rejected"), 4);
  // A key whose family would climb out of the cache directory when pulled is never listed.
  put("{}");
  ASSERT_TRUE(c->run({"SET", remote::keyPrefix() + "e:../../evil:0123456789abcdef:k", "{}"}).ok());
  auto ls = cache.list();
  ASSERT_TRUE(ls.ok());
  ASSERT_EQ(ls->size(), 1u);
  EXPECT_EQ((*ls)[0].family, "scale");
}

TEST_F(Fixture, DeadRemoteCostsOneTimeoutThenIsSkipped) {
  auto c = server.client(/*cooldown_ms=*/60000);
  ASSERT_TRUE(c->run({"PING"}).ok());
  server.kill();
  EXPECT_EQ(c->run({"PING"}).status().code(), Code::kUnavailable);
  EXPECT_TRUE(c->breakerOpen());
  for (int i = 0; i < 100; ++i) EXPECT_EQ(c->run({"GET", "x"}).status().code(), Code::kUnavailable);
  // One bounded failure, then no further attempt: the counters say so, whatever the machine's
  // load (no wall-clock bound).
  EXPECT_EQ(c->stats().failures, 1);
  EXPECT_EQ(c->stats().skipped, 100);
  remote::RemoteCache cache(c);
  EXPECT_EQ(cache.getEntry("scale", v, "n=1").status().code(), Code::kUnavailable);
}

TEST_F(Fixture, LeaseExcludesOthersUntilReleased) {
  auto a = sharedTuning(dir);
  // The second tuner is "another machine": its own cache directory, so only Redis excludes it.
  auto b = sharedTuning(dir + "/b");
  bool waited = false;
  auto held = a->acquire("scale", v, "n=1", [] { return false; }, &waited, nullptr);
  ASSERT_NE(held, nullptr);
  EXPECT_FALSE(waited);
  std::atomic<bool> published{false};
  std::promise<void> polled;
  std::atomic<int> polls{0};
  auto other = std::async(std::launch::async, [&] {
    bool w = false;
    auto l = b->acquire("scale", v, "n=1",
                        [&] {
                          if (++polls == 2) polled.set_value();
                          return published.load();
                        },
                        &w, nullptr);
    return std::make_pair(l == nullptr, w);
  });
  polled.get_future().wait();  // b is waiting on a's lease
  published = true;
  held.reset();
  auto [got_result, w] = other.get();
  EXPECT_TRUE(got_result);  // it saw the published result instead of tuning
  EXPECT_TRUE(w);
}

TEST_F(Fixture, ExpiredLeaseOfADeadHolderIsTakenOver) {
  auto a = sharedTuning(dir);
  // A holder that died: its lease exists with a short life and nobody renews it.
  const std::string lkey =
      remote::keyPrefix() + "l:scale:" + remote::validatorHash(v) + ":n=3";
  ASSERT_TRUE(server.client()->run({"SET", lkey, "dead-holder", "PX", "150"}).ok());
  bool waited = false;
  auto l = a->acquire("scale", v, "n=3", [] { return false; }, &waited, nullptr);
  ASSERT_NE(l, nullptr);
  EXPECT_TRUE(waited);
  auto holder = server.client()->run({"GET", lkey});
  ASSERT_TRUE(holder.ok());
  EXPECT_NE(holder->str, "dead-holder");  // ours now
  l.reset();
  EXPECT_TRUE(server.client()->run({"GET", lkey})->nil());  // released on destruction
}

}  // namespace
}  // namespace ktune
