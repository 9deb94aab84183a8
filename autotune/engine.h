// The engine behind the facade Engine (internal; the facade's files include it, never the reverse:
// dev/include_graph.py): the registered families with their selected configs, the loaded
// functions, the benchmark lock and the isolation worker. A tuning run (autotune/tuning_run.h)
// works on one family and key through it.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <iostream>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <ostream>
#include <set>
#include <shared_mutex>
#include <string>
#include <tuple>
#include <utility>
#include <unordered_map>
#include <vector>

#include "autotune/benchmarker.h"
#include "autotune/database.h"
#include "autotune/engine_types.h"
#include "autotune/family.h"
#include "autotune/isolation.h"
#include "autotune/journal.h"
#include "autotune/key.h"
#include "autotune/engine_shapes.h"

namespace ktune {

class CodeObjectStore;

namespace detail {

// What runs for one key: a JIT config with its loaded function, or a vendor candidate.
struct Selected {
  Config config;
  std::string config_str;
  std::string source = "jit";  // "jit" or a vendor source
  bool vendor = false;
  FunctionHandle fn;
  std::string code_object_key;  // of fn (JIT), "" for vendor candidates
  // The launch dims, computed once at selection for a family with launch_per_key.
  LaunchDims dims;
  bool dims_cached = false;
  unsigned launch_flags = 0;  // LaunchFlag bits of a call's launch (TunerEngine::launchFlags)
  std::string origin;  // "memory" (tuned here), "database", "pinned", "default", "remote", "waited"
  BenchStats stats;
  // A vendor selection whose kernels are known to be loaded in this process (it has run here
  // outside a capture): its launches skip the first-launch check (DynamicShapes::launchVendorFirst).
  mutable std::atomic<bool> loaded{false};
};

struct FamilyState {
  ErasedFamily f;
  std::shared_ptr<TuningDatabase> db;
  // Partial results of tuning runs (appended per candidate; compacted when a key is recorded).
  std::unique_ptr<TuningJournal> journal;
  mutable std::shared_mutex mu;  // guards map (readers: the hot path)
  // Map nodes are never erased, so a key's address in the map stays valid while the family lives.
  std::unordered_map<KeyBuilder, Selected*, KeyBuilderHash> map;
  std::vector<std::unique_ptr<Selected>> owned;  // never freed before the tuner: no dangling hits
  // Unique in the process (an address can be reused by a later family): a thread's last hit
  // (Engine::call) names its family by id. `epoch` changes whenever `map` does, so a cached hit is
  // used only while the map still says the same.
  uint64_t id = 0;
  std::atomic<uint64_t> epoch{0};
  std::mutex slow_mu;  // one miss (database load / tuning) at a time per family
};

// What runs for `p` when it is not tuned: {vendor id, vendor source} of the family's vendor
// default, else {JIT default config (default_for, else default_config), "jit"}; {"", ""} for a
// vendor-only family without a vendor default. `vendor_pick`, when given, gets the vendor's own
// pick in place of its default (VendorCandidate::predicted; {"", ""} when none or no vendor
// default), from the same list.
std::pair<std::string, std::string> defaultOf(const ErasedFamily& f, const void* p,
                                              std::pair<std::string, std::string>* vendor_pick = nullptr);

// A recorded, pinned or shared winner must be one of the family's own configs: OK, or
// kInvalidArgument naming what is not (a pin may use values outside the lists, never parameters
// the space lacks).
Status checkOwnConfig(const ErasedFamily& f, const Config& c, const std::string& origin);

// Config + problem -> the -D defines it compiles with (the family's own, or every parameter).
Defines definesFor(const ErasedFamily& f, const Config& c, const void* p);

struct Cand;
class DevicePool;

// A config's compile request, its compiler and its code-object key (TunerEngine::keyedRequest).
struct KeyedRequest {
  CompileRequest req;
  Compiler* compiler = nullptr;
  std::string key;
};

// The winner's binary as the tuning run compiled it, so the caller loads it without reading the
// store again.
struct WinnerBinary {
  std::string code_object_key;
  CodeObject co;
};

// The engine. Its state is private: the facade (Engine), the tuning run's stages, the finalists,
// the device pool and the dynamic shapes use its methods (dev/include_graph.py checks the stages
// name no field); only the engine's own member functions (engine.cc, bench_stage.cc,
// shared_stage.cc, tuning_run.cc's tuneKey) touch the fields.
class TunerEngine {
 public:
  // Checks the options against the backend's devices and opens the store and the compiler (the
  // errors Engine::create documents).
  static Expected<std::unique_ptr<TunerEngine>> create(std::shared_ptr<Backend> backend,
                                                       EngineOptions opts);
  // Stops background tuning, then unloads every module it loaded.
  ~TunerEngine();
  TunerEngine(const TunerEngine&) = delete;
  TunerEngine& operator=(const TunerEngine&) = delete;

