// ktune remote — a thin Redis connection: ktune's own RESP2 client over a TCP socket.
//
// ktune speaks the protocol itself instead of using hiredis because a remote is untrusted and
// must never stall or flood its caller: every command runs against one total deadline (connect,
// AUTH/SELECT when needed, send and the whole reply, not one timeout per read, so a server that
// trickles one byte at a time is cut off at the deadline), and a reply is refused as soon as it
// *declares* more than ConnLimits allows (a bulk of 2 GB is refused after reading its header, not
// buffered), as is nesting deeper than ConnLimits::max_depth. An I/O error, a timeout or a refused
// reply leaves the connection broken(); the caller reconnects. Not thread-safe: one thread at a
// time per connection (RemoteClient serialises).
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "base/options.h"
#include "base/status.h"

namespace ktune::remote {

// A reply of Redis.
struct Reply {
  enum class Kind { kNil, kString, kInteger, kArray, kStatus, kError };
  Kind kind = Kind::kNil;
  std::string str;  // kString, kStatus, kError
  long long integer = 0;
  std::vector<Reply> elements;
  bool nil() const { return kind == Kind::kNil; }
};

// What a reply may declare before it is refused (kUnavailable, "reply too large"). The largest
// value ktune stores is a code object (32 MiB cap, remote/cache.h) plus its metadata.
struct ConnLimits {
  size_t max_reply_bytes = 64u << 20;  // sum of the bulk strings and lines of one reply
  size_t max_elements = 1u << 18;      // sum of the array lengths of one reply
  int max_depth = 8;                   // arrays inside arrays
};

// The client's name for logs and `ktune remote ping` ("ktune RESP2 client"). Always usable.
std::string clientName();

class Connection {
 public:
  using Clock = std::chrono::steady_clock;
  // Connects before `deadline`, then AUTH (when the URL has a password) and SELECT (db != 0).
  // kUnavailable with the reason when the server cannot be reached or refuses AUTH/SELECT
  // ("remote unavailable: WRONGPASS ...").
  static Expected<std::unique_ptr<Connection>> connect(const RemoteUrl& url,
                                                       Clock::time_point deadline,
                                                       ConnLimits limits = {});
  ~Connection();
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  // Sends one command (binary-safe arguments) and reads its whole reply before `deadline`. A
  // Redis error reply is a Reply of kind kError, not a failure. kUnavailable on I/O errors,
  // the deadline, and replies over the limits (the connection is then broken()).
  Expected<Reply> command(const std::vector<std::string>& argv, Clock::time_point deadline);
  bool broken() const { return broken_; }

 private:
  Connection() = default;
  Status sendAll(const std::string& bytes, Clock::time_point deadline);
  Status fill(Clock::time_point deadline);
  Expected<std::string> line(Clock::time_point deadline);
  Expected<Reply> readReply(int depth, size_t* bytes, size_t* elements, Clock::time_point deadline);
  int fd_ = -1;
  bool broken_ = false;
  ConnLimits limits_;
  std::string where_;
  std::string buf_;  // received, not yet parsed: buf_[pos_..]
  size_t pos_ = 0;
};

}  // namespace ktune::remote
