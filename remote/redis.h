// ktune remote — a thin Redis connection over hiredis, opened at run time.
//
// hiredis is not linked: when its headers were present at build time (Debian libhiredis-dev), the
// library whose SONAME matches those headers is opened with dlopen on first use, so a binary runs
// on a machine without it (every remote operation then fails with kUnavailable, "hiredis not
// found", and tuning goes on locally). Without the headers at build time the remote is compiled
// out and says so the same way.
//
// Every command has a deadline (the connect and command timeout given to connect()); an I/O error
// or a timeout leaves the connection broken() and the caller reconnects. Not thread-safe: one
// thread at a time per connection (RemoteClient serialises).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "base/options.h"
#include "base/status.h"

namespace ktune::remote {

// A reply of Redis, copied out of hiredis's reply tree.
struct Reply {
  enum class Kind { kNil, kString, kInteger, kArray, kStatus, kError };
  Kind kind = Kind::kNil;
  std::string str;  // kString, kStatus, kError
  long long integer = 0;
  std::vector<Reply> elements;
  bool nil() const { return kind == Kind::kNil; }
};

// OK when hiredis can be used here; kUnavailable with the reason ("hiredis not found (...)" or
// "built without hiredis headers") otherwise. Thread-safe; opens the library once.
Status hiredisStatus();
// The library opened ("libhiredis.so.0.14"), or "" when none.
std::string hiredisLibrary();

class Connection {
 public:
  // Connects within timeout_ms, then AUTH (when the URL has a password) and SELECT (db != 0).
  // kUnavailable when hiredis is missing or the server cannot be reached, with the reason.
  static Expected<std::unique_ptr<Connection>> connect(const RemoteUrl& url, int timeout_ms);
  ~Connection();
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  // Sends one command (binary-safe arguments) and returns its reply. A Redis error reply is a
  // Reply of kind kError, not a failure. kUnavailable on I/O errors and timeouts (the connection
  // is then broken()).
  Expected<Reply> command(const std::vector<std::string>& argv);
  bool broken() const { return broken_; }

 private:
  Connection() = default;
  void* ctx_ = nullptr;  // redisContext*
  bool broken_ = false;
};

}  // namespace ktune::remote
