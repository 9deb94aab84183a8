// Any shape without waiting (internal): predicted configs for untuned keys, background tuning, and
// calls inside a stream capture. Owned by the engine (TunerEngine::shapes); docs in README
// "Dynamic shapes".
//
// Background tuning: an untuned key's call publishes the predicted config (autotune/predict.h; the
// family default when nothing is near) and returns; the key goes on a queue that ONE thread of
// this tuner works off, on its own stream, with a problem of its own rebuilt from the call's
// args_json (make_problem: the caller's buffers are never touched after the call returns). The
// winner is published like any tuned selection (the map entry swapped under the family's lock, the
// epoch bumped), so the next call runs it. Bound on the caller's GPU: the tuning thread has at
// most one candidate in flight (the engine's bench lock) and paces every benchmark's runs (below;
// TunerOptions::background_duty, 0.25 by default). On a GPU background mode defaults to the
// isolation worker (Engine::create), which paces the runs the same way; with a duty below 1 the
// candidates go to the worker one per request (and the finalists' rounds one round per request),
// so a stop never waits for a whole batch (measured: bench/NOTES.md). The queue
// holds at most kMaxQueued keys (more stay predicted). A family without make_problem/args_json
// is not tuned in the background (its keys stay predicted; said once in the log).
// An unseen key's first call in background mode (outside a capture) does nothing heavy on the
// caller's thread: it runs the family's JIT default for the key if that function is loaded already
// (origin "provisional"; a memo lookup and the key's launch rule) and hands the rest to a second
// thread, the resolver: the prediction (its neighbour scores, the vendor's heuristic query for the
// new shape, module loads) replaces the provisional selection as soon as it is ready (unless the
// key was tuned first), then the key goes on the tuning queue. The resolver also loads each kind's
// JIT default the first time it sees one of its keys (and after a key is tuned or read from the
// database in this mode), so later unseen keys of that kind take the fast path. Only when no
// default is loaded yet (the first key of its kind in the process) does the caller select as before.
// Pacing per run, not only on average: on the background thread every benchmark's runs go in
// stretches of at most kSliceMs (one run when a run is longer), each followed by a pause of
// (1 - duty) / duty times its wall time (BenchOptions::pace_*), the last one included. So in any
// window of W ms the timed runs take at most duty * W + (1 - duty) * kSliceMs (each whole
// stretch-and-pause is duty busy; a window can end right after a stretch): 8 ms of 20 at the
// default 0.25, where a whole do_bench used to run unpaused. Per candidate, its first launch and
// verification read-back are not paced.
// The race: every key queued for background tuning is first raced (predict.h: raceSet/racePick) on
// the tuning thread, ahead of any queued tuning run: the default, the prediction and the vendor's
// next picks for the key are timed (a few ms each) and the fastest replaces the key's prediction
// (origin "raced") unless a measured selection took its place; the full tuning follows as before.
// Capture: a call whose stream is capturing (Backend::isCapturing) never tunes, synchronises,
// allocates or loads a module: only a config whose function is already loaded (the memo below) is
// used; its key is queued for the background thread, which sets relaxed capture mode on itself.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "autotune/benchmarker.h"
#include "autotune/key.h"
#include "autotune/predict.h"
#include "base/config.h"
#include "runtime/backend.h"

namespace ktune::detail {

class TunerEngine;
struct FamilyState;
struct Selected;
struct ErasedFamily;

class DynamicShapes {
 public:
  static constexpr size_t kMaxQueued = 1024;
  // The longest stretch of GPU work the background thread queues before a pause (see above).
  static constexpr double kSliceMs = 4.0;
  explicit DynamicShapes(TunerEngine& e);
  ~DynamicShapes();  // stops the thread: a run in progress finishes (without pauses), the rest is dropped
  // The same, callable while the engine is whole (~Engine calls it first: the run in progress still
  // publishes through the engine, so the engine must not be half torn down). Idempotent.
  void stop();
  DynamicShapes(const DynamicShapes&) = delete;
  DynamicShapes& operator=(const DynamicShapes&) = delete;

