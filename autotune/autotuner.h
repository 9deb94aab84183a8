// ktune registration API — an @triton.autotune-like way to register a kernel family and call it.
//
//   struct Saxpy { int64_t n; DevicePtr x, y; float a; };        // the user's "problem" type
//   KernelFamily<Saxpy> f;
//   f.name = "saxpy"; f.source = kSrc; f.entry = "ktune_saxpy";
//   f.space.addInts("BLOCK", {128, 256, 512}).addInts("VEC", {1, 2, 4});
//   f.key = [](const Saxpy& p, KeyBuilder& k) { k.add("n", nextPow2(p.n)); };
//   f.launch = [](const Config& c, const Saxpy& p, const DeviceInfo&) {
//     return LaunchDims{{unsigned(ceilDiv(p.n, c.getInt("BLOCK") * c.getInt("VEC")))},
//                       {unsigned(c.getInt("BLOCK"))}};
//   };
//   f.args = [](const Saxpy& p, KernelArgs& a) { a.add(p.n).add(p.x).add(p.y).add(p.a); };
//   f.default_config = Config{{"BLOCK", 256}, {"VEC", 1}};
//   KTUNE_ASSIGN_OR_RETURN(auto saxpy, tuner->add(std::move(f)));
//   KTUNE_RETURN_IF_ERROR(saxpy(problem, stream));       // tunes on first call per key
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
// Thread safety: Tuner and Family<P> methods may be called from any thread.
#pragma once

#include <cstdint>
#include <cstring>
#include <functional>
#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "autotune/benchmarker.h"
#include "autotune/database.h"
#include "autotune/isolation.h"
#include "autotune/search.h"
#include "autotune/verifier.h"
#include "base/config.h"
#include "base/options.h"
#include "compiler/compiler.h"
#include "runtime/backend.h"

namespace ktune {

class CodeObjectStore;

// A problem's cache key: up to kMaxFields named integer or short-string fields, built without
// allocation on the hot path. Field names must be string literals (they are kept by pointer);
// string values are copied (at most kMaxChars bytes in total, longer is an error at tuning time).
class KeyBuilder {
 public:
  static constexpr int kMaxFields = 12;
  static constexpr int kMaxChars = 96;
  KeyBuilder& add(const char* name, int64_t value);
  KeyBuilder& add(const char* name, std::string_view value);
  KeyBuilder& add(const char* name, const char* value) { return add(name, std::string_view(value)); }
  KeyBuilder& add(const char* name, int value) { return add(name, int64_t(value)); }
  // "M=128,N=4096,dtype=bf16" (field order as added).
  std::string toString() const;
  bool overflowed() const { return overflow_; }
  size_t hash() const;
  bool operator==(const KeyBuilder& o) const;
  void clear() { n_ = 0; chars_ = 0; overflow_ = false; }