  // ---- The stages' interface.
  // Every user knob (include/ktune/options.hpp) and the engine-only settings (bench harness,
  // search strategy, finalist rounds, isolation).
  const Options& options() const { return opts.options; }
  // The LaunchFlag bits a call of `c` launches with: kLaunchProgrammaticWait where the family says
  // the config's kernel waits and TunerOptions::pdl is on. Tuning runs never use them.
  unsigned launchFlags(const ErasedFamily& f, const Config& c) const {
    return opts.options.pdl && f.programmatic_wait && f.programmatic_wait(c)
               ? kLaunchProgrammaticWait
               : 0u;
  }
  const EngineOptions& engineOptions() const { return opts; }
  const DeviceInfo& deviceInfo() const { return device; }
  Backend& runtime() { return *backend; }
  Compiler& compiler() { return *compiler_; }
  CodeObjectStore& store() { return *store_; }
  // "cuda" / "hip" / "" for ConfigSpace::enumerate.
  const std::string& spaceBackend() const { return space_backend; }
  Benchmarker& benchmarker() { return *bench; }
  // One benchmark at a time on the device: timings must not overlap. Held around tuning runs,
  // worker start-up and the worker side's candidates.
  std::mutex& benchLock() { return bench_mu; }
  // Predictions, background tuning and capture-safe selection (autotune/engine_shapes.h).
  DynamicShapes& dynamicShapes() { return *shapes; }
  // Several devices (Options::devices): the pool; null on one device.
  DevicePool* devicePool() const { return devices.get(); }
  // The worker has timed vendor candidates: its vendor library's one-time set-up is done, so a
  // later key's race has nothing to hide behind an early wave (tuning_run_early.cc).
  bool workerVendorWarm() const { return worker_vendor_warm.load(); }
  void noteWorkerVendorWarm() { worker_vendor_warm.store(true); }
  // Starts building a family's problem in every worker now (the pool's, else the engine's own
  // worker, started if needed), so it overlaps the compiles. The caller holds bench_mu.
  void prepareWorkers(const std::string& family, const std::string& args_json);
  // Counts a fallback from isolation to in-process benchmarking; true when it is to be said (the
  // first time for this family and reason, or always with verbose).
  bool noteFallback(const std::string& family, const std::string& why);
  // Logs one line under the progress lock (compile threads and the benchmarking thread report
  // concurrently).
  void logLine(const std::string& line) {
    std::lock_guard<std::mutex> l(progress_mu);
    log() << line << "\n";
  }

  // ---- The facade's interface (Engine; autotune/autotuner.h documents each).
  // EngineOptions::context_later: waits for the context create() started and makes it current on
  // the calling thread (Engine::awaitDevice). Ok at once without context_later.
  Status awaitContext();
  // Registers a checked family and opens its database (the facade checked its fields).
  Expected<FamilyState*> addFamily(ErasedFamily f);
  // The database of a registered family; nullptr if unknown.
  TuningDatabase* database(const std::string& family);
  // Starts the isolation worker(s) now (Engine::prestartWorker).
  void prestartWorker();
  // Sends a family's problem to the worker(s) now (Engine::prepareWorker).
  void prepareWorkerEarly(const std::string& family, const std::string& args_json);
  IsolationStats isolationStats();
  // Worker side of isolation: the harness's flush kernel compiled and loaded now.
  void prepareBench(const BenchOptions& b);

  std::ostream& log() { return opts.log ? *opts.log : std::cerr; }
  // Serialised: compile threads and the benchmarking thread report concurrently.
  void progress(const TuneProgress& pr) {
    if (!opts.progress) return;
    std::lock_guard<std::mutex> l(progress_mu);
    opts.progress(pr);
  }

