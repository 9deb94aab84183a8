// A kernel family as the user describes it (KernelFamily<P>: source, space, key, launch rule,
// arguments, optional verification and vendor candidates), and its type-erased form inside the
// engine (detail::ErasedFamily). See autotune/autotuner.h for how a family is registered and called.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <typeinfo>
#include <string>
#include <utility>
#include <vector>

#include "autotune/key.h"
#include "autotune/verifier.h"
#include "base/config.h"
#include "compiler/compiler.h"
#include "runtime/backend.h"

namespace ktune {

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
  // The library's own default choice (e.g. cuBLASLt's heuristic #0): what runs with tuning off,
  // and the default a tuned winner must beat by more than the noise (autotune/finalists.h).
  bool is_default = false;
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
  // Optional: the default config for a problem (tuning off, no vendor default), when the best
  // default depends on the problem (e.g. a kernel kind that only some shapes can use). Replaces
  // default_config there; default_config stays the finalists' baseline.
  std::function<Config(const P&)> default_for;
  // Set when the family deliberately has no `verify`: its candidates are then timed unverified,
  // and the tuner says so once when the family is added. A family with neither is added too, with
  // a warning that asks for one or the other.
  bool no_verify = false;
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

namespace detail {
// Type-erased family (what KernelFamily<P> becomes inside the tuner).
struct ErasedFamily {
  const std::type_info* problem_type = nullptr;  // typeid(P): Tuner::family<P> checks it
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
  std::function<Config(const void*)> default_for;
  bool no_verify = false;
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
  e.problem_type = &typeid(P);
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
  if (f.default_for)
    e.default_for = [g = std::move(f.default_for)](const void* p) {
      return g(*static_cast<const P*>(p));
    };
  e.no_verify = f.no_verify;
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

}  // namespace detail

}  // namespace ktune