 private:
  struct Field {
    const char* name;
    int64_t value;     // integer value, or offset of the string in chars_ buffer
    int16_t str_len;   // -1: integer field
  };
  Field f_[kMaxFields];
  char buf_[kMaxChars];
  int n_ = 0, chars_ = 0;
  bool overflow_ = false;
};
struct KeyBuilderHash {
  size_t operator()(const KeyBuilder& k) const { return k.hash(); }
};

// Bucketing helpers for key functions: nearby shapes share one key (and one tuning).
int64_t nextPow2(int64_t v);                  // 1, 2, 4, ...; v <= 1 -> 1
int64_t roundUpTo(int64_t v, int64_t multiple);
int64_t ceilDiv(int64_t a, int64_t b);
// Powers of two up to `cap`, then multiples of `cap` (e.g. row counts: 1..1024 pow2, then 1024s).
int64_t bucketPow2Capped(int64_t v, int64_t cap);

struct LaunchDims {
  Dim3 grid, block;
  size_t shared = 0;  // dynamic shared bytes
};

using Defines = std::vector<std::pair<std::string, std::string>>;

// A non-JIT candidate, e.g. a vendor-library algorithm ("cublaslt:idx=3;algo=..."). Its id must
// let vendor_launch re-create it in a later process.
struct VendorCandidate {
  std::string id;
  std::string source;  // "cublaslt", "hipblaslt", ...
};

// Descriptor of a kernel family over the user's problem type P (any copyable struct).
// Required: name, source (unless only vendor candidates), key, launch, args.
template <class P>
struct KernelFamily {
  std::string name;         // database file name: [A-Za-z0-9_.-]+
  std::string source;       // kernel source text (may #include "prelude.cuh")
  std::string source_name;  // for diagnostics; default "<name>.cu"
  std::string entry;        // extern "C" entry name
  // Optional: entry per config/problem (template name expressions); default: `entry`.
  std::function<std::string(const Config&, const P&)> entry_fn;
  ConfigSpace space;            // enumerated for the device's backend ("cuda"/"hip" by arch)
  std::vector<Config> configs;  // if non-empty: used instead of `space`
  // Config + problem -> -D defines. Default: every config parameter as NAME=value.
  std::function<Defines(const Config&, const P&)> defines;
  std::vector<std::string> compile_options;
  std::function<void(const P&, KeyBuilder&)> key;
  std::function<LaunchDims(const Config&, const P&, const DeviceInfo&)> launch;
  std::function<void(const P&, KernelArgs&)> args;
  // Optional, runs before EVERY launch of a config, hot path included (e.g. zero a split-K
  // accumulator). Timed as part of the candidate.
  std::function<Status(const Config&, const P&, StreamHandle)> before_launch;
  // Optional, runs before every tuning run (verification and each timed run, untimed) and before
  // the real launch that follows tuning: reset outputs / restore in-place inputs / re-poison.
  std::function<Status(const P&, StreamHandle)> pre_run;
  // Optional, replaces pre_run before each TIMED run (untimed) when set: what timing alone needs
  // (e.g. restore an in-place input) without what only verification needs (re-poisoning outputs
  // that every run overwrites costs device time on every sample).
  std::function<Status(const P&, StreamHandle)> pre_timed_run;
  // Optional verification after one run of a candidate (the stream is synchronised first).
  // Return a VerifyResult (ok=false -> candidate rejected as kWrongResult), or an error Status.
  std::function<Expected<VerifyResult>(const P&, StreamHandle)> verify;
  // Config used when tuning is off or when no candidate passes verification-free fallback.
  Config default_config;
  // Optional static pruning: a reason to skip the config without benchmarking, or nullopt.
  std::function<std::optional<std::string>(const Config&, const CodeObject&, const DeviceInfo&)>
      prune;
  // Optional vendor candidates and how to launch one by id.
  std::function<std::vector<VendorCandidate>(const P&)> vendor_candidates;
  std::function<Status(const std::string& id, const P&, StreamHandle)> vendor_launch;
  // Optional: JSON object text describing the problem (recorded for untuned keys; its fields are
  // written beside "family", "key" and "date", so do not use those names), and its
  // inverse for offline tuning (tuneFromFile): build a problem, with its own buffers, from it.
  std::function<std::string(const P&)> args_json;
  std::function<Expected<std::shared_ptr<P>>(const std::string& args_json)> make_problem;
};

// Which config runs for a problem, and why.
struct Selection {
  std::string key;
  std::string config;  // config string or vendor id
  std::string source;  // "jit", "default", vendor source
  std::string origin;  // "memory", "database", "pinned", "default" (not tuned yet / tuning off)
  TimingStats stats;
};

// The engine's options: the public ktune::TunerOptions (every user knob, the environment's
// overlay, the device ordinal) plus engine-only hooks. Each setting lives in exactly one place.
struct EngineOptions {
  // Every user-facing knob (include/ktune/options.hpp): cache_dir, tuning, verbose,
  // compile_threads, pipeline, warmup_ms/rep_ms (the do_bench budgets), static_prune,
  // retry_failed, record_untuned_path, database_path, isolate, worker_path, worker_plugins,
  // device.
  Options options;
  // Watchdog and fallback of isolated benchmarking (used when options.isolate). See isolation.h.
  IsolationOptions isolation;
  // Null = compilerForArch(device arch).
  std::shared_ptr<Compiler> compiler;
  std::ostream* log = nullptr;  // verbose output; null = std::cerr
  std::function<void(const TuneProgress&)> progress;
  std::shared_ptr<SearchStrategy> search;  // null = exhaustiveSearch()
  // do_bench harness settings (flush, run counts, early rejection). The budgets are
  // options.warmup_ms / options.rep_ms: Tuner::create rejects a `bench` whose warmup_ms/rep_ms
  // differ from BenchOptions' defaults instead of silently replacing them.
  BenchOptions bench;
  // Prune candidates whose compiler report shows spills (when options.static_prune), unless
  // every candidate spills.
  bool prune_spills = true;
};

namespace detail {
// Type-erased family (what KernelFamily<P> becomes inside the tuner).
struct ErasedFamily {
  std::string name, source, source_name, entry;
  std::function<std::string(const Config&, const void*)> entry_fn;
  ConfigSpace space;
  std::vector<Config> configs;
  std::function<Defines(const Config&, const void*)> defines;
  std::vector<std::string> compile_options;
  std::function<void(const void*, KeyBuilder&)> key;
  std::function<LaunchDims(const Config&, const void*, const DeviceInfo&)> launch;
  std::function<void(const void*, KernelArgs&)> args;
  std::function<Status(const Config&, const void*, StreamHandle)> before_launch;
  std::function<Status(const void*, StreamHandle)> pre_run;
  std::function<Status(const void*, StreamHandle)> pre_timed_run;
  std::function<Expected<VerifyResult>(const void*, StreamHandle)> verify;
  Config default_config;
  std::function<std::optional<std::string>(const Config&, const CodeObject&, const DeviceInfo&)>
      prune;
  std::function<std::vector<VendorCandidate>(const void*)> vendor_candidates;
  std::function<Status(const std::string&, const void*, StreamHandle)> vendor_launch;
  std::function<std::string(const void*)> args_json;
  std::function<Expected<std::shared_ptr<void>>(const std::string&)> make_problem;
};

template <class P>
ErasedFamily erase(KernelFamily<P>&& f) {
  ErasedFamily e;
  e.name = std::move(f.name);
  e.source = std::move(f.source);
  e.source_name = std::move(f.source_name);
  e.entry = std::move(f.entry);
  if (f.entry_fn)
    e.entry_fn = [g = std::move(f.entry_fn)](const Config& c, const void* p) {
      return g(c, *static_cast<const P*>(p));
    };
  e.space = std::move(f.space);
  e.configs = std::move(f.configs);
  if (f.defines)
    e.defines = [g = std::move(f.defines)](const Config& c, const void* p) {
      return g(c, *static_cast<const P*>(p));
    };
  e.compile_options = std::move(f.compile_options);
  if (f.key)
    e.key = [g = std::move(f.key)](const void* p, KeyBuilder& k) {
      g(*static_cast<const P*>(p), k);
    };
  if (f.launch)
    e.launch = [g = std::move(f.launch)](const Config& c, const void* p, const DeviceInfo& d) {
      return g(c, *static_cast<const P*>(p), d);
    };
  if (f.args)
    e.args = [g = std::move(f.args)](const void* p, KernelArgs& a) {
      g(*static_cast<const P*>(p), a);
    };
  if (f.before_launch)
    e.before_launch = [g = std::move(f.before_launch)](const Config& c, const void* p,
                                                       StreamHandle s) {
      return g(c, *static_cast<const P*>(p), s);
    };
  if (f.pre_run)
    e.pre_run = [g = std::move(f.pre_run)](const void* p, StreamHandle s) {
      return g(*static_cast<const P*>(p), s);
    };
  if (f.pre_timed_run)
    e.pre_timed_run = [g = std::move(f.pre_timed_run)](const void* p, StreamHandle s) {
      return g(*static_cast<const P*>(p), s);
    };
  if (f.verify)
    e.verify = [g = std::move(f.verify)](const void* p, StreamHandle s) {
      return g(*static_cast<const P*>(p), s);
    };
  e.default_config = std::move(f.default_config);
  e.prune = std::move(f.prune);
  if (f.vendor_candidates)
    e.vendor_candidates = [g = std::move(f.vendor_candidates)](const void* p) {
      return g(*static_cast<const P*>(p));
    };
  if (f.vendor_launch)
    e.vendor_launch = [g = std::move(f.vendor_launch)](const std::string& id, const void* p,
                                                       StreamHandle s) {
      return g(id, *static_cast<const P*>(p), s);
    };
  if (f.args_json)
    e.args_json = [g = std::move(f.args_json)](const void* p) {
      return g(*static_cast<const P*>(p));
    };
  if (f.make_problem)
    e.make_problem = [g = std::move(f.make_problem)](
                         const std::string& j) -> Expected<std::shared_ptr<void>> {
      auto r = g(j);
      if (!r.ok()) return r.status();
      return std::shared_ptr<void>(std::move(r).value());
    };
  return e;
}

struct FamilyState;  // per-family runtime state, owned by the Tuner
}  // namespace detail

class Tuner;

// Handle to a registered family; cheap to copy; valid while its Tuner lives.
template <class P>
class Family {
 public:
  Family() = default;
  // Runs the kernel for `p` on `stream` (tuning first if needed; see the file comment).
  Status operator()(const P& p, StreamHandle stream = {}) const;
  // Forces a tuning run for p's key (even if tuned), records it, and returns the report.
  Expected<TuneReport> tune(const P& p, StreamHandle stream = {}) const;
  // Which config would run for p, without compiling, tuning or launching.
  Expected<Selection> lookup(const P& p) const;
  // The key string of p.
  std::string key(const P& p) const;
  const std::string& name() const;
  bool valid() const { return state_ != nullptr; }

