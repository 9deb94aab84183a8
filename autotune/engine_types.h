// The engine's value types that the facade (autotune/autotuner.h) hands out and takes in: its
// options and what one call launched (LaunchPlan); what runs for a problem is the public
// ktune::KeyReport (lookup: no candidates). Engine
// headers include this, never the facade.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <ostream>
#include <string>

#include "autotune/benchmarker.h"
#include "autotune/database.h"
#include "autotune/family.h"
#include "autotune/isolation.h"
#include "autotune/search.h"
#include "autotune/shared_tuning.h"
#include "base/options.h"
#include "compiler/compiler.h"
#include "runtime/backend.h"

namespace ktune {

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
  // Compiles the modules of per-config source callbacks (TypedKernelSpec::source_fn) in languages
  // other than C++. Null = openIrCompiler(), opened on first use.
  std::shared_ptr<Compiler> ir_compiler;
  std::ostream* log = nullptr;  // verbose output; null = std::cerr
  std::function<void(const TuneProgress&)> progress;
  std::shared_ptr<SearchStrategy> search;  // null = searchNamed(options.search)
  // do_bench harness settings (flush, run counts, early rejection). The budgets are
  // options.warmup_ms / options.rep_ms: Engine::create rejects a `bench` whose warmup_ms/rep_ms
  // differ from BenchOptions' defaults instead of silently replacing them.
  BenchOptions bench;
  // Finalists (autotune/finalists.h; how many with options.finalists, the minimum gain with
  // options.finalist_margin): interleaved rounds.
  int finalist_rounds = 6;
  // Results shared with other processes and machines (autotune/shared_tuning.h; made by
  // remote::makeSharedTuning from options.remote_cache). Null: this process's cache only.
  std::shared_ptr<SharedTuning> shared;
  // Family<P>::tune (a forced tuning run) first takes a key the shared cache holds (see
  // Engine::fetchShared) instead of tuning it again. Off by default; `ktune tune` turns it on, so a
  // warm remote makes it compile and benchmark nothing.
  bool tune_reads_shared = false;
  // Engine::create returns once the host side is ready (compiler, store): the device's context
  // (a CUDA primary context: ~0.2 s) is made on a thread of its own meanwhile, so what the caller
  // does next without the device (registering families, Family::precompile of its first key)
  // overlaps it. The caller then calls Engine::awaitDevice() before it uses the backend or calls
  // a family on any thread; Family::tune awaits it itself. Off: create() makes the context and
  // makes it current on the calling thread, as before. `ktune tune gemm` turns it on.
  bool context_later = false;
};

// What one call launched, for a caller that can tell when a later problem would launch the same
// (the same key and the same launch dims; a data family compares the integer arguments its key and
// launch rule read): Family::launchPlanned then runs it with new arguments, skipping the key, the
// lookup and the family's launch and args callbacks. A plan is current while its family's
// selections are unchanged (Family::planCurrent); only plain JIT launches make one (not a vendor
// candidate, not a family with before_launch).
struct LaunchPlan {
  uint64_t family = 0;  // the family's process-unique id; 0: no plan
  uint64_t epoch = 0;   // the family's selections when the plan was made
  FunctionHandle fn;
  LaunchDims dims;
  unsigned flags = 0;  // LaunchFlag bits (runtime/backend.h)
};

}  // namespace ktune
