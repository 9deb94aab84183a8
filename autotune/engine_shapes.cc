#include "autotune/engine_shapes.h"

#include <algorithm>
#include <chrono>
#include <utility>

#include "autotune/engine.h"

namespace ktune::detail {

namespace {

// A background thread's set-up for as long as it lives: its device; relaxed capture mode, so its
// allocations, synchronisations and module loads never break another thread's capture in global
// mode; and its own stream as its default stream, since a capture of a blocking stream fails on
// any legacy-stream operation whatever the mode (its copies and {}-stream work go there instead).
struct OwnStream {
  OwnStream(Backend& b, int device) : rt(b) {
    (void)rt.setDevice(device);
    (void)rt.relaxCaptureMode();
    if (auto st = rt.createStream(); st.ok()) stream = *st;
    if (stream.p) (void)rt.setThreadStream(stream);
  }
  ~OwnStream() {
    (void)rt.setThreadStream(StreamHandle{});
    if (stream.p) (void)rt.destroyStream(stream);
  }
  OwnStream(const OwnStream&) = delete;
  OwnStream& operator=(const OwnStream&) = delete;
  Backend& rt;
  StreamHandle stream{};
};

// The background tuning thread's duty (pace()); 1 (no pacing) on every other thread.
thread_local double t_duty = 1;

}  // namespace

DynamicShapes::DynamicShapes(TunerEngine& e) : e_(e) {}

DynamicShapes::~DynamicShapes() { stop(); }

void DynamicShapes::stop() {
  {
    std::lock_guard<std::mutex> l(mu_);
    stop_ = true;
    queue_.clear();
    races_.clear();
    rqueue_.clear();
  }
  cv_.notify_all();
  if (resolver_.joinable()) resolver_.join();
  if (thread_.joinable()) thread_.join();
}

std::string DynamicShapes::memoKey(const ErasedFamily& f, const Config& c, const void* p) {
  std::string k = f.entry_fn ? f.entry_fn(c, p) : f.entry;
  k += '\n';
  k += c.toString();
  for (const auto& [name, value] : definesFor(f, c, p)) {
    k += '\n';
    k += name;
    k += '=';
    k += value;
  }
  return k;
}

void DynamicShapes::remember(const std::string& memo, const std::string& co_key, FunctionHandle fn) {
  std::lock_guard<std::mutex> l(mu_);
  memo_[memo] = {co_key, fn};
}

bool DynamicShapes::recall(const std::string& memo, std::string* co_key, FunctionHandle* fn) const {
  std::lock_guard<std::mutex> l(mu_);
  auto it = memo_.find(memo);
  if (it == memo_.end()) return false;
  *co_key = it->second.first;
  *fn = it->second.second;
  return true;
}

std::shared_ptr<const std::vector<predict::Neighbour>> DynamicShapes::indexOf(FamilyState& fs) {
  {
    std::lock_guard<std::mutex> l(mu_);
    auto it = index_.find(&fs);
    if (it != index_.end()) return it->second;
  }
  auto idx = std::make_shared<const std::vector<predict::Neighbour>>(
      predict::indexEntries(fs.db->entries()));
  std::lock_guard<std::mutex> l(mu_);
  return index_.emplace(&fs, std::move(idx)).first->second;
}

void DynamicShapes::invalidate(FamilyState& fs) {
  std::lock_guard<std::mutex> l(mu_);
  index_.erase(&fs);
}

predict::Prediction DynamicShapes::predictFor(FamilyState& fs, const void* p,
                                              const std::string& key) {
  const ErasedFamily& f = fs.f;
  const int64_t limit = std::max(e_.deviceInfo().shared_per_block_optin, e_.deviceInfo().shared_per_block);
  auto applicable = [&](const std::string& text) {
    auto c = Config::parse(text);
    if (!c.ok() || !checkOwnConfig(f, *c, "predicted").ok()) return false;
    if (!f.configs.empty() &&
        std::none_of(f.configs.begin(), f.configs.end(),
                     [&](const Config& x) { return x.toString() == text; }))
      return false;
    if (limit > 0 && f.space.sharedBytesOf(*c) > limit) return false;
    return !f.launch || !f.launch(*c, p, e_.deviceInfo()).refused;  // the key's own rule: alignment, layout
  };
  predict::Prediction pr = predict::predict(*indexOf(fs), key, applicable);
  if (pr.source != predict::kDefaultClass) return pr;
  // Where nothing tuned chose another config, the vendor's own pick for the key (the wide-tile
  // rule over its list: predict.h) replaces its default.
  std::pair<std::string, std::string> pick;
  std::tie(pr.config, pr.source) = defaultOf(f, p, &pick);
  if (!pick.second.empty() && pick.first != pr.config) {
    std::tie(pr.config, pr.source) = pick;
    pr.basis = predict::kVendorTilesBasis;
    pr.rule = "wide tile";
  }
  return pr;
}

Expected<std::unique_ptr<Selected>> DynamicShapes::selectPredicted(FamilyState& fs, const void* p,
                                                                   const std::string& key,
                                                                   bool capturing) {
  // predictFor resolved the default only when it chose it; otherwise the default is resolved
  // below only if the predicted config cannot run (each resolution may be a vendor heuristic query,
  // the largest part of an unseen key's first call).
  const predict::Prediction pr = predictFor(fs, p, key);
  const bool is_default = pr.basis != "neighbours" && pr.basis != predict::kVendorTilesBasis;
  if (!pr.config.empty()) {
    const char* origin = is_default ? "default" : "predicted";
    auto sel = capturing ? selectCaptured(fs, p, pr.config, pr.source, origin)
                         : selectKnown(fs, p, pr.config, pr.source, origin, false);
    if (sel.ok() || is_default) return sel;
    if (e_.options().verbose)
      e_.log() << "ktune: " << fs.f.name << " [" << key << "]: predicted " << pr.config
               << " unusable (" << sel.status().toString() << "); the default runs\n";
  }
  const auto [def, def_source] = defaultOf(fs.f, p);
  if (def_source.empty()) {
    return Status::Unsupported("family " + fs.f.name + " [" + key + "]: nothing predicted and " +
                               "no default config");
  }
  if (capturing) return selectCaptured(fs, p, def, def_source, "default");
  return selectKnown(fs, p, def, def_source, "default", false);
}

void DynamicShapes::enqueue(FamilyState& fs, const void* p, const std::string& key) {
  if (!fs.f.make_problem || !fs.f.args_json) {
    std::lock_guard<std::mutex> l(mu_);
    if (warned_.insert(&fs).second)
      e_.log() << "ktune: family " << fs.f.name << " has no make_problem/args_json: its untuned "
               << "keys run predicted configs and are not tuned in the background\n";
    return;
  }
  std::string args = fs.f.args_json(p);
  bool queued = false;
  {
    std::lock_guard<std::mutex> l(mu_);
    queued = queueLocked(fs, key, std::move(args));
  }
  if (queued) cv_.notify_all();
}

bool DynamicShapes::queueLocked(FamilyState& fs, const std::string& key, std::string args) {
  if (stop_ || queue_.size() >= kMaxQueued || !pending_.insert({&fs, key}).second) return false;
  races_.push_back(Item{&fs, key, args});
  queue_.push_back(Item{&fs, key, std::move(args)});
  if (!thread_.joinable()) thread_ = std::thread([this] { loop(); });
  return true;
}

bool DynamicShapes::defaultMemo(FamilyState& fs, const void* p, Config* c, std::string* memo) const {
  if (!fs.f.jit()) return false;
  *c = fs.f.default_for ? fs.f.default_for(p) : fs.f.default_config;
  *memo = memoKey(fs.f, *c, p);
  return true;
}

void DynamicShapes::addReady(FamilyState& fs, Ready r) {
  std::lock_guard<std::mutex> l(mu_);
  auto& cur = ready_[&fs];
  if (cur && !cur->empty() && cur->front().memo == r.memo) return;  // most recent already
  auto next = std::make_shared<std::vector<Ready>>();
  next->push_back(std::move(r));
  if (cur) {
    for (const Ready& x : *cur)
      if (x.memo != next->front().memo && next->size() < kMaxReady) next->push_back(x);
  }
  cur = std::move(next);  // readers keep the list they took
}

std::unique_ptr<Selected> DynamicShapes::selectReady(FamilyState& fs, const void* p) {
  if (!fs.f.make_problem || !fs.f.args_json) return nullptr;  // nothing could resolve it later
  std::shared_ptr<const std::vector<Ready>> list;
  {
    std::lock_guard<std::mutex> l(mu_);
    auto it = ready_.find(&fs);
    if (it == ready_.end()) return nullptr;
    list = it->second;
  }
  // Not p's own default config (finding that is most of the cost, e.g. the GEMM op's curated
  // lists): a loaded default that compiles identically for p runs it correctly, and the resolver
  // replaces it with the prediction within a fraction of a millisecond.
  for (const Ready& r : *list) {
    if (memoKey(fs.f, r.config, p) != r.memo) continue;
    LaunchDims d = fs.f.launch(r.config, p, e_.deviceInfo());
    if (d.refused) continue;
    auto sel = std::make_unique<Selected>();
    sel->config = r.config;
    sel->config_str = r.config.toString();
    sel->source = "jit";
    sel->origin = "provisional";
    sel->fn = r.fn;
    sel->code_object_key = r.co_key;
    if (fs.f.launch_per_key) {
      sel->dims = std::move(d);
      sel->dims_cached = true;
    }
    return sel;
  }
  return nullptr;
}

void DynamicShapes::pushResolve(Resolve r) {
  {
    std::lock_guard<std::mutex> l(mu_);
    if (stop_ || rqueue_.size() >= kMaxQueued) {
      preloading_.erase(r.preload_memo);
      return;
    }
    rqueue_.push_back(std::move(r));
    if (!resolver_.joinable()) resolver_ = std::thread([this] { resolverLoop(); });
  }
  cv_.notify_all();
}

void DynamicShapes::resolveLater(FamilyState& fs, const void* p, const std::string& key,
                                 const KeyBuilder& kb, const Selected* provisional) {
  pushResolve(Resolve{&fs, key, fs.f.args_json(p), kb, provisional, {}});
}

void DynamicShapes::preloadLater(FamilyState& fs, const void* p) {
  Config c;
  std::string memo, co_key;
  FunctionHandle fn;
  if (!fs.f.make_problem || !fs.f.args_json || !defaultMemo(fs, p, &c, &memo)) return;
  if (recall(memo, &co_key, &fn)) {  // loaded already (e.g. it is the key's own winner)
    if (!fs.f.launch(c, p, e_.deviceInfo()).refused)
      addReady(fs, Ready{std::move(memo), std::move(c), std::move(co_key), fn});
    return;
  }
  {
    // One load per default: a fresh process's first calls of many tuned keys of one kind all find
    // it missing, and each resolver item rebuilds a problem (device buffers) to load it.
    std::lock_guard<std::mutex> l(mu_);
    if (!preloading_.insert(memo).second) return;
  }
  pushResolve(Resolve{&fs, "", fs.f.args_json(p), KeyBuilder{}, nullptr, memo});
}

void DynamicShapes::preloadNow(FamilyState& fs, const void* p) {
  Config c;
  std::string memo, co_key;
  FunctionHandle fn;
  if (!defaultMemo(fs, p, &c, &memo)) return;
  if (!recall(memo, &co_key, &fn)) {
    if (fs.f.launch(c, p, e_.deviceInfo()).refused) return;
    if (!e_.selectConfig(fs, p, c.toString(), "jit", "default").ok()) return;  // fills the memo
    if (!recall(memo, &co_key, &fn)) return;
  }
  addReady(fs, Ready{std::move(memo), std::move(c), std::move(co_key), fn});
}

uint64_t DynamicShapes::resolved() const {
  std::lock_guard<std::mutex> l(mu_);
  return resolved_;
}

void DynamicShapes::resolverLoop() {
  // Its problems are made (allocated and filled) here: as the tuning thread, on its own stream.
  const OwnStream own(e_.runtime(), e_.options().device);
  for (;;) {
    Resolve r;
    {
      std::unique_lock<std::mutex> l(mu_);
      cv_.wait(l, [&] { return stop_ || !rqueue_.empty(); });
      if (stop_) break;
      r = std::move(rqueue_.front());
      rqueue_.pop_front();
      rbusy_ = true;
      rcurrent_ = r.fs;
    }
    resolveOne(r);
    {
      std::lock_guard<std::mutex> l(mu_);
      rbusy_ = false;
      rcurrent_ = nullptr;
    }
    idle_cv_.notify_all();
  }
  {
    std::lock_guard<std::mutex> l(mu_);
    rbusy_ = false;
    rcurrent_ = nullptr;
  }
  idle_cv_.notify_all();
}

void DynamicShapes::resolveOne(const Resolve& r) {
  FamilyState& fs = *r.fs;
  auto prob = fs.f.make_problem(r.args_json);
  if (!prob.ok()) {
    std::lock_guard<std::mutex> l(mu_);
    preloading_.erase(r.preload_memo);
  }
  if (!prob.ok()) {
    e_.log() << "ktune: " << fs.f.name << " [" << r.key << "]: resolving the prediction: "
             << prob.status().toString() << "; the provisional config stays\n";
    return;
  }
  const void* p = prob->get();
  preloadNow(fs, p);  // the next unseen key of this kind takes the fast path
  if (!r.provisional) {
    std::lock_guard<std::mutex> l(mu_);
    preloading_.erase(r.preload_memo);
    return;
  }
  auto sel = selectPredicted(fs, p, r.key, false);
  if (sel.ok()) {
    std::unique_lock<std::shared_mutex> l(fs.mu);
    auto it = fs.map.find(r.kb);
    if (it != fs.map.end() && it->second == r.provisional) {  // not tuned in the meantime
      it->second = sel->get();
      fs.owned.push_back(std::move(sel).value());
      fs.epoch.fetch_add(1, std::memory_order_release);  // threads' cached hits look again
      l.unlock();
      std::lock_guard<std::mutex> g(mu_);
      ++resolved_;
    }
  } else if (e_.options().verbose) {
    e_.log() << "ktune: " << fs.f.name << " [" << r.key << "]: no prediction ("
             << sel.status().toString() << "); the provisional config stays\n";
  }
  bool queued = false;
  {
    std::lock_guard<std::mutex> l(mu_);
    queued = queueLocked(fs, r.key, r.args_json);
  }
  if (queued) cv_.notify_all();
}

void DynamicShapes::drain() {
  std::unique_lock<std::mutex> l(mu_);
  idle_cv_.wait(l, [&] {
    return stop_ || (queue_.empty() && races_.empty() && !busy_ && rqueue_.empty() && !rbusy_);
  });
}

void DynamicShapes::cancel(FamilyState& fs) {
  std::unique_lock<std::mutex> l(mu_);
  for (auto it = rqueue_.begin(); it != rqueue_.end();) {
    if (it->fs != &fs) {
      ++it;
      continue;
    }
    preloading_.erase(it->preload_memo);
    it = rqueue_.erase(it);
  }
  // The resolver may queue fs's key for tuning as it finishes: wait for it, then drop fs's keys.
  idle_cv_.wait(l, [&] { return !rbusy_ || rcurrent_ != &fs; });
  races_.erase(std::remove_if(races_.begin(), races_.end(), [&](const Item& x) { return x.fs == &fs; }),
               races_.end());
  for (auto it = queue_.begin(); it != queue_.end();) {
    if (it->fs != &fs) {
      ++it;
      continue;
    }
    pending_.erase({it->fs, it->key});
    it = queue_.erase(it);
  }
  idle_cv_.wait(l, [&] { return !busy_ || current_ != &fs; });
  idle_cv_.notify_all();  // drain() may be waiting on a queue that is empty now
}

uint64_t DynamicShapes::completed() const {
  std::lock_guard<std::mutex> l(mu_);
  return completed_;
}

uint64_t DynamicShapes::raced() const {
  std::lock_guard<std::mutex> l(mu_);
  return raced_;
}

bool DynamicShapes::pacing() { return t_duty < 1; }

void DynamicShapes::pace(BenchOptions& bo) {
  if (!pacing()) return;
  bo.pace_duty = t_duty;
  bo.pace_slice_ms = kSliceMs;
}

void DynamicShapes::loop() {
  const OwnStream own(e_.runtime(), e_.options().device);
  const StreamHandle s = own.stream;
  t_duty = std::clamp(e_.options().background_duty, 0.01, 1.0);
  for (;;) {
    Item it;
    bool race = false;
    {
      std::unique_lock<std::mutex> l(mu_);
      cv_.wait(l, [&] { return stop_ || !queue_.empty() || !races_.empty(); });
      if (stop_) break;
      race = !races_.empty();
      std::deque<Item>& q = race ? races_ : queue_;
      it = std::move(q.front());
      q.pop_front();
      busy_ = true;
      current_ = it.fs;
    }
    if (race) raceOne(it, s);
    else tuneOne(it, s);
    {
      std::lock_guard<std::mutex> l(mu_);
      if (!race) pending_.erase({it.fs, it.key});
      busy_ = false;
      current_ = nullptr;
      if (!race) ++completed_;
    }
    idle_cv_.notify_all();
  }
  t_duty = 1;
  {
    std::lock_guard<std::mutex> l(mu_);
    busy_ = false;
  }
  idle_cv_.notify_all();
}

void DynamicShapes::tuneOne(const Item& it, StreamHandle s) {
  FamilyState& fs = *it.fs;
  auto warn = [&](const std::string& what) {
    e_.log() << "ktune: " << fs.f.name << " [" << it.key << "]: background tuning: " << what
             << "; the key keeps its predicted config\n";
  };
  auto prob = fs.f.make_problem(it.args_json);
  if (!prob.ok()) return warn(prob.status().toString());
  KeyBuilder kb;
  fs.f.key(prob->get(), kb);
  if (kb.toString() != it.key) return warn("the rebuilt problem has key " + kb.toString());
  WinnerBinary bin;
  Expected<TuneReport> rep = Status::Internal("not run");
  {
    std::lock_guard<std::mutex> bl(e_.benchLock());
    rep = e_.tuneKey(fs, prob->get(), it.key, s, &bin);
  }
  (void)e_.runtime().synchronize(s);  // the problem's buffers are freed next
  if (!rep.ok()) return warn(rep.status().toString());
  if (e_.engineOptions().shared) e_.publishShared(fs, it.key);
  invalidate(fs);
  if (rep->winner.empty()) return warn("no candidate passed");
  auto sel = e_.selectConfig(fs, prob->get(), rep->winner, rep->winner_source, "memory", &bin);
  if (!sel.ok()) return warn(sel.status().toString());
  (*sel)->stats = rep->winner_stats;
  // A vendor winner timed in the isolation worker has not run here: loaded now, on this thread's
  // own problem, so a capture of the key's next call runs it without loading anything.
  if (Status w = warmVendor(fs, **sel, prob->get(), s); !w.ok()) return warn(w.toString());
  e_.publish(fs, kb, std::move(sel).value());  // atomically replaces the prediction
}

}  // namespace ktune::detail
