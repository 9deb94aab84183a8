// Engine: internal; the public ktune::Autotuner drives one, as do the built-in ops and the CLI.
// Registers a kernel family described by the one registration type, TypedKernelSpec<P>
// (ktune/typed.hpp: a user's kernel, a worker plugin and the built-in ops alike; the ops add
// engine objects through FamilyExtras, autotune/family.h), and calls it.
//   struct Saxpy { int64_t n; DevicePtr x, y; float a; };        // the user's "problem" type
//   TypedKernelSpec<Saxpy> s;
//   s.name = "saxpy"; s.source = kSrc; s.entry = "ktune_saxpy";
//   s.space = {{"BLOCK", {128, 256, 512}}, {"VEC", {1, 2, 4}}};
//   s.key = [](const Saxpy& p, KeyFields& k) { k.add("n", pow2Ceil(p.n)); };
//   s.launch = [](const Knobs& c, const Saxpy& p, const DeviceFacts&) {
//     return Launch::linear(cdiv(p.n, c["BLOCK"] * c["VEC"]), c["BLOCK"]);
//   };
//   s.args = [](const Saxpy& p, ArgPack& a) { a.add(p.n).add(p.x).add(p.y).add(p.a); };
//   KTUNE_ASSIGN_OR_RETURN(auto saxpy, engine->add(std::move(s)));
//   KTUNE_RETURN_IF_ERROR(saxpy(problem, stream));       // tunes on first call per key
//
// The engine's own unit tests register the same way (tests/unit/spec_family.h); the engine's
// erased family (detail::ErasedFamily, autotune/family.h) has no typed twin (dev/include_graph.py
// checks).
//
// A call: key -> in-memory hash map (hit: launch; the hot path is one shared-lock hash lookup,
// argument packing into a thread-local KernelArgs and a launch — no allocation) -> tuning
// database (hit: code object from the store, no recompile) -> tuning off: the default config,
// key appended to the untuned-keys file; tuning on: enumerate, constraints and shared pre-check,
// compile all in parallel (store hits skipped), dedup identical binaries, static pruning,
// verify, benchmark with early rejection, choose the fastest that passed, record every candidate
// in the database, launch. Concurrent first calls for one key tune once; the others wait.
// Failures of single candidates are data (see search.h); a call fails only when no candidate at
// all can run (then the Status lists why).
// Thread safety: Engine and Family<P> methods may be called from any thread.
#pragma once

#include <cstdint>
#include <cstring>
#include <functional>
#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <string_view>
#include <typeinfo>
#include <utility>
#include <vector>

#include "autotune/benchmarker.h"
#include "autotune/candidate_bench.h"
#include "autotune/database.h"
#include "autotune/engine_types.h"
#include "autotune/family.h"
#include "autotune/isolation.h"
#include "autotune/key.h"
#include "autotune/predict.h"
#include "autotune/search.h"
#include "autotune/shared_tuning.h"
#include "autotune/verifier.h"
#include "base/config.h"
#include "base/options.h"
#include "compiler/compiler.h"
#include "runtime/backend.h"

