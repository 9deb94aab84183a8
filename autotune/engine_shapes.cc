#include "autotune/engine_shapes.h"

#include <algorithm>
#include <chrono>
#include <utility>

#include "autotune/engine.h"

namespace ktune::detail {

namespace {

// The background thread's pacing state (beforeCandidate); null on every other thread.
struct Pacer {
  DynamicShapes* owner = nullptr;
  std::mutex* mu = nullptr;
  std::condition_variable* cv = nullptr;
  const bool* stop = nullptr;
  double duty = 1;
  bool started = false;
  std::chrono::steady_clock::time_point resumed;
};
thread_local Pacer* t_pacer = nullptr;

}  // namespace

DynamicShapes::DynamicShapes(TunerEngine& e) : e_(e) {}

DynamicShapes::~DynamicShapes() { stop(); }

void DynamicShapes::stop() {
  {
    std::lock_guard<std::mutex> l(mu_);
    stop_ = true;
    queue_.clear();
  }
  cv_.notify_all();
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
  if (pr.source == predict::kDefaultClass) std::tie(pr.config, pr.source) = defaultOf(f, p);
  return pr;
}

Expected<std::unique_ptr<Selected>> DynamicShapes::selectKnown(
    FamilyState& fs, const void* p, const std::string& config, const std::string& source,
    const std::string& origin, bool capturing) {
  // A vendor candidate loads nothing. A JIT config whose function is loaded already comes from the
  // memo (no source hash, no store read: most of an unseen key's first call otherwise); outside a
  // capture anything else is compiled or loaded by the engine.
  const bool vendor = source != "jit" && source != "default";
  if (vendor) return e_.selectConfig(fs, p, config, source, origin);
  auto sel = std::make_unique<Selected>();
  KTUNE_ASSIGN_OR_RETURN(sel->config, Config::parse(config));
  if (!recall(memoKey(fs.f, sel->config, p), &sel->code_object_key, &sel->fn)) {
    if (!capturing) return e_.selectConfig(fs, p, config, source, origin);
    return Status::Unsupported("family " + fs.f.name + ": config " + config +
                               " is not loaded and a call inside a stream capture loads no "
                               "module; call the family's prepare() (or run the key once) "
                               "before capturing");
  }
  if (origin != "default") KTUNE_RETURN_IF_ERROR(checkOwnConfig(fs.f, sel->config, origin));
  sel->config_str = config;
  sel->source = "jit";
  sel->origin = origin;
  if (fs.f.launch_per_key) {
    sel->dims = fs.f.launch(sel->config, p, e_.deviceInfo());
    sel->dims_cached = true;
  }
  return sel;
}

Expected<std::unique_ptr<Selected>> DynamicShapes::selectPredicted(FamilyState& fs, const void* p,
                                                                   const std::string& key,
                                                                   bool capturing) {
  // predictFor resolved the default only when it chose it; otherwise the default is resolved
  // below only if the predicted config cannot run (each resolution may be a vendor heuristic query,
  // the largest part of an unseen key's first call).
  const predict::Prediction pr = predictFor(fs, p, key);
  const bool is_default = pr.basis != "neighbours";
  if (!pr.config.empty()) {
    auto sel = selectKnown(fs, p, pr.config, pr.source, is_default ? "default" : "predicted",
                            capturing);
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
  return selectKnown(fs, p, def, def_source, "default", capturing);
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
  {
    std::lock_guard<std::mutex> l(mu_);
    if (stop_ || queue_.size() >= kMaxQueued || !pending_.insert({&fs, key}).second) return;
    queue_.push_back(Item{&fs, key, std::move(args)});
    if (!thread_.joinable()) thread_ = std::thread([this] { loop(); });
  }
  cv_.notify_all();
}

void DynamicShapes::drain() {
  std::unique_lock<std::mutex> l(mu_);
  idle_cv_.wait(l, [&] { return stop_ || (queue_.empty() && !busy_); });
}

void DynamicShapes::cancel(FamilyState& fs) {
  std::unique_lock<std::mutex> l(mu_);
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

void DynamicShapes::beforeCandidate() {
  Pacer* pc = t_pacer;
  if (!pc) return;
  const auto now = std::chrono::steady_clock::now();
  if (pc->started && pc->duty < 1) {
    const auto busy = now - pc->resumed;
    const auto pause = std::chrono::duration_cast<std::chrono::steady_clock::duration>(
        busy * ((1 - pc->duty) / pc->duty));
    std::unique_lock<std::mutex> l(*pc->mu);
    // A pacing pause, not synchronisation: the destructor's notify ends it at once.
    pc->cv->wait_for(l, pause, [pc] { return *pc->stop; });
  }
  pc->started = true;
  pc->resumed = std::chrono::steady_clock::now();
}

bool DynamicShapes::pacing() { return t_pacer && t_pacer->duty < 1; }

void DynamicShapes::loop() {
  (void)e_.runtime().setDevice(e_.options().device);
  // Another thread's capture in global mode must not be broken by this thread's allocations,
  // synchronisations or module loads.
  (void)e_.runtime().relaxCaptureMode();
  StreamHandle s{};
  if (auto st = e_.runtime().createStream(); st.ok()) s = *st;
  Pacer pacer{this, &mu_, &cv_, &stop_, std::clamp(e_.options().background_duty, 0.01, 1.0), false, {}};
  t_pacer = &pacer;
  for (;;) {
    Item it;
    {
      std::unique_lock<std::mutex> l(mu_);
      cv_.wait(l, [&] { return stop_ || !queue_.empty(); });
      if (stop_) break;
      it = std::move(queue_.front());
      queue_.pop_front();
      busy_ = true;
      current_ = it.fs;
    }
    pacer.started = false;
    tuneOne(it, s);
    {
      std::lock_guard<std::mutex> l(mu_);
      pending_.erase({it.fs, it.key});
      busy_ = false;
      current_ = nullptr;
      ++completed_;
    }
    idle_cv_.notify_all();
  }
  t_pacer = nullptr;
  if (s.p) (void)e_.runtime().destroyStream(s);
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
  e_.publish(fs, kb, std::move(sel).value());  // atomically replaces the prediction
}

}  // namespace ktune::detail