  // The registered family called `name`, or null.
  FamilyState* findFamily(const std::string& name);
  Expected<FunctionHandle> loadFunction(const std::string& co_key, const CodeObject& co);
  // Whether loadFunction has loaded the object `co_key` in this process (it then needs no binary).
  bool functionLoaded(const std::string& co_key);
  // d's grid as launched: a persistent cluster grid (LaunchDims::persistent_cluster) shrunk to
  // the resident clusters of `fn` (residentClusterGrid, asked once per function and dims).
  Dim3 launchGrid(FunctionHandle fn, const LaunchDims& d);
  // from_shared: before compiling, the shared cache may supply the object (only one its fleet
  // key authenticates; SharedTuning::fetchObject).
  Expected<CodeObject> compileConfig(FamilyState& fs, const Config& c, const void* p,
                                     std::string* co_key, bool* hit, std::string* note,
                                     bool from_shared = false);
  // Whether the code-object store holds config `c`'s object (its metadata; a corrupt entry is
  // found, and compiled again, only when it is loaded). False when the request cannot be made.
  bool inStore(FamilyState& fs, const Config& c, const void* p);
  // The request of config `c`: the family's source with the config's defines, or the module its
  // source_fn generated (errors name the config).
  Expected<CompileRequest> requestFor(const ErasedFamily& f, const Config& c, const void* p);
  // The compiler of a language: the device's for C++, the IR front door for the rest.
  Expected<Compiler*> compilerOf(Language l);
  // A Selected for a winner already loaded by the tuning run, or compiled/loaded now.
  Expected<std::unique_ptr<Selected>> selectConfig(FamilyState& fs, const void* p,
                                                   const std::string& config_str,
                                                   const std::string& source,
                                                   const std::string& origin,
                                                   const WinnerBinary* bin = nullptr);
  // `report`, when given, receives the tuning run's report (when *tuned).
  Expected<Selected*> resolve(FamilyState& fs, const void* p, const KeyBuilder& kb,
                              StreamHandle s, bool* tuned, TuneReport* report = nullptr);
  // Runs a tuning run (autotune/tuning_run.h); the caller holds bench_mu. `bin`, when given,
  // receives the winner's binary (JIT winners compiled by this run).
  Expected<TuneReport> tuneKey(FamilyState& fs, const void* p, const std::string& key,
                               StreamHandle s, WinnerBinary* bin = nullptr);
  // Launches `sel` for `p`. With `plan`: fills its function and dims when the launch is a plain
  // JIT launch (the caller sets its epoch and clears its family first).
  Status launchSelected(FamilyState& fs, const Selected& sel, const void* p, StreamHandle s,
                        LaunchPlan* plan = nullptr);

  // Shared results (opts.shared; autotune/shared_stage.cc). fromShared: the published entry of
  // `key`, verified, recorded in the local database and selected (origin "remote"); null on a
  // miss or when it is rejected. awaitTurn: single flight — a lease to hold while tuning, or null
  // with *sel set when another process tuned the key meanwhile (origin "waited").
  // publishShared: shares the recorded entry. adoptShared: a shared entry compiled, verified once
  // on `p` (verifyBeforeUse), recorded and selected; null (with a warning) when it fails.
  Selected* fromShared(FamilyState& fs, const void* p, const KeyBuilder& kb, const std::string& key,
                       StreamHandle s);
  std::unique_ptr<TuningLease> awaitTurn(FamilyState& fs, const void* p, const KeyBuilder& kb,
                                         const std::string& key, StreamHandle s, Selected** sel);
  // The shared entry of `key` as data (for a report: nothing compiled, run or recorded), when its
  // winner is one of the family's own configs; nullopt otherwise.
  std::optional<DbEntry> peekShared(FamilyState& fs, const std::string& key);
  Selected* adoptShared(FamilyState& fs, const void* p, const KeyBuilder& kb,
                        const std::string& key, DbEntry e, const std::string& origin,
                        StreamHandle s);
  // Runs `sel` once on `p` (pre_run, launch, synchronise) and checks its output with the family's
  // verify: a fault, launch error or wrong result is the returned status.
  Status verifyBeforeUse(FamilyState& fs, const void* p, const Selected& sel, StreamHandle s);
  // A shared-cache problem: the first is printed as a warning even without KTUNE_VERBOSE (then
  // shared_warned is set), every one with it.
  void warnShared(const std::string& family, const std::string& key, const std::string& what);
  void publishShared(FamilyState& fs, const std::string& key);
  Selected* publish(FamilyState& fs, const KeyBuilder& kb, std::unique_ptr<Selected> sel);
  // What runs for an untuned key with tuning off: the family's vendor default (a
  // VendorCandidate with is_default), else its JIT default (default_for, else default_config).
  // kUnsupported for a vendor-only family without a vendor default.
  Expected<std::unique_ptr<Selected>> selectDefault(FamilyState& fs, const void* p,
                                                    const std::string& key);

  // A device fault the backend cannot clear (CUDA: an illegal address) loses this process's
  // context: every later launch, load and allocation fails with it. noteFault, after a candidate
  // failed in this process, probes the device; when the fault stays, the candidate is named as
  // the cause and contextLost() answers every later candidate "not run" (kUnavailable: never
  // remembered as that candidate's own failure). Isolation (KTUNE_ISOLATE=1) survives such faults.
  void noteFault(const Cand& c);
  Status contextLost();