namespace ktune {

class CodeObjectStore;

namespace detail {
struct FamilyState;  // per-family runtime state, owned by the Engine
class TunerEngine;  // the engine behind the facade (autotune/engine.h)
}  // namespace detail

class Engine;

// Handle to a registered family; cheap to copy; valid while its Engine lives.
template <class P>
class Family {
 public:
  Family() = default;
  // Runs the kernel for `p` on `stream` (tuning first if needed; see the file comment). With
  // `plan`, also says what was launched (plan->family stays 0 when no plan can be made).
  Status operator()(const P& p, StreamHandle stream = {}, LaunchPlan* plan = nullptr) const;
  // True while `plan` (made by this family) still says what a call of its key launches.
  bool planCurrent(const LaunchPlan& plan) const;
  // Launches a current plan's kernel with `args` (the packed kernel parameters) on `stream`.
  Status launchPlanned(const LaunchPlan& plan, void** args, StreamHandle stream = {}) const;
  // Forces a tuning run for p's key (even if tuned), records it, and returns the report.
  Expected<TuneReport> tune(const P& p, StreamHandle stream = {}) const;
  // Compiles into the code-object store the configs a tuning run of p's key would compile first
  // (the guided search's first wave), and nothing else: no benchmark, no record, no vendor query,
  // p's buffers never touched. Returns how many were compiled (store misses). A caller that knows
  // its next keys runs it beside the current key's tuning (`ktune tune` over a suite does), on
  // `threads` compile threads (0: the compile pool's rule). `depth` > 0: the first `depth` configs
  // of the guided search's order instead (every live one when the space has fewer), for a key
  // whose race reaches most of its space (a suite's few-row GEMM keys). Thread-safe.
  Expected<size_t> precompile(const P& p, int threads = 0, size_t depth = 0) const;
  // Which config would run for p and where it comes from (KeyReport::origin; no candidates),
  // without compiling, tuning or launching.
  Expected<KeyReport> lookup(const P& p) const;
  // Resolves p's key as a call would (database, prediction, tuning as the options say) and loads
  // its function, without launching on p: run it before a stream capture so the captured call
  // loads nothing (autotune/engine_shapes.h). A vendor selection runs once on a problem rebuilt
  // from p's args (make_problem; its kernels load lazily otherwise), and the family's JIT default
  // for p's kind is loaded (what an unseen key of the kind runs inside a capture).
  Status prepare(const P& p, StreamHandle stream = {}) const;
  // The config predicted for p's key from the family's tuned neighbours (autotune/predict.h), with
  // the neighbours and the confidence; compiles, tunes and launches nothing.
  Expected<predict::Prediction> predict(const P& p) const;
  // p's key from the shared cache, without tuning (see Engine::fetchShared).
  std::optional<TuneReport> fetchShared(const P& p) const;
  // Drops this family's keys queued for background tuning and waits for one in progress: before
  // the state its callbacks use is destroyed (Engine::cancelBackground).
  void cancelBackground() const;
  // The key string of p.
  std::string key(const P& p) const;
  const std::string& name() const;
  bool valid() const { return state_ != nullptr; }

 private:
  friend class Engine;
  Family(Engine* t, detail::FamilyState* s) : tuner_(t), state_(s) {}
  Engine* tuner_ = nullptr;
  detail::FamilyState* state_ = nullptr;
};

// Summary of tuneFromFile.
struct OfflineTuneReport {
  int lines = 0, tuned = 0, already_tuned = 0, skipped = 0;
  std::vector<std::string> messages;  // one per skipped/failed line, with the reason
  // Per key resolved: where its result came from ("tuned", "local", "remote", "waited") and the
  // compiles that took (0 unless tuned here).
  struct Key {
    std::string family, key, from;
    int compiled = 0;
  };
  std::vector<Key> keys;
};

class Engine : public CandidateBench {
 public:
  // Opens the store (<cache_dir>) and picks the compiler. Fails with the reason when the device
  // ordinal is missing, the cache directory is unsafe, or no compiler targets the device's arch.
  static Expected<std::unique_ptr<Engine>> create(std::shared_ptr<Backend> backend,
                                                 EngineOptions opts = {});
  ~Engine();
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  // Registers a family and opens its tuning database (<cache>/db/<name>.json, or
  // options.database_path). kInvalidArgument for a missing required field, a bad name, or a
  // name already registered.
  // Registers a family described by the one registration type, TypedKernelSpec<P>
  // (ktune/typed.hpp: what a user's kernel, a worker plugin and the built-in ops all use), with
  // the engine objects the built-in ops add (FamilyExtras, autotune/family.h), and opens its
  // tuning database as above. kInvalidArgument as above, or naming the spec's missing field.
  template <class P>
  Expected<Family<P>> add(TypedKernelSpec<P> spec, FamilyExtras extras = {}) {
    auto st = addSpec(eraseSpec(std::move(spec)), std::move(extras));
    if (!st.ok()) return st.status();
    return Family<P>(this, *st);
  }
  // The same for an erased spec: p, in calls through the returned state, is what the spec's
  // callbacks get (the public API's kernels call the engine's type-erased entry points with it).
  Expected<detail::FamilyState*> addSpec(ErasedKernelSpec spec, FamilyExtras extras = {});

