// ktune remote — a Redis client that never fails or stalls its caller for long.
//
// RemoteClient owns one connection (made lazily, remade after an error). Every command is bounded
// by one total deadline of timeout_ms (reconnect, AUTH, send and the whole reply together) and by
// the reply limits (remote/redis.h). A failure (unreachable, timeout, I/O error, oversized reply,
// and an authentication error: NOAUTH / WRONGPASS / NOPERM replies are failures, "remote
// unavailable: NOAUTH ...", never data) opens the circuit breaker, and for
// cooldown_ms afterwards every command fails at once with kUnavailable naming the first error, so
// a dead or slow remote costs one timeout per cooldown, not one per call. Counters say what
// happened (shown by `ktune remote stats` and `ktune info`).
// Thread-safe: commands are serialised on one internal mutex.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "base/options.h"
#include "remote/redis.h"

namespace ktune::remote {

struct ClientOptions {
  RemoteUrl url;
  int timeout_ms = 250;     // total deadline of one command (connect included)
  ConnLimits limits;        // what one reply may declare
  int cooldown_ms = 30000;  // how long the breaker stays open after a failure
};

struct ClientStats {
  int64_t commands = 0;  // sent and answered
  int64_t failures = 0;  // connect errors, timeouts, I/O errors
  int64_t skipped = 0;   // refused at once while the breaker was open
  std::string last_error;
};

class RemoteClient {
 public:
  explicit RemoteClient(ClientOptions o);
  // From Options::remote_cache / remote_timeout_ms; kInvalidArgument for a bad URL.
  static Expected<std::shared_ptr<RemoteClient>> fromOptions(const Options& o);

  // One command. A Redis error reply comes back as Reply::Kind::kError (the connection stays
  // usable). kUnavailable when the breaker is open or the remote failed now (breaker then opens).
  Expected<Reply> run(const std::vector<std::string>& argv);
  // Closes the breaker (used by `ktune remote ping`, which must ask even after a failure).
  void resetBreaker();
  bool breakerOpen() const;
  ClientStats stats() const;
  const ClientOptions& options() const { return o_; }

 private:
  using Clock = std::chrono::steady_clock;
  ClientOptions o_;
  mutable std::mutex mu_;
  std::unique_ptr<Connection> conn_;
  Clock::time_point open_until_{};
  std::string open_reason_;
  ClientStats stats_;
};

// A reply refusing the client's credentials (NOAUTH, WRONGPASS, NOPERM): run() turns it into a
// kUnavailable failure.
bool isAuthError(const Reply& r);

// Text of a reply for messages ("(nil)", the string, the integer, "[3 elements]").
std::string describe(const Reply& r);

}  // namespace ktune::remote
