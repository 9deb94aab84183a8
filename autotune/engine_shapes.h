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
// most one candidate in flight (the engine's bench lock) and, before each candidate, pauses for
// (1 - duty) / duty times the time the previous one took (TunerOptions::background_duty, 0.25 by
// default: the tuner holds the GPU at most a quarter of the wall time while it tunes). On a GPU
// background mode defaults to the isolation worker (Engine::create); the pauses apply there too:
// with a duty below 1 the candidates go to the worker one per request (and the finalists' rounds
// one round per request), each after its pause (measured: bench/NOTES.md). The queue
// holds at most kMaxQueued keys (more stay predicted). A family without make_problem/args_json
// is not tuned in the background (its keys stay predicted; said once in the log).
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

  // Memo of loaded functions by what determines a code object (entry, config, defines), so a
  // predicted config's function is found without hashing its source or reading the store.
  static std::string memoKey(const ErasedFamily& f, const Config& c, const void* p);
  void remember(const std::string& memo, const std::string& co_key, FunctionHandle fn);
  bool recall(const std::string& memo, std::string* co_key, FunctionHandle* fn) const;

  // Called by the engine before each candidate's benchmark: on the background thread, pauses as
  // the duty cycle says; elsewhere nothing.
  static void beforeCandidate();
  // Whether this thread is the background thread with a duty cycle below 1 (the isolation path
  // then sends one candidate per worker request, so the pauses apply there too).
  static bool pacing();

 private:
  struct Item {
    FamilyState* fs;
    std::string key, args_json;
  };
  void loop();
  void tuneOne(const Item& it, StreamHandle s);
  std::shared_ptr<const std::vector<predict::Neighbour>> indexOf(FamilyState& fs);

  TunerEngine& e_;
  mutable std::mutex mu_;
  std::condition_variable cv_;       // queue, stop
  std::condition_variable idle_cv_;  // drain
  std::deque<Item> queue_;
  std::set<std::pair<FamilyState*, std::string>> pending_;
  bool busy_ = false, stop_ = false;
  FamilyState* current_ = nullptr;  // the family of the key being tuned (null when idle)
  uint64_t completed_ = 0;
  std::set<FamilyState*> warned_;
  std::unordered_map<FamilyState*, std::shared_ptr<const std::vector<predict::Neighbour>>> index_;
  std::unordered_map<std::string, std::pair<std::string, FunctionHandle>> memo_;
  std::thread thread_;  // last: started after the rest exists
};

}  // namespace ktune::detail
