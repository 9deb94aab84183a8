// ktune — registering a kernel family over your own problem type: the @triton.autotune-like API.
//
//   struct Saxpy { int64_t n; ktune::DevicePtr x, y; float a; };     // your problem type
//   ktune::TypedKernelSpec<Saxpy> s;
//   s.name = "saxpy"; s.source = kSource; s.entry = "my_saxpy";
//   s.space = {{"BLOCK", {128, 256, 512}}, {"VEC", {1, 2, 4}}};
//   s.constraint = [](const ktune::Knobs& c) { return c["BLOCK"] * c["VEC"] <= 2048; };
//   s.key = [](const Saxpy& p, ktune::KeyFields& k) { k.add("n", ktune::pow2Ceil(p.n)); };
//   s.launch = [](const ktune::Knobs& c, const Saxpy& p, const ktune::DeviceFacts&) {
//     return ktune::Launch::linear(ktune::cdiv(p.n, c["BLOCK"] * c["VEC"]), c["BLOCK"]);
//   };
//   s.args = [](const Saxpy& p, ktune::ArgPack& a) { a.add(p.n).add(p.x).add(p.y).add(p.a); };
//   KTUNE_ASSIGN_OR_RETURN(auto saxpy, ktune::addTypedKernel(*tuner, std::move(s)));
//   KTUNE_RETURN_IF_ERROR(saxpy(Saxpy{n, x, y, 2.f}, stream));  // tunes on a new key's first call
//
// The space's knobs reach the kernel as -D NAME=value defines (TypedKernelSpec::defines narrows
// them). A call runs as a call of a Kernel registered from data (kernel.hpp): key -> in-memory
// table (hit: the launch callback, the argument callback and a launch; no allocation) -> tuning
// database -> tuning. The callbacks run on the calling thread, or on the tuning thread while a key
// is tuned; they must not call back into the tuner. This is the one registration of a kernel
// family: the string-based KernelSpec (kernel.hpp), what the C API and the other languages use, is
// parsed into a spec of this kind and registered through addErasedKernel, and the library's own
// ops (GEMM, RMSNorm, SiLU·Mul) and isolation-worker plugins register specs of this kind too.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <type_traits>
#include <typeinfo>
#include <utility>
#include <vector>

#include "ktune/export.h"
#include "ktune/kernel.hpp"
#include "ktune/report.hpp"
#include "ktune/status.hpp"
#include "ktune/tuner.hpp"
#include "ktune/types.hpp"

namespace ktune {

inline int64_t cdiv(int64_t a, int64_t b) { return b == 0 ? 0 : (a + b - 1) / b; }
// The smallest power of two >= n (1 for n <= 1): a key that buckets sizes.
inline int64_t pow2Ceil(int64_t n) {
  int64_t p = 1;
  while (p < n && p < (int64_t{1} << 62)) p <<= 1;
  return p;
}

// The knob values of one config, as the callbacks see them.
class KTUNE_API Knobs {
 public:
  // The knob's value; 0 for a name the space does not have.
  int64_t get(const char* name) const;
  int64_t operator[](const char* name) const { return get(name); }
  // "BLOCK=256,VEC=2".
  std::string toString() const;

  explicit Knobs(const void* config) : config_(config) {}

 private:
  friend struct EngineViews;  // the library's own ops read the engine's config behind the view
  const void* config_;
};

// The key of a problem: named integer fields, in order. A name is kept by pointer, so pass string
// literals (or strings that live as long as the tuner).
class KTUNE_API KeyFields {
 public:
  KeyFields& add(const char* name, int64_t value);
  explicit KeyFields(void* builder) : builder_(builder) {}

 private:
  friend struct EngineViews;
  void* builder_;
};

// The kernel's arguments, in its parameter order, as the kernel declares them (int64_t for a
// `long long`, DevicePtr for a pointer, float, ...).
class KTUNE_API ArgPack {
 public:
  template <class T>
  ArgPack& add(const T& v) {
    static_assert(std::is_trivially_copyable_v<T>, "kernel arguments must be trivially copyable");
    addBytes(&v, sizeof(T), alignof(T));
    return *this;
  }
  void addBytes(const void* p, size_t size, size_t align);
  explicit ArgPack(void* args) : args_(args) {}

