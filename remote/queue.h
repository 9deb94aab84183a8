// ktune remote — a distributed tuning queue on Redis (`ktune tune --queue`, `ktune serve`).
//
// Keys under ktune:<schema>:q:<name>:
//   pending            list of items (untuned-key JSON lines, as KTUNE_RECORD_UNTUNED writes)
//   proc:<server>      list of the items a server has taken and not yet acknowledged
//   alive:<server>     heartbeat, expires after 3 heartbeats unless renewed
//   servers            set of servers that ever took an item and did not retire
//   stats              counters: enqueued, tuned, remote, local, failed, requeued
//   tuned              hash item -> times a server reported it "tuned" (at most 1 when healthy)
//   failed             hash item -> why its last attempt failed (acked "failed": not retried)
//   attempts           hash item -> times a server died holding it
//   dead               list of parked items (the dead-letter list), never handed out again:
//                      invalid items (a field of the wrong type or out of range), items that
//                      threw out of the tuning code, and items whose servers died holding them
//                      ServeOptions::max_attempts times (a poison item that crashes servers)
//   dead_reason        hash item -> why it was parked
// take() moves an item from pending to the server's proc list atomically (LMOVE), ack() removes
// it. A server whose heartbeat lapsed is dead: requeueDead() moves its proc list back to pending
// (atomically per item), so every item is delivered at least once — until it has cost
// max_attempts servers their lives, when it is parked in the dead-letter list instead. Tuning the same key twice is
// prevented above the queue: the server resolves each key through the shared cache and the lease
// (remote/shared.h), so a requeued key that was already published is not tuned again.
// Thread-safe (the client serialises commands).
#pragma once

#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "remote/client.h"

namespace ktune::remote {

struct QueueStats {
  int64_t pending = 0, in_progress = 0, servers_alive = 0, servers_known = 0, dead = 0;
  std::map<std::string, int64_t> counters;  // enqueued, tuned, remote, local, failed, requeued
};

class Queue {
 public:
  Queue(std::shared_ptr<RemoteClient> client, std::string name = "default");

  Status enqueue(const std::vector<std::string>& items);
  // The next item, now on this server's proc list; nullopt when the queue is empty.
  Expected<std::optional<std::string>> take(const std::string& server);
  // Removes a taken item from the server's proc list and counts the outcome ("tuned", "remote",
  // "local", "waited", "failed"); `reason` (for "failed") goes into the failed hash.
  Status ack(const std::string& server, const std::string& item, const std::string& outcome,
             const std::string& reason = "");
  // Moves a taken item from the server's proc list to the dead-letter list with `reason`.
  Status bury(const std::string& server, const std::string& item, const std::string& reason);
  // The dead-letter list: (item, reason), oldest first.
  Expected<std::vector<std::pair<std::string, std::string>>> deadLetters();
  // Marks the server alive for ttl_ms.
  Status heartbeat(const std::string& server, int ttl_ms);
  // Moves the items of servers whose heartbeat lapsed back to pending, or to the dead-letter list
  // once servers died holding one max_attempts times; returns how many were moved.
  Expected<int> requeueDead(int max_attempts = 3);
  // A clean exit: forgets the server (its proc list must be empty).
  Status retire(const std::string& server);
  Expected<QueueStats> stats();
  // How many times each item was reported "tuned".
  Expected<std::map<std::string, int64_t>> tunedCounts();
  const std::string& name() const { return name_; }

 private:
  std::string k(const std::string& suffix) const;
  std::shared_ptr<RemoteClient> client_;
  std::string name_;
};

struct ServeOptions {
  std::string server_id;    // default: <hostname>-<pid>
  int heartbeat_ms = 1000;  // the heartbeat lives 3 times this long
  int poll_ms = 200;        // idle wait between looks at an empty queue
  int idle_exit_ms = -1;    // exit once the queue stayed drained this long; -1: serve forever
  int max_attempts = 3;     // servers that may die holding an item before it is parked
  std::ostream* log = nullptr;
};

// Serves `q` until *stop (when given) becomes true or the idle limit passes: takes an item, calls
// tune(item) -> outcome ("tuned", "remote", "local", "waited") or an error, acks it. An error of
// kInvalidArgument (the item itself is bad) or an exception thrown by tune parks the item in the
// dead-letter list with the reason, and the server goes on; any other error acks it "failed" with
// its reason. Requeues dead servers' items while idle. Fails only when the remote cannot be
// reached at start.
Status serve(Queue& q, const ServeOptions& o,
             const std::function<Expected<std::string>(const std::string& item)>& tune,
             const std::atomic<bool>* stop = nullptr);

}  // namespace ktune::remote
