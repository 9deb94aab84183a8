// ktune remote — the shared tuning cache on Redis.
//
// Layout (every key under "ktune:<schema>:", so ktune versions with another schema never read
// each other's data):
//   e:<family>:<validator hash>:<problem key>   string: {"format":"ktune-remote-entry","schema",
//                                               "family","validator":{...},"key","entry":{...}}
//                                               (validator and entry as in the database file)
//   o:<code-object key>                         hash: meta (store metadata JSON), bin (binary)
//   stats                                       hash of counters (published, fetched, rejected...)
// The validator hash is the first 16 hex digits of sha256(Validator::id()): an entry is found only
// by a process with the same device, driver, compiler and ktune version, and the full validator
// id inside the value is compared again. Code objects are content-addressed by the store's key
// and checked on fetch against the sha256 and size in their metadata (compiler/store); objects
// larger than CacheLimits::max_object_bytes are neither pushed nor fetched.
// Anything that fails a check is rejected (kCorrupt with the reason, counted in "rejected").
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
// A family name as Tuner::add accepts it ([A-Za-z0-9_.-]+, a safe file name).
bool validFamilyName(const std::string& f);

class RemoteCache {
 public:
  explicit RemoteCache(std::shared_ptr<RemoteClient> client, CacheLimits limits = {});

  // kNotFound on a miss; kCorrupt for data that fails a check (foreign schema or validator,
  // malformed JSON, another key); kUnavailable when the remote cannot be asked.
  Expected<DbEntry> getEntry(const std::string& family, const Validator& v, const std::string& key);
  Status putEntry(const std::string& family, const Validator& v, const DbEntry& e);
  // An entry found by list(), with the validator it was tuned under (for `ktune remote pull`).
  Expected<std::pair<Validator, DbEntry>> getListed(const RemoteEntryInfo& info);
  // kNotFound, kCorrupt (sha256/size/metadata mismatch, over the size cap), kUnavailable.
  Expected<CodeObject> getObject(const std::string& co_key);
  Status putObject(const std::string& co_key, const CodeObject& obj);

  // Entry plus the code objects it names, put into `store` (objects already there are not
  // fetched). Any object that cannot be had makes the whole entry unusable (kCorrupt/kNotFound).
  Expected<DbEntry> fetchInto(const std::string& family, const Validator& v,
                              const std::string& key, CodeObjectStore& store);
  // Objects the entry names that `store` holds (and the remote lacks), then the entry.
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
};

// Runs a command and turns an error reply into kInternal (for callers that need a value).
Expected<Reply> runChecked(RemoteClient& c, const std::vector<std::string>& argv);

}  // namespace ktune::remote
