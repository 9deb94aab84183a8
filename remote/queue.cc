#include "remote/queue.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <exception>
#include <mutex>
#include <thread>

#include "remote/cache.h"

namespace ktune::remote {

Queue::Queue(std::shared_ptr<RemoteClient> client, std::string name)
    : client_(std::move(client)), name_(std::move(name)) {}

std::string Queue::k(const std::string& suffix) const {
  return keyPrefix() + "q:" + name_ + ":" + suffix;
}

Status Queue::enqueue(const std::vector<std::string>& items) {
  if (items.empty()) return Status::Ok();
  std::vector<std::string> argv{"RPUSH", k("pending")};
  argv.insert(argv.end(), items.begin(), items.end());
  KTUNE_ASSIGN_OR_RETURN(Reply r, runChecked(*client_, argv));
  (void)r;
  (void)client_->run({"HINCRBY", k("stats"), "enqueued", std::to_string(items.size())});
  return Status::Ok();
}

Expected<std::optional<std::string>> Queue::take(const std::string& server) {
  KTUNE_ASSIGN_OR_RETURN(Reply r,
                         runChecked(*client_, {"LMOVE", k("pending"), k("proc:" + server), "LEFT", "RIGHT"}));
  if (r.nil()) return std::optional<std::string>();
  return std::optional<std::string>(r.str);
}

Status Queue::ack(const std::string& server, const std::string& item, const std::string& outcome,
                  const std::string& reason) {
  KTUNE_ASSIGN_OR_RETURN(Reply r, runChecked(*client_, {"LREM", k("proc:" + server), "1", item}));
  (void)r;
  (void)client_->run({"HINCRBY", k("stats"), outcome, "1"});
  if (outcome == "tuned") (void)client_->run({"HINCRBY", k("tuned"), item, "1"});
  if (outcome == "failed") (void)client_->run({"HSET", k("failed"), item, reason.substr(0, 2000)});
  (void)client_->run({"HDEL", k("attempts"), item});
  return Status::Ok();
}

Status Queue::bury(const std::string& server, const std::string& item, const std::string& reason) {
  KTUNE_ASSIGN_OR_RETURN(Reply r, runChecked(*client_, {"LREM", k("proc:" + server), "1", item}));
  if (r.integer == 0) return Status::Ok();  // not ours (any more): a reaper moved it
  KTUNE_ASSIGN_OR_RETURN(Reply h, runChecked(*client_, {"HSET", k("dead_reason"), item,
                                                         reason.substr(0, 2000)}));
  (void)h;
  KTUNE_ASSIGN_OR_RETURN(Reply d, runChecked(*client_, {"RPUSH", k("dead"), item}));
  (void)d;
  (void)client_->run({"HINCRBY", k("stats"), "dead", "1"});
  return Status::Ok();
}

Expected<std::vector<std::pair<std::string, std::string>>> Queue::deadLetters() {
  KTUNE_ASSIGN_OR_RETURN(Reply items, runChecked(*client_, {"LRANGE", k("dead"), "0", "-1"}));
  std::vector<std::pair<std::string, std::string>> out;
  for (const auto& it : items.elements) {
    KTUNE_ASSIGN_OR_RETURN(Reply why, runChecked(*client_, {"HGET", k("dead_reason"), it.str}));
    out.emplace_back(it.str, why.str);
  }
  return out;
}

Status Queue::heartbeat(const std::string& server, int ttl_ms) {
  KTUNE_ASSIGN_OR_RETURN(Reply r, runChecked(*client_, {"SET", k("alive:" + server), "1", "PX",
                                                         std::to_string(std::max(1, ttl_ms))}));
  (void)r;
  KTUNE_ASSIGN_OR_RETURN(Reply s, runChecked(*client_, {"SADD", k("servers"), server}));
  (void)s;
  return Status::Ok();
}

namespace {
// One item of a dead server's proc list, atomically: counted in attempts, then back to pending,
// or to the dead-letter list with its reason once it reached the limit. Returns {item, "dead"|
// "requeued"}, or nil when the list is empty.
constexpr const char* kRequeueOne =
    "local it = redis.call('rpop', KEYS[1]) "
    "if not it then return nil end "
    "local n = redis.call('hincrby', KEYS[3], it, 1) "
    "if n >= tonumber(ARGV[1]) then "
    "  redis.call('hset', KEYS[5], it, ARGV[2] .. n .. ' time(s)') "
    "  redis.call('rpush', KEYS[4], it) return {it, 'dead'} end "
    "redis.call('lpush', KEYS[2], it) return {it, 'requeued'}";
}  // namespace

Expected<int> Queue::requeueDead(int max_attempts) {
  KTUNE_ASSIGN_OR_RETURN(Reply servers, runChecked(*client_, {"SMEMBERS", k("servers")}));
  int moved = 0, dead = 0;
  for (const auto& s : servers.elements) {
    KTUNE_ASSIGN_OR_RETURN(Reply alive, runChecked(*client_, {"EXISTS", k("alive:" + s.str)}));
    if (alive.integer != 0) continue;
    for (;;) {  // one atomic move per item: two reapers never requeue an item twice
      KTUNE_ASSIGN_OR_RETURN(
          Reply m, runChecked(*client_, {"EVAL", kRequeueOne, "5", k("proc:" + s.str), k("pending"),
                                         k("attempts"), k("dead"), k("dead_reason"),
                                         std::to_string(std::max(1, max_attempts)),
                                         "servers died holding it (the last: " + s.str + "): "}));
      if (m.nil() || m.elements.size() != 2) break;
      ++moved;
      if (m.elements[1].str == "dead") ++dead;
    }
    (void)client_->run({"SREM", k("servers"), s.str});
  }
  if (moved > dead) {
    (void)client_->run({"HINCRBY", k("stats"), "requeued", std::to_string(moved - dead)});
  }
  if (dead) (void)client_->run({"HINCRBY", k("stats"), "dead", std::to_string(dead)});
  return moved;
}

Status Queue::retire(const std::string& server) {
  KTUNE_ASSIGN_OR_RETURN(Reply r, runChecked(*client_, {"SREM", k("servers"), server}));
  (void)r;
  (void)client_->run({"DEL", k("alive:" + server)});
  return Status::Ok();
}

Expected<QueueStats> Queue::stats() {
  QueueStats st;
  KTUNE_ASSIGN_OR_RETURN(Reply p, runChecked(*client_, {"LLEN", k("pending")}));
  st.pending = p.integer;
  KTUNE_ASSIGN_OR_RETURN(Reply servers, runChecked(*client_, {"SMEMBERS", k("servers")}));
  st.servers_known = int64_t(servers.elements.size());
  for (const auto& s : servers.elements) {
    KTUNE_ASSIGN_OR_RETURN(Reply n, runChecked(*client_, {"LLEN", k("proc:" + s.str)}));
    st.in_progress += n.integer;
    KTUNE_ASSIGN_OR_RETURN(Reply a, runChecked(*client_, {"EXISTS", k("alive:" + s.str)}));
    st.servers_alive += a.integer;
  }
  KTUNE_ASSIGN_OR_RETURN(Reply d, runChecked(*client_, {"LLEN", k("dead")}));
  st.dead = d.integer;
  KTUNE_ASSIGN_OR_RETURN(Reply c, runChecked(*client_, {"HGETALL", k("stats")}));
  for (size_t i = 0; i + 1 < c.elements.size(); i += 2) {
    st.counters[c.elements[i].str] = std::strtoll(c.elements[i + 1].str.c_str(), nullptr, 10);
  }
  return st;
}

Expected<std::map<std::string, int64_t>> Queue::tunedCounts() {
  KTUNE_ASSIGN_OR_RETURN(Reply c, runChecked(*client_, {"HGETALL", k("tuned")}));
  std::map<std::string, int64_t> out;
  for (size_t i = 0; i + 1 < c.elements.size(); i += 2) {
    out[c.elements[i].str] = std::strtoll(c.elements[i + 1].str.c_str(), nullptr, 10);
  }
  return out;
}

namespace {

std::string defaultServerId() {
  char host[256] = {0};
  if (::gethostname(host, sizeof(host) - 1) != 0) host[0] = '\0';
  return std::string(host[0] ? host : "host") + "-" + std::to_string(::getpid());
}

// Renews the server's heartbeat until destroyed.
class Heartbeat {
 public:
  Heartbeat(Queue& q, std::string id, int every_ms) : q_(q), id_(std::move(id)), every_(every_ms) {
    t_ = std::thread([this] {
      std::unique_lock<std::mutex> l(mu_);
      while (!cv_.wait_for(l, std::chrono::milliseconds(every_), [this] { return stop_; })) {
        (void)q_.heartbeat(id_, 3 * every_);
      }
    });
  }
  ~Heartbeat() {
    {
      std::lock_guard<std::mutex> l(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    t_.join();
  }

 private:
  Queue& q_;
  std::string id_;
  int every_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  std::thread t_;
};

// One taken item: tuned and acked, or parked with its reason; whatever the item holds, the server
// goes on (an exception out of the tuning code is the item's fault, not the server's end).
void serveOne(Queue& q, const ServeOptions& o, const std::string& id, const std::string& text,
              const std::function<Expected<std::string>(const std::string& item)>& tune) {
  Expected<std::string> outcome = Status::Internal("not run");
  bool threw = false;
  try {
    outcome = tune(text);
  } catch (const std::exception& e) {
    outcome = Status::Internal(std::string("exception while tuning: ") + e.what());
    threw = true;
  } catch (...) {
    outcome = Status::Internal("unknown exception while tuning");
    threw = true;
  }
  const bool bad_item = !outcome.ok() && outcome.status().code() == Code::kInvalidArgument;
  std::string what = outcome.ok() ? *outcome : (threw || bad_item) ? "dead" : "failed";
  if (o.log) {
    *o.log << "ktune serve " << id << ": " << what << " " << text.substr(0, 500)
           << (outcome.ok() ? "" : " (" + outcome.status().toString() + ")") << "\n";
  }
  if (what == "dead") (void)q.bury(id, text, outcome.status().toString());
  else (void)q.ack(id, text, what, outcome.ok() ? "" : outcome.status().toString());
}

}  // namespace

Status serve(Queue& q, const ServeOptions& o,
             const std::function<Expected<std::string>(const std::string& item)>& tune,
             const std::atomic<bool>* stop) {
  const std::string id = o.server_id.empty() ? defaultServerId() : o.server_id;
  const int every = std::max(10, o.heartbeat_ms);
  KTUNE_RETURN_IF_ERROR(q.heartbeat(id, 3 * every).withContext("ktune serve: queue " + q.name()));
  Heartbeat hb(q, id, every);
  using Clock = std::chrono::steady_clock;
  auto idle_since = Clock::now();
  while (!(stop && stop->load())) {
    auto item = q.take(id);
    if (item.ok() && item->has_value()) {
      serveOne(q, o, id, **item, tune);
      idle_since = Clock::now();
      continue;
    }
    // Idle (or the remote is unreachable for now): give dead servers' items back, then wait.
    if (item.ok()) {
      auto moved = q.requeueDead(o.max_attempts);
      if (moved.ok() && *moved > 0) {
        if (o.log) *o.log << "ktune serve " << id << ": requeued " << *moved << " item(s) of dead servers\n";
        idle_since = Clock::now();
        continue;
      }
    }
    if (o.idle_exit_ms >= 0) {
      // Drained means nothing pending and nothing held by any server (a dead one's items come
      // back once its heartbeat lapses).
      auto st = q.stats();
      if (!st.ok() || st->pending > 0 || st->in_progress > 0) idle_since = Clock::now();
      else if (Clock::now() - idle_since >= std::chrono::milliseconds(o.idle_exit_ms)) break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(std::max(1, o.poll_ms)));
  }
  return q.retire(id);
}

}  // namespace ktune::remote