  // Verify + measure one live candidate in this process (early rejection against best); fills
  // c.r (status, reason, stats, date). Faults and launch errors are results.
  // `rep`, when given, accumulates the load / verify / measure wall times.
  void benchOne(const ErasedFamily& f, const void* p, Cand& c, const BenchOptions& bo_in,
                double best, StreamHandle s, TuneReport* rep = nullptr);
  // Synchronises `s` and verifies the candidate's output (f.verify); `when` (" after timed run
  // 2") goes into a mismatch's reason. Raises c.r.max_error.
  Status verifyOutput(const ErasedFamily& f, const void* p, Cand& c, StreamHandle s,
                      const std::string& when);
  // Creates the worker supervisor (not the process) once; false with *why when no worker
  // executable is found.
  bool makeWorker(std::string* why);
  // Runs a whole batch in the worker of the tuner's own device: with several devices the pool's
  // worker of that device (device_pool.h), else `worker` (made now if needed). The caller holds
  // bench_mu.
  using ResultFn = std::function<void(size_t, const CandidateResult&)>;
  Status runInWorker(const WorkerBatch& b, const ResultFn& on_result);
  // How to start a worker on device `dev` (kNotFound when there is no worker executable).
  Expected<WorkerLaunch> workerLaunch(int dev) const;
  // Worker side of isolation: Engine::benchmarkCandidate (see candidate_bench.h).
  CandidateResult benchCandidate(const std::string& family, const void* p,
                                 const WorkerCandidate& wc, const BenchOptions& bench,
                                 double best_ms, StreamHandle s);
  // Whether a worker that cannot serve a family may be replaced by in-process benchmarking:
  // never when the user asked for isolation (KTUNE_ISOLATE=1, or isolate set in code without
  // IsolationOptions::fallback_in_process).
  bool mayFallBack() const {
    return opts.isolation.fallback_in_process && !opts.options.isolate_explicit;
  }


 private:
  // The request of config `c`, its compiler and its code-object key.
  Expected<KeyedRequest> keyedRequest(FamilyState& fs, const Config& c, const void* p);
  TunerEngine() = default;

  std::shared_ptr<Backend> backend;
  EngineOptions opts;
  // EngineOptions::context_later: the thread making the device's context, and what it returned.
  std::mutex context_mu;
  std::thread context_thread;
  Status context_status;
  DeviceInfo device;
  std::shared_ptr<Compiler> compiler_;
  std::shared_ptr<CodeObjectStore> store_;
  std::mutex ir_mu;  // guards ir_compiler
  std::shared_ptr<Compiler> ir_compiler;  // opts.ir_compiler, or the IR front door once needed
  Validator validator;
  std::string space_backend;  // "cuda" / "hip" / "" for ConfigSpace::enumerate

  std::mutex families_mu;
  std::vector<std::unique_ptr<FamilyState>> families;

  std::mutex modules_mu;
  std::unordered_map<std::string, FunctionHandle> functions;  // code-object key -> function
  std::vector<ModuleHandle> modules;
  // launchGrid's answers: (function, block threads, shared, cluster) -> the most blocks.
  std::map<std::tuple<void*, unsigned, size_t, unsigned>, unsigned> resident_blocks;

  std::mutex bench_mu;  // one benchmark at a time on the device: timings must not overlap
  std::unique_ptr<Benchmarker> bench;

  // Isolation: the worker (started on first use, reused across tuning runs; guarded by bench_mu).
  std::unique_ptr<WorkerSupervisor> worker;
  IsolationStats iso_fallback;  // counters kept when no supervisor exists
  std::set<std::string> iso_warned;  // fallback warnings already printed
  std::atomic<bool> worker_vendor_warm{false};  // workerVendorWarm()

  // Options::devices with more than one device: the candidates are spread over them
  // (autotune/device_pool.h). Null on one device. Declared after the members it uses, so it goes
  // first (its lane threads and their workers stop before the rest is torn down).
  std::shared_ptr<DevicePool> devices;

  std::mutex progress_mu;  // serialises log lines and progress callbacks
  std::atomic<bool> shared_warned{false};  // see warnShared
  std::mutex lost_mu;
  std::string context_lost_by;  // empty while the context is usable (noteFault)

  // Predictions, background tuning and capture-safe selection (autotune/engine_shapes.h). Last: its
  // thread stops before anything it uses is torn down (~TunerEngine stops it first).
  std::unique_ptr<DynamicShapes> shapes = std::make_unique<DynamicShapes>(*this);
};

// A recorded, pinned or imported winner must be one of family f's own configs: kInvalidArgument
// naming the parameter otherwise ("pinned" allows values outside the lists, never new parameters).
Status checkOwnConfig(const ErasedFamily& f, const Config& c, const std::string& origin);

}  // namespace detail

}  // namespace ktune