  // The family registered as `name`, for problems of type P: kNotFound when there is none,
  // kInvalidArgument when it was registered over another problem type. Thread-safe.
  template <class P>
  Expected<Family<P>> family(const std::string& name) {
    auto st = findErased(name, typeid(P));
    if (!st.ok()) return st.status();
    return Family<P>(this, *st);
  }

  // Offline tuning of keys recorded in an untuned-keys file (JSON lines written when tuning was
  // off). Each line's family must be registered with make_problem; lines that are not are
  // skipped with a message. Tunes regardless of options.tuning.
  Expected<OfflineTuneReport> tuneFromFile(const std::string& path, StreamHandle stream = {});

  const DeviceInfo& device() const;
  // With EngineOptions::context_later: waits for the device's context create() started and makes
  // it current on the calling thread; its error, if making it failed. Ok at once without it.
  Status awaitDevice();
  Backend& backend();
  Compiler& compiler();
  CodeObjectStore& store();
  // The database of a registered family; nullptr if unknown.
  TuningDatabase* database(const std::string& family);
  // Merges a database file's entries of `family` (TuningDatabase::importJson), each config checked
  // against the family's space on this device (a vendor config needs the family's vendor
  // candidates): kNotFound for an unregistered family; an entry with a foreign config is refused
  // and the others merged, then kInvalidArgument lists the refused keys with their reasons.
  Status importDatabase(const std::string& family, const std::string& text);
  const EngineOptions& options() const;

  // Isolation (autotune/isolation.h): what the worker supervisor has seen so far (all zero when
  // isolation was never used). Thread-safe; waits for a tuning run in progress.
  IsolationStats isolationStats() const;
  // Starts the isolation worker process now, without waiting for it, so its start-up (process,
  // device context, vendor library: about half a second on a GPU, bench/NOTES.md) overlaps the
  // caller's own set-up before the first tuning run (the CLI calls it before building its
  // problem). No-op when isolation is off or a worker already runs; a worker that cannot start is
  // reported by the tuning run that needs it, exactly as without this call. Thread-safe.
  void prestartWorker();
  // Sends a registered family's problem (its args_json) to the isolation worker now, without
  // waiting: the worker builds its inputs and reference while the caller makes its own, and the
  // first tuning run of that problem finds them built (the worker's start-up and problem are the
  // first candidate's wait). A tuning run of another problem replaces it. No-op when isolation is
  // off. Thread-safe.
  void prepareWorker(const std::string& family, const std::string& args_json);
  // Worker side of isolation: builds a problem of a registered family from its args_json
  // (make_problem). kNotFound for an unknown family, kUnsupported without make_problem.
  Expected<std::shared_ptr<void>> makeProblem(const std::string& family,
                                              const std::string& args_json) override;
  // Worker side of isolation: verifies and benchmarks one candidate for `p` (from makeProblem) in
  // THIS process, loading its code object from the store (recompiling if the entry is gone).
  // Every failure (unknown family, bad config, fault, wrong result, slower than best_ms) is the
  // returned result's status and reason. Serialised with tuning runs of this Engine.
  CandidateResult benchmarkCandidate(const std::string& family, const void* p,
                                     const WorkerCandidate& c, const BenchOptions& bench,
                                     double best_ms, StreamHandle s = {}) override;
  // Worker side of isolation: the harness's flush kernel compiled and loaded now (CandidateBench).
  void prepareBench(const BenchOptions& bench) override;