 private:
  friend class Tuner;
  Family(Tuner* t, detail::FamilyState* s) : tuner_(t), state_(s) {}
  Tuner* tuner_ = nullptr;
  detail::FamilyState* state_ = nullptr;
};

// Summary of tuneFromFile.
struct OfflineTuneReport {
  int lines = 0, tuned = 0, already_tuned = 0, skipped = 0;
  std::vector<std::string> messages;  // one per skipped/failed line, with the reason
};

class Tuner {
 public:
  // Opens the store (<cache_dir>) and picks the compiler. Fails with the reason when the device
  // ordinal is missing, the cache directory is unsafe, or no compiler targets the device's arch.
  static Expected<std::unique_ptr<Tuner>> create(std::shared_ptr<Backend> backend,
                                                 EngineOptions opts = {});
  ~Tuner();
  Tuner(const Tuner&) = delete;
  Tuner& operator=(const Tuner&) = delete;

  // Registers a family and opens its tuning database (<cache>/db/<name>.json, or
  // options.database_path). kInvalidArgument for a missing required field, a bad name, or a
  // name already registered.
  template <class P>
  Expected<Family<P>> add(KernelFamily<P> f) {
    auto st = addErased(detail::erase(std::move(f)));
    if (!st.ok()) return st.status();
    return Family<P>(this, *st);
  }