 private:
  friend struct EngineViews;
  void* args_;
};

// Grid and block (x, y, z) and the dynamic shared memory of one launch.
struct Launch {
  unsigned grid[3] = {1, 1, 1};
  unsigned block[3] = {1, 1, 1};
  size_t shared_bytes = 0;
  // A persistent grid of thread-block clusters of this many blocks along x (0 or 1: none): grid[0]
  // is then an upper bound, and each launch runs the clusters of the compiled kernel that are
  // resident on the device at once (Backend::maxActiveClusters), at most grid[0] / this many.
  unsigned persistent_cluster = 0;
  // Set (not OK) when the config cannot run this problem (e.g. a tile kind for another layout):
  // the candidate fails with this reason before it is compiled, and no call launches it.
  Status refused;
  // A 1-D launch of `blocks` blocks of `threads` threads (at least one block).
  static Launch linear(int64_t blocks, int64_t threads) {
    Launch l;
    l.grid[0] = static_cast<unsigned>(blocks > 0 ? blocks : 1);
    l.block[0] = static_cast<unsigned>(threads);
    return l;
  }
};

// What a launch rule may read of the tuner's device.
struct DeviceFacts {
  std::string name, arch;   // "NVIDIA H100 80GB HBM3", "sm_90a"; "sim" when simulated
  int multiprocessors = 0;  // SMs / CUs
  int warp_size = 32;       // 32, or 64 on AMD
};

struct KnobValues {
  std::string name;  // [A-Za-z_][A-Za-z0-9_]*
  std::vector<int64_t> values;
};

// A candidate that is not a JIT config: a vendor library's algorithm ("cublaslt:idx=3;..."). Its
// id must let the spec's vendor_launch run it again, in this process or a later one.
struct VendorCandidate {
  std::string id;
  std::string source;  // "cublaslt", "hipblaslt", ...: names the candidate's origin in reports
  // The library's own default choice (e.g. cuBLASLt's heuristic #0): what runs with tuning off,
  // and the default a tuned winner must beat by more than the measured noise.
  bool is_default = false;
  // The library's own pick in place of the default for a key nothing was tuned for (at most one
  // per list; a static rule over the library's list, no timing): what an unseen key's prediction
  // runs where no tuned key chose anything else. The GEMM op sets it by cuBLASLt's output tiles
  // (autotune/predict.h, the wide-tile rule).
  bool predicted = false;
};

// A named condition on a config's knobs; the name appears where a config is dropped for it.
struct KnobConstraint {
  std::string name;
  std::function<bool(const Knobs&)> holds;
};

// A kernel family over problem type P. Required: name, source and entry (or source_fn), space,
// key, launch, args.
template <class P>
struct TypedKernelSpec {
  std::string name;    // [A-Za-z0-9_.-]+; names the family's tuning database
  std::string source;  // CUDA/HIP C++ kernel source (may #include "prelude.cuh")
  std::string entry;   // extern "C" entry name
  // Optional, replaces `source`: the module of a config, generated by the caller (ConfigSource,
  // kernel.hpp: C++, PTX, LLVM IR, AMDGCN, MLIR or a prebuilt code object). Cached by its text,
  // language and toolchain versions; an error is that config's compile failure. Called from
  // several compile threads at once (it must be thread-safe), and again when a recorded winner is
  // loaded.
  std::function<Expected<ConfigSource>(const Knobs&, const P&)> source_fn;
  std::vector<std::string> compile_options;
  std::vector<KnobValues> space;
  // Optional: a config is kept only where this holds.
  std::function<bool(const Knobs&)> constraint;
  // Optional, named conditions a config must meet as well (each reported by its name).
  std::vector<KnobConstraint> constraints;
  // Optional: the dynamic shared memory a config needs, from its knobs alone: a config that
  // cannot fit the device is dropped before it is compiled.
  std::function<int64_t(const Knobs&)> shared_bytes;
  // What runs with tuning off (every knob named); empty = the first value of every knob.
  std::vector<std::pair<std::string, int64_t>> default_config;
  // The knobs passed to the compiler as -D defines; empty = every knob. A knob that only shapes
  // the launch stays out, so its configs share one binary.
  std::vector<std::string> defines;
  std::function<void(const P&, KeyFields&)> key;
  std::function<Launch(const Knobs&, const P&, const DeviceFacts&)> launch;
  // Set when `launch` reads only what `key` reads of the problem: the dims are computed once per
  // key instead of on every call.
  bool launch_per_key = false;
  // Set when every config's kernel runs KTUNE_PDL_WAIT() (prelude.cuh) before it reads an input
  // or writes an output: calls (not tuning runs) then launch it as a programmatic dependent launch
  // on devices that have one (CUDA sm_90+, TunerOptions::pdl), so it may start while the previous
  // kernel on the stream still runs. Never set it for a kernel without the wait: it could read
  // its inputs before they are written. Default off.
  bool programmatic_wait = false;
  std::function<void(const P&, ArgPack&)> args;
  // Optional, Triton's reset_to_zero / restore_value: before every run of a config while a key is
  // tuned (untimed) and before the launch that follows the tuning.
  std::function<Status(const P&, StreamHandle)> before_run;
  // Optional: checks a candidate's output after one run (the stream is synchronised first). OK:
  // correct; a kWrongResult status: the candidate is rejected with its message; any other error
  // fails the candidate too. Without it set no_verify, or the tuner notes once that candidates
  // are timed unverified.
  std::function<Status(const P&, StreamHandle)> verify;
  bool no_verify = false;
  // What the note about a family without verify suggests instead (empty: set verify or no_verify).
  std::string verify_hint;
  // Optional, before EVERY launch of a config, calls included (e.g. size or zero the workspace a
  // split reduction uses); timed as part of the candidate.
  std::function<Status(const Knobs&, const P&, StreamHandle)> before_launch;
  // Optional, replaces before_run before each timed run (untimed): what timing alone needs (e.g.
  // restore an in-place input), without what only verification needs (re-poisoned outputs that
  // every run overwrites cost device time on every sample).
  std::function<Status(const P&, StreamHandle)> before_timed_run;
  // Optional vendor-library candidates for p, raced with the JIT configs, and how to run one.
  std::function<std::vector<VendorCandidate>(const P&)> vendor_candidates;
  std::function<Status(const std::string& id, const P&, StreamHandle)> vendor_launch;
  // Optional: p as a JSON object (recorded for keys run untuned; do not use the names "family",
  // "key" or "date"), and its inverse: a problem with its own buffers built from that text. With
  // both, keys can be tuned offline (`ktune tune --from-file`) and in the isolation worker. Do
  // one-time work verification needs (a trusted reference, its compile) in make_problem: the
  // worker's watchdog times each candidate from the end of the problem's build.
  std::function<std::string(const P&)> args_json;
  std::function<Expected<std::shared_ptr<P>>(const std::string& args_json)> make_problem;
};

// The type-erased form of TypedKernelSpec<P> (problems as const void*): what the library takes.
struct ErasedKernelSpec {
  std::string name, source, entry;
  std::function<Expected<ConfigSource>(const Knobs&, const void*)> source_fn;
  std::vector<std::string> compile_options;
  std::vector<KnobValues> space;
  std::function<bool(const Knobs&)> constraint;
  std::vector<KnobConstraint> constraints;
  std::function<int64_t(const Knobs&)> shared_bytes;
  std::vector<std::pair<std::string, int64_t>> default_config;
  std::vector<std::string> defines;
  std::function<void(const void*, KeyFields&)> key;
  std::function<Launch(const Knobs&, const void*, const DeviceFacts&)> launch;
  bool launch_per_key = false;
  bool programmatic_wait = false;
  std::function<void(const void*, ArgPack&)> args;
  std::function<Status(const void*, StreamHandle)> before_run;
  std::function<Status(const void*, StreamHandle)> verify;
  bool no_verify = false;
  std::string verify_hint;
  std::function<Status(const Knobs&, const void*, StreamHandle)> before_launch;
  std::function<Status(const void*, StreamHandle)> before_timed_run;
  std::function<std::vector<VendorCandidate>(const void*)> vendor_candidates;
  std::function<Status(const std::string&, const void*, StreamHandle)> vendor_launch;
  std::function<std::string(const void*)> args_json;
  std::function<Expected<std::shared_ptr<void>>(const std::string&)> make_problem;
  const std::type_info* problem_type = nullptr;
};

// Handle to a family registered with addTypedKernel, over type-erased problems.
class KTUNE_API ErasedKernel {
 public:
  ErasedKernel() = default;
  Status call(const void* p, StreamHandle stream) const;
  Expected<KeyReport> tune(const void* p, StreamHandle stream) const;
  // What runs for p's key and where it came from (origin "memory", "database", "default", ...),
  // without compiling, tuning or launching.
  Expected<KeyReport> lookup(const void* p) const;
  std::string key(const void* p) const;
  const std::string& name() const;
  bool valid() const { return impl_ != nullptr; }