  // The result of p's key from the shared cache (EngineOptions::shared), with nothing compiled,
  // benchmarked or recorded: the entry is data, its winner checked against the family's space;
  // the report holds its winner and candidates, with from = "remote". The winner is compiled and
  // verified on p's first real call, which records it. nullopt when no shared cache is configured
  // or it holds no usable entry. Only p's key is computed: its buffers are not touched.
  // Thread-safe.
  std::optional<TuneReport> fetchShared(detail::FamilyState* f, const void* p);
  // Type-erased entry points behind Family<P> (p points at the problem).
  Status call(detail::FamilyState* f, const void* p, StreamHandle s, LaunchPlan* plan = nullptr);
  static bool planCurrent(detail::FamilyState* f, const LaunchPlan& plan);
  Status launchPlanned(const LaunchPlan& plan, void** args, StreamHandle s);
  Expected<TuneReport> tune(detail::FamilyState* f, const void* p, StreamHandle s);
  Expected<size_t> precompile(detail::FamilyState* f, const void* p, int threads, size_t depth);
  Expected<KeyReport> lookup(detail::FamilyState* f, const void* p);
  Status prepare(detail::FamilyState* f, const void* p, StreamHandle s);
  predict::Prediction predict(detail::FamilyState* f, const void* p);
  // Background tuning (options.background): waits until every queued key is tuned (or dropped);
  // the number of keys tuned in the background so far. Thread-safe.
  void waitBackground();
  uint64_t backgroundTuned() const;
  // Keys whose background race (autotune/predict.h: raceSet) replaced their prediction so far.
  uint64_t backgroundRaced() const;
  // The race's timing of `set` for p of `family` in this process (predict.h's budgets; <= 0:
  // failed), what background mode does before a key's full tuning; the held-out bench uses it.
  std::vector<double> raceTimes(const std::string& family, const void* p,
                                const std::vector<predict::RaceEntry>& set, StreamHandle s = {});
  // Drops f's keys queued for background tuning and waits for one of them in progress (an op
  // calls it before its state, which f's callbacks use, goes away). Thread-safe.
  void cancelBackground(detail::FamilyState* f);
  std::string keyString(detail::FamilyState* f, const void* p);
  static const std::string& familyName(detail::FamilyState* f);

 private:
  explicit Engine(std::unique_ptr<detail::TunerEngine> engine);
  Expected<detail::FamilyState*> addErased(detail::ErasedFamily f);
  Expected<detail::FamilyState*> findErased(const std::string& name, const std::type_info& type);
  std::unique_ptr<detail::TunerEngine> impl_;  // the facade's engine (autotune/engine.h)
};

template <class P>
Status Family<P>::operator()(const P& p, StreamHandle stream, LaunchPlan* plan) const {
  if (!state_) return Status::InvalidArgument("call of an unregistered (empty) ktune::Family");
  return tuner_->call(state_, &p, stream, plan);
}
template <class P>
bool Family<P>::planCurrent(const LaunchPlan& plan) const {
  return state_ && Engine::planCurrent(state_, plan);
}
template <class P>
Status Family<P>::launchPlanned(const LaunchPlan& plan, void** args, StreamHandle stream) const {
  return tuner_->launchPlanned(plan, args, stream);
}
template <class P>
Expected<TuneReport> Family<P>::tune(const P& p, StreamHandle stream) const {
  if (!state_) return Status::InvalidArgument("tune() on an empty ktune::Family");
  return tuner_->tune(state_, &p, stream);
}
template <class P>
Expected<KeyReport> Family<P>::lookup(const P& p) const {
  if (!state_) return Status::InvalidArgument("lookup() on an empty ktune::Family");
  return tuner_->lookup(state_, &p);
}
template <class P>
Status Family<P>::prepare(const P& p, StreamHandle stream) const {
  if (!state_) return Status::InvalidArgument("prepare() on an empty ktune::Family");
  return tuner_->prepare(state_, &p, stream);
}
template <class P>
Expected<size_t> Family<P>::precompile(const P& p, int threads, size_t depth) const {
  if (!state_) return Status::InvalidArgument("precompile() on an empty ktune::Family");
  return tuner_->precompile(state_, &p, threads, depth);
}
template <class P>
Expected<predict::Prediction> Family<P>::predict(const P& p) const {
  if (!state_) return Status::InvalidArgument("predict() on an empty ktune::Family");
  return tuner_->predict(state_, &p);
}
template <class P>
void Family<P>::cancelBackground() const {
  if (state_) tuner_->cancelBackground(state_);
}
template <class P>
std::optional<TuneReport> Family<P>::fetchShared(const P& p) const {
  if (!state_) return std::nullopt;
  return tuner_->fetchShared(state_, &p);
}
template <class P>
std::string Family<P>::key(const P& p) const {
  return state_ ? tuner_->keyString(state_, &p) : std::string();
}
template <class P>
const std::string& Family<P>::name() const {
  static const std::string kEmpty;
  return state_ ? Engine::familyName(state_) : kEmpty;
}

}  // namespace ktune
