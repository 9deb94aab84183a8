// The tuning queue on a real redis-server: servers in separate processes, one killed (SIGKILL) in
// the middle of a key; every key must end up tuned exactly once and published. Each server tunes
// through the same shared-cache + lease protocol the engine uses (remote/shared.h), with a stand-in
// for the tuning itself (an atomic counter per key in Redis), so a key tuned twice is seen.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <stdexcept>
#include <string>
#include <vector>

#include "base/version.h"
#include "compiler/store/store.h"
#include "remote/cache.h"
#include "remote/queue.h"
#include "remote/shared.h"
#include "tests/unit/remote_server.h"

namespace ktune {
namespace {

using remotetest::RedisServer;

const Validator kV{KTUNE_VERSION, "sim", "sim-1", "sim", "1", "sim", "sm_90a"};

// One server process: serves the queue until drained. The victim stops forever in its first key,
// after saying so on the "victim-took" list (the test's gate), so it dies holding the key.
[[noreturn]] void runServer(const RedisServer& server, const std::string& dir, const std::string& id,
                            bool victim) {
  auto client = server.client();
  auto cache = std::make_shared<remote::RemoteCache>(client);
  remote::SharedOptions so;
  so.cache_dir = dir + "/" + id;  // its own machine
  so.lease_ms = 300;
  so.poll_ms = 5;
  auto shared = remote::makeSharedTuning(cache, so);
  auto store = *CodeObjectStore::open(so.cache_dir);
  remote::Queue q(client, "t");
  remote::ServeOptions o;
  o.server_id = id;
  o.heartbeat_ms = 50;
  o.poll_ms = 10;
  o.idle_exit_ms = 100;
  auto published = [&](const std::string& key) { return cache->getEntry("scale", kV, key).ok(); };
  Status s = remote::serve(q, o, [&](const std::string& key) -> Expected<std::string> {
    if (published(key)) return std::string("remote");
    bool waited = false;
    auto lease = shared->acquire("scale", kV, key, [&] { return published(key); }, &waited, nullptr);
    if (!lease) return std::string("waited");
    if (victim) {
      (void)client->run({"RPUSH", "victim-took", key});
      for (;;) ::pause();  // killed here, lease and key held
    }
    (void)client->run({"HINCRBY", "tuned-times", key, "1"});
    DbEntry e;
    e.key = key;
    e.winner = "BLOCK=256";
    KTUNE_RETURN_IF_ERROR(cache->putEntry("scale", kV, e));
    return std::string("tuned");
  });
  ::_exit(s.ok() ? 0 : 1);
}

TEST(RemoteQueueTest, KilledServerKeyIsRequeuedAndEveryKeyTunedOnce) {
  RedisServer server;
  KTUNE_REQUIRE_REDIS(server);
  char tmpl[] = "/tmp/ktune-queue-XXXXXX";
  std::string dir = mkdtemp(tmpl);
  auto c = server.client();
  remote::Queue q(c, "t");
  std::vector<std::string> keys;
  for (int i = 0; i < 6; ++i) keys.push_back("n=" + std::to_string(1024 << i));
  ASSERT_TRUE(q.enqueue(keys).ok());

  pid_t victim = ::fork();
  if (victim == 0) runServer(server, dir, "victim", true);
  // Gate: the victim has taken a key and stopped inside it.
  auto took = c->run({"BLPOP", "victim-took", "0.9"});
  for (int i = 0; i < 10 && took.ok() && took->nil(); ++i) took = c->run({"BLPOP", "victim-took", "0.9"});
  ASSERT_TRUE(took.ok() && took->elements.size() == 2) << "the victim never took a key";
  const std::string victim_key = took->elements[1].str;
  ::kill(victim, SIGKILL);
  ::waitpid(victim, nullptr, 0);

  std::vector<pid_t> servers;
  for (const char* id : {"a", "b"}) {
    pid_t p = ::fork();
    if (p == 0) runServer(server, dir, id, false);
    servers.push_back(p);
  }
  for (pid_t p : servers) {
    int st = 0;
    ASSERT_EQ(::waitpid(p, &st, 0), p);
    EXPECT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 0);
  }