  struct Impl;
  explicit ErasedKernel(std::shared_ptr<Impl> impl) : impl_(std::move(impl)) {}

 private:
  std::shared_ptr<Impl> impl_;
};

// Registers an erased spec on `tuner` (and opens its tuning database). kInvalidArgument naming the
// field for a missing callback, a bad name or knob, or a name already registered.
KTUNE_API Expected<ErasedKernel> addErasedKernel(Autotuner& tuner, ErasedKernelSpec spec);

// Handle to a typed family; cheap to copy; valid while its Autotuner lives. Thread-safe.
template <class P>
class TypedKernel {
 public:
  TypedKernel() = default;
  explicit TypedKernel(ErasedKernel k) : k_(std::move(k)) {}
  // Runs the kernel for p on `stream`, tuning first when p's key is new (and tuning is on).
  Status operator()(const P& p, StreamHandle stream = {}) const { return k_.call(&p, stream); }
  // Forces a tuning run for p's key and returns what was tried.
  Expected<KeyReport> tune(const P& p, StreamHandle stream = {}) const {
    return k_.tune(&p, stream);
  }
  Expected<KeyReport> lookup(const P& p) const { return k_.lookup(&p); }
  std::string key(const P& p) const { return k_.key(&p); }
  const std::string& name() const { return k_.name(); }
  bool valid() const { return k_.valid(); }

