#include "remote/shared.h"

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <random>
#include <thread>

#include "base/fs.h"
#include "base/sha256.h"
#include "compiler/store/store.h"

namespace ktune::remote {
namespace {

using Clock = std::chrono::steady_clock;

std::string randomToken() {
  std::random_device rd;
  std::mt19937_64 g((uint64_t(rd()) << 32) ^ rd() ^ uint64_t(Clock::now().time_since_epoch().count()));
  char b[40];
  std::snprintf(b, sizeof(b), "%016llx%016llx", (unsigned long long)g(), (unsigned long long)g());
  return b;
}

// Renews only a lease that is still ours, deletes only a lease that is still ours.
constexpr const char* kRenew =
    "if redis.call('get', KEYS[1]) == ARGV[1] then "
    "return redis.call('pexpire', KEYS[1], ARGV[2]) else return 0 end";
constexpr const char* kRelease =
    "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) "
    "else return 0 end";

class Lease : public TuningLease {
 public:
  Lease(FileLock local, std::shared_ptr<RemoteClient> client, std::string key, std::string token,
        int lease_ms)
      : local_(std::move(local)), client_(std::move(client)), key_(std::move(key)),
        token_(std::move(token)) {
    if (client_) renewer_ = std::thread([this, lease_ms] { renew(lease_ms); });
  }
  ~Lease() override {
    if (renewer_.joinable()) {
      {
        std::lock_guard<std::mutex> l(mu_);
        stop_ = true;
      }
      cv_.notify_all();
      renewer_.join();
      (void)client_->run({"EVAL", kRelease, "1", key_, token_});
    }
    local_.release();
  }

 private:
  void renew(int lease_ms) {
    std::unique_lock<std::mutex> l(mu_);
    while (!cv_.wait_for(l, std::chrono::milliseconds(std::max(1, lease_ms / 3)),
                         [this] { return stop_; })) {
      (void)client_->run({"EVAL", kRenew, "1", key_, token_, std::to_string(lease_ms)});
    }
  }
  FileLock local_;
  std::shared_ptr<RemoteClient> client_;
  std::string key_, token_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  std::thread renewer_;
};

// A lease that excludes nobody (no lock could be had, or the wait ran out).
class NoLease : public TuningLease {};

class Shared : public SharedTuning {
 public:
  Shared(std::shared_ptr<RemoteCache> cache, SharedOptions o)
      : cache_(std::move(cache)), o_(std::move(o)) {}

  std::optional<DbEntry> fetch(const std::string& family, const Validator& v,
                               const std::string& key, std::string* note) override {
    if (!cache_) return std::nullopt;
    auto e = cache_->getEntry(family, v, key);
    if (e.ok()) {
      cache_->count("fetched");
      return std::move(e).value();
    }
    if (note && e.status().code() != Code::kNotFound) *note = e.status().message();
    return std::nullopt;
  }

  bool fetchObject(const std::string& co_key, CodeObjectStore& store, std::string* note) override {
    if (!cache_ || !cache_->hasSecret()) return false;
    Status s = cache_->fetchObjectInto(co_key, store);
    if (!s.ok() && note && s.code() != Code::kNotFound) *note = s.message();
    return s.ok();
  }

  void publish(const std::string& family, const Validator& v, const DbEntry& e,
               CodeObjectStore& store, std::string* note) override {
    if (!cache_) return;
    Status s = cache_->publishFrom(family, v, e, store);
    if (!s.ok() && note) *note = s.message();
  }

  std::unique_ptr<TuningLease> acquire(const std::string& family, const Validator& v,
                                       const std::string& key, const std::function<bool()>& done,
                                       bool* waited, std::string* note) override;

  std::string describe() const override {
    if (!cache_) return "local only (no KTUNE_REMOTE_CACHE)";
    return cache_->client().options().url.display() + " (" + clientName() + ")";
  }

 private:
  // Takes the Redis lease; true when held (or when the remote cannot be asked: then the local lock
  // is all there is).
  bool takeRemote(const std::string& rkey, const std::string& token) {
    if (!cache_) return true;
    auto r = cache_->client().run(
        {"SET", rkey, token, "NX", "PX", std::to_string(std::max(1, o_.lease_ms))});
    if (!r.ok()) return true;
    return r->kind == Reply::Kind::kStatus;  // "OK"; nil: held elsewhere
  }

  std::shared_ptr<RemoteCache> cache_;
  SharedOptions o_;
};

std::unique_ptr<TuningLease> Shared::acquire(const std::string& family, const Validator& v,
                                             const std::string& key,
                                             const std::function<bool()>& done, bool* waited,
                                             std::string* note) {
  *waited = false;
  const std::string id = family + ":" + validatorHash(v) + ":" + key;
  const std::string dir = joinPath(o_.cache_dir, "leases");
  const std::string path = joinPath(dir, sha256Hex(id).substr(0, 32) + ".lock");
  const std::string rkey = keyPrefix() + "l:" + id;
  const std::string token = randomToken();
  bool have_dir = makeDirs(dir, 0700).ok();
  const auto deadline = Clock::now() + std::chrono::milliseconds(o_.lease_wait_ms);
  for (;;) {
    auto local = have_dir ? FileLock::acquire(path, 0) : Expected<FileLock>(FileLock());
    if (local.ok()) {
      if (takeRemote(rkey, token)) {
        auto lease = std::make_unique<Lease>(std::move(local).value(),
                                             cache_ ? cache_->sharedClient() : nullptr, rkey,
                                             token, o_.lease_ms);
        // Checked after taking the lease, not before: a holder publishes before it lets go, so
        // a result that was not there while someone held the lease is there now.
        if (done()) return nullptr;
        return lease;
      }
      local->release();
    }
    if (done()) {
      *waited = true;
      return nullptr;
    }
    if (Clock::now() >= deadline) {
      if (note) *note = "waited " + std::to_string(o_.lease_wait_ms) + " ms for another tuner of " +
                        key + "; tuning it here too";
      return std::make_unique<NoLease>();
    }
    *waited = true;
    std::this_thread::sleep_for(std::chrono::milliseconds(o_.poll_ms));
  }
}

}  // namespace

std::shared_ptr<SharedTuning> makeSharedTuning(std::shared_ptr<RemoteCache> cache,
                                               SharedOptions o) {
  return std::make_shared<Shared>(std::move(cache), std::move(o));
}

std::shared_ptr<SharedTuning> makeSharedTuning(const Options& o, std::string* note) {
  SharedOptions so;
  so.cache_dir = o.cache_dir.empty() ? Options::defaultCacheDir() : o.cache_dir;
  so.lease_ms = o.lease_ms;
  so.lease_wait_ms = o.lease_wait_ms;
  std::shared_ptr<RemoteCache> cache;
  if (!o.remote_cache.empty()) {
    auto c = RemoteClient::fromOptions(o);
    if (c.ok()) cache = std::make_shared<RemoteCache>(std::move(c).value(), CacheLimits{}, o.remote_key);
    else if (note) *note = c.status().message();
  }
  return makeSharedTuning(std::move(cache), so);
}

}  // namespace ktune::remote