  // Offline tuning of keys recorded in an untuned-keys file (JSON lines written when tuning was
  // off). Each line's family must be registered with make_problem; lines that are not are
  // skipped with a message. Tunes regardless of options.tuning.
  Expected<OfflineTuneReport> tuneFromFile(const std::string& path, StreamHandle stream = {});

  const DeviceInfo& device() const;
  Backend& backend();
  Compiler& compiler();
  CodeObjectStore& store();
  // The database of a registered family; nullptr if unknown.
  TuningDatabase* database(const std::string& family);
  const EngineOptions& options() const;

  // Isolation (autotune/isolation.h): what the worker supervisor has seen so far (all zero when
  // isolation was never used). Thread-safe; waits for a tuning run in progress.
  IsolationStats isolationStats() const;
  // Starts the isolation worker process now, without waiting for it, so its start-up (process,
  // device context, vendor library: ~0.5 s on the H100) overlaps the caller's own set-up before
  // the first tuning run (the CLI calls it before building its problem). No-op when isolation is
  // off or a worker already runs; a worker that cannot start is reported by the tuning run that
  // needs it, exactly as without this call. Thread-safe.
  void prestartWorker();
  // Worker side of isolation: builds a problem of a registered family from its args_json
  // (make_problem). kNotFound for an unknown family, kUnsupported without make_problem.
  Expected<std::shared_ptr<void>> makeProblem(const std::string& family,
                                              const std::string& args_json);
  // Worker side of isolation: verifies and benchmarks one candidate for `p` (from makeProblem) in
  // THIS process, loading its code object from the store (recompiling if the entry is gone).
  // Every failure (unknown family, bad config, fault, wrong result, slower than best_ms) is the
  // returned result's status and reason. Serialised with tuning runs of this Tuner.
  CandidateResult benchmarkCandidate(const std::string& family, const void* p,
                                     const WorkerCandidate& c, const BenchOptions& bench,
                                     double best_ms, StreamHandle s = {});

  // Type-erased entry points behind Family<P> (p points at the problem).
  Status call(detail::FamilyState* f, const void* p, StreamHandle s);
  Expected<TuneReport> tune(detail::FamilyState* f, const void* p, StreamHandle s);
  Expected<Selection> lookup(detail::FamilyState* f, const void* p);
  std::string keyString(detail::FamilyState* f, const void* p);
  static const std::string& familyName(detail::FamilyState* f);

 private:
  struct Impl;
  explicit Tuner(std::unique_ptr<Impl> impl);
  Expected<detail::FamilyState*> addErased(detail::ErasedFamily f);
  std::unique_ptr<Impl> impl_;
};

template <class P>
Status Family<P>::operator()(const P& p, StreamHandle stream) const {
  if (!state_) return Status::InvalidArgument("call of an unregistered (empty) ktune::Family");
  return tuner_->call(state_, &p, stream);
}
template <class P>
Expected<TuneReport> Family<P>::tune(const P& p, StreamHandle stream) const {
  if (!state_) return Status::InvalidArgument("tune() on an empty ktune::Family");
  return tuner_->tune(state_, &p, stream);
}
template <class P>
Expected<Selection> Family<P>::lookup(const P& p) const {
  if (!state_) return Status::InvalidArgument("lookup() on an empty ktune::Family");
  return tuner_->lookup(state_, &p);
}
template <class P>
std::string Family<P>::key(const P& p) const {
  return state_ ? tuner_->keyString(state_, &p) : std::string();
}
template <class P>
const std::string& Family<P>::name() const {
  static const std::string kEmpty;
  return state_ ? Tuner::familyName(state_) : kEmpty;
}

}  // namespace ktune
