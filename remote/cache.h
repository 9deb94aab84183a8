// ktune remote — the shared tuning cache on Redis.
//
// Trust: everything on the remote is written by whoever can reach it, so nothing read from it is
// code ktune runs unless the fleet's secret vouches for it.
//  - Entries are data: a winner config and its stats. The engine compiles the winner itself (a
//    store hit when it has it) and verifies its output once before first use (autotune/
//    shared_stage.cc); a config outside the family's space is refused.
//  - Code objects move only with a fleet key (Options::remote_key): each is stored with an
//    HMAC-SHA256 over (its key, metadata, binary); one whose MAC does not verify is rejected
//    before it reaches the local store. The sha256 in an object's metadata is an integrity check
//    only (it comes from the same place as the object). Without a key no object is pushed or
//    fetched, and only ever the winner's own object is (never other objects an entry lists).
//
// Layout (every key under "ktune:<schema>:", so ktune versions with another schema never read
// each other's data):
//   e:<family>:<validator hash>:<problem key>   string: {"format":"ktune-remote-entry","schema",
//                                               "family","validator":{...},"key","entry":{...}}
//                                               (validator and entry as in the database file)
//   o:<code-object key>                         hash: meta (store metadata JSON), bin (binary),
//                                               mac (hex HMAC-SHA256, see objectMac)
//   stats                                       hash of counters (published, fetched, rejected...)
// The validator hash is the first 16 hex digits of sha256(Validator::id()): an entry is found only
// by a process with the same device, driver, compiler and ktune version, and the full validator
// id inside the value is compared again. Objects larger than CacheLimits::max_object_bytes are
// neither pushed nor fetched. Anything that fails a check is rejected (kCorrupt with the reason,
// counted in "rejected").
// Thread-safe (the client serialises commands).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "autotune/database.h"
#include "compiler/compiler.h"
#include "remote/client.h"

namespace ktune {
class CodeObjectStore;
}

namespace ktune::remote {

struct CacheLimits {
  size_t max_object_bytes = 32u << 20;
  size_t max_entry_bytes = 4u << 20;
  size_t max_objects_per_entry = 8;
};

struct RemoteEntryInfo {
  std::string family, validator_hash, key;
};

// "ktune:<schema>:" — the prefix of every key ktune writes.
std::string keyPrefix();
std::string validatorHash(const Validator& v);
// A family name as Engine::add accepts it ([A-Za-z0-9_.-]+, a safe file name).
bool validFamilyName(const std::string& f);

// The MAC of a shared code object: HMAC-SHA256 keyed by the fleet's secret over the length-prefixed
// fields ("ktune-remote-object-v1", co_key, metadata, binary), as 64 hex characters.
std::string objectMac(const std::string& secret, const std::string& co_key,
                      const std::string& metadata, const std::string& binary);

// The MAC an object fetched from the shared cache keeps in the local store (CodeObject::
// shared_mac): HMAC-SHA256 under the fleet's secret over ("ktune-store-object-v1", co_key,
// binary). `ktune cache verify` recomputes it to tell a foreign object that was not authenticated.
std::string storedObjectMac(const std::string& secret, const std::string& co_key,
                            const std::string& binary);

class RemoteCache {
 public:
  // `secret`: the fleet key (Options::remote_key); empty = winners only, no code objects.
  explicit RemoteCache(std::shared_ptr<RemoteClient> client, CacheLimits limits = {},
                       std::string secret = "");

  // kNotFound on a miss; kCorrupt for data that fails a check (foreign schema or validator,
  // malformed JSON, another key); kUnavailable when the remote cannot be asked.
  Expected<DbEntry> getEntry(const std::string& family, const Validator& v, const std::string& key);
  Status putEntry(const std::string& family, const Validator& v, const DbEntry& e);
  // An entry found by list(), with the validator it was tuned under (for `ktune remote pull`).
  Expected<std::pair<Validator, DbEntry>> getListed(const RemoteEntryInfo& info);
  // An authenticated object. kUnsupported without a secret; kNotFound; kCorrupt (no MAC,
  // a MAC that does not verify, sha256/size/metadata mismatch, over the size cap); kUnavailable.
  Expected<CodeObject> getObject(const std::string& co_key);
  // kUnsupported without a secret; kInvalidArgument over the size cap.
  Status putObject(const std::string& co_key, const CodeObject& obj);
  // The object `co_key` into `store` unless it is there: OK when it is there now.
  Status fetchObjectInto(const std::string& co_key, CodeObjectStore& store);
  bool hasSecret() const { return !secret_.empty(); }

  // Entry plus, with a secret, the winner's own code object (the candidate whose config is the
  // winner; other objects the entry lists are ignored) put into `store`. An object that cannot be
  // had or authenticated leaves the entry usable as data (the winner is compiled locally);
  // *note says why. `ktune remote pull` uses this.
  Expected<DbEntry> fetchInto(const std::string& family, const Validator& v,
                              const std::string& key, CodeObjectStore& store,
                              std::string* note = nullptr);
  // With a secret, the winner's objects that `store` holds (and the remote lacks); then the entry.
  Status publishFrom(const std::string& family, const Validator& v, const DbEntry& e,
                     CodeObjectStore& store);

  // Entries under this schema (SCAN; family "" = all), sorted.
  Expected<std::vector<RemoteEntryInfo>> list(const std::string& family = "");
  // Counters of the "stats" hash.
  Expected<std::map<std::string, int64_t>> counters();
  // Adds to a counter (best effort).
  void count(const std::string& field, int64_t n = 1);

  RemoteClient& client() { return *client_; }
  std::shared_ptr<RemoteClient> sharedClient() const { return client_; }

 private:
  Expected<std::pair<Validator, DbEntry>> readEntry(const std::string& rkey,
                                                    const std::string& family,
                                                    const std::string& key);
  std::shared_ptr<RemoteClient> client_;
  CacheLimits limits_;
  std::string secret_;
};

// The code-object key of the entry's winner as the entry itself names it (the winner candidate's
// code_object_key), or "" when it names none.
std::string winnerObjectKey(const DbEntry& e);

// Runs a command and turns an error reply into kInternal (for callers that need a value).
Expected<Reply> runChecked(RemoteClient& c, const std::vector<std::string>& argv);

}  // namespace ktune::remote