  // The prediction for p's key (from the family's measured entries, cached until invalidate()).
  predict::Prediction predictFor(FamilyState& fs, const void* p, const std::string& key);
  // A selection for an untuned key: the prediction, else the family default (origin "predicted" /
  // "default"). With `capturing`, only an already-loaded function qualifies (kUnsupported naming
  // Family::prepare otherwise); without, the config is compiled/loaded as needed.
  Expected<std::unique_ptr<Selected>> selectPredicted(FamilyState& fs, const void* p,
                                                      const std::string& key, bool capturing);
  // `config` of `source` for p: with `capturing` only from the memo (no compile, no load; a
  // vendor candidate needs neither), else through TunerEngine::selectConfig.
  Expected<std::unique_ptr<Selected>> selectKnown(FamilyState& fs, const void* p,
                                                  const std::string& config,
                                                  const std::string& source,
                                                  const std::string& origin, bool capturing);
  // Vendor kernels under lazy loading (engine_shapes_capture.cc): whether `config` of p's family has
  // run for `key` in this engine outside a capture (always true under eager loading), and marking it.
  bool vendorLoaded(const FamilyState& fs, const std::string& key, const std::string& config) const;
  void markVendorLoaded(const FamilyState& fs, const std::string& key, const std::string& config);
  // A vendor selection's launch until it is known loaded: outside a capture it runs and is marked;
  // inside one it runs only if loaded, else p's loaded JIT default runs in its place, else
  // kUnsupported naming prepare().
  Status launchVendorFirst(FamilyState& fs, const Selected& sel, const void* p, StreamHandle s);
  // Runs vendor selection `sel` once (outside a capture) on `own`, a problem of the caller's own
  // whose outputs may be written, unless it is loaded: its kernels are loaded afterwards.
  Status warmVendor(FamilyState& fs, const Selected& sel, const void* own, StreamHandle s);
  // prepare()'s share: warmVendor on a problem rebuilt from p's args (make_problem), so the call's
  // own outputs are never written.
  Status prepareVendor(FamilyState& fs, const Selected& sel, const void* p, StreamHandle s);
  // Inside a capture: p's JIT default if its function is loaded (origin "default"), else one of the
  // family's loaded defaults that compiles identically for p.
  Expected<std::unique_ptr<Selected>> selectLoadedDefault(FamilyState& fs, const void* p);
  // Inside a capture: selectKnown, else selectLoadedDefault, else selectKnown's reason.
  Expected<std::unique_ptr<Selected>> selectCaptured(FamilyState& fs, const void* p,
                                                     const std::string& config,
                                                     const std::string& source,
                                                     const std::string& origin);
  // Background mode, outside a capture: the caller's whole share of an unseen key's selection —
  // the family's JIT default for p if its function is loaded (origin "provisional"); null when it
  // is not (or the key's launch rule refuses it).
  std::unique_ptr<Selected> selectReady(FamilyState& fs, const void* p);
  // Queues the rest for the resolver thread: the prediction replaces `provisional` in the map if
  // that is still the key's selection, then the key is queued for tuning. Never blocks on either.
  void resolveLater(FamilyState& fs, const void* p, const std::string& key, const KeyBuilder& kb,
                    const Selected* provisional);
  // Background mode: has the resolver load p's JIT default unless it is loaded (cheap when it is).
  void preloadLater(FamilyState& fs, const void* p);
  // Loads p's JIT default on this thread unless it is loaded (a tuning call's thread).
  void preloadNow(FamilyState& fs, const void* p);
  // Keys whose prediction the resolver published in place of a provisional selection.
  uint64_t resolved() const;
  // Queues p's key for the background thread (started on first use). No-op for a key queued or
  // being tuned, or a family that cannot rebuild its problem. Never blocks on tuning.
  void enqueue(FamilyState& fs, const void* p, const std::string& key);
  // The family's measured entries changed: the next prediction re-reads them.
  void invalidate(FamilyState& fs);
  // Waits until the queue is empty and no key is being tuned in the background.
  void drain();
  // Drops fs's queued keys and waits until no key of fs is being tuned: called before whatever
  // fs's callbacks point at goes away (an op destroyed before its tuner).
  void cancel(FamilyState& fs);
  // Keys tuned in the background so far (published or not).
  uint64_t completed() const;
  // Keys whose race published a selection (raced() <= keys queued).
  uint64_t raced() const;
  // Each entry's time for p (predict.h's race budgets, interleaved rounds; <= 0: failed), on s.
  // default_over_ms > 0: the race stops after its first round where the default (entry 0) took
  // longer than that, with the entries' times of that round (racePick keeps the prediction then,
  // so the other rounds would be GPU time for nothing).
  static std::vector<double> raceTimes(TunerEngine& e, const std::string& family, const void* p,
                                       const std::vector<predict::RaceEntry>& set, StreamHandle s,
                                       double default_over_ms = 0);

