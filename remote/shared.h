// ktune remote — SharedTuning (autotune/shared_tuning.h) over a local file lock and, when
// KTUNE_REMOTE_CACHE is set, Redis.
//
// Single flight: the first process to start tuning a key takes the key's local lock
// (<cache>/leases/<hash>.lock, flock: freed by the kernel if the process dies) and then the Redis
// lease  ktune:<schema>:l:<family>:<validator hash>:<key>  (SET NX PX lease_ms, with a random
// token; renewed every lease_ms/3 by a thread, released by compare-and-delete). Others poll
// `done` (their database, then the remote entry) every poll_ms until the key is published, the
// lease frees (its holder finished or died: they take it), or lease_wait_ms passes (they tune
// anyway). A remote that is down degrades to the local lock alone.
#pragma once

#include <memory>
#include <string>

#include "autotune/shared_tuning.h"
#include "base/options.h"
#include "remote/cache.h"

namespace ktune::remote {

struct SharedOptions {
  std::string cache_dir;     // for the local lock files
  int lease_ms = 15000;      // Redis lease lifetime (renewed while held)
  int lease_wait_ms = 300000;
  int poll_ms = 50;
  std::ostream* log = nullptr;  // rejected data and remote failures, once each; null = quiet
};

// A SharedTuning with local locks only (cache == null) or with the remote cache.
std::shared_ptr<SharedTuning> makeSharedTuning(std::shared_ptr<RemoteCache> cache,
                                               SharedOptions o);
// From Options (cache_dir, remote_cache, remote_timeout_ms, lease_ms, lease_wait_ms). A bad
// remote URL gives local-only single flight, with the reason in *note.
std::shared_ptr<SharedTuning> makeSharedTuning(const Options& o, std::string* note = nullptr);

}  // namespace ktune::remote