 private:
  ErasedKernel k_;
};

// eraseSpec's part for the optional run hooks, vendor candidates and problem JSON.
template <class P, class Typed>
void eraseRunHooks(TypedKernelSpec<P>& s, ErasedKernelSpec& e, Typed typed) {
  if (s.before_launch)
    e.before_launch = [g = std::move(s.before_launch), typed](const Knobs& c, const void* p,
                                                              StreamHandle st) {
      return g(c, typed(p), st);
    };
  if (s.before_timed_run)
    e.before_timed_run = [g = std::move(s.before_timed_run), typed](const void* p, StreamHandle st) {
      return g(typed(p), st);
    };
  if (s.vendor_candidates)
    e.vendor_candidates = [g = std::move(s.vendor_candidates), typed](const void* p) {
      return g(typed(p));
    };
  if (s.vendor_launch)
    e.vendor_launch = [g = std::move(s.vendor_launch), typed](const std::string& id, const void* p,
                                                              StreamHandle st) {
      return g(id, typed(p), st);
    };
  if (s.args_json)
    e.args_json = [g = std::move(s.args_json), typed](const void* p) { return g(typed(p)); };
  if (s.make_problem)
    e.make_problem = [g = std::move(s.make_problem)](
                         const std::string& j) -> Expected<std::shared_ptr<void>> {
      auto r = g(j);
      if (!r.ok()) return r.status();
      return std::shared_ptr<void>(std::move(r).value());
    };
}

// The erased form of a typed spec (problems as const void* pointing at a P).
template <class P>
ErasedKernelSpec eraseSpec(TypedKernelSpec<P> s) {
  auto typed = [](const void* p) -> const P& { return *static_cast<const P*>(p); };
  ErasedKernelSpec e;
  e.name = std::move(s.name);
  e.source = std::move(s.source);
  e.entry = std::move(s.entry);
  if (s.source_fn)
    e.source_fn = [g = std::move(s.source_fn), typed](const Knobs& c, const void* p) {
      return g(c, typed(p));
    };
  e.compile_options = std::move(s.compile_options);
  e.space = std::move(s.space);
  e.constraint = std::move(s.constraint);
  e.constraints = std::move(s.constraints);
  e.shared_bytes = std::move(s.shared_bytes);
  e.default_config = std::move(s.default_config);
  e.defines = std::move(s.defines);
  if (s.key)
    e.key = [g = std::move(s.key), typed](const void* p, KeyFields& k) { g(typed(p), k); };
  if (s.launch)
    e.launch = [g = std::move(s.launch), typed](const Knobs& c, const void* p, const DeviceFacts& d) {
      return g(c, typed(p), d);
    };
  e.launch_per_key = s.launch_per_key;
  e.programmatic_wait = s.programmatic_wait;
  if (s.args)
    e.args = [g = std::move(s.args), typed](const void* p, ArgPack& a) { g(typed(p), a); };
  if (s.before_run)
    e.before_run = [g = std::move(s.before_run), typed](const void* p, StreamHandle st) {
      return g(typed(p), st);
    };
  if (s.verify)
    e.verify = [g = std::move(s.verify), typed](const void* p, StreamHandle st) {
      return g(typed(p), st);
    };
  e.no_verify = s.no_verify;
  e.verify_hint = std::move(s.verify_hint);
  eraseRunHooks(s, e, typed);
  e.problem_type = &typeid(P);
  return e;
}

template <class P>
Expected<TypedKernel<P>> addTypedKernel(Autotuner& tuner, TypedKernelSpec<P> s) {
  auto k = addErasedKernel(tuner, eraseSpec(std::move(s)));
  if (!k.ok()) return k.status();
  return TypedKernel<P>(std::move(k).value());
}

}  // namespace ktune