  remote::RemoteCache cache(c);
  auto counts = c->run({"HGETALL", "tuned-times"});
  ASSERT_TRUE(counts.ok());
  std::map<std::string, std::string> times;
  for (size_t i = 0; i + 1 < counts->elements.size(); i += 2) {
    times[counts->elements[i].str] = counts->elements[i + 1].str;
  }
  for (const auto& k : keys) {
    EXPECT_EQ(times[k], "1") << k << " tuned " << times[k] << " times";
    EXPECT_TRUE(cache.getEntry("scale", kV, k).ok()) << k << " not published";
  }
  auto st = q.stats();
  ASSERT_TRUE(st.ok());
  EXPECT_EQ(st->pending, 0);
  EXPECT_EQ(st->in_progress, 0);
  EXPECT_EQ(st->counters["requeued"], 1) << "the victim's key " << victim_key;
  EXPECT_EQ(st->counters["tuned"], 6);
  auto per_item = q.tunedCounts();
  ASSERT_TRUE(per_item.ok());
  for (const auto& [item, n] : *per_item) EXPECT_EQ(n, 1) << item;
  (void)removeTree(dir);
}

// An item whose servers keep dying while they hold it (a poison item that crashes the tuning
// code) is handed out max_attempts times, then parked in the dead-letter list with the reason;
// the other items go on.
TEST(RemoteQueueTest, ItemThatKillsItsServersIsParkedAfterMaxAttempts) {
  RedisServer server;
  KTUNE_REQUIRE_REDIS(server);
  remote::Queue q(server.client(), "poison");
  ASSERT_TRUE(q.enqueue({"poison", "good"}).ok());
  for (int attempt = 1; attempt <= 3; ++attempt) {
    const std::string id = "s" + std::to_string(attempt);
    ASSERT_TRUE(q.heartbeat(id, 1).ok());  // alive for 1 ms, then "dead" holding the item
    auto item = q.take(id);
    ASSERT_TRUE(item.ok() && item->has_value());
    EXPECT_EQ(**item, "poison");
    ::usleep(20000);
    auto moved = q.requeueDead(3);
    ASSERT_TRUE(moved.ok()) << moved.status().toString();
    EXPECT_EQ(*moved, 1);
  }
  auto dead = q.deadLetters();
  ASSERT_TRUE(dead.ok());
  ASSERT_EQ(dead->size(), 1u);
  EXPECT_EQ((*dead)[0].first, "poison");
  EXPECT_NE((*dead)[0].second.find("servers died holding it"), std::string::npos) << (*dead)[0].second;
  EXPECT_NE((*dead)[0].second.find("3 time(s)"), std::string::npos) << (*dead)[0].second;
  auto st = q.stats();
  ASSERT_TRUE(st.ok());
  EXPECT_EQ(st->pending, 1);  // "good" only
  EXPECT_EQ(st->dead, 1);
  EXPECT_EQ(st->counters["requeued"], 2);
  auto next = q.take("s4");
  ASSERT_TRUE(next.ok() && next->has_value());
  EXPECT_EQ(**next, "good");
}

// A bad item (the tuning code says the item itself is invalid) and one that throws out of the
// tuning code are parked with their reasons; a failure of another kind is acked "failed" with its
// reason; the server goes on and serves the rest.
TEST(RemoteQueueTest, BadAndThrowingItemsAreParkedAndTheServerGoesOn) {
  RedisServer server;
  KTUNE_REQUIRE_REDIS(server);
  remote::Queue q(server.client(), "bad");
  ASSERT_TRUE(q.enqueue({"good-1", "invalid", "throws", "fails", "good-2"}).ok());
  remote::ServeOptions o;
  o.server_id = "only";
  o.heartbeat_ms = 50;
  o.poll_ms = 5;
  o.idle_exit_ms = 50;
  std::vector<std::string> served;
  Status s = remote::serve(q, o, [&](const std::string& item) -> Expected<std::string> {
    served.push_back(item);
    if (item == "invalid") return Status::InvalidArgument("field \"eps\" must be a number");
    if (item == "throws") throw std::runtime_error("stoll");
    if (item == "fails") return Status::Unsupported("no candidate passed");
    return std::string("tuned");
  });
  ASSERT_TRUE(s.ok()) << s.toString();
  EXPECT_EQ(served.size(), 5u);
  auto dead = q.deadLetters();
  ASSERT_TRUE(dead.ok());
  ASSERT_EQ(dead->size(), 2u);
  EXPECT_EQ((*dead)[0].first, "invalid");
  EXPECT_NE((*dead)[0].second.find("eps"), std::string::npos);
  EXPECT_EQ((*dead)[1].first, "throws");
  EXPECT_NE((*dead)[1].second.find("exception while tuning: stoll"), std::string::npos);
  auto st = q.stats();
  ASSERT_TRUE(st.ok());
  EXPECT_EQ(st->pending + st->in_progress, 0);
  EXPECT_EQ(st->counters["tuned"], 2);
  EXPECT_EQ(st->counters["failed"], 1);
  auto why = server.client()->run({"HGET", remote::keyPrefix() + "q:bad:failed", "fails"});
  ASSERT_TRUE(why.ok());
  EXPECT_NE(why->str.find("no candidate passed"), std::string::npos);
}

}  // namespace
}  // namespace ktune