  // Memo of loaded functions by what determines a code object (entry, config, defines), so a
  // predicted config's function is found without hashing its source or reading the store.
  static std::string memoKey(const ErasedFamily& f, const Config& c, const void* p);
  void remember(const std::string& memo, const std::string& co_key, FunctionHandle fn);
  bool recall(const std::string& memo, std::string* co_key, FunctionHandle* fn) const;

  // Whether this thread is the background thread with a duty cycle below 1 (the isolation path
  // then sends one candidate per worker request, so the pauses apply there too).
  static bool pacing();
  // On the background thread with a duty cycle below 1: sets bo's per-run pacing (slices of
  // kSliceMs, each followed by its pause); elsewhere leaves bo as it is.
  static void pace(BenchOptions& bo);

 private:
  struct Item {
    FamilyState* fs;
    std::string key, args_json;
  };
  struct Resolve {
    FamilyState* fs;
    std::string key, args_json;
    KeyBuilder kb;
    const Selected* provisional;  // null: only load the kind's JIT default
    std::string preload_memo;     // for a load-only item: its default's memo key
  };
  void loop();
  void tuneOne(const Item& it, StreamHandle s);
  void raceOne(const Item& it, StreamHandle s);
  void resolverLoop();
  void resolveOne(const Resolve& r);
  void pushResolve(Resolve r);
  // Queues a tuning item (mu_ held).
  bool queueLocked(FamilyState& fs, const std::string& key, std::string args);
  // Loaded JIT defaults of a family, as the fast path looks for one that runs p: a config whose
  // memo key (entry, config, defines) for p is the one it was loaded under. Most recent first.
  struct Ready {
    std::string memo;
    Config config;
    std::string co_key;
    FunctionHandle fn;
  };
  static constexpr size_t kMaxReady = 16;
  void addReady(FamilyState& fs, Ready r);
  // The memo key of p's JIT default; false when the family has none.
  bool defaultMemo(FamilyState& fs, const void* p, Config* c, std::string* memo) const;
  std::shared_ptr<const std::vector<predict::Neighbour>> indexOf(FamilyState& fs);

  static Status refuseUnloaded(const FamilyState& fs, const std::string& key,
                               const std::string& config);

  TunerEngine& e_;
  mutable std::mutex loaded_mu_;
  std::set<std::string> vendor_loaded_;  // family, key and vendor config run here (loadedKey)
  mutable std::mutex mu_;
  std::condition_variable cv_;       // queue, stop
  std::condition_variable idle_cv_;  // drain
  std::deque<Item> queue_;
  std::deque<Item> races_;  // worked off before queue_
  uint64_t raced_ = 0;
  std::set<std::pair<FamilyState*, std::string>> pending_;
  bool busy_ = false, stop_ = false;
  std::deque<Resolve> rqueue_;
  bool rbusy_ = false;
  FamilyState* rcurrent_ = nullptr;
  uint64_t resolved_ = 0;
  FamilyState* current_ = nullptr;  // the family of the key being tuned (null when idle)
  uint64_t completed_ = 0;
  std::set<FamilyState*> warned_;
  std::unordered_map<FamilyState*, std::shared_ptr<const std::vector<predict::Neighbour>>> index_;
  std::unordered_map<std::string, std::pair<std::string, FunctionHandle>> memo_;
  std::unordered_map<FamilyState*, std::shared_ptr<const std::vector<Ready>>> ready_;
  std::set<std::string> preloading_;  // memo keys of defaults queued for loading
  std::thread thread_;  // last: started after the rest exists
  std::thread resolver_;
};

}  // namespace ktune::detail
