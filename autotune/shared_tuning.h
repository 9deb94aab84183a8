// What the tuning engine asks of results shared between processes and machines: a shared cache
// of tuned entries and their code objects, and single flight (one tuner per key at a time).
// remote/ implements it (a local file lock, and Redis when KTUNE_REMOTE_CACHE is set); the engine
// only holds the interface (EngineOptions::shared), so it knows nothing of Redis.
//
// Contract for implementations: nothing here may fail a call or block it for long. A remote that
// is down, slow or returns bad data costs at most its small timeout and is then skipped for a
// while; bad or foreign data is rejected and reported in *note, never returned. Code from the
// remote is never trusted on its own word (remote/cache.h: winners are data; objects need the
// fleet's HMAC key).
// Thread safety: every method may be called from any thread.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "autotune/database.h"

namespace ktune {

class CodeObjectStore;

// Held while this process tunes a key; destroying it lets the others go on.
class TuningLease {
 public:
  virtual ~TuningLease() = default;
};

class SharedTuning {
 public:
  virtual ~SharedTuning() = default;

  // A published entry for (family, validator, key), checked (format, schema, family, validator,
  // key). Data only: its winner is a config the engine compiles and verifies itself; no code
  // object comes with it. nullopt on a miss, when no remote is configured, and on any problem
  // (*note says it).
  virtual std::optional<DbEntry> fetch(const std::string& family, const Validator& v,
                                       const std::string& key, std::string* note) = 0;

  // The code object `co_key` (the engine's own key for a winner it is about to compile) put into
  // `store`, only when the fleet shares a secret and the object authenticates under it. false
  // otherwise (no secret, a miss, a rejected object: *note says why for the last).
  virtual bool fetchObject(const std::string& co_key, CodeObjectStore& store,
                           std::string* note) = 0;

  // Publishes a finished entry (winner, every candidate's result) and, with the fleet's secret,
  // the code objects it names that `store` holds. Best effort; problems go to *note.
  virtual void publish(const std::string& family, const Validator& v, const DbEntry& e,
                       CodeObjectStore& store, std::string* note) = 0;

  // Single flight. Blocks until this process may tune the key — it then gets a lease to hold while
  // it tunes — or until `done()` returns true (another process published the key; returns null and
  // sets *waited). `done` is called every poll interval while waiting. When the holder dies its
  // lease expires and a waiter takes over; after options' lease_wait_ms a waiter tunes anyway
  // (returns a lease that excludes nobody). Never fails.
  virtual std::unique_ptr<TuningLease> acquire(const std::string& family, const Validator& v,
                                               const std::string& key,
                                               const std::function<bool()>& done, bool* waited,
                                               std::string* note) = 0;

  // One line for logs and `ktune info`: "redis://host:port/0 (ktune RESP2 client)" or "local only".
  virtual std::string describe() const = 0;
};

}  // namespace ktune
